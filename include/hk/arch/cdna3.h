// gfx942 (CDNA3: MI300X, MI325X): its facts and its instruction wrappers, in one place. Wrappers are used only where
// this target is `arch::current`; their builtins exist only for gfx942, so nothing else may call them.
#pragma once
#include "gfx9.h"

namespace hk::arch {

struct cdna3 : gfx9<cdna3> {
  static constexpr target_id id = target_id::gfx942;
  static constexpr const char* name = "gfx942";
  static constexpr int lds_bytes = 64 * 1024;
  static constexpr int compute_units = 304, xcds = 8;  // MI300X and MI325X alike
  static constexpr int lds_banks = 32;
  static constexpr int mfma_k = 16;         // v_mfma_f32_16x16x16_{bf16_1k,f16}
  static constexpr int mfma32_k = 8;        // v_mfma_f32_32x32x8_{bf16_1k,f16}
  static constexpr int fp8_mfma_k = 32;     // v_mfma_f32_16x16x32_{fp8,bf8}_{fp8,bf8}: 8 bytes per lane
  static constexpr int fp8_mfma32_k = 16;   // v_mfma_f32_32x32x16_{fp8,bf8}_{fp8,bf8}: 8 bytes per lane
  static constexpr int lds_read_bytes = 8;  // the widest LDS read a register-tile load issues per lane (ds_read_b64)
  static constexpr int lds_dma_bytes = 4;   // buffer_load_dword ... lds: bytes per lane of a load straight into LDS
  static constexpr bool fp8_fnuz = true;    // e4m3fnuz / e5m2fnuz
  static constexpr float fp8_max = 240.f;   // largest finite e4m3fnuz (bias 8, 0x80 is the only NaN, no inf, no -0)
  static constexpr float bf8_max = 57344.f; // largest finite e5m2fnuz (bias 16, 0x80 is the only NaN, no inf, no -0)
  static constexpr bool lds_read_transpose = false;  // no transposing LDS reads: col-layout tiles read elementwise
  static constexpr bool bf16_convert = false;  // no v_cvt_pk_bf16_f32: fp32 -> bf16 rounds in VALU (5 a value, NaN kept)
  // Shared-tile swizzle masks of row bits 0..6 (see st.h), for 16-bit and 8-bit elements: printed by
  // tools/swizzle_search, which proves every register-tile read of either MFMA family conflict free under this
  // target's LDS phases for rows of 64 to 512 bytes.
  static constexpr int swizzle_16bit[7] = {1, 3, 4, 9, 0, 0, 0};
  static constexpr int swizzle_8bit[7] = {1, 2, 4, 11, 0, 0, 0};

  using bf16_frag = bf16_vec<mfma_k / 4>;
  using f16_frag = f16_vec<mfma_k / 4>;
  using bf16_frag32 = bf16_vec<mfma32_k / 2>;
  using f16_frag32 = f16_vec<mfma32_k / 2>;
  template <fp8_format F>
  using fp8_frag = fp8_frag_of<F, fp8_mfma_k / 4>;
  template <fp8_format F>
  using fp8_frag32 = fp8_frag_of<F, fp8_mfma32_k / 2>;

  // D = A * B + C for one 16x16 block over K. Lane l supplies row (A) or column (B) l % 16 and
  // k = (l / 16) * K/4 + e; D[i][j] lands in lane j + 16 * (i / 4), element i % 4.
  __device__ static f32x4 mma16(bf16_frag a, bf16_frag b, f32x4 c) {
    return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(u16x4, a), __builtin_bit_cast(u16x4, b), c, 0, 0, 0);
  }
  __device__ static f32x4 mma16(f16_frag a, f16_frag b, f32x4 c) { return __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, 0, 0, 0); }
  // D = A * B + C for one 32x32 block over K. Lane l supplies row (A) or column (B) l % 32 and
  // k = (l / 32) * K/2 + e; D[i][j] lands in lane j + 32 * ((i / 4) % 2), element 4 * (i / 8) + i % 4.
  __device__ static f32x16 mma32(bf16_frag32 a, bf16_frag32 b, f32x16 c) {
    return __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(__builtin_bit_cast(u16x4, a), __builtin_bit_cast(u16x4, b), c, 0, 0, 0);
  }
  __device__ static f32x16 mma32(f16_frag32 a, f16_frag32 b, f32x16 c) { return __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c, 0, 0, 0); }

  // fp8 (A and B each e4m3 = "fp8" or e5m2 = "bf8"): one opcode per pair of operand formats, with the same lane
  // mapping as the 16-bit forms (8 bytes per lane).
  template <fp8_format FA, fp8_format FB>
  __device__ static f32x4 mma16(fp8_frag<FA> a, fp8_frag<FB> b, f32x4 c) {
    const long x = __builtin_bit_cast(long, a.v), y = __builtin_bit_cast(long, b.v);
    if constexpr (FA == fp8_format::e4m3 && FB == fp8_format::e4m3) return __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(x, y, c, 0, 0, 0);
    else if constexpr (FA == fp8_format::e4m3) return __builtin_amdgcn_mfma_f32_16x16x32_fp8_bf8(x, y, c, 0, 0, 0);
    else if constexpr (FB == fp8_format::e4m3) return __builtin_amdgcn_mfma_f32_16x16x32_bf8_fp8(x, y, c, 0, 0, 0);
    else return __builtin_amdgcn_mfma_f32_16x16x32_bf8_bf8(x, y, c, 0, 0, 0);
  }
  template <fp8_format FA, fp8_format FB>
  __device__ static f32x16 mma32(fp8_frag32<FA> a, fp8_frag32<FB> b, f32x16 c) {
    const long x = __builtin_bit_cast(long, a.v), y = __builtin_bit_cast(long, b.v);
    if constexpr (FA == fp8_format::e4m3 && FB == fp8_format::e4m3) return __builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8(x, y, c, 0, 0, 0);
    else if constexpr (FA == fp8_format::e4m3) return __builtin_amdgcn_mfma_f32_32x32x16_fp8_bf8(x, y, c, 0, 0, 0);
    else if constexpr (FB == fp8_format::e4m3) return __builtin_amdgcn_mfma_f32_32x32x16_bf8_fp8(x, y, c, 0, 0, 0);
    else return __builtin_amdgcn_mfma_f32_32x32x16_bf8_bf8(x, y, c, 0, 0, 0);
  }

  // No v_permlane32_swap (permlane32_swap is false): the halves exchange through ds_bpermute; naming it is a compile error.
  static constexpr bool permlane32_swap = false;
  template <class Op>
  __device__ static float halves_combine(float, Op) {
    static_assert(sizeof(Op) == 0, "gfx942 has no v_permlane32_swap");
    return 0.f;
  }
  template <class U>
  __device__ static void halves_swap(U&, U&) { static_assert(sizeof(U) == 0, "gfx942 has no v_permlane32_swap"); }

  // No transposing LDS reads on this target (lds_read_transpose is false): naming one is a compile error.
  template <class P>
  __device__ static u16x4 lds_read_tr16_b64(const P*) {
    static_assert(sizeof(P) == 0, "gfx942 has no transposing LDS read");
    return {};
  }
  template <class P>
  __device__ static u32x2 lds_read_tr8_b64(const P*) {
    static_assert(sizeof(P) == 0, "gfx942 has no transposing LDS read");
    return {};
  }
};

}  // namespace hk::arch
