// The rotary kernel: one workgroup per token (b, s). Its rotary_dim/2 angles are made once (from the tables, or from
// the position and base in fp32) into shared vectors, then every head of Q and K is rotated from them: thread j takes
// pairs j, j + 256, ... of heads x rotary_dim/2, so consecutive threads touch consecutive elements (half-split) or
// element pairs (interleaved).
#pragma once
#include "hk/hk.h"
#include "rotary.h"

namespace hk::kernels {

inline constexpr int rotary_threads = 256;

struct RotaryTensorArgs {
  const void* in;
  void* out;
  int heads;
  long in_b, in_s, in_h, out_b, out_s, out_h;
};

struct RotaryArgs {
  int seqlen, head_dim, rotary_dim;
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

// Rotates every head of one tensor of token (b, s) by the angles in cos_i / sin_i.
template <class T>
__device__ inline void rotate_token(const RotaryArgs& a, const RotaryTensorArgs& t, int b, int s,
                                    const sv<float, rotary_max_dim / 2>& cos_i,
                                    const sv<float, rotary_max_dim / 2>& sin_i) {
  const T* in = static_cast<const T*>(t.in) + b * t.in_b + s * t.in_s;
  T* out = static_cast<T*>(t.out) + b * t.out_b + s * t.out_s;
  // Thread j takes items j, j + 256, ... of heads x n items; (head, index) steps by (256 / n, 256 % n) with a carry,
  // so no item costs a division.
  auto for_items = [](int heads, int n, auto&& f) {
    const int dh = rotary_threads / n, di = rotary_threads % n;
    for (int h = threadIdx.x / n, i = threadIdx.x % n; h < heads;) {
      f(h, i);
      h += dh, i += di;
      if (i >= n) i -= n, ++h;
    }
  };
  const int half = a.rotary_dim / 2;
  for_items(t.heads, half, [&](int h, int i) {
    const int e0 = a.interleaved ? 2 * i : i, e1 = a.interleaved ? 2 * i + 1 : i + half;
    const float x0 = float(in[h * t.in_h + e0]), x1 = float(in[h * t.in_h + e1]);
    const float c = cos_i[i], sn = sin_i[i];
    out[h * t.out_h + e0] = T(x0 * c - x1 * sn);
    out[h * t.out_h + e1] = T(x0 * sn + x1 * c);
  });
  // The rest of each head is copied (nothing to do in place).
  const int rest = a.head_dim - a.rotary_dim;
  if (rest == 0 || (static_cast<const void*>(in) == out && t.in_h == t.out_h)) return;
  for_items(t.heads, rest, [&](int h, int i) { out[h * t.out_h + a.rotary_dim + i] = in[h * t.in_h + a.rotary_dim + i]; });
}

// TT: the tables' element type (float or bf16), or void for angles computed from positions and base.
template <class T, class TT>
__global__ void __launch_bounds__(rotary_threads) rotary(RotaryArgs a) {
  __shared__ sv<float, rotary_max_dim / 2> cos_i, sin_i;
  const int b = blockIdx.x / a.seqlen, s = blockIdx.x % a.seqlen;
  const int half = a.rotary_dim / 2;
  for (int i = threadIdx.x; i < half; i += rotary_threads) {
    float c, sn;
    if constexpr (std::is_void_v<TT>) {
      const long pos = a.positions ? long(a.positions[long(b) * a.seqlen + s]) : a.position_offset + s;
      const float inv_freq = exp2f(-float(2 * i) / float(a.rotary_dim) * a.log2_base);
      sincosf(float(pos) * inv_freq, &sn, &c);
    } else {
      const long row = a.position_offset + s;
      c = float(static_cast<const TT*>(a.cos)[row * a.table_stride + i]);
      sn = float(static_cast<const TT*>(a.sin)[row * a.table_stride + i]);
    }
    cos_i[i] = c;
    sin_i[i] = a.sign * sn;
  }
  barrier();
  rotate_token<T>(a, a.q, b, s, cos_i, sin_i);
  if (a.k.in) rotate_token<T>(a, a.k, b, s, cos_i, sin_i);
}

}  // namespace hk::kernels
