// Code-image placement: a code object's loadable segments copied into device memory once per device, relocated, so
// that PC-relative addressing and __device__ / __constant__ variables find their data.
#include <algorithm>
#include <cstring>

#include "vgpu/device.h"

namespace vgpu {

uint64_t Device::image_base(const CodeObject& co) {
  std::lock_guard lock(cache_mu_);
  auto [it, fresh] = images_.try_emplace(co.serial, 0);
  if (!fresh) return it->second;
  auto* base = static_cast<uint8_t*>(
      memory_.allocate(std::max<uint64_t>(co.image_size, 1), 4096, MemoryKind::code_image));
  if (!base) throw Error("vgpu: cannot allocate the code object's image");
  std::memset(base, 0, co.image_size);
  for (const auto& seg : co.segments) std::memcpy(base + seg.vaddr, seg.bytes.data(), seg.bytes.size());
  for (const auto& r : co.relocations)
    if (r.vaddr + 8 <= co.image_size) {
      uint64_t v = uint64_t(base) + uint64_t(r.addend);
      std::memcpy(base + r.vaddr, &v, 8);
    }
  it->second = uint64_t(base);
  return it->second;
}

void* Device::global_address(const std::shared_ptr<const CodeObject>& co, std::string_view name, size_t* size) {
  auto it = co->variables.find(name);
  if (it == co->variables.end()) return nullptr;
  if (size) *size = it->second.size;
  return reinterpret_cast<void*>(image_base(*co) + it->second.vaddr);
}

}  // namespace vgpu
