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
  // A grouped GEMM (hk::grouped_gemm) when groups > 0: `groups` problems sharing n and k, group g owning rows
  // offsets[g] .. offsets[g+1] - 1 of A and C (m is all groups' rows) and the B at b + g * b_group_stride. The grid
  // is the flat list of every group's tiles, group after group (GemmPlace).
  int groups = 0;
  const void* offsets = nullptr;  // groups + 1 row offsets, int64 or int32
  bool offsets64 = false;
  long b_group_stride = 0;  // elements
  // Blockwise fp8 (hk::gemm_blockwise, B given N x K): one fp32 scale per row of A and 128 k (scale_a, M x K/128,
  // rows ld_scale_a apart) and one per 128 x 128 block of B (scale_b, ceil(N/128) x K/128, ld_scale_b).
  const float* scale_a = nullptr;
  long ld_scale_a = 0;
  const float* scale_b = nullptr;
  long ld_scale_b = 0;
};

// A form of the GEMM kernels that take one (the 4-wave fp8 kernel, gemm_fp8.h, and the 8-wave ping-pong kernel,
// gemm_pingpong.h): the arguments the kernel takes and what each wave does with its block of C: read a step's
// fragments out of the LDS stages, issue the loads a form needs for the next step (prefetch, before the step's operand
// loads, so that they fly under its MFMAs), multiply, write C. The plain form is fp8 (or bf16 / f16) times B^T or B
// into fp32 accumulators, written as alpha * acc + beta * C; hk::gemm_int8 and hk::gemm_mx bring their own
// (gemm_int8_kernel.h, gemm_mx_kernel.h) on the same LDS feed. Every member is always_inline: a member left a call
// takes the accumulators through memory (the ping-pong kernel's bf16 once ran twice its instructions so).
struct GemmPlainForm {
  using Args = GemmArgs;
  template <int WM, int WN>
  struct wave {
    __device__ __attribute__((always_inline)) wave(const Args&, int /*row0*/, int /*col0*/) {}
    __device__ __attribute__((always_inline)) void prefetch(const Args&, int /*kt*/) {}
    template <class R, class S>
    __device__ __attribute__((always_inline)) void read(R& r, const S& s, coord at) { load(r, s, at); }
    template <class Acc, class A, class B>
    __device__ __attribute__((always_inline)) void mma(Acc& acc, const A& a, const B& b) {
      if constexpr (B::lay == layout::row) mma_ABt(acc, a, b, acc);
      else mma_AB(acc, a, b, acc);
    }
    template <class View, class Acc>
    __device__ __attribute__((always_inline)) void store(const Args& p, const View& v, const Acc& acc, coord at) {
      store_bounded(v.c, acc, at, p.alpha, p.beta);
    }
  };
};

// Where a workgroup's tile lies: the rows of A and C of its problem (row0 .. row0 + rows - 1), its B (group), its
// tile of C in units of the kernel's tiles, and whether there is one (a grouped grid may be longer than its tiles).
struct GemmPlace {
  long row0 = 0;
  int rows = 0, group = 0, tile_m = 0, tile_n = 0;
  bool live = true;
};

namespace detail {

__device__ inline long group_offset(const GemmArgs& p, int g) {
  return p.offsets64 ? static_cast<const long*>(p.offsets)[g] : long(static_cast<const int*>(p.offsets)[g]);
}

// The tile scheduler of a grouped GEMM. Logical tile t of the grid is tile t - first(g) of group g, where first(g)
// is the sum of the tile counts ceil(rows / BM) * tiles_n of the groups before g, and runs along the group's rows of
// tiles (consecutive tiles share rows of A). Every wave finds its group from the offsets alone, without a table: the
// 64 lanes count the tiles of 64 groups at a time, a prefix sum across the lanes (six shuffles) gives each group's
// end, and the first lane whose end passes t holds the group; empty groups own no tiles and are never found. The host
// sizes the grid to every group's tiles, taken in hk::gemm's chiplet order; a workgroup past them finds no group.
template <int BM>
__device__ inline GemmPlace grouped_place(const GemmArgs& p, int tiles_n) {
  GemmPlace at;
  const int hw = int(blockIdx.x), tiles = int(gridDim.x);
  const int t = xcd_remap(hw, tiles), lane = lane_id();
  int before = 0;  // tiles of the groups before this chunk's
  at.live = false;
  for (int g0 = 0; g0 < p.groups; g0 += 64) {
    const int g = g0 + lane;
    const long row0 = g < p.groups ? group_offset(p, g) : 0, rows = g < p.groups ? group_offset(p, g + 1) - row0 : 0;
    const int own = int((rows + BM - 1) / BM) * tiles_n;
    int end = own;  // inclusive prefix sum across the lanes
    for (int o = 1; o < 64; o <<= 1) {
      const int u = __shfl_up(end, o);
      if (lane >= o) end += u;
    }
    const uint64_t past = __ballot(before + end > t);
    if (past) {  // lane l holds the group: its values, read out of lane l, are the workgroup's (scalars)
      const int l = __builtin_amdgcn_readfirstlane(__builtin_ctzll(past));
      auto from_l = [&](int x) { return __builtin_amdgcn_readlane(x, l); };
      const int local = t - before - from_l(end - own);
      at.group = g0 + l, at.live = true;
      at.row0 = long(uint32_t(from_l(int(row0)))) | long(from_l(int(row0 >> 32))) << 32;
      at.rows = from_l(int(rows));
      at.tile_m = local / tiles_n, at.tile_n = local % tiles_n;
      return at;
    }
    before += __builtin_amdgcn_readlane(end, 63);
  }
  return at;
}

}  // namespace detail

// The operands as global layouts and this workgroup's tile of C (tile_m, tile_n) in units of BM x BN, in the
// chiplet-aware order: consecutive logical tiles, which share rows of A, land on one XCD's L2. Logical tiles run
// along rows of units of Pieces tiles stacked vertically (Pieces x BM rows, BN columns), piece by piece: a grid of
// BM = 128, Pieces = 2 tiles covers a run of logical 256 x BN units in halves. The grid covers logical tiles
// tile_first .. tile_first + gridDim.x - 1. A grouped GEMM's view is its group's problem (GemmPlace).
template <class TIn, class TOut, bool BIsNK, int BM, int BN, int Pieces = 1>
struct GemmView {
  gl<TIn, 1, 1> a, b;
  gl<TOut, 1, 1> c;
  int tile_m, tile_n;
  bool live;  // false: no tile for this workgroup (it returns at once)
  __device__ explicit GemmView(const GemmArgs& p) : GemmView(p, place(p)) {}
  __device__ GemmView(const GemmArgs& p, const GemmPlace& at)
      : a(static_cast<TIn*>(const_cast<void*>(p.a)) + at.row0 * p.lda, 1, 1, at.rows, p.k, p.lda),
        b(static_cast<TIn*>(const_cast<void*>(p.b)) + at.group * p.b_group_stride, 1, 1, BIsNK ? p.n : p.k,
          BIsNK ? p.k : p.n, p.ldb),
        c(static_cast<TOut*>(p.c) + at.row0 * p.ldc, 1, 1, at.rows, p.n, p.ldc),
        tile_m(at.tile_m),
        tile_n(at.tile_n),
        live(at.live) {}
  __device__ static GemmPlace place(const GemmArgs& p) {
    const int tiles_n = (p.n + BN - 1) / BN;
    if (p.groups > 0) return detail::grouped_place<BM>(p, tiles_n);
    GemmPlace at;
    const int id = p.tile_first + xcd_remap(int(blockIdx.x), int(gridDim.x));
    const int unit = id / Pieces;
    at.rows = p.m, at.tile_m = unit / tiles_n * Pieces + id % Pieces, at.tile_n = unit % tiles_n;
    return at;
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
  // Inside: the tile lies inside its operand (b_inside, a_inside), so the LDS DMA feed's loads are straight-line code
  // without a branch, which the scheduler can interleave with MFMAs.
  template <bool LdsDma, bool Inside = false, class View>
  __device__ __attribute__((always_inline)) void fill_a(const View& v, int kt, int stage, async_wave<G> wave = {}) {
    fill_one<LdsDma, Inside>(a[stage], v.a, a_at(v, kt), wave);
  }
  template <bool LdsDma, bool Inside = false, class View>
  __device__ __attribute__((always_inline)) void fill_b(const View& v, int kt, int stage, async_wave<G> wave = {}) {
    fill_one<LdsDma, Inside>(b[stage], v.b, b_at(v, kt), wave);
  }
  template <class View>
  __device__ __attribute__((always_inline)) static bool a_inside(const View& v, int kt) {
    return async_inside<ATile>(v.a, a_at(v, kt));
  }
  template <class View>
  __device__ __attribute__((always_inline)) static bool b_inside(const View& v, int kt) {
    return async_inside<BTile>(v.b, b_at(v, kt));
  }
  template <bool LdsDma, class View>
  __device__ __attribute__((always_inline)) void fill(const View& v, int kt, int stage, async_wave<G> wave = {}) {
    fill_a<LdsDma>(v, kt, stage, wave);
    fill_b<LdsDma>(v, kt, stage, wave);
  }

 private:
  template <class View>
  __device__ __attribute__((always_inline)) static coord a_at(const View& v, int kt) {
    return {0, 0, v.tile_m, kt};
  }
  template <class View>
  __device__ __attribute__((always_inline)) static coord b_at(const View& v, int kt) {
    return BIsNK ? coord{0, 0, v.tile_n, kt} : coord{0, 0, kt, v.tile_n};
  }
  template <bool LdsDma, bool Inside, class ST, class GL>
  __device__ __attribute__((always_inline)) static void fill_one(ST& dst, const GL& src, coord at, async_wave<G> wave) {
    if constexpr (LdsDma && Inside) load_async_inside<G>(dst, src, at, wave);
    else if constexpr (LdsDma) load_async<G>(dst, src, at, wave);
    else load_bounded<G>(dst, src, at);
  }
};

}  // namespace hk::kernels
