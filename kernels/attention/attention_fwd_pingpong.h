// The 8-wave ping-pong attention forward kernel: one workgroup per (256-query tile, query head, sequence), each wave
// owning 32 queries in 32x32 MFMA blocks (AttnWave<T, D, mfma32>, 32 keys a phase), K and V tiles of 64 keys straight
// into LDS, each in two stages of its own.
//
// Every 32 keys take two products, S^T = K Q^T and O^T += V^T P^T, and between them the softmax, whose vector work
// (16 exp2 at a quarter of the VALU's rate, about 40 other VALU) is about the matrix cores' work of both products at
// D = 128 and twice it at D = 64. So the loop is pipelined by half a tile, and every compute phase holds the same mix:
// the scores of one half, the O^T update of the half before the last, the softmax of the last. With s[2] and pt[2]
// (S^T and P^T of a tile's first and second halves, fixed registers), step j is two phases h = 0, 1 of one shape:
//   M(h)  half h of K(j+1) and of V(j) from LDS into registers; then the rescale of O^T (alpha of the max before),
//         the masks of s[1-h] where they are needed, and its running max (attn_rebase: a max per lane and a test; the
//         cross-lane reduce and the move only when a max grew): tests and rare vector work off the compute phase
//   C(h)  s[h] = K Q^T, O^T += V^T pt[h]  ||  the rest of the softmax of s[1-h] (attn_exp): exp2, sums, P^T
// with each MFMA followed by an equal share of the exp2 and of the other VALU (the exp2 bunched held the MFMAs
// apart, and what followed them ran as a tail behind the last). ALiBi's bias (AttnWave::alibi) (softcap's tanh
// below at D = 64) joins s[h] at the end of C(h), after its product and the interleaved softmax, where the K and V registers are
// free, and before the masks and the running max of the next M: on a tile wholly on one side of the diagonal of
// every query of the wave (all but one 32-key half in 256 at N = 8192), d = j - i - off has one sign, so -slope |d| is
// slope' d, one packed add and one packed multiply-add a pair of scores; the crossed tiles take the exact bias under a
// scalar branch. (MI355X GQA D128 N8192: 1327 TFLOP/s, causal 1362, plain 1455 and 1548; with the whole softmax in
// C(h) behind an unpacked bias: 1145 and 1190; the slope in a VGPR, not a scalar, spilled the loads' lane offsets: 1222.)
// Softcap's tanh (AttnArgs::Softcap: an exp2 and a degree-6 polynomial a score, twice the softmax's transcendentals,
// each at a quarter of the VALU's rate) of s[h] runs in C(h) among its PV MFMAs, which follow s[h]'s QK MFMAs: the
// softmax's exp2 and VALU in the QK MFMAs' shadow, the first PV MFMA for the last QK MFMA's latency, then three
// exp2 and ten VALU after each of the rest (at D = 64, 8 MFMAs, and wherever a phase lacks a product: a tail after
// them). Its Horner chains run four pairs at a time (one chain alone waited a cycle, an s_nop, between its steps).
// The rest is the plain kernel's schedule, VALU-bound by that work (MI355X GQA D128 N8192: 932.6 TFLOP/s, causal
// 1013.5, plain 1455; with one chain at a time: 881.3 interleaved, 887.4 as a tail after the MFMAs (2 spills); four
// chains as a tail: 936.8 but 2 spills; two chains interleaved: 926.1; the softmax's exp in M after the running max
// (the tanh alone in C): 815, at priority 2: 751; the whole tanh in M before the masks: 724; older tanh (exp2 and a
// reciprocal): at the start of M, before the reads: 656; in M after them: 763; capping after the masks with the
// whole softmax in C: 759; as a tail: 802). The waves form two groups of four, one phase
// apart, so one group's compute phase (priority 1) runs while the other reads LDS (priority 2 over its reads and
// loads): per SIMD, one wave of each group. Every phase ends with a workgroup barrier. The registers: O^T 64, Q 32, s
// and pt 48, a half of K and of V 64, the LDS addresses' lane parts 24 (256 at D = 128, no spills, softcap's included;
// ALiBi 10 SGPRs, to VGPR lanes, around the loop, none in it).
//
// LDS addresses: the reads name no stage register. Both stages of K (and of V) are one array whose tile layout
// repeats every 32 rows, so stage 1 is rows 64.. of stage 0: a compile-time offset on the lanes' address registers,
// one copy of the reads per stage behind a scalar branch. Tile t's K lives in sk[t % 2], its V in sv[(t + 1) % 2], so
// that K(j+1) and V(j), read in the same phases, share the stage bit. Group 0 issues K(j+2) into sk[j % 2] and V(j+1)
// into sv[j % 2] in M(1) of step j, after its own reads: both stages were last read (K(j), V(j-1)) by group 1 in M(1)
// of step j-1, which ended at the barrier before. It waits for them at the end of C(1), and the barrier after
// publishes them to both groups before M(0) of step j+1 reads them. Memory phases end with their LDS reads complete
// (the barrier waits for them), so no stage is refilled under a read. The last step runs as the others: its scores
// of tile kt_end (K read from the stage of K(kt_end), which holds K(kt_end - 2), or K(kt_begin) again where the
// workgroup has one tile) are hidden by the masks, as tile kt_end lies past every query's visible keys, so its
// softmax leaves m and l as they are (one copy of the step: a separate last step kept registers across the loop and
// spilled). Q goes from global memory straight into registers, so the LDS holds only the four stages (64 KiB at D =
// 128).
//
// Two or three features together (AttnVariant::dynamic, each tested on the arguments, a scalar branch): the compute
// phase's plain schedule, then the tanh of s[h] and ALiBi's bias as tails after the MFMAs, dropout in attn_exp under
// its branch (which splits the phase's schedule). MI355X GQA D128 N8192: softcap 30 + ALiBi 802.9 TFLOP/s, ALiBi +
// dropout 0.1 874.9, softcap + dropout 647.8, all three 641.8 (softcap alone 934.5, dropout 1170.5, ALiBi 1326.9).
// Dropout's mask (attn_dropout_drop, attention_common.h): a Philox call a lane per 16 elements, the quad's 4x4 word
// transpose in 8 DPP selects, a bitop3 majority a word and one sign-extended-byte min an element.
//
// FP8 (T = fp8e4m3, attention_fp8.h): Q and K move as bf16 pairs (a K stage is a bf16 tile of D / 2 columns, the
// same swizzle and reads), S^T = K Q^T takes the fp8 MFMA (2 of the phase's 10 MFMAs at D = 128 on gfx950, where
// bf16 takes 8 of 16), and V, decoded to bf16 before the kernel, keeps P V in bf16: the same schedule with fewer
// MFMAs to hide the softmax's vector work under (MI355X GQA D128 N8192: 1675 TFLOP/s, bf16 1455). With softcap (its
// instance, the tanh as a tail: 10 MFMAs a phase are too few to interleave it) 1016.7.
#pragma once
#include "attention_common.h"

namespace hk::kernels {

using AttnPingpongShape = mfma32;
inline constexpr int attn_pingpong_rows = 8 * AttnPingpongShape::dim;  // queries per workgroup

// Whether it runs on a target (host and device): its stages (two of K, two of V) must fit the LDS, and V's operand its
// registers. Without transposing LDS reads (gfx942) V is read element by element, each read with a register of its
// own until packed: at D = 64 the kernel holds that in 198 VGPRs, at D = 128 it spills (91 registers): there gfx942
// runs attention_fwd.h, as every head wider than 128 does (O^T alone would take 96 or 128 of the 256 registers).
__host__ __device__ constexpr bool attn_pingpong_runs(int lds_bytes, bool lds_read_transpose, int d) {
  return d <= 128 && 4 * AttnTiles::keys * d * 2 <= lds_bytes && (lds_read_transpose || d <= 64);
}
template <int D>
inline constexpr bool attn_pingpong_fits = attn_pingpong_runs(arch::current::lds_bytes, arch::current::lds_read_transpose, D);

template <class T, int D, AttnVariant V = AttnVariant{}>
__global__ __launch_bounds__(512) __attribute__((amdgpu_waves_per_eu(2))) void attention_fwd_pingpong(AttnArgs p) {
  if constexpr (attn_pingpong_fits<D> && attn_qk_fits<T, AttnPingpongShape, D>) {  // the host launches it only where it fits
    using Half = group<4>;
    using W = AttnWave<T, D, AttnPingpongShape, V, AttnTiles::keys / 2>;  // a phase takes half a tile
    constexpr int BK = AttnTiles::keys;
    using KT = st<attn_qk_t<T>, BK, attn_qk_cols<T>(D)>;  // (fp8 codes in bf16 pairs)
    using VT = st<attn_value_t<T>, BK, D>;  // (bf16 where Q and K are fp8)
    __shared__ KT sk[2];
    __shared__ VT sv[2];
    static_assert(KT::swizzle(32) == 0 && KT::swizzle(64) == 0 && sizeof(KT) == BK * D * sizeof(T) &&
                      VT::swizzle(32) == 0 && VT::swizzle(64) == 0 && sizeof(VT) == BK * D * sizeof(typename VT::dtype),
                  "stage 1 is read as rows 64.. of stage 0");

    const AttnView<T, D> view(p, attn_pingpong_rows);
    if (view.empty) return;  // past the end of a shorter sequence (varlen)
    attn_descale<T, V.softcap>(p, view.blk);
    // Scalar (the compiler cannot tell): the loop's tests stay off the VALU, which the other group's softmax keeps busy.
    const int kb = __builtin_amdgcn_readfirstlane(view.kt_begin), ke = __builtin_amdgcn_readfirstlane(view.kt_end);
    const int wave = __builtin_amdgcn_readfirstlane(wave_id()), grp = wave / 4;  // scalar: so is all that follows
    const bool loads = grp == 0;
    const async_wave<Half> dma_wave;
    // The row stride passes through an empty asm at each fill, so the loads' per-lane offsets (r_lane * stride) are
    // computed there (three VALU in a memory phase) instead of held in registers across the loop (they spilled).
    auto fill = [&](auto& st, auto g, int kt) __attribute__((always_inline)) {
      asm volatile("" : "+s"(g.stride_));
      load_async<Half>(st, g, {0, 0, kt, 0}, dma_wave);
    };
    if (loads && kb < ke) {
      fill(sk[kb & 1], view.k, kb);
      // One tile: its K in the other stage too, which the last step reads (see below).
      if (kb + 1 == ke) fill(sk[(kb + 1) & 1], view.k, kb);
    }
    W me(view, wave * W::WQ);
    load_bounded(me.q, view.q, {0, 0, me.row_tile, 0});  // Q from global memory straight into registers
    wait_vmcnt<0>();
    barrier();
    if (!loads) barrier();  // group 1 runs one phase behind

    // S^T of a tile's first and second 32 keys in s[0] and s[1], their P^T in pt[0] and pt[1]: fixed registers.
    typename W::s_tile s[2];
    typename W::p_tile pt[2];
    // The running max in the memory phase. (Softcap's tanh and ALiBi's bias run in the compute phase that
    // made the scores: see the top.)
    // Of a phase: both products of a half (S^T's K: the fp8 MFMA's for fp8 Q and K, twice the 16-bit one's).
    constexpr int k16 = 2 * arch::mfma32_elems, k_qk = fp8_input<T> ? 2 * arch::fp8_elems32 : k16;
    constexpr int mfmas = (W::BK / 32) * (D / k_qk + D / k16);
    // Phase h (0 or 1) of step j: has_cur when tile j exists (its O^T update, the softmax of its second half), has_next
    // when tile j+1 does (its scores, the softmax of its first half).
    auto phase = [&](int j, auto h_of, auto has_cur, auto has_next) __attribute__((always_inline)) {
      constexpr int h = decltype(h_of)::value;
      constexpr bool qk = has_next, pv = has_cur, sm = h == 0 ? bool(has_cur) : bool(has_next);
      typename W::k_tile k;
      typename W::v_tile vc;
      // M: half h of K(j+1) and of V(j) (one phase's registers: the k and v of a half), and the loads, at the highest
      // priority: the other group's softmax, which keeps the SIMD's VALU busy, would delay them past its own phase.
      set_priority<2>();
      // The stage's offset an immediate (see the top; named as two tiles, the compiler kept V's addresses per stage:
      // 42 spills at D = 128). (The last step reads K(j-1) again for the tile past the end; see below.)
      auto reads = [&](auto stage_of) __attribute__((always_inline)) {
        if constexpr (qk) load(k, sk[0], {0, 0, h + 2 * int(stage_of), 0});
        if constexpr (pv) load_acc_order(vc, sv[0], {0, 0, h + 2 * int(stage_of), 0});
      };
      if ((j + 1) & 1) {  // the stage of K(j+1) and of V(j)
        reads(std::integral_constant<int, 1>{});
        asm volatile("; stage 1");  // the copies stay apart (no merged select of addresses)
      } else {
        reads(std::integral_constant<int, 0>{});
        asm volatile("; stage 0");
      }
      if constexpr (h == 1) {
        if (loads && j + 2 < ke) fill(sk[j & 1], view.k, j + 2);
        if (loads && j + 1 < ke) fill(sv[j & 1], view.v, j + 1);
      }
      sched_barrier();
      set_priority<0>();
      // The tests (scalar) and the rare vector work of the rescale, the masks and the running max.
      if constexpr (pv) me.rescale();  // by the alpha of the previous phase's max, before its P^T meets O^T
      if constexpr (sm) me.mask(s[1 - h], view, p, 2 * j + 1 + h);
      if constexpr (sm) me.template rebase<true>(s[1 - h], p);
      sched_barrier();
      barrier();
      // C
      set_priority<1>();
      if constexpr (qk) me.qk(s[h], k);
      if constexpr (pv) me.accumulate(pt[h], vc);
      if constexpr (sm) me.exp(s[1 - h], pt[1 - h], p);
      // Softcap's tanh of s[h] among the PV MFMAs, which follow s[h]'s QK MFMAs (see the top).
      constexpr bool cap_mix = qk && pv && sm && V.softcap && mfmas >= 16 && D >= 128;
      if constexpr (cap_mix) p.cap.apply(s[h]);
      if constexpr (cap_mix) {
        // The softmax's 16 exp2 and its VALU in the QK MFMAs' shadow, the tanh's (16 exp2, 64 VALU after its 8
        // multiplies) in the PV's, from the second PV MFMA on (the first gives the last QK MFMA's latency). (Softmax
        // as the plain kernel's over G < 10, the tanh after: 861.)
        [&]<int... I>(std::integer_sequence<int, I...>) {
          ([&]<int G>(std::integral_constant<int, G>) {
            constexpr int half = mfmas / 2;
            constexpr int trans = G == 0 || G == half ? 0 : G < half ? (16 + half - 2) / (half - 1) : (16 + half - 2) / (half - 1);
            constexpr int valu = G == 0 ? 8 : G < half ? 4 : G == half ? 8 : (64 + half - 2) / (half - 1);
            sched_group_barrier<sched::mfma, 1>();
            if constexpr (trans > 0) sched_group_barrier<sched::transcendental, trans>();
            if constexpr (valu > 0) sched_group_barrier<sched::valu, valu>();
          }(std::integral_constant<int, I>{}), ...);
        }(std::make_integer_sequence<int, mfmas>{});
      } else if constexpr (qk && pv && sm) {
        // The 16 exp2 (a quarter of the VALU's rate) spread over the MFMAs, not bunched (they held the MFMAs apart).
        // With 16 MFMAs: their arguments' multiply-adds after the first two, two exp2 after each of the next eight,
        // and the sums and P^T's converts after the last six, in their shadow (after the last exp2, they ran as a tail
        // behind the last MFMA). At D = 64 (VALU-bound), an equal share of each after every MFMA. The dropout instance
        // takes 8 VALU after each of those eight MFMAs (the Philox rounds, the mask's transpose and compares: 4 left
        // them as a tail behind the last MFMA; MI355X GQA D128 N8192 p 0.1: 1058.9 -> 1090.7 TFLOP/s).
        constexpr int valu_wide = V.dropout && !V.dynamic ? 8 : 4;
        [&]<int... I>(std::integer_sequence<int, I...>) {
          ([&]<int G>(std::integral_constant<int, G>) {
            constexpr bool split = mfmas >= 16 && D >= 128;  // (gfx942 at D = 64, also 16 MFMAs: 465 -> 451)
            constexpr int trans = split ? (G >= 2 && G < 10 ? 2 : 0) : (16 + mfmas - 1) / mfmas;
            constexpr int valu = split ? (G < 2 || G >= 10 ? valu_wide : 0) : (32 + mfmas - 1) / mfmas;
            sched_group_barrier<sched::mfma, 1>();
            if constexpr (trans > 0) sched_group_barrier<sched::transcendental, trans>();
            if constexpr (valu > 0) sched_group_barrier<sched::valu, valu>();
          }(std::integral_constant<int, I>{}), ...);
        }(std::make_integer_sequence<int, mfmas>{});
      }
      // Softcap's tanh of s[h], before the masks of the next phase (see the top); then ALiBi's bias of s[h] (keys of
      // half 2 (j + 1) + h) on the capped score, likewise. The dynamic instance (two or three features) tests each
      // here, a scalar branch, after the plain schedule above.
      if constexpr (qk && (V.softcap || V.dynamic) && !cap_mix) {
        sched_barrier();
        if (attn_softcap_on<V>(p)) p.cap.apply(s[h]);
      }
      if constexpr (qk && (V.alibi || V.dynamic)) {
        sched_barrier();
        if (attn_alibi_on<V>(p)) me.alibi(s[h], view, 2 * j + 2 + h);
      }
      sched_barrier();
      if constexpr (h == 1) wait_vmcnt<0>();  // K(j+2), V(j+1) (group 1 has none: no branch)
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
      // The last step as the others: its scores of tile ke (K of tile ke - 2 read again) are all hidden by the masks
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
