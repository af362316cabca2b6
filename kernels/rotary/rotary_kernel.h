// The rotary kernel. Rotary is a stream: every element is read once and written once, so the kernel's time is HBM's
// (2.15 GB for Q of B16 S16384 H16 D128 bf16: 0.35 ms at MI355X's 6.2 TB/s), if the CUs keep enough bytes in flight
// and spend little on the angles. The schedule:
//  - A workgroup of 256 threads takes `tokens` consecutive tokens (b, s) (the host picks 1 .. 8 so that each thread
//    has about two items: enough loads in flight per wave with several workgroups per CU, and one barrier per group
//    of tokens instead of per token).
//  - Its threads first make the tokens' rotary_dim/2 angles (from the tables, or computed in fp32 from the position
//    and base), once per position, into shared memory; every head of Q and K is then rotated from them.
//  - An item is P consecutive pairs of one head: half-split, elements i0 .. i0+P-1 and half+i0 ..; interleaved,
//    elements 2 i0 .. 2 i0+2P-1, de-interleaved in registers. Either way two accesses of P contiguous elements, one
//    16-byte vector load or store each (P = 16 / sizeof(T): global_load_dwordx4) when the host found every row and
//    stride aligned for it; P = 1, one access per element, otherwise. The item's cos and sin are P contiguous floats
//    of shared memory (ds_read_b128s). Thread j takes items j, j + 256, ... of tokens x heads x items per head.
//  - Columns past rotary_dim are copied element by element (nothing to do in place).
#pragma once
#include "hk/hk.h"
#include "rotary.h"

namespace hk::kernels {

inline constexpr int rotary_threads = 256;
inline constexpr int rotary_max_tokens = 8;  // tokens per workgroup

struct RotaryTensorArgs {
  const void* in;
  void* out;
  int heads;
  long in_b, in_s, in_h, out_b, out_s, out_h;
};

struct RotaryArgs {
  long tokens;            // batch x seqlen
  int seqlen, head_dim, rotary_dim;
  int block_tokens;       // tokens per workgroup (<= rotary_max_tokens)
  RotaryTensorArgs q, k;  // k.in == nullptr: q alone
  bool interleaved;
  float sign;             // +1 forward, -1 backward (the rotation by -theta)
  const void* cos;
  const void* sin;
  long table_stride;
  float log2_base;        // computed angles
  const int* positions;
  long position_offset;
};

// Dynamic shared memory of a launch: cos and sin of block_tokens x rotary_dim/2 angles.
inline size_t rotary_shared_bytes(int block_tokens, int rotary_dim) {
  return 2 * size_t(block_tokens) * (rotary_dim / 2) * sizeof(float);
}

// Visits (token, head, index) for items j = threadIdx.x, + 256, ... of tokens x heads x n, stepping with carries so
// that no item costs a division.
template <class F>
__device__ inline void for_items(int tokens, int heads, int n, F&& f) {
  const int per_token = heads * n;
  const int dt = rotary_threads / per_token, r = rotary_threads % per_token, dh = r / n, di = r % n;
  int t = threadIdx.x / per_token, h = threadIdx.x % per_token / n, i = threadIdx.x % n;
  while (t < tokens) {
    f(t, h, i);
    t += dt, h += dh, i += di;
    if (i >= n) i -= n, ++h;
    if (h >= heads) h -= heads, ++t;
  }
}

// P contiguous elements at p as floats: one vector access when Vec, else one per element.
template <class T, int P, bool Vec>
__device__ inline void load_run(float (&v)[P], const T* p) {
  if constexpr (Vec) {
    const auto c = *reinterpret_cast<const detail::chunk<T, P>*>(p);
#pragma unroll
    for (int k = 0; k < P; ++k) v[k] = float(c.v[k]);
  } else {
#pragma unroll
    for (int k = 0; k < P; ++k) v[k] = float(p[k]);
  }
}
template <class T, int P, bool Vec>
__device__ inline void store_run(T* p, const float (&v)[P]) {
  if constexpr (Vec) {
    detail::chunk<T, P> c;
#pragma unroll
    for (int k = 0; k < P; ++k) c.v[k] = T(v[k]);
    *reinterpret_cast<detail::chunk<T, P>*>(p) = c;
  } else {
#pragma unroll
    for (int k = 0; k < P; ++k) p[k] = T(v[k]);
  }
}

// Rotates the P pairs from pair i0 of one head (half = rotary_dim / 2) from `in` to `out` (which may be `in`) by the
// angles cs[0 .. P) / ss[0 .. P), in fp32: the rotation every rotary path (hk::rotary, the decode append) shares.
template <class T, int P, bool Vec>
__device__ inline void rotate_pairs(const T* in, T* out, int i0, int half, bool interleaved, const float* cs,
                                    const float* ss) {
  // The two runs: (x0 run, x1 run) half-split; (first P, next P elements of the 2P) interleaved.
  const int e0 = interleaved ? 2 * i0 : i0, e1 = interleaved ? 2 * i0 + P : i0 + half;
  float u[P], w[P], c[P], sn[P];
  load_run<T, P, Vec>(u, in + e0);
  load_run<T, P, Vec>(w, in + e1);
  if constexpr (Vec && P % 4 == 0) {  // 16-byte aligned: i0 and half are multiples of P
#pragma unroll
    for (int k = 0; k < P; k += 4) {
      const auto cc = *reinterpret_cast<const detail::chunk<float, 4>*>(cs + k);
      const auto sc = *reinterpret_cast<const detail::chunk<float, 4>*>(ss + k);
#pragma unroll
      for (int v = 0; v < 4; ++v) c[k + v] = cc.v[v], sn[k + v] = sc.v[v];
    }
  } else {
#pragma unroll
    for (int k = 0; k < P; ++k) c[k] = cs[k], sn[k] = ss[k];
  }
  if (interleaved) {
    // Pair k is element 2k of the 2P-element run u ++ w and the next one.
    float x[2 * P];
#pragma unroll
    for (int k = 0; k < P; ++k) x[k] = u[k], x[P + k] = w[k];
#pragma unroll
    for (int k = 0; k < P; ++k) {
      const float x0 = x[2 * k], x1 = x[2 * k + 1];
      x[2 * k] = x0 * c[k] - x1 * sn[k];
      x[2 * k + 1] = x0 * sn[k] + x1 * c[k];
    }
#pragma unroll
    for (int k = 0; k < P; ++k) u[k] = x[k], w[k] = x[P + k];
  } else {
#pragma unroll
    for (int k = 0; k < P; ++k) {
      const float x0 = u[k], x1 = w[k];
      u[k] = x0 * c[k] - x1 * sn[k];
      w[k] = x0 * sn[k] + x1 * c[k];
    }
  }
  store_run<T, P, Vec>(out + e0, u);
  store_run<T, P, Vec>(out + e1, w);
}

// Rotates every head of one tensor for the workgroup's tokens by the angles in cos_s / sin_s ([token][rotary_dim/2]).
template <class T, int P, bool Vec>
__device__ inline void rotate_tokens(const RotaryArgs& a, const RotaryTensorArgs& t, int tokens, const int* tok_b,
                                     const int* tok_s, const float* cos_s, const float* sin_s) {
  const int half = a.rotary_dim / 2;
  for_items(tokens, t.heads, half / P, [&](int tok, int h, int item) {
    const long b = tok_b[tok], s = tok_s[tok];
    const T* in = static_cast<const T*>(t.in) + b * t.in_b + s * t.in_s + h * t.in_h;
    T* out = static_cast<T*>(t.out) + b * t.out_b + s * t.out_s + h * t.out_h;
    const int i0 = item * P;
    rotate_pairs<T, P, Vec>(in, out, i0, half, a.interleaved, cos_s + tok * half + i0, sin_s + tok * half + i0);
  });
  // The rest of each head is copied (nothing to do in place).
  const int rest = a.head_dim - a.rotary_dim;
  if (rest == 0 || (t.in == t.out && t.in_h == t.out_h && t.in_s == t.out_s && t.in_b == t.out_b)) return;
  for_items(tokens, t.heads, rest, [&](int tok, int h, int i) {
    const long b = tok_b[tok], s = tok_s[tok];
    static_cast<T*>(t.out)[b * t.out_b + s * t.out_s + h * t.out_h + a.rotary_dim + i] =
        static_cast<const T*>(t.in)[b * t.in_b + s * t.in_s + h * t.in_h + a.rotary_dim + i];
  });
}

// TT: the tables' element type (float or bf16), or void for angles computed from positions and base. P pairs per
// item, as vector accesses when Vec (rotary_dim/2 a multiple of P; rows, strides and pointers aligned to P elements).
template <class T, class TT, int P, bool Vec>
__global__ void __launch_bounds__(rotary_threads) rotary(RotaryArgs a) {
  extern __shared__ __attribute__((aligned(16))) float angles[];
  __shared__ int tok_b[rotary_max_tokens], tok_s[rotary_max_tokens];
  const long first = long(blockIdx.x) * a.block_tokens;
  const long left = a.tokens - first;
  const int tokens = left < a.block_tokens ? int(left) : a.block_tokens;
  const int half = a.rotary_dim / 2;
  float* cos_s = angles;
  float* sin_s = angles + a.block_tokens * half;
  if (threadIdx.x < tokens) {
    const long token = first + threadIdx.x;
    tok_b[threadIdx.x] = int(token / a.seqlen), tok_s[threadIdx.x] = int(token % a.seqlen);
  }
  for (int j = threadIdx.x; j < tokens * half; j += rotary_threads) {
    const int tok = j / half, i = j - tok * half;
    const long token = first + tok, s = token % a.seqlen;
    float c, sn;
    if constexpr (std::is_void_v<TT>) {
      const long pos = a.positions ? long(a.positions[token]) : a.position_offset + s;
      const float inv_freq = exp2f(-float(2 * i) / float(a.rotary_dim) * a.log2_base);
      sincosf(float(pos) * inv_freq, &sn, &c);
    } else {
      const long row = a.position_offset + s;
      c = float(static_cast<const TT*>(a.cos)[row * a.table_stride + i]);
      sn = float(static_cast<const TT*>(a.sin)[row * a.table_stride + i]);
    }
    cos_s[j] = c;
    sin_s[j] = a.sign * sn;
  }
  barrier();
  rotate_tokens<T, P, Vec>(a, a.q, tokens, tok_b, tok_s, cos_s, sin_s);
  if (a.k.in) rotate_tokens<T, P, Vec>(a, a.k, tokens, tok_b, tok_s, cos_s, sin_s);
}

}  // namespace hk::kernels
