// The two CDNA targets vgpu models and the facts about them that the emulator needs.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace vgpu {

enum class Arch : uint8_t { gfx942, gfx950 };

struct ArchInfo {
  Arch arch;
  std::string_view name;      // "gfx942"
  std::string_view product;   // "MI300X"
  uint32_t lds_bytes;         // LDS per workgroup
  uint32_t compute_units;
  uint32_t xcds;
  uint32_t clock_mhz;
  uint32_t lds_banks;         // banks of 4 bytes for b32 reads
};

const ArchInfo& arch_info(Arch a);
// "gfx942" / "gfx950", also with feature suffixes such as "gfx950:sramecc+:xnack-". nullopt if neither.
std::optional<Arch> parse_arch(std::string_view s);

}  // namespace vgpu
