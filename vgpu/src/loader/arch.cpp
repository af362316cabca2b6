// The arch table and arch-name parsing.
#include "vgpu/arch.h"

#include <array>

namespace vgpu {
namespace {

// Product figures from AMD's public specifications (see reference/cdna.md): MI300X for gfx942, MI355X for gfx950.
constexpr std::array<ArchInfo, 2> kArchs{{
    {Arch::gfx942, "gfx942", "MI300X", 65536, 304, 8, 2100, 32},
    {Arch::gfx950, "gfx950", "MI355X", 163840, 256, 8, 2400, 64},
}};

}  // namespace

const ArchInfo& arch_info(Arch a) {
  for (const ArchInfo& info : kArchs)
    if (info.arch == a) return info;
  // Every enumerator has a row; reaching here means a corrupted Arch value.
  return kArchs[0];
}

std::optional<Arch> parse_arch(std::string_view s) {
  // Strip a target triple prefix ("amdgcn-amd-amdhsa--gfx942", "hipv4-amdgcn-amd-amdhsa--gfx950"): the processor
  // is the last '-'-separated field.
  if (size_t dash = s.rfind('-', s.find(':')); dash != std::string_view::npos) s.remove_prefix(dash + 1);
  // Strip target features (":sramecc+:xnack-"), which do not change the instruction set vgpu models.
  s = s.substr(0, s.find(':'));
  for (const ArchInfo& info : kArchs)
    if (s == info.name) return info.arch;
  return std::nullopt;
}

}  // namespace vgpu
