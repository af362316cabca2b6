// Global memory: host memory the device may access, as a set of ranges (implemented in src/memory_map.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

namespace vgpu {

// Host memory handed out by the runtime or registered with it. Every global access is checked against these ranges.
class MemoryMap {
 public:
  void* allocate(size_t bytes, size_t align = 256);
  bool release(void* p);                       // false if p was not allocated here
  // Registers externally owned memory (kernarg buffers, host-pinned memory) as accessible.
  void add(const void* p, size_t bytes);
  void remove(const void* p);
  // True if [addr, addr+bytes) lies inside one allocation.
  bool contains(uint64_t addr, uint64_t bytes) const;
  // The allocation containing addr: base and size, or {0,0}.
  std::pair<uint64_t, uint64_t> find(uint64_t addr) const;
  size_t bytes_in_use() const;

 private:
  mutable std::mutex mu_;
  std::map<uint64_t, uint64_t> ranges_;  // base -> size
  std::map<uint64_t, void*> owned_;      // base -> pointer to free
};

}  // namespace vgpu
