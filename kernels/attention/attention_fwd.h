// The 4-wave attention forward kernel: one workgroup per (64-query tile, query head, sequence), each wave owning 16
// queries (attention_common.h); K and V tiles of 64 keys loaded straight into LDS (buffer loads with the lds
// modifier), two stages deep, so the next tile's loads fly while the waves compute on the current one. Only the KV
// tiles some query of the tile sees are visited.
//
// One barrier per KV tile: each wave waits for its own loads of tile t, then the barrier makes every wave's part of
// tile t visible and certifies that every wave has finished reading tile t-1's stage, which the loads of tile t+1,
// issued right after it, overwrite. The Q tile passes through stage 1 before the first such load.
#pragma once
#include "attention_common.h"

namespace hk::kernels {

// Waves per SIMD the LDS allows (two stages of K and V tiles per workgroup of 4 waves), at most 2. Declaring it lets
// the compiler keep the MFMA accumulators in arch VGPRs (it uses AGPRs when a wave may own all 512 registers, and
// then every rescale of O^T copies it out and back).
template <int D>
inline constexpr int attn_waves_per_simd = arch::current::lds_bytes / (4 * AttnTiles::keys * D * 2) >= 2 ? 2 : 1;

inline constexpr int attn_rows = 4 * AttnTiles::wave_rows;  // queries per workgroup

template <class T, int D, AttnVariant V = AttnVariant{}>
__global__ __launch_bounds__(256) __attribute__((amdgpu_waves_per_eu(attn_waves_per_simd<D>))) void attention_fwd(AttnArgs p) {
  using W = AttnWave<T, D, mfma16, V>;
  using G = group<4>;
  constexpr int BK = AttnTiles::keys;
  static_assert(attn_rows == BK, "the Q tile is staged in a K stage");
  using Tile = st<T, BK, D>;
  __shared__ Tile sk[2], sv[2];  // two stages of K and V

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
  Tile& sq = sk[1];  // free until the first iteration's barrier
  load_bounded<G>(sq, view.q, {0, 0, view.blk.tile, 0});
  barrier();
  W me(view, G::wave() * AttnTiles::wave_rows);
  load(me.q, sq, {0, 0, G::wave(), 0});

  // One KV tile in stage `stage_of` (0 or 1; a compile-time constant where the loop below takes the tiles in pairs, so
  // that every LDS address is a register fixed for the kernel plus an immediate offset).
  auto step = [&](int kt, auto stage_of) __attribute__((always_inline)) {
    const int stage = int(stage_of);
    wait_vmcnt<0>();
    barrier();  // tile kt is in; every wave is done with the other stage (and with Q in stage 1)
    if (kt + 1 < kt_end) fill(kt + 1, stage ^ 1);
    typename W::k_tile k;
    load(k, sk[stage]);
    const auto pt = me.scores(view, p, kt, k);
    typename W::v_tile vc;
    load_acc_order(vc, sv[stage]);
    me.accumulate(pt, vc);
  };
  if constexpr (attn_waves_per_simd<D> == 2) {
    // Pairs of tiles, each with its stage fixed: the addresses cost registers (gfx950 D = 128: 150 -> 196 VGPRs),
    // which the 256 of two waves per SIMD have room for.
    for (int kt = kt_begin; kt < kt_end; kt += 2) {
      step(kt, std::integral_constant<int, 0>{});
      if (kt + 1 < kt_end) step(kt + 1, std::integral_constant<int, 1>{});
    }
  } else {
    for (int kt = kt_begin; kt < kt_end; ++kt) step(kt, (kt - kt_begin) & 1);
  }
  me.finish(view, p);
}

}  // namespace hk::kernels
