// What gfx942 and gfx950 share: the GFX9 s_waitcnt encoding, the fp8 conversion opcodes, the MFMA operand vectors.
// Each target (cdna3.h, cdna4.h) derives from gfx9<itself>, so its own facts (fp8 range, MFMA K) reach the shared code.
#pragma once
#include <hip/hip_runtime.h>

#include <cstdint>

#include "target_id.h"

namespace hk::arch {

using f32x4 = float __attribute__((ext_vector_type(4)));
using f32x16 = float __attribute__((ext_vector_type(16)));
using u16x4 = short __attribute__((ext_vector_type(4)));
using u32x2 = int __attribute__((ext_vector_type(2)));
using i32x8 = int __attribute__((ext_vector_type(8)));
template <int N>
using bf16_vec = __bf16 __attribute__((ext_vector_type(N)));
template <int N>
using f16_vec = _Float16 __attribute__((ext_vector_type(N)));

// The two 8-bit float formats, each in the target's flavour (FNUZ on gfx942, OCP on gfx950). The values are the
// f8f6f4 MFMA's cbsz / blgp format codes (gfx950), so they pass straight through as its immediates.
enum class fp8_format : int { e4m3 = 0, e5m2 = 1 };

// N fp8 bytes of one lane's MFMA operand; the format rides in the type, so mma16 / mma32 pick the instruction (or
// immediates) for A's and B's formats.
template <fp8_format F, int N>
struct fp8_frag_of {
  int v __attribute__((ext_vector_type(N / 4)));
};

// True in the device passes of a HIP compile. The host pass parses device code for its types only; the few builtins
// whose arguments the host pass would check against the host's own rules sit behind `if constexpr (device_pass)`.
#if defined(__HIP_DEVICE_COMPILE__)
inline constexpr bool device_pass = true;
#else
inline constexpr bool device_pass = false;
#endif

template <class Target>
struct gfx9 {
  // s_waitcnt's 16-bit immediate: vmcnt[3:0] in bits 3:0, expcnt in 6:4, lgkmcnt in 11:8, vmcnt[5:4] in 15:14.
  // A counter at its maximum does not wait.
  static constexpr int vmcnt_max = 63, expcnt_max = 7, lgkmcnt_max = 15;
  static constexpr int waitcnt(int vm = vmcnt_max, int exp = expcnt_max, int lgkm = lgkmcnt_max) {
    return (vm & 0xf) | (exp & 0x7) << 4 | (lgkm & 0xf) << 8 | (vm >> 4 & 0x3) << 14;
  }

  // a ^ b ^ c (cdna4.h: one instruction).
  __device__ static uint32_t xor3(uint32_t a, uint32_t b, uint32_t c) { return a ^ b ^ c; }
  // ~maj(a, b, c), bitwise (cdna4.h: one instruction).
  __device__ static uint32_t maj_not(uint32_t a, uint32_t b, uint32_t c) { return ~((a & b) | (c & (a | b))); }
  static constexpr bool bitop3 = false;  // v_bitop3_b32 (any function of 3 inputs, bitwise)

  template <fp8_format F>
  static constexpr float fp8_format_max = F == fp8_format::e4m3 ? Target::fp8_max : Target::bf8_max;

  // fp8 conversions in the target's format (the same opcodes decode FNUZ on gfx942 and OCP on gfx950): v_cvt_*_fp8
  // for e4m3, v_cvt_*_bf8 for e5m2. Encoding rounds to nearest even and saturates to +-max (infinities too: the
  // "satfinite" convention, also where OCP e5m2 could hold inf); NaN stays NaN (the hardware alone would turn
  // overflow into NaN or inf, so the input is clamped first, as v_med3).
  template <fp8_format F>
  __device__ static float fp8_saturate(float x) {
    return x != x ? x : fminf(fmaxf(x, -fp8_format_max<F>), fp8_format_max<F>);
  }
  // Two floats into bytes 0 and 1 (Hi = false) or 2 and 3 (Hi = true) of `old`.
  template <fp8_format F, bool Hi>
  __device__ static uint32_t fp8_encode2(float lo, float hi, uint32_t old) {
    if constexpr (F == fp8_format::e4m3)
      return uint32_t(__builtin_amdgcn_cvt_pk_fp8_f32(fp8_saturate<F>(lo), fp8_saturate<F>(hi), int(old), Hi));
    else return uint32_t(__builtin_amdgcn_cvt_pk_bf8_f32(fp8_saturate<F>(lo), fp8_saturate<F>(hi), int(old), Hi));
  }
  // Byte B of `word` as a float.
  template <fp8_format F, int B>
  __device__ static float fp8_decode(uint32_t word) {
    if constexpr (F == fp8_format::e4m3) return __builtin_amdgcn_cvt_f32_fp8(int(word), B);
    else return __builtin_amdgcn_cvt_f32_bf8(int(word), B);
  }

  // A raw buffer resource (V#) over `bytes` bytes at `base`: loads past the end read zeros. Word 3 is GFX9's
  // untyped 32-bit data format (DATA_FORMAT = 4 in bits 18:15), the value AMD's libraries use for raw buffer loads.
  static constexpr int buffer_rsrc_word3 = 0x00020000;
  __device__ static __amdgpu_buffer_rsrc_t buffer_rsrc(const void* base, int bytes) {
    return __builtin_amdgcn_make_buffer_rsrc(const_cast<void*>(base), 0, bytes, buffer_rsrc_word3);
  }

  // One load straight into LDS: Target::lds_dma_bytes from `offset` + `uniform_offset` in the buffer `rsrc` (zeros
  // past its range) into lane l's slot at `lds` + l * lds_dma_bytes; `lds` and `uniform_offset` (the instruction's
  // soffset, an SGPR) must be the same for the whole wave. GFX9 range-checks the sum: offset + uniform_offset + bytes
  // <= num_records. (A template so that the size is checked only for the target that uses it.) `inst_offset`: the
  // instruction's offset field (0 .. 4095), added to both: the global offset (range-checked with the others) and the
  // LDS address, so that loads of one LDS base (M0) at constant distances need no M0 of their own.
  template <int inst_offset = 0, class Rsrc>
  __device__ static void lds_dma(Rsrc rsrc, __attribute__((address_space(3))) void* lds, int offset, int uniform_offset = 0) {
    static_assert(inst_offset >= 0 && inst_offset < 4096, "lds_dma: a 12-bit instruction offset");
    if constexpr (device_pass)
      __builtin_amdgcn_raw_ptr_buffer_load_lds(rsrc, lds, Target::lds_dma_bytes, offset, uniform_offset, inst_offset, 0);
  }

  // Operand fragments of one MFMA, from the target's K: 16-bit elements, K/4 per lane in the 16x16 family and K/2 in
  // the 32x32 family; fp8 likewise in bytes.
  static constexpr int mfma_elems() { return Target::mfma_k / 4; }
  static constexpr int mfma32_elems() { return Target::mfma32_k / 2; }
  static constexpr int fp8_elems() { return Target::fp8_mfma_k / 4; }
  static constexpr int fp8_elems32() { return Target::fp8_mfma32_k / 2; }
};

}  // namespace hk::arch
