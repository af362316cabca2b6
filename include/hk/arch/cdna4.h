// gfx950 (CDNA4: MI350X, MI355X): its facts and its instruction wrappers, in one place. Wrappers are used only where
// this target is `arch::current`; their builtins exist only for gfx950, so nothing else may call them.
#pragma once
#include <concepts>

#include "gfx9.h"

namespace hk::arch {

struct cdna4 : gfx9<cdna4> {
  static constexpr target_id id = target_id::gfx950;
  static constexpr const char* name = "gfx950";
  static constexpr int lds_bytes = 160 * 1024;
  static constexpr int compute_units = 256, xcds = 8;  // MI350X and MI355X alike
  static constexpr int lds_banks = 64;
  static constexpr int mfma_k = 32;          // v_mfma_f32_16x16x32_{bf16,f16}
  static constexpr int mfma32_k = 16;        // v_mfma_f32_32x32x16_{bf16,f16}
  static constexpr int fp8_mfma_k = 128;     // v_mfma_f32_16x16x128_f8f6f4 (unscaled): 32 bytes per lane
  static constexpr int fp8_mfma32_k = 64;    // v_mfma_f32_32x32x64_f8f6f4 (unscaled): 32 bytes per lane
  static constexpr int lds_read_bytes = 16;  // ds_read_b128
  static constexpr int lds_dma_bytes = 16;   // buffer_load_dwordx4 ... lds
  static constexpr bool fp8_fnuz = false;    // OCP e4m3fn / e5m2
  static constexpr float fp8_max = 448.f;    // largest finite e4m3fn (bias 7, S.1111.111 is NaN, no inf)
  static constexpr float bf8_max = 57344.f;  // largest finite OCP e5m2 (bias 15, S.11111.00 inf, S.11111.xx NaN)
  static constexpr bool lds_read_transpose = true;  // ds_read_b64_tr_b16 / _tr_b8
  static constexpr bool bf16_convert = true;        // v_cvt_pk_bf16_f32
  // Shared-tile swizzle masks (see cdna3.h): searched by tools/swizzle_search for this target's LDS phases.
  static constexpr int swizzle_16bit[7] = {4, 13, 6, 7, 4, 0, 0};
  static constexpr int swizzle_8bit[7] = {2, 5, 11, 1, 0, 10, 1};

  using bf16_frag = bf16_vec<mfma_k / 4>;
  using f16_frag = f16_vec<mfma_k / 4>;
  using bf16_frag32 = bf16_vec<mfma32_k / 2>;
  using f16_frag32 = f16_vec<mfma32_k / 2>;
  template <fp8_format F>
  using fp8_frag = fp8_frag_of<F, fp8_mfma_k / 4>;
  template <fp8_format F>
  using fp8_frag32 = fp8_frag_of<F, fp8_mfma32_k / 2>;

  // 16-bit MFMAs: the lane mappings of cdna3.h's, with twice the K per instruction.
  __device__ static f32x4 mma16(bf16_frag a, bf16_frag b, f32x4 c) { return __builtin_amdgcn_mfma_f32_16x16x32_bf16(a, b, c, 0, 0, 0); }
  __device__ static f32x4 mma16(f16_frag a, f16_frag b, f32x4 c) { return __builtin_amdgcn_mfma_f32_16x16x32_f16(a, b, c, 0, 0, 0); }
  __device__ static f32x16 mma32(bf16_frag32 a, bf16_frag32 b, f32x16 c) { return __builtin_amdgcn_mfma_f32_32x32x16_bf16(a, b, c, 0, 0, 0); }
  __device__ static f32x16 mma32(f16_frag32 a, f16_frag32 b, f32x16 c) { return __builtin_amdgcn_mfma_f32_32x32x16_f16(a, b, c, 0, 0, 0); }
  // v_mfma_scale_f32_32x32x64_f8f6f4 with A and B of the formats FA and FB (the f8f6f4 codes: 0 e4m3, 1 e5m2, 2 e2m3,
  // 3 e3m2, 4 e2m1; 32 bytes a lane, fp6 / fp4 packed), the lane's E8M0 scales in byte 0 of sa / sb. The scales must
  // be per-lane values: uniform ones in an SGPR or an inline constant are read from bits 30:23 by the hardware
  // (docs/vgpu-mfma.md). A template, so that code for other targets that names it (in a branch for this one) never
  // instantiates the builtin.
  template <int FA, int FB>
  __device__ static f32x16 mma_scale32(i32x8 a, i32x8 b, f32x16 c, int sa, int sb) {
    return __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(a, b, c, FA, FB, 0, sa, 0, sb);
  }

  // fp8: the f8f6f4 instructions, unscaled (constant zero scales and byte selects: LLVM selects the unscaled form,
  // scale 1.0); cbsz / blgp are A's and B's formats. The instruction deals k out to lanes in 16-byte chunks (see
  // docs/vgpu-mfma.md); hk feeds A and B through the 16-bit forms' contiguous mapping, which renumbers k alike on both
  // operands and so leaves every dot product unchanged.
  template <fp8_format FA, fp8_format FB>
  __device__ static f32x4 mma16(fp8_frag<FA> a, fp8_frag<FB> b, f32x4 c) {
    return __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(a.v, b.v, c, int(FA), int(FB), 0, 0, 0, 0);
  }
  template <fp8_format FA, fp8_format FB>
  __device__ static f32x16 mma32(fp8_frag32<FA> a, fp8_frag32<FB> b, f32x16 c) {
    return __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(a.v, b.v, c, int(FA), int(FB), 0, 0, 0, 0);
  }

  // The 16x16x32 MFMA as inline asm, for a kernel that places its accumulators itself: at one wave per SIMD LLVM 21
  // selects every builtin MFMA in its AGPR form, so a loop cannot hold some accumulators in the AGPRs (`into_agpr`:
  // acc += a b, acc in AGPRs) and others in VGPRs (`into_vgpr`; `first`: d = a b + c, c a VGPR tile). LLVM neither
  // pads their hazards nor knows their latency: the caller reads a result by VALU no sooner than 12 wait states after
  // its MFMA (8 passes: LLVM's GCNHazardRecognizer, GFX940_XDL_N_PassWriteVgprVALUMemExpRead WaitStates on gfx950),
  // and issues the MFMA no sooner than 2 after a VALU write of its A or B operand.
  // (HK_CDNA4_MFMA16: the instruction for fragment type F, bf16 or f16, with `operands` and the asm's outputs and
  // inputs; the mnemonic is pasted, as an asm string must be a literal.)
#define HK_CDNA4_MFMA16(F, operands, ...)                                                                         \
  do {                                                                                                           \
    if constexpr (std::same_as<F, bf16_frag>) asm volatile("v_mfma_f32_16x16x32_bf16 " operands __VA_ARGS__); \
    else asm volatile("v_mfma_f32_16x16x32_f16 " operands __VA_ARGS__);                                      \
  } while (0)
  template <class F>
  __device__ static void into_agpr(f32x4& acc, F a, F b) {
    HK_CDNA4_MFMA16(F, "%0, %1, %2, %0", : "+a"(acc) : "v"(a), "v"(b));
  }
  template <class F>
  __device__ static void into_vgpr(f32x4& acc, F a, F b) {
    HK_CDNA4_MFMA16(F, "%0, %1, %2, %0", : "+v"(acc) : "v"(a), "v"(b));
  }
  template <class F>
  __device__ static void first(f32x4& d, F a, F b, f32x4 c) {
    HK_CDNA4_MFMA16(F, "%0, %1, %2, %3", : "=&v"(d) : "v"(a), "v"(b), "v"(c));
  }
  // The same two with the B operand in the AGPRs (a wave's constant operand held there when the arch VGPRs run short:
  // the MFMA reads A and B from either file).
  template <class F>
  __device__ static void into_vgpr_ba(f32x4& acc, F a, const F& b) {
    HK_CDNA4_MFMA16(F, "%0, %1, %2, %0", : "+v"(acc) : "v"(a), "a"(b));
  }
  template <class F>
  __device__ static void first_ba(f32x4& d, F a, const F& b, f32x4 c) {
    HK_CDNA4_MFMA16(F, "%0, %1, %2, %3", : "=&v"(d) : "v"(a), "a"(b), "v"(c));
  }
  // d = a b (C the inline constant 0: no register of zeros), B in the arch VGPRs or (_ba) the AGPRs.
  template <class F>
  __device__ static void first0(f32x4& d, F a, F b) {
    HK_CDNA4_MFMA16(F, "%0, %1, %2, 0", : "=&v"(d) : "v"(a), "v"(b));
  }
  template <class F>
  __device__ static void first0_ba(f32x4& d, F a, const F& b) {
    HK_CDNA4_MFMA16(F, "%0, %1, %2, 0", : "=&v"(d) : "v"(a), "a"(b));
  }
#undef HK_CDNA4_MFMA16
  // The wait states before a VALU instruction may read what an asm MFMA wrote (a loop's end, before its accumulators
  // leave the AGPRs): more than 16 passes' worth.
  __device__ static void mfma_drain() { asm volatile("s_nop 7\n s_nop 7\n s_nop 7" ::: "memory"); }

  // v_permlane32_swap: the wave's two halves (lanes l and l ^ 32) exchange a register on the VALU, with no LDS trip.
  // a ^ b ^ c in one v_bitop3_b32 (truth table 0x96); LLVM 21 leaves two v_xor_b32 for the plain expression.
  __device__ static uint32_t xor3(uint32_t a, uint32_t b, uint32_t c) { return __builtin_amdgcn_bitop3_b32(a, b, c, 0x96); }
  // ~maj(a, b, c) (bitwise: the complement of the majority) in one v_bitop3_b32 (truth table 0x17, S0 the index's
  // high bit).
  __device__ static uint32_t maj_not(uint32_t a, uint32_t b, uint32_t c) { return __builtin_amdgcn_bitop3_b32(a, b, c, 0x17); }
  static constexpr bool bitop3 = true;
  static constexpr bool permlane32_swap = true;
  // op(x of lane l & 31, x of lane l | 32): the same operands, in the same order, in both halves.
  template <class Op>
  __device__ static float halves_combine(float x, Op op) {
    const auto r = __builtin_amdgcn_permlane32_swap(__float_as_uint(x), __float_as_uint(x), false, false);
    return op(__uint_as_float(r[0]), __uint_as_float(r[1]));
  }
  // Lanes l and l ^ 32 trade in one instruction: the lower half's y and the upper half's x trade places (the lower half
  // keeps its x, the upper half its y).
  template <class U>
  __device__ static void halves_swap(U& x, U& y) {
    const auto r = __builtin_amdgcn_permlane32_swap(x, y, false, false);
    x = r[0], y = r[1];
  }
  // Transposing LDS read (ds_read_b64_tr_b16): each lane names 8 bytes (four 16-bit elements); within each group of
  // 16 lanes, lanes 4j..4j+3 name row j (16 elements) of a 4 x 16 matrix and lane i receives its column i.
  template <class P>
  __device__ static u16x4 lds_read_tr16_b64(const P* lds) {
    using lds_u16x4 = __attribute__((address_space(3))) u16x4;
    return __builtin_amdgcn_ds_read_tr16_b64_v4i16((lds_u16x4*)(lds));
  }
  // The same with 8-bit elements (ds_read_b64_tr_b8): lanes 2j, 2j+1 of each group of 16 name row j (16 bytes) of an
  // 8 x 16 matrix and lane i receives column i (8 bytes).
  template <class P>
  __device__ static u32x2 lds_read_tr8_b64(const P* lds) {
    using lds_u32x2 = __attribute__((address_space(3))) u32x2;
    return __builtin_amdgcn_ds_read_tr8_b64_v2i32((lds_u32x2*)(lds));
  }
};

}  // namespace hk::arch
