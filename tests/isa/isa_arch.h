// The device's arch for vgpu's ISA tests, which run on gfx90a as well as on hk's two targets: vgpu's own lookup of the
// device's gcnArchName (vgpu/arch.h, whose table also gives the facts the tests branch on). Host code only.
#pragma once
#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "vgpu/arch.h"

namespace isa_arch {

inline vgpu::Arch device() {
  static const vgpu::Arch arch = [] {
    hipDeviceProp_t p;
    std::optional<vgpu::Arch> a;
    if (hipGetDeviceProperties(&p, 0) == hipSuccess) a = vgpu::parse_arch(p.gcnArchName);
    if (!a) {
      std::fprintf(stderr, "isa_arch: no HIP device, or one vgpu does not model\n");
      std::exit(2);
    }
    return *a;
  }();
  return arch;
}
inline const vgpu::ArchInfo& info() { return vgpu::arch_info(device()); }

inline bool gfx950() { return device() == vgpu::Arch::gfx950; }
inline bool gfx942() { return device() == vgpu::Arch::gfx942; }
inline bool gfx90a() { return device() == vgpu::Arch::gfx90a; }
// The arch has 8-bit float instructions (conversions, MFMAs): not gfx90a.
inline bool has_fp8() { return info().fp8 != vgpu::Fp8Flavour::none; }

}  // namespace isa_arch
