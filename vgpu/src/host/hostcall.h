// Hostcalls: the buffer ROCm's device libraries (ockl) use to ask the host for services, printf above all. A kernel
// whose metadata has a hidden_hostcall_buffer argument gets one per dispatch; waves push packets on its ready stack
// and spin with s_sleep until the host clears the packet's ready flag, so vgpu services the stack whenever a wave
// sleeps (the pushing wave always does), in the order the waves pushed.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "vgpu/memory_map.h"

namespace vgpu {

class HostcallBuffer {
 public:
  // `packets`: at least one per wave that can wait on a packet at once (every wave of every worker thread).
  HostcallBuffer(MemoryMap& memory, uint32_t packets);
  ~HostcallBuffer();
  HostcallBuffer(const HostcallBuffer&) = delete;
  HostcallBuffer& operator=(const HostcallBuffer&) = delete;

  uint64_t device_address() const { return uint64_t(control_); }
  // Answers every packet on the ready stack. Thread-safe.
  void service();
  // The last message the kernel wrote to stderr (a failed assert's text), empty if none.
  std::string last_stderr_message();

 private:
  struct Control;  // the layout ockl reads: header and payload arrays, doorbell, free and ready stacks
  void answer(uint64_t packet);
  void finish_message(std::vector<uint64_t>& words);

  MemoryMap& memory_;
  Control* control_ = nullptr;
  std::vector<uint8_t> storage_;  // headers, payloads, doorbell signal
  std::mutex mu_;
  uint64_t next_message_ = 1;
  std::map<uint64_t, std::vector<uint64_t>> messages_;  // by id: the words appended so far
  std::string last_stderr_;
};

// The text printf("format", args...) prints, from the words of a hostcall printf message after its stream word:
// the NUL-terminated format string packed 8 bytes a word, then one word per argument (integers widened to 64 bits,
// floating point as double, strings as their own NUL-terminated words).
std::string format_printf_message(const uint64_t* words, size_t count);

}  // namespace vgpu
