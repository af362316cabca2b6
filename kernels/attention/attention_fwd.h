// The 4-wave attention forward kernel (archs without the ping-pong kernel: gfx942): one workgroup per (64-query
// tile, query head, sequence), each wave owning 16 queries (attention_common.h); K and V tiles of 64 keys loaded
// straight into LDS (buffer loads with the lds modifier). Only the KV tiles some query of the tile sees are visited.
// Q goes from global memory straight into registers.
//
// Two waves per SIMD hide each other's softmax behind their MFMAs, so the LDS must hold two workgroups: with room for
// that, two stages (the next tile's loads fly while the waves compute on the current one), one barrier per KV tile:
// each wave waits for its own loads of tile t, then the barrier makes every wave's part of tile t visible and
// certifies that every wave has finished reading tile t-1's stage, which the loads of tile t+1, issued right after
// it, overwrite. Where two workgroups hold only one stage each (D = 128 on gfx942's 64 KiB), a second barrier, once
// every wave holds V's fragments (K's are spent by then), frees the stage for tile t+1's loads, which fly while the
// waves compute O^T and the other workgroup runs.
#pragma once
#include "attention_common.h"

namespace hk::kernels {

// Stages of K and V per workgroup: two where the LDS holds two workgroups of two stages, else one.
template <int D>
inline constexpr int attn_stages = arch::current::lds_bytes / (2 * 2 * AttnTiles::keys * D * 2) >= 2 ? 2 : 1;

inline constexpr int attn_rows = 4 * AttnTiles::wave_rows;  // queries per workgroup

template <class T, int D>
__global__ __launch_bounds__(256) __attribute__((amdgpu_waves_per_eu(2))) void attention_fwd(AttnArgs p) {
  using G = group<4>;
  constexpr int BK = AttnTiles::keys, stages = attn_stages<D>;
  using Tile = st<T, BK, D>;
  __shared__ Tile sk[stages], sv[stages];

  const AttnView<T, D> view(p, attn_rows);
  if (view.empty) return;  // past the end of a shorter sequence (varlen)
  const int kt_begin = view.kt_begin, kt_end = view.kt_end;
  // Tile kt's K and V into stage `stage`, zeros past the last key.
  const async_wave<G> dma_wave;  // read once: the loads' per-lane addressing stays out of the loop
  auto fill = [&](int kt, int stage) __attribute__((always_inline)) {
    load_async<G>(sk[stage], view.k, {0, 0, kt, 0}, dma_wave);
    load_async<G>(sv[stage], view.v, {0, 0, kt, 0}, dma_wave);
  };
  if (kt_begin < kt_end) fill(kt_begin, 0);
  AttnWave<T, D> me(view, G::wave() * AttnTiles::wave_rows);
  load_bounded(me.q, view.q, {0, 0, me.row_tile, 0});

  // One KV tile in stage `stage_of` (0 or 1; a compile-time constant where the loop below takes the tiles in pairs, so
  // that every LDS address is a register fixed for the kernel plus an immediate offset).
  auto step = [&](int kt, auto stage_of) __attribute__((always_inline)) {
    const int stage = int(stage_of);
    wait_vmcnt<0>();
    barrier();  // tile kt is in; every wave is done with the other stage
    typename AttnWave<T, D>::k_tile k;
    typename AttnWave<T, D>::v_tile vc;
    if constexpr (stages == 2)
      if (kt + 1 < kt_end) fill(kt + 1, stage ^ 1);
    load(k, sk[stage]);
    const auto pt = me.scores(view, p, kt, k);
    if constexpr (stages == 1) sched_barrier();  // V's reads after K's last use: the two never hold registers at once
    load_acc_order(vc, sv[stage]);
    if constexpr (stages == 1) {
      barrier();  // every wave holds tile kt: the stage is free
      if (kt + 1 < kt_end) fill(kt + 1, 0);
    }
    me.accumulate(pt, vc);
  };
  if constexpr (stages == 2) {
    // Pairs of tiles, each with its stage fixed: the addresses cost registers, which two waves per SIMD have room for.
    for (int kt = kt_begin; kt < kt_end; kt += 2) {
      step(kt, std::integral_constant<int, 0>{});
      if (kt + 1 < kt_end) step(kt + 1, std::integral_constant<int, 1>{});
    }
  } else {
    for (int kt = kt_begin; kt < kt_end; ++kt) step(kt, std::integral_constant<int, 0>{});
  }
  me.finish(view, p);
}

}  // namespace hk::kernels
