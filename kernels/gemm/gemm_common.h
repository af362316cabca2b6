// What the GEMM kernels share: their arguments, the view of the operands with the workgroup's tile of C, and the two
// LDS stages of A and B tiles, filled straight into LDS or through registers.
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
  int tile_first = 0;  // the logical tile (in the kernel's own tiles) of workgroup 0: a grid may cover part of C
};

// The operands as global layouts and this workgroup's tile of C (tile_m, tile_n) in units of BM x BN, in the
// chiplet-aware order: consecutive logical tiles, which share rows of A, land on one XCD's L2. Logical tiles run
// along rows of units of Pieces tiles stacked vertically (Pieces x BM rows, BN columns), piece by piece: a grid of
// BM = 128, Pieces = 2 tiles covers a run of logical 256 x BN units in halves. The grid covers logical tiles
// tile_first .. tile_first + gridDim.x - 1.
template <class TIn, class TOut, bool BIsNK, int BM, int BN, int Pieces = 1>
struct GemmView {
  gl<TIn, 1, 1> a, b;
  gl<TOut, 1, 1> c;
  int tile_m, tile_n;
  __device__ explicit GemmView(const GemmArgs& p)
      : a(static_cast<TIn*>(const_cast<void*>(p.a)), 1, 1, p.m, p.k, p.lda),
        b(static_cast<TIn*>(const_cast<void*>(p.b)), 1, 1, BIsNK ? p.n : p.k, BIsNK ? p.k : p.n, p.ldb),
        c(static_cast<TOut*>(p.c), 1, 1, p.m, p.n, p.ldc) {
    const int tiles_n = (p.n + BN - 1) / BN;
    const int id = p.tile_first + xcd_remap(int(blockIdx.x), int(gridDim.x));
    const int unit = id / Pieces;
    tile_m = unit / tiles_n * Pieces + id % Pieces, tile_n = unit % tiles_n;
  }
  // The WM x WN block of C that wave (wr, wc) of the workgroup owns, in units of WM x WN.
  template <int WM, int WN>
  __device__ coord out_block(int wr, int wc) const {
    return {0, 0, (BM / WM) * tile_m + wr, (BN / WN) * tile_n + wc};
  }
};

// Two LDS stages of the A and B tiles of one K step, filled by group G straight into LDS (LdsDma: load_async, the
// operands must be async_loadable) or through registers with zero-filled edges (load_bounded: any leading dimension
// and alignment).
template <class T, int BM, int BN, int BK, bool BIsNK, class G>
struct GemmStages {
  using ATile = st<T, BM, BK>;
  using BTile = std::conditional_t<BIsNK, st<T, BN, BK>, st<T, BK, BN>>;
  static constexpr int async_loads_per_stage = async_loads<G, ATile> + async_loads<G, BTile>;
  ATile a[2];
  BTile b[2];

  // Each operand alone (the ping-pong kernel gives A and B to different wave groups) or both. A K loop passes the
  // wave's index read once before it (async_wave), so that the loads' per-lane addressing stays out of the loop.
  template <bool LdsDma, class View>
  __device__ __attribute__((always_inline)) void fill_a(const View& v, int kt, int stage, async_wave<G> wave = {}) {
    fill_one<LdsDma>(a[stage], v.a, coord{0, 0, v.tile_m, kt}, wave);
  }
  template <bool LdsDma, class View>
  __device__ __attribute__((always_inline)) void fill_b(const View& v, int kt, int stage, async_wave<G> wave = {}) {
    fill_one<LdsDma>(b[stage], v.b, BIsNK ? coord{0, 0, v.tile_n, kt} : coord{0, 0, kt, v.tile_n}, wave);
  }
  template <bool LdsDma, class View>
  __device__ __attribute__((always_inline)) void fill(const View& v, int kt, int stage, async_wave<G> wave = {}) {
    fill_a<LdsDma>(v, kt, stage, wave);
    fill_b<LdsDma>(v, kt, stage, wave);
  }

 private:
  template <bool LdsDma, class ST, class GL>
  __device__ __attribute__((always_inline)) static void fill_one(ST& dst, const GL& src, coord at, async_wave<G> wave) {
    if constexpr (LdsDma) load_async<G>(dst, src, at, wave);
    else load_bounded<G>(dst, src, at);
  }
};

}  // namespace hk::kernels
