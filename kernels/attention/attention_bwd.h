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
// never leave the registers.
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

// Queries per step of kernel 2: 64, or 32 where that many registers would not do (D = 128 without transposing reads),
// which halves the Q and dO fragments a wave holds at once.
template <int D>
inline constexpr int attn_bwd_query_step = attn_bwd_waves_per_simd<D> == 2 ? 64 : 32;

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
  using rows_vec = rv<float, BQ, vec_align::rows>;
  // This workgroup's K and V tiles, then the Q and dO tiles of each step (BQ <= 64 rows) in the same memory.
  __shared__ st<T, attn_bwd_rows, D> skv[2];
  __shared__ sv<float, BQ> slse, sdelta;
  auto& sq = *reinterpret_cast<st<T, BQ, D>*>(&skv[0]);
  auto& sdo = *reinterpret_cast<st<T, BQ, D>*>(&skv[1]);
  const AttnArgs& p = a.f;
  const AttnKeyBlock kb(a, BQ);
  AttnBlock blk = kb.blk;
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

  const int ratio = p.heads_q / p.heads_kv;
  const float c = p.scale_log2;
  const async_wave<G> dma_wave;  // read once: the loads' per-lane addressing stays out of the loops
  for (int g = 0; g < ratio; ++g) {
    const int h = blk.h_kv * ratio + g;
    const auto q_view = head_view<T, D>(p.q, p.q_bs, p.q_rs, p.q_hs, blk.b, varlen, blk.q_start, h, blk.sq);
    const auto do_view = head_view<T, D>(a.dout, a.do_bs, a.do_rs, a.do_hs, blk.b, varlen, blk.q_start, h, blk.sq);
    const auto lse_view = lse_row(p, p.lse, blk, h), delta_view = lse_row(p, a.delta, blk, h);
    for (int qt = kb.qt_begin; qt < kb.qt_end; ++qt) {
      barrier();  // every wave is done with the previous tile (and with K and V)
      load_async<G>(sq, q_view, {0, 0, qt, 0}, dma_wave);
      load_async<G>(sdo, do_view, {0, 0, qt, 0}, dma_wave);
      load<G>(slse, lse_view, {0, 0, 0, qt});  // 0 past the end
      load<G>(sdelta, delta_view, {0, 0, 0, qt});
      wait_vmcnt<0>();
      barrier();
      rows_vec lse, delta;
      load(lse, slse);
      load(delta, sdelta);
      // exp2(s c - lse log2 e); a query that sees no key (LSE -inf) has every score masked, so any finite LSE does.
      vec_apply([](float& l) { l = l == -INFINITY ? 0.f : l * 1.44269504088896341f; }, lse);
      // S = Q K^T (queries x keys), masked where the tile crosses a query's visible range, and P.
      rt_acc<BQ, WK> s;
      {
        rt<T, BQ, D> q;
        load(q, sq);
        zero(s);
        mma_ABt(s, q, k, s);
      }
      const long q0 = long(qt) * BQ;
      if (!attn_tile_whole(p, q0, q0 + BQ - 1, k0, k0 + WK - 1, blk.sq, blk.sk)) mask_scores<false>(s, p, q0, k0, blk.sq, blk.sk);
      map_rows(s, lse, [c](float x, float l) { return __builtin_amdgcn_exp2f(fmaf(x, c, -l)); });
      // dV^T += dO^T P, P in acc order as the B operand, dO read in the same order.
      {
        rt<T, BQ, WK, layout::col> pc;
        copy_acc_order(pc, s);
        rt<T, BQ, D, layout::col> doc;
        load_acc_order(doc, sdo);
        rt<T, D, BQ, layout::row> dot;
        transpose(dot, doc);
        mma_AB(dvt, dot, pc, dvt);
      }
      // dP = dO V^T; dS = P * (dP - delta).
      rt_acc<BQ, WK> dp;
      {
        rt<T, BQ, D> dor;
        load(dor, sdo);
        zero(dp);
        mma_ABt(dp, dor, v, dp);
      }
      map_rows(dp, delta, [](float x, float d) { return x - d; });
      mul(s, s, dp);
      // dK^T += Q^T dS.
      {
        rt<T, BQ, WK, layout::col> dsc;
        copy_acc_order(dsc, s);
        rt<T, BQ, D, layout::col> qc;
        load_acc_order(qc, sq);
        rt<T, D, BQ, layout::row> qtr;
        transpose(qtr, qc);
        mma_AB(dkt, qtr, dsc, dkt);
      }
    }
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
  static_assert(BK == attn_bwd_rows, "the Q and dO tiles are staged in the K and V tiles");
  using cols_vec = rv<float, WQ, vec_align::cols>;
  __shared__ st<T, BK, D> sk, sv;
  const AttnArgs& p = a.f;
  const AttnView<T, D> view(p, attn_bwd_rows);
  if (view.empty) return;
  const AttnBlock& blk = view.blk;
  const bool varlen = p.cu_q != nullptr;
  const auto do_view = head_view<T, D>(a.dout, a.do_bs, a.do_rs, a.do_hs, blk.b, varlen, blk.q_start, blk.h, blk.sq);
  load_async<G>(sk, view.q, {0, 0, blk.tile, 0});
  load_async<G>(sv, do_view, {0, 0, blk.tile, 0});
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
  load(q, sk, {0, 0, wave, 0});
  load(dout, sv, {0, 0, wave, 0});
  rt_acc<D, WQ> dqt;
  zero(dqt);
  const float c = p.scale_log2;
  const async_wave<G> dma_wave;  // read once: the loads' per-lane addressing stays out of the loop
  for (int kt = view.kt_begin; kt < view.kt_end; ++kt) {
    barrier();  // every wave is done with the previous tile (and with Q and dO)
    load_async<G>(sk, view.k, {0, 0, kt, 0}, dma_wave);
    load_async<G>(sv, view.v, {0, 0, kt, 0}, dma_wave);
    wait_vmcnt<0>();
    barrier();
    // S^T = K Q^T (keys x queries), masked, and P^T.
    rt_acc<BK, WQ> s;
    {
      rt<T, BK, D> k;
      load(k, sk);
      zero(s);
      mma_ABt(s, k, q, s);
    }
    const long k0 = long(kt) * BK;
    if (!attn_tile_whole(p, q0, q0 + WQ - 1, k0, k0 + BK - 1, blk.sq, blk.sk)) mask_scores<true>(s, p, q0, k0, blk.sq, blk.sk);
    map_cols(s, lse, [c](float x, float l) { return __builtin_amdgcn_exp2f(fmaf(x, c, -l)); });
    // dP^T = V dO^T; dS^T = P^T * (dP^T - delta).
    rt_acc<BK, WQ> dp;
    {
      rt<T, BK, D> v;
      load(v, sv);
      zero(dp);
      mma_ABt(dp, v, dout, dp);
    }
    map_cols(dp, delta, [](float x, float d) { return x - d; });
    mul(s, s, dp);
    // dQ^T += K^T dS^T, dS^T in acc order as the B operand, K read in the same order.
    rt<T, BK, WQ, layout::col> dsc;
    copy_acc_order(dsc, s);
    rt<T, BK, D, layout::col> kc;
    load_acc_order(kc, sk);
    rt<T, D, BK, layout::row> ktr;
    transpose(ktr, kc);
    mma_AB(dqt, ktr, dsc, dqt);
  }
  const auto dq_view = head_view<T, D>(a.dq, a.dq_bs, a.dq_rs, a.dq_hs, blk.b, varlen, blk.q_start, blk.h, blk.sq);
  rt<float, WQ, D, layout::row> out;
  transpose(out, dqt);
  store_bounded(dq_view, out, {0, 0, row_tile, 0}, p.scale);
}

}  // namespace hk::kernels
