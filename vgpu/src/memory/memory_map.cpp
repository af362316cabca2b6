// The ledger of global memory (see vgpu/memory_map.h).
#include "vgpu/memory_map.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <sys/mman.h>

namespace vgpu {

namespace {
constexpr size_t kHugePageBytes = size_t(2) << 20;
}  // namespace

void* MemoryMap::allocate(size_t bytes, size_t align, MemoryKind kind, uint32_t flags) {
  // Whole pages, as the hardware maps them, the tail zeroed: a read past the end within the page reads 0 (see
  // kPageBytes).
  const size_t unit = std::max<size_t>(align, kPageBytes);
  size_t size = std::max<size_t>((bytes + unit - 1) / unit * unit, unit);
  // A large allocation starts on a huge page and asks for huge pages: a kernel's loads walk its rows page after page
  // (a 1024-wide bf16 matrix crosses a 4 KiB page every two rows), and each TLB miss costs a page walk, two-level
  // under a hypervisor.
  const bool huge = size >= kHugePageBytes;
  void* p = std::aligned_alloc(huge ? std::max(align, kHugePageBytes) : align,
                               huge ? (size + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes : size);
  if (!p) return nullptr;
  if (huge) madvise(p, size, MADV_HUGEPAGE);  // a hint: without it (or where refused) the pages are small
  std::memset(static_cast<uint8_t*>(p) + bytes, 0, size - bytes);
  std::lock_guard lock(mu_);
  ranges_[uint64_t(p)] = MemoryRange{uint64_t(p), bytes ? bytes : 1, kind, flags, true};
  return p;
}

void MemoryMap::add(const void* p, size_t bytes, MemoryKind kind, uint32_t flags) {
  std::lock_guard lock(mu_);
  ranges_[uint64_t(p)] = MemoryRange{uint64_t(p), bytes, kind, flags, false};
}

bool MemoryMap::release(const void* p) {
  std::lock_guard lock(mu_);
  auto it = ranges_.find(uint64_t(p));
  if (it == ranges_.end()) return false;
  if (it->second.owned) std::free(const_cast<void*>(p));
  ranges_.erase(it);
  return true;
}

MemoryRange MemoryMap::find(uint64_t addr) const {
  std::lock_guard lock(mu_);
  auto it = ranges_.upper_bound(addr);
  if (it == ranges_.begin()) return {};
  --it;
  return addr - it->first < it->second.size ? it->second : MemoryRange{};
}

MemoryRange MemoryMap::nearest_below(uint64_t addr) const {
  std::lock_guard lock(mu_);
  auto it = ranges_.upper_bound(addr);
  return it == ranges_.begin() ? MemoryRange{} : std::prev(it)->second;
}

MemoryRange MemoryMap::at(const void* p) const {
  std::lock_guard lock(mu_);
  auto it = ranges_.find(uint64_t(p));
  return it == ranges_.end() ? MemoryRange{} : it->second;
}

bool MemoryMap::contains(uint64_t addr, uint64_t bytes) const {
  MemoryRange r = find(addr);
  return r && addr + bytes <= r.base + r.size;
}

bool MemoryMap::overlaps_program_range(uint64_t addr, uint64_t bytes) const {
  std::lock_guard lock(mu_);
  // Ranges do not overlap one another, so the last program range starting before the end is the only candidate.
  for (auto it = ranges_.lower_bound(addr + bytes); it != ranges_.begin();) {
    --it;
    if (belongs_to_program(it->second.kind)) return it->first + it->second.size > addr;
  }
  return false;
}

void MemoryMap::release_program_ranges() {
  std::lock_guard lock(mu_);
  std::erase_if(ranges_, [](const auto& entry) {
    const MemoryRange& r = entry.second;
    if (!belongs_to_program(r.kind)) return false;
    if (r.owned) std::free(reinterpret_cast<void*>(r.base));
    return true;
  });
}

size_t MemoryMap::bytes_in_use() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [base, r] : ranges_)
    if (r.owned) n += r.size;
  return n;
}

}  // namespace vgpu
