// The 8-wave ping-pong attention forward kernel: one workgroup per (256-query tile, query head, sequence), each wave
// owning 32 queries in 32x32 MFMA blocks (AttnWave<T, D, mfma32>), K and V tiles of 64 keys straight into LDS, each in
// two stages of its own.
//
// Every KV tile takes two products, S^T = K Q^T and O^T += V^T P^T, and between them the softmax, whose vector work
// would leave the matrix cores idle if it ran alone. So the loop is pipelined by one tile: step j computes S^T of tile
// j+1 and O^T's update of tile j, and each product shares its phase with vector work that does not depend on it:
//   M1  K(j+1) from LDS into registers                 (group 0 issues K(j+2))
//   C1  S^T(j+1) = K Q^T  || O^T *= alpha(j)           then the masks of S^T(j+1) where its tile needs them
//   M2  V(j) from LDS into registers (K's registers)   (group 0 issues V(j+1))
//   C2  O^T += V^T P^T(j) || the softmax of S^T(j+1): max, alpha, exp2, sum, P^T(j+1)
// with interleave_mfma placing the vector work one MFMA at a time. The waves form two groups of four, one phase
// apart, so one group's compute phase (at raised priority) runs while the other reads LDS: per SIMD, one wave of
// each group. Every phase ends with a workgroup barrier; with b(n) the n-th barrier of the loop and group 0's phase n
// ending at b(n), group 1's ends at b(n + 1).
//
// Stages: K(t) lives in sk[t % 2], V(t) in sv[t % 2]. Group 0 issues K(j+2) in M1(j), after b(4j - 1): the stage held
// K(j), which group 1 read in its M1(j-1), done by b(4j - 3); it issues V(j+1) in M2(j), after b(4j + 1): V(j-1) was
// read by group 1 by b(4j - 1). Loads complete in issue order (K(j+1), V(j), K(j+2), V(j+1), ...), so group 0 waits
// for K(j+2) at the end of C2(j) leaving V(j+1) in flight, and for V(j+1) at the end of C1(j+1) leaving K(j+3) in
// flight; the barrier after each wait publishes the tile to both groups before either reads it. Memory phases end
// with their LDS reads complete (the barrier waits for them), so no stage is refilled under a read. Q goes from global
// memory straight into registers, so the LDS holds only the four stages (64 KiB at D = 128: the kernel fits gfx942).
#pragma once
#include "attention_common.h"

namespace hk::kernels {

using AttnPingpongShape = mfma32;
inline constexpr int attn_pingpong_rows = 8 * AttnPingpongShape::dim;  // queries per workgroup

// Whether it runs on a target (host and device): its stages (two of K, two of V) must fit the LDS, and V's operand its
// registers. Without transposing LDS reads (gfx942) V is read element by element, each read with a register of its
// own until packed: at D = 64 the kernel holds that in 210 VGPRs, at D = 128 it spills (154 registers): there gfx942
// runs attention_fwd.h.
__host__ __device__ constexpr bool attn_pingpong_runs(int lds_bytes, bool lds_read_transpose, int d) {
  return 4 * AttnTiles::keys * d * 2 <= lds_bytes && (lds_read_transpose || d <= 64);
}
template <int D>
inline constexpr bool attn_pingpong_fits = attn_pingpong_runs(arch::current::lds_bytes, arch::current::lds_read_transpose, D);

template <class T, int D, AttnVariant V = AttnVariant{}>
__global__ __launch_bounds__(512) __attribute__((amdgpu_waves_per_eu(2))) void attention_fwd_pingpong(AttnArgs p) {
  if constexpr (attn_pingpong_fits<D>) {  // the host launches it only where it fits
    using Half = group<4>;
    using W = AttnWave<T, D, AttnPingpongShape, V, AttnTiles::keys / 2>;  // a phase takes half a tile
    constexpr int BK = AttnTiles::keys;
    using KV = st<T, BK, D>;
    __shared__ KV sk[2], sv[2];

    const AttnView<T, D> view(p, attn_pingpong_rows);
    if (view.empty) return;  // past the end of a shorter sequence (varlen)
    // Scalar (the compiler cannot tell): the loop's tests stay off the VALU, which the other group's softmax keeps busy.
    const int kb = __builtin_amdgcn_readfirstlane(view.kt_begin), ke = __builtin_amdgcn_readfirstlane(view.kt_end);
    const int wave = __builtin_amdgcn_readfirstlane(wave_id()), grp = wave / 4;  // scalar: so is all that follows
    const bool loads = grp == 0;
    const async_wave<Half> dma_wave;
    // The row stride passes through an empty asm at each fill, so the loads' per-lane offsets (r_lane * stride) are
    // computed there (three VALU in a memory phase) instead of held in registers across the loop (they spilled).
    auto fill = [&](KV& st, auto g, int kt) __attribute__((always_inline)) {
      asm volatile("" : "+s"(g.stride_));
      load_async<Half>(st, g, {0, 0, kt, 0}, dma_wave);
    };
    if (loads && kb < ke) fill(sk[kb & 1], view.k, kb);
    W me(view, wave * W::WQ);
    load_bounded(me.q, view.q, {0, 0, me.row_tile, 0});  // Q from global memory straight into registers
    wait_vmcnt<0>();
    barrier();
    if (!loads) barrier();  // group 1 runs one phase behind

    // S^T of a tile's first and second 32 keys in s[0] and s[1], their P^T in pt[0] and pt[1]: fixed registers.
    typename W::s_tile s[2];
    typename W::p_tile pt[2];
    constexpr int mfmas = 2 * (W::BK / 32) * D / (2 * arch::mfma32_elems);  // of a phase: both products of a half
    // Phase h (0 or 1) of step j: has_cur when tile j exists (its O^T update, the softmax of its second half), has_next
    // when tile j+1 does (its scores, the softmax of its first half).
    auto phase = [&](int j, auto h_of, auto has_cur, auto has_next) __attribute__((always_inline)) {
      constexpr int h = decltype(h_of)::value;
      constexpr bool qk = has_next, pv = has_cur, sm = h == 0 ? bool(has_cur) : bool(has_next);
      typename W::k_tile k;
      typename W::v_tile vc;
      // M: half h of K(j+1) and of V(j) (one phase's registers: the k and v of a half). The phase's few VALU (an add
      // per LDS address, the loads' offsets) at the highest priority: the other group's softmax, which keeps the
      // SIMD's VALU busy, would delay them past its own phase.
      set_priority<2>();
      // (The last step reads tile j's K again for the tile past the end, whose scores the masks hide; see below.)
      if constexpr (qk) load(k, sk[(j + (j + 1 < ke)) & 1], {0, 0, h, 0});
      if constexpr (pv) load_acc_order(vc, sv[j & 1], {0, 0, h, 0});
      // Each read right after its address (the stage's base plus the lane's part): the addresses die at once.
      [&]<int... I>(std::integer_sequence<int, I...>) {
        ((sched_group_barrier<sched::valu, 1 + 0 * I>(), sched_group_barrier<sched::ds_read, 1>()), ...);
      }(std::make_integer_sequence<int, 24>{});
      if constexpr (h == 1) {
        if (loads && j + 2 < ke) fill(sk[j & 1], view.k, j + 2);
        if (loads && j + 1 < ke) fill(sv[(j + 1) & 1], view.v, j + 1);
      }
      sched_barrier();
      set_priority<0>();
      // The tests (scalar) and the rare vector work of the rescale and the masks, off the compute phase.
      if constexpr (pv) me.rescale();  // by the alpha of the previous phase's softmax, before its P^T meets O^T
      if constexpr (sm) me.mask(s[1 - h], view, p, 2 * j + 1 + h);
      sched_barrier();
      barrier();
      // C
      set_priority<1>();
      if constexpr (qk) me.qk(s[h], k);
      if constexpr (pv) me.accumulate(pt[h], vc);
      if constexpr (sm) me.softmax(s[1 - h], pt[1 - h], p);
      if constexpr (qk && pv && sm) interleave_mfma<mfmas, 64 / mfmas, sched::valu | sched::transcendental>();
      sched_barrier();
      if (loads && h == 1) wait_vmcnt<0>();  // K(j+2), V(j+1)
      set_priority<0>();
      sched_barrier();
      barrier();
    };
    using yes = std::true_type;
    using no = std::false_type;
    using zero = std::integral_constant<int, 0>;
    using one = std::integral_constant<int, 1>;
    auto step = [&](int j, auto has_cur, auto has_next) __attribute__((always_inline)) {
      phase(j, zero{}, has_cur, has_next);
      phase(j, one{}, has_cur, has_next);
    };
    if (kb < ke) {
      step(kb - 1, no{}, yes{});
      // The last step as the others: its scores of tile ke (K of tile ke - 1 read again) are all hidden by the masks
      // (tile ke lies past the visible range of every query: past the keys' end or the window's right edge), so the
      // softmax of its first half leaves m and l as they are and gives P^T = 0, and the rest of tile ke is not
      // computed. One copy of the step (a separate last step held 3 VGPRs of addresses across the loop: spills).
      for (int j = kb; j < ke; ++j) step(j, yes{}, yes{});
    }
    if (loads) barrier();  // group 0 meets group 1's last barrier
    me.finish(view, p);
  }
}

}  // namespace hk::kernels
