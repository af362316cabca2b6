// The attention backward kernels, one source for both archs, run in this order:
//   1. attention_bwd_delta: delta = rowsum(dO * O) in fp32, laid out like LSE;
//   2. attention_bwd_dkdv: one workgroup per (sequence, KV head, 4 WK keys), each wave owning WK keys (16; 32 at D = 64
//      with transposing LDS reads) whose K and V stay in registers; it visits every query head that reads the KV head
//      and every query tile that sees one of its keys, recomputes P = exp(scale S - LSE) and accumulates dV^T += dO^T
//      P and dK^T += Q^T dS (dS = P * (dP - delta), dP = dO V^T) in fp32 registers, written once at the end (dK
//      scaled). On gfx950 at D = 128 the waves work in pairs (attn_bwd_pairs): 8 waves, 128 keys, the pair of waves w
//      and w + 4 (one SIMD) owning 32 keys, its first wave computing S, P and dV^T, its second dP, dS and dK^T, with P
//      (times the cap's slope) passed in fp32 through the LDS behind a second barrier in the step: each staged
//      fragment serves 32 keys, not 16 (at 16 the MFMAs need all of a SIMD pair's LDS port; 32 keys a wave do not fit
//      two waves' registers). MI355X GQA D128 N8192: 71.0 -> 66.3 ms (docs/design.md). A step's loads (Q, dO, LSE,
//      delta) are issued by one wave of each pair, the first (the second with softcapping, whose tanh is the first's),
//      so that the other starts its product at the barrier, not after the loads' scalar address work: 66.05 -> 63.49
//      ms (not in the instance of feature combinations, which then reloads from scratch in its loop); with D = 64's
//      packed pairs and -delta start in the plain kernel, 61.75 ms. On gfx942 (no transposing LDS reads) Q and dO are
//      staged as st_g4 (attention_bwd_ops.h), whose acc-order operand is two ds_read_b128 per 4 x 4 granule, not an
//      element a read (MI300X GQA D128 N8192: 194.2 -> 168.4 ms with the reads below). There (gfx942, D = 128, plain)
//      the waves take `s_setprio 1` in the steps of stage 0, so that neither of the CU's two workgroups falls behind
//      the other by the arbitration's age order and finishes alone (as kernel 3's on gfx950: 153.6 -> 144.3 ms), and
//      the step's scalar work is cut (`lean`: SALU per MFMA 2.83 -> 1.59; 139.9 ms). Its plain instance takes 32 keys a
//      wave (`keys32`: K and V from global memory into the registers, the two stages two LDS variables, each operand
//      read from the stage just before its product, so that the registers hold two waves a SIMD; each LDS byte feeds
//      twice the MFMAs): 139.9 -> 122.9 ms; there each wave's priority goes by the workgroup's steps left (3 down to
//      0 at a third, a ninth and a 27th left: the one behind holds the higher level), not the stage, so that the CU's
//      younger workgroup no longer finishes alone (idle at the round's end 11.2 -> 3.0%): 122.9 -> 119.5 ms;
//   3. attention_bwd_dq: one workgroup per (sequence, query head, 4 WQ queries; 8 WQ on gfx942 at D = 128), each
//      wave owning WQ queries (16; 32 at D = 128 and with transposing LDS reads at D = 64: each key tile read
//      serves twice the MFMA work; at D = 128 the tile's 64 keys in two chunks of 32, every variant); it recomputes
//      P^T and dS^T over the visible key tiles in order and accumulates dQ^T += K^T dS^T in fp32. At 32 queries a
//      wave (D = 128, gfx950) the waves of the two workgroups on a CU take priority in alternate key tiles (s_setprio
//      by the workgroup's parity and the stage), so that neither falls behind the other by the arbitration's age
//      order: 44.4 -> 42.9 ms.
//      On gfx942 at D = 128 (8 waves, every variant) the K and V reads' LDS addresses are made at each use (st_lane:
//      251 -> 197 VGPRs), S^T's and dP^T's reads run two k steps ahead of their MFMAs, and each wave holds priority 1
//      from the step's barrier to its dQ^T product, so that the two waves of a SIMD overlap their halves and do not
//      meet the barrier one alone: MI300X GQA D128 N8192 dQ 100.1 -> 98.8 ms; with 32 queries a wave (the bytes
//      read per MFMA halved; the priority held to the last chunk's S^T product, one level lower after the first's)
//      87.7 ms.
//      On gfx950 at D = 128 the plain, ALiBi, softcap and dropout instances run attention_bwd_dq64.h: one wave per
//      SIMD, 64 queries a wave, dQ^T, Q and dO in the AGPRs, keys64's list schedule (MI355X GQA D128 N8192 dQ 41.86 ->
//      36.96 ms; ALiBi 44.15 -> 39.91).
//      No atomics: every gradient element is summed by one wave in a fixed order (bit-identical run after run).
// With attention sinks (a logit z per query head in every row's denominator, a key with no value) the forward's LSE
// holds the sink: P and dS are as before (the sink's dP is 0); kernel 4, attention_bwd_dsink, adds the sinks' gradient
// dz = -sum_rows exp(z - LSE) delta, one workgroup per query head summing its rows in a fixed order.
// With dropout (AttnVariant) both kernels regenerate the forward's mask (attn_dropout_keep) and scale dP by it and 1 /
// (1 - p) (kernel 2 also P on its way into dV); dS takes the whole P, and delta needs nothing (O holds the dropout).
// In kernel 2's pairs the second wave makes the mask (one Philox a pair, under its dP product) and passes its bits to
// the first through the LDS; the first drops P and leaves 1 / (1 - p) to dV's store (MI355X GQA D128 N8192 dK/dV
// 96.8 -> 85.5 ms). Dropout alone on gfx950 at D = 128 runs keys64 and dq64 (the mask's Philox calls and the drops as
// tasks of their list schedules; dP from 0, dS / (1 - p) = Pd dP + P (-delta (1 - p)), 1 / (1 - p) at the stores):
// MI355X GQA D128 N8192 bwd 659.9 -> 866.1 TFLOP/s (dK/dV 83.71 -> 57.74, dQ 48.89 -> 43.12 ms).
// With ALiBi (AttnVariant) both kernels add the bias to the recomputed scores as the forward does (no gradient: the
// slopes are constants, as in flash-attention). In the ALiBi instances of keys64, dq64 (gfx950, D = 128) and kernel 3
// at 32 queries (gfx942, D = 128: `alibi_rows`) the bias of a tile wholly on one side of the diagonal is linear and
// costs nothing a score: one part starts S's (S^T's) accumulator (keys64: the query's, from the stage's bias rows),
// the other joins exp2's multiply-add (the key's) or the LSE (the query's); tiles the diagonal crosses take it element
// by element. MI355X GQA D128 N8192: with the pairs kernel and kernel 3 at 32 queries (feat950) bwd 756.4 -> 793.2
// TFLOP/s; through keys64 and dq64 dK/dV 66.05 -> 55.12 ms, dQ 44.15 -> 39.91, 793.2 -> 918.9 (plain 1005.8).
// With softcapping both kernels cap the recomputed scores as the forward does, and scale dP - delta by the cap's slope
// at them before the masks (attn_bwd_cap; pairs: P by it). The wide heads' one featured instance (AttnVariant::dynamic), and at D = 64 and 128 the instance of
// two or three features, runs any of them together, tested a step, in that order (the cap's slope taken before
// ALiBi's bias).
// The products that accumulate over queries (kernel 2) or keys (kernel 3) take their k operand straight from the
// previous accumulator in acc order (ops/acc_order.h), like the forward's P V: P, dS (kernel 2) and dS^T (kernel 3)
// never leave the registers; the other operand is the staged tile read in the same order and used transposed
// (mma_AtB_acc). The two score-like products (S and dP, or their transposes) read their A operand from the staged
// tile and their B operand from the wave's registers (mma_ABt_lds).
//
// Schedule (both loops, as the forward's): the staged tiles (kernel 2: Q, dO, LSE and delta of a step; kernel 3: K
// and V of a key tile) live in two stages, and one barrier per step separates them. At the top of step n each wave
// waits for its own loads of step n, then the barrier makes every wave's part visible and certifies that every wave
// has finished reading the other stage (step n-1), which the loads of step n+1, issued right after it, overwrite.
// In kernel 3 those loads fly under the whole of step n: its stages are distinct LDS variables and the steps go in
// pairs with the stage a constant, so the compiler sees that step n's reads cannot touch what the loads write. Kernel
// 2's stage is a runtime index, except in its plain kernel in pairs of waves (gfx950 at D = 128), its plain kernel
// on gfx942 at D = 128 and its plain kernel on gfx950 at D = 64, whose steps go in pairs with the stage a constant
// (elsewhere, and with dropout, softcapping or ALiBi, they spill so); at D = 64 its two stages are two LDS variables,
// as kernel 3's, and the next step's loads fly (MI355X GQA D64 N4096 dK/dV 9.23 -> 7.86 ms with the packed pairs,
// docs/design.md); elsewhere with a runtime stage the compiler waits for step n+1's loads before step n's first LDS read
// (6.6% of the waves' time on MI355X at GQA D128 N8192 before the pairs of waves; 0% with them, whose first LDS reads
// come later). On gfx942 (Q and dO as st_g4) each step reads all its operands into registers first and issues step
// n+1's loads after them (vmcnt waits 10.0 -> 0% on MI300X at GQA D128 N8192: dK/dV 181.6 -> 168.4 ms).
// Q and dO go straight into LDS (buffer loads with the lds modifier); LSE and delta (64 floats each) are too small for
// that, so in kernel 2 one lane per query (wave 0: LSE, wave 1: delta) loads its value into a register before the
// step's work and writes it to the other stage after it (last read in step n-1, before the barrier). The
// once-per-workgroup tiles pass through the stages' memory: kernel 2's K and V before the first step's loads, kernel
// 3's Q and dO in its last stage, which the first step's loads leave alone (at 32 queries per wave in both stages: the
// first key tile's loads then wait for every wave to hold its Q and dO). Where the LDS holds only one workgroup's two
// stages of kernel 3 (gfx942 at D = 128) its workgroup has 8 waves (256 queries, two waves a SIMD reading the same
// stages), as the forward's, and reads its Q and dO from global memory into the registers (twice the two stages).
#pragma once
#include "attention_bwd_ops.h"
#include "attention_heads.h"
#include "hk/ops/group_reduce.h"

namespace hk::kernels {

struct AttnBwdArgs {
  AttnArgs f;          // Q, K, V, the forward's O and LSE, the shape and masks (f.q_tiles: tiles of attn_bwd_rows(...))
  const void* dout;    // dO, laid out like O
  void *dq, *dk, *dv;  // written as the element type
  long do_bs, do_rs, do_hs, dq_bs, dq_rs, dq_hs, dk_bs, dk_rs, dk_hs, dv_bs, dv_rs, dv_hs;
  float* delta;        // rowsum(dO * O): the workspace, laid out like LSE
  float* dsinks;       // with f.sinks: the sinks' gradient (Hq), or null
  int k_tiles;         // key tiles (of attn_bwd_block_keys) of the longest key sequence
};

// Queries per wave of kernel 3: 32 at D = 128 and with transposing LDS reads (gfx950) at D = 64, so that each key
// tile's K and V, read from the LDS once per wave, feed twice the MFMA work of 16 queries; else 16 (gfx942 at D = 128
// before its st_lane reads freed the registers: MI300X GQA D128 N8192 dQ 98.8 -> 87.7 ms). At D = 128 the tile's keys
// go through the products in chunks (attn_bwd_dq_chunk_keys), so that 32 queries fit two waves' registers (whole 64-key
// tiles spill; at one wave per SIMD the model found them slower: 60.0 against 49.7 ms on MI355X at GQA N8192): MI355X
// GQA D128 N8192 dQ 46.5 -> 42.9 ms. Every variant, softcapping and ALiBi included (their scalar tests:
// attention_bwd_dq; before, those spilled at 32 and ran 16 queries a wave in workgroups of 64 over the host's own query
// tiles: MI355X GQA D128 N8192 dQ softcap 63.6 -> 58.8 ms, ALiBi 49.3 -> 45.4; bwd 605.0 -> 625.5 and 724.0 -> 747.9
// TFLOP/s).
constexpr int attn_bwd_dq_wave_rows(int d, bool lds_read_transpose) {
  return (d == 64 && lds_read_transpose) || d == 128 ? 32 : 16;
}
// Keys of one pass through kernel 3's products within a key tile: at 32 queries a wave at D = 128 (both archs) the
// tile's 64 keys in two chunks of 32, so that S^T, dP^T and K^T's acc-order operand of one chunk are held at a time
// (the whole tile's spill at 256 registers); else the whole tile.
constexpr int attn_bwd_dq_chunk_keys(int d, bool lds_read_transpose, int tile_keys) {
  return d == 128 ? 32 : tile_keys;
}
// Queries per workgroup of kernels 1 and 3: a function of the arch's fact, so that the host's grid and the kernels agree.
// Waves of kernel 3's workgroup: 8 where the LDS holds one workgroup's two stages of K and V only (gfx942 at D = 128,
// as the forward's attn_waves): two waves per SIMD reading the same stages; else 4, two workgroups a CU.
constexpr int attn_bwd_dq_waves(int d, bool lds_read_transpose) { return d == 128 && !lds_read_transpose ? 8 : 4; }
constexpr int attn_bwd_rows(int d, bool lds_read_transpose) {
  return attn_bwd_dq_waves(d, lds_read_transpose) * attn_bwd_dq_wave_rows(d, lds_read_transpose);
}

// Waves per SIMD kernel 3 declares, so that the compiler keeps the accumulators in arch VGPRs within 256 registers.
// Where col-layout operands are read from LDS an element at a time (no transposing reads: gfx942), each element lands
// in a register of its own before packing, and at D = 128 the kernel needs more than 256.
template <int D>
inline constexpr int attn_bwd_waves_per_simd = D == 64 || (D == 128 && arch::current::lds_read_transpose) ? 2 : 1;

// Keys per wave of kernel 2 (its workgroup holds four times as many): 32 at D = 64 where transposing LDS reads leave
// the registers for them, else 16. Every wave reads each step's Q and dO from LDS, so the keys a wave owns are its
// MFMA work per byte read. (At D = 128, 32 keys take one wave per SIMD, and the model finds that slower: 95.6 against
// 77.4 ms on MI355X at GQA N8192.) gfx942's plain D = 128 instance (`plain`: attn_plain) takes 32 keys a wave too, two
// waves a SIMD (`keys32` in attention_bwd_dkdv: MI300X GQA D128 N8192 dK/dV 139.9 -> 122.9 ms). A function of the
// arch's fact, so that the host's grid and the kernel agree.
constexpr int attn_bwd_wave_keys(int d, bool lds_read_transpose, bool plain = false) {
  return (d == 64 && lds_read_transpose) || (d == 128 && !lds_read_transpose && plain) ? 32 : 16;
}
// Kernel 2 in pairs of waves (gfx950 at D = 128; the header's 2.): half the LDS bytes per MFMA of one wave doing all
// four products at the registers of 16 keys, the exponentials of one wave under the other's MFMAs. With dropout too
// (one Philox call per 16 scores, attention_common.h): MI355X GQA D128 N8192 p 0.1: 146 -> 108 ms.
constexpr bool attn_bwd_paired(int d, bool tr) { return d == 128 && tr; }  // tr: LDS transposes
// Kernel 2 at 64 keys a wave (attention_bwd_keys64.h) and kernel 3 at 64 queries a wave (attention_bwd_dq64.h), the
// same instances: gfx950 at D = 128, the plain, ALiBi, softcap and dropout variants (`plain` here:
// attn_bwd_keys64_variant; one feature at a time; sinks need nothing of them): four waves of 64 keys (queries), one
// workgroup a CU.
constexpr bool attn_bwd_keys64(int d, bool tr, bool plain) { return attn_bwd_paired(d, tr) && plain; }
// Kernel 3's workgroup's queries (the host's grid of the dQ kernel; the delta kernel keeps attn_bwd_rows).
constexpr int attn_bwd_dq_rows(int d, bool tr, bool plain) { return attn_bwd_keys64(d, tr, plain) ? 4 * 64 : attn_bwd_rows(d, tr); }
// The variants kernel 2 runs at 64 keys a wave: the plain one and ALiBi, softcap or dropout alone (the host's choice of
// its shape).
template <AttnVariant V>
inline constexpr bool attn_bwd_keys64_variant = !V.dynamic && int(V.alibi) + int(V.softcap) + int(V.dropout) <= 1;
constexpr int attn_bwd_dkdv_waves(int d, bool tr, bool plain = false) {
  return attn_bwd_keys64(d, tr, plain) ? 4 : attn_bwd_paired(d, tr) ? 8 : 4;
}
// (keys64v: the instance is a keys64 variant, attn_bwd_keys64_variant; plain: the plain variant, attn_plain)
constexpr int attn_bwd_block_keys(int d, bool tr, bool keys64v = false, bool plain = false) {
  return attn_bwd_keys64(d, tr, keys64v) ? 4 * 64 : attn_bwd_dkdv_waves(d, tr) * attn_bwd_wave_keys(d, tr, plain);
}
// The host's shape class of kernel 2's instance (its grid and waves): 0 featured, 1 a keys64 variant that is not
// plain (ALiBi alone), 2 plain.
template <AttnVariant V, int D, int DV>
inline constexpr int attn_bwd_dkdv_class = D != DV ? 0 : attn_plain<V> ? 2 : attn_bwd_keys64_variant<V> ? 1 : 0;

// Waves per SIMD of kernel 2: two, one's LDS reads and vector work under the other's MFMAs (gfx942 at D = 128 with
// 16-query steps: 32 need over 256 registers; one wave per SIMD took 262.6 against 191.5 ms on MI300X GQA N8192).
template <int D>
inline constexpr int attn_bwd_dkdv_waves_per_simd = D <= 128 ? 2 : 1;  // wide heads: attention_heads.h

template <int D, int DV>
inline constexpr bool attn_bwd_pairs = attn_bwd_paired(D, arch::current::lds_read_transpose) && DV == D;

// One step's staged operands of kernel 2: BQ queries' Q and dO rows, their LSE (log2 units, 0: sees no key), delta.
// Q and dO as st_g4 where the LDS has no transposing reads (gfx942; attention_bwd_ops.h), else row-major st.
template <int D, int DV>
inline constexpr bool attn_bwd_g4 = !arch::current::lds_read_transpose && !attn_wide(D, DV) && D == DV;
template <class T, int R, int C, bool g4>
using attn_bwd_staged = std::conditional_t<g4, st_g4<T, R, C>, st<T, R, C>>;
// (bias: the ALiBi instance of keys64, whose lse holds -LSE log2 e / c and the two bias rows S's starting
// accumulator on a tile wholly left or right of the diagonal.)
template <int BQ>
struct AttnBwdBiasRows {
  sv<float, BQ> left, right;
};
struct AttnBwdNoBias {};
template <class T, int BQ, int D, int DV = D, bool bias = false>
struct AttnBwdStage {
  attn_bwd_staged<T, BQ, D, attn_bwd_g4<D, DV>> q;
  attn_bwd_staged<T, BQ, DV, attn_bwd_g4<D, DV>> dout;
  sv<float, BQ> lse, delta;
  [[no_unique_address]] std::conditional_t<bias, AttnBwdBiasRows<BQ>, AttnBwdNoBias> bias_rows;
};

// Queries per step of kernel 2: 64 where the registers allow (not at D = 128 without transposing reads) and two
// stages fit in the LDS of the workgroups a CU runs; else 32 (half the Q and dO fragments a wave holds, and the
// stages); 16 at D = 128 without transposing reads (acc-order reads, an element a register before packing, do not
// fit two waves' registers at 32). Wide heads (attention_heads.h): the MFMA's K (16 or 32).
template <int D, int DV = D>
inline constexpr int attn_bwd_query_step =
    attn_wide(D, DV) ? 4 * arch::mfma_elems
    : (D == 64 || arch::current::lds_read_transpose) &&
            2 * attn_bwd_dkdv_waves_per_simd<D> * int(sizeof(AttnBwdStage<bf16, 64, D>)) <= arch::current::lds_bytes
        ? 64
        : D == 128 && !arch::current::lds_read_transpose ? 16 : 32;

// Stages of kernel 3's K and V: two where they fit in the LDS share of two workgroups per CU (the occupancy its
// registers allow), else one (gfx942 at D = 128, whose schedule then waits for each tile's loads).
template <int D, int DV = D>
inline constexpr int attn_bwd_dq_stages =
    (attn_bwd_dq_waves(D, arch::current::lds_read_transpose) == 8 || attn_wide(D, DV) ? 1 : 2) * 2 *
                attn_tile_keys(D, DV) * (D + DV) * 2 <=
            arch::current::lds_bytes
        ? 2
        : 1;

// Kernel 1: L = 256 / rows lanes per query row (4 or 2), each summing 1/L of its D products.
template <class T, int D, int DV = D>
__global__ __launch_bounds__(256) void attention_bwd_delta(AttnBwdArgs p) {
  constexpr int rows = attn_bwd_rows(D, arch::current::lds_read_transpose), L = 256 / rows;
  static_assert(L == 1 || L == 2 || L == 4, "one, two or four lanes per row");
  const AttnView<T, D, DV> view(p.f, rows);
  if (view.empty) return;
  const AttnBlock& blk = view.blk;
  const auto dout = head_view<T, DV>(p.dout, p.do_bs, p.do_rs, p.do_hs, blk.b, p.f.cu_q != nullptr, blk.q_start, blk.h, blk.sq);
  const int row = int(view.first_row) + int(threadIdx.x) / L, part = int(threadIdx.x) % L;
  constexpr int per = DV / L, chunk = 8;  // elements per lane, per 16-byte load
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
  if constexpr (L >= 2) sum += __shfl_xor(sum, 1);
  if constexpr (L == 4) sum += __shfl_xor(sum, 2);
  if (row < blk.sq && part == 0) *lse_row(p.f, p.delta, blk, blk.h).at(0, 0, 0, row) = sum;
}

// Kernel 2's workgroup: sequence b, KV head h_kv, key tile `tile`; the heads and query tiles that see its keys.
struct AttnKeyBlock {
  AttnBlock blk;  // h unset: the kernel walks the group's query heads
  long first_key, off;
  int qt_begin, qt_end;  // query tiles of `step` queries that see a key of the tile

  __device__ AttnKeyBlock(const AttnBwdArgs& a, int keys, int step) {
    const AttnArgs& p = a.f;
    int id = int(blockIdx.x);
    blk.tile = id % a.k_tiles, id /= a.k_tiles;
    blk.h_kv = id % p.heads_kv, blk.b = id / p.heads_kv, blk.h = 0;
    blk.locate(p);
    first_key = long(blk.tile) * keys, off = long(blk.sk) - blk.sq;
    const long last_key = std::min<long>(first_key + keys, blk.sk) - 1;
    // Query i sees key j when i + off - left <= j <= i + off + right.
    const long lo = p.right < 0 ? 0 : std::max<long>(0, first_key - off - p.right);
    const long hi = p.left < 0 ? blk.sq - 1 : std::min<long>(blk.sq - 1, last_key - off + p.left);
    qt_begin = int(lo / step), qt_end = hi >= lo && last_key >= first_key ? int(hi / step) + 1 : qt_begin;
  }
  // The first queries qi of the step tiles (qi .. qi + step - 1) that are whole for the keys kj .. kj + keys - 1, each
  // query seeing each key: qi in [lo, hi] (attn_tile_whole's bounds solved for the first query: the window's, and the
  // sequences' ends; hi < lo where none is). Found once, so that a step tests its tile with two compares.
  struct Whole {
    int lo = 0, hi = -1;
  };
  __device__ Whole whole(const AttnArgs& p, int kj, int keys, int step) const {
    Whole w;
    if (kj + keys <= blk.sk) {
      w.hi = blk.sq - step;
      if (p.left >= 0) w.hi = std::min(w.hi, kj - step + 1 - int(off) + p.left);
      if (p.right >= 0) w.lo = kj + keys - 1 - int(off) - p.right;
    }
    return w;
  }
};

}  // namespace hk::kernels
#include "attention_bwd_keys64.h"
#include "attention_bwd_dq64.h"
namespace hk::kernels {

// (Both kernel 2's instance and kernel 3's: keys64 and dq64.)
template <int D, int DV, AttnVariant V>
inline constexpr bool attn_bwd_keys64_runs = D == DV && attn_bwd_keys64(D, arch::current::lds_read_transpose, attn_bwd_keys64_variant<V>);

template <class T, int D, AttnVariant V = AttnVariant{}, int DV = D>
__global__ __launch_bounds__(64 * attn_bwd_dkdv_waves(D, arch::current::lds_read_transpose, attn_bwd_keys64_runs<D, DV, V>))
__attribute__((amdgpu_waves_per_eu(attn_bwd_keys64_runs<D, DV, V> ? 1 : attn_bwd_dkdv_waves_per_simd<D>))) void attention_bwd_dkdv(
    AttnBwdArgs a) {
  if constexpr (attn_bwd_keys64_runs<D, DV, V>) {
    attention_bwd_dkdv_keys64<T, V.alibi, V.softcap, V.dropout>(a);
    return;
  }
  using G = group<attn_bwd_dkdv_waves(D, arch::current::lds_read_transpose)>;
  constexpr bool pairs = attn_bwd_pairs<D, DV>;
  constexpr int BQ = attn_bwd_query_step<D, DV>,
                KB = attn_bwd_dkdv_waves(D, arch::current::lds_read_transpose) *
                     attn_bwd_wave_keys(D, arch::current::lds_read_transpose, attn_plain<V> && D == DV);
  constexpr int WK = pairs ? KB / 4 : KB / G::waves;  // the keys a wave (a pair) owns
  using Stage = AttnBwdStage<T, BQ, D, DV>;
  using KT = st<T, KB, D>;
  using VT = st<T, KB, DV>;
  using XT = rt_acc<BQ, WK>;  // pairs: P (times the cap's slope), from the pair's first wave to its second
  using rows_vec = rv<float, BQ, vec_align::rows>;
  static_assert(BQ <= 64, "one lane per LSE and per delta value");
  // The plain kernel (no dropout, softcapping or ALiBi) at D = 64 with transposing reads (gfx950): single waves of 32
  // keys whose steps go in pairs with the stage a constant, the two stages two LDS variables (`split`), so that the
  // compiler tells the stage a step reads from the one the next step's loads write and lets those fly (of one array
  // it waited for them before the step's first LDS read).
  constexpr bool plain = attn_plain<V>;
  constexpr bool d64 = D == 64 && DV == 64 && arch::current::lds_read_transpose && !pairs;
  // keys32: gfx942's plain kernel at D = 128, 32 keys a wave (K and V from global memory straight into the registers;
  // the LDS holds the two stages only, two LDS variables as `split`'s, so that each step's operands are read where its
  // products need them while the next step's loads fly)
  constexpr bool keys32 = !pairs && WK == 32 && D == 128 && plain;
  constexpr bool split = (d64 || keys32) && plain;
  constexpr bool const_stage = (pairs || (attn_bwd_g4<D, DV> && D == 128) || split) && plain;
  constexpr bool prio = attn_bwd_g4<D, DV> && D == 128 && const_stage;
  // graded: the priority by the workgroup's steps left (below): every gfx942 instance at D <= 128 (two or three
  // workgroups a CU: MI300X GQA D128 N8192 dK/dV softcap 30 182.1 -> 174.9 ms, ALiBi 187.0 -> 181.3, dropout 0.1
  // 195.1 -> 189.0; D64 N4096 20.47 -> 20.05)
  constexpr bool graded = attn_bwd_g4<D, DV>;
  __shared__ __attribute__((aligned(16))) char
      smem[keys32 ? sizeof(Stage)
           : split ? std::max(sizeof(Stage), sizeof(KT))
                   : std::max(sizeof(Stage) * 2, sizeof(KT) + sizeof(VT))];
  __shared__ __attribute__((aligned(16))) std::conditional_t<split, char[keys32 ? sizeof(Stage) : std::max(sizeof(Stage), sizeof(VT))], char> smem1;
  __shared__ std::conditional_t<pairs, lane_regs<XT>, char> xbuf[4];
  // pairs with dropout: the step's keep bits, made by the pair's second wave and read by its first (one Philox a pair).
  __shared__ std::conditional_t<pairs && (V.dropout || V.dynamic), uint32_t[4][64], char> kbuf;
  static_assert(!pairs || sizeof(smem) + sizeof(xbuf) + sizeof(kbuf) <= arch::current::lds_bytes,
                "kernel 2's pairs: the stages and exchanges fit in the LDS");
  auto stages = [&](int i) __attribute__((always_inline)) -> Stage& {
    if constexpr (split) return *reinterpret_cast<Stage*>(i == 0 ? smem : smem1);
    else return reinterpret_cast<Stage*>(smem)[i];
  };
  KT& sk = *reinterpret_cast<KT*>(smem);  // K, V: before the first step's loads
  VT& sv = *reinterpret_cast<VT*>([&]() __attribute__((always_inline)) {
    if constexpr (split) return &smem1[0];
    else return smem + sizeof(KT);
  }());
  const AttnArgs& p = a.f;
  // The instance of feature combinations in the pairs of waves (D = 128) and the single waves of 32 keys (D = 64), the
  // transposing reads' (gfx950) kernels: its loop holds no per-lane value that only the features need, nor the
  // features' tests as booleans. Hoisted out of the loop, the dropout's per-lane parts (attn_dropout_each's `fresh`),
  // the keep bits' LDS address (pairs) and the tests (uniform booleans LLVM keeps in VGPRs) spilled to scratch in the
  // loop (28 scratch instructions at D = 64, 18 at D = 128); found again each step (a few VALU and SALU instructions),
  // none spills in the pairs' loop. (gfx942's kernels do not spill so and are slower found again: MI300X GQA D128 N8192
  // dK/dV 250.2 -> 255.0 ms; the wide heads keep LLVM's hoisting.)
  constexpr bool fresh = V.dynamic && (pairs || d64);
  // The features' tests (attn_softcap_on ...), each step from the arguments' SGPRs where `fresh`.
  auto opaque = [](auto x) __attribute__((always_inline)) {
    if constexpr (fresh) asm volatile("" : "+s"(x));
    return x;
  };
  auto softcap_on = [&]() __attribute__((always_inline)) { return fresh ? opaque(p.cap.k) != 0.f : attn_softcap_on<V>(p); };
  auto alibi_on = [&]() __attribute__((always_inline)) { return fresh ? opaque(p.alibi) != nullptr : attn_alibi_on<V>(p); };
  auto dropout_on = [&]() __attribute__((always_inline)) { return fresh ? opaque(p.drop.keep_max) < 255 : attn_dropout_on<V>(p); };
  const AttnKeyBlock kb(a, KB, BQ);
  const AttnBlock& blk = kb.blk;
  if (kb.first_key >= blk.sk) return;  // past the end of a shorter sequence (varlen)
  const bool varlen = p.cu_q != nullptr;
  const auto k_view = head_view<T, D>(p.k, p.k_bs, p.k_rs, p.k_hs, blk.b, varlen, blk.k_start, blk.h_kv, blk.sk);
  const auto v_view = head_view<T, DV>(p.v, p.v_bs, p.v_rs, p.v_hs, blk.b, varlen, blk.k_start, blk.h_kv, blk.sk);
  // This wave's WK keys, through the LDS (zeros past the end).
  if constexpr (!keys32) {
    load_async<G>(sk, k_view, {0, 0, blk.tile, 0});
    load_async<G>(sv, v_view, {0, 0, blk.tile, 0});
    wait_vmcnt<0>();
    barrier();
  }
  // own: the key part (scalar outside the pairs: the mask tests of the loop stay scalar; the pairs' kernel is slower so,
  // MI355X GQA D128 N8192 dK/dV 66.3 -> 68.0 ms)
  const int wave = pairs ? G::wave() : __builtin_amdgcn_readfirstlane(G::wave());
  const int role = pairs ? wave / 4 : 0, own = pairs ? wave % 4 : wave;
  rt<T, WK, D> k;  // pairs: K (role 0) or V (role 1)
  rt<T, WK, DV> v;
  if constexpr (pairs) {
    if (role == 0) load(k, sk, {0, 0, own, 0});
    else load(k, sv, {0, 0, own, 0});
  } else if constexpr (keys32) {
    load_bounded(k, k_view, {0, 0, int(kb.first_key / WK) + own, 0});
    load_bounded(v, v_view, {0, 0, int(kb.first_key / WK) + own, 0});
  } else {
    load(k, sk, {0, 0, own, 0});
    load(v, sv, {0, 0, own, 0});
  }
  const long k0 = kb.first_key + long(own) * WK;  // this wave's first key
  rt_acc<DV, WK> dvt;
  rt_acc<D, WK> dkt;
  zero(dvt), zero(dkt);

  // The steps: every query tile [qt_begin, qt_end) of every query head of the group, heads outer.
  const int ratio = p.heads_q / p.heads_kv;
  const float c = p.scale_log2;
  // The waves that issue a step's loads: all, or in pairs the first waves only (GF), so that the second's step starts
  // its products at the barrier, not after the loads' scalar address work.
  // (With softcapping, whose tanh is the first waves' vector work, the second waves load. Not the instance of
  // feature combinations, which then reloads registers from scratch in the loop.)
  constexpr bool half_fill = pairs && !V.dynamic;
  using GF = std::conditional_t<half_fill, group<4>, G>;
  constexpr int fill_role = V.softcap ? 1 : 0;
  const async_wave<GF> dma_wave;  // read once: the loads' per-lane addressing stays out of the loop
  // A head's Q and dO rows and this wave's statistic (LSE or delta). In the plain gfx942 kernel at D = 128 (`lean`)
  // the next step's are the step's plus the heads' strides where the head changes, not rebuilt from the head index
  // with 64-bit multiplies each step; there too the test of whether a step's tile is whole (no mask) is an interval of
  // query tiles found once (`whole_lo`, `whole_hi`), and the LSE or delta is stored without a branch per wave.
  constexpr bool lean = prio;
  struct HeadRows {
    const T *q, *dout;
    const float* stat;
  };
  auto fill = [&](int h, int qt, Stage& s) __attribute__((always_inline)) {
    if (half_fill && role != fill_role) return;
    const auto q_view = head_view<T, D>(p.q, p.q_bs, p.q_rs, p.q_hs, blk.b, varlen, blk.q_start, h, blk.sq);
    const auto do_view = head_view<T, DV>(a.dout, a.do_bs, a.do_rs, a.do_hs, blk.b, varlen, blk.q_start, h, blk.sq);
    if constexpr (attn_bwd_g4<D, DV>) {
      load_async_g4<D == 128, GF>(s.q, q_view, qt, dma_wave);
      load_async_g4<D == 128, GF>(s.dout, do_view, qt, dma_wave);
    } else {
      load_async<GF>(s.q, q_view, {0, 0, qt, 0}, dma_wave);
      load_async<GF>(s.dout, do_view, {0, 0, qt, 0}, dma_wave);
    }
  };
  auto fill_rows = [&](const auto& r, int qt, auto& s) __attribute__((always_inline)) {  // (lean: st_g4)
    load_async_g4<true, G>(s.q, gl<T, 1, 1, runtime_dim, D>(const_cast<T*>(r.q), 1, 1, blk.sq, D, p.q_rs), qt, dma_wave);
    load_async_g4<true, G>(s.dout, gl<T, 1, 1, runtime_dim, DV>(const_cast<T*>(r.dout), 1, 1, blk.sq, DV, a.do_rs), qt, dma_wave);
  };
  // The LSE (wave 0) or delta (wave 1) of the step's query `lane` (lanes below BQ), 0 past the sequence's end, loaded
  // before a step's work and stored after it into the other stage (LSE in log2 units, delta negated: -delta starts
  // dP's accumulator). A buffer load: the row's base
  // and its bound are scalar (the resource's range check reads zeros past it), the lane's part one register.
  const int lane = lane_id();
  const int stat_wave = half_fill ? async_wave<G>{}.index ^ 4 * fill_role : dma_wave.index;  // (the loading waves' 0, 1)
  auto fresh_lane = [&]() __attribute__((always_inline)) {  // (the keep bits' address found again each step)
    int l = lane;
    if constexpr (fresh) asm volatile("" : "+v"(l));
    return l;
  };
  auto stat = [&](int h, int qt) __attribute__((always_inline)) {
    if (stat_wave >= 2) return 0.f;
    const float* row = lse_row(p, stat_wave == 0 ? p.lse : a.delta, blk, h).at(0, 0, 0, 0);
    const auto rsrc = arch::current::buffer_rsrc(row, blk.sq * 4);
    return __builtin_bit_cast(float, __builtin_amdgcn_raw_buffer_load_b32(rsrc, lane * 4, qt * BQ * 4, 0));
  };
  auto stat_rows = [&](const auto& r, int qt) __attribute__((always_inline)) {  // (lean)
    if (stat_wave >= 2) return 0.f;
    const auto rsrc = arch::current::buffer_rsrc(r.stat, blk.sq * 4);
    return __builtin_bit_cast(float, __builtin_amdgcn_raw_buffer_load_b32(rsrc, lane * 4, qt * BQ * 4, 0));
  };
  // (lean: LSE log2 e, or -delta, as one multiply by the wave's factor; the LSE's -inf, and only it, to a finite value)
  const float stat_factor = stat_wave == 0 ? 1.44269504088896341f : -1.f;
  auto put = [&](Stage& s, float x) __attribute__((always_inline)) {
    // exp2(s c - lse log2 e); a query that sees no key (LSE -inf) has every score masked, so any finite LSE does.
    if constexpr (lean) {
      if (stat_wave < 2 && lane < BQ) (stat_wave == 0 ? s.lse : s.delta)[lane] = fmaxf(x * stat_factor, -__FLT_MAX__);
    } else {
      if (stat_wave == 0 && lane < BQ) s.lse[lane] = x == -INFINITY ? 0.f : x * 1.44269504088896341f;
      else if (stat_wave == 1 && lane < BQ) s.delta[lane] = -x;
    }
  };
  barrier();  // every wave holds its K and V: the stages are free
  const int h_end = (blk.h_kv + 1) * ratio;
  int h = blk.h_kv * ratio, qt = kb.qt_begin;  // this step's head and query tile
  if (kb.qt_begin == kb.qt_end) h = h_end;     // no step
  HeadRows rows{};  // lean: head h's
  if constexpr (lean)
    rows = {head_view<T, D>(p.q, p.q_bs, p.q_rs, p.q_hs, blk.b, varlen, blk.q_start, h, blk.sq).at(0, 0, 0, 0),
            head_view<T, DV>(a.dout, a.do_bs, a.do_rs, a.do_hs, blk.b, varlen, blk.q_start, h, blk.sq).at(0, 0, 0, 0),
            lse_row(p, stat_wave == 0 ? p.lse : a.delta, blk, h).at(0, 0, 0, 0)};
  if (h < h_end) {
    if constexpr (lean) {
      fill_rows(rows, qt, stages(0));
      put(stages(0), stat_rows(rows, qt));
    } else {
      fill(h, qt, stages(0));
      put(stages(0), stat(h, qt));
    }
  }
  // prio (keys32): the workgroup's steps, and those left (counted down at each step's barrier), whose share sets the
  // wave's priority: at a tie the arbitration's age order gives the older workgroup of the CU about twice the younger's
  // steps; with the younger a level above, the two run at about the same rate (stage parity, as before: 122.9 ms;
  // levels at 1/2, 1/4, 1/8 left: 120.4; at 1/3, 1/9, 1/27: 119.5)
  const int steps = (h_end - h) * (kb.qt_end - kb.qt_begin);
  int left = steps;
  // lean: the step's tile (queries qt BQ ..) is whole, seeing each of the wave's keys, for qt BQ in [whole_lo, whole_hi]
  int whole_lo = 0, whole_hi = -1;
  if constexpr (lean) {
    const auto w = kb.whole(p, int(k0), WK, BQ);
    whole_lo = w.lo, whole_hi = w.hi;
  }
  // One step in stage `stage_of`: an int, or a compile-time constant where the steps go in pairs, so that each LDS
  // read's address is the loop's, not recomputed from the stage every step (the plain kernel in pairs of waves, MI355X
  // GQA D128 N8192: 68.5 -> 66.3 ms; with dropout, softcapping or ALiBi it spills, and the other kernels spilled so).
  auto step = [&](auto stage_of) __attribute__((always_inline)) {
    const int stage = stage_of;
    Stage &cur = stages(stage), &next = stages(stage ^ 1);
    wait_vmcnt<0>();
    barrier();  // this step is in; every wave is done with the previous step's stage
    if constexpr (graded) {  // (priority by the steps left: the header's 2.)
      --left;
      if (3 * left >= steps) set_priority<3>();
      else if (9 * left >= steps) set_priority<2>();
      else if (27 * left >= steps) set_priority<1>();
      else set_priority<0>();
    }
    int nh = h, nqt = qt + 1;  // the next step
    if (nqt == kb.qt_end) nqt = kb.qt_begin, ++nh;
    const bool more = nh < h_end;
    HeadRows nrows = rows;
    if constexpr (lean)
      if (nh != h) nrows.q += p.q_hs, nrows.dout += a.do_hs, nrows.stat += p.lse_hs;
    float staged = 0.f;
    // st_g4 (gfx942): the step's operands go to registers before the next step's loads are issued; the compiler
    // cannot tell the stages apart and would wait for those loads before any later read of the stage.
    constexpr bool g4 = attn_bwd_g4<D, DV>;
    struct Operands {
      rt<T, BQ, D> q;
      rt<T, BQ, DV> dout;
      rt<T, D, BQ> qt;
      rt<T, DV, BQ> dot;
    };
    struct NoOperands {  // (the products read the stage themselves)
      char q, dout, qt, dot;
    };
    std::conditional_t<g4, Operands, NoOperands> ops;
    if constexpr (!g4)
      if (more) {
        staged = stat(nh, nqt);
        fill(nh, nqt, next);
      }
    rows_vec lse, ndelta;  // (ndelta: -delta; keys32: each read before its use, below)
    if constexpr (!keys32) {
      load(lse, cur.lse);
      load(ndelta, cur.delta);
    }
    if constexpr (keys32) {  // (each operand read before its product, below; the next LSE / delta after dV^T's)
      if (more) fill_rows(nrows, nqt, next);
    } else if constexpr (g4) {
      load(ops.q, cur.q);
      load(ops.dout, cur.dout);
      load_g4_t(ops.dot, cur.dout);
      load_g4_t(ops.qt, cur.q);
      if constexpr (lean) {
        if (more) staged = stat_rows(nrows, nqt), fill_rows(nrows, nqt, next);
      } else {
        if (more) staged = stat(nh, nqt), fill(nh, nqt, next);
      }
    }
    // S = Q K^T or dP = dO V^T (x: cur.q or cur.dout, r: Q or dO in registers, b: K or V).
    auto abt = [&](const auto& x, const auto& r, const auto& b, auto init) __attribute__((always_inline)) {
      if constexpr (g4) {
        rt_acc<BQ, WK> d;
        init(d);
        mma_ABt(d, r, b, d);
        return d;
      } else {
        return mma_ABt_lds<attn_wide(D, DV)>(x, b, init);
      }
    };
    const long q0 = long(qt) * BQ;
    const int qi = int(q0), kj = int(k0), off = int(kb.off);
    // S = Q K^T, masked where the tile crosses a query's visible range, and P (as below), into sd (capped: before the masks).
    auto scores = [&](auto& sd, auto capped) __attribute__((always_inline)) {
      sd = mma_ABt_lds(cur.q, k);
      if constexpr (V.dynamic) {  // (the cap's slope at the capped score, before ALiBi's bias joins it)
        if (softcap_on()) p.cap.template apply<1>(sd), capped(sd);
        if (alibi_on()) add_alibi<false>(sd, alibi_slope(p, blk.b, h), q0, k0, kb.off);
      }
      if constexpr (V.softcap) p.cap.template apply<1>(sd);
      if constexpr (V.alibi) add_alibi<false>(sd, alibi_slope(p, blk.b, h), q0, k0, kb.off);
      if constexpr (!V.dynamic) capped(sd);
      if (qi + BQ > blk.sq || !attn_tile_whole(p, qi, qi + BQ - 1, kj, WK, blk.sk, off))
        mask_visible<false>(sd, p, qi, kj, blk.sq, blk.sk, off);
      // (packed: the plain kernel's and softcap's; dropout's is slower so, MI355X GQA D128 N8192 dK/dV 83.7 -> 85.6 ms)
      if constexpr (plain || (pairs && !V.dynamic && !V.dropout)) attn_bwd_exp2<false>(sd, lse, c);
      else map_rows(sd, lse, [c](float x, float l) { return __builtin_amdgcn_exp2f(fmaf(x, c, -l)); });
    };
    if constexpr (pairs) {
      // The pair's first wave: S, P, dV^T += dO^T P; its second: dP, dS, dK^T += Q^T dS, with P (times the cap's
      // slope) from the first through the LDS.
      rt_acc<BQ, WK> sd;  // role 0: P; role 1: dP - delta
      uint32_t keep = 0;
      XT x;
      // (the second wave's -delta as dP's starting accumulator where dP is not dropped, and dS's multiply in packed
      // pairs in every instance but dropout's and the combinations')
      constexpr bool delta_init = !V.dropout && !V.dynamic;
      if (role == 0) {
        scores(sd, [&](const auto& t) __attribute__((always_inline)) {
          if constexpr (V.softcap || V.dynamic) map(x, t, t, [](float t, float) { return AttnArgs::Softcap::slope(t); });
        });
        if constexpr (V.softcap || V.dynamic) {
          if (V.softcap || softcap_on()) mul(x, x, sd);
          else x = sd;
        } else {
          x = sd;
        }
        xbuf[own].put(x);
      } else {
        // (plain: -delta starts dP's accumulator, and dS's multiply goes in packed pairs, as at D = 64: with the
        // first waves' packed exp2 argument, MI355X GQA D128 N8192 dK/dV 63.49 -> 61.75 ms)
        if constexpr (delta_init) sd = mma_ABt_lds(cur.dout, k, attn_bwd_init<false>(ndelta));
        else sd = mma_ABt_lds(cur.dout, k);
        if constexpr (delta_init) {
          // (dP - delta already)
        } else if constexpr (V.dropout || V.dynamic) {
          if (V.dropout || dropout_on()) {  // dP dropped (its scale in the subtraction's multiply-add)
            keep = attn_dropout_keep<false, decltype(sd), fresh>(p, blk.b, h, qi, kj);
            kbuf[own][fresh_lane()] = keep;
            attn_dropout_zero(sd, keep);
            map_rows(sd, ndelta, [k = p.drop.scale](float x, float d) { return fmaf(x, k, d); });
          } else {
            map_rows(sd, ndelta, [](float x, float d) { return x + d; });
          }
        } else {
          map_rows(sd, ndelta, [](float x, float d) { return x + d; });
        }
      }
      barrier();  // wave 0's P is in the LDS
      if (role == 0) {
        if constexpr (V.dropout || V.dynamic) {  // (1 / (1 - p) applied to dV once, at the store)
          if (V.dropout || dropout_on()) {
            keep = kbuf[own][fresh_lane()];
            attn_dropout_zero(sd, keep);
          }
        }
        mma_AtB_acc(dkt, cur.dout, sd);
      } else {
        xbuf[own].get(x);
        if constexpr (!V.dynamic && !V.dropout) attn_bwd_mul_pairs(sd, x);
        else mul(sd, sd, x);
        mma_AtB_acc(dkt, cur.q, sd);
      }
      if (more) put(next, staged);
      h = nh, qt = nqt;
    if constexpr (lean) rows = nrows;
      return;
    }
    // S = Q K^T (queries x keys), masked where the tile crosses a query's visible range, and P.
    // (Streamed for wide heads: else gfx942 spills at D = 256, and on MI355X at GQA D256 N8192 the kernel took 287
    // against 224 ms, its accumulators moved between AGPRs and VGPRs.)
    constexpr bool streamed = attn_wide(D, DV);
    if constexpr (keys32) load(ops.q, cur.q);
    auto s = abt(cur.q, ops.q, k, attn_bwd_zero{});
    // dP - delta (dropped): with softcapping (and in the dynamic instance) here, before the masks (attn_bwd_cap), else
    // after dV^T's product (the plain order). P and dP dropped and scaled alike (attn_dropout_keep; ~0: all kept).
    constexpr bool early = V.softcap || V.dynamic;
    const bool drop = dropout_on();
    uint32_t keep = ~0u;
    // (packed: -delta starts the product's accumulator, no subtraction after it; and exp2's argument and dS's multiply
    // go in packed pairs, those the converts take. In the plain kernels outside the pairs; in the others they added
    // scratch accesses, gfx942 D = 256: 6 -> 34, and the pairs' kernel (D = 128) spilled with them.)
    constexpr bool packed = split || (g4 && plain);
    constexpr bool fold = packed;
    auto dp_of = [&]() __attribute__((always_inline)) {
      if constexpr (keys32) load(ops.dout, cur.dout), load(ndelta, cur.delta);
      if constexpr (fold) return abt(cur.dout, ops.dout, v, attn_bwd_init<false>(ndelta));
      else return abt(cur.dout, ops.dout, v, attn_bwd_zero{});
    };
    decltype(dp_of()) dp;
    auto dp_delta = [&]() __attribute__((always_inline)) {
      dp = dp_of();
      if constexpr (!fold) {
        if (drop) attn_dropout_apply(dp, keep, p.drop.scale);
        map_rows(dp, ndelta, [](float x, float d) { return x + d; });
      }
    };
    if constexpr (early) {
      if (drop) keep = attn_dropout_keep<false, decltype(s), fresh>(p, blk.b, h, int(q0), int(k0));
      dp_delta();
      if (softcap_on()) attn_bwd_cap(p, s, dp);
    }
    if (alibi_on()) add_alibi<false>(s, alibi_slope(p, blk.b, h), q0, k0, kb.off);
    if constexpr (lean) {
      if (qi < whole_lo || qi > whole_hi) mask_visible<false>(s, p, qi, kj, blk.sq, blk.sk, off);
    } else if (qi + BQ > blk.sq || !attn_tile_whole(p, qi, qi + BQ - 1, kj, WK, blk.sk, off)) {
      mask_visible<false>(s, p, qi, kj, blk.sq, blk.sk, off);
    }
    if constexpr (keys32) load(lse, cur.lse);
    if constexpr (packed) attn_bwd_exp2<false>(s, lse, c);
    else map_rows(s, lse, [c](float x, float l) { return __builtin_amdgcn_exp2f(fmaf(x, c, -l)); });
    if constexpr (!early)
      if (drop) keep = attn_dropout_keep<false, decltype(s), fresh>(p, blk.b, h, int(q0), int(k0));
    // dV^T += dO^T P (in chunks of 64 of D where the S and dP products are streamed: the registers are short there)
    // (prob: b is P, not negative: AttnProbTo's cheaper bf16 rounding, the same bits; g4 only, gfx950 converts in one.)
    auto acc_tb = [&](auto& acc, const auto& x, const auto& xt, const auto& b, auto prob) __attribute__((always_inline)) {
      if constexpr (g4) {
        rt<T, BQ, WK, layout::col> bc;
        if constexpr (prob) copy_acc_order(bc, b, AttnProbTo{});
        else copy_acc_order(bc, b);
        mma_AB(acc, xt, bc, acc);
      } else if constexpr (streamed) {
        mma_AtB_acc_chunks<64>(acc, x, b);
      } else {
        mma_AtB_acc(acc, x, b);
      }
    };
    if constexpr (keys32) load_g4_t(ops.dot, cur.dout);
    acc_tb(dvt, cur.dout, ops.dot, attn_dropped<V.dropout || V.dynamic>(s, keep, p.drop.scale),
           std::true_type{});  // (dynamic, no dropout: P 1)
    // dP = dO V^T; dS = P * (dP - delta); dK^T += Q^T dS.
    if constexpr (keys32)
      if (more) staged = stat_rows(nrows, nqt);
    if constexpr (!early) dp_delta();
    if constexpr (packed) attn_bwd_mul_pairs(s, dp);
    else mul(s, s, dp);
    if constexpr (keys32) load_g4_t(ops.qt, cur.q);
    acc_tb(dkt, cur.q, ops.qt, s, std::false_type{});
    if (more) put(next, staged);
    h = nh, qt = nqt;
    if constexpr (lean) rows = nrows;
  };
  if constexpr (const_stage) {
    while (h < h_end) {
      step(std::integral_constant<int, 0>{});
      if (h < h_end) step(std::integral_constant<int, 1>{});
    }
  } else {
    for (int stage = 0; h < h_end; stage ^= 1) step(stage);
  }
  // dK = scale dK^T^T and dV = dV^T^T, from the registers (the transposes are free).
  const auto dk_view = head_view<T, D>(a.dk, a.dk_bs, a.dk_rs, a.dk_hs, blk.b, varlen, blk.k_start, blk.h_kv, blk.sk);
  const auto dv_view = head_view<T, DV>(a.dv, a.dv_bs, a.dv_rs, a.dv_hs, blk.b, varlen, blk.k_start, blk.h_kv, blk.sk);
  const int key_tile = int(k0 / WK);
  if constexpr (attn_bwd_g4<D, DV>) {  // dK^T and dV^T rows in st_g4's order
    store_g4(dk_view, dkt, key_tile, p.scale);
    store_g4(dv_view, dvt, key_tile);
    return;
  }
  rt<float, WK, D, layout::row> out;
  transpose(out, dkt);
  if (pairs && role == 0) {  // (pairs: dkt holds dV^T)
    if constexpr (pairs) store_bounded(dv_view, out, {0, 0, key_tile, 0}, V.dropout || V.dynamic ? p.drop.scale : 1.f);
    return;
  }
  store_bounded(dk_view, out, {0, 0, key_tile, 0}, p.scale);
  if constexpr (pairs) return;
  rt<float, WK, DV, layout::row> out_v;
  transpose(out_v, dvt);
  store_bounded(dv_view, out_v, {0, 0, key_tile, 0});
}

// Kernel 4: each thread sums a fixed stride of the head's rows (every sequence's, in order), then the workgroup adds
// the threads' sums in a fixed order (group_sum): the same bits every run.
__global__ __launch_bounds__(256) void attention_bwd_dsink(AttnBwdArgs a) {
  using G = group<4>;
  const AttnArgs& p = a.f;
  const int h = int(blockIdx.x);
  const float z = p.sinks[h];
  const bool varlen = p.cu_q != nullptr;
  const long rows = varlen ? p.cu_q[p.batch] : p.seqlen_q;  // per sequence, or the packed total
  float sum[1] = {0.f};
  for (int b = 0; b < (varlen ? 1 : p.batch); ++b) {
    const long base = (varlen ? 0 : b * p.lse_bs) + h * p.lse_hs;
    for (long i = threadIdx.x; i < rows; i += G::threads) sum[0] += __expf(z - p.lse[base + i]) * a.delta[base + i];
  }
  __shared__ sv<float, G::waves> scratch;
  group_sum<G>(sum, scratch);
  if (threadIdx.x == 0) a.dsinks[h] = -sum[0];
}

template <class T, int D, AttnVariant V = AttnVariant{}, int DV = D>
__global__ __launch_bounds__(64 * attn_bwd_dq_waves(D, arch::current::lds_read_transpose))
__attribute__((amdgpu_waves_per_eu(attn_bwd_keys64_runs<D, DV, V> ? 1
                                   : attn_bwd_dq_waves(D, arch::current::lds_read_transpose) == 8 ? 2
                                                                                                  : attn_bwd_waves_per_simd<D>)))
void attention_bwd_dq(AttnBwdArgs a) {
  if constexpr (attn_bwd_keys64_runs<D, DV, V>) {
    attention_bwd_dq64<T, V.alibi, V.softcap, V.dropout>(a);
    return;
  }
  constexpr bool tr = arch::current::lds_read_transpose;
  using G = group<attn_bwd_dq_waves(D, tr)>;
  constexpr int BK = attn_tile_keys(D, DV), WQ = attn_bwd_dq_wave_rows(D, tr);
  constexpr int KC = WQ == 32 ? attn_bwd_dq_chunk_keys(D, tr, BK) : BK;  // keys of a pass (BK / KC a tile)
  constexpr bool alibi_rows = V.alibi && !V.softcap && !V.dropout && !V.dynamic && KC < BK;  // (ALiBi's bias: chunk)
  // gfx942 at D = 128 (8 waves of 32 queries): Q and dO straight from global memory into the registers (256 rows
  // are twice the two stages), once a workgroup.
  constexpr bool q_global = !tr && G::waves == 8 && WQ == 32;
  constexpr int S = attn_bwd_dq_stages<D, DV>, QS = q_global ? 0 : G::waves * WQ / BK;  // stages of K and V; of them, Q's and dO's (the last)
  static_assert(q_global || (QS >= 1 && QS <= S && G::waves * WQ == QS * BK), "the Q and dO tiles are staged in K and V stages");
  using cols_vec = rv<float, WQ, vec_align::cols>;
  // The stages of K and V, each its own variable (not one array): the compiler then tells a stage's reads from the
  // other stage's loads (their alias scopes differ) and lets those fly; of one array it waits for them before the
  // step's first LDS read.
  using KT = st<T, BK, D>;
  using VT = st<T, BK, DV>;
  __shared__ KT sk0, sk1;
  __shared__ VT sv0, sv1;
  auto sk = [&](int i) __attribute__((always_inline)) -> KT& { return S == 1 || i == 0 ? sk0 : sk1; };
  auto sv = [&](int i) __attribute__((always_inline)) -> VT& { return S == 1 || i == 0 ? sv0 : sv1; };
  const AttnArgs& p = a.f;
  const AttnView<T, D, DV> view(p, G::waves * WQ, BK);
  if (view.empty) return;
  const AttnBlock& blk = view.blk;
  const int kt_begin = view.kt_begin, kt_end = view.kt_end;
  const bool varlen = p.cu_q != nullptr;
  const auto do_view = head_view<T, DV>(a.dout, a.do_bs, a.do_rs, a.do_hs, blk.b, varlen, blk.q_start, blk.h, blk.sq);
  const async_wave<G> dma_wave;  // read once: the loads' per-lane addressing stays out of the loop
  auto fill = [&](int kt, int stage) __attribute__((always_inline)) {
    load_async<G>(sk(stage), view.k, {0, 0, kt, 0}, dma_wave);
    load_async<G>(sv(stage), view.v, {0, 0, kt, 0}, dma_wave);
  };
  // Q and dO through the last QS stages, free until the first step's barrier; the first key tile into stage 0 when
  // that is not one of them (else once every wave holds its Q and dO).
#pragma unroll
  for (int i = 0; i < QS; ++i) {
    load_async<G>(sk(S - QS + i), view.q, {0, 0, blk.tile * QS + i, 0}, dma_wave);
    load_async<G>(sv(S - QS + i), do_view, {0, 0, blk.tile * QS + i, 0}, dma_wave);
  }
  if (S == 2 && QS <= 1 && kt_begin < kt_end) fill(kt_begin, 0);
  // At 32 queries (gfx950, D = 128) the chunks read dP^T's next k step before this one's MFMAs (`ahead`), the wave
  // index uniform (q0 an SGPR), and the epilogue reads its lane index anew (lane_anew), so that nothing of the lane
  // arithmetic before the loop is held through it (it was: lane & 15 and lane >> 2, 2 VGPRs stored to scratch around
  // the loop). MI355X GQA D128 N8192 dQ 42.9 -> 41.9 ms (bwd 802.2 -> 809.9 TFLOP/s), causal 20.7 -> 20.2, dropout 0.1
  // 49.8 -> 49.2 (16 scratch instructions in its loop before the lane was read anew), softcap + ALiBi 63.1 -> 62.4.
  // Chunk 0's only; ALiBi's and dropout's both chunks' (ALiBi dQ 46.6 -> 45.4 ms, dropout 49.2 -> 48.9; the others
  // slower so: plain 41.86 -> 41.99, softcap 58.8 -> 60.0, softcap + ALiBi 62.4 -> 63.6).
  constexpr bool ahead = KC < BK;
  // gfx942 at D = 128 (8 waves, 16 queries a wave), every variant: the K and V reads' addresses made at each use from
  // two lane values a layout (st_lane, attention_bwd_ops.h: 96 address VGPRs were held through the loop, 251 VGPRs in
  // all, 197 now), S^T's and dP^T's reads two k steps ahead of their MFMAs (with the 96 held the compiler read each k
  // step into the same registers and waited for it), and the waves at priority 1 from the step's barrier to the dQ^T
  // product: the wave ahead of its SIMD's other wave then yields to it, and the two do not meet at the next barrier
  // one finishing alone. MI300X GQA D128 N8192 dQ 100.1 -> 98.8 ms (without the priorities 106.0; the addresses
  // alone 111.6, with the priorities 100.9); the softcap and dropout instances no longer spill (14-17 scratch
  // instructions before): dropout 0.1 117.5 -> 110.3 ms, softcap 30 123.6 -> 118.6, ALiBi 103.4 -> 102.5.
  // With those registers free the waves take 32 queries (the tile in two chunks of 32 keys, as gfx950's; st_lane reads
  // of a chunk's rows; Q and dO from global memory): half the LDS bytes per MFMA, dQ 98.8 -> 92.3 ms (f16 92.05); the
  // priority held to the last chunk's dQ^T product, not dropped at the first's (f16 92.05 -> 90.48; dropped at each
  // and 1 again at each chunk's start, bf16 92.3 -> 91.6); D = 64's packed pairs and -delta start (f16 90.23): 90.5;
  // the priority dropped after the last chunk's S^T product instead: 88.5 (f16 88.74; at the last chunk's start bf16
  // 92.46, before its dP^T 89.94; 1 at each chunk's start, 0 after its S^T, f16 90.26); 2 from the barrier, 1 after
  // the first chunk's S^T product and 0 after the last's: 87.65.
  constexpr bool lanes = !tr && G::waves == 8;
  // gfx942 at D = 64 (two workgroups a CU), every variant: the priority by the workgroup's key tiles left (3 down to
  // 0 at a third, a ninth and a 27th left), so that the CU's younger workgroup does not finish alone (as kernel 2's):
  // MI300X GQA D64 N4096 dQ 14.67 -> 14.14 ms
  constexpr bool graded = !tr && D == 64 && DV == 64 && S == 2;
  constexpr int lanes_ahead = 2;  // (k steps; at 32 queries 1: f16 dQ 91.17 against 90.48 ms; 3: 90.68 against 90.52)
  const int wave = ahead ? __builtin_amdgcn_readfirstlane(G::wave()) : G::wave();
  const long q0 = view.first_row + long(wave) * WQ;  // this wave's first query
  const int row_tile = int(q0 / WQ);
  cols_vec lse, delta;
  load(lse, lse_row(p, p.lse, blk, blk.h), {0, 0, 0, row_tile});
  load(delta, lse_row(p, a.delta, blk, blk.h), {0, 0, 0, row_tile});
  vec_apply([](float& l) { l = l == -INFINITY ? 0.f : l * 1.44269504088896341f; }, lse);
  vec_apply([](float& d) { d = -d; }, delta);  // -delta: dP^T's starting accumulator
  rt<T, WQ, D> q;
  rt<T, WQ, DV> dout;
  if constexpr (q_global) {
    load_bounded(q, view.q, {0, 0, row_tile, 0});
    load_bounded(dout, do_view, {0, 0, row_tile, 0});
  } else {
    wait_vmcnt<0>();
    barrier();
    constexpr int per_stage = BK / WQ;  // waves' query rows per stage
    load(q, sk(S - QS + wave / per_stage), {0, 0, wave % per_stage, 0});
    load(dout, sv(S - QS + wave / per_stage), {0, 0, wave % per_stage, 0});
  }
  if constexpr (S == 2 && QS == 2) {
    barrier();  // every wave holds its Q and dO: stage 0 is free
    fill(kt_begin, 0);  // unconditionally (a tile past the keys reads zeros; under a branch the compiler fails here)
  }
  rt_acc<D, WQ> dqt;
  zero(dqt);
  [[maybe_unused]] st_lane row_lane{}, acc_lane{};
  if constexpr (lanes) row_lane = st_row_lane<KT>(), acc_lane = st_acc_lane<KT>();
  const float c = p.scale_log2;
  // Key tile kt in stage `stage_of` (a compile-time constant, as in kernel 2).
  auto step = [&](int kt, auto stage_of) __attribute__((always_inline)) {
    constexpr int stage = decltype(stage_of)::value;
    if constexpr (S == 2) {
      wait_vmcnt<0>();
      barrier();  // tile kt is in; every wave is done with the other stage (and with Q and dO)
      if (kt + 1 < kt_end) fill(kt + 1, stage ^ 1);
      if constexpr (lanes) {
        set_priority<2>();  // (to the last chunk's S^T product, 1 after the first's: above)
      } else if constexpr (graded) {  // (by the tiles left, as kernel 2's)
        const int left = kt_end - kt - 1, steps = kt_end - kt_begin;
        if (3 * left >= steps) set_priority<3>();
        else if (9 * left >= steps) set_priority<2>();
        else if (27 * left >= steps) set_priority<1>();
        else set_priority<0>();
      } else if constexpr (KC < BK) {  // (alternate tiles' priority: the header's 3.)
        if ((int(blockIdx.x) & 1) == stage) set_priority<1>();
        else set_priority<0>();
      }
    } else {
      barrier();  // every wave is done with the previous tile (and with Q and dO)
      fill(kt, 0);
      wait_vmcnt<0>();
      barrier();
    }
    // At D = 64 (as kernel 2's) and on gfx942 at D = 128 -delta starts dP^T's accumulator, and exp2's argument and
    // dS^T's multiply go in packed pairs (on gfx950 at D = 128 the model finds them slower: MI355X GQA N8192 dQ 46.5 ->
    // 46.7 ms; on gfx942 faster: f16 dQ 90.48 -> 90.23 ms).
    constexpr bool packed = D == 64 || lanes;
    constexpr bool fold = packed && !V.dropout && !V.dynamic;
    auto chunk = [&](auto ch_of) __attribute__((always_inline)) {
      constexpr int ch = decltype(ch_of)::value;
      // S^T = K Q^T (keys x queries), masked, and P^T.
      const long k0 = long(kt) * BK + ch * KC;
      const int qi = int(q0), kj = int(k0), off = int(view.off);
      // alibi_rows (the ALiBi instance at 32 queries): on a chunk wholly on one side of the diagonal of every query
      // (d = j - i - off of one sign) the bias -slope |d| is sl (j - k0) + sl (k0 - i - off), sl = slope left of it
      // (d <= 0), -slope right: the key's part starts S^T's accumulator (a row vector, sl times the row), the query's
      // joins the LSE (per column); on a chunk the diagonal crosses, sl is 0 and the bias goes element by element.
      [[maybe_unused]] float sl = 0.f;
      [[maybe_unused]] bool lin = false;
      auto s = [&]() __attribute__((always_inline)) {
        if constexpr (lanes && !alibi_rows) {
          return mma_ABt_lds<lanes_ahead, KC, ch>(sk(stage), q, row_lane);
        } else if constexpr (alibi_rows) {
          const bool left = kj + KC - 1 - qi - off <= 0, right = kj - (qi + WQ - 1) - off >= 0;
          lin = left || right;
          sl = left ? view.slope : right ? -view.slope : 0.f;
          using ST = rt_acc<KC, WQ>;
          rv<float, KC, vec_align::rows> r;
          const float base = sl * float(ST::row_lane_part(lane_id()));
#pragma unroll
          for (int i = 0; i < ST::tiles_r; ++i)
#pragma unroll
            for (int e = 0; e < ST::E; ++e) r.data[i][e] = fmaf(sl, float(ST::row_tile_part(i, e)), base);
          if constexpr (lanes) return mma_ABt_lds<lanes_ahead, KC, ch>(sk(stage), q, row_lane, attn_bwd_init<false>(r));
          else return mma_ABt_lds<!fold, KC, ch>(sk(stage), q, attn_bwd_init<false>(r));
        } else {
          return mma_ABt_lds<!fold, KC, ch>(sk(stage), q);
        }
      }();
      // dP^T - delta (dropped): with softcapping here, before the masks (attn_bwd_cap), else after P^T (as kernel 2's).
      auto dp_of = [&]() __attribute__((always_inline)) {
        if constexpr (lanes && fold)
          return mma_ABt_lds<lanes_ahead, KC, ch>(sv(stage), dout, row_lane, attn_bwd_init<true>(delta));
        else if constexpr (lanes) return mma_ABt_lds<lanes_ahead, KC, ch>(sv(stage), dout, row_lane);
        else if constexpr (fold) return mma_ABt_lds<false, KC, ch>(sv(stage), dout, attn_bwd_init<true>(delta));
        else return mma_ABt_lds<true, KC, ch, ahead && (ch == 0 || V.alibi || V.dropout)>(sv(stage), dout);
      };
      decltype(dp_of()) dp;
      auto dp_delta = [&]() __attribute__((always_inline)) {
        dp = dp_of();
        if constexpr (fold) return;
        if (attn_dropout_on<V>(p)) {  // dP^T dropped (its scale in the subtraction's multiply-add)
          attn_dropout_scale<true>(dp, p, blk.b, blk.h, int(q0), int(k0), 1.f);
          map_cols(dp, delta, [k = p.drop.scale](float x, float d) { return fmaf(x, k, d); });
        } else {
          map_cols(dp, delta, [](float x, float d) { return x + d; });
        }
      };
      // At 32 queries the softcap and ALiBi instances test their feature on the arguments too (cap.k, the slopes: set
      // whenever they run), as the dynamic instance does: a scalar branch, which ends the scheduler's region, so that
      // it does not interleave the feature's vector work with the next chunk's reads; straight-line, that spilled
      // (softcap 21 VGPRs, 85 scratch instructions; ALiBi 5, 17).
      constexpr bool tested = KC < BK;
      constexpr bool early = V.softcap || V.dynamic;  // (as kernel 2's)
      if constexpr (early) {
        dp_delta();
        if (V.softcap && tested ? p.cap.k != 0.f : attn_softcap_on<V>(p)) attn_bwd_cap(p, s, dp);
      }
      if constexpr (lanes) set_priority<ch == BK / KC - 1 ? 0 : 1>();  // (the priority: above)
      cols_vec lt;  // alibi_rows: the LSE less the bias's query part (c units)
      if constexpr (alibi_rows) {
        if (p.alibi != nullptr && !lin) add_alibi<true>(s, view.slope, q0, k0, view.off);
        const float slc = sl * c, d0 = float(kj - qi - off);
#pragma unroll
        for (int j = 0; j < WQ / 16; ++j)
          lt.data[j][0] = fmaf(slc, float(rt_acc<KC, WQ>::col_of(j, lane_id(), 0)) - d0, lse.data[j][0]);
      } else if (V.alibi && tested ? p.alibi != nullptr : attn_alibi_on<V>(p)) {
        add_alibi<true>(s, view.slope, q0, k0, view.off);
      }
      const cols_vec& ls = alibi_rows ? lt : lse;
      if (qi + WQ > blk.sq || !attn_tile_whole(p, qi, qi + WQ - 1, kj, KC, blk.sk, off))
        mask_visible<true>(s, p, qi, kj, blk.sq, blk.sk, off);
      if constexpr (packed) attn_bwd_exp2<true>(s, ls, c);
      else map_cols(s, ls, [c](float x, float l) { return __builtin_amdgcn_exp2f(fmaf(x, c, -l)); });
      // dP^T = V dO^T; dS^T = P^T * (dP^T - delta); dQ^T += K^T dS^T.
      if constexpr (!early) dp_delta();
      if constexpr (packed) attn_bwd_mul_pairs(s, dp);
      else mul(s, s, dp);
      if constexpr (attn_wide(D, DV)) mma_AtB_acc_chunks<64>(dqt, sk(stage), s);  // (as kernel 2's)
      else if constexpr (lanes) {
        mma_AtB_acc<ch>(dqt, sk(stage), s, acc_lane);
      }
      else mma_AtB_acc<ch>(dqt, sk(stage), s);
    };
    [&]<int... ch>(std::integer_sequence<int, ch...>) __attribute__((always_inline)) {
      (chunk(std::integral_constant<int, ch>{}), ...);
    }(std::make_integer_sequence<int, BK / KC>{});
  };
  for (int kt = kt_begin; kt < kt_end; kt += S) {
    step(kt, std::integral_constant<int, 0>{});
    if constexpr (S == 2)
      if (kt + 1 < kt_end) step(kt + 1, std::integral_constant<int, 1>{});
  }
  wait_vmcnt<0>();  // (no load is left unless no key tile was visible)
  const auto dq_view = head_view<T, D>(a.dq, a.dq_bs, a.dq_rs, a.dq_hs, blk.b, varlen, blk.q_start, blk.h, blk.sq);
  rt<float, WQ, D, layout::row> out;
  using Lane = std::conditional_t<ahead, lane_anew, lane_of_thread>;  // (ahead: made here, not held through the loop)
  transpose<Lane>(out, dqt);
  store_bounded<Lane>(dq_view, out, {0, 0, row_tile, 0}, p.scale);
}

}  // namespace hk::kernels
