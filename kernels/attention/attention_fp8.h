// The FP8 attention forward's V: fp8e4m3 (the arch's e4m3) decoded into bf16 before the forward kernel, which then
// runs P V in bf16 (attn_value_t, attention_common.h). Every e4m3 value is a bf16 value (3 mantissa bits of bf16's 7,
// and its exponents, subnormals included, inside bf16's normal range), so the decode is exact and v_descale waits
// for O (attn_descale). Why not fp8 P V: the MFMA's K (64 keys for the 32x32 fp8 MFMA on gfx950) is twice the 32 keys
// of the ping-pong kernel's phase, and P in e4m3 would cost O 3 bits of P's 8.
//
// A memory-bound pass: each lane decodes 8 elements (one 8-byte load, one 16-byte store), from V's strides into a
// contiguous (B, S, Hkv, DV) bf16 tensor ((total_k, Hkv, DV) for varlen), which the forward reads as V. Its traffic
// (3 bytes an element of V) is a small part of the forward's (which reads each K and V tile once per query tile).
#pragma once
#include "hk/hk.h"

namespace hk::kernels {

struct AttnFp8VArgs {
  const uint8_t* v;          // fp8e4m3 codes
  long v_bs, v_rs, v_hs;     // V's element strides
  bf16* out;                 // contiguous (batch, rows, heads, dv)
  long batch, rows, heads;   // as addressed (varlen: 1 batch of the packed rows)
  int dv;                    // a multiple of 8
};

inline constexpr int attn_fp8_v_threads = 256;

__global__ __launch_bounds__(attn_fp8_v_threads) void attention_fp8_decode_v(AttnFp8VArgs a) {
  const long chunks = a.dv / 8, total = a.batch * a.rows * a.heads * chunks;
  for (long i = long(blockIdx.x) * attn_fp8_v_threads + threadIdx.x; i < total; i += long(gridDim.x) * attn_fp8_v_threads) {
    long r = i / chunks;
    const int c = int(i - r * chunks) * 8;
    const long h = r % a.heads;
    r /= a.heads;
    const long row = r % a.rows, b = r / a.rows;
    const uint2 w = *reinterpret_cast<const uint2*>(a.v + b * a.v_bs + row * a.v_rs + h * a.v_hs + c);
    bf16 x[8];
#pragma unroll
    for (int e = 0; e < 8; ++e)
      x[e] = bf16(float(fp8e4m3::from_bits(uint8_t((e < 4 ? w.x : w.y) >> (8 * (e % 4))))));
    *reinterpret_cast<uint4*>(a.out + i * 8) = __builtin_bit_cast(uint4, x);
  }
}

}  // namespace hk::kernels
