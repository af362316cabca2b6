// The 4-wave fp8 GEMM kernel: A and B of the fp8 type T (fp8e4m3 or fp8e5m2) in the arch's format (FNUZ on gfx942,
// OCP on gfx950), fp32 accumulation, fp32 or bf16 C. hk::gemm runs it for the registers feed and for A * B (B given
// K x N); fp8 A * B^T fed straight into LDS runs the 8-wave ping-pong kernel (gemm_pingpong.h). hk::gemm_blockwise
// runs its Blockwise form (below). 128x128 tiles of C per workgroup of 4 waves (2 x 2, each 64 x 64 in MFMA
// accumulators), K in steps of BK through two LDS stages, workgroups in chiplet (XCD) order, edges of any size masked.
// BK is 128 on gfx950 (one v_mfma_f32_16x16x128_f8f6f4 deep; two stages of 128x128 A and B tiles: 64 KiB of its 160)
// and 64 on gfx942 (two v_mfma_f32_16x16x32_{fp8,bf8}_* deep; 32 KiB of its 64).
//
// The 4-wave interleaved schedule: in step kt every wave
//   1. waits for its own loads of stage kt&1 (issued during step kt-1) and meets the others at the barrier: stage
//      kt&1 is then complete, and every wave has finished reading stage kt&1^1 (its step kt-1 reads were consumed by
//      its step kt-1 MMAs before it reached the barrier);
//   2. reads its A (64 x BK) and B (64 x BK, or BK x 64 in the col layout) fragments of stage kt&1 into registers;
//   3. issues the loads of step kt+1 into stage kt&1^1 and runs the step's MMAs, interleaved: with LdsDma, the loads
//      go straight into LDS (buffer_load ... lds) and the scheduler is asked to place one of them after every
//      `mfma_per_load` MFMAs, so they fly while the matrix cores work and land before step kt+1's barrier; without
//      LdsDma (operands the LDS DMA cannot feed, or the `registers` feed) they go through registers
//      with zero-filled edges (load_bounded).
// One barrier per step suffices: a stage is only written after the barrier that follows every wave's last read of it.
//
// Blockwise (DeepSeek-V3's block-scaled fp8, B given N x K, K a multiple of 128): K runs in chunks of 128 (one step
// on gfx950, two on gfx942). A chunk's MFMAs accumulate into a partial tile from zero, which is then folded into the
// accumulator as acc += partial * scale_a[row, kb] * scale_b[tile's 128 columns, kb]: the semantics of the format,
// each 128-k partial sum in fp32 before its scale. Lane l of a wave loads the scale of its block's row l and the
// tile's scale of B for chunk kb + 1 in chunk kb's first step, just before the operand loads, so that they fly under
// that step's MFMAs; the fold takes each accumulator row's scale from the lane holding it (ChunkScales).
#pragma once
#include <utility>

#include "gemm_common.h"
#include "hk/ops/async.h"

namespace hk::kernels {

namespace detail {

// The scales of one 128-k chunk for a wave's 64 x 64 block: lane l holds scale_a of the block's row l (one load per
// lane), and every lane scale_b of the tile's 128 columns; the fold reads each accumulator row's scale out of the
// lane that holds it (a ds_bpermute each of the lane's 16 rows).
template <class Acc>
struct ChunkScales {
  static_assert(Acc::rows == 64, "ChunkScales: one row of the block per lane");
  const float* row_a;  // this lane's row of scale_a
  const float* tile_b;  // the tile's row of scale_b
  float a = 0, b = 0;
  // For the block of rows from row0 (rows past M read row M - 1: their partial sums are zero) and tile_n's columns.
  __device__ ChunkScales(const GemmArgs& p, int row0, int tile_n) {
    const int r = row0 + lane_id(), row = r < p.m ? r : p.m - 1;
    row_a = p.scale_a + long(row) * p.ld_scale_a, tile_b = p.scale_b + long(tile_n) * p.ld_scale_b;
  }
  // Chunk kb's.
  __device__ __attribute__((always_inline)) void load(int kb) { a = row_a[kb], b = tile_b[kb]; }
  // acc += part * scale_a[row] * scale_b.
  __device__ __attribute__((always_inline)) void fold(Acc& acc, const Acc& part) const {
    const int lane = lane_id();
#pragma unroll
    for (int i = 0; i < Acc::tiles_r; ++i)
#pragma unroll
      for (int e = 0; e < Acc::E; ++e) {
        const float s = __shfl(a, Acc::row_of(i, lane, e)) * b;
#pragma unroll
        for (int j = 0; j < Acc::tiles_c; ++j) acc.data[i][j][e] = __builtin_fmaf(part.data[i][j][e], s, acc.data[i][j][e]);
      }
  }
};

}  // namespace detail

// Form: the MFMA and epilogue (GemmPlainForm; int8 and MX bring theirs, see gemm_common.h).
template <class T, class TOut, bool BIsNK, bool LdsDma, bool Blockwise = false, class Form = GemmPlainForm>
__global__ __launch_bounds__(256) void gemm_fp8(typename Form::Args p) {
  // (A form may hold its bytes as 16-bit elements: their shared tiles' swizzle serves its fragments' reads.)
  static_assert(fp8_input<T> || !std::same_as<Form, GemmPlainForm>, "gemm_fp8: A and B must be fp8e4m3 or fp8e5m2");
  static_assert(!Blockwise || BIsNK, "gemm_fp8: blockwise scales take B given N x K");
  constexpr int BM = 128, BN = 128, WM = 64, WN = 64;
  constexpr int BK = (arch::current::fp8_mfma_k >= 128 ? 128 : 64) / int(sizeof(T));
  constexpr int chunk_steps = Blockwise ? 128 / BK : 1;  // K steps per scale block
  using G = group<4>;
  using Acc = rt_acc<WM, WN>;
  __shared__ GemmStages<T, BM, BN, BK, BIsNK, G> s;

  const GemmView<T, TOut, BIsNK, BM, BN> v(p);
  if (!v.live) return;  // a grouped grid's workgroup without a tile
  const async_wave<G> dma_wave;  // read once: the loads' per-lane addressing stays out of the loop
  auto issue = [&](int kt, int stage) __attribute__((always_inline)) { s.template fill<LdsDma>(v, kt, stage, dma_wave); };
  constexpr int loads_per_stage = decltype(s)::async_loads_per_stage;
  constexpr int mfmas_per_step = (WM / 16) * (WN / 16) * (BK * int(sizeof(T)) / arch::current::fp8_mfma_k);
  constexpr int mfma_per_load = mfmas_per_step / loads_per_stage > 0 ? mfmas_per_step / loads_per_stage : 1;

  const int wr = G::wave() / 2, wc = G::wave() % 2;
  Acc acc, part;
  zero(acc);
  const int steps = (p.k + BK - 1) / BK;
  const int row0 = BM * v.tile_m + WM * wr;
  typename Form::template wave<WM, WN> form(p, row0, BN * v.tile_n + WN * wc);
  detail::ChunkScales<Acc> scales(p, row0, v.tile_n), next_scales = scales;
  if constexpr (Blockwise) scales.load(0);
  // The next step's loads. With LdsDma they are issued unconditionally, so that the step is one basic block the
  // scheduler can interleave: past the last step they lie outside the tensor (no memory is read; zeros land in the
  // stage nobody reads again) and are waited for after the loop.
  auto next = [&](int kt) __attribute__((always_inline)) {
    if constexpr (LdsDma) issue(kt + 1, (kt & 1) ^ 1);
    else if (kt + 1 < steps) issue(kt + 1, (kt & 1) ^ 1);
  };
  auto step = [&](int kt, Acc& into, bool chunk_start) __attribute__((always_inline)) {
    const int stage = kt & 1;
    if constexpr (LdsDma) wait_vmcnt<0>();
    barrier();
    rt<T, WM, BK> ra;
    form.read(ra, s.a[stage], {0, 0, wr, 0});
    if constexpr (Blockwise) {  // the next chunk's scales (the last chunk's again at the end), ahead of the operands
      if (chunk_start) {
        const int kb = kt / chunk_steps + 1, chunks = steps / chunk_steps;
        next_scales.load(kb < chunks ? kb : chunks - 1);
      }
    }
    if constexpr (BIsNK) {
      rt<T, WN, BK> rb;
      form.read(rb, s.b[stage], {0, 0, wc, 0});
      form.prefetch(p, kt + 1);
      next(kt);
      form.mma(into, ra, rb);
    } else {
      rt<T, BK, WN, layout::col> rb;
      form.read(rb, s.b[stage], {0, 0, 0, wc});
      form.prefetch(p, kt + 1);
      next(kt);
      form.mma(into, ra, rb);
    }
    if constexpr (LdsDma) {
      // mfma_per_load MFMAs, one load straight into LDS, ... .
      [&]<int... I>(std::integer_sequence<int, I...>) {
        ((sched_group_barrier<sched::mfma, mfma_per_load, 0>(), sched_group_barrier<sched::vmem, 1, 0>(), (void)I), ...);
      }(std::make_integer_sequence<int, loads_per_stage>{});
    }
  };
  form.prefetch(p, 0);
  issue(0, 0);
  for (int kt = 0; kt < steps; ++kt) {
    if constexpr (Blockwise) {
      const bool first = kt % chunk_steps == 0;
      if (first) zero(part);
      step(kt, part, first);
      if (kt % chunk_steps == chunk_steps - 1) {
        scales.fold(acc, part);
        scales.a = next_scales.a, scales.b = next_scales.b;
      }
    } else {
      step(kt, acc, false);
    }
  }
  if constexpr (LdsDma) wait_vmcnt<0>();
  form.store(p, v, acc, v.template out_block<WM, WN>(wr, wc));
}

}  // namespace hk::kernels
