// The FP8 attention forward (fp8e4m3 Q, K and V: the arch's e4m3, with descales): its element types, S^T's fp8
// MFMA and the descales (attention_common.h's kernels take them through T), and the pass that decodes V into bf16
// before the forward kernel, which then runs P V in bf16. Every e4m3 value is a bf16 value (3 mantissa bits of bf16's
// 7, and its exponents, subnormals included, inside bf16's normal range), so the decode is exact and v_descale waits
// for O (attn_descale). Why not fp8 P V: the MFMA's K (64 keys for the 32x32 fp8 MFMA on gfx950) is twice the 32 keys
// of the ping-pong kernel's phase, and P in e4m3 would cost O 3 bits of P's 8.
//
// The decode is a memory-bound pass: each lane decodes 8 elements (one 8-byte load, one 16-byte store), from V's
// strides into a contiguous (B, S, Hkv, DV) bf16 tensor ((total_k, Hkv, DV) for varlen), which the forward reads as
// V. Its traffic (3 bytes an element of V) is a small part of the forward's (which reads each K and V tile once per
// query tile).
#pragma once
#include "hk/hk.h"

namespace hk::kernels {

// The FP8 forward's types (T = fp8e4m3 Q and K). S = K Q^T takes the fp8 MFMA; V is decoded into bf16 before the
// kernel, so P V runs in bf16 and O is bf16: V, P and O are attn_value_t<T>.
// Q and K move as bf16 pairs: a row of D fp8 codes is a row of D / 2 bf16 elements (attn_qk_t, attn_qk_cols; the
// host passes their strides in 2-byte units), so their global and LDS tiles, swizzles and reads are those of a bf16
// head of D / 2, and qk bit-casts a lane's fragments (R of them) into one fp8 MFMA operand. That permutes the MFMA's
// k order against d, but the same way for K (A) and Q (B), whose tiles have one layout: the dot products are the same.
template <class T>
using attn_value_t = std::conditional_t<fp8_input<T>, bf16, T>;
template <class T>
using attn_qk_t = attn_value_t<T>;
template <class T>
inline constexpr int attn_qk_cols(int d) {
  return fp8_input<T> ? d / 2 : d;
}
// bf16 fragments of an S-family tile per fp8 MFMA operand, and whether a head of D columns makes whole operands (the
// instances the host never launches, such as gfx950's 4-wave kernel at D = 64, compile to nothing).
template <class S>
inline constexpr int attn_fp8_ratio = (std::same_as<S, mfma16> ? arch::fp8_elems : arch::fp8_elems32) /
                                      (2 * (std::same_as<S, mfma16> ? arch::mfma_elems : arch::mfma32_elems));
template <class T, class S, int D>
inline constexpr bool attn_qk_fits =
    !fp8_input<T> || (D / 2) % (attn_fp8_ratio<S> * rt<bf16, 32, 32, layout::row, S>::base_cols) == 0;

// C += A B^T for A, B row-layout bf16 tiles that hold fp8 codes in pairs (attn_qk_t): R = attn_fp8_ratio fragments of
// a lane, bit-cast, are one fp8 MFMA operand; A and B take the same k order.
template <class T, class C, class A, class B>
__device__ __attribute__((always_inline)) inline void attn_mma_fp8_ABt(C& c, const A& a, const B& b) {
  using S = typename A::shape;
  constexpr int R = attn_fp8_ratio<S>, E = A::E, N = R * E * 2;
  static_assert(A::tiles_c == B::tiles_c && A::tiles_c % R == 0, "qk: whole fp8 operands");
  auto op = [&](const auto& f, int k) __attribute__((always_inline)) {
    bf16 x[R * E];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int e = 0; e < E; ++e) x[r * E + e] = f[R * k + r][e];
    struct codes {
      T v[N];
    };
    return detail::frag(__builtin_bit_cast(codes, x).v);
  };
#pragma unroll
  for (int i = 0; i < A::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < B::tiles_r; ++j) {
      if constexpr (std::same_as<S, mfma16>) {
        arch::f32x4 acc = {c.data[i][j][0], c.data[i][j][1], c.data[i][j][2], c.data[i][j][3]};
#pragma unroll
        for (int k = 0; k < A::tiles_c / R; ++k) acc = arch::current::mma16(op(a.data[i], k), op(b.data[j], k), acc);
#pragma unroll
        for (int e = 0; e < 4; ++e) c.data[i][j][e] = acc[e];
      } else {
        arch::f32x16 acc;
#pragma unroll
        for (int e = 0; e < 16; ++e) acc[e] = c.data[i][j][e];
#pragma unroll
        for (int k = 0; k < A::tiles_c / R; ++k) acc = arch::current::mma32(op(a.data[i], k), op(b.data[j], k), acc);
#pragma unroll
        for (int e = 0; e < 16; ++e) c.data[i][j][e] = acc[e];
      }
    }
}

// FP8 Q and K (T): the block's descales folded into the arguments, once at the kernel's start: q_descale k_descale
// into the scores' scale (so the softmax and the LSE are those of the true scores; `capped`, softcap's instance:
// into the tanh's argument), v_descale into O's o_scale. The descales are uniform (scalar loads, scalar registers).
// Other types: nothing.
template <class T, bool capped = false, class Args, class Block>  // (AttnArgs, AttnBlock: attention_common.h)
__device__ __attribute__((always_inline)) inline void attn_descale(Args& p, const Block& blk) {
  if constexpr (fp8_input<T>) {
    const long i = blk.b * p.descale_bs + long(blk.h_kv) * p.descale_hs;
    const float qk = (p.q_descale ? p.q_descale[i] : 1.f) * (p.k_descale ? p.k_descale[i] : 1.f);
    // Capped: the scores' factor is the tanh's argument's (cap.k), the capped score's scale_log2 stays cap log2(e).
    if constexpr (capped) p.cap.k *= qk;
    else p.scale_log2 *= qk;
    p.scale *= qk;
    p.o_scale = p.v_descale ? p.v_descale[i] : 1.f;
  }
}

struct AttnFp8VArgs {
  const uint8_t* v;          // fp8e4m3 codes
  long v_bs, v_rs, v_hs;     // V's element strides
  bf16* out;                 // contiguous (batch, rows, heads, dv)
  long batch, rows, heads;   // as addressed (varlen: 1 batch of the packed rows)
  int dv;                    // a multiple of 8
};

inline constexpr int attn_fp8_v_threads = 256;

// (A template, so that every file that includes this header may hold its one definition.)
template <int Threads = attn_fp8_v_threads>
__global__ __launch_bounds__(Threads) void attention_fp8_decode_v(AttnFp8VArgs a) {
  const long chunks = a.dv / 8, total = a.batch * a.rows * a.heads * chunks;
  for (long i = long(blockIdx.x) * Threads + threadIdx.x; i < total; i += long(gridDim.x) * Threads) {
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
