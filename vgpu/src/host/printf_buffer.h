// Buffered printf (clang's -mprintf-kind=buffered): a kernel whose metadata has a hidden_printf_buffer argument gets a
// buffer it appends records to; vgpu prints them when the dispatch ends, in the order they were reserved (per wave,
// program order). Layout, as the code clang emits reads it:
//   buffer: u32 bytes used by records (the kernels advance it with a compare-and-swap), u32 buffer size (header
//           included; a record that would pass it is dropped by the kernel), then the records
//   record: u32 control = record size (bytes, control included) << 2 | constant format << 1 | stderr,
//           then the format: its 64-bit hash (constant format; the code object's amdhsa.printf maps it to the text)
//           or the NUL-terminated text padded to 8 bytes, then one 8-byte word per argument (integers widened, floating
//           point as double) and strings inline, NUL-terminated and padded to 8 bytes.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "vgpu/memory_map.h"

namespace vgpu {

class PrintfBuffer {
 public:
  PrintfBuffer(MemoryMap& memory, uint32_t bytes);
  ~PrintfBuffer();
  PrintfBuffer(const PrintfBuffer&) = delete;
  PrintfBuffer& operator=(const PrintfBuffer&) = delete;

  uint64_t device_address() const { return uint64_t(storage_.data()); }
  // Prints every record (to stdout, or stderr for the stderr ones); a record that cannot be read ends it with a
  // warning naming why.
  void print(const std::map<uint64_t, std::string>& formats) const;

 private:
  MemoryMap& memory_;
  std::vector<uint64_t> storage_;
};

}  // namespace vgpu
