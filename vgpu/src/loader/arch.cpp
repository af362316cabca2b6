// Arch-name parsing (the facts themselves are the table in vgpu/arch.h).
#include "vgpu/arch.h"

namespace vgpu {

std::optional<Arch> parse_arch(std::string_view s) {
  // Strip a target triple prefix ("amdgcn-amd-amdhsa--gfx942", "hipv4-amdgcn-amd-amdhsa--gfx950"): the processor
  // is the last '-'-separated field.
  if (size_t dash = s.rfind('-', s.find(':')); dash != std::string_view::npos) s.remove_prefix(dash + 1);
  // Strip target features (":sramecc+:xnack-"), which do not change the instruction set vgpu models.
  s = s.substr(0, s.find(':'));
  for (const ArchInfo& info : all_archs())
    if (s == info.name) return info.arch;
  return std::nullopt;
}

}  // namespace vgpu
