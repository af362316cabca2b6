// The one place where gfx942 (CDNA3) and gfx950 (CDNA4) differ. Everything else in hk is written against
// `arch::current`; no other header tests an arch macro.
#pragma once
#include <hip/hip_runtime.h>

#include <cstdint>

namespace hk::arch {

// s_waitcnt's 16-bit immediate in the GFX9 encoding, which gfx942 and gfx950 share: vmcnt[3:0] in bits 3:0,
// expcnt in 6:4, lgkmcnt in 11:8, vmcnt[5:4] in 15:14. A counter at its maximum does not wait.
struct gfx9_waitcnt {
  static constexpr int vmcnt_max = 63, expcnt_max = 7, lgkmcnt_max = 15;
  static constexpr int waitcnt(int vm = vmcnt_max, int exp = expcnt_max, int lgkm = lgkmcnt_max) {
    return (vm & 0xf) | (exp & 0x7) << 4 | (lgkm & 0xf) << 8 | (vm >> 4 & 0x3) << 14;
  }
};

struct cdna3 : gfx9_waitcnt {
  static constexpr const char* name = "gfx942";
  static constexpr int lds_bytes = 64 * 1024;
  static constexpr int compute_units = 304, xcds = 8;
  static constexpr int lds_banks = 32;
  static constexpr int mfma_k = 16;        // K of the 16x16 bf16/f16 MFMA: v_mfma_f32_16x16x16_{bf16,f16}
  static constexpr int mfma32_k = 8;       // K of the 32x32 bf16/f16 MFMA: v_mfma_f32_32x32x8_{bf16,f16}
  static constexpr int lds_read_bytes = 8; // the widest LDS read a register-tile load issues per lane (ds_read_b64)
  static constexpr int lds_dma_bytes = 4;  // buffer_load_dword ... lds: bytes per lane of a load straight into LDS
  static constexpr bool fp8_fnuz = true;   // e4m3fnuz / e5m2fnuz
  static constexpr float fp8_max = 240.f;  // largest finite e4m3fnuz (bias 8, 0x80 is the only NaN, no inf, no -0)
  static constexpr float bf8_max = 57344.f;  // largest finite e5m2fnuz (bias 16, 0x80 is the only NaN, no inf, no -0)
  static constexpr int fp8_mfma_k = 32;    // v_mfma_f32_16x16x32_{fp8,bf8}_{fp8,bf8}: 8 bytes per lane
  static constexpr int fp8_mfma32_k = 16;  // v_mfma_f32_32x32x16_{fp8,bf8}_{fp8,bf8}: 8 bytes per lane
  static constexpr bool lds_read_transpose = false;  // no transposing LDS reads: col-layout tiles read elementwise
  // Shared-tile swizzle masks of row bits 0..6 (see st.h), for 16-bit and 8-bit elements: printed by
  // tools/swizzle_search, which proves every register-tile read of either MFMA family conflict free under this
  // arch's LDS phases for rows of 64 to 512 bytes.
  static constexpr int swizzle_16bit[7] = {1, 3, 4, 9, 0, 0, 0};
  static constexpr int swizzle_8bit[7] = {1, 2, 4, 11, 0, 0, 0};
};

struct cdna4 : gfx9_waitcnt {
  static constexpr const char* name = "gfx950";
  static constexpr int lds_bytes = 160 * 1024;
  static constexpr int compute_units = 256, xcds = 8;
  static constexpr int lds_banks = 64;
  static constexpr int mfma_k = 32;         // v_mfma_f32_16x16x32_{bf16,f16}
  static constexpr int mfma32_k = 16;       // v_mfma_f32_32x32x16_{bf16,f16}
  static constexpr int lds_read_bytes = 16; // ds_read_b128
  static constexpr int lds_dma_bytes = 16;  // buffer_load_dwordx4 ... lds
  static constexpr bool fp8_fnuz = false;   // OCP e4m3fn / e5m2
  static constexpr float fp8_max = 448.f;   // largest finite e4m3fn (bias 7, S.1111.111 is NaN, no inf)
  static constexpr float bf8_max = 57344.f; // largest finite OCP e5m2 (bias 15, S.11111.00 inf, S.11111.xx NaN)
  static constexpr int fp8_mfma_k = 128;    // v_mfma_f32_16x16x128_f8f6f4 (unscaled): 32 bytes per lane
  static constexpr int fp8_mfma32_k = 64;   // v_mfma_f32_32x32x64_f8f6f4 (unscaled): 32 bytes per lane
  static constexpr bool lds_read_transpose = true;  // ds_read_b64_tr_b16
  static constexpr int swizzle_16bit[7] = {4, 13, 6, 7, 4, 0, 0};
  static constexpr int swizzle_8bit[7] = {2, 5, 11, 1, 0, 10, 1};
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

// 16-bit operand fragments of one 32x32xK MFMA: K/2 elements per lane (4 on gfx942, 8 on gfx950: the same widths as
// the 16x16 family's), and its accumulator, 16 floats per lane.
inline constexpr int mfma32_elems = current::mfma32_k / 2;
using bf16_frag32 = __bf16 __attribute__((ext_vector_type(mfma32_elems)));
using f16_frag32 = _Float16 __attribute__((ext_vector_type(mfma32_elems)));
using f32x16 = float __attribute__((ext_vector_type(16)));

// The two 8-bit float formats, each in the arch's flavour (FNUZ on gfx942, OCP on gfx950). The values are the
// f8f6f4 MFMA's cbsz / blgp format codes (gfx950), so they pass straight through as its immediates.
enum class fp8_format : int { e4m3 = 0, e5m2 = 1 };
template <fp8_format F>
inline constexpr float fp8_format_max = F == fp8_format::e4m3 ? current::fp8_max : current::bf8_max;

// fp8 operand fragments: K/4 bytes per lane of the 16x16 fp8 MFMA, K/2 of the 32x32 one (8 on gfx942, 32 on gfx950
// for both). The format rides in the type, so one mma16 / mma32 picks the instruction (or immediates) for A's and B's.
inline constexpr int fp8_elems = current::fp8_mfma_k / 4;
inline constexpr int fp8_elems32 = current::fp8_mfma32_k / 2;
template <fp8_format F, int N>
struct fp8_frag_of {
  int v __attribute__((ext_vector_type(N / 4)));
};
template <fp8_format F>
using fp8_frag = fp8_frag_of<F, fp8_elems>;
template <fp8_format F>
using fp8_frag32 = fp8_frag_of<F, fp8_elems32>;

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

// D = A * B + C for one 32x32 output block over the arch's K. Lane l supplies row (A) or column (B) l % 32 and
// k = (l / 32) * K/2 + e; D[i][j] lands in lane j + 32 * ((i / 4) % 2), element 4 * (i / 8) + i % 4.
__device__ inline f32x16 mma32(bf16_frag32 a, bf16_frag32 b, f32x16 c) {
#if defined(__gfx950__)
  return __builtin_amdgcn_mfma_f32_32x32x16_bf16(a, b, c, 0, 0, 0);
#elif defined(__gfx942__)
  using s4 = short __attribute__((ext_vector_type(4)));
  return __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(__builtin_bit_cast(s4, a), __builtin_bit_cast(s4, b), c, 0, 0, 0);
#else
  return c;
#endif
}

__device__ inline f32x16 mma32(f16_frag32 a, f16_frag32 b, f32x16 c) {
#if defined(__gfx950__)
  return __builtin_amdgcn_mfma_f32_32x32x16_f16(a, b, c, 0, 0, 0);
#elif defined(__gfx942__)
  return __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c, 0, 0, 0);
#else
  return c;
#endif
}

// gfx942 has one fp8 MFMA opcode per pair of operand formats (fp8 = e4m3, bf8 = e5m2): the one for FA, FB.
#define HK_GFX942_FP8_MFMA(SHAPE)                                                                        \
  const long x = __builtin_bit_cast(long, a.v), y = __builtin_bit_cast(long, b.v);                      \
  constexpr bool a4 = FA == fp8_format::e4m3, b4 = FB == fp8_format::e4m3;                              \
  if constexpr (a4 && b4) return __builtin_amdgcn_mfma_f32_##SHAPE##_fp8_fp8(x, y, c, 0, 0, 0);         \
  else if constexpr (a4) return __builtin_amdgcn_mfma_f32_##SHAPE##_fp8_bf8(x, y, c, 0, 0, 0);          \
  else if constexpr (b4) return __builtin_amdgcn_mfma_f32_##SHAPE##_bf8_fp8(x, y, c, 0, 0, 0);          \
  else return __builtin_amdgcn_mfma_f32_##SHAPE##_bf8_bf8(x, y, c, 0, 0, 0)

// D = A * B + C for one 16x16 block of fp8 (A and B each e4m3 or e5m2 of the arch's format) over the arch's fp8 K.
// Same lane mapping as the 16-bit form: lane l supplies row (A) or column (B) l % 16 and k = (l / 16) * K/4 + e. On
// gfx950 the f8f6f4 instruction deals k out to lanes in 16-byte chunks (see docs/vgpu-mfma.md); hk feeds it A and B
// through the same contiguous mapping, which renumbers k alike on both operands and so leaves every dot product
// unchanged. Constant zero scales and byte selects: LLVM selects the unscaled f8f6f4 form (scale 1.0); cbsz / blgp
// are A's and B's formats. gfx942 has one opcode per format pair.
template <fp8_format FA, fp8_format FB>
__device__ inline f32x4 mma16(fp8_frag<FA> a, fp8_frag<FB> b, f32x4 c) {
#if defined(__gfx950__)
  return __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(a.v, b.v, c, int(FA), int(FB), 0, 0, 0, 0);
#elif defined(__gfx942__)
  HK_GFX942_FP8_MFMA(16x16x32);
#else
  (void)a, (void)b;
  return c;
#endif
}

// The same for one 32x32 block: lane l supplies row (A) or column (B) l % 32 and k = (l / 32) * K/2 + e, D as in the
// 16-bit mma32. gfx942's v_mfma_f32_32x32x16_*8_*8 takes exactly that mapping; gfx950's v_mfma_f32_32x32x64_f8f6f4
// deals k in 16-byte chunks (lane half g holds k in [16g, 16g + 16) of each 32), renumbered alike on A and B as above.
template <fp8_format FA, fp8_format FB>
__device__ inline f32x16 mma32(fp8_frag32<FA> a, fp8_frag32<FB> b, f32x16 c) {
#if defined(__gfx950__)
  return __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(a.v, b.v, c, int(FA), int(FB), 0, 0, 0, 0);
#elif defined(__gfx942__)
  HK_GFX942_FP8_MFMA(32x32x16);
#else
  (void)a, (void)b;
  return c;
#endif
}
#undef HK_GFX942_FP8_MFMA

// fp8 conversions in the arch's format (the same opcodes decode FNUZ on gfx942 and OCP on gfx950): v_cvt_*_fp8 for
// e4m3, v_cvt_*_bf8 for e5m2. Encoding rounds to nearest even and saturates to +-max (infinities too: the
// "satfinite" convention, also where OCP e5m2 could hold inf); NaN stays NaN (the hardware alone would turn
// overflow into NaN or inf, so the input is clamped first, as v_med3).
template <fp8_format F>
__device__ inline float fp8_saturate(float x) {
  return x != x ? x : fminf(fmaxf(x, -fp8_format_max<F>), fp8_format_max<F>);
}
// Two floats into bytes 0 and 1 (Hi = false) or 2 and 3 (Hi = true) of `old`.
template <fp8_format F, bool Hi>
__device__ inline uint32_t fp8_encode2(float lo, float hi, uint32_t old) {
#if defined(__gfx942__) || defined(__gfx950__)
  if constexpr (F == fp8_format::e4m3)
    return uint32_t(__builtin_amdgcn_cvt_pk_fp8_f32(fp8_saturate<F>(lo), fp8_saturate<F>(hi), int(old), Hi));
  else return uint32_t(__builtin_amdgcn_cvt_pk_bf8_f32(fp8_saturate<F>(lo), fp8_saturate<F>(hi), int(old), Hi));
#else
  (void)lo, (void)hi;
  return old;
#endif
}
// Byte B of `word` as a float.
template <fp8_format F, int B>
__device__ inline float fp8_decode(uint32_t word) {
#if defined(__gfx942__) || defined(__gfx950__)
  if constexpr (F == fp8_format::e4m3) return __builtin_amdgcn_cvt_f32_fp8(int(word), B);
  else return __builtin_amdgcn_cvt_f32_bf8(int(word), B);
#else
  (void)word;
  return 0.f;
#endif
}

// Transposing LDS read (gfx950, ds_read_b64_tr_b16): each lane names 8 bytes (four 16-bit elements) of LDS; within
// each group of 16 lanes, lanes 4j..4j+3 name row j (16 elements) of a 4 x 16 matrix and lane i receives its column i.
// Only where current::lds_read_transpose.
using u16x4 = short __attribute__((ext_vector_type(4)));
__device__ inline u16x4 lds_read_tr16_b64(const void* lds) {
#if defined(__gfx950__)
  using lds_u16x4 = __attribute__((address_space(3))) u16x4;
  return __builtin_amdgcn_ds_read_tr16_b64_v4i16((lds_u16x4*)(lds));
#else
  (void)lds;
  return u16x4{};
#endif
}

// The same with 8-bit elements (ds_read_b64_tr_b8): lanes 2j, 2j+1 of each group of 16 name row j (16 bytes) of an
// 8 x 16 matrix and lane i receives column i (8 bytes).
using u32x2 = int __attribute__((ext_vector_type(2)));
__device__ inline u32x2 lds_read_tr8_b64(const void* lds) {
#if defined(__gfx950__)
  using lds_u32x2 = __attribute__((address_space(3))) u32x2;
  return __builtin_amdgcn_ds_read_tr8_b64_v2i32((lds_u32x2*)(lds));
#else
  (void)lds;
  return u32x2{};
#endif
}

// One load straight into LDS: current::lds_dma_bytes from `offset` in the buffer `rsrc` (zeros past its range) into
// lane l's slot at `lds` + l * lds_dma_bytes; `lds` must be the same for the whole wave.
__device__ inline void lds_dma(__amdgpu_buffer_rsrc_t rsrc, __attribute__((address_space(3))) void* lds, int offset) {
#if defined(__gfx950__)
  __builtin_amdgcn_raw_ptr_buffer_load_lds(rsrc, lds, 16, offset, 0, 0, 0);
#elif defined(__gfx942__)
  __builtin_amdgcn_raw_ptr_buffer_load_lds(rsrc, lds, 4, offset, 0, 0, 0);
#endif
}

}  // namespace hk::arch
