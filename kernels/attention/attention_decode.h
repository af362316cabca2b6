// Decode attention over a KV cache (flash-attention's flash_attn_with_kvcache): a few queries per sequence (Sq = 1 ..
// 16) against a long cache of keys, contiguous (B, S_max, Hkv, D) or paged (pages of any size, found through the
// block table).
//
// The work is memory-bound: every cached K and V byte is read once and meets only Sq * Hq / Hkv query rows, so the
// schedule is about keeping HBM busy, and the matrix cores only have to keep out of the way.
//   - One workgroup (4 waves) per (sequence, KV head, block of 16 query rows, split of the keys). The 16 rows are all
//     the query heads that read the KV head, times the queries (row r: query r / ratio, head r % ratio), so at Sq = 1
//     with GQA one 16-wide MFMA block serves ratio heads from one read of the cache; ratio * Sq > 16 takes more blocks.
//   - The 4 waves split the workgroup's keys further, tile by tile (32 keys): wave w takes tiles w, w + 4, ... Each
//     wave has its own running max, denominator and O^T (16 columns); at the end they meet in LDS and are summed in
//     wave order. No barrier in the loop: a wave waits for nothing but its own loads.
//   - Loads go from HBM straight to VGPRs, 16 bytes per lane (dwordx4), with a 64-bit address per row, so a row may be
//     anywhere: the page of key j is block_table[b][j / page_size]. Lane l reads rows l % 16 (+16) and the 16-byte
//     chunks 4 k + l / 16 of D: the four lane groups read 64 contiguous bytes of a row per instruction. K is used from
//     those registers as the A operand of S^T = K Q^T with D permuted (the chunk order above; Q is loaded with the same
//     permutation, and a contraction does not care about the order of its terms). V goes through a wave-private LDS
//     tile to be read transposed in the accumulator's order (acc_order.h) for O^T += V^T P^T.
//   - Bytes in flight: the next tile's loads are issued as soon as the current tile's registers are consumed (V
//     written to LDS, K through its MFMAs), so they fly during the softmax and the P V product; the block-table
//     entries are fetched one tile further ahead, before the data loads, so a dependent load never waits behind them.
//     16 KB (D = 128) per wave in flight, 8 to 16 waves per CU.
//   - Split-KV: with few (sequence, KV head) pairs the host splits the keys into `splits` ranges of split_tiles tiles
//     so that the grid fills the CUs; each split writes its normalized partial O and log2-LSE in fp32, and a second
//     kernel (a workgroup per query row, its threads over D and the splits) combines them in a fixed order.
//     Everything is summed in a fixed order: bit-identical from run to run.
//   - FP8 caches (KV = fp8e4m3, the arch's e4m3: FNUZ on gfx942, OCP e4m3fn on gfx950) move half the bytes: a 16-byte
//     load holds 16 elements, so lane group lg reads the 16-byte chunks 4 m + lg of a row (D permuted the other way,
//     Q alike; V written to LDS at its true columns). Each code is widened to T as the tile is consumed (two
//     v_cvt_pk_f32_fp8 per 4 codes, then a pack): every e4m3 value (FNUZ or OCP, subnormals included) is exact in
//     bf16 and f16, so the MFMAs see exactly the cached codes and no accuracy is lost before the products. The
//     descales are fp32 scalars of the workgroup's KV head (and sequence): k's folds into the exponent's scale
//     (S = (Q K^T) kd), v's into the final normalization (O = (P V) vd / l), so the loop does not see them.
// The masks are those of the forward (bottom-right causal, windows), per query row; keys past the sequence's end are
// read from its last key (clamped: never outside the cache) and masked.
#pragma once
#include "attention_common.h"

namespace hk::kernels {

struct DecodeArgs {
  const void *q, *k, *v;
  void* o;
  float* lse;                 // (B, Hq, Sq) or null
  float *part_o, *part_lse;   // splits > 1: [split][item][16][D] normalized partial O, [split][item][16] log2 LSE
  const int* block_table;     // (B, bt_stride) pages, or null: sequence b's keys are rows of "page" b
  const int* seqlens;         // (B) keys per sequence
  const float *k_descale, *v_descale;  // fp8 caches: entry b * bstride + h_kv * stride (0, 0: per tensor), or null (1)
  int k_ds_stride, v_ds_stride, k_ds_bstride, v_ds_bstride;
  long q_bs, q_rs, q_hs, o_bs, o_rs, o_hs;  // element strides of Q and O: batch, row, head
  long k_ps, k_rs, k_hs, v_ps, v_rs, v_hs;  // of the caches: page (contiguous: batch), row within it, head
  int bt_stride, page_size;
  int batch, heads_q, heads_kv, seqlen_q;
  int seqlen_new;             // keys appended at each sequence's end: it sees seqlens[b] + seqlen_new
  int q_blocks;               // blocks of 16 query rows per (sequence, KV head)
  int splits, split_tiles;    // key ranges per item and their length in tiles
  int combine_rows;           // workgroups of the combine per item: 16, or the rows of a single block
  int left, right;            // window (-1 unbounded; causal: right = 0)
  float scale_log2;
};

inline constexpr int decode_keys = 32;  // keys per wave tile
inline constexpr int decode_rows = 16;  // query rows per workgroup

// The workgroup's item: sequence b, KV head, block of query rows and split; items are numbered without the split.
struct DecodeItem {
  int b, h_kv, qb, split, item;
  __device__ explicit DecodeItem(const DecodeArgs& p) {
    int id = int(blockIdx.x);
    split = id % p.splits, id /= p.splits;
    item = id;
    qb = id % p.q_blocks, id /= p.q_blocks;
    h_kv = id % p.heads_kv, b = id / p.heads_kv;
  }
};

// Two floats that T holds exactly (the widened fp8 codes) packed into T's pair: no rounding needed.
template <class T>
__device__ inline uint32_t pack_exact(float lo, float hi) {
  if constexpr (std::is_same_v<T, bf16>)
    return (__builtin_bit_cast(uint32_t, lo) >> 16) | (__builtin_bit_cast(uint32_t, hi) & 0xffff0000u);
  else return __builtin_bit_cast(uint32_t, __builtin_amdgcn_cvt_pkrtz(lo, hi));
}

// KV: the caches' element type, T (Q's) or fp8e4m3.
template <class T, class KV, int D>
__global__ __launch_bounds__(256) void attention_decode(DecodeArgs p) {
  constexpr int BK = decode_keys, WQ = decode_rows, NC = D / 32, NR = BK / 16;
  constexpr int LE = 16 / int(sizeof(KV)), SUB = LE / 8, NL = NC / SUB;  // elements per load, chunks of 8 per load
  using k_tile = rt<T, BK, D, layout::row>;
  using q_tile = rt<T, WQ, D, layout::row>;
  using v_tile = rt<T, BK, D, layout::col>;
  using p_tile = rt<T, BK, WQ, layout::col>;
  using s_tile = rt_acc<BK, WQ>;
  using cols_vec = rv<float, WQ, vec_align::cols>;
  using raw = uint4[NR][NC];   // 8 T elements per uint4
  using kvraw = uint4[NR][NL];  // the loads: LE KV elements per uint4
  static_assert(sizeof(st<T, BK, D>) == WQ * D * sizeof(float), "a wave's V tile holds its O^T for the combine");
  __shared__ st<T, BK, D> sv[4];
  __shared__ float stats[4][2][WQ];

  const DecodeItem it(p);
  const int wave = __builtin_amdgcn_readfirstlane(int(threadIdx.x / 64)), lane = lane_id();
  const int lr = lane % 16, lg = lane / 16;
  // The D offset of this lane's chunk c (8 elements) of a row: the permutation of D that K, Q and V share.
  auto dof = [&](int c) { return LE * (4 * (c / SUB) + lg) + 8 * (c % SUB); };
  const int ratio = p.heads_q / p.heads_kv, rows = p.seqlen_q * ratio;
  const int sk = p.seqlens[it.b] + p.seqlen_new, sq = p.seqlen_q, off = sk - sq;
  const int row0 = it.qb * WQ, q_first = row0 / ratio, q_last = (std::min(row0 + WQ, rows) - 1) / ratio;

  // Q: row lr of the block (query (row0 + lr) / ratio of head h_kv * ratio + (row0 + lr) % ratio), D permuted.
  q_tile q;
  {
    const int rr = row0 + lr;
    raw qr{};
    if (rr < rows) {
      const T* src = static_cast<const T*>(p.q) + it.b * p.q_bs + long(rr / ratio) * p.q_rs +
                     long(it.h_kv * ratio + rr % ratio) * p.q_hs;
#pragma unroll
      for (int c = 0; c < NC; ++c) qr[0][c] = *reinterpret_cast<const uint4*>(src + dof(c));
    }
    __builtin_memcpy(&q.data[0][0][0], &qr[0][0], sizeof(q.data));
  }

  // The keys any row of the block sees, as tiles, and this split's part of them.
  const int lo = p.left < 0 ? 0 : std::max(0, q_first + off - p.left);
  const int hi = p.right < 0 ? sk - 1 : std::min(sk - 1, q_last + off + p.right);
  int kt_begin = lo / BK, kt_end = hi >= lo ? hi / BK + 1 : kt_begin;
  kt_begin = std::max(kt_begin, it.split * p.split_tiles), kt_end = std::min(kt_end, (it.split + 1) * p.split_tiles);

  // Element offsets of this lane's rows of tile kt (clamped to the last key) in the caches.
  const KV* kbase = static_cast<const KV*>(p.k) + it.h_kv * p.k_hs + LE * lg;
  const KV* vbase = static_cast<const KV*>(p.v) + it.h_kv * p.v_hs + LE * lg;
  const int* table = p.block_table ? p.block_table + long(it.b) * p.bt_stride : nullptr;
  auto key_of = [&](int kt, int tr) { return std::min(kt * BK + 16 * tr + lr, sk - 1); };
  auto pages_of = [&](int kt, int (&pg)[NR]) __attribute__((always_inline)) {
#pragma unroll
    for (int tr = 0; tr < NR; ++tr)
      pg[tr] = table ? table[unsigned(key_of(kt, tr)) / unsigned(p.page_size)] : it.b;
  };
  auto issue = [&](int kt, const int (&pg)[NR], kvraw& kr, kvraw& vr) __attribute__((always_inline)) {
#pragma unroll
    for (int tr = 0; tr < NR; ++tr) {
      const unsigned j = unsigned(key_of(kt, tr)), pos = table ? j % unsigned(p.page_size) : j;
      const KV* ks = kbase + pg[tr] * p.k_ps + long(pos) * p.k_rs;
      const KV* vs = vbase + pg[tr] * p.v_ps + long(pos) * p.v_rs;
#pragma unroll
      for (int m = 0; m < NL; ++m) kr[tr][m] = *reinterpret_cast<const uint4*>(ks + 4 * LE * m);
#pragma unroll
      for (int m = 0; m < NL; ++m) vr[tr][m] = *reinterpret_cast<const uint4*>(vs + 4 * LE * m);
    }
  };
  // Loaded registers as T chunks (fp8: chunk 2 m + s from the words 2 s, 2 s + 1 of load m).
  auto widen = [&](const kvraw& in, raw& out) __attribute__((always_inline)) {
    if constexpr (std::is_same_v<KV, T>) {
      __builtin_memcpy(&out[0][0], &in[0][0], sizeof(raw));
    } else {
#pragma unroll
      for (int tr = 0; tr < NR; ++tr)
#pragma unroll
        for (int m = 0; m < NL; ++m) {
          const uint32_t w[4] = {in[tr][m].x, in[tr][m].y, in[tr][m].z, in[tr][m].w};
          uint32_t h[8];
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const auto a = __builtin_amdgcn_cvt_pk_f32_fp8(int(w[i]), false), b = __builtin_amdgcn_cvt_pk_f32_fp8(int(w[i]), true);
            h[2 * i] = pack_exact<T>(a[0], a[1]), h[2 * i + 1] = pack_exact<T>(b[0], b[1]);
          }
          out[tr][2 * m] = uint4{h[0], h[1], h[2], h[3]}, out[tr][2 * m + 1] = uint4{h[4], h[5], h[6], h[7]};
        }
    }
  };

  cols_vec m, l;
  m.data[0][0] = -INFINITY, l.data[0][0] = 0.f;
  rt_acc<D, WQ> ot;
  zero(ot);
  // This lane's query (its column of S^T) for the masks.
  const int my_q = (row0 + lr) / ratio;
  const int right = p.right < 0 ? INT_MAX : p.right, left = p.left < 0 ? INT_MAX : p.left;
  const float kd = p.k_descale ? p.k_descale[it.b * p.k_ds_bstride + it.h_kv * p.k_ds_stride] : 1.f;
  const float vd = p.v_descale ? p.v_descale[it.b * p.v_ds_bstride + it.h_kv * p.v_ds_stride] : 1.f;
  const float c = p.scale_log2 * kd;
  st<T, BK, D>& sv_me = sv[wave];

  int kt = kt_begin + wave;
  kvraw kr, vr;
  int pg[NR], pg_next[NR];
  if (kt < kt_end) {
    pages_of(kt, pg);
    issue(kt, pg, kr, vr);
    if (kt + 4 < kt_end) pages_of(kt + 4, pg_next);
  }
  for (; kt < kt_end; kt += 4) {
    // V to the wave's LDS tile (row 16 tr + lr, its chunks at their columns), K into the MFMA operand.
    raw vw;
    widen(vr, vw);
#pragma unroll
    for (int tr = 0; tr < NR; ++tr)
#pragma unroll
      for (int cc = 0; cc < NC; ++cc) {
        constexpr int piece = st<T, BK, D>::chunk_elems;
        const T* src = reinterpret_cast<const T*>(&vw[tr][cc]);
#pragma unroll
        for (int e = 0; e < 8; e += piece)
          *reinterpret_cast<detail::chunk<T, piece>*>(&sv_me(16 * tr + lr, dof(cc) + e)) =
              *reinterpret_cast<const detail::chunk<T, piece>*>(src + e);
      }
    k_tile k;
    {
      raw kw;
      widen(kr, kw);
      __builtin_memcpy(&k.data[0][0][0], &kw[0][0], sizeof(k.data));
    }
    s_tile s;
    zero(s);
    mma_ABt(s, k, q, s);
    // The registers are free: the next tile's loads fly from here, and the page entries of the one after.
    if (kt + 4 < kt_end) {
      for (int tr = 0; tr < NR; ++tr) pg[tr] = pg_next[tr];
      issue(kt + 4, pg, kr, vr);
      if (kt + 8 < kt_end) pages_of(kt + 8, pg_next);
    }
    // Masks, where the tile crosses a row's visible range or the end of the keys (keys are S^T's rows).
    const int k0 = kt * BK;
    const bool whole = k0 + BK <= sk && (p.right < 0 || k0 + BK - 1 <= q_first + off + p.right) &&
                       (p.left < 0 || k0 >= q_last + off - p.left);
    if (!whole) {
#pragma unroll
      for (int i = 0; i < s_tile::tiles_r; ++i)
#pragma unroll
        for (int e = 0; e < s_tile::E; ++e) {
          const int j = k0 + s_tile::row_of(i, lane, e), dd = j - my_q - off;
          if (!(j < sk && dd <= right && -dd <= left)) s.data[i][0][e] = -INFINITY;
        }
    }
    // The online softmax (as AttnWave::softmax, lazy rescale by 2^8).
    cols_vec tile_max;
    col_max(tile_max, s);
    const float mi = m.data[0][0], ti = tile_max.data[0][0];
    const bool moved = __any(ti * c - mi > 8.f);
    const float m_new = moved ? fmaxf(mi, ti * c) : mi;
    const float sub = m_new == -INFINITY ? 0.f : m_new;
    const float alpha = moved ? __builtin_amdgcn_exp2f(mi - sub) : 1.f;
    m.data[0][0] = m_new;
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < s_tile::tiles_r; ++i)
#pragma unroll
      for (int e = 0; e < s_tile::E; ++e) {
        const float x = __builtin_amdgcn_exp2f(fmaf(s.data[i][0][e], c, -sub));
        s.data[i][0][e] = x, acc += x;
      }
    l.data[0][0] = l.data[0][0] * alpha + detail::lanes_reduce<detail::sum_op>(acc, 16, 32);
    p_tile pt;
    copy_acc_order(pt, s);
    if (moved) {
      cols_vec a;
      a.data[0][0] = alpha;
      mul_col(ot, a);
    }
    wave_barrier();  // the wave's V writes before its reads
    v_tile vc;
    load_acc_order(vc, sv_me);
    rt<T, D, BK, layout::row> vt;
    transpose(vt, vc);
    mma_AB(ot, vt, pt, ot);
    wave_barrier();  // the reads before the next tile's writes
  }

  // The waves meet in LDS: O^T (unnormalized, column-major with each column rotated by 4 c floats), max and sum.
  float* o_lds = reinterpret_cast<float*>(sv_me.data);
#pragma unroll
  for (int i = 0; i < ot.tiles_r; ++i) {
    const int d = 16 * i + 4 * lg;
    *reinterpret_cast<float4*>(o_lds + lr * D + (d + 4 * lr) % D) =
        float4{ot.data[i][0][0], ot.data[i][0][1], ot.data[i][0][2], ot.data[i][0][3]};
  }
  if (lane < 16) stats[wave][0][lane] = m.data[0][0], stats[wave][1][lane] = l.data[0][0];
  barrier();
  // Thread t: column t / 16, elements (t % 16) * D / 16 ... of D; the four waves summed in order.
  constexpr int per = D / 16;
  const int col = int(threadIdx.x) / 16, d0 = int(threadIdx.x) % 16 * per;
  float mw[4], M = -INFINITY, L = 0.f, o[per] = {};
#pragma unroll
  for (int w = 0; w < 4; ++w) M = fmaxf(M, mw[w] = stats[w][0][col]);
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    const float a = mw[w] == -INFINITY ? 0.f : __builtin_amdgcn_exp2f(mw[w] - M);
    L += a * stats[w][1][col];
    const float* src = reinterpret_cast<const float*>(sv[w].data) + col * D;
#pragma unroll
    for (int e = 0; e < per; ++e) o[e] += a * src[(d0 + e + 4 * col) % D];
  }
  const float inv = L > 0.f ? vd / L : 0.f, lse2 = L > 0.f ? M + __log2f(L) : -INFINITY;
  const int rr = row0 + col;
  if (rr >= rows) return;
  if (p.splits > 1) {
    const long at = long(it.split) * (long(p.batch) * p.heads_kv * p.q_blocks) + it.item;
    float* dst = p.part_o + (at * WQ + col) * D + d0;
#pragma unroll
    for (int e = 0; e < per; ++e) dst[e] = o[e] * inv;
    if (d0 == 0) p.part_lse[at * WQ + col] = lse2;
    return;
  }
  const int qi = rr / ratio, h = it.h_kv * ratio + rr % ratio;
  T* dst = static_cast<T*>(p.o) + it.b * p.o_bs + long(qi) * p.o_rs + long(h) * p.o_hs + d0;
#pragma unroll
  for (int e = 0; e < per; ++e) dst[e] = to<T>(o[e] * inv);
  if (p.lse && d0 == 0) p.lse[(long(it.b) * p.heads_q + h) * sq + qi] = lse2 * 0.69314718055994531f;
}

inline constexpr int decode_max_splits = 1024;  // the combine keeps every split's LSE of a row in LDS

// The splits' partials of one query row (workgroup: item, row) combined in a fixed order: O = sum_s w_s O_s / sum_s
// w_s with w_s = 2^(lse_s - M), M the largest lse_s. Thread t takes elements 4 (t % (D / 4)) .. + 3 (one 16-byte load)
// of the splits s = t / (D / 4) (mod G), in increasing order; the G groups' sums then meet in LDS, summed in order.
template <class T, int D>
__global__ __launch_bounds__(256) void attention_decode_combine(DecodeArgs p) {
  constexpr int WQ = decode_rows, G = 256 / (D / 4);
  __shared__ float lses[decode_max_splits], top[4];
  __shared__ float4 part[G][D / 4];
  __shared__ float sums[G];
  const int item = int(blockIdx.x) / p.combine_rows, col = int(blockIdx.x) % p.combine_rows;
  const int items = p.batch * p.heads_kv * p.q_blocks;
  const int qb = item % p.q_blocks, h_kv = item / p.q_blocks % p.heads_kv, b = item / p.q_blocks / p.heads_kv;
  const int ratio = p.heads_q / p.heads_kv, rows = p.seqlen_q * ratio, rr = qb * WQ + col;
  if (rr >= rows) return;
  const int t = int(threadIdx.x);
  float m = -INFINITY;
  for (int s = t; s < p.splits; s += 256) m = fmaxf(m, lses[s] = p.part_lse[(long(s) * items + item) * WQ + col]);
  m = detail::lanes_reduce<detail::max_op>(m, 1, 32);
  if (t % 64 == 0) top[t / 64] = m;
  barrier();
  const float M = fmaxf(fmaxf(top[0], top[1]), fmaxf(top[2], top[3]));
  const int d4 = t % (D / 4), g = t / (D / 4);
  float4 acc = {0.f, 0.f, 0.f, 0.f};
  float L = 0.f;
  if (M != -INFINITY) {
#pragma unroll 4
    for (int s = g; s < p.splits; s += G) {
      const float ls = lses[s], w = ls == -INFINITY ? 0.f : __builtin_amdgcn_exp2f(ls - M);
      const float4 x = reinterpret_cast<const float4*>(p.part_o + ((long(s) * items + item) * WQ + col) * D)[d4];
      L += w;
      acc.x += w * x.x, acc.y += w * x.y, acc.z += w * x.z, acc.w += w * x.w;
    }
  }
  part[g][d4] = acc;
  if (d4 == 0) sums[g] = L;
  barrier();
  if (g) return;
  float4 o = {0.f, 0.f, 0.f, 0.f};
  float l = 0.f;
#pragma unroll
  for (int i = 0; i < G; ++i) {
    const float4 x = part[i][d4];
    o.x += x.x, o.y += x.y, o.z += x.z, o.w += x.w, l += sums[i];
  }
  const float inv = l > 0.f ? 1.f / l : 0.f;
  const int qi = rr / ratio, h = h_kv * ratio + rr % ratio;
  T* dst = static_cast<T*>(p.o) + b * p.o_bs + long(qi) * p.o_rs + long(h) * p.o_hs + 4 * d4;
  dst[0] = to<T>(o.x * inv), dst[1] = to<T>(o.y * inv), dst[2] = to<T>(o.z * inv), dst[3] = to<T>(o.w * inv);
  if (p.lse && d4 == 0)
    p.lse[(long(b) * p.heads_q + h) * p.seqlen_q + qi] = l > 0.f ? (M + __log2f(l)) * 0.69314718055994531f : -INFINITY;
}

}  // namespace hk::kernels
