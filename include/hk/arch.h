// The one place where gfx942 (CDNA3) and gfx950 (CDNA4) differ. Everything else in hk is written against
// `arch::current`; no other header tests an arch macro.
#pragma once
#include <hip/hip_runtime.h>

namespace hk::arch {

struct cdna3 {
  static constexpr const char* name = "gfx942";
  static constexpr int lds_bytes = 64 * 1024;
  static constexpr int compute_units = 304, xcds = 8;
  static constexpr int lds_banks = 32;
  static constexpr int mfma_k = 16;        // K of the 16x16 bf16/f16 MFMA: v_mfma_f32_16x16x16_{bf16,f16}
  static constexpr int lds_read_bytes = 8; // the widest LDS read a register-tile load issues per lane (ds_read_b64)
  static constexpr bool fp8_fnuz = true;   // e4m3fnuz / e5m2fnuz
};

struct cdna4 {
  static constexpr const char* name = "gfx950";
  static constexpr int lds_bytes = 160 * 1024;
  static constexpr int compute_units = 256, xcds = 8;
  static constexpr int lds_banks = 64;
  static constexpr int mfma_k = 32;         // v_mfma_f32_16x16x32_{bf16,f16}
  static constexpr int lds_read_bytes = 16; // ds_read_b128
  static constexpr bool fp8_fnuz = false;   // OCP e4m3fn / e5m2
};

#if defined(__gfx950__)
using current = cdna4;
#elif defined(__gfx942__)
using current = cdna3;
#else
using current = cdna4;  // the host pass of a HIP file: only sizes are used there, never the device paths
#endif

// 16-bit operand fragments of one 16x16xK MFMA: K/4 elements per lane.
inline constexpr int mfma_elems = current::mfma_k / 4;
using bf16_frag = __bf16 __attribute__((ext_vector_type(mfma_elems)));
using f16_frag = _Float16 __attribute__((ext_vector_type(mfma_elems)));
using f32x4 = float __attribute__((ext_vector_type(4)));

// D = A * B + C for one 16x16 output block over the arch's K. Lane l supplies row (A) or column (B) l % 16 and
// k = (l / 16) * K/4 + e; D[i][j] lands in lane j + 16 * (i / 4), element i % 4.
__device__ inline f32x4 mma16(bf16_frag a, bf16_frag b, f32x4 c) {
#if defined(__gfx950__)
  return __builtin_amdgcn_mfma_f32_16x16x32_bf16(a, b, c, 0, 0, 0);
#elif defined(__gfx942__)
  using s4 = short __attribute__((ext_vector_type(4)));
  return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(s4, a), __builtin_bit_cast(s4, b), c, 0, 0, 0);
#else
  return c;
#endif
}

__device__ inline f32x4 mma16(f16_frag a, f16_frag b, f32x4 c) {
#if defined(__gfx950__)
  return __builtin_amdgcn_mfma_f32_16x16x32_f16(a, b, c, 0, 0, 0);
#elif defined(__gfx942__)
  return __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, 0, 0, 0);
#else
  return c;
#endif
}

}  // namespace hk::arch
