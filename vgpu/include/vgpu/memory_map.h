// Global memory: host memory the device may access, as one ledger of ranges (implemented in src/memory_map.cpp).
// Every global access of a kernel is checked against it, and the HIP runtime answers its questions about pointers
// (hipFree, hipPointerGetAttributes, the bounds of a copy) from the same ranges: there is no second list to keep in
// step.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace vgpu {

// Whose a range is and how it became accessible.
enum class MemoryKind : uint8_t {
  // A program's ranges: what it allocated or registered through the runtime.
  device,           // hipMalloc and its relatives
  host,             // hipHostMalloc: pinned host memory
  managed,          // hipMallocManaged
  registered_host,  // hipHostRegister: the program's own memory, made accessible
  // The device's own ranges, which programs never see as allocations.
  code_image,       // a code object's loadable segments (code_image.cpp)
  dispatch,         // a kernarg segment or dispatch packet, accessible while its dispatch runs
};
constexpr bool belongs_to_program(MemoryKind k) { return k <= MemoryKind::registered_host; }

// The granularity the GPU maps memory in. An allocation the map makes covers whole pages, so a read that runs past its
// end stays inside mapped memory, as on the hardware (vectorised loads of a buffer's last bytes rely on it).
inline constexpr uint64_t kPageBytes = 4096;

struct MemoryRange {
  uint64_t base = 0;
  uint64_t size = 0;  // 0: no range
  MemoryKind kind = MemoryKind::device;
  uint32_t flags = 0;  // the flags the program allocated or registered it with
  bool owned = false;  // allocated by the map, which frees it on release; otherwise its memory is someone else's
  explicit operator bool() const { return size != 0; }
};

class MemoryMap {
 public:
  // Allocates `bytes` (at least 1) aligned to `align` and records it; nullptr if the host has no memory left.
  void* allocate(size_t bytes, size_t align = 256, MemoryKind kind = MemoryKind::device, uint32_t flags = 0);
  // Records memory someone else owns as accessible.
  void add(const void* p, size_t bytes, MemoryKind kind, uint32_t flags = 0);
  // Forgets the range that starts at p, freeing its memory if the map allocated it; false if no range starts there.
  bool release(const void* p);
  // The range containing addr, or an empty range.
  MemoryRange find(uint64_t addr) const;
  // The allocation that starts nearest below addr (whether or not it holds addr): for fault messages.
  MemoryRange nearest_below(uint64_t addr) const;
  // The range that starts at p, or an empty range.
  MemoryRange at(const void* p) const;
  // True if [addr, addr+bytes) lies inside one range.
  bool contains(uint64_t addr, uint64_t bytes) const;
  // True if [addr, addr+bytes) overlaps a program's range.
  bool overlaps_program_range(uint64_t addr, uint64_t bytes) const;
  // Releases every program range (hipDeviceReset); the device's own ranges stay.
  void release_program_ranges();
  size_t bytes_in_use() const;  // bytes the map allocated and still holds

 private:
  mutable std::mutex mu_;
  std::map<uint64_t, MemoryRange> ranges_;  // by base
};

}  // namespace vgpu
