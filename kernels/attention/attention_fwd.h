// The attention forward kernel: one workgroup of 4 waves per (query tile, query head, sequence), each wave owning 16
// query rows; K and V tiles of 64 keys loaded straight into LDS (buffer loads with the lds modifier), two stages deep,
// so the next tile's loads fly while the waves compute on the current one.
//
// Each wave computes the transposed products, S^T = K Q^T and O^T += V^T P^T: a query is then a column of the
// accumulators, so its softmax statistics are column reductions (in registers, then two shuffles), and P^T is the S^T
// accumulator itself as the next product's B operand (ops/acc_order.h: no cross-lane moves), with V read in the same
// k order. The online softmax runs in fp32 with scale * log2(e) folded into one multiply-add before exp2, and O leaves
// from the registers (the transpose of O^T's accumulator is free). Only the KV tiles some row of the query
// tile sees are visited; a tile is masked element by element only where it crosses a row's visible range (the
// causal or window diagonal, or the end of the keys).
//
// One barrier per KV tile: each wave waits for its own loads of tile t, then the barrier makes every wave's part of
// tile t visible and certifies that every wave has finished reading tile t-1's stage, which the loads of tile t+1,
// issued right after it, overwrite. The Q tile passes through stage 1 before the first such load.
#pragma once
#include <cmath>

#include "hk/hk.h"
#include "hk/ops/acc_order.h"
#include "hk/ops/async.h"

namespace hk::kernels {

struct AttnArgs {
  const void *q, *k, *v;
  void* o;
  float* lse;  // null: not written
  // Element strides: batch, row (sequence position), head. Varlen batches use only row and head.
  long q_bs, q_rs, q_hs, k_bs, k_rs, k_hs, v_bs, v_rs, v_hs, o_bs, o_rs, o_hs;
  // LSE of (b, h, row i of sequence b) at b * lse_bs + h * lse_hs + (cu_q ? cu_q[b] : 0) + i.
  long lse_bs, lse_hs;
  const int *cu_q, *cu_k;  // varlen offsets (B + 1 each), or null
  int batch, heads_q, heads_kv;
  int seqlen_q, seqlen_k;  // of every sequence (padded batches; unused with cu_q / cu_k)
  int q_tiles;             // query tiles of the longest query sequence
  float scale_log2;        // softmax_scale * log2(e)
  float scale;             // softmax_scale
  int left, right;         // visible keys of query i: [i + Sk - Sq - left, i + Sk - Sq + right]; -1 = unbounded
};

// The tile sizes of the forward kernel.
struct AttnTiles {
  static constexpr int wave_rows = 16, waves = 4, rows = wave_rows * waves, keys = 64;
};

// The workgroup's work: sequence b, query head h (reading KV head h / ratio) and query tile `tile`. The logical order
// keeps the query heads that share a KV head next to each other and, through xcd_remap, on one XCD (they read the
// same K and V from its L2); query tiles run last-first, so the causal tiles with the most keys start first.
struct AttnBlock {
  int b, h, h_kv, tile;
  int sq, sk;            // this sequence's lengths
  long q_start, k_start; // its first row in the packed tensors (varlen) or 0

  __device__ explicit AttnBlock(const AttnArgs& p) {
    const int ratio = p.heads_q / p.heads_kv;
    int id = xcd_remap(int(blockIdx.x), p.batch * p.heads_kv * p.q_tiles * ratio);
    const int g = id % ratio;
    id /= ratio;
    tile = p.q_tiles - 1 - id % p.q_tiles;
    id /= p.q_tiles;
    h_kv = id % p.heads_kv;
    b = id / p.heads_kv;
    h = h_kv * ratio + g;
    if (p.cu_q) {
      q_start = p.cu_q[b], k_start = p.cu_k[b];
      sq = p.cu_q[b + 1] - p.cu_q[b], sk = p.cu_k[b + 1] - p.cu_k[b];
    } else {
      q_start = k_start = 0, sq = p.seqlen_q, sk = p.seqlen_k;
    }
  }
};

// f(element of v, elements of vs...) for every element of register vectors of one shape.
template <class F, class V, class... Vs>
__device__ inline void vec_apply(F f, V& v, Vs&... vs) {
#pragma unroll
  for (int i = 0; i < V::length / V::shape::dim; ++i)
#pragma unroll
    for (int e = 0; e < V::per_block; ++e) f(v.data[i][e], vs.data[i][e]...);
}

// One head of one sequence of a (B, S, H, D) tensor as an S x D layout.
template <class T, int D>
__device__ inline gl<T, 1, 1, runtime_dim, D> head_view(const void* base, long bs, long rs, long hs, int b, bool varlen,
                                                        long start, int h, int rows) {
  T* p = static_cast<T*>(const_cast<void*>(base)) + (varlen ? 0 : b * bs) + start * rs + h * hs;
  return gl<T, 1, 1, runtime_dim, D>(p, 1, 1, rows, D, rs);
}

// Waves per SIMD the LDS allows (two stages of K and V tiles per workgroup of 4 waves), at most 2. Declaring it lets
// the compiler keep the MFMA accumulators in arch VGPRs (it uses AGPRs when a wave may own all 512 registers, and
// then every rescale of O^T copies it out and back).
template <int D>
inline constexpr int attn_waves_per_simd =
    arch::current::lds_bytes / (4 * AttnTiles::keys * D * 2) >= 2 ? 2 : 1;

template <class T, int D>
__global__ __launch_bounds__(256) __attribute__((amdgpu_waves_per_eu(attn_waves_per_simd<D>))) void attention_fwd(AttnArgs p) {
  using Tiles = AttnTiles;
  constexpr int WQ = Tiles::wave_rows, BQ = Tiles::rows, BK = Tiles::keys;
  using G = group<Tiles::waves>;
  using cols_vec = rv<float, WQ, vec_align::cols>;
  static_assert(BQ == BK, "the Q tile is staged in a K stage");
  using Tile = st<T, BK, D>;
  __shared__ Tile sk[2], sv[2];  // two stages of K and V

  const AttnBlock blk(p);
  if (blk.tile * BQ >= blk.sq) return;  // past the end of a shorter sequence (varlen)
  const bool varlen = p.cu_q != nullptr;
  const auto gq = head_view<T, D>(p.q, p.q_bs, p.q_rs, p.q_hs, blk.b, varlen, blk.q_start, blk.h, blk.sq);
  const auto gk = head_view<T, D>(p.k, p.k_bs, p.k_rs, p.k_hs, blk.b, varlen, blk.k_start, blk.h_kv, blk.sk);
  const auto gv = head_view<T, D>(p.v, p.v_bs, p.v_rs, p.v_hs, blk.b, varlen, blk.k_start, blk.h_kv, blk.sk);
  const auto go = head_view<T, D>(p.o, p.o_bs, p.o_rs, p.o_hs, blk.b, varlen, blk.q_start, blk.h, blk.sq);

  // The keys any row of this tile sees (rows past the sequence's end do not count), as a range of KV tiles.
  const long off = long(blk.sk) - blk.sq, qa = long(blk.tile) * BQ, qb = std::min<long>(qa + BQ, blk.sq) - 1;
  const long lo = p.left < 0 ? 0 : std::max<long>(0, qa + off - p.left);
  const long hi = p.right < 0 ? blk.sk - 1 : std::min<long>(blk.sk - 1, qb + off + p.right);
  const int kt_begin = int(lo / BK), kt_end = hi >= lo ? int(hi / BK) + 1 : kt_begin;
  // This wave's rows, for deciding which tiles it must mask.
  const int w = G::wave();
  const long wa = qa + long(w) * WQ, wb = std::min<long>(wa + WQ, blk.sq) - 1;

  // Tile kt's K and V into stage `stage`, zeros past the last key.
  auto fill = [&](int kt, int stage) __attribute__((always_inline)) {
    load_async<G>(sk[stage], gk, {0, 0, kt, 0});
    load_async<G>(sv[stage], gv, {0, 0, kt, 0});
  };
  if (kt_begin < kt_end) fill(kt_begin, 0);
  Tile& sq = sk[1];  // free until the first iteration's barrier
  load_bounded<G>(sq, gq, {0, 0, blk.tile, 0});
  barrier();
  rt<T, WQ, D> q;  // the B operand of S^T = K Q^T
  load(q, sq, {0, 0, w, 0});

  // Per query (a column of S^T): running max of the scaled scores (log2 units) and softmax denominator.
  cols_vec m, l;
  vec_apply([](float& mi, float& li) { mi = -INFINITY, li = 0.f; }, m, l);
  rt_acc<D, WQ> ot;  // O^T: D x this wave's queries
  zero(ot);

  const float c = p.scale_log2;
  // One KV tile in stage `stage_of` (0 or 1; a compile-time constant where the loop below takes the tiles in pairs, so
  // that every LDS address is a register fixed for the kernel plus an immediate offset).
  auto step = [&](int kt, auto stage_of) __attribute__((always_inline)) {
    const int stage = int(stage_of);
    wait_async<0>();
    barrier();  // tile kt is in; every wave is done with the other stage (and with Q in stage 1)
    if (kt + 1 < kt_end) fill(kt + 1, stage ^ 1);

    rt<T, BK, D> k;
    load(k, sk[stage]);
    rt_acc<BK, WQ> st_;  // S^T = K Q^T: keys x queries
    zero(st_);
    mma_ABt(st_, k, q, st_);

    // Element masks only where the tile crosses a visible range's edge for one of this wave's queries. In S^T a row
    // is a key j and a column a query i: i sees j when i + off - left <= j <= i + off + right.
    const long k0 = long(kt) * BK;
    const bool whole = k0 + BK <= blk.sk && (p.left < 0 || k0 >= wb + off - p.left) &&
                       (p.right < 0 || k0 + BK - 1 <= wa + off + p.right);
    if (!whole) {
      mask_bounds(st_, int(k0), int(wa), blk.sk, 0x7fffffff, -INFINITY);                   // keys past the end
      if (p.right >= 0) triu(st_, -INFINITY, int(-(off + p.right)), int(k0), int(wa));   // i - j < -(off + right)
      if (p.left >= 0) tril(st_, -INFINITY, int(p.left - off), int(k0), int(wa));        // i - j > left - off
    }

    // Online softmax down each column: new running max, the factor that rescales what came before, and
    // p = exp2(s * c - max).
    cols_vec tile_max, sub, alpha, sum;
    col_max(tile_max, st_);
    vec_apply(
        [c](float& mi, float& ti, float& si, float& ai) {
          const float m_new = fmaxf(mi, ti * c);
          si = m_new == -INFINITY ? 0.f : m_new;  // a query that has seen no key yet keeps p = 0
          ai = __builtin_amdgcn_exp2f(mi - si);
          mi = m_new;
        },
        m, tile_max, sub, alpha);
    map_cols(st_, sub, [c](float x, float mx) { return __builtin_amdgcn_exp2f(fmaf(x, c, -mx)); });
    col_sum(sum, st_);
    vec_apply([](float& li, float& ai, float& si) { li = li * ai + si; }, l, alpha, sum);
    mul_col(ot, alpha);

    // O^T += V^T P^T: P^T is the accumulator itself in acc order, V is read in the same order and used transposed.
    rt<T, BK, WQ, layout::col> pt;
    copy_acc_order(pt, st_);
    rt<T, BK, D, layout::col> vc;
    load_acc_order(vc, sv[stage]);
    rt<T, D, BK, layout::row> vt;
    transpose(vt, vc);  // the same registers
    mma_AB(ot, vt, pt, ot);
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

  // O = o / l (0 for a query that saw no key) and LSE = ln(sum of exp(scaled scores)) = (m + log2 l) * ln 2.
  cols_vec inv, lse;
  vec_apply(
      [](float& li, float& mi, float& ii, float& ei) {
        ii = li > 0.f ? 1.f / li : 0.f;
        ei = li > 0.f ? (mi + __log2f(li)) * 0.69314718055994531f : -INFINITY;
      },
      l, m, inv, lse);
  mul_col(ot, inv);
  rt<float, WQ, D, layout::row> o;
  transpose(o, ot);  // the same registers
  store_bounded(go, o, {0, 0, blk.tile * Tiles::waves + w, 0});  // straight from the accumulator: no LDS, no barrier
  if (p.lse) {
    const gl<float, 1, 1, 1, runtime_dim> row(p.lse + (varlen ? 0 : blk.b * p.lse_bs) + blk.h * p.lse_hs + blk.q_start,
                                              1, 1, 1, blk.sq);
    store(row, lse, {0, 0, 0, blk.tile * Tiles::waves + w});
  }
}

}  // namespace hk::kernels
