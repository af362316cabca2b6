// The host's view of the targets: each target's facts as a value, and the one lookup from a HIP device to its
// target. Host code, tests and tools ask here ("which target is device 0?", "its LDS DMA unit?") instead of
// comparing arch names; `visit` hands a target's compile-time description (cdna3 or cdna4) to generic code.
#pragma once
#include <hip/hip_runtime.h>

#include <string_view>

#include "cdna3.h"
#include "cdna4.h"

namespace hk::arch {

struct target {
  target_id id;
  const char* name;
  int lds_bytes, lds_banks, compute_units, xcds;
  int mfma_k, mfma32_k, fp8_mfma_k, fp8_mfma32_k;
  int lds_read_bytes, lds_dma_bytes;
  bool fp8_fnuz, lds_read_transpose;
  float fp8_max, bf8_max;

  template <class A>
  static constexpr target of() {
    return {A::id, A::name, A::lds_bytes, A::lds_banks, A::compute_units, A::xcds, A::mfma_k, A::mfma32_k,
            A::fp8_mfma_k, A::fp8_mfma32_k, A::lds_read_bytes, A::lds_dma_bytes, A::fp8_fnuz, A::lds_read_transpose,
            A::fp8_max, A::bf8_max};
  }
};

inline constexpr target targets[] = {target::of<cdna3>(), target::of<cdna4>()};

// The target named by a HIP arch name ("gfx950", "gfx942:sramecc+:xnack-"), or null for one hk is not built for.
// The only comparison of arch names in hk and its tests.
constexpr const target* find_target(std::string_view arch_name) {
  arch_name = arch_name.substr(0, arch_name.find(':'));
  for (const target& t : targets)
    if (arch_name == t.name) return &t;
  return nullptr;
}

inline const target* target_of(const hipDeviceProp_t& prop) { return find_target(prop.gcnArchName); }

// The target of HIP device `device` (the current device when -1), or null when there is none or hk has no kernels
// for it.
inline const target* device_target(int device = -1) {
  if (device < 0 && hipGetDevice(&device) != hipSuccess) return nullptr;
  hipDeviceProp_t prop;
  if (hipGetDeviceProperties(&prop, device) != hipSuccess) return nullptr;
  return target_of(prop);
}

// f(cdna3{}) or f(cdna4{}): generic host code reads the compile-time facts of a target chosen at run time.
template <class F>
constexpr decltype(auto) visit(const target& t, F&& f) {
  switch (t.id) {
    case target_id::gfx942: return f(cdna3{});
    case target_id::gfx950: break;
  }
  return f(cdna4{});
}

}  // namespace hk::arch
