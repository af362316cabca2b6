// The staged GEMM kernel, the fallback for operands the LDS DMA cannot feed: 128x128 tiles of C per workgroup of 4
// waves (2 x 2, each 64 x 64 in MFMA accumulators), K in steps of 64 through one LDS stage filled through registers
// (16-byte loads where A's and B's rows allow, element loads elsewhere), workgroups in chiplet (XCD) order, edges
// of any size masked.
#pragma once
#include "gemm_common.h"

namespace hk::kernels {

template <class TIn, class TOut, bool BIsNK>
__global__ __launch_bounds__(256) void gemm_staged(GemmArgs p) {
  constexpr int BM = 128, BN = 128, BK = 64, WM = 64, WN = 64;
  using G = group<4>;
  using BTile = std::conditional_t<BIsNK, st<TIn, BN, BK>, st<TIn, BK, BN>>;
  __shared__ st<TIn, BM, BK> sa;
  __shared__ BTile sb;

  const GemmView<TIn, TOut, BIsNK, BM, BN> v(p);
  if (!v.live) return;  // a grouped grid's workgroup without a tile
  const auto &A = v.a, &B = v.b;
  const int tm = v.tile_m, tn = v.tile_n;

  const int wr = G::wave() / 2, wc = G::wave() % 2;
  rt_acc<WM, WN> acc;
  zero(acc);
  for (int kt = 0; kt * BK < p.k; ++kt) {
    load_bounded<G>(sa, A, {0, 0, tm, kt});
    if constexpr (BIsNK) load_bounded<G>(sb, B, {0, 0, tn, kt});
    else load_bounded<G>(sb, B, {0, 0, kt, tn});
    barrier();
    rt<TIn, WM, BK> ra;
    load(ra, sa, {0, 0, wr, 0});
    if constexpr (BIsNK) {
      rt<TIn, WN, BK> rb;
      load(rb, sb, {0, 0, wc, 0});
      mma_ABt(acc, ra, rb, acc);
    } else {
      rt<TIn, BK, WN, layout::col> rb;
      load(rb, sb, {0, 0, 0, wc});
      mma_AB(acc, ra, rb, acc);
    }
    barrier();
  }
  store_bounded(v.c, acc, v.template out_block<WM, WN>(wr, wc), p.alpha, p.beta);
}

}  // namespace hk::kernels
