// Kernel 3 at 64 queries a wave (gfx950, D = 128, the plain, ALiBi, softcap and dropout variants, one feature at a
// time). Included by attention_bwd.h, whose attention_bwd_dq runs it for those instances. The mirror of kernel
// 2's keys64 (attention_bwd_keys64.h, whose schedule, reasons and fragment reads this shares).
//
// Schedule. Four waves a workgroup, 256 queries, one wave per SIMD (one workgroup a CU), each wave owning 64 queries:
// dQ^T (128 x 64 fp32) in 128 AGPRs, Q and dO (the B operands of S^T = K Q^T and dP^T = V dO^T) in the other 128
// AGPRs (the MFMA reads its A and B operands from either file: in the arch VGPRs next to S^T, dP^T and their
// successors they left the loop about 60 short), -LSE / scale and -delta of the wave's queries in VGPRs as S^T's and
// dP^T's starting accumulators, every K and V fragment read from the LDS serving 64 queries' MFMAs (twice the 32 of
// the two-waves-a-SIMD kernel). K and V go through three LDS stages shared by the four waves (LDS-DMA loads, one key
// tile of 64 a stage), each tile in two chunks of 32 keys, a chunk a body of 96 MFMAs: S^T(c) = K Q^T (32 MFMAs),
// dQ^T(c - 1) += K^T dS^T(c - 1) (32), dP^T(c) = V dO^T (32). The skew (dQ^T of the previous chunk, whose dS^T
// crosses into this body as bf16 pairs) gives the VALU work of a body (dS^T(c - 1)'s multiplies and converts under
// S^T(c)'s MFMAs; P^T(c)'s exp2 under dQ^T(c - 1)'s and dP^T(c)'s) MFMAs to hide under from its first; S^T and dP^T
// alternate between two register sets by the chunk's parity (the previous chunk's are read while this chunk's are
// written). The body's order is a compile-time list schedule (ops/schedule.h), as keys64's: the VALU tasks placed
// between the MFMAs at a credit of 12 cycles an MFMA (capped at 24), each task three MFMAs after the last MFMA of the
// tile it reads (the asm MFMAs' hazard), dS^T(c - 1)'s before the first dQ^T MFMA. The A operands (K rows, K^T
// columns by transposing reads, V rows) are read from the stage two groups of four MFMAs ahead (a ring of three
// fragments), with the lane parts of their addresses held. Chunk 0 of tile n reads tile n - 1's K for its dQ^T, so
// the next tile's loads go to a third stage (issued at chunk 0's start), and the barrier sits at MFMA 84 of chunk 1,
// the next body's first fragments read under the last dP^T MFMAs. The loop runs whole threes of tiles (a constant
// stage a body) up to the one after the last visible tile (whose chunk 0 holds the last dQ^T), the bodies past the
// last with P^T zero: no branch around an accumulating MFMA (see keys64). A chunk that is not whole (a mask's edge,
// the sequences' ends) or past the last tile masks S^T before P^T in its tasks (a branch, taken on few chunks).
// ALiBi (template parameter alibi): on a chunk whole and wholly on one side of the diagonal the bias is linear, sl (q0
// - i) + sl (j - q0 - off) (sl = slope left of it, -slope right): the query's part is in S^T's start (two sets by query
// tile, left and right, picked a chunk), the key's (by key tile and element, 8 VALU a chunk) exp2's multiply-add
// operand; a chunk the diagonal crosses (or masked) starts from the left set and takes the exact bias before the mask.
// Softcap (template parameter softcap): S starts from 0 and the cap's steps are tasks of the schedule (namespace sc
// below: the scores capped, the mask, P from c t - LSE log2 e, P (1 - t^2) for dS), as the forward caps.
// Dropout (template parameter dropout): a chunk's keep words made in its body's tasks (namespace dr below: two Philox
// calls a lane, AttnDropCall), held to the next body, whose dS^T(c - 1) is Pd dP^T + P^T nd (dP^T from 0, Pd: P^T
// dropped, nd = -delta (1 - p)), as keys64's; dQ takes 1 / (1 - p) at its store.
#pragma once
#include "attention_bwd_frags.h"
#include "hk/ops/schedule.h"

namespace hk::kernels {

namespace dq64 {
// A body's MFMAs: 0-31 S^T(c) (group g = m / 4: K's row fragment (key tile g / 4 of the chunk, D chunk g % 4), query
// tile m % 4), 32-63 dQ^T(c - 1) (K^T's acc-order fragment, D tile g - 8), 64-95 dP^T(c) (V's row fragment).
// Its tasks: 16 dS^T(c - 1) multiplies (a pair each: P^T by dP^T - delta), 16 converts to bf16 pairs; then per key
// tile kk of the chunk: one masking S^T's tile row (a branch), then P^T's 8 pairs in 24: a pair's exp2 argument (two
// v_mul_f32 by scale_log2: after a v_pk_mul_f32 LLVM pads the next exp2 with an s_nop) three pairs ahead of its two
// exp2s, each exp2 alone and first after its MFMA (`solo`: its 16 cycles hold the vector unit past the next MFMA's
// issue, so an exp2 after two multiplies in one gap left the matrix core idle 9 cycles, not 4: 16 a body). keys64's
// order, without its converts.
struct task {
  enum kind : unsigned char { ds, mask, arg, exp_lo, exp_hi } k;
  int kk, e;  // key tile of the chunk; dS^T's task (0-31) or the pair (0-7: query tile e / 2, scores 2 (e % 2), + 1)
};
constexpr task::kind p_order[24] = {task::arg,    task::arg,    task::arg,    task::exp_lo, task::arg,    task::exp_hi,
                                    task::exp_lo, task::arg,    task::exp_hi, task::exp_lo, task::arg,    task::exp_hi,
                                    task::exp_lo, task::arg,    task::exp_hi, task::exp_lo, task::arg,    task::exp_hi,
                                    task::exp_lo, task::exp_hi, task::exp_lo, task::exp_hi, task::exp_lo, task::exp_hi};
constexpr int kk_tasks = 25, tasks = 32 + 2 * kk_tasks;
constexpr task task_of(int t) {
  if (t < 32) return {task::ds, 0, t};
  const int kk = (t - 32) / kk_tasks, i = (t - 32) % kk_tasks - 1;
  if (i < 0) return {task::mask, kk, 0};
  int n = 0;  // tasks of this kind before i: the pair
  for (int j = 0; j < i; ++j) n += p_order[j] == p_order[i];
  return {p_order[i], kk, n};
}
constexpr int cost(int t) {
  const task k = task_of(t);
  return k.k == task::ds || k.k == task::arg ? 8 : 16;  // (v_exp_f32: 16 cycles; the mask's test and branch about 16)
}
// Three MFMAs after the last of the tile it reads (the previous body's dP^T for dS^T: three into this body).
constexpr int ready(int t) { return t < 32 ? 3 : task_of(t).kk == 0 ? 19 : 35; }
constexpr int needs(int m) { return m >= 32 ? 32 : 0; }  // dS^T(c - 1) whole before its first dQ^T MFMA
inline constexpr auto plan = make_schedule<96, tasks>(cost, ready, needs, 12, 24, 16);
constexpr int barrier_at = 84;  // MFMA of chunk 1's barrier
constexpr int mask_at = 12;     // MFMA before which the chunk's mask test is made (its first mask task is ready at 19)
constexpr int fill_at[2] = {1, 5};  // MFMAs of chunk 0 after which the next tile's K and V loads go out, one a gap
// softcap: the same dS^T tasks first; then per key tile kk of the chunk S^T's capping (AttnArgs::Softcap's steps), a
// query tile at a time in 12 tasks (the scaled scores, two packed multiplies; four exp2s; six Horner steps, a packed
// multiply-add for each of the tile's two pairs: two chains; the sign copies), the mask, and P^T's 8 pairs in 4 tasks
// each (the exp2 argument, a multiply-add by scale_log2 with -LSE log2(e); two exp2s; the slope 1 - t^2 times P^T, a
// packed multiply-add and a packed multiply): S^T holds P^T times the slope, and dS^T's multiply is the plain one's.
namespace sc {
struct task {
  enum kind : unsigned char { ds, cap_mul, cap_exp, cap_poly, cap_sign, mask, arg, exp_lo, exp_hi, slope } k;
  int kk, qt, i;  // key tile of the chunk, query tile, the step (cap_exp: element; cap_poly: Horner step) or pair
};
constexpr int cap_tasks = 48, kk_tasks = cap_tasks + 1 + 32, tasks = 32 + 2 * kk_tasks;
constexpr task task_of(int t) {
  if (t < 32) return {task::ds, 0, 0, t};
  const int kk = (t - 32) / kk_tasks, r = (t - 32) % kk_tasks;
  if (r < cap_tasks) {
    const int qt = r / 24 * 2 + r % 2, s = r % 24 / 2;  // (two query tiles' steps interleaved: four chains)
    if (s == 0) return {task::cap_mul, kk, qt, 0};
    if (s < 5) return {task::cap_exp, kk, qt, s - 1};
    if (s < 11) return {task::cap_poly, kk, qt, s - 5};
    return {task::cap_sign, kk, qt, 0};
  }
  if (r == cap_tasks) return {task::mask, kk, 0, 0};
  const int u = r - cap_tasks - 1, e = u / 4;
  const task::kind k[4] = {task::arg, task::exp_lo, task::exp_hi, task::slope};
  return {k[u % 4], kk, e / 2, e};
}
constexpr int cost(int t) {
  const task k = task_of(t);
  return k.k == task::ds ? 8 : k.k == task::mask ? 4 : k.k == task::arg ? 8 : 16;
}
constexpr int ready(int t) {
  const task k = task_of(t);
  if (k.k == task::ds) return 3;
  if (k.k <= task::cap_sign) return 16 * k.kk + 16 + k.qt;  // (three MFMAs after the query tile's last of S^T)
  return 16 * k.kk + 19;
}
inline constexpr auto plan = make_schedule<96, tasks>(cost, ready, needs, 28, 56);
}  // namespace sc
// dropout: dS^T(c - 1)'s tasks a pair (the plain's order): Pd dP^T + P^T nd (P^T dropped by the words, dP^T from 0, nd =
// -delta (1 - p): attn_drop_ds; dQ takes 1 / (1 - p) at its store), its convert; P^T's tasks the plain's; then the
// chunk's keep words for the next body's dS^T: its two calls a lane (attn_dropout_words' groups) side by side, 7
// rounds, the quads' transposes in four phases, 8 words (AttnDropCall).
namespace dr {
struct task {
  enum kind : unsigned char { ds_mul, ds_cvt, p, round, quad, word } k;
  int i;  // the pair, the plain's task, the round, the phase or the word
};
constexpr int p_tasks = dq64::tasks - 32;  // the plain's masks and P^T's (its tasks 32 ..)
constexpr int ph_tasks = attn_dropout_rounds + 4 + 8, tasks = 32 + p_tasks + ph_tasks;
constexpr task task_of(int t) {
  if (t < 32) return {t < 16 ? task::ds_mul : task::ds_cvt, t % 16};
  t -= 32;
  if (t < p_tasks) return {task::p, 32 + t};
  t -= p_tasks;
  if (t < attn_dropout_rounds) return {task::round, t};
  t -= attn_dropout_rounds;
  if (t < 4) return {task::quad, t};
  return {task::word, t - 4};
}
constexpr int cost(int t) {  // (an instruction's issue, VALU or SALU: 4 cycles)
  const task k = task_of(t);
  switch (k.k) {
    case task::ds_mul: return 16;
    case task::ds_cvt: return 8;
    case task::p: return dq64::cost(k.i);
    case task::round: return k.i == 0 ? 16 : 40;
    case task::quad: return 24;
    default: return 12;
  }
}
constexpr int ready(int t) {
  const task k = task_of(t);
  return k.k <= task::ds_cvt ? 3 : k.k == task::p ? dq64::ready(k.i) : 0;
}
inline constexpr auto plan = make_schedule<96, tasks>(cost, ready, needs, 20, 40);
}  // namespace dr
}  // namespace dq64

// (alibi: the ALiBi instance, AttnVariant{.alibi = true}: see above.)
// (softcap: the softcap instance, AttnVariant{.softcap = true}: see above.)
// (dropout: the dropout instance, AttnVariant{.dropout = true}: see above.)
template <class T, bool alibi = false, bool softcap = false, bool dropout = false, class A = arch::current>
__device__ __attribute__((always_inline)) inline void attention_bwd_dq64(const AttnBwdArgs& a) {
  static_assert(int(alibi) + int(softcap) + int(dropout) <= 1, "dq64: one feature at a time");
  using G = group<4>;
  constexpr int D = 128, BK = 64, KC = 32, WQ = 64;
  using f32x4 = arch::f32x4;
  using F = std::conditional_t<std::same_as<T, bf16>, arch::bf16_frag, arch::f16_frag>;
  using KT = st<T, BK, D>;
  struct Stage {
    KT k, v;
  };
  __shared__ __attribute__((aligned(16))) Stage stage0, stage1, stage2;
  auto stages = [&]<int s>() __attribute__((always_inline)) -> Stage& {
    if constexpr (s == 0) return stage0;
    else if constexpr (s == 1) return stage1;
    else return stage2;
  };
  const AttnArgs& p = a.f;
  const AttnView<T, D, D> view(p, G::waves * WQ, BK);
  if (view.empty) return;
  const AttnBlock& blk = view.blk;
  const int kt_begin = view.kt_begin, kt_end = view.kt_end;
  const bool varlen = p.cu_q != nullptr;
  const int wave = __builtin_amdgcn_readfirstlane(G::wave()), lane = lane_id();
  const int q0 = int(view.first_row) + wave * WQ;  // this wave's first query
  const int row_tile = q0 / WQ;
  const async_wave<G> dma_wave;
  static_assert(dq64::fill_at[0] + async_loads<G, KT> <= dq64::fill_at[1], "dq64: K's loads, one a gap, before V's");
  auto fill = [&](int kt, Stage& s) __attribute__((always_inline)) {
    load_async<G>(s.k, view.k, {0, 0, kt, 0}, dma_wave);
    load_async<G>(s.v, view.v, {0, 0, kt, 0}, dma_wave);
  };
  // Stages 1 and 2 hold zeros, not NaNs, until loaded (chunk 0 of the first tile reads stage 2's K for dQ^T(-1), whose
  // dS^T is zero; the bodies past the last tile read what the stages hold, with P^T zero). The first tile into stage 0
  // unconditionally (a tile past the keys reads zeros).
  {
    auto* z = reinterpret_cast<uint4*>(&stage1);
    for (int i = int(threadIdx.x); i < int(sizeof(Stage) / 16); i += G::threads) z[i] = uint4{0, 0, 0, 0};
    z = reinterpret_cast<uint4*>(&stage2);
    for (int i = int(threadIdx.x); i < int(sizeof(Stage) / 16); i += G::threads) z[i] = uint4{0, 0, 0, 0};
  }
  fill(kt_begin, stage0);
  // Q and dO of the wave's queries as the B operands (query tile, D chunk), held in the AGPRs; the starts of S^T's and
  // dP^T's accumulators by query tile: -LSE log2(e) / scale_log2 (P^T = exp2(scale_log2 S^T), no subtraction; a query
  // that sees no key has every score masked, its start 0) and -delta.
  F qf[WQ / 16][D / 32], df[WQ / 16][D / 32];
  {
    const auto do_view = head_view<T, D>(a.dout, a.do_bs, a.do_rs, a.do_hs, blk.b, varlen, blk.q_start, blk.h, blk.sq);
    rt<T, WQ, D> x;
    load_bounded(x, view.q, {0, 0, row_tile, 0});
#pragma unroll
    for (int i = 0; i < WQ / 16; ++i)
#pragma unroll
      for (int j = 0; j < D / 32; ++j) { qf[i][j] = detail::frag(x.data[i][j]); asm volatile("" : "+a"(qf[i][j])); }
    load_bounded(x, do_view, {0, 0, row_tile, 0});
#pragma unroll
    for (int i = 0; i < WQ / 16; ++i)
#pragma unroll
      for (int j = 0; j < D / 32; ++j) { df[i][j] = detail::frag(x.data[i][j]); asm volatile("" : "+a"(df[i][j])); }
  }
  const float c = p.scale_log2;
  [[maybe_unused]] const float ck = softcap ? p.cap.k : 0.f;  // softcap: AttnCapTile's factor
  f32x4 L[WQ / 16], nd[WQ / 16];
  // alibi: the starts of a chunk wholly left of the diagonal (or masked) and right of it, by query tile: L less (plus)
  // the bias's query part slope (i - q0) (raw units; the key's part joins exp2's multiply-add).
  [[maybe_unused]] f32x4 LR[alibi ? WQ / 16 : 1];
  const float slope = alibi ? view.slope : 0.f;
  // softcap: S^T starts from 0 (the scores are capped before exp2's argument); -LSE log2(e) by query tile, the argument's
  // addend.
  [[maybe_unused]] float ls[WQ / 16];
  {
    using cols_vec = rv<float, WQ, vec_align::cols>;
    cols_vec lse, delta;
    load(lse, lse_row(p, p.lse, blk, blk.h), {0, 0, 0, row_tile});
    load(delta, lse_row(p, a.delta, blk, blk.h), {0, 0, 0, row_tile});
    const float k = -1.44269504088896341f / c;
#pragma unroll
    for (int j = 0; j < WQ / 16; ++j) {
      // (dropout: dP^T's start -delta (1 - p); dQ scaled by 1 / (1 - p) at its store)
      const float l = lse.data[j][0] == -INFINITY ? 0.f : lse.data[j][0] * k,
                  d = dropout ? -delta.data[j][0] / p.drop.scale : -delta.data[j][0];
      L[j] = f32x4{l, l, l, l}, nd[j] = f32x4{d, d, d, d};
      if constexpr (softcap) ls[j] = l * c;
      if constexpr (alibi) {
        const float qp = slope * float(rt_acc<16, WQ>::col_of(j, lane, 0));
        L[j] = f32x4{l - qp, l - qp, l - qp, l - qp}, LR[j] = f32x4{l + qp, l + qp, l + qp, l + qp};
      }
    }
  }
  f32x4 dq[D / 16][WQ / 16];  // dQ^T in the AGPRs (16 x 16 tiles: D tile, query tile)
#pragma unroll
  for (int i = 0; i < D / 16; ++i)
#pragma unroll
    for (int j = 0; j < WQ / 16; ++j) {
      dq[i][j] = f32x4{0.f, 0.f, 0.f, 0.f};
      asm volatile("" : "+a"(dq[i][j]));
    }
  wait_vmcnt<0>();
  barrier();

  // The MFMAs' A operands read from the stage (HeldFrags, keys64's reads): K's and V's row fragments (16-row tile, D
  // chunk) and K's acc-order column fragments (D tile, of a chunk's 32 rows).
  static_assert(KT::swizzle(32) == 0, "dq64: a chunk's 32 rows share the swizzle of the tile's first");
  const HeldFrags<T, KT, A> frags(lane);
  F fr[3];  // the fragment ring: group g's fragment in fr[g % 3] (24 groups a body), read two groups ahead
  f32x4 S[2][2][4], dP[2][2][4];  // S^T (P^T), dP^T by the chunk's parity: (key tile of the chunk, query tile)
  // (The first body's dS^T(-1) from zeros: of the registers' stale bits it could be a NaN, times stage 2's zero K.)
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) S[1][i][j] = f32x4{0.f, 0.f, 0.f, 0.f}, dP[1][i][j] = f32x4{0.f, 0.f, 0.f, 0.f};
  uint32_t dsb[WQ / 16][4] = {};  // dS^T(c - 1) in bf16 pairs, dQ^T's B operand (acc order), by query tile
  // dropout: the keep words of a chunk by its parity (query tile, key tile of the chunk: AttnDropCall::keep), the
  // stream, attn_dropout_drop's constants.
  using DropCall = AttnDropCall<true, rt_acc<32, WQ>>;
  [[maybe_unused]] uint32_t kw[2][dropout ? WQ / 16 : 1][2] = {};  // (the first body's dS^T(-1): P^T 0, every score dropped)
  [[maybe_unused]] uint32_t s_lo = 0, s_hi = 0;
  if constexpr (dropout) DropCall::stream(p, blk.b, blk.h, s_lo, s_hi);
  [[maybe_unused]] const auto rkeys = [&] {  // (the rounds' keys in VGPRs: 12 SALU a chunk fewer)
    if constexpr (dropout) return typename DropCall::Keys(p);
    else return AttnDropNoKeys{};
  }();
  [[maybe_unused]] const uint32_t d_all = dropout ? (255u - p.drop.keep_max) * 0x01010101u : 0u,
                                  d_low = dropout ? ((255u - p.drop.keep_max) & 0x7fu) * 0x01010101u : 0u;
  fr[0] = frags.row(stage0.k, 0, 0), fr[1] = frags.row(stage0.k, 0, 1);
  const int off = int(view.off);

  // The chunks whose first key kj needs no mask (attn_tile_whole's bounds solved for kj, the wave's queries all
  // inside the sequence): kj in [whole_lo, whole_hi], found once, so that a chunk tests itself with two compares.
  int whole_lo = p.left < 0 ? 0 : q0 + WQ - 1 + off - p.left, whole_hi = blk.sk - KC;
  if (p.right >= 0) whole_hi = std::min(whole_hi, q0 + off + p.right - (KC - 1));
  if (q0 + WQ > blk.sq) whole_hi = whole_lo - 1;
  // Body: chunk ch of the tile in stage st (key tile kt): S^T(c), dQ^T(c - 1), dP^T(c).
  // alibi: the lane's key row in a key tile (of the MFMA's layout), less q0 + off.
  [[maybe_unused]] const float rbase = float(rt_acc<16, WQ>::row_lane_part(lane) - q0 - off);
  auto body = [&]<int st, int ch>(int kt, int side) __attribute__((always_inline)) {
    constexpr int nx = (st + 1) % 3, pv = (st + 2) % 3, b = ch, pb = ch ^ 1;
    Stage &cur = stages.template operator()<st>(), &next = stages.template operator()<nx>(),
          &prev = stages.template operator()<pv>();
    const KT& dk_src = ch == 0 ? prev.k : cur.k;  // dQ^T(c - 1)'s K: the previous chunk's
    constexpr int dk_row0 = ch == 0 ? KC : 0;
    const int kj = kt * BK + ch * KC;
    const bool more = kt + 1 < kt_end;
    // Whether the chunk masks S^T (not whole, or past the last tile): found at MFMA dq64::mask_at as a scalar int (as
    // the bools they were, found ahead of the body with a short circuit, LLVM carried them as lane masks, negated one
    // by VALU and branched twice: about 40 cycles of the matrix core a chunk).
    int masked = 0;
    // alibi: minus the key's part of the bias (c units), by key tile and element: slc (j - q0 - off), exp2's
    // multiply-add (0 on a masked chunk); S^T's start by query tile (the right of the diagonal's or L).
    [[maybe_unused]] float na[2][4];
    [[maybe_unused]] f32x4 Ls[WQ / 16];
    if constexpr (alibi) {
      const float slc = side == 1 ? slope * c : side == 2 ? -slope * c : 0.f, nb = fmaf(slc, rbase, slc * float(kj));
#pragma unroll
      for (int kk = 0; kk < 2; ++kk)
#pragma unroll
        for (int e = 0; e < 4; ++e) na[kk][e] = fmaf(slc, float(rt_acc<16, WQ>::row_tile_part(0, e) + 16 * kk), nb);
#pragma unroll
      for (int q = 0; q < WQ / 16; ++q) Ls[q] = side == 2 ? LR[q] : L[q];
    }
    using f2 = float __attribute__((ext_vector_type(2)));
    [[maybe_unused]] AttnCapTile cap[2];  // softcap: two query tiles' u and f(u)
    [[maybe_unused]] float pa[2];      // softcap: a pair's exp2 arguments, then P^T
    [[maybe_unused]] DropCall dcall[dropout ? 2 : 1];  // dropout: the chunk's two calls
    [[maybe_unused]] uint32_t dt[dropout ? 2 : 1][4];
    auto event = [&]<int ev>() __attribute__((always_inline)) {
      if constexpr (ev < 96) {
        constexpr int m = ev, grp = m / 4, qt = m % 4;
        // The next tile's K and V straight-line (past the last tile an empty buffer range; keys past the sequence's
        // end zero by the range check): with the inside test and `if (more)`, one branchy run at the tile's start,
        // the matrix core waited about 260 cycles a tile.
        if constexpr (ch == 0 && m >= dq64::fill_at[0] && m < dq64::fill_at[0] + async_loads<G, KT>)
          load_async_inside_part<G, m - dq64::fill_at[0], 1>(next.k, view.k, {0, 0, kt + 1, 0}, dma_wave, more);
        if constexpr (ch == 0 && m >= dq64::fill_at[1] && m < dq64::fill_at[1] + async_loads<G, KT>)
          load_async_inside_part<G, m - dq64::fill_at[1], 1>(next.v, view.v, {0, 0, kt + 1, 0}, dma_wave, more);
        if constexpr (ch == 1 && m == dq64::barrier_at) wait_vmcnt<0>(), barrier();
        if constexpr (m == dq64::mask_at && !softcap) {  // (sign bits, opaque: no bool for LLVM to make a lane mask of)
          masked = alibi ? (side == 0 ? -1 : 0) : ((kt_end - 1 - kt) | (kj - whole_lo) | (whole_hi - kj)) >> 31;
          pin_uniform(masked);
        }
        if constexpr (qt == 0) {  // the ring's read two groups ahead (past the body's end: the next body's first)
          constexpr int f = grp + 2, slot = f % 3;
          if constexpr (f < 8) fr[slot] = frags.row(cur.k, 2 * ch + f / 4, f % 4);
          else if constexpr (f < 16) fr[slot] = frags.col(dk_src, f - 8, dk_row0);
          else if constexpr (f < 24) fr[slot] = frags.row(cur.v, 2 * ch + (f - 16) / 4, f % 4);
          else if constexpr (ch == 0) fr[slot] = frags.row(cur.k, 2, f - 24);
          else fr[slot] = frags.row(next.k, 0, f - 24);
        }
        const F x = fr[grp % 3];
        if constexpr (grp < 8) {
          constexpr int kk = grp / 4, dc = grp % 4;
          if constexpr (dc == 0 && softcap) A::first0_ba(S[b][kk][qt], x, qf[qt][dc]);
          else if constexpr (dc == 0) A::first_ba(S[b][kk][qt], x, qf[qt][dc], alibi ? Ls[qt] : L[qt]);
          else A::into_vgpr_ba(S[b][kk][qt], x, qf[qt][dc]);
        } else if constexpr (grp < 16) {
          if constexpr (m == 32) asm volatile("s_nop 1");  // (dS^T's last converts: a VALU write of the B operand)
          A::into_agpr(dq[grp - 8][qt], x, __builtin_bit_cast(F, dsb[qt]));
        } else {
          constexpr int kk = (grp - 16) / 4, dc = grp % 4;
          if constexpr (dc == 0 && dropout) A::first0_ba(dP[b][kk][qt], x, df[qt][dc]);  // (dropout: nd joins dS^T's)
          else if constexpr (dc == 0) A::first_ba(dP[b][kk][qt], x, df[qt][dc], nd[qt]);
          else A::into_vgpr_ba(dP[b][kk][qt], x, df[qt][dc]);
        }
      } else {
        constexpr int t = ev - 96;
        if constexpr (t < 32) {  // dS^T(c - 1) = P^T (dP^T - delta): pair w (key tile, query tile, pair)
          constexpr int w = t % 16, kk = w / 8, qt = (w % 8) / 2, j = (w % 2) * 2;
          if constexpr (t < 16) {
            const f2 y = f2{S[pb][kk][qt][j], S[pb][kk][qt][j + 1]} * f2{dP[pb][kk][qt][j], dP[pb][kk][qt][j + 1]};
            dP[pb][kk][qt][j] = y.x, dP[pb][kk][qt][j + 1] = y.y;
          } else {
            dsb[qt][kk * 2 + j / 2] = attn_pair<T>(dP[pb][kk][qt][j], dP[pb][kk][qt][j + 1]);
            pin(dsb[qt][kk * 2 + j / 2]);  // (pinned here: else sunk past the mask's branch)
          }
        } else if constexpr (softcap ? dq64::sc::task_of(t).k == dq64::sc::task::mask : dq64::task_of(t).k == dq64::task::mask) {
          // (a branch, taken on few chunks; softcap: the hidden scores' -inf then -1e18: P^T 0, and with the slope 1 - t^2
          // finite no NaN, 0 times it)
          constexpr int kk = softcap ? dq64::sc::task_of(t).kk : dq64::task_of(t).kk;
          if constexpr (!softcap) {
            pin_uniform(masked);  // (each task its own test: one, LLVM kept as a lane mask for the second)
          }
          // (softcap: the test a bool, as before the sign bits: with them LLVM copied S^T's tiles at the branch's join,
          // 192 v_mov_b64 an instance, dQ 53.63 -> 55.58 ms)
          if (softcap ? (kt >= kt_end) | (kj < whole_lo) | (kj > whole_hi) : masked != 0) {
            if (kt >= kt_end) {
#pragma unroll
              for (int q = 0; q < 4; ++q) S[b][kk][q] = f32x4{} - INFINITY;
            } else {
              rt_acc<16, WQ> sm;
#pragma unroll
              for (int q = 0; q < 4; ++q)
#pragma unroll
                for (int e = 0; e < 4; ++e) sm.data[0][q][e] = S[b][kk][q][e];
              if constexpr (alibi) {  // (the start L's query part -slope (i - q0) undone, the bias element by element)
                add_alibi<true>(sm, slope, q0, kj + 16 * kk, off);
#pragma unroll
                for (int q = 0; q < 4; ++q)
#pragma unroll
                  for (int e = 0; e < 4; ++e) sm.data[0][q][e] += slope * float(rt_acc<16, WQ>::col_of(q, lane, e));
              }
              mask_visible<true>(sm, p, q0, kj + 16 * kk, blk.sq, blk.sk, off);
#pragma unroll
              for (int q = 0; q < 4; ++q)
#pragma unroll
                for (int e = 0; e < 4; ++e) S[b][kk][q][e] = sm.data[0][q][e];
            }
            if constexpr (softcap)
#pragma unroll
              for (int q = 0; q < 4; ++q)
#pragma unroll
                for (int e = 0; e < 4; ++e) S[b][kk][q][e] = fmaxf(S[b][kk][q][e], -1e18f);
          }
        } else if constexpr (softcap) {
          constexpr dq64::sc::task k = dq64::sc::task_of(t);
          constexpr int kk = k.kk, qt = k.qt;
          using K = dq64::sc::task;
          static_assert(k.k != K::mask);
          if constexpr (k.k <= K::cap_sign) {
            constexpr int step = k.k == K::cap_mul ? 0 : k.k == K::cap_exp ? 1 + k.i : k.k == K::cap_poly ? 5 + k.i : 11;
            cap[qt % 2].template run<step>(S[b][kk][qt], ck);
          } else {
            constexpr int j = (k.i % 2) * 2;
            if constexpr (k.k == K::arg) {  // c t - LSE log2(e)
              pa[0] = fmaf(S[b][kk][qt][j], c, ls[qt]), pa[1] = fmaf(S[b][kk][qt][j + 1], c, ls[qt]);
              pin(pa[0], pa[1]);
            } else if constexpr (k.k == K::exp_lo || k.k == K::exp_hi) {
              constexpr int i = k.k == K::exp_lo ? 0 : 1;
              pa[i] = __builtin_amdgcn_exp2f(pa[i]);
              pin(pa[i]);
            } else {  // P^T (1 - t^2)
              const f2 y = AttnCapTile::slope(f2{pa[0], pa[1]}, f2{S[b][kk][qt][j], S[b][kk][qt][j + 1]});
              S[b][kk][qt][j] = y.x, S[b][kk][qt][j + 1] = y.y;
            }
          }
        } else {  // P^T of key tile kk: pair e's exp2 argument, or one of its exp2s
          constexpr dq64::task k = dq64::task_of(t);
          constexpr int kk = k.kk, qt = k.e / 2, j = (k.e % 2) * 2;
          if constexpr (k.k == dq64::task::arg) {
            S[b][kk][qt][j] = alibi ? fmaf(S[b][kk][qt][j], c, na[kk][j]) : S[b][kk][qt][j] * c;
            asm volatile("" : "+v"(S[b][kk][qt][j]));  // (hk::pin: no reference binds a vector element)
            S[b][kk][qt][j + 1] = alibi ? fmaf(S[b][kk][qt][j + 1], c, na[kk][j + 1]) : S[b][kk][qt][j + 1] * c;
            asm volatile("" : "+v"(S[b][kk][qt][j + 1]));
          } else {
            constexpr int i = k.k == dq64::task::exp_lo ? j : j + 1;
            S[b][kk][qt][i] = __builtin_amdgcn_exp2f(S[b][kk][qt][i]);
            asm volatile("" : "+v"(S[b][kk][qt][i]));
          }
        }
      }
    };
    // dropout: the plan's events, the plain's (MFMAs, P^T's and dS^T's tasks: event's) and its own.
    auto drop_event = [&]<int ev>() __attribute__((always_inline)) {
      if constexpr (ev < 96) {
        event.template operator()<ev>();
      } else {
        using K = dq64::dr::task;
        constexpr K k = dq64::dr::task_of(ev - 96);
        if constexpr (k.k == K::ds_mul) {  // Pd dP^T + P^T nd: pair w (key tile, query tile, pair)
          constexpr int w = k.i, kk = w / 8, qt = (w % 8) / 2, j = (w % 2) * 2;
          const uint32_t kw_ = kw[pb][qt][kk];
          const float x0 = S[pb][kk][qt][j], x1 = S[pb][kk][qt][j + 1];
          float y[2];
          attn_drop_ds(y, {x0, x1}, {attn_drop_min<j>(x0, kw_), attn_drop_min<j + 1>(x1, kw_)},
                       {dP[pb][kk][qt][j], dP[pb][kk][qt][j + 1]}, {nd[qt][j], nd[qt][j + 1]});
          dP[pb][kk][qt][j] = y[0], dP[pb][kk][qt][j + 1] = y[1];
        } else if constexpr (k.k == K::ds_cvt) {
          event.template operator()<96 + 16 + k.i>();
        } else if constexpr (k.k == K::p) {
          event.template operator()<96 + k.i>();
        } else if constexpr (k.k == K::round) {
          if constexpr (k.i == 0) dcall[0].start(s_lo, s_hi, q0, kj, 0), dcall[1].start(s_lo, s_hi, q0, kj, 1);
          uint32_t k0, k1;
          rkeys.template get<k.i>(p, k0, k1);
          dcall[0].template round<k.i>(k0, k1), dcall[1].template round<k.i>(k0, k1);
        } else if constexpr (k.k == K::quad) {
          DropCall::template quad<k.i>(dcall[0], dcall[1], dt);
        } else {  // run 4 g + i of call g: key tile i % 2 of the chunk, query tile 2 g + i / 2
          constexpr int g = k.i / 4, i = k.i % 4;
          kw[b][2 * g + i / 2][i % 2] = DropCall::keep(dcall[g].x[i], d_low, d_all);
        }
      }
    };
    if constexpr (dropout) run_schedule<dq64::dr::plan>(drop_event);
    else if constexpr (softcap) run_schedule<dq64::sc::plan>(event);
    else run_schedule<dq64::plan>(event);
  };
  // alibi: a chunk's side of the diagonal (1 left, 2 right, 0 masked: crossed by it, or not whole).
  auto side_of = [&](int kj, bool masked) __attribute__((always_inline)) {
    const bool left = kj + KC - 1 - q0 - off <= 0, right = kj - (q0 + WQ - 1) - off >= 0;
    return masked ? 0 : left ? 1 : right ? 2 : 0;
  };
  auto run = [&]<int st>(int kt) __attribute__((always_inline)) {
    const int kj = kt * BK;
    if constexpr (alibi) {
      const bool past = kt >= kt_end;
      body.template operator()<st, 0>(kt, side_of(kj, past | (kj < whole_lo) | (kj > whole_hi)));
      body.template operator()<st, 1>(kt, side_of(kj + KC, past | (kj + KC < whole_lo) | (kj + KC > whole_hi)));
    } else {
      body.template operator()<st, 0>(kt, 0);
      body.template operator()<st, 1>(kt, 0);
    }
  };
  for (int kt = kt_begin; kt <= kt_end; kt += 3) {
    run.template operator()<0>(kt);
    run.template operator()<1>(kt + 1);
    run.template operator()<2>(kt + 2);
  }
  A::mfma_drain();
  rt_acc<D, WQ> dqt;
#pragma unroll
  for (int i = 0; i < D / 16; ++i)
#pragma unroll
    for (int j = 0; j < WQ / 16; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) dqt.data[i][j][e] = dq[i][j][e];
  const auto dq_view = head_view<T, D>(a.dq, a.dq_bs, a.dq_rs, a.dq_hs, blk.b, varlen, blk.q_start, blk.h, blk.sq);
  rt<float, WQ, D, layout::row> out;
  transpose<lane_anew>(out, dqt);
  store_bounded<lane_anew>(dq_view, out, {0, 0, row_tile, 0}, dropout ? p.scale * p.drop.scale : p.scale);
}

}  // namespace hk::kernels
