// The backward's product patterns (attention_bwd.h): a staged tile times a wave's registers, and a staged tile used
// transposed times an accumulator in acc order (ops/acc_order.h); and the exchange of an acc-order operand between
// the two waves of a pair through the LDS.
#pragma once
#include "attention_common.h"

namespace hk::kernels {

// A B^T, A a tile of the LDS read in row layout and B a register tile: S = Q K^T and dP = dO V^T (kernel 2), S^T =
// K Q^T and dP^T = V dO^T (kernel 3). `streamed`: A is read one k step (the MFMA's K columns) at a time, each used as
// it lands, so that no more of A is held than the reads in flight (kernel 3, whose 32-query waves need the registers;
// kernel 2's schedule is slower so: 118 against 75 ms on MI355X at GQA D128 N8192). Every element sums its k steps in
// the same order either way.
template <bool streamed = false, shared_tile ST, register_tile B>
__device__ inline rt_acc<ST::rows, B::rows> mma_ABt_lds(const ST& a, const B& b) {
  using T = typename ST::dtype;
  rt_acc<ST::rows, B::rows> d;
  zero(d);
  if constexpr (streamed) {
#pragma unroll
    for (int k = 0; k < B::tiles_c; ++k) {
      rt<T, ST::rows, B::base_cols> ar;
      load(ar, a, {0, 0, 0, k});
      rt<T, B::rows, B::base_cols> bk;  // B's k step: the same registers
#pragma unroll
      for (int j = 0; j < B::tiles_r; ++j)
#pragma unroll
        for (int e = 0; e < B::E; ++e) bk.data[j][0][e] = b.data[j][k][e];
      mma_ABt(d, ar, bk, d);
    }
  } else {
    rt<T, ST::rows, ST::cols> ar;
    load(ar, a);
    mma_ABt(d, ar, b, d);
  }
  return d;
}

// acc += X^T S, X a tile of the LDS (K rows of D) read in acc order and used transposed (the same registers), S an
// accumulator over the same K rows whose registers are the B operand as they stand: dV^T += dO^T P and dK^T += Q^T
// dS (kernel 2), dQ^T += K^T dS^T (kernel 3).
// (mma_AtB_col: with S already in the operand's form, acc order.)
template <int D, int N, int K, shared_tile ST>
__device__ inline void mma_AtB_col(rt_acc<D, N>& acc, const ST& x, const rt<typename ST::dtype, K, N, layout::col>& b) {
  using T = typename ST::dtype;
  static_assert(ST::rows == K && ST::cols == D, "mma_AtB_acc: X is K x D");
  rt<T, K, D, layout::col> xc;
  load_acc_order(xc, x);
  rt<T, D, K, layout::row> xt;
  transpose(xt, xc);
  mma_AB(acc, xt, b, acc);
}
template <int D, int N, int K, shared_tile ST>
__device__ inline void mma_AtB_acc(rt_acc<D, N>& acc, const ST& x, const rt_acc<K, N>& s) {
  rt<typename ST::dtype, K, N, layout::col> b;
  copy_acc_order(b, s);
  mma_AtB_col(acc, x, b);
}

// mma_AtB_acc in chunks of C of X's columns (C of acc's rows) at a time: one chunk's acc-order reads held at once, not
// all of X's (wide heads without transposing LDS reads, whose reads hold an element a register before packing).
template <int C, int D, int N, int K, shared_tile ST>
__device__ inline void mma_AtB_acc_chunks(rt_acc<D, N>& acc, const ST& x, const rt_acc<K, N>& s) {
  using T = typename ST::dtype;
  using Part = rt_acc<C, N>;
  static_assert(D % C == 0 && ST::rows == K && ST::cols == D, "mma_AtB_acc_chunks: X is K x D, in chunks of C");
  rt<T, K, N, layout::col> b;
  copy_acc_order(b, s);
#pragma unroll
  for (int c = 0; c < D / C; ++c) {
    rt<T, K, C, layout::col> xc;
    load_acc_order(xc, x, {0, 0, 0, c});
    rt<T, C, K, layout::row> xt;
    transpose(xt, xc);
    Part part;  // acc's rows c C .. (c + 1) C - 1: its row tiles, the same registers
#pragma unroll
    for (int i = 0; i < Part::tiles_r; ++i)
      for (int j = 0; j < Part::tiles_c; ++j)
        for (int e = 0; e < Part::E; ++e) part.data[i][j][e] = acc.data[c * Part::tiles_r + i][j][e];
    mma_AB(part, xt, b, part);
#pragma unroll
    for (int i = 0; i < Part::tiles_r; ++i)
      for (int j = 0; j < Part::tiles_c; ++j)
        for (int e = 0; e < Part::E; ++e) acc.data[c * Part::tiles_r + i][j][e] = part.data[i][j][e];
  }
}

// The exchange of a col-layout operand tile between two waves: each lane writes its registers and the partner's same
// lane reads them, 16 bytes a lane at a time, lane-major (64 lanes x 16 bytes contiguous: no bank conflicts).
template <register_tile RT>
struct lane_regs {
  static constexpr int chunks = int(sizeof(RT)) / 16;
  static_assert(sizeof(RT) % 16 == 0, "lane_regs: whole 16-byte chunks");
  __attribute__((aligned(16))) char bytes[chunks * 64 * 16];

  __device__ void put(const RT& r) {
    const auto* src = reinterpret_cast<const uint32_t*>(&r);
    const int lane = lane_id();
#pragma unroll
    for (int c = 0; c < chunks; ++c) {
      using v4 = uint32_t __attribute__((ext_vector_type(4)));
      const v4 v = {src[4 * c], src[4 * c + 1], src[4 * c + 2], src[4 * c + 3]};
      *reinterpret_cast<v4*>(bytes + (c * 64 + lane) * 16) = v;
    }
  }
  __device__ void get(RT& r) const {
    auto* dst = reinterpret_cast<uint32_t*>(&r);
    const int lane = lane_id();
#pragma unroll
    for (int c = 0; c < chunks; ++c) {
      using v4 = uint32_t __attribute__((ext_vector_type(4)));
      const v4 v = *reinterpret_cast<const v4*>(bytes + (c * 64 + lane) * 16);
      dst[4 * c] = v.x, dst[4 * c + 1] = v.y, dst[4 * c + 2] = v.z, dst[4 * c + 3] = v.w;
    }
  }
};

// Softcapping in both backward kernels: the scores s capped (before the masks' -inf) and dp (dP - delta) times the
// cap's slope at them, so that dS = P dp after the masks: no tile of slopes held across the products.
template <class S, class Dp>
__device__ __attribute__((always_inline)) inline void attn_bwd_cap(const AttnArgs& p, S& s, Dp& dp) {
  p.cap.apply(s);
  map(dp, dp, s, [](float x, float t) { return x * AttnArgs::Softcap::slope(t); });
}

}  // namespace hk::kernels
