// Global memory bookkeeping: the ranges a dispatch may access.
#include "vgpu/memory_map.h"

#include <algorithm>
#include <cstdlib>

namespace vgpu {

void* MemoryMap::allocate(size_t bytes, size_t align) {
  size_t size = std::max<size_t>((bytes + align - 1) / align * align, align);
  void* p = std::aligned_alloc(align, size);
  if (!p) return nullptr;
  std::lock_guard lock(mu_);
  ranges_[uint64_t(p)] = bytes ? bytes : 1;
  owned_[uint64_t(p)] = p;
  return p;
}

bool MemoryMap::release(void* p) {
  std::lock_guard lock(mu_);
  auto it = owned_.find(uint64_t(p));
  if (it == owned_.end()) return false;
  std::free(it->second);
  owned_.erase(it);
  ranges_.erase(uint64_t(p));
  return true;
}

void MemoryMap::add(const void* p, size_t bytes) {
  std::lock_guard lock(mu_);
  ranges_[uint64_t(p)] = bytes;
}

void MemoryMap::remove(const void* p) {
  std::lock_guard lock(mu_);
  if (!owned_.count(uint64_t(p))) ranges_.erase(uint64_t(p));
}

std::pair<uint64_t, uint64_t> MemoryMap::find(uint64_t addr) const {
  std::lock_guard lock(mu_);
  auto it = ranges_.upper_bound(addr);
  if (it == ranges_.begin()) return {0, 0};
  --it;
  if (addr - it->first < it->second) return {it->first, it->second};
  return {0, 0};
}

bool MemoryMap::contains(uint64_t addr, uint64_t bytes) const {
  auto [base, size] = find(addr);
  return size && addr + bytes <= base + size;
}

size_t MemoryMap::bytes_in_use() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (auto& [b, s] : ranges_)
    if (owned_.count(b)) n += s;
  return n;
}

}  // namespace vgpu
