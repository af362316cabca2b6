// The attention backward kernels, one source for both archs, run in this order:
//   1. attention_bwd_delta: delta = rowsum(dO * O) in fp32, laid out like LSE;
//   2. attention_bwd_dkdv: one workgroup per (sequence, KV head, 64 keys), each wave owning 16 keys whose K and V stay
//      in registers; it visits every query head that reads the KV head and every query tile that sees one of its
//      keys, recomputes P = exp(scale S - LSE) and accumulates dV^T += dO^T P and dK^T += Q^T dS (dS = P * (dP -
//      delta), dP = dO V^T) in fp32 registers, written once at the end (dK scaled);
//   3. attention_bwd_dq: one workgroup per (sequence, query head, 64 queries), each wave owning 16 queries; it
//      recomputes P^T and dS^T over the visible key tiles in order and accumulates dQ^T += K^T dS^T in fp32. No
//      atomics anywhere: every gradient element is summed by one wave in a fixed order, so results are bit-identical
//      run after run.
// The products that accumulate over queries (kernel 2) or keys (kernel 3) take their k operand straight from the
// previous accumulator in acc order (ops/acc_order.h), like the forward's P V: P, dS (kernel 2) and dS^T (kernel 3)
// never leave the registers; the other operand is the staged tile read in the same order and used transposed
// (mma_AtB_acc). The two score-like products (S and dP, or their transposes) read their A operand from the staged
// tile and their B operand from the wave's registers (mma_ABt_lds).
//
// Schedule (both loops, as the forward's): the staged tiles (kernel 2: Q, dO, LSE and delta of a step; kernel 3: K
// and V of a key tile) live in two stages, and one barrier per step separates them. At the top of step n each wave
// waits for its own loads of step n, then the barrier makes every wave's part visible and certifies that every wave
// has finished reading the other stage (step n-1), which the loads of step n+1, issued right after it, overwrite:
// those loads fly under the whole of step n's MFMAs. Q and dO go straight into LDS (buffer loads with the lds
// modifier); LSE and delta (64 floats each) are too small for that, so in kernel 2 one lane per row loads its value
// into a register before the step's work and writes it to the other stage after it (that stage's vectors were last
// read in step n-1, before the barrier). The once-per-workgroup tiles (kernel 2: K and V; kernel 3: Q and dO) pass
// through the stages' memory before the first step's loads are issued into it.
#pragma once
#include "attention_common.h"

namespace hk::kernels {

struct AttnBwdArgs {
  AttnArgs f;          // Q, K, V, the forward's O and LSE, the shape and masks (f.q_tiles: tiles of attn_bwd_rows)
  const void* dout;    // dO, laid out like O
  void *dq, *dk, *dv;  // written as the element type
  long do_bs, do_rs, do_hs, dq_bs, dq_rs, dq_hs, dk_bs, dk_rs, dk_hs, dv_bs, dv_rs, dv_hs;
  float* delta;        // rowsum(dO * O): the workspace, laid out like LSE
  int k_tiles;         // key tiles of the longest key sequence
};

inline constexpr int attn_bwd_rows = 64;  // queries (kernels 1, 3) or keys (kernel 2) per workgroup

// Waves per SIMD kernels 2 and 3 declare, so that the compiler keeps the accumulators in arch VGPRs within 256
// registers. Where col-layout operands are read from LDS an element at a time (no transposing reads: gfx942), each
// element lands in a register of its own before packing, and at D = 128 the kernels need more than 256.
template <int D>
inline constexpr int attn_bwd_waves_per_simd = D == 64 || arch::current::lds_read_transpose ? 2 : 1;

// One step's staged operands of kernel 2: BQ queries' Q and dO rows, their LSE (in log2 units, 0 for a query that
// sees no key) and delta.
template <class T, int BQ, int D>
struct AttnBwdStage {
  st<T, BQ, D> q, dout;
  sv<float, BQ> lse, delta;
};

// Queries per step of kernel 2: 64 where the registers allow (two waves per SIMD) and two stages of them fit in the
// LDS of the workgroups a CU then runs; else 32, which halves the Q and dO fragments a wave holds at once and the
// stages.
template <int D>
inline constexpr int attn_bwd_query_step =
    attn_bwd_waves_per_simd<D> == 2 && 2 * 2 * int(sizeof(AttnBwdStage<bf16, 64, D>)) <= arch::current::lds_bytes ? 64 : 32;

// Stages of kernel 3's K and V: two where they fit in the LDS share of two workgroups per CU (the occupancy its
// registers allow), else one (gfx942 at D = 128, whose schedule then waits for each tile's loads).
template <int D>
inline constexpr int attn_bwd_dq_stages = 2 * 2 * 2 * attn_bwd_rows * D * 2 <= arch::current::lds_bytes ? 2 : 1;

// A B^T, A a tile of the LDS read in row layout and B a register tile: S = Q K^T and dP = dO V^T (kernel 2), S^T =
// K Q^T and dP^T = V dO^T (kernel 3).
template <shared_tile ST, register_tile B>
__device__ inline rt_acc<ST::rows, B::rows> mma_ABt_lds(const ST& a, const B& b) {
  rt<typename ST::dtype, ST::rows, ST::cols> ar;
  load(ar, a);
  rt_acc<ST::rows, B::rows> d;
  zero(d);
  mma_ABt(d, ar, b, d);
  return d;
}

// acc += X^T S, X a tile of the LDS (K rows of D) read in acc order and used transposed (the same registers), S an
// accumulator over the same K rows whose registers are the B operand as they stand: dV^T += dO^T P and dK^T += Q^T
// dS (kernel 2), dQ^T += K^T dS^T (kernel 3).
template <int D, int N, int K, shared_tile ST>
__device__ inline void mma_AtB_acc(rt_acc<D, N>& acc, const ST& x, const rt_acc<K, N>& s) {
  using T = typename ST::dtype;
  static_assert(ST::rows == K && ST::cols == D, "mma_AtB_acc: X is K x D");
  rt<T, K, N, layout::col> b;
  copy_acc_order(b, s);
  rt<T, K, D, layout::col> xc;
  load_acc_order(xc, x);
  rt<T, D, K, layout::row> xt;
  transpose(xt, xc);
  mma_AB(acc, xt, b, acc);
}

// Kernel 1: four lanes per query row, each summing a quarter of its D products.
template <class T, int D>
__global__ __launch_bounds__(256) void attention_bwd_delta(AttnBwdArgs p) {
  const AttnView<T, D> view(p.f, attn_bwd_rows);
  if (view.empty) return;
  const AttnBlock& blk = view.blk;
  const auto dout = head_view<T, D>(p.dout, p.do_bs, p.do_rs, p.do_hs, blk.b, p.f.cu_q != nullptr, blk.q_start, blk.h, blk.sq);
  const int row = int(view.first_row) + int(threadIdx.x) / 4, part = int(threadIdx.x) % 4;
  constexpr int per = D / 4, chunk = 8;  // elements per lane, per 16-byte load
  float sum = 0.f;
  if (row < blk.sq) {
#pragma unroll
    for (int c = 0; c < per; c += chunk) {
      const auto o = *reinterpret_cast<const detail::chunk<T, chunk>*>(view.o.at(0, 0, row, part * per + c));
      const auto g = *reinterpret_cast<const detail::chunk<T, chunk>*>(dout.at(0, 0, row, part * per + c));
#pragma unroll
      for (int e = 0; e < chunk; ++e) sum = fmaf(fl(o.v[e]), fl(g.v[e]), sum);
    }
  }
  sum += __shfl_xor(sum, 1);
  sum += __shfl_xor(sum, 2);
  if (row < blk.sq && part == 0) *lse_row(p.f, p.delta, blk, blk.h).at(0, 0, 0, row) = sum;
}

// Kernel 2's workgroup: sequence b, KV head h_kv, key tile `tile`; the heads and query tiles that see its keys.
struct AttnKeyBlock {
  AttnBlock blk;  // h unset: the kernel walks the group's query heads
  long first_key, off;
  int qt_begin, qt_end;  // query tiles of `step` queries that see a key of the tile

  __device__ AttnKeyBlock(const AttnBwdArgs& a, int step) {
    const AttnArgs& p = a.f;
    int id = int(blockIdx.x);
    blk.tile = id % a.k_tiles, id /= a.k_tiles;
    blk.h_kv = id % p.heads_kv, blk.b = id / p.heads_kv, blk.h = 0;
    blk.locate(p);
    first_key = long(blk.tile) * attn_bwd_rows, off = long(blk.sk) - blk.sq;
    const long last_key = std::min<long>(first_key + attn_bwd_rows, blk.sk) - 1;
    // Query i sees key j when i + off - left <= j <= i + off + right.
    const long lo = p.right < 0 ? 0 : std::max<long>(0, first_key - off - p.right);
    const long hi = p.left < 0 ? blk.sq - 1 : std::min<long>(blk.sq - 1, last_key - off + p.left);
    qt_begin = int(lo / step), qt_end = hi >= lo && last_key >= first_key ? int(hi / step) + 1 : qt_begin;
  }
};

template <class T, int D>
__global__ __launch_bounds__(256) __attribute__((amdgpu_waves_per_eu(attn_bwd_waves_per_simd<D>))) void attention_bwd_dkdv(AttnBwdArgs a) {
  using G = group<4>;
  constexpr int BQ = attn_bwd_query_step<D>, WK = AttnTiles::wave_rows;
  using Stage = AttnBwdStage<T, BQ, D>;
  using KV = st<T, attn_bwd_rows, D>;
  using rows_vec = rv<float, BQ, vec_align::rows>;
  static_assert(sizeof(KV) <= sizeof(Stage), "K and V are staged in the stages' memory");
  static_assert(2 * BQ <= 256, "one lane per LSE and per delta value");
  __shared__ Stage stages[2];
  KV* skv = reinterpret_cast<KV*>(&stages[0]);  // K, V: before the first step's loads
  const AttnArgs& p = a.f;
  const AttnKeyBlock kb(a, BQ);
  const AttnBlock& blk = kb.blk;
  if (kb.first_key >= blk.sk) return;  // past the end of a shorter sequence (varlen)
  const bool varlen = p.cu_q != nullptr;
  const auto k_view = head_view<T, D>(p.k, p.k_bs, p.k_rs, p.k_hs, blk.b, varlen, blk.k_start, blk.h_kv, blk.sk);
  const auto v_view = head_view<T, D>(p.v, p.v_bs, p.v_rs, p.v_hs, blk.b, varlen, blk.k_start, blk.h_kv, blk.sk);
  // This wave's 16 keys, through the LDS (zeros past the end).
  load_async<G>(skv[0], k_view, {0, 0, blk.tile, 0});
  load_async<G>(skv[1], v_view, {0, 0, blk.tile, 0});
  wait_vmcnt<0>();
  barrier();
  const int wave = G::wave();
  rt<T, WK, D> k, v;
  load(k, skv[0], {0, 0, wave, 0});
  load(v, skv[1], {0, 0, wave, 0});
  const long k0 = kb.first_key + long(wave) * WK;  // this wave's first key
  rt_acc<D, WK> dvt, dkt;
  zero(dvt), zero(dkt);

  // Step n: query head h_kv * ratio + n / tiles, query tile qt_begin + n % tiles.
  const int ratio = p.heads_q / p.heads_kv, tiles = kb.qt_end - kb.qt_begin, steps = ratio * tiles;
  const float c = p.scale_log2;
  const async_wave<G> dma_wave;  // read once: the loads' per-lane addressing stays out of the loop
  const int tid = int(threadIdx.x);
  auto fill = [&](int n, Stage& s) __attribute__((always_inline)) {
    const int h = blk.h_kv * ratio + n / tiles, qt = kb.qt_begin + n % tiles;
    load_async<G>(s.q, head_view<T, D>(p.q, p.q_bs, p.q_rs, p.q_hs, blk.b, varlen, blk.q_start, h, blk.sq), {0, 0, qt, 0}, dma_wave);
    load_async<G>(s.dout, head_view<T, D>(a.dout, a.do_bs, a.do_rs, a.do_hs, blk.b, varlen, blk.q_start, h, blk.sq),
                  {0, 0, qt, 0}, dma_wave);
  };
  // The LSE (lanes 0 .. BQ-1) or delta (BQ .. 2 BQ - 1) value of step n this lane stages, 0 past the end; and its
  // store (LSE in log2 units). Each is loaded two steps ahead, during step n-2, and stored after step n-1's work into
  // the stage of step n, which the barrier of step n-1 freed: the load has long arrived (step n-1 began by waiting).
  auto stat = [&](int n) __attribute__((always_inline)) {
    const int h = blk.h_kv * ratio + n / tiles;
    const long row = long(kb.qt_begin + n % tiles) * BQ + tid % BQ;
    if (n >= steps || tid >= 2 * BQ || row >= blk.sq) return 0.f;
    return *lse_row(p, tid < BQ ? p.lse : a.delta, blk, h).at(0, 0, 0, row);
  };
  auto put = [&](Stage& s, float x) __attribute__((always_inline)) {
    // exp2(s c - lse log2 e); a query that sees no key (LSE -inf) has every score masked, so any finite LSE does.
    if (tid < BQ) s.lse[tid] = x == -INFINITY ? 0.f : x * 1.44269504088896341f;
    else if (tid < 2 * BQ) s.delta[tid - BQ] = x;
  };
  barrier();  // every wave holds its K and V: the stages are free
  if (steps > 0) {
    fill(0, stages[0]);
    put(stages[0], stat(0));
  }
  float ahead = stat(1);  // step n + 1's value during step n
  // Step n in stage `stage_of` (n % 2, a compile-time constant: the loop takes the steps in pairs, so every LDS
  // address is a register fixed for the kernel plus an immediate offset).
  auto step = [&](int n, auto stage_of) __attribute__((always_inline)) {
    Stage &cur = stages[int(stage_of)], &next = stages[int(stage_of) ^ 1];
    wait_vmcnt<0>();
    barrier();  // step n is in; every wave is done with step n-1's stage
    const bool more = n + 1 < steps;
    if (more) fill(n + 1, next);
    const float after = stat(n + 2);
    rows_vec lse, delta;
    load(lse, cur.lse);
    load(delta, cur.delta);
    // S = Q K^T (queries x keys), masked where the tile crosses a query's visible range, and P.
    auto s = mma_ABt_lds(cur.q, k);
    const long q0 = long(kb.qt_begin + n % tiles) * BQ;
    if (!attn_tile_whole(p, q0, q0 + BQ - 1, k0, k0 + WK - 1, blk.sq, blk.sk)) mask_scores<false>(s, p, q0, k0, blk.sq, blk.sk);
    map_rows(s, lse, [c](float x, float l) { return __builtin_amdgcn_exp2f(fmaf(x, c, -l)); });
    mma_AtB_acc(dvt, cur.dout, s);  // dV^T += dO^T P
    // dP = dO V^T; dS = P * (dP - delta); dK^T += Q^T dS.
    auto dp = mma_ABt_lds(cur.dout, v);
    map_rows(dp, delta, [](float x, float d) { return x - d; });
    mul(s, s, dp);
    mma_AtB_acc(dkt, cur.q, s);
    if (more) put(next, ahead);
    ahead = after;
  };
  for (int n = 0; n < steps; n += 2) {
    step(n, std::integral_constant<int, 0>{});
    if (n + 1 < steps) step(n + 1, std::integral_constant<int, 1>{});
  }
  // dK = scale dK^T^T and dV = dV^T^T, from the registers (the transposes are free).
  const auto dk_view = head_view<T, D>(a.dk, a.dk_bs, a.dk_rs, a.dk_hs, blk.b, varlen, blk.k_start, blk.h_kv, blk.sk);
  const auto dv_view = head_view<T, D>(a.dv, a.dv_bs, a.dv_rs, a.dv_hs, blk.b, varlen, blk.k_start, blk.h_kv, blk.sk);
  const int key_tile = int(k0 / WK);
  rt<float, WK, D, layout::row> out;
  transpose(out, dkt);
  store_bounded(dk_view, out, {0, 0, key_tile, 0}, p.scale);
  transpose(out, dvt);
  store_bounded(dv_view, out, {0, 0, key_tile, 0});
}

template <class T, int D>
__global__ __launch_bounds__(256) __attribute__((amdgpu_waves_per_eu(attn_bwd_waves_per_simd<D>))) void attention_bwd_dq(AttnBwdArgs a) {
  using G = group<4>;
  constexpr int BK = AttnTiles::keys, WQ = AttnTiles::wave_rows;
  static_assert(BK == attn_bwd_rows, "the Q and dO tiles are staged in a K and V stage");
  using cols_vec = rv<float, WQ, vec_align::cols>;
  constexpr int S = attn_bwd_dq_stages<D>;
  __shared__ st<T, BK, D> sk[S], sv[S];  // the stages of K and V
  const AttnArgs& p = a.f;
  const AttnView<T, D> view(p, attn_bwd_rows);
  if (view.empty) return;
  const AttnBlock& blk = view.blk;
  const int kt_begin = view.kt_begin, kt_end = view.kt_end;
  const bool varlen = p.cu_q != nullptr;
  const auto do_view = head_view<T, D>(a.dout, a.do_bs, a.do_rs, a.do_hs, blk.b, varlen, blk.q_start, blk.h, blk.sq);
  const async_wave<G> dma_wave;  // read once: the loads' per-lane addressing stays out of the loop
  auto fill = [&](int kt, int stage) __attribute__((always_inline)) {
    load_async<G>(sk[stage], view.k, {0, 0, kt, 0}, dma_wave);
    load_async<G>(sv[stage], view.v, {0, 0, kt, 0}, dma_wave);
  };
  // Q and dO through the last stage, free until the first step's barrier; the first key tile into stage 0.
  load_async<G>(sk[S - 1], view.q, {0, 0, blk.tile, 0}, dma_wave);
  load_async<G>(sv[S - 1], do_view, {0, 0, blk.tile, 0}, dma_wave);
  if (S == 2 && kt_begin < kt_end) fill(kt_begin, 0);
  const int wave = G::wave();
  const long q0 = view.first_row + long(wave) * WQ;  // this wave's first query
  const int row_tile = int(q0 / WQ);
  cols_vec lse, delta;
  load(lse, lse_row(p, p.lse, blk, blk.h), {0, 0, 0, row_tile});
  load(delta, lse_row(p, a.delta, blk, blk.h), {0, 0, 0, row_tile});
  vec_apply([](float& l) { l = l == -INFINITY ? 0.f : l * 1.44269504088896341f; }, lse);
  wait_vmcnt<0>();
  barrier();
  rt<T, WQ, D> q, dout;
  load(q, sk[S - 1], {0, 0, wave, 0});
  load(dout, sv[S - 1], {0, 0, wave, 0});
  rt_acc<D, WQ> dqt;
  zero(dqt);
  const float c = p.scale_log2;
  // Key tile kt in stage `stage_of` (a compile-time constant, as in kernel 2).
  auto step = [&](int kt, auto stage_of) __attribute__((always_inline)) {
    constexpr int stage = decltype(stage_of)::value;
    if constexpr (S == 2) {
      wait_vmcnt<0>();
      barrier();  // tile kt is in; every wave is done with the other stage (and with Q and dO in stage 1)
      if (kt + 1 < kt_end) fill(kt + 1, stage ^ 1);
    } else {
      barrier();  // every wave is done with the previous tile (and with Q and dO)
      fill(kt, 0);
      wait_vmcnt<0>();
      barrier();
    }
    // S^T = K Q^T (keys x queries), masked, and P^T.
    auto s = mma_ABt_lds(sk[stage], q);
    const long k0 = long(kt) * BK;
    if (!attn_tile_whole(p, q0, q0 + WQ - 1, k0, k0 + BK - 1, blk.sq, blk.sk)) mask_scores<true>(s, p, q0, k0, blk.sq, blk.sk);
    map_cols(s, lse, [c](float x, float l) { return __builtin_amdgcn_exp2f(fmaf(x, c, -l)); });
    // dP^T = V dO^T; dS^T = P^T * (dP^T - delta); dQ^T += K^T dS^T.
    auto dp = mma_ABt_lds(sv[stage], dout);
    map_cols(dp, delta, [](float x, float d) { return x - d; });
    mul(s, s, dp);
    mma_AtB_acc(dqt, sk[stage], s);
  };
  for (int kt = kt_begin; kt < kt_end; kt += S) {
    step(kt, std::integral_constant<int, 0>{});
    if constexpr (S == 2)
      if (kt + 1 < kt_end) step(kt + 1, std::integral_constant<int, 1>{});
  }
  const auto dq_view = head_view<T, D>(a.dq, a.dq_bs, a.dq_rs, a.dq_hs, blk.b, varlen, blk.q_start, blk.h, blk.sq);
  rt<float, WQ, D, layout::row> out;
  transpose(out, dqt);
  store_bounded(dq_view, out, {0, 0, row_tile, 0}, p.scale);
}

}  // namespace hk::kernels
