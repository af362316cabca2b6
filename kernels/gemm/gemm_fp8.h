// The 4-wave fp8 GEMM kernel: A and B of the fp8 type T (fp8e4m3 or fp8e5m2) in the arch's format (FNUZ on gfx942,
// OCP on gfx950), fp32 accumulation, fp32 or bf16 C. hk::gemm runs it for the registers feed and for A * B (B given
// K x N); fp8 A * B^T fed straight into LDS runs the 8-wave ping-pong kernel (gemm_pingpong.h). 128x128 tiles of C per workgroup of 4 waves (2 x 2, each 64 x 64 in MFMA
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
#pragma once
#include <utility>

#include "gemm_common.h"
#include "hk/ops/async.h"

namespace hk::kernels {

template <class T, class TOut, bool BIsNK, bool LdsDma>
__global__ __launch_bounds__(256) void gemm_fp8(GemmArgs p) {
  static_assert(fp8_input<T>, "gemm_fp8: A and B must be fp8e4m3 or fp8e5m2");
  constexpr int BM = 128, BN = 128, WM = 64, WN = 64;
  constexpr int BK = arch::current::fp8_mfma_k >= 128 ? 128 : 64;
  using G = group<4>;
  __shared__ GemmStages<T, BM, BN, BK, BIsNK, G> s;

  const GemmView<T, TOut, BIsNK, BM, BN> v(p);
  if (!v.live) return;  // a grouped grid's workgroup without a tile
  const async_wave<G> dma_wave;  // read once: the loads' per-lane addressing stays out of the loop
  auto issue = [&](int kt, int stage) __attribute__((always_inline)) { s.template fill<LdsDma>(v, kt, stage, dma_wave); };
  constexpr int loads_per_stage = decltype(s)::async_loads_per_stage;
  constexpr int mfmas_per_step = (WM / 16) * (WN / 16) * (BK / arch::current::fp8_mfma_k);
  constexpr int mfma_per_load = mfmas_per_step / loads_per_stage > 0 ? mfmas_per_step / loads_per_stage : 1;

  const int wr = G::wave() / 2, wc = G::wave() % 2;
  rt_acc<WM, WN> acc;
  zero(acc);
  const int steps = (p.k + BK - 1) / BK;
  // The next step's loads. With LdsDma they are issued unconditionally, so that the step is one basic block the
  // scheduler can interleave: past the last step they lie outside the tensor (no memory is read; zeros land in the
  // stage nobody reads again) and are waited for after the loop.
  auto next = [&](int kt) __attribute__((always_inline)) {
    if constexpr (LdsDma) issue(kt + 1, (kt & 1) ^ 1);
    else if (kt + 1 < steps) issue(kt + 1, (kt & 1) ^ 1);
  };
  issue(0, 0);
  for (int kt = 0; kt < steps; ++kt) {
    const int stage = kt & 1;
    if constexpr (LdsDma) wait_vmcnt<0>();
    barrier();
    rt<T, WM, BK> ra;
    load(ra, s.a[stage], {0, 0, wr, 0});
    if constexpr (BIsNK) {
      rt<T, WN, BK> rb;
      load(rb, s.b[stage], {0, 0, wc, 0});
      next(kt);
      mma_ABt(acc, ra, rb, acc);
    } else {
      rt<T, BK, WN, layout::col> rb;
      load(rb, s.b[stage], {0, 0, 0, wc});
      next(kt);
      mma_AB(acc, ra, rb, acc);
    }
    if constexpr (LdsDma) {
      // mfma_per_load MFMAs, one load straight into LDS, ... .
      [&]<int... I>(std::integer_sequence<int, I...>) {
        ((sched_group_barrier<sched::mfma, mfma_per_load, 0>(), sched_group_barrier<sched::vmem, 1, 0>(), (void)I), ...);
      }(std::make_integer_sequence<int, loads_per_stage>{});
    }
  }
  if constexpr (LdsDma) wait_vmcnt<0>();
  store_bounded(v.c, acc, v.template out_block<WM, WN>(wr, wc), p.alpha, p.beta);
}

}  // namespace hk::kernels
