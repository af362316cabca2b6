// Kernel 2 at 64 keys a wave (gfx950, D = 128, the plain, ALiBi, softcap and dropout variants, one feature at a
// time). Included by attention_bwd.h, whose attention_bwd_dkdv runs it for those instances.
//
// Schedule. Four waves a workgroup, 256 keys, one wave per SIMD (one workgroup a CU), each wave owning 64 keys: K in
// 64 VGPRs, V in the LDS (64 KiB, read as dP's B operand a few MFMAs ahead: with V in registers too the loop was
// 30-80 VGPRs short and reloaded K and V from scratch), dK^T and dV^T (2 x 128 x 64 fp32) in the 256 AGPRs, every LDS
// fragment of a 32-query step serving 64 keys' MFMAs (twice the pairs'). LLVM 21 selects every builtin MFMA's AGPR
// form at one wave per SIMD, so the products are inline asm (arch::current::into_agpr, into_vgpr, first), and with no
// other wave on the SIMD to hide its VALU work the order of the step is set here, not by LLVM (which does not know an
// asm MFMA's latency): a compile-time list schedule (ops/schedule.h) puts the step's VALU tasks (P's scale, exp2s
// and converts, dS's unpacks, multiplies and converts) between its 128 MFMAs: a credit of 20 cycles of the vector
// unit an MFMA, capped at 40 (16 / 32: 0.3% slower), an exp2 (16 cycles: the vector unit busy past the next MFMA's
// issue) alone and first after its MFMA, each task's result pinned where it runs (hk::pin: LLVM sank P's and dS's
// work past the body's branches, into two bursts a body) and read a task or an MFMA after it (LLVM pads a read that
// follows at once with an s_nop). Their dependences would leave the matrix core idle at the step's start (the VALU
// waits for S) and end (dK^T waits for dS), so the step is skewed:
// body n runs S(n), dK^T(n - 1), dP(n), dV^T(n), and dS(n) crosses into body n + 1 as bf16 pairs (three stages of Q
// and dO, so that body n can still read step n - 1's Q: the stages are three LDS variables and the bodies go in
// threes, so that no read waits for the loads into another stage). Step n + 1's rows and flags are found under body n's
// first MFMA and its loads go out, straight-line, at MFMAs 2, 3 and 6 (keys64::ahead_at, fill_at); its
// barrier sits at MFMA 116 of 128, the next body's first fragments and LSE read under the last dV^T MFMAs. A step
// whose tile crosses a query's visible range (or the sequence's end) runs a second instance of the body that masks S
// before P. The scalar work of a step is lean: the next head's rows by strides, the whole-tile test an interval found
// once, the LSE / delta store one multiply. The timing experiment this came from: branch agpr64-wip, docs/design.md
// ("64 keys a wave").
// ALiBi (template parameter alibi): on a tile whole and wholly on one side of the diagonal the bias -slope |d| is
// linear, sl (j - first_key) + sl (first_key - i - off) (sl = slope left of it, -slope right): the query's part joins
// S's start (wave 0 stores the stage's two bias rows next to the LSE's, and the body reads its side's), the key's is
// exp2's multiply-add operand in P's multiply task (a register a key tile, 4 VALU a body). A tile the diagonal crosses
// (or masked) runs the masked body, from the plain start, with the bias element by element. The next step's slope
// (its head's: the head advances where the query tile wraps) is loaded beside its LSE, a scalar from the next body.
// Softcap (template parameter softcap): S starts from 0 and the cap's steps are tasks of the schedule (namespace sc
// below: the scores capped, the mask, P from c t - LSE log2 e, P (1 - t^2) for dS), as the forward caps.
// Dropout (template parameter dropout): the forward's keep decisions regenerated in the schedule's tasks (namespace dr
// below: a step's two Philox calls a lane, made under the body's first MFMAs, whose VALU is idle; AttnDropCall), P
// dropped on its way into dV^T (its bf16 pairs masked), dP from 0 and dS / (1 - p) = Pd dP + P nd (Pd: P dropped, nd =
// -delta (1 - p); dS = P (keep dP / (1 - p) - delta)); dK and dV take 1 / (1 - p) at their stores.
#pragma once
#include "attention_bwd_frags.h"
#include "hk/ops/schedule.h"

namespace hk::kernels {

namespace keys64 {
constexpr int steps_q = 32;  // queries a step
// A body's MFMAs: 0-31 S(n) = Q K^T (Q's row fragment (qt, dc) = m / 4, key tile kt = m % 4), 32-63 dK^T(n - 1) +=
// Q^T dS (Q^T's acc-order fragment dt = m / 4 - 8), 64-95 dP(n) = dO V^T - delta (D chunk dc = (m - 64) / 8 outer,
// query tile (m / 4) % 2, key tile m % 4 inner: each V fragment serves both query tiles, four MFMAs apart, so V is read
// 16 times a body, not 32), 96-127 dV^T(n) += dO^T P.
// Its tasks, per query tile q (0, then 1): one masking S's tile where the step crosses a query's visible range (a
// branch, taken on few steps), then 32 for P, four a pair of scores (the pair times scale_log2 in one packed multiply,
// one exp2, the other exp2, the pair's convert); then 32 for dS, two a pair (P's pair unpacked and multiplied by dP's,
// the convert). The order keeps every read of a task's result a task or more behind it (or an MFMA: LLVM pads the
// gap with s_nop where the reader follows at once: 47 a body with each pair's four in a row, the packed multiply a
// two-pass instruction): P's multiplies three pairs ahead of their exp2s, each convert after the next pair's first
// exp2 (the last two after the last exp2), and dS's converts a pair behind their multiplies.
struct task {
  enum kind : unsigned char { mask, mul, exp_lo, exp_hi, cvt, ds_mul, ds_cvt } k;
  int q, e;  // query tile, pair (0-7: key tile e / 2, scores 2 (e % 2) and 2 (e % 2) + 1 of the lane's four)
};
constexpr task::kind p_order[32] = {task::mul,    task::mul,    task::mul,    task::exp_lo, task::mul,    task::exp_hi,
                                    task::exp_lo, task::mul,    task::cvt,    task::exp_hi, task::exp_lo, task::mul,
                                    task::cvt,    task::exp_hi, task::exp_lo, task::mul,    task::cvt,    task::exp_hi,
                                    task::exp_lo, task::mul,    task::cvt,    task::exp_hi, task::exp_lo, task::cvt,
                                    task::exp_hi, task::exp_lo, task::cvt,    task::exp_hi, task::exp_lo, task::exp_hi,
                                    task::cvt,    task::cvt};
constexpr int tasks = 98;
constexpr task task_of(int t) {
  if (t == 0 || t == 33) return {task::mask, t == 0 ? 0 : 1, 0};
  if (t < 66) {
    const int q = t < 33 ? 0 : 1, i = t - 1 - 33 * q;
    int n = 0;  // tasks of this kind before i: the pair
    for (int j = 0; j < i; ++j) n += p_order[j] == p_order[i];
    return {p_order[i], q, n};
  }
  const int i = t - 66;  // dS: mul 0, mul 1, cvt 0, mul 2, cvt 1, ..., mul 15, cvt 14, cvt 15 (pair 8 q + e)
  const int w = i == 0 ? 0 : i == 31 ? 15 : i % 2 ? (i + 1) / 2 : i / 2 - 1;
  const bool is_mul = i == 0 || (i < 31 && i % 2 == 1);
  return {is_mul ? task::ds_mul : task::ds_cvt, w / 8, w % 8};
}
constexpr int cost(int t) {  // cycles of the vector unit (v_exp_f32: 16, a multiply or a convert 4)
  const task k = task_of(t);
  return k.k == task::exp_lo || k.k == task::exp_hi ? 16 : k.k == task::ds_mul ? 16 : k.k == task::mul ? 8 : 4;
}
// Three MFMAs after the last of the tile it reads (the asm MFMAs' hazard: arch::current::into_vgpr).
constexpr int ready(int t) {
  const task k = task_of(t);
  if (k.k >= task::ds_mul) return k.q == 0 ? 95 : 99;
  return k.q == 0 ? 19 : 35;
}
// A query tile's P before its dP MFMAs (dP's accumulators then take S's registers: the loop's peak otherwise held
// both, about 32 VGPRs more than a wave has next to K and V), and all of P before dV^T.
constexpr int needs(int m) { return m >= 68 ? 66 : m >= 64 ? 33 : 0; }
inline constexpr auto plan = make_schedule<128, tasks>(cost, ready, needs, 20, 40, 16);
constexpr int barrier_at = 116;  // MFMA of the step's barrier
constexpr int ahead_at = 1, fill_at[2] = {3, 6}, mask_at = 9;  // MFMAs of the next step's scalar work and loads, the mask test
// softcap: per query tile q, S's capping (AttnCapTile's 12 steps a key tile), the mask, then P's 8 pairs in 6 tasks
// each: the exp2 argument (c t - LSE log2(e), two multiply-adds into a pair of temporaries), two exp2s, P's convert
// (dV^T's operand), P (1 - t^2) (a packed multiply-add and a packed multiply) and its convert (dS's operand: S's
// registers are dP's after the tile's tasks, t gone); then dS's tasks as the plain's, from P (1 - t^2).
namespace sc {
struct task {
  enum kind : unsigned char { cap, mask, arg, exp_lo, exp_hi, cvt, slope, pcvt, ds_mul, ds_cvt } k;
  int q, kt, i;  // query tile, key tile, cap's step or the pair (0-7: key tile i / 2, scores 2 (i % 2) and + 1)
};
constexpr int cap_tasks = 4 * AttnCapTile::steps, p_tasks = 48, q_tasks = cap_tasks + 1 + p_tasks;
constexpr int tasks = 2 * q_tasks + 32;
// P's order, a query tile: pair 0's argument; per pair e: its first exp2, pair e + 1's argument, its second exp2, then
// pair e - 1's convert, slope and convert (its exp2s a task or more behind); pair 7's last.
constexpr task p_task(int q, int u) {
  int n = 0;
  task out{};
  auto put = [&](task::kind k, int e) {
    if (n++ == u) out = {k, q, e / 2, e};
  };
  put(task::arg, 0);
  for (int e = 0; e < 8; ++e) {
    put(task::exp_lo, e);
    if (e < 7) put(task::arg, e + 1);
    put(task::exp_hi, e);
    if (e > 0) put(task::cvt, e - 1), put(task::slope, e - 1), put(task::pcvt, e - 1);
  }
  put(task::cvt, 7), put(task::slope, 7), put(task::pcvt, 7);
  return out;
}
constexpr task task_of(int t) {
  if (t < 2 * q_tasks) {
    const int q = t / q_tasks, r = t % q_tasks;
    if (r < cap_tasks) {  // (two key tiles' steps interleaved: two chains each)
      const int g = r / (2 * AttnCapTile::steps), rr = r % (2 * AttnCapTile::steps);
      return {task::cap, q, 2 * g + rr % 2, rr / 2};
    }
    if (r == cap_tasks) return {task::mask, q, 0, 0};
    return p_task(q, r - cap_tasks - 1);
  }
  const keys64::task k = keys64::task_of(66 + t - 2 * q_tasks);
  return {k.k == keys64::task::ds_mul ? task::ds_mul : task::ds_cvt, k.q, k.e / 2, k.e};
}
constexpr int cost(int t) {
  const task k = task_of(t);
  return k.k == task::mask || k.k == task::cvt || k.k == task::pcvt || k.k == task::ds_cvt ? 4 : k.k == task::arg ? 8 : 16;
}
constexpr int ready(int t) {
  const task k = task_of(t);
  if (k.k >= task::ds_mul) return k.q == 0 ? 95 : 99;
  if (k.k == task::cap) return 16 * k.q + 16 + k.kt;
  return k.q == 0 ? 19 : 35;
}
constexpr int needs(int m) { return m >= 68 ? 2 * q_tasks : m >= 64 ? q_tasks : 0; }
inline constexpr auto plan = make_schedule<128, tasks>(cost, ready, needs, 20, 40, 16);
}  // namespace sc
// dropout: the keep words first (both query tiles' Philox calls, one a tile a lane, side by side: 7 rounds, each
// call's bytes spread, the quads' transposes in four phases, the 8 words: AttnDropCall), made before S is ready (the
// body's first MFMAs have no other VALU work); then the plain's P tasks (P whole, for dS); then P dropped for dV^T (a
// pair's bf16 masked, 2 VALU, any time before dV^T); dS's tasks by key tile (two pairs): P and Pd unpacked, then a task
// later Pd dP + P nd (dP from 0, nd = -delta (1 - p); the two pairs' packed multiplies interleaved: LLVM pads a packed
// result read by the next instruction with an s_nop), the converts a task after that.
namespace dr {
struct task {
  enum kind : unsigned char { round, spread, quad, word, p, pdrop, ds_unpack, ds_fma, ds_cvt } k;
  int q, i;  // query tile; the round, the phase, the word (key tile), the plain's task or the pair (8 q + e)
};
constexpr int ph_tasks = attn_dropout_rounds + 2 + 4 + 8, tasks = ph_tasks + 66 + 16 + 32;
constexpr task task_of(int t) {
  if (t < ph_tasks) {
    if (t < attn_dropout_rounds) return {task::round, 0, t};
    t -= attn_dropout_rounds;
    if (t < 2) return {task::spread, t, 0};
    if (t < 6) return {task::quad, 0, t - 2};
    return {task::word, (t - 6) / 4, (t - 6) % 4};
  }
  t -= ph_tasks;
  if (t < 66) return {task::p, 0, t};
  t -= 66;
  if (t < 16) return {task::pdrop, t / 8, t};
  t -= 16;  // dS by key tile g (8 q + 2 kt: its two pairs): g's unpacking, g - 2's first convert, g - 1's multiplies,
            // g - 2's second convert
  int n = 0;
  for (int g = 0; g < 10; ++g) {
    if (g < 8 && n++ == t) return {task::ds_unpack, g / 4, 2 * g};
    if (g >= 2 && n++ == t) return {task::ds_cvt, (g - 2) / 4, 2 * (g - 2)};
    if (g >= 1 && g < 9 && n++ == t) return {task::ds_fma, (g - 1) / 4, 2 * (g - 1)};
    if (g >= 2 && n++ == t) return {task::ds_cvt, (g - 2) / 4, 2 * (g - 2) + 1};
  }
  return {};
}
constexpr int cost(int t) {  // (an instruction's issue, VALU or SALU: 4 cycles)
  const task k = task_of(t);
  switch (k.k) {
    case task::round: return k.i == 0 ? 24 : 40;
    case task::spread: case task::quad: return 24;
    case task::word: case task::pdrop: return 12;
    case task::p: return keys64::cost(k.i);
    case task::ds_unpack: return 32;
    case task::ds_fma: return 20;
    default: return 4;
  }
}
constexpr int ready(int t) {
  const task k = task_of(t);
  if (k.k <= task::word) return 0;
  if (k.k == task::p) return keys64::ready(k.i);
  if (k.k == task::pdrop) return k.q == 0 ? 19 : 35;
  return k.q == 0 ? 95 : 99;
}
constexpr int needs(int m) { return m >= 96 ? ph_tasks + 82 : m >= 68 ? ph_tasks + 66 : m >= 64 ? ph_tasks + 33 : 0; }
// (credit 28, capped at 56: dK/dV 58.67 -> 57.74 ms against the plain's 20 / 40; dq64's dropout plan slower so)
inline constexpr auto plan = make_schedule<128, tasks>(cost, ready, needs, 28, 56, 16);
}  // namespace dr
}  // namespace keys64

// (A: the arch, a template parameter so that the other arch's pass never looks up its asm MFMAs.)
// (alibi: the ALiBi instance, AttnVariant{.alibi = true}; the bias's parts as the pairs' alibi_rows: see above.)
// (softcap: the softcap instance, AttnVariant{.softcap = true}: see above.)
// (dropout: the dropout instance, AttnVariant{.dropout = true}: see above.)
template <class T, bool alibi = false, bool softcap = false, bool dropout = false, class A = arch::current>
__device__ __attribute__((always_inline)) inline void attention_bwd_dkdv_keys64(const AttnBwdArgs& a) {
  static_assert(int(alibi) + int(softcap) + int(dropout) <= 1, "keys64: one feature at a time");
  using G = group<4>;
  constexpr int D = 128, BQ = keys64::steps_q, WK = 64;
  // A stage: the step's Q and dO tiles and its LSE and delta rows; plain and softcap: the rows as stat[0] and stat[1],
  // a row of 64 a wave, each lane storing its slot (the lanes past the step's 32 queries and waves 2 and 3 into the
  // rest), so that the statistic's store takes no exec mask (with one, a branch around it and a jump back: about 30
  // cycles of the matrix core a body), its lanes in consecutive banks.
  struct Stage : AttnBwdStage<T, BQ, D, D, alibi> {
    [[no_unique_address]] std::conditional_t<alibi, AttnBwdNoBias, float[4][64]> stat;
  };
  auto lse_of = [](Stage& s) __attribute__((always_inline)) -> const float* {
    if constexpr (alibi) return &s.lse[0];
    else return s.stat[0];
  };
  auto delta_of = [](Stage& s) __attribute__((always_inline)) -> const float* {
    if constexpr (alibi) return &s.delta[0];
    else return s.stat[1];
  };
  using f32x4 = arch::f32x4;
  using F = std::conditional_t<std::same_as<T, bf16>, arch::bf16_frag, arch::f16_frag>;  // (detail::frag's)
  using VT = st<T, G::waves * 64, D>;  // the workgroup's V, each wave's 64 rows read as dP's B operand
  // (The stages' larger alignment places them first, below 64 KiB, so that their reads' stage and tile offsets fold
  // into the instructions' 16-bit offset fields: after V, every stage's reads held address registers of their own.)
  __shared__ __attribute__((aligned(32))) Stage stage0, stage1, stage2;
  __shared__ __attribute__((aligned(16))) VT vs;
  auto stages = [&]<int s>() __attribute__((always_inline)) -> Stage& {
    if constexpr (s == 0) return stage0;
    else if constexpr (s == 1) return stage1;
    else return stage2;
  };
  const AttnArgs& p = a.f;
  const AttnKeyBlock kb(a, G::waves * WK, BQ);
  const AttnBlock& blk = kb.blk;
  if (kb.first_key >= blk.sk) return;
  const bool varlen = p.cu_q != nullptr;
  const int wave = __builtin_amdgcn_readfirstlane(G::wave()), lane = lane_id(), g = lane / 16;
  const long k0 = kb.first_key + long(wave) * WK;
  const int key_tile = int(k0 / WK);
  // This wave's K (rows past the sequence's end zero), as S's B operands (key tile, D chunk); the workgroup's V into
  // the LDS (read as dP's B operands: K and V in registers left the loop 30-80 VGPRs short).
  F kf[WK / 16][D / 32];
  {
    rt<T, WK, D> k;
    load_bounded(k, head_view<T, D>(p.k, p.k_bs, p.k_rs, p.k_hs, blk.b, varlen, blk.k_start, blk.h_kv, blk.sk), {0, 0, key_tile, 0});
#pragma unroll
    for (int i = 0; i < WK / 16; ++i)
#pragma unroll
      for (int j = 0; j < D / 32; ++j) kf[i][j] = detail::frag(k.data[i][j]);
  }
  f32x4 dk[D / 16][WK / 16], dv[D / 16][WK / 16];  // dK^T, dV^T in the AGPRs (16 x 16 tiles)
#pragma unroll
  for (int i = 0; i < D / 16; ++i)
#pragma unroll
    for (int j = 0; j < WK / 16; ++j) {
      dk[i][j] = f32x4{0.f, 0.f, 0.f, 0.f}, dv[i][j] = f32x4{0.f, 0.f, 0.f, 0.f};
      asm volatile("" : "+a"(dk[i][j]), "+a"(dv[i][j]));
    }

  // The steps: every query tile [qt_begin, qt_end) of every query head of the group, heads outer.
  const int ratio = p.heads_q / p.heads_kv;
  const int steps = kb.qt_end > kb.qt_begin ? ratio * (kb.qt_end - kb.qt_begin) : 0;
  const float c = p.scale_log2;
  [[maybe_unused]] const float ck = softcap ? p.cap.k : 0.f;  // softcap: AttnCapTile's factor
  // dropout: attn_dropout_drop's constants of the keep decision (AttnDropCall::keep)
  [[maybe_unused]] const uint32_t d_all = dropout ? (255u - p.drop.keep_max) * 0x01010101u : 0u,
                                  d_low = dropout ? ((255u - p.drop.keep_max) & 0x7fu) * 0x01010101u : 0u;
  [[maybe_unused]] const auto rkeys = [&] {  // dropout: the Philox rounds' keys in VGPRs (no SALU a round)
    if constexpr (dropout) return typename AttnDropCall<false, rt_acc<16, WK>>::Keys(p);
    else return AttnDropNoKeys{};
  }();
  const async_wave<G> dma_wave;
  load_async<G>(vs, head_view<T, D>(p.v, p.v_bs, p.v_rs, p.v_hs, blk.b, varlen, blk.k_start, blk.h_kv, blk.sk), {0, 0, blk.tile, 0}, dma_wave);
  // A head's Q and dO rows and this wave's statistic (LSE: wave 0, delta: wave 1): the next step's are the step's plus
  // the heads' strides where the head changes (rebuilt from the head index, 64-bit multiplies a step).
  struct HeadRows {
    const T *q, *dout;
    const float* stat;
  };
  const int h = blk.h_kv * ratio;  // the first step's head
  int qt = kb.qt_begin;             // step n's query tile, n from the first
  HeadRows rows{head_view<T, D>(p.q, p.q_bs, p.q_rs, p.q_hs, blk.b, varlen, blk.q_start, h, blk.sq).at(0, 0, 0, 0),
                head_view<T, D>(a.dout, a.do_bs, a.do_rs, a.do_hs, blk.b, varlen, blk.q_start, h, blk.sq).at(0, 0, 0, 0),
                lse_row(p, dma_wave.index == 0 ? p.lse : a.delta, blk, h).at(0, 0, 0, 0)};
  // (The loads' lane parts are held through the loop: found in each body they cost about 20 VALU a body, 59.25 against
  // 57.79 ms.)
  // A step's Q or dO tile into a stage, straight-line (rows past the sequence's end zero by the buffer's range check;
  // past the last step nothing loaded), at keys64::fill_at of the body: with the tile's inside test and the step's, two
  // branches, in one burst at the body's start, the matrix core waited about 70 cycles longer a body (49.80 against
  // 49.49 ms).
  // (The step's query tile opaque where each use is: else LLVM found the tiles' offsets with the head's advance, in
  // both of its paths, one run of about 20 scalar instructions and two branches before MFMA 1.)
  auto fill = [&](const T* rows_of, long rs, int qt, auto& tile, bool active) __attribute__((always_inline)) {
    pin_uniform(qt);
    const auto x = gl<T, 1, 1, runtime_dim, D>(const_cast<T*>(rows_of), 1, 1, blk.sq, D, rs);
    load_async_inside<G>(tile, x, {0, 0, qt, 0}, dma_wave, active);
  };
  // LSE (wave 0) and delta (wave 1) of the step's queries, loaded at a body's start and stored into the next stage
  // before the body's barrier as the starts of S's and dP's accumulators: -LSE log2(e) / scale_log2, so that P =
  // exp2(scale_log2 S) with no subtraction and no LSE held in registers (a query that sees no key, LSE -inf, has
  // every score masked: any finite start does), and -delta: one multiply by the wave's factor.
  // (Every wave loads, with no branch; put stores waves 2's and 3's into their unread rows of stat (alibi: drops them).)
  auto stat = [&](const HeadRows& r, int qt, bool active) __attribute__((always_inline)) {
    pin_uniform(qt);
    const auto rsrc = arch::current::buffer_rsrc(r.stat, __builtin_amdgcn_readfirstlane(active ? blk.sq * 4 : 0));
    return __builtin_bit_cast(float, __builtin_amdgcn_raw_buffer_load_b32(rsrc, lane * 4, qt * BQ * 4, 0));
  };
  // (dropout: -delta (1 - p), dP's start; dK and dV scaled by 1 / (1 - p) at their stores)
  const float stat_factor = dma_wave.index == 0 ? -1.44269504088896341f / c : dropout ? -1.f / p.drop.scale : -1.f;
  // alibi: wave 0 stores, next to -LSE log2(e) / c, the starts of a tile wholly left (right) of the diagonal, with the
  // bias's query part t = slc (first_key - i - off) (slc: the step's slope times c): (t - LSE log2 e) / c ((-t - ..)).
  const float inv_c = 1.f / c;
  // (plain, softcap: the lane's slot in a stage's stat)
  [[maybe_unused]] int put_offset = 0;
  if constexpr (!alibi) {
    auto at = [&](const float* x) { return int(reinterpret_cast<const char*>(x) - reinterpret_cast<const char*>(&stage0)); };
    put_offset = at(&stage0.stat[dma_wave.index][lane]);
  }
  auto put = [&](Stage& s, float x, int qt_of = 0, float slc_of = 0.f) __attribute__((always_inline)) {
    if constexpr (alibi) {
      if (dma_wave.index == 0 && lane < BQ) {
        const float l = x == -INFINITY ? 0.f : x * 1.44269504088896341f;
        const float t = slc_of * float(int(kb.first_key) - (qt_of * BQ + lane) - int(kb.off));
        s.lse[lane] = -l * inv_c;
        s.bias_rows.left[lane] = (t - l) * inv_c;
        s.bias_rows.right[lane] = (-t - l) * inv_c;
      } else if (dma_wave.index == 1 && lane < BQ) {
        s.delta[lane] = -x;
      }
    } else if constexpr (softcap) {  // -LSE log2(e), exp2's addend (S starts from 0: capped before it)
      *reinterpret_cast<float*>(reinterpret_cast<char*>(&s) + put_offset) =
          dma_wave.index == 0 ? (x == -INFINITY ? 0.f : x * -1.44269504088896341f) : -x;
    } else {
      *reinterpret_cast<float*>(reinterpret_cast<char*>(&s) + put_offset) = fminf(x * stat_factor, __FLT_MAX__);
    }
  };
  // alibi: the slope of a head as the arguments hold it (a vector load, waited for with the stage's loads), the step's
  // as a scalar; a step's side of the diagonal (1 left, 2 right, 0 a tile the diagonal crosses or that is masked: the
  // masked body, the bias element by element), and the row its S starts from.
  const float slope_unit_c = alibi ? c / p.alibi_unit : 0.f, inv_unit = alibi ? 1.f / p.alibi_unit : 0.f;
  const auto slope_rsrc = arch::current::buffer_rsrc(alibi ? p.alibi + long(blk.b) * p.alibi_bs : nullptr, p.heads_q * 4);
  auto slope_load = [&](int hh) __attribute__((always_inline)) {
    return __builtin_bit_cast(float, __builtin_amdgcn_raw_buffer_load_b32(slope_rsrc, 0, hh * 4, 0));
  };
  auto uniform = [](float x) __attribute__((always_inline)) {
    return __builtin_bit_cast(float, __builtin_amdgcn_readfirstlane(__builtin_bit_cast(int, x)));
  };
  auto row_of = [&](Stage& s, int side, int i) __attribute__((always_inline)) {
    // (alibi: an offset from the stage's LSE row, not a choice of pointers: of that the compiler lost the stage's alias
    // scope and waited for the next stage's loads before the read, vmcnt(0): dK/dV causal 31.64 ms)
    if constexpr (alibi) {
      const float* l = &s.lse[0];
      const int o = side == 1 ? int(&s.bias_rows.left[0] - l) : side == 2 ? int(&s.bias_rows.right[0] - l) : 0;
      return *reinterpret_cast<const f32x4*>(l + o + i);
    } else {
      return *reinterpret_cast<const f32x4*>(&lse_of(s)[i]);
    }
  };
  auto advance = [&](int& tt, HeadRows& r) __attribute__((always_inline)) {
    if (++tt == kb.qt_end) tt = kb.qt_begin, r.q += p.q_hs, r.dout += a.do_hs, r.stat += p.lse_hs;
  };
  const auto whole = kb.whole(p, int(k0), WK, BQ);  // the steps whose tile needs no mask
  // Stage 2 (step -1's Q for body 0's dK^T, whose dS is zero) holds zeros, not NaNs.
  {
    auto* z = reinterpret_cast<uint4*>(&stage2.q);
    for (int i = int(threadIdx.x); i < int(sizeof(stage2.q) / 16); i += G::threads) z[i] = uint4{0, 0, 0, 0};
  }
  int head = h;           // alibi, dropout: step n's head
  float sraw = 0.f;       // alibi: its slope (raw)
  if constexpr (alibi)
    if (steps > 0) sraw = slope_load(h);
  fill(rows.q, p.q_rs, qt, stage0.q, steps > 0), fill(rows.dout, a.do_rs, qt, stage0.dout, steps > 0);
  put(stage0, steps > 0 ? stat(rows, qt, true) : dma_wave.index == 0 ? __builtin_inff() : 0.f, qt, sraw * slope_unit_c);
  wait_vmcnt<0>();
  barrier();

  // The MFMAs' A operands read from the stages and V (HeldFrags: the lane parts of the addresses held): Q's and dO's
  // row fragments (query tile, D chunk) and acc-order column fragments (D tile), V's row fragments (key tile of this
  // wave's rows: the swizzle has no bit above row 32's, so the wave's 64 rows start a run of its pattern).
  const HeldFrags<T, st<T, BQ, D>, A> frags(lane);
  static_assert(VT::swizzle(64) == 0 && VT::swizzle(128) == 0, "keys64: V's waves' rows share the swizzle");
  const int v_wave = wave * WK * D * int(sizeof(T));
  auto v_frag = [&](int kt, int dc) __attribute__((always_inline)) { return frags.row(vs, kt, dc, v_wave); };
  F vr[4];  // V's fragments by key tile: chunk dc's read after MFMA 4 + key tile of chunk dc - 1's (its last use)
  F fr[3];  // the fragment ring: group G's fragment in fr[(32 body + G) % 3], read two groups ahead
  f32x4 L[2], nd[2];  // S's start (-LSE / scale_log2) and dP's (-delta) of the lane's queries, by query tile
  uint32_t dsb[WK / 16][4] = {};  // dS(n - 1) in bf16 pairs, as dK^T's B operand (acc order), by key tile
  fr[0] = frags.row(stage0.q, 0, 0), fr[1] = frags.row(stage0.q, 0, 1);
  auto side_of = [&](int qi, bool act) __attribute__((always_inline)) {
    if constexpr (!alibi) return 0;
    const int kj = int(k0), off = int(kb.off);
    const bool w = (qi >= whole.lo) & (qi <= whole.hi);
    const bool left = kj + WK - 1 - qi - off <= 0, right = kj - (qi + BQ - 1) - off >= 0;
    return act & !(w & (left | right)) ? 0 : left ? 1 : right ? 2 : 0;
  };
  // alibi: the lane's key less first_key
  [[maybe_unused]] const float kbase = alibi ? float(rt_acc<16, WK>::col_of(0, lane, 0) + wave * WK) : 0.f;
  int side = alibi ? side_of(qt * BQ, steps > 0) : 0;
  L[0] = row_of(stage0, side, 4 * g);

  // Body n in stage st (n % 3): S(n), dK^T(n - 1), dP(n), dV^T(n). Past the last step P is zero (the stage's LSE
  // +inf, stored by the body before: no branch at the LSE's reads), so dV^T and dK^T gain zeros: the loop runs whole
  // threes of bodies up to the one of dK^T(steps - 1), with no branch around a product (the accumulators would cross it
  // as 256 phis, which LLVM splits into copies and spills).
  // The next step's rows, head and tests are found in the body too, at MFMA 1 (keys64::ahead_at), under MFMA 0 (ahead
  // of the body, in one run with the loads' scalar work, they left the matrix core idle about 130 cycles a body), and
  // this step's mask test at MFMA 9, before its first mask task.
  auto body = [&]<int st>(int n) __attribute__((always_inline)) {
    constexpr int nx = (st + 1) % 3, pv = (st + 2) % 3;
    const int cside = side;
    int nqt = qt, nhead = head, nside = 0;
    HeadRows nrows = rows;
    bool more = false;
    int masked = 0;  // the step's mask test (a sign: see keys64::mask_at's event)
    float nsraw = sraw;
    Stage &cur = stages.template operator()<st>(), &next = stages.template operator()<nx>(),
          &prev = stages.template operator()<pv>();
    f32x4 S[2][4], dP[2][4];
    uint32_t pb[WK / 16][4];
    float staged = 0.f;  // the next step's statistic as loaded (past the last step: LSE +inf, P zero; chosen at put)
    const int qi = qt * BQ, kj = int(k0), off = int(kb.off);
    // alibi: minus the key's part of the bias (c units), by key tile: exp2's multiply-add (0 in the masked body).
    [[maybe_unused]] float na[WK / 16];
    [[maybe_unused]] const float sl_s = alibi ? uniform(sraw) : 0.f;
    if constexpr (alibi) {
      const float slc = sl_s * slope_unit_c, sls = cside == 1 ? slc : cside == 2 ? -slc : 0.f;
#pragma unroll
      for (int kt = 0; kt < WK / 16; ++kt) na[kt] = fmaf(sls, kbase, sls * float(16 * kt));
    }
    // Query tile q's S masked (a branch, taken on few steps); softcap: the hidden scores' -inf then -1e18 (P 0, and
    // with the slope 1 - t^2 finite no NaN: 0 times it).
    auto mask_tile = [&]<int q>() __attribute__((always_inline)) {
      if constexpr (!softcap) {
        pin_uniform(masked);  // (each task its own test: one, LLVM kept as a lane mask for the second)
      }
      // (softcap: the test a bool, as before the sign bits: with them LLVM copied S's tiles at the branch's join, 96
      // v_mov_b64 an instance)
      if (softcap ? (n < steps) & ((qi < whole.lo) | (qi > whole.hi)) : masked != 0) {
        rt_acc<16, WK> sm;
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) sm.data[0][j][e] = S[q][j][e];
        if constexpr (alibi) add_alibi<false>(sm, sl_s * inv_unit, qi + 16 * q, kj, off);
        mask_visible<false>(sm, p, qi + 16 * q, kj, blk.sq, blk.sk, off);
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) S[q][j][e] = softcap ? fmaxf(sm.data[0][j][e], -1e18f) : sm.data[0][j][e];
      }
    };
    // dS = P (dP - delta) (softcap: P (1 - t^2)), P from its pair (S's registers are dP's after the converts): a pair's
    // multiplies (mul) or its convert.
    [[maybe_unused]] uint32_t psb[softcap ? WK / 16 : 1][4];  // softcap: P (1 - t^2) in pairs, by key tile
    auto ds_task = [&]<bool mul, int q, int kt, int j, int w>() __attribute__((always_inline)) {
      if constexpr (mul) {
        uint32_t pw;
        if constexpr (softcap) pw = psb[kt][w];
        else pw = pb[kt][w];
        const auto pp = __builtin_bit_cast(std::array<T, 2>, pw);
        float x0 = float(pp[0]) * dP[q][kt][j];
        pin(x0);
        float x1 = float(pp[1]) * dP[q][kt][j + 1];
        pin(x1);
        dP[q][kt][j] = x0, dP[q][kt][j + 1] = x1;
      } else {
        uint32_t x = attn_pair<T>(dP[q][kt][j], dP[q][kt][j + 1]);
        pin(x);
        dsb[kt][w] = x;
      }
    };
    // dropout: the step's calls (by query tile), its keep masks (query tile, key tile), P dropped in pairs (dV^T's B
    // operand), the stream of its head.
    using DropCall = AttnDropCall<false, rt_acc<16, WK>>;
    [[maybe_unused]] DropCall dcall[dropout ? 2 : 1];
    [[maybe_unused]] uint32_t dt[dropout ? 2 : 1][4];
    [[maybe_unused]] float du[2][2][2][2];  // dropout: two key tiles' two pairs of P and Pd, unpacked for dS (by kt % 2)
    [[maybe_unused]] uint32_t dm[dropout ? 2 : 1][WK / 16], pbd[dropout ? WK / 16 : 1][4];
    [[maybe_unused]] uint32_t s_lo = 0, s_hi = 0;
    if constexpr (dropout) DropCall::stream(p, blk.b, head, s_lo, s_hi);
    [[maybe_unused]] AttnCapTile cap[2];  // softcap: two key tiles' u and f(u)
    [[maybe_unused]] float px[3][2];   // softcap: three pairs' exp2 arguments, then P, then P (1 - t^2)
    // The plain's task t (keys64::task_of: the masks, P's, dS's).
    auto plain_task = [&]<int t>() __attribute__((always_inline)) {
      if constexpr (t == 0 || t == 33) {
        mask_tile.template operator()<t == 0 ? 0 : 1>();
      } else {
        constexpr keys64::task k = keys64::task_of(t);
        constexpr int q = k.q, kt = k.e / 2, j = (k.e % 2) * 2, w = q * 2 + k.e % 2;
        if constexpr (k.k == keys64::task::mul) {  // (two v_mul_f32: LLVM follows a v_pk_mul_f32 with an s_nop)
          float x0 = alibi ? fmaf(S[q][kt][j], c, na[kt]) : S[q][kt][j] * c;
          pin(x0);
          float x1 = alibi ? fmaf(S[q][kt][j + 1], c, na[kt]) : S[q][kt][j + 1] * c;
          pin(x1);
          S[q][kt][j] = x0, S[q][kt][j + 1] = x1;
        } else if constexpr (k.k == keys64::task::exp_lo || k.k == keys64::task::exp_hi) {
          constexpr int i = k.k == keys64::task::exp_lo ? j : j + 1;
          float x = __builtin_amdgcn_exp2f(S[q][kt][i]);
          pin(x);
          S[q][kt][i] = x;
        } else if constexpr (k.k == keys64::task::cvt) {
          uint32_t x = attn_pair<T>(S[q][kt][j], S[q][kt][j + 1]);
          pin(x);
          pb[kt][w] = x;
        } else {
          ds_task.template operator()<k.k == keys64::task::ds_mul, q, kt, j, w>();
        }
      }
    };
    auto event = [&]<int ev>() __attribute__((always_inline)) {
      if constexpr (ev < 128) {
        constexpr int m = ev, grp = m / 4, kt = m % 4, base = st * 32;
        if constexpr (m == keys64::ahead_at) {
          advance(nqt, nrows);
          more = n + 1 < steps;
          if constexpr (alibi || dropout) nhead = head + (nqt == kb.qt_begin);
          if constexpr (alibi) nside = side_of(nqt * BQ, more);
        }
        if constexpr (m == keys64::ahead_at + 1) {
          const float x = stat(nrows, nqt, more);
          staged = x;
          if constexpr (alibi) nsraw = slope_load(nhead);
        }
        if constexpr (m == keys64::mask_at && !softcap) {
          // (sign bits, opaque: as a bool, LLVM carried it as a lane mask, negated by VALU: about 12 cycles a test; in
          // two events: in one, six scalar instructions a gap)
          masked = alibi ? (cside == 0 ? -1 : 0) : (qi - whole.lo) | (whole.hi - qi);
          pin_uniform(masked);
        }
        if constexpr (m == keys64::mask_at + 1 && !softcap) {
          masked = ((n - steps) & masked) >> 31;
          pin_uniform(masked);
        }
        if constexpr (m == keys64::fill_at[0]) fill(nrows.q, p.q_rs, nqt, next.q, more);
        if constexpr (m == keys64::fill_at[1]) fill(nrows.dout, a.do_rs, nqt, next.dout, more);
        if constexpr (m == 8) L[1] = row_of(cur, cside, 16 + 4 * g);
        if constexpr (m == 60) nd[0] = *reinterpret_cast<const f32x4*>(&delta_of(cur)[4 * g]);
        if constexpr (m == 62) nd[1] = *reinterpret_cast<const f32x4*>(&delta_of(cur)[16 + 4 * g]);
        // (the choice here, at the store: where the load is, LLVM sank the select to a mask branch's join and waited
        // for the load there)
        if constexpr (m == keys64::barrier_at - 4)
          put(next, more ? staged : dma_wave.index == 0 ? __builtin_inff() : 0.f, nqt, nsraw * slope_unit_c);
        if constexpr (m == keys64::barrier_at) wait_vmcnt<0>(), barrier();
        if constexpr (m == 124) L[0] = row_of(next, nside, 4 * g);
        if constexpr (kt == 0) {  // the ring's read two groups ahead (past the body's end: the next body's first)
          constexpr int f = grp + 2, slot = (base + f) % 3;
          if constexpr (f < 8) fr[slot] = frags.row(cur.q, f / 4, f % 4);
          else if constexpr (f < 16) fr[slot] = frags.col(prev.q, f - 8);
          else if constexpr (f < 24) fr[slot] = frags.row(cur.dout, (f - 16) % 2, (f - 16) / 2);
          else if constexpr (f < 32) fr[slot] = frags.col(cur.dout, f - 24);
          else fr[slot] = frags.row(next.q, 0, f - 32);
        }
        const F x = fr[(base + grp) % 3];
        if constexpr (grp < 8) {
          constexpr int q = grp / 4, dc = grp % 4;
          const F b = kf[kt][dc];
          if constexpr (dc == 0 && softcap) A::first0(S[q][kt], x, b);
          else if constexpr (dc == 0) A::first(S[q][kt], x, b, L[q]);
          else A::into_vgpr(S[q][kt], x, b);
        } else if constexpr (grp < 16) {
          A::into_agpr(dk[grp - 8][kt], x, __builtin_bit_cast(F, dsb[kt]));
        } else if constexpr (grp < 24) {
          constexpr int q = (grp - 16) % 2, dc = (grp - 16) / 2;
          const F b = vr[kt];
          if constexpr (dc == 0 && dropout) A::first0(dP[q][kt], x, b);  // (dropout: nd joins dS's tasks)
          else if constexpr (dc == 0) A::first(dP[q][kt], x, b, nd[q]);
          else A::into_vgpr(dP[q][kt], x, b);
        } else {
          if constexpr (m == 96) asm volatile("s_nop 1");  // (P's last converts: a VALU write of the B operand)
          if constexpr (dropout) A::into_agpr(dv[grp - 24][kt], x, __builtin_bit_cast(F, pbd[kt]));
          else A::into_agpr(dv[grp - 24][kt], x, __builtin_bit_cast(F, pb[kt]));
        }
        if constexpr (constexpr int i = m + 4 - 64; i >= 0 && i < 32 && i % 8 < 4)  // (after m's)
          vr[kt] = v_frag(kt, i / 8);
      } else if constexpr (dropout) {
        using K = keys64::dr::task;
        constexpr K k = keys64::dr::task_of(ev - 128);
        constexpr int q = k.q;
        if constexpr (k.k == K::round) {
          if constexpr (k.i == 0) dcall[0].start(s_lo, s_hi, qi, kj, 0), dcall[1].start(s_lo, s_hi, qi + 16, kj, 0);
          uint32_t k0, k1;
          rkeys.template get<k.i>(p, k0, k1);
          dcall[0].template round<k.i>(k0, k1), dcall[1].template round<k.i>(k0, k1);
        } else if constexpr (k.k == K::spread) {
          dcall[q].spread();
        } else if constexpr (k.k == K::quad) {
          DropCall::template quad<k.i>(dcall[0], dcall[1], dt);
        } else if constexpr (k.k == K::word) {
          dm[q][k.i] = DropCall::keep(dcall[q].x[k.i], d_low, d_all);
        } else if constexpr (k.k == K::p) {
          plain_task.template operator()<k.i>();
        } else {
          constexpr int e = k.i % 8, kt = e / 2, j = (e % 2) * 2, w = q * 2 + e % 2;
          if constexpr (k.k == K::pdrop) {
            uint32_t x = attn_drop_pair<e % 2>(pb[kt][w], dm[q][kt]);
            pin(x);
            pbd[kt][w] = x;
          } else if constexpr (k.k == K::ds_unpack) {  // P and Pd of the key tile's two pairs
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const auto pp = __builtin_bit_cast(std::array<T, 2>, pb[kt][q * 2 + h]);
              const auto pd = __builtin_bit_cast(std::array<T, 2>, pbd[kt][q * 2 + h]);
              du[kt % 2][h][0][0] = float(pp[0]), du[kt % 2][h][0][1] = float(pp[1]), du[kt % 2][h][1][0] = float(pd[0]), du[kt % 2][h][1][1] = float(pd[1]);
              pin(du[kt % 2][h][0][0], du[kt % 2][h][0][1], du[kt % 2][h][1][0], du[kt % 2][h][1][1]);
            }
          } else if constexpr (k.k == K::ds_fma) {  // Pd dP + P nd, the two pairs' packed multiplies interleaved (no
                                                    // s_nop between a packed result and its reader)
            using f2 = float __attribute__((ext_vector_type(2)));
            f2 y[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) y[h] = f2{du[kt % 2][h][0][0], du[kt % 2][h][0][1]} * f2{nd[q][2 * h], nd[q][2 * h + 1]};
#pragma unroll
            for (int h = 0; h < 2; ++h)
              y[h] = __builtin_elementwise_fma(f2{du[kt % 2][h][1][0], du[kt % 2][h][1][1]}, f2{dP[q][kt][2 * h], dP[q][kt][2 * h + 1]}, y[h]);
            float r[4] = {y[0].x, y[0].y, y[1].x, y[1].y};
            pin(r[0], r[1], r[2], r[3]);
            dP[q][kt] = f32x4{r[0], r[1], r[2], r[3]};
          } else {
            ds_task.template operator()<false, q, kt, j, w>();
          }
        }
      } else if constexpr (softcap) {
        using K = keys64::sc::task;
        constexpr K k = keys64::sc::task_of(ev - 128);
        constexpr int q = k.q, kt = k.kt, j = (k.i % 2) * 2, w = q * 2 + k.i % 2, r = (k.i + 3) % 3;
        if constexpr (k.k == K::cap) {
          cap[kt % 2].template run<k.i>(S[q][kt], ck);
        } else if constexpr (k.k == K::mask) {
          mask_tile.template operator()<q>();
        } else if constexpr (k.k == K::arg) {
          float x0 = fmaf(S[q][kt][j], c, L[q][j]);
          pin(x0);
          float x1 = fmaf(S[q][kt][j + 1], c, L[q][j + 1]);
          pin(x1);
          px[r][0] = x0, px[r][1] = x1;
        } else if constexpr (k.k == K::exp_lo || k.k == K::exp_hi) {
          constexpr int i = k.k == K::exp_lo ? 0 : 1;
          float x = __builtin_amdgcn_exp2f(px[r][i]);
          pin(x);
          px[r][i] = x;
        } else if constexpr (k.k == K::cvt || k.k == K::pcvt) {
          uint32_t x = attn_pair<T>(px[r][0], px[r][1]);
          pin(x);
          if constexpr (k.k == K::cvt) pb[kt][w] = x;
          else psb[kt][w] = x;
        } else if constexpr (k.k == K::slope) {  // P (1 - t^2)
          using f2 = AttnCapTile::f2;
          const f2 y = AttnCapTile::slope(f2{px[r][0], px[r][1]}, f2{S[q][kt][j], S[q][kt][j + 1]});
          px[r][0] = y.x, px[r][1] = y.y;
        } else {
          ds_task.template operator()<k.k == K::ds_mul, q, kt, j, w>();
        }
      } else {
        plain_task.template operator()<ev - 128>();
      }
    };
    if constexpr (dropout) run_schedule<keys64::dr::plan>(event);
    else if constexpr (softcap) run_schedule<keys64::sc::plan>(event);
    else run_schedule<keys64::plan>(event);
    qt = nqt, rows = nrows;
    if constexpr (alibi) side = nside, sraw = nsraw;
    if constexpr (alibi || dropout) head = nhead;
  };
  for (int n = 0; n <= steps; n += 3) {
    body.template operator()<0>(n);
    body.template operator()<1>(n + 1);
    body.template operator()<2>(n + 2);
  }
  A::mfma_drain();
  // dK = scale dK^T^T and dV = dV^T^T, from the AGPRs.
  rt_acc<D, WK> dkt, dvt;
#pragma unroll
  for (int i = 0; i < D / 16; ++i)
#pragma unroll
    for (int j = 0; j < WK / 16; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) dkt.data[i][j][e] = dk[i][j][e], dvt.data[i][j][e] = dv[i][j][e];
  const auto dk_view = head_view<T, D>(a.dk, a.dk_bs, a.dk_rs, a.dk_hs, blk.b, varlen, blk.k_start, blk.h_kv, blk.sk);
  const auto dv_view = head_view<T, D>(a.dv, a.dv_bs, a.dv_rs, a.dv_hs, blk.b, varlen, blk.k_start, blk.h_kv, blk.sk);
  rt<float, WK, D, layout::row> out;
  transpose<lane_anew>(out, dkt);
  store_bounded<lane_anew>(dk_view, out, {0, 0, key_tile, 0}, dropout ? p.scale * p.drop.scale : p.scale);
  transpose<lane_anew>(out, dvt);
  if constexpr (dropout) store_bounded<lane_anew>(dv_view, out, {0, 0, key_tile, 0}, p.drop.scale);
  else store_bounded<lane_anew>(dv_view, out, {0, 0, key_tile, 0});
}

}  // namespace hk::kernels
