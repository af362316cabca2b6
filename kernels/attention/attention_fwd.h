// The 4-wave attention forward kernel (8 waves where the LDS holds one workgroup per CU): one workgroup per (query
// tile, query head, sequence), each wave owning 16 queries (attention_common.h); K and V tiles of 64 keys loaded
// straight into LDS (buffer loads with the lds modifier), two stages deep, so the next tile's loads fly while the
// waves compute on the current one. Only the KV tiles some query of the tile sees are visited. It runs where the
// 8-wave ping-pong kernel does not (attn_pingpong_runs: gfx942 at D = 128, and every wide head).
//
// Two waves per SIMD in either shape: one wave's softmax (vector work) and LDS reads run while the other's MFMAs do.
// Where two workgroups' stages fit the LDS they are two workgroups of 4 waves; where one does (gfx942, D = 128: the
// stages take its 64 KiB) the workgroup has 8 waves, all reading the same stages (twice the reuse of each tile).
//
// One barrier per KV tile: each wave waits for its own loads of tile t, then the barrier makes every wave's part of
// tile t visible and certifies that every wave has finished reading tile t-1's stage, which the loads of tile t+1,
// issued right after it, overwrite. Q goes from global memory straight into registers.
//
// Wide heads (attention_heads.h): a wave takes 32 keys a step (16 on gfx942), so that it holds O^T (DV x 16 fp32, 64
// VGPRs at DV = 256), Q and one step's K or V (64 VGPRs at 256) within the 256 registers of two waves per SIMD. The LDS
// tiles (attn_fwd_keys) are 64 keys on gfx950 at D = 192 and 256 (one workgroup of 8 waves) and 32 at 192 / 128 (two
// of 4) and on gfx942, whose 64 KiB two stages of 32 keys fill at D = 256 (there one wave per SIMD: attn_fwd_simd_waves).
#pragma once
#include "attention_common.h"
#include "attention_heads.h"

namespace hk::kernels {

// Waves per SIMD (host and device): two, so that one wave's softmax and LDS reads run under the other's MFMAs; declaring
// it lets the compiler keep the MFMA accumulators in arch VGPRs (it uses AGPRs when a wave may own all 512 registers,
// and then every rescale of O^T copies it out and back). One at D = 256 without transposing LDS reads (gfx942): there
// the lane parts of the LDS addresses (one per column block of K and V) and V's unpacked reads pass the 256 registers
// of two (23 VGPRs spilled).
__host__ __device__ constexpr int attn_fwd_simd_waves(bool lds_read_transpose, int d, int dv) {
  return d + dv > 384 && !lds_read_transpose ? 1 : 2;
}
// Keys of a KV tile (host and device): 64; 32 for wide heads (attn_tile_keys) without transposing LDS reads (gfx942:
// two stages of 64 keys at D = 256 would take twice its 64 KiB) and at 192 / 128, whose 147 VGPRs let three waves a
// SIMD run (two workgroups' stages fit at 32 keys, one at 64; modelled on MI355X at GQA N8192: 841 against 736
// TFLOP/s; at D = 192 and 256 64-key tiles gain 7% and 1%). A wide head's wave takes a tile 32 keys at a time (16 on
// gfx942).
__host__ __device__ constexpr int attn_fwd_keys(bool lds_read_transpose, int d, int dv) {
  return lds_read_transpose && d == dv ? AttnTiles::keys : attn_tile_keys(d, dv);
}
// Waves of a workgroup (host and device): 4 where the LDS holds two workgroups' stages (two of K and two of V tiles),
// else 8; half as many at one wave per SIMD.
__host__ __device__ constexpr int attn_waves(int lds_bytes, bool lds_read_transpose, int d, int dv) {
  return (lds_bytes / (2 * attn_fwd_keys(lds_read_transpose, d, dv) * (d + dv) * 2) >= 2 ? 4 : 8) *
         attn_fwd_simd_waves(lds_read_transpose, d, dv) / 2;
}
template <int D, int DV>
inline constexpr int attn_fwd_waves = attn_waves(arch::current::lds_bytes, arch::current::lds_read_transpose, D, DV);

template <class T, int D, AttnVariant V = AttnVariant{}, int DV = D>
__global__ __launch_bounds__((64 * attn_fwd_waves<D, DV>))
__attribute__((amdgpu_waves_per_eu(attn_fwd_simd_waves(arch::current::lds_read_transpose, D, DV)))) void attention_fwd(AttnArgs p) {
  if constexpr (attn_qk_fits<T, mfma16, D>) {  // (fp8: the instances the host launches)
    // Keys of a tile, and of a wave's step: a wide head's tile in halves without transposing LDS reads (gfx942), whose
    // acc-order reads of V hold an element a register before packing (32 keys at D = 256: 83 VGPRs spilled).
    constexpr bool tr = arch::current::lds_read_transpose;
    constexpr int BK = attn_fwd_keys(tr, D, DV), WK = attn_wide(D, DV) ? attn_tile_keys(D, DV) / (tr ? 1 : 2) : BK;
    using W = AttnWave<T, D, mfma16, V, WK, DV>;
    using G = group<attn_fwd_waves<D, DV>>;
    constexpr int rows = G::waves * AttnTiles::wave_rows;  // queries per workgroup
    __shared__ st<attn_qk_t<T>, BK, attn_qk_cols<T>(D)> sk[2];  // two stages of K and V
    __shared__ st<attn_value_t<T>, BK, DV> sv[2];

    const AttnView<T, D, DV> view(p, rows, BK);
    if (view.empty) return;  // past the end of a shorter sequence (varlen)
    attn_descale<T>(p, view.blk);
    const int kt_begin = view.kt_begin, kt_end = view.kt_end;
    // Tile kt's K and V into stage `stage`, zeros past the last key.
    const async_wave<G> dma_wave;  // read once: the loads' per-lane addressing stays out of the loop
    auto fill = [&](int kt, int stage) __attribute__((always_inline)) {
      load_async<G>(sk[stage], view.k, {0, 0, kt, 0}, dma_wave);
      load_async<G>(sv[stage], view.v, {0, 0, kt, 0}, dma_wave);
    };
    if (kt_begin < kt_end) fill(kt_begin, 0);
    W me(view, G::wave() * AttnTiles::wave_rows);
    load_bounded(me.q, view.q, {0, 0, me.row_tile, 0});  // waited for with tile kt_begin

    // One KV tile in stage `stage_of` (0 or 1; a compile-time constant where the loop below takes the tiles in pairs, so
    // that every LDS address is a register fixed for the kernel plus an immediate offset).
    auto step = [&](int kt, auto stage_of) __attribute__((always_inline)) {
      const int stage = int(stage_of);
      wait_vmcnt<0>();
      barrier();  // tile kt is in; every wave is done with the other stage
      if (kt + 1 < kt_end) fill(kt + 1, stage ^ 1);
  #pragma unroll
      for (int h = 0; h < BK / WK; ++h) {
        typename W::k_tile k;
        load(k, sk[stage], {0, 0, h, 0});
        const auto pt = me.scores(view, p, kt * (BK / WK) + h, k);
        typename W::v_tile vc;
        load_acc_order(vc, sv[stage], {0, 0, h, 0});
        me.accumulate(pt, vc);
      }
    };
    // Pairs of tiles, each with its stage fixed: the addresses cost registers (gfx950 D = 128: 150 -> 196 VGPRs), which
    // the 256 of two waves per SIMD have room for.
    // Where a wave's step is half a tile (wide heads on gfx942) the registers have no such room: one tile a step, the
    // stage a runtime index.
    if constexpr (WK < BK) {
      for (int kt = kt_begin; kt < kt_end; ++kt) step(kt, (kt - kt_begin) & 1);
    } else {
      for (int kt = kt_begin; kt < kt_end; kt += 2) {
        step(kt, std::integral_constant<int, 0>{});
        if (kt + 1 < kt_end) step(kt + 1, std::integral_constant<int, 1>{});
      }
    }
    me.finish(view, p);
  }
}

}  // namespace hk::kernels
