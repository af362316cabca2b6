// The 8-wave ping-pong attention forward kernel: one workgroup per (128-query tile, query head, sequence), each wave
// owning 16 queries (attention_common.h), K and V tiles of 64 keys straight into LDS, two stages.
//
// The waves form two groups of four, half a step apart, so that one group's MFMAs and softmax run while the other
// group reads its K and V fragments from LDS and issues the next tile's loads. Group 1 enters the loop one barrier
// late; every step is then a memory phase (the step's K and V fragments from LDS into registers; group 0 issues the
// next tile) and a compute phase (S^T, the softmax and O^T at raised priority), each closed by a workgroup barrier.
// With b(j) the j-th barrier of the loop, group 0's memory phase of step i ends at b(2i+1) and group 1's at b(2i+2),
// so a stage holding step i is free once both have read it, after b(2i+2). Hence group 0 issues step i+1 in its
// memory phase of step i (into the stage step i-1 left, free since b(2i)) and waits for it at the end of its compute
// phase of step i, before b(2i+2), after which its memory phase of step i+1 reads it first. The memory phases end with
// their LDS reads complete (the barrier waits for them), so no stage is refilled under a read. Q has a region of its
// own: group 1 reads it while group 0 issues step 1.
#pragma once
#include "attention_common.h"

namespace hk::kernels {

inline constexpr int attn_pingpong_rows = 8 * AttnTiles::wave_rows;  // queries per workgroup

// LDS of the ping-pong kernel: two stages of K and V, and the Q tile.
template <int D>
inline constexpr int attn_pingpong_lds = (4 * AttnTiles::keys + attn_pingpong_rows) * D * 2;
template <int D>
inline constexpr bool attn_pingpong_fits = attn_pingpong_lds<D> <= arch::current::lds_bytes;

template <class T, int D>
__global__ __launch_bounds__(512) __attribute__((amdgpu_waves_per_eu(2))) void attention_fwd_pingpong(AttnArgs p) {
  if constexpr (attn_pingpong_fits<D>) {  // the host launches it only where it fits
    using Half = group<4>;
    constexpr int BK = AttnTiles::keys, half_rows = attn_pingpong_rows / 2;
    __shared__ st<T, BK, D> sk[2], sv[2];
    __shared__ st<T, half_rows, D> sq[2];  // each group's 64 queries

    const AttnView<T, D> view(p, attn_pingpong_rows);
    if (view.empty) return;  // past the end of a shorter sequence (varlen)
    const int kt_begin = view.kt_begin, kt_end = view.kt_end;
    const int wave = wave_id(), grp = wave / 4;
    const bool loads = grp == 0;
    const async_wave<Half> dma_wave;  // read once: the loads' per-lane addressing stays out of the loop
    auto fill = [&](int kt, int stage) __attribute__((always_inline)) {
      load_async<Half>(sk[stage], view.k, {0, 0, kt, 0}, dma_wave);
      load_async<Half>(sv[stage], view.v, {0, 0, kt, 0}, dma_wave);
    };
    load_bounded<Half>(sq[grp], view.q, {0, 0, 2 * view.blk.tile + grp, 0});
    if (loads && kt_begin < kt_end) fill(kt_begin, 0);
    if (loads) wait_vmcnt<0>();
    barrier();
    AttnWave<T, D> me(view, wave * AttnTiles::wave_rows);
    load(me.q, sq[grp], {0, 0, wave % 4, 0});
    if (!loads) barrier();  // group 1 runs half a step behind

    for (int kt = kt_begin; kt < kt_end; ++kt) {
      const int stage = (kt - kt_begin) & 1;
      // Memory phase: this step's fragments into registers; group 0 issues the next tile.
      typename AttnWave<T, D>::k_tile k;
      typename AttnWave<T, D>::v_tile vc;
      load(k, sk[stage]);
      load_acc_order(vc, sv[stage]);
      if (loads && kt + 1 < kt_end) fill(kt + 1, stage ^ 1);
      sched_barrier();
      barrier();
      // Compute phase: the MFMAs and the softmax; group 0 waits for the tile it issued.
      set_priority<1>();
      me.accumulate(me.scores(view, p, kt, k), vc);
      if (loads) wait_vmcnt<0>();
      set_priority<0>();
      sched_barrier();
      barrier();
    }
    if (loads) barrier();  // group 0 meets group 1's last barrier
    me.finish(view, p);
  }
}

}  // namespace hk::kernels
