// What the attention forward kernels share: their arguments, a workgroup's place in the problem, and one wave's part
// of the computation — its queries' running softmax statistics and O^T, and the two steps that fold a KV tile into
// them (the scores and the online softmax; the P V product).
//
// Each wave computes the transposed products, S^T = K Q^T and O^T += V^T P^T: a query is then a column of the
// accumulators, so its softmax statistics are column reductions (in registers, then two shuffles), and P^T is the S^T
// accumulator itself as the next product's B operand (ops/acc_order.h: no cross-lane moves), with V read in the same
// k order. The online softmax runs in fp32 with scale * log2(e) folded into one multiply-add before exp2 (packed, two
// elements an instruction), its running max moved lazily (softmax), and O leaves
// from the registers (the transpose of O^T's accumulator is free). A tile is masked element by element only where it
// crosses the visible range of one of the wave's queries (the causal or window diagonal, or the end of the keys).
#pragma once
#include <climits>
#include <cmath>

#include "hk/hk.h"
#include "attention_p.h"  // hk/ops/acc_order.h and P^T's conversion
#include "attention_fp8.h"  // the FP8 forward's element types, S^T's fp8 MFMA, the descales
#include "hk/ops/async.h"
#include "hk/ops/philox.h"

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
  const float* sinks;      // one logit per query head in every row's softmax denominator (natural units), or null
  const float* alibi;      // AttnVariant::alibi: slope of (b, h) at alibi[b * alibi_bs + h] (alibi_bs 0: per head)
  long alibi_bs;
  float alibi_unit;        // the scores' unit the slopes are divided by: scale, or the cap with softcap (alibi_slope)
  int batch, heads_q, heads_kv;
  int seqlen_q, seqlen_k;  // of every sequence (padded batches; unused with cu_q / cu_k)
  int q_tiles;             // query tiles of the longest query sequence
  float scale_log2;        // softmax_scale * log2(e)
  float scale;             // softmax_scale
  int left, right;         // visible keys of query i: [i + Sk - Sq - left, i + Sk - Sq + right]; -1 = unbounded
  struct Softcap {  // AttnVariant::softcap
    float k;  // 2 log2(e) scale / cap
    // A raw score s becomes t = tanh(s scale / cap) and the host sets scale_log2 to cap log2(e): t scale_log2 is cap
    // tanh(scale s / cap) in log2 units, so the softmax, the LSE and the backward's final scale stay as they are.
    // tanh(y) = sign(y) f(u), u = e^{-2|y|} = exp2(-|s k|) in (0, 1], f(u) = (1 - u) / (1 + u): f by a degree-6
    // polynomial (constrained minimax: f(0) = 1 and f(1) = 0 exactly, so t(0) = 0 and t(+-inf) = +-1), within
    // tanh_error of tanh everywhere, fp32 evaluation included: a logit off by at most cap times that (30:
    // 5e-4, a quarter of bf16 P's rounding). One exp2 a score (the reciprocal of 1 - 2 / (e^{2y} + 1) was a second
    // transcendental, each four packed instructions' time): a multiply, the exp2 (|.| and - as modifiers), 6 packed
    // multiply-adds a pair and a sign copy, 34 VALU cycles a score where that took 38 (f's degree 5: 32 cycles, but
    // 9e-5, a logit off by bf16's rounding at cap 21).
    static constexpr double tanh_error = 1.6e-5;  // (tests/kernels/attention_ref.h's cap_error)
    // Chains: pairs whose Horner chains interleave (where a tile's pairs allow): a packed multiply-add that reads the
    // one before it waits a cycle (an s_nop between the steps of one chain). Four in the forward (MI355X GQA D128
    // N8192: 881.3 -> 932.6 TFLOP/s); one in the backward, whose 256-VGPR pairs kernel holds four chains' operands
    // worse (dK/dV 82.1 -> 86.3 ms with four).
    // f's coefficients, f(u) = 1 + c1 u + ... + c6 u^6 (the backward's one-wave kernels run the steps as tasks).
    static constexpr float c1 = -0x1.ffbad6p+0f, c2 = 0x1.fa2324p+0f, c3 = -0x1.d45054p+0f, c4 = 0x1.60318ep+0f,
                           c5 = -0x1.5b223ep-1f, c6 = 0x1.3a3caep-3f;
    template <int Chains = 4, class Tile>
    __device__ __attribute__((always_inline)) void apply(Tile& s) const {
      using f2 = float __attribute__((ext_vector_type(2)));
      static_assert(Tile::E % 2 == 0, "pairs of elements");
      constexpr int P = Chains >= 4 && Tile::E % 8 == 0 ? 4 : Chains >= 2 && Tile::E % 4 == 0 ? 2 : 1;
#pragma unroll
      for (int i = 0; i < Tile::tiles_r; ++i)
#pragma unroll
        for (int j = 0; j < Tile::tiles_c; ++j)
#pragma unroll
          for (int e = 0; e < Tile::E; e += 2 * P) {
            f2 x[P], u[P], f[P];
#pragma unroll
            for (int q = 0; q < P; ++q) x[q] = f2{s.data[i][j][e + 2 * q], s.data[i][j][e + 2 * q + 1]} * f2{k, k};
#pragma unroll
            for (int q = 0; q < P; ++q)
              u[q] = {__builtin_amdgcn_exp2f(-__builtin_fabsf(x[q].x)), __builtin_amdgcn_exp2f(-__builtin_fabsf(x[q].y))};
#pragma unroll
            for (int q = 0; q < P; ++q) f[q] = u[q] * f2{c6, c6} + f2{c5, c5};
#pragma unroll
            for (int q = 0; q < P; ++q) f[q] = f[q] * u[q] + f2{c4, c4};
#pragma unroll
            for (int q = 0; q < P; ++q) f[q] = f[q] * u[q] + f2{c3, c3};
#pragma unroll
            for (int q = 0; q < P; ++q) f[q] = f[q] * u[q] + f2{c2, c2};
#pragma unroll
            for (int q = 0; q < P; ++q) f[q] = f[q] * u[q] + f2{c1, c1};
#pragma unroll
            for (int q = 0; q < P; ++q) f[q] = f[q] * u[q] + f2{1.f, 1.f};
#pragma unroll
            for (int q = 0; q < P; ++q) {
              float& t0 = s.data[i][j][e + 2 * q];
              float& t1 = s.data[i][j][e + 2 * q + 1];
              t0 = __builtin_copysignf(f[q].x, x[q].x), t1 = __builtin_copysignf(f[q].y, x[q].y);
              // Here, not sunk to the masks of the next phase (which held x and f both across its reads: spills).
              asm volatile("" : "+v"(t0), "+v"(t1));
            }
          }
    }
    // The backward's factor d(cap tanh(y)) / d(scale s) = 1 - t^2 of a capped score t, which the backward folds into
    // dP - delta before the masks (a hidden score's P is 0, so its dS is 0 whatever the factor).
    __device__ static float slope(float t) { return fmaf(-t, t, 1.f); }
  } cap;
  // FP8 (fp8e4m3 Q and K): Q's and K's strides above in 2-byte units (attn_qk_t); the descales of (b, kv head h) at b * descale_bs + h * descale_hs (null: 1); the kernels
  // fold q_descale * k_descale into scale_log2 and v_descale into O (attn_descale).
  const float *q_descale, *k_descale, *v_descale;
  long descale_bs, descale_hs;
  float o_scale;  // O's factor beyond 1 / l: v_descale, set by attn_descale (the host passes 1)
  struct Dropout {  // AttnVariant::dropout: hk's dropout stream (ops/philox.h), stream offset + b Hq + h
    uint32_t seed_lo, seed_hi, offset_lo, offset_hi;
    uint32_t keep_max;   // an element is kept when its 8 random bits are <= keep_max (dropout_keep_max8(p))
    float scale;         // 1 / (1 - p)
  } drop;
};

// What a kernel instance computes beyond plain softmax attention, fixed at compile time (one instance per variant
// the host launches, so the plain kernel pays nothing for the others).
struct AttnVariant {
  bool softcap = false;  // scores capped to cap tanh(scale s / cap) before the softmax (Gemma 2's logit softcapping)
  bool alibi = false;    // ALiBi: -slope |j - i - (Sk - Sq)| added to the (capped) scaled score of query i and key j
  bool dropout = false;  // P's elements dropped (attn_dropout_keep), the kept ones scaled by 1 / (1 - p) in P V
  // Every feature, each on where the arguments ask for it (attn_softcap_on ...: a scalar test a tile), in any
  // combination: the wide heads' one featured instance per kernel, where a feature's vector work is small next to
  // the MFMAs of D = 192 or 256 and an instance per feature would triple their compile time; at D = 64 and 128 the
  // instance of two or three features together (one per feature keeps each alone at its own schedule).
  bool dynamic = false;
};

// An instance with none of the features (attention sinks change only the LSE and need no instance of their own).
template <AttnVariant V>
inline constexpr bool attn_plain = !V.softcap && !V.alibi && !V.dropout && !V.dynamic;

// Whether an instance of V caps, biases or drops for the arguments p: V's own features, or (dynamic) those p asks for
// (the host leaves cap.k 0 without softcap; p = 0 keeps every 8-bit value: dropout_keep_max8).
template <AttnVariant V> __device__ inline bool attn_softcap_on(const AttnArgs& p) { return V.dynamic ? p.cap.k != 0.f : V.softcap; }
template <AttnVariant V> __device__ inline bool attn_alibi_on(const AttnArgs& p) { return V.dynamic ? p.alibi != nullptr : V.alibi; }
template <AttnVariant V> __device__ inline bool attn_dropout_on(const AttnArgs& p) { return V.dynamic ? p.drop.keep_max < 255 : V.dropout; }

// Dropout (flash-attention's: its generator, Philox4x32 with 7 rounds, and its 8-bit decisions): element (i, j) of
// sequence b, query head h (query i, key j) takes byte j % 4 of word i % 4 of philox4x32_r<7>({j / 4, i / 4, stream
// low, stream high}, {seed low, seed high}), stream = offset + b Hq + h, and is kept when that byte is <= keep_max =
// floor(255 (1 - p)) (dropout_keep_max8): one call serves a block of 4 queries by 4 keys. A function of the problem's
// coordinates alone, so every kernel (forward, backward, any tile shape, either arch) regenerates the same mask. The
// softmax's denominator and the LSE take the whole P; O = (mask * P / (1 - p)) V; the backward scales dP by the same
// mask and factor.
inline constexpr int attn_dropout_rounds = 7;  // (ten, Random123's default, cost MI355X GQA D128 N8192 ...)

// Lanes l and l ^ dist trade: the lower lane's y and the upper lane's x change places (the lower keeps x, the upper
// y). Within a quad (dist 1, 2) one DPP move; at 32 v_permlane32_swap where the target has it; else ds_bpermute.
template <int dist>
__device__ __attribute__((always_inline)) inline void attn_lanes_swap(uint32_t& x, uint32_t& y) {
  const bool lower = !(lane_id() & dist);
  if constexpr (dist == 32 && arch::current::permlane32_swap) {
    arch::current::halves_swap(x, y);
  } else {
    constexpr int quad_perm = dist == 1 ? 0xB1 : 0x4E;  // [1, 0, 3, 2], [2, 3, 0, 1]
    const int mine = int(lower ? y : x);
    (lower ? y : x) = uint32_t(dist <= 2 ? __builtin_amdgcn_mov_dpp(mine, quad_perm, 0xf, 0xf, false) : __shfl_xor(mine, dist));
  }
}

// The butterfly of attn_lanes_swap<2> (x[0], x[2]), (x[1], x[3]), then <1> (x[0], x[1]), (x[2], x[3]) (each lane
// of a quad ends with word u of the 4 lanes' words in order, u its place in the quad) as 8 selects that read the
// partner's register through DPP (v_cndmask_b32_dpp: vcc ? src1 : src0 of the lane quad_perm names): the swaps' 4
// DPP moves and 12 selects (the selects' lane mask an SGPR pair, which rules out the DPP form) in 8 VALU and 4 SALU
// pairs that set vcc. (The 2 wait states a DPP read needs after the VALU that wrote its register: the vcc moves.)
__device__ __attribute__((always_inline)) inline void attn_quad_transpose(uint32_t (&x)[4]) {
  uint32_t a0, a1, a2, a3, b0, b1, b2, b3;
  asm("s_mov_b32 vcc_lo, 0x33333333\n s_mov_b32 vcc_hi, 0x33333333\n"
      " v_cndmask_b32_dpp %0, %10, %8, vcc quad_perm:[2,3,0,1] row_mask:0xf bank_mask:0xf\n"
      " v_cndmask_b32_dpp %1, %11, %9, vcc quad_perm:[2,3,0,1] row_mask:0xf bank_mask:0xf\n"
      " s_mov_b32 vcc_lo, 0xcccccccc\n s_mov_b32 vcc_hi, 0xcccccccc\n"
      " v_cndmask_b32_dpp %2, %8, %10, vcc quad_perm:[2,3,0,1] row_mask:0xf bank_mask:0xf\n"
      " v_cndmask_b32_dpp %3, %9, %11, vcc quad_perm:[2,3,0,1] row_mask:0xf bank_mask:0xf\n"
      " s_mov_b32 vcc_lo, 0x55555555\n s_mov_b32 vcc_hi, 0x55555555\n"
      " v_cndmask_b32_dpp %4, %1, %0, vcc quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf\n"
      " v_cndmask_b32_dpp %6, %3, %2, vcc quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf\n"
      " s_mov_b32 vcc_lo, 0xaaaaaaaa\n s_mov_b32 vcc_hi, 0xaaaaaaaa\n"
      " v_cndmask_b32_dpp %5, %0, %1, vcc quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf\n"
      " v_cndmask_b32_dpp %7, %2, %3, vcc quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf"
      : "=&v"(a0), "=&v"(a1), "=&v"(a2), "=&v"(a3), "=&v"(b0), "=&v"(b1), "=&v"(b2), "=&v"(b3)
      : "v"(x[0]), "v"(x[1]), "v"(x[2]), "v"(x[3])
      : "vcc");
  x[0] = b0, x[1] = b1, x[2] = b2, x[3] = b3;
}

// f(i, j, e, kept) for every element data[i][j][e] of a score accumulator whose element (0, 0) is query q0 and key k0
// (both multiples of 4), keys along the rows when `keys_are_rows`. An accumulator lane holds runs of 4 rows aligned to
// 4 in one column, and the 4 lanes of a quad (l & ~3 .. l | 3) hold the 4 adjacent columns: together, the 4x4 blocks
// of Philox calls, one block per run. So the quad shares its calls: for each 4 runs, each lane makes the call of one
// (u = l & 3: run 4 g + u of the group) and lays it out as 4 words, word v the 4 bytes lane v needs (along keys (S^T)
// the call's word v itself, query v's keys; along queries (S), byte v of each word, a 4x4 byte transpose in 8 v_perm);
// a butterfly of 4 swaps (2 DPP moves at distance 2, then at 1) gives each lane its word of every block of the group,
// in order, and each element is one compare of its byte. Runs left over (fewer than 4) take a call each, per lane.
// `fresh`: the lane's parts found again at each call, not held across the caller's loop (the dynamic forward at D =
// 192 on gfx942 spilled one VGPR so). `opaque_keys`: the seed and stream recomputed at each call (the ping-pong forward's: else
// LLVM hoists every round's key out of its loop into SGPRs, which spilled; the backward's kernels are faster without).
// attn_dropout_words: the same walk, out(n, word) for every run n with its word (byte t: element 4 (n % per) + t of
// run n's base tile, as emit below). `dpp_swaps`: the butterfly as attn_quad_transpose's 8 DPP selects (the forward's).
template <bool keys_are_rows, class Tile, class G, bool fresh = false, bool opaque_keys = false, bool dpp_swaps = false>
__device__ __attribute__((always_inline)) inline void attn_dropout_words(const AttnArgs& p, int b, int h, int q0, int k0,
                                                                         G out) {
  static_assert(Tile::run == 4 && Tile::dim % 4 == 0, "runs of 4 rows, quads of adjacent columns");
  const uint64_t stream = (uint64_t(p.drop.offset_hi) << 32 | p.drop.offset_lo) + uint64_t(b) * uint32_t(p.heads_q) + uint32_t(h);
  const uint32_t s_lo = uint32_t(stream), s_hi = uint32_t(stream >> 32), keep_max = p.drop.keep_max;
  int lane = lane_id();
  if constexpr (fresh) asm volatile("" : "+v"(lane));
  const int u = lane & 3, rl = Tile::row_lane_part(lane), cl = Tile::col_lane_part(lane) & ~3;
  constexpr int per = Tile::E / 4, runs = Tile::tiles_r * per * Tile::tiles_c, groups = runs / 4;
  // Run n: base tile (n / per % tiles_r, n / per / tiles_r), elements 4 (n % per) ...; its first row and its column
  // (the quad's first), the tile parts (compile-time).
  auto run_row = [](int n) { return Tile::row_tile_part(n / per % Tile::tiles_r, 4 * (n % per)); };
  auto run_col = [](int n) { return Tile::col_tile_part(n / per / Tile::tiles_r, 0); };
  // The call of the block at (first row r, column c) as the 4 words lanes u = 0 .. 3 take.
  auto words = [&](int r, int c, uint32_t (&x)[4]) __attribute__((always_inline)) {
    const int row = r + rl, col = c + cl;
    const uint32_t key = uint32_t(keys_are_rows ? k0 + row : k0 + col), query = uint32_t(keys_are_rows ? q0 + col : q0 + row);
    // With opaque_keys, the seed and stream through an empty asm here: else LLVM hoists every round's key (and the
    // stream's round-0 products) out of the loop into 20-odd SGPRs, which spilled in the forward (12, to VGPR lanes);
    // recomputed, they are SALU work. (The backward keeps them hoisted: its dropout runs 10% slower recomputing them.)
    uint32_t k_lo = p.drop.seed_lo, k_hi = p.drop.seed_hi, c_lo = s_lo, c_hi = s_hi;
    if constexpr (opaque_keys) asm volatile("" : "+s"(k_lo), "+s"(k_hi), "+s"(c_lo), "+s"(c_hi));
    const philox4x32 w = philox4x32_r<attn_dropout_rounds>({{key >> 2, query >> 2, c_lo, c_hi}}, k_lo, k_hi);
    if constexpr (keys_are_rows) {
#pragma unroll
      for (int v = 0; v < 4; ++v) x[v] = w.v[v];
    } else {  // x[v] byte t = w.v[t] byte v
      const uint32_t a = __builtin_amdgcn_perm(w.v[1], w.v[0], 0x06020400u), bq = __builtin_amdgcn_perm(w.v[1], w.v[0], 0x07030501u);
      const uint32_t c2 = __builtin_amdgcn_perm(w.v[3], w.v[2], 0x06020400u), d = __builtin_amdgcn_perm(w.v[3], w.v[2], 0x07030501u);
      x[0] = __builtin_amdgcn_perm(c2, a, 0x05040100u), x[2] = __builtin_amdgcn_perm(c2, a, 0x07060302u);
      x[1] = __builtin_amdgcn_perm(d, bq, 0x05040100u), x[3] = __builtin_amdgcn_perm(d, bq, 0x07060302u);
    }
  };
  auto pick = [u](int v0, int v1, int v2, int v3) { return u & 2 ? (u & 1 ? v3 : v2) : (u & 1 ? v1 : v0); };
#pragma unroll
  for (int g = 0; g < groups; ++g) {
    const int n = 4 * g;
    uint32_t x[4];
    words(pick(run_row(n), run_row(n + 1), run_row(n + 2), run_row(n + 3)),
          pick(run_col(n), run_col(n + 1), run_col(n + 2), run_col(n + 3)), x);
    if constexpr (dpp_swaps) {
      attn_quad_transpose(x);
    } else {
      attn_lanes_swap<2>(x[0], x[2]);
      attn_lanes_swap<2>(x[1], x[3]);
      attn_lanes_swap<1>(x[0], x[1]);
      attn_lanes_swap<1>(x[2], x[3]);
    }
#pragma unroll
    for (int t = 0; t < 4; ++t) out(n + t, x[t]);
  }
#pragma unroll
  for (int n = 4 * groups; n < runs; ++n) {
    uint32_t x[4];
    words(run_row(n), run_col(n), x);
    out(n, uint32_t(pick(int(x[0]), int(x[1]), int(x[2]), int(x[3]))));
  }
}

template <bool keys_are_rows, class Tile, class F, bool fresh = false, bool opaque_keys = false>
__device__ __attribute__((always_inline)) inline void attn_dropout_each(const AttnArgs& p, int b, int h, int q0, int k0,
                                                                        F f) {
  constexpr int per = Tile::E / 4;
  const uint32_t keep_max = p.drop.keep_max;
  // The 4 elements of run n from its word.
  auto emit = [&](int n, uint32_t word) __attribute__((always_inline)) {
    const int i = n / per % Tile::tiles_r, j = n / per / Tile::tiles_r, e = 4 * (n % per);
#pragma unroll
    for (int t = 0; t < 4; ++t) f(i, j, e + t, (word >> 8 * t & 0xffu) <= keep_max);
  };
  attn_dropout_words<keys_are_rows, Tile, decltype(emit), fresh, opaque_keys>(p, b, h, q0, k0, emit);
}

// The forward's dropout of P (its elements >= +0 or NaN, attn_exp's after the sums), the same decisions as
// attn_dropout_each's: a word's 4 compares at once, then one select an element. Byte t of word w is kept when
// b_t <= K (keep_max), i.e. when b_t + (255 - K) does not carry out of the byte: with L = (w & 0x7f7f7f7f) + (255 - K
// & 0x7f) in each byte (no carry crosses a byte), that carry is maj(b_t bit 7, L's bit 7, (255 - K) bit 7), and
// bit 7 of byte t of k = ~maj(w, L, C) is the decision (3 VALU a word: and, add and one bitop3 on gfx950). The
// element becomes min(bits, sext(byte t of k)) as unsigned integers (one v_min_u32 with an SDWA sign-extended byte):
// kept, the byte is negative, at least 0xffffff80 once extended, above every P's bits (+inf 0x7f800000, NaN); dropped,
// at most 127, a denormal below 2^-142 that P's conversion (bf16 or fp16, to nearest) makes +0, as dropping does. So
// P^T's operand is bit for bit what the select gave. (Before: a compare and a select an element, 8 VALU a word, and
// the butterfly's 16 VALU a group where attn_quad_transpose takes 8: the ping-pong forward's compute phase 109 -> 97
// VALU beside its 16 exp2, MI355X GQA D128 N8192 dropout 0.1 1090.7 -> 1170.5 TFLOP/s. The words made in the memory
// phase instead, held to the compute phase: 1105.6.) gfx942 keeps the compare and the select (no v_bitop3).
template <class Tile, bool fresh = false, bool opaque_keys = false>
__device__ __attribute__((always_inline)) inline void attn_dropout_drop(Tile& s, const AttnArgs& p, int b, int h, int q0,
                                                                        int k0) {
  constexpr int per = Tile::E / 4;
  const uint32_t c = 255u - p.drop.keep_max, c_all = c * 0x01010101u, c_low = (c & 0x7fu) * 0x01010101u;
  auto drop = [&](int n, uint32_t word) __attribute__((always_inline)) {
    const int i = n / per % Tile::tiles_r, j = n / per / Tile::tiles_r, e = 4 * (n % per);
    if constexpr (arch::current::bitop3) {
      const uint32_t k = arch::current::maj_not(word, (word & 0x7f7f7f7fu) + c_low, c_all);
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const uint32_t m = uint32_t(int32_t(int8_t(uint8_t(k >> 8 * t))));  // (the SDWA operand: BYTE_t, sext)
        float& x = s.data[i][j][e + t];
        x = __builtin_bit_cast(float, __builtin_bit_cast(uint32_t, x) < m ? __builtin_bit_cast(uint32_t, x) : m);
      }
    } else {  // (the majority takes 3 or 4 VALU without v_bitop3: no gain over a compare and a select an element)
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        float& x = s.data[i][j][e + t];
        x = (word >> 8 * t & 0xffu) <= 255u - c ? x : 0.f;
      }
    }
  };
  attn_dropout_words<true, Tile, decltype(drop), fresh, opaque_keys, true>(p, b, h, q0, k0, drop);
}

// The keep bits of a score accumulator (bit (i tiles_c + j) E + e: element data[i][j][e]), attn_dropout_each's.
template <bool keys_are_rows, class Tile, bool fresh = false>
__device__ __attribute__((always_inline)) inline uint32_t attn_dropout_keep(const AttnArgs& p, int b, int h, int q0,
                                                                            int k0) {
  static_assert(Tile::tiles_r * Tile::tiles_c * Tile::E <= 32, "one 32-bit mask");
  uint32_t keep = 0;
  auto f = [&](int i, int j, int e, bool kept) { keep |= uint32_t(kept) << ((i * Tile::tiles_c + j) * Tile::E + e); };
  attn_dropout_each<keys_are_rows, Tile, decltype(f), fresh>(p, b, h, q0, k0, f);
  return keep;
}

// The dropped elements of a score accumulator set to 0 and the kept ones scaled, straight from attn_dropout_each.
template <bool keys_are_rows, class Tile, bool fresh = false, bool opaque_keys = false>
__device__ __attribute__((always_inline)) inline void attn_dropout_scale(Tile& s, const AttnArgs& p, int b, int h,
                                                                         int q0, int k0, float scale) {
  auto f = [&](int i, int j, int e, bool kept) { s.data[i][j][e] = kept ? s.data[i][j][e] * scale : 0.f; };
  attn_dropout_each<keys_are_rows, Tile, decltype(f), fresh, opaque_keys>(p, b, h, q0, k0, f);
}

// x scale where `keep` keeps element x, else 0, for every element of a score-shaped tile (map's order is the bits').
template <class Tile>
__device__ __attribute__((always_inline)) inline void attn_dropout_apply(Tile& s, uint32_t keep, float scale) {
  int n = 0;
  map(s, [&](float x) { return keep >> n++ & 1u ? x * scale : 0.f; });
}
// attn_dropout_apply without the scale (the caller scales once): bit n as a sign-extended field ANDed with the value,
// two VALU ops an element (kernel 2's pairs; in the single waves at D = 64 the select is faster: MI355X GQA N4096
// dK/dV 15.6 against 17.1 ms).
template <class Tile>
__device__ __attribute__((always_inline)) inline void attn_dropout_zero(Tile& s, uint32_t keep) {
  int n = 0;
  map(s, [&](float x) {
    const int m = int(keep << (31 - n++)) >> 31;
    return __builtin_bit_cast(float, __builtin_bit_cast(int, x) & m);
  });
}

// `s` with attn_dropout_apply when `on`, else `s` itself: an operand dropped on its way into a product.
template <bool on, class Tile>
__device__ __attribute__((always_inline)) inline decltype(auto) attn_dropped(const Tile& s, uint32_t keep, float scale) {
  if constexpr (on) {
    Tile d = s;
    attn_dropout_apply(d, keep, scale);
    return d;
  } else {
    return (s);
  }
}

// ALiBi's slope of sequence b, query head h, in the units of the score it joins: the raw score (the kernels scale
// scores after the bias), or with softcap the capped one, tanh, which scale_log2 takes to cap log2(e) (flash-attention
// adds the bias to the capped logit): the host's alibi_unit, scale or cap.
__device__ inline float alibi_slope(const AttnArgs& p, int b, int h) { return p.alibi[b * p.alibi_bs + h] / p.alibi_unit; }

// A score tile's ALiBi bias: element (0, 0) is query q0 and key k0, keys along the rows when `keys_are_rows` (S^T);
// off = Sk - Sq. Every element of every tile (the bias is not a mask: whole tiles take it too), before the masks.
// j - i - off is the lane's part (one register, per tile) plus the element's (an immediate): written as map_at's (x,
// row, col) the compiler hoists a float per element out of the loop (36 spills in the ping-pong kernel).
// Linear: the caller knows d's sign over the whole tile and passes slope as -slope where d >= 0, slope where d <= 0:
// slope d then, two packed instructions a pair of elements.
template <bool keys_are_rows, bool linear = false, class Tile>
__device__ __attribute__((always_inline)) inline void add_alibi(Tile& s, float slope, long q0, long k0, long off) {
  constexpr int sign = keys_are_rows ? 1 : -1;  // j - i is row - col in S^T, col - row in S
  const int lane = lane_id();
  const float base = float(int(k0 - q0 - off) + sign * (Tile::row_lane_part(lane) - Tile::col_lane_part(lane)));
  auto elem = [](int i, int j, int e) { return float(sign * (Tile::row_tile_part(i, e) - Tile::col_tile_part(j, e))); };
#pragma unroll
  for (int i = 0; i < Tile::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < Tile::tiles_c; ++j)
      if constexpr (linear) {
        using f2 = float __attribute__((ext_vector_type(2)));
        static_assert(Tile::E % 2 == 0, "pairs of elements");
#pragma unroll
        for (int e = 0; e < Tile::E; e += 2) {
          const f2 d = f2{base, base} + f2{elem(i, j, e), elem(i, j, e + 1)};
          const f2 x = f2{slope, slope} * d + f2{s.data[i][j][e], s.data[i][j][e + 1]};
          s.data[i][j][e] = x.x, s.data[i][j][e + 1] = x.y;
        }
      } else {
#pragma unroll
        for (int e = 0; e < Tile::E; ++e) s.data[i][j][e] = fmaf(-slope, fabsf(base + elem(i, j, e)), s.data[i][j][e]);
      }
}

// The running max of a query that has seen no key (log2 units): finite, so that exp2(-inf - m) is 0, and far below
// any score.
inline constexpr float attn_no_max = -1e30f;

// Every wave owns 16 queries; K and V move in tiles of 64 keys.
struct AttnTiles {
  static constexpr int wave_rows = 16, keys = 64;
};

// The workgroup's work: sequence b, query head h (reading KV head h / ratio) and query tile `tile`. The logical order
// keeps the query heads that share a KV head next to each other and, through xcd_remap, on one XCD (they read the
// same K and V from its L2); query tiles run last-first, so the causal tiles with the most keys start first.
struct AttnBlock {
  int b, h, h_kv, tile;
  int sq, sk;            // this sequence's lengths
  long q_start, k_start; // its first row in the packed tensors (varlen) or 0

  __device__ __attribute__((always_inline)) explicit AttnBlock(const AttnArgs& p) {
    const int ratio = p.heads_q / p.heads_kv;
    int id = xcd_remap(int(blockIdx.x), p.batch * p.heads_kv * p.q_tiles * ratio);
    const int g = id % ratio;
    id /= ratio;
    tile = p.q_tiles - 1 - id % p.q_tiles;
    id /= p.q_tiles;
    h_kv = id % p.heads_kv;
    b = id / p.heads_kv;
    h = h_kv * ratio + g;
    locate(p);
  }
  __device__ AttnBlock() = default;

  // sq, sk, q_start and k_start of sequence b.
  __device__ __attribute__((always_inline)) void locate(const AttnArgs& p) {
    if (p.cu_q) {
      q_start = p.cu_q[b], k_start = p.cu_k[b];
      sq = p.cu_q[b + 1] - p.cu_q[b], sk = p.cu_k[b + 1] - p.cu_k[b];
    } else {
      q_start = k_start = 0, sq = p.seqlen_q, sk = p.seqlen_k;
    }
  }
};

// The row of a (B, Hq, Sq) fp32 tensor laid out like LSE ((Hq, total_q) for varlen) that holds sequence b, head h.
__device__ inline gl<float, 1, 1, 1, runtime_dim> lse_row(const AttnArgs& p, float* base, const AttnBlock& blk, int h) {
  return gl<float, 1, 1, 1, runtime_dim>(base + (p.cu_q ? 0 : blk.b * p.lse_bs) + h * p.lse_hs + blk.q_start, 1, 1, 1,
                                         blk.sq);
}

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

// The sequence, head and query tile of this workgroup (of `rows` queries) as tensor views (Q and K of D columns, V
// and O of DV), and the KV tiles of BK keys any of its queries sees (queries past the sequence's end do not count).
template <class T, int D, int DV = D>
struct AttnView {
  using TV = attn_value_t<T>;
  using TQ = attn_qk_t<T>;
  static constexpr int DQ = attn_qk_cols<T>(D);
  AttnBlock blk;
  gl<TQ, 1, 1, runtime_dim, DQ> q, k;
  gl<TV, 1, 1, runtime_dim, DV> v, o;
  long off, first_row;     // Sk - Sq: the causal diagonal's offset; the tile's first query
  int kt_begin, kt_end;    // KV tiles [kt_begin, kt_end)
  bool empty;              // the tile lies past the end of its sequence (varlen): nothing to do
  float slope;             // ALiBi's slope of the block's sequence and head (alibi_slope), 0 without ALiBi; read
                           // here, at the kernel's start (read later from the arguments, the ping-pong kernel spills)

  __device__ __attribute__((always_inline)) AttnView(const AttnArgs& p, int rows, int BK = AttnTiles::keys)
      : blk(p),
        q(head_view<TQ, DQ>(p.q, p.q_bs, p.q_rs, p.q_hs, blk.b, p.cu_q != nullptr, blk.q_start, blk.h, blk.sq)),
        k(head_view<TQ, DQ>(p.k, p.k_bs, p.k_rs, p.k_hs, blk.b, p.cu_q != nullptr, blk.k_start, blk.h_kv, blk.sk)),
        v(head_view<TV, DV>(p.v, p.v_bs, p.v_rs, p.v_hs, blk.b, p.cu_q != nullptr, blk.k_start, blk.h_kv, blk.sk)),
        o(head_view<TV, DV>(p.o, p.o_bs, p.o_rs, p.o_hs, blk.b, p.cu_q != nullptr, blk.q_start, blk.h, blk.sq)) {
    off = long(blk.sk) - blk.sq, first_row = long(blk.tile) * rows;
    empty = first_row >= blk.sq;
    const long last_row = std::min<long>(first_row + rows, blk.sq) - 1;
    const long lo = p.left < 0 ? 0 : std::max<long>(0, first_row + off - p.left);
    const long hi = p.right < 0 ? blk.sk - 1 : std::min<long>(blk.sk - 1, last_row + off + p.right);
    kt_begin = int(lo / BK), kt_end = hi >= lo ? int(hi / BK) + 1 : kt_begin;
    slope = p.alibi ? alibi_slope(p, blk.b, blk.h) : 0.f;
  }
};

// The visibility rule, the one place every kernel's masks come from. Query i of a sequence of sq queries sees key j of
// its sk keys (flash-attention's bottom-right diagonal) when i < sq, j < sk and -left <= j - (i + off) <= right, off =
// sk - sq (a negative bound: unbounded). Positions are ints, so that the tests are scalar (there are no 64-bit SALU
// compares): the host keeps sequences below 2^28 and windows within the sequences' reach, so no sum overflows. A
// kernel that stores no row past its sequence's end passes sq = INT_MAX.
//
// Whether every query of [q0, q1] sees every key of [k0, k0 + keys): such a tile needs no mask, given that q1 < sq
// (the backward tests that too; the forward stores no row past the end).
__device__ __attribute__((always_inline)) inline bool attn_tile_whole(const AttnArgs& p, int q0, int q1, int k0,
                                                                      int keys, int sk, int off) {
  return k0 + keys <= sk && (p.left < 0 || k0 >= q1 + off - p.left) &&
         (p.right < 0 || k0 + keys - 1 <= q0 + off + p.right);
}

// A score accumulator's hidden elements set to -inf, tile-wise (the diagonals as triangles, the ends as bounds: in
// the 256-VGPR ping-pong forward an element-by-element test spilled 49 VGPRs); its element (0, 0) is query q0 and key
// k0, keys along the rows when `keys_are_rows` (S^T) and along the columns otherwise (S).
template <bool keys_are_rows, class Tile>
__device__ __attribute__((always_inline)) inline void mask_visible(Tile& s, const AttnArgs& p, int q0, int k0, int sq,
                                                                   int sk, int off) {
  if constexpr (keys_are_rows) {  // row j, column i: j - i > off + right is i - j < -(off + right)
    mask_bounds(s, k0, q0, sk, sq, -INFINITY);
    if (p.right >= 0) triu(s, -INFINITY, -(off + p.right), k0, q0);
    if (p.left >= 0) tril(s, -INFINITY, p.left - off, k0, q0);
  } else {  // row i, column j
    mask_bounds(s, q0, k0, sq, sk, -INFINITY);
    if (p.right >= 0) tril(s, -INFINITY, off + p.right, q0, k0);
    if (p.left >= 0) triu(s, -INFINITY, off - p.left, q0, k0);
  }
}

// One wave's queries (16 with 16x16 MFMA blocks, S = mfma16; 32 with 32x32 blocks, S = mfma32): Q (the B operand of
// S^T = K Q^T), the running max of the scaled scores (log2 units) and softmax denominator per query, and O^T (DV x WQ).
// A KV tile is folded in by qk (S^T), mask, softmax (the online update, P^T as the next product's operand, and the
// factor alpha that rescales what came before), rescale (O^T *= alpha) and accumulate (O^T += V^T P^T); the pipelined
// kernel runs them in separate phases, scores runs the first four in a row.
template <class T, int D, class S = mfma16, AttnVariant V = AttnVariant{}, int Keys = AttnTiles::keys, int DV = D>
struct AttnWave {
  static constexpr int WQ = S::dim, BK = Keys;  // queries, and keys per step (a KV tile or a part of one)
  static constexpr AttnVariant variant = V;
  using shape = S;
  using cols_vec = rv<float, WQ, vec_align::cols, S>;
  using TV = attn_value_t<T>;  // of V, P and O (bf16 where T is fp8)
  using TQ = attn_qk_t<T>;     // of Q and K as they move (fp8 codes in bf16 pairs, D / 2 columns)
  static constexpr int DQ = attn_qk_cols<T>(D);
  using k_tile = rt<TQ, BK, DQ, layout::row, S>;
  using v_tile = rt<TV, BK, DV, layout::col, S>;  // acc order (load_acc_order)
  using p_tile = rt<TV, BK, WQ, layout::col, S>;
  using s_tile = rt_acc<BK, WQ, S>;  // keys x queries
  rt<TQ, WQ, DQ, layout::row, S> q;
  cols_vec m, l, alpha;
  bool stale = false;  // alpha is not all ones: O^T needs rescaling (the same for the whole wave)
  rt_acc<DV, WQ, S> ot;
  long first, last;  // this wave's first and last query (rows past the sequence's end excluded)
  int row_tile;      // this wave's queries as a tile index of the sequence
  int drop_b, drop_h;  // AttnVariant::dropout: the sequence and head, and the first key of the tile mask() saw last
  mutable int drop_k0;

  __device__ AttnWave(const AttnView<T, D, DV>& v, int rows_before) {
    first = v.first_row + rows_before, last = std::min<long>(first + WQ, v.blk.sq) - 1;
    row_tile = int(first / WQ);
    drop_b = v.blk.b, drop_h = v.blk.h, drop_k0 = 0;
    vec_apply([](float& mi, float& li) { mi = attn_no_max, li = 0.f; }, m, l);
    zero(ot);
  }

  // S^T = K Q^T for one KV tile.
  __device__ void qk(s_tile& s, const k_tile& k) const {
    zero(s);
    if constexpr (fp8_input<T>) attn_mma_fp8_ABt<T>(s, k, q);
    else mma_ABt(s, k, q, s);
  }

  // A variant's vector work on every score of S^T (keys kt * BK ...), on every tile, before the masks (which then set
  // the hidden scores to -inf whatever it made of them): softcap's cap, then ALiBi's bias (flash-attention's order).
  __device__ __attribute__((always_inline)) void bias(s_tile& s, const AttnView<T, D, DV>& v, const AttnArgs& p, int kt) const {
    if (attn_softcap_on<V>(p)) p.cap.apply(s);
    if (attn_alibi_on<V>(p)) add_alibi<true>(s, v.slope, first, long(kt) * BK, v.off);
  }

  // ALiBi's bias on S^T of tile kt (keys kt * BK ...) in the pipelined forward, at the end of the compute phase that
  // made it (its K and V registers free there), before the masks: where the tile lies wholly on one side of every
  // diagonal of the wave's queries (all but the tiles the diagonal crosses), d = j - i - off has one sign over it and
  // -slope |d| is sl d, sl = -slope or slope: one packed add (d) and one packed multiply-add a pair of scores
  // (add_alibi's fabs and unpacked work only on the crossed tiles, under a scalar branch).
  __device__ __attribute__((always_inline)) void alibi(s_tile& s, const AttnView<T, D, DV>& v, int kt) const {
    const int k0 = kt * BK, q0 = int(first), off = int(v.off);
    // d over the tile: from k0 - (q0 + WQ - 1) - off to k0 + BK - 1 - q0 - off.
    const bool right = k0 - q0 - (WQ - 1) - off >= 0, left = k0 + BK - 1 - q0 - off <= 0;
    // The slope a scalar (in a VGPR, with its negation, it cost this 256-VGPR kernel spills).
    const float slope = __builtin_bit_cast(float, __builtin_amdgcn_readfirstlane(__builtin_bit_cast(int, v.slope)));
    if (right || left) add_alibi<true, true>(s, right ? -slope : slope, first, long(k0), v.off);
    else add_alibi<true>(s, slope, first, long(k0), v.off);
  }

  // The hidden scores of S^T (keys kt * BK ...) set to -inf, where the tile crosses the visible range of a query. In S^T a
  // row is a key and a column a query. Queries past the sequence's end are not stored: the tile is whole when
  // [first, last] sees all of it.
  // Inlined by force: with ALiBi's extra work LLVM calls it out of line, through the stack (448 vs 1105 TFLOP/s).
  __device__ __attribute__((always_inline)) void mask(s_tile& s, const AttnView<T, D, DV>& v, const AttnArgs& p, int kt) const {
    const int k0 = kt * BK, off = int(v.off), q0 = int(first), q1 = int(last);
    if constexpr (V.dropout || V.dynamic) drop_k0 = k0;  // for softmax, which drops from this tile's P
    // (attn_tile_whole's test spelled here: called, even inlined by force, it costs this 256-VGPR kernel 37 spills.)
    const bool whole = k0 + BK <= v.blk.sk && (p.left < 0 || k0 >= q1 + off - p.left) &&
                       (p.right < 0 || k0 + BK - 1 <= q0 + off + p.right);
    if (!whole) mask_visible<true>(s, p, q0, k0, INT_MAX, v.blk.sk, off);
  }

  // The masked S^T of a KV tile: the new running max and denominator, alpha, and P^T in acc order, in two parts that
  // the pipelined kernel runs in different phases: rebase (the running max, with the rare work under a branch where
  // Branch) and exp (the rest). attention_softmax.h. Inlined by force: with dropout's Philox LLVM calls them out of
  // line, through the stack.
  template <bool Branch = false>
  __device__ __attribute__((always_inline)) void rebase(s_tile& s, const AttnArgs& p) {
    attn_rebase<Branch>(*this, s, p);
  }
  __device__ __attribute__((always_inline)) void exp(s_tile& s, p_tile& pt, const AttnArgs& p) {
    attn_exp(*this, s, pt, p);
  }
  __device__ __attribute__((always_inline)) void softmax(s_tile& s, p_tile& pt, const AttnArgs& p) {
    rebase(s, p);
    exp(s, pt, p);
  }

  // O^T *= alpha: what came before, rescaled to the new running max (when it moved).
  __device__ void rescale() {
    if (stale) mul_col(ot, alpha);
  }

  // S^T for KV tile kt, its masks, the online softmax update (O^T rescaled) and P^T as the next product's operand.
  __device__ p_tile scores(const AttnView<T, D, DV>& v, const AttnArgs& p, int kt, const k_tile& k) {
    s_tile s;
    qk(s, k);
    bias(s, v, p, kt);
    mask(s, v, p, kt);
    p_tile pt;
    softmax(s, pt, p);
    rescale();
    return pt;
  }

  // O^T += V^T P^T (V read in acc order, used transposed: the same registers).
  __device__ void accumulate(const p_tile& pt, const v_tile& vc) {
    rt<TV, DV, BK, layout::row, S> vt;
    transpose(vt, vc);
    mma_AB(ot, vt, pt, ot);
  }

  // O = O^T^T / l (0 for a query that saw no key) from the registers, and LSE = (m + log2 l) * ln 2. A sink (the
  // head's logit z, a key with no value) joins the denominator here, once per row: the max moves to max(m, z log2 e)
  // and O's and l's terms follow it.
  __device__ void finish(const AttnView<T, D, DV>& v, const AttnArgs& p) {
    if (p.sinks) {  // (at the tail of the 256-VGPR ping-pong kernel this costs one spill, outside its loop)
      const float z = p.sinks[v.blk.h] * 1.44269504088896341f;
      cols_vec keep;
      vec_apply(
          [z](float& li, float& mi, float& ki) {
            const float top = fmaxf(mi, z);
            ki = __builtin_amdgcn_exp2f(mi - top);  // 0 for a query that saw no key
            li = li * ki + __builtin_amdgcn_exp2f(z - top), mi = top;
          },
          l, m, keep);
      mul_col(ot, keep);
    }
    cols_vec inv, lse;
    vec_apply(
        [](float& li, float& mi, float& ii, float& ei) {
          ii = li > 0.f ? 1.f / li : 0.f;
          ei = li > 0.f ? (mi + __log2f(li)) * 0.69314718055994531f : -INFINITY;
        },
        l, m, inv, lse);
    if (attn_dropout_on<V>(p)) vec_apply([k = p.drop.scale](float& ii) { ii *= k; }, inv);  // O's 1 / (1 - p), not LSE's
    if constexpr (fp8_input<T>) vec_apply([k = p.o_scale](float& ii) { ii *= k; }, inv);  // v_descale
    mul_col(ot, inv);
    rt<float, WQ, DV, layout::row, S> o;
    transpose(o, ot);  // the same registers
    store_bounded(v.o, o, {0, 0, row_tile, 0});
    if (p.lse) store(lse_row(p, p.lse, v.blk, v.blk.h), lse, {0, 0, 0, row_tile});
  }
};

}  // namespace hk::kernels

#include "attention_softmax.h"  // AttnWave's softmax (attn_rebase, attn_exp)
