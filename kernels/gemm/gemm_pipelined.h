// The pipelined GEMM kernel: 256x256 tiles of C per workgroup of 8 waves (each 64 x 128 or 128 x 64), two LDS stages fed
// by buffer loads straight into LDS: the next K step's tiles fly while the waves multiply the current one. K steps
// are 64 deep where two stages of 256x64 A and B tiles fit the LDS (gfx950's 160 KiB) and 32 deep on gfx942.
#pragma once
#include "gemm_kernel.h"
#include "hk/ops/async.h"

namespace hk::kernels {

template <class TIn, class TOut, bool BIsNK>
__global__ __launch_bounds__(512) void gemm_pipelined(GemmArgs p) {
  // Each wave owns a WM x WN block of C. With B in the col layout (A * B) the wide side goes to A, whose row-layout
  // reads are the cheap ones: that keeps gfx942's 256 VGPRs free of spills.
  constexpr int BM = 256, BN = 256, WM = BIsNK ? 64 : 128, WN = BIsNK ? 128 : 64, waves_n = BN / WN;
  constexpr int BK = arch::current::lds_bytes >= 128 * 1024 ? 64 : 32;
  using G = group<8>;
  __shared__ GemmStages<TIn, BM, BN, BK, BIsNK, G> s;

  const GemmView<TIn, TOut, BIsNK, BM, BN> v(p);
  const int tm = v.tile_m, tn = v.tile_n;
  auto issue = [&](int kt, int stage) __attribute__((always_inline)) { s.template fill<true>(v, kt, stage); };
  constexpr int loads_per_stage = decltype(s)::async_loads_per_stage;

  const int wr = G::wave() / waves_n, wc = G::wave() % waves_n;
  rt_acc<WM, WN> acc;
  zero(acc);
  const int steps = (p.k + BK - 1) / BK;
  issue(0, 0);
  for (int kt = 0; kt < steps; ++kt) {
    const int stage = kt & 1;
    if (kt + 1 < steps) {
      issue(kt + 1, stage ^ 1);
      wait_async<loads_per_stage>();  // this step's loads are done; the next step's may still fly
    } else {
      wait_async<0>();
    }
    barrier();
    rt<TIn, WM, BK> ra;
    load(ra, s.a[stage], {0, 0, wr, 0});
    if constexpr (BIsNK) {
      rt<TIn, WN, BK> rb;
      load(rb, s.b[stage], {0, 0, wc, 0});
      mma_ABt(acc, ra, rb, acc);
    } else {
      rt<TIn, BK, WN, layout::col> rb;
      load(rb, s.b[stage], {0, 0, 0, wc});
      mma_AB(acc, ra, rb, acc);
    }
    barrier();  // every wave is done with this stage before it is refilled
  }
  store_bounded(v.c, acc, {0, 0, (BM / WM) * tm + wr, waves_n * tn + wc}, p.alpha, p.beta);
}

}  // namespace hk::kernels
