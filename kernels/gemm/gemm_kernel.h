// The GEMM kernel: 128x128 tiles of C per workgroup of 4 waves (2 x 2, each 64 x 64 in MFMA accumulators), K in
// steps of 64 through shared tiles, workgroups in chiplet (XCD) order, edges of any size masked.
#pragma once
#include "hk/hk.h"
#include "hk/ops/async.h"

namespace hk::kernels {

struct GemmArgs {
  int m, n, k;
  const void* a;
  long lda;
  const void* b;
  long ldb;
  void* c;
  long ldc;
  float alpha, beta;
};

// The operands as global layouts and this workgroup's tile of C (tile_m, tile_n) in units of BM x BN, in the
// chiplet-aware order: consecutive logical tiles, which share rows of A, land on one XCD's L2.
template <class TIn, class TOut, bool BIsNK, int BM, int BN>
struct GemmView {
  gl<TIn, 1, 1> a, b;
  gl<TOut, 1, 1> c;
  int tile_m, tile_n;
  __device__ explicit GemmView(const GemmArgs& p)
      : a(static_cast<TIn*>(const_cast<void*>(p.a)), 1, 1, p.m, p.k, p.lda),
        b(static_cast<TIn*>(const_cast<void*>(p.b)), 1, 1, BIsNK ? p.n : p.k, BIsNK ? p.k : p.n, p.ldb),
        c(static_cast<TOut*>(p.c), 1, 1, p.m, p.n, p.ldc) {
    const int tiles_n = (p.n + BN - 1) / BN, tiles_m = (p.m + BM - 1) / BM;
    const int id = xcd_remap(int(blockIdx.x), tiles_m * tiles_n);
    tile_m = id / tiles_n, tile_n = id % tiles_n;
  }
};

// Two LDS stages of the A and B tiles of one K step, filled by group G straight into LDS (Async: load_async, the
// operands must be async_loadable) or through registers with zero-filled edges (load_bounded).
template <class T, int BM, int BN, int BK, bool BIsNK, class G>
struct GemmStages {
  using ATile = st<T, BM, BK>;
  using BTile = std::conditional_t<BIsNK, st<T, BN, BK>, st<T, BK, BN>>;
  static constexpr int async_loads_per_stage = async_loads<G, ATile> + async_loads<G, BTile>;
  ATile a[2];
  BTile b[2];

  // Each operand alone (the ping-pong kernel gives A and B to different wave groups) or both.
  template <bool Async, class View>
  __device__ __attribute__((always_inline)) void fill_a(const View& v, int kt, int stage) {
    fill_one<Async>(a[stage], v.a, coord{0, 0, v.tile_m, kt});
  }
  template <bool Async, class View>
  __device__ __attribute__((always_inline)) void fill_b(const View& v, int kt, int stage) {
    fill_one<Async>(b[stage], v.b, BIsNK ? coord{0, 0, v.tile_n, kt} : coord{0, 0, kt, v.tile_n});
  }
  template <bool Async, class View>
  __device__ __attribute__((always_inline)) void fill(const View& v, int kt, int stage) {
    fill_a<Async>(v, kt, stage);
    fill_b<Async>(v, kt, stage);
  }

 private:
  template <bool Async, class ST, class GL>
  __device__ __attribute__((always_inline)) static void fill_one(ST& dst, const GL& src, coord at) {
    if constexpr (Async) load_async<G>(dst, src, at);
    else load_bounded<G>(dst, src, at);
  }
};

template <class TIn, class TOut, bool BIsNK>
__global__ __launch_bounds__(256) void gemm(GemmArgs p) {
  constexpr int BM = 128, BN = 128, BK = 64, WM = 64, WN = 64;
  using G = group<4>;
  using BTile = std::conditional_t<BIsNK, st<TIn, BN, BK>, st<TIn, BK, BN>>;
  __shared__ st<TIn, BM, BK> sa;
  __shared__ BTile sb;

  const GemmView<TIn, TOut, BIsNK, BM, BN> v(p);
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
  store_bounded(v.c, acc, {0, 0, 2 * tm + wr, 2 * tn + wc}, p.alpha, p.beta);
}

}  // namespace hk::kernels
