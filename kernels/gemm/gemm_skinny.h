// The skinny GEMM kernel: C = alpha * A * op(B) + beta * C for few rows of A (M up to a few hundred: tokens in flight
// at decode), N and K in the thousands. Every byte of B meets only M rows of A, so the work is bound by reading B from
// HBM once; the schedule is about keeping HBM busy, and the matrix cores (M >= 16 would ask too much of the VALU) only
// have to keep out of the way. The model of attention_decode.h, which reaches 97% of HBM the same way:
//   - A workgroup of 4 waves owns a BM x WN block of C (BM = 16 or 64 rows and WN = 32 columns, or for m > 128
//     BM = 128 and WN = 64: every block reads its B columns and A rows from L2, so 64-row blocks at m = 256 read B
//     four times, 1.6 GB against L2's 16 KB per clock, twice the HBM time; 128 x 64 blocks read 0.77 GB, under it;
//     on gfx942 64-row blocks where the last 128-row block would be at most half full: launch_skinny in gemm.hip)
//     and a range of K steps (a split); its waves take the range's steps in turn (wave w: steps w, w + 4, ...), each with its own
//     accumulators, and meet once at the end, through LDS: wave w sums band w of the block (BM / 4 rows; at BM = 16
//     wave 0 all of it) over the four waves in wave order and stores it, so the sums are the same whichever wave
//     takes them, and no wave idles while one stores the block. No barrier in the loop: a wave waits for nothing
//     but its own loads.
//   - Loads go from memory straight to VGPRs, 16 bytes per lane (dwordx4). A step is KB = 64 NC bytes of each row of
//     K; lane l reads rows l % 16 (+16 i) and the 16-byte chunks 4 u + l / 16 (u < NC) of the step, so the four lane
//     groups read 64 contiguous bytes of a row per instruction and a wave's NC loads of a row cover it whole. The
//     chunks in the lane's order are the MFMA fragments along K (K permuted: a contraction does not care about the
//     order of its terms); A is read in the same order, so both operands see the same permutation.
//   - B given N x K (A * B^T): B's rows are the MFMA's B operand as loaded. B given K x N: the loaded rows are K rows,
//     16-byte chunks along N; they pass through a wave-private LDS tile, one sub-block of KS K rows at a time, written
//     at the rows where the permuted order puts them and read back in the col layout (gfx950's transposing reads).
//   - Bytes in flight: a step's loads (NC x WN rows of B plus the A rows: 16 KB of B per wave) are issued as soon as
//     the previous step's registers are consumed, so they fly while the other waves of the CU compute; at about 110
//     VGPRs four waves share a SIMD, 16 per CU, so that 256 KB of B per CU can be in flight against HBM's latency.
//     128-row blocks hold 128 accumulator registers per lane, one workgroup per CU: their steps are one MFMA deep
//     and each wave keeps D = 2 or 3 steps' loads in flight (register sets refilled as each is consumed).
//   - A (M x K, small) is read by every column block from L2. Where the blocks of C are too few to keep HBM busy
//     (under a quarter of the CUs) the host splits K into `splits` ranges, a workgroup per CU; with splits > 1 each workgroup writes its fp32 partial block to a workspace
//     and gemm_skinny_reduce sums the splits in split order, then applies alpha and beta: every sum is taken in a
//     fixed order, so results are bit-identical from run to run.
//   - Edges: rows of A and B past M and N are clamped to the last row (read, never stored); the last step of a K that
//     is not a whole number of steps zeroes the elements past K of each chunk (A and B both, so no product of
//     garbage can reach C), and a K x N B's column chunks that cross N likewise, without a branch (load_clamped,
//     mask). The host takes this kernel only where A's and B's rows start on 16-byte boundaries (else the tiled
//     kernels run).
#pragma once
#include <utility>

#include "gemm_common.h"

namespace hk::kernels {

struct SkinnyArgs {
  GemmArgs g;
  float* part;             // splits > 1: [split][m][n] fp32 partial products; null: C directly
  bool c_bf16;             // C's type: bf16, else fp32 (a runtime choice: the loop, most of the kernel, is the same)
  // K ranges per block of C and their length in elements: a whole number of this arch's steps (the host counts in
  // the steps of its own SkinnyShape, gfx950's, whose KB is a multiple of gfx942's: fp8's 128-row blocks take
  // 128-element steps there and 64-element ones on gfx942).
  int splits, split_k;
  int tiles_m, tiles_n;     // blocks of C (BM x WN)
};

// The kernel's geometry for element type T and BM rows of C (the same for both orientations of B).
template <class T, int BM>
struct SkinnyShape {
  static constexpr int LE = 16 / int(sizeof(T));            // elements per 16-byte chunk
  static constexpr int E = elems_per_lane<T>;               // a lane's operand elements per MFMA
  static constexpr int WN = BM >= 128 ? 64 : 32;            // columns of C per workgroup
  // Chunks per lane of each row and step: at 128 rows one MFMA deep (E / LE chunks), the registers going to D
  // steps in flight per wave instead.
  static constexpr int NC = BM <= 16 ? 8 : BM <= 64 ? 4 : (E > LE ? E / LE : 1);
  static constexpr int D = BM <= 64 ? 1 : NC == 1 ? 3 : 2;  // steps each wave has in flight (register sets)
  static constexpr int KB = 4 * NC * LE;                    // K elements per step
  static constexpr int KS = 4 * E > (KB < 64 ? KB : 64) ? 4 * E : (KB < 64 ? KB : 64);  // K rows per LDS round trip (B given K x N)
  static constexpr int UPS = KS / (4 * LE);                 // chunks per lane of a row per sub-block
  static_assert(KB % KS == 0 && BM % 16 == 0, "gemm_skinny: a step is whole sub-blocks");
};

namespace skinny {

// The 16-byte chunk at p (16-byte aligned), or at `safe` (a chunk known to lie inside the tensor) where it holds no
// element inside it (valid <= 0). No branch (branching per lane on each chunk of a masked step held exec masks in
// SGPRs, which the 16-row instances spilled): the chunk is read whole where it holds an element inside the tensor,
// since its 16 aligned bytes then lie in the same page as that element, and mask() zeroes the elements past the edge.
template <class T>
__device__ inline uint4 load_clamped(const T* p, const T* safe, int valid) {
  return *reinterpret_cast<const uint4*>(valid > 0 ? p : safe);
}
// x with its elements from `valid` on zeroed (valid <= 0: all of them).
template <class T>
__device__ inline uint4 mask(uint4 x, int valid) {
  int bytes = valid * int(sizeof(T));
  asm volatile("" : "+v"(bytes));  // made here, after the loads (not hoisted ahead of them, holding registers)
  auto keep = [&](unsigned w, int d) {  // dword d's bytes below `bytes`
    const int n = std::clamp(bytes - 4 * d, 0, 4);
    return w & unsigned((uint64_t(1) << (8 * n)) - 1);
  };
  return uint4{keep(x.x, 0), keep(x.y, 1), keep(x.z, 2), keep(x.w, 3)};
}

// The position in the permuted K order (the row of the col-layout tile the MFMA reads) of K row r of a sub-block:
// r is element e of chunk u of lane group g; the lane's element p = u LE + e is element p % E of its fragment p / E.
template <class Shape>
__host__ __device__ constexpr int permuted(int r) {
  constexpr int LE = Shape::LE, E = Shape::E;
  const int u = r / (4 * LE), g = r / LE % 4, p = u * LE + r % LE;
  return p / E * 4 * E + g * E + p % E;
}

}  // namespace skinny

template <class T, bool BIsNK, int BM>
__global__ __launch_bounds__(256) void gemm_skinny(SkinnyArgs p) {
  // fp8 with B given K x N takes the tiled fp8 kernel (hk::gemm's skinny_fits): its per-wave LDS transpose here
  // conflicted in the loop and spilled scalar registers at 64 rows.
  static_assert(BIsNK || sizeof(T) == 2, "gemm_skinny: B given K x N takes 16-bit elements");
  using Shape = SkinnyShape<T, BM>;
  constexpr int LE = Shape::LE, WN = Shape::WN, NC = Shape::NC, KB = Shape::KB, KS = Shape::KS, UPS = Shape::UPS;
  constexpr int MB = BM / 16, NB = WN / 16, SUBS = KB / KS;
  // B given K x N: CR chunks per K row of the block, RPI rows per load, LOADS loads per step.
  constexpr int CR = WN * int(sizeof(T)) / 16, RPI = 64 / CR, LOADS = KB / RPI;
  static_assert(LOADS == NB * NC && KS % RPI == 0, "gemm_skinny: B's loads cover the step");
  using a_sub = rt<T, BM, KS>;
  using b_sub = std::conditional_t<BIsNK, rt<T, WN, KS>, rt<T, KS, WN, layout::col>>;
  using acc_t = rt_acc<BM, WN>;
  // The epilogue's bands: BR rows each, one per wave (a single band, wave 0's, at BM = 16).
  constexpr int BR = BM >= 64 ? BM / 4 : BM, bands = BM / BR;
  using band_t = rt_acc<BR, WN>;
  static_assert(sizeof(a_sub) == MB * UPS * 16 && sizeof(b_sub) == NB * UPS * 16, "gemm_skinny: sub-tiles are the chunks");
  using b_lds = st<T, KS, WN>;
  // LDS: the waves' B sub-blocks in the loop (K x N only), then each wave's accumulators of the bands it does not
  // own (three blocks' worth in all), in as many rounds as the arch's LDS needs (sizeof: one lane's).
  constexpr int lds_b = BIsNK ? 0 : 4 * int(sizeof(b_lds)), acc_bytes = 3 * 64 * int(sizeof(acc_t));
  constexpr int reduce_rounds = [] {
    int r = 1;
    while (acc_bytes / r > arch::current::lds_bytes) r *= 2;
    return r;
  }();
  static_assert(acc_bytes % (reduce_rounds * 3 * bands * 64 * 16) == 0, "gemm_skinny: whole band blocks per round");
  constexpr int lds_acc = acc_bytes / reduce_rounds;
  __shared__ __attribute__((aligned(16))) char lds[lds_b > lds_acc ? lds_b : lds_acc];

  const GemmArgs& g = p.g;
  const int wave = __builtin_amdgcn_readfirstlane(wave_id()), lane = lane_id(), lr = lane % 16, lg = lane / 16;
  int id = xcd_remap(int(blockIdx.x), int(gridDim.x));
  const int tile_m = id % p.tiles_m;
  id /= p.tiles_m;
  const int tile_n = id % p.tiles_n;
  // The block's origin and split, uniform: read from the first lane so that they live in SGPRs (the division above
  // runs on the VALU, and its results otherwise held VGPRs to the end, where fp8's 128-row instances spilled them).
  const int m0 = __builtin_amdgcn_readfirstlane(tile_m * BM), n0 = __builtin_amdgcn_readfirstlane(tile_n * WN);
  const int split = __builtin_amdgcn_readfirstlane(id / p.tiles_n);
  const int steps = (g.k + KB - 1) / KB, kt_begin = split * (p.split_k / KB);
  const int kt_end = std::min(steps, kt_begin + p.split_k / KB);
  const bool ragged_k = g.k % KB != 0;

  // This lane's rows of A (and of B given N x K), clamped inside, at its lane group's first chunk.
  const T* A = static_cast<const T*>(g.a);
  const T* B = static_cast<const T*>(g.b);
  const T* arow[MB];
#pragma unroll
  for (int i = 0; i < MB; ++i) arow[i] = A + long(std::min(m0 + 16 * i + lr, g.m - 1)) * g.lda + LE * lg;
  const T* brow[BIsNK ? NB : 1];
  if constexpr (BIsNK) {
#pragma unroll
    for (int i = 0; i < NB; ++i) brow[i] = B + long(std::min(n0 + 16 * i + lr, g.n - 1)) * g.ldb + LE * lg;
  } else {
    brow[0] = B + long(lane / CR) * g.ldb + n0 + LE * (lane % CR);
  }
  // B given K x N: the columns of this lane's chunk inside N (all of them but in a block that crosses N).
  const int b_cols = BIsNK ? LE : g.n - (n0 + LE * (lane % CR));
  const bool cols_whole = n0 + WN <= g.n;

  constexpr int D = Shape::D;
  uint4 ra[D][MB][NC], rb[D][NB * NC];  // D register sets: the steps in flight
  auto load16 = [](const T* q) __attribute__((always_inline)) { return *reinterpret_cast<const uint4*>(q); };
  // Step kt's loads into set S; Masked: chunk by chunk inside K (and N), zeros outside.
  auto issue = [&]<bool Masked, int S>(int kt) __attribute__((always_inline)) {
    int k0 = kt * KB;
    // Masked: k0 opaque, so that the step's addresses and masks are made here: known loop-invariant (the masked step
    // is the last), they were hoisted out of the loop and held some 80 VGPRs through it.
    if constexpr (Masked) asm volatile("" : "+s"(k0));
#pragma unroll
    for (int u = 0; u < NC; ++u) {
      const int kk = k0 + LE * 4 * u, valid = g.k - kk - LE * lg;
#pragma unroll
      for (int i = 0; i < MB; ++i)
        ra[S][i][u] = Masked ? skinny::load_clamped(arow[i] + kk, arow[i] - LE * lg, valid) : load16(arow[i] + kk);
      if constexpr (BIsNK) {
#pragma unroll
        for (int i = 0; i < NB; ++i)
          rb[S][i * NC + u] = Masked ? skinny::load_clamped(brow[i] + kk, brow[i] - LE * lg, valid) : load16(brow[i] + kk);
      }
    }
    if constexpr (!BIsNK) {
#pragma unroll
      for (int q = 0; q < LOADS; ++q) {
        const int k = k0 + q * RPI;  // + this lane's row lane / CR
        const T* src = brow[0] + long(k) * g.ldb;
        rb[S][q] = Masked ? skinny::load_clamped(src, B, k + lane / CR < g.k ? b_cols : 0) : load16(src);
      }
    }
    // The masks, after the loads are issued (recomputed here: nothing held across the loads).
    if constexpr (Masked) {
      sched_barrier();
#pragma unroll
      for (int u = 0; u < NC; ++u) {
        const int valid = g.k - (k0 + LE * 4 * u) - LE * lg;
#pragma unroll
        for (int i = 0; i < MB; ++i) ra[S][i][u] = skinny::mask<T>(ra[S][i][u], valid);
        if constexpr (BIsNK) {
#pragma unroll
          for (int i = 0; i < NB; ++i) rb[S][i * NC + u] = skinny::mask<T>(rb[S][i * NC + u], valid);
        }
      }
      if constexpr (!BIsNK) {
#pragma unroll
        for (int q = 0; q < LOADS; ++q) {
          const int k = k0 + q * RPI;
          rb[S][q] = skinny::mask<T>(rb[S][q], k + lane / CR < g.k ? b_cols : 0);
        }
      }
    }
  };

  b_lds& sb = reinterpret_cast<b_lds*>(lds)[wave];
  // This lane's rows of the LDS sub-block (B given K x N): row q RPI + lane / CR of the step, where q counts loads.
  acc_t acc;
  zero(acc);
  auto consume = [&]<int S>() __attribute__((always_inline)) {
#pragma unroll
    for (int s = 0; s < SUBS; ++s) {
      a_sub a;
#pragma unroll
      for (int i = 0; i < MB; ++i) __builtin_memcpy(&a.data[i][0][0], &ra[S][i][s * UPS], UPS * 16);
      b_sub b;
      if constexpr (BIsNK) {
#pragma unroll
        for (int i = 0; i < NB; ++i) __builtin_memcpy(&b.data[i][0][0], &rb[S][i * NC + s * UPS], UPS * 16);
        mma_ABt(acc, a, b, acc);
      } else {
        constexpr int piece = b_lds::chunk_elems;
#pragma unroll
        for (int q = 0; q < KS / RPI; ++q) {
          const int r = skinny::permuted<Shape>(q * RPI + lane / CR);
          const T* src = reinterpret_cast<const T*>(&rb[S][s * (KS / RPI) + q]);
#pragma unroll
          for (int e = 0; e < LE; e += piece)
            *reinterpret_cast<hk::detail::chunk<T, piece>*>(&sb(r, LE * (lane % CR) + e)) =
                *reinterpret_cast<const hk::detail::chunk<T, piece>*>(src + e);
        }
        load(b, sb);
        mma_AB(acc, a, b, acc);
      }
    }
  };

  // The wave's steps j = 0, 1, ... (K steps kt_begin + wave + 4 j) in register sets j % D: the first D issued up
  // front, then each set refilled with the step D ahead as soon as it is consumed, so that D steps' loads fly at a
  // time. The loop body issues its loads without a branch (a load issued on one path only left the compiler waiting
  // for every load in flight, not just the consumed set's), so it runs while all its refills lie in the range; the
  // last D to 2D - 1 steps follow it. Whole: every step lies inside K and N (no masked loads).
  auto run = [&]<bool Whole, int... S>(std::integer_sequence<int, S...>) __attribute__((always_inline)) {
    const int first = kt_begin + wave, n = first < kt_end ? (kt_end - first + 3) / 4 : 0;
    auto step = [&]<int U>(int j) __attribute__((always_inline)) {
      const int t = first + 4 * j;
      if (Whole || !((ragged_k && t == steps - 1) || (!BIsNK && !cols_whole))) issue.template operator()<false, U>(t);
      else issue.template operator()<true, U>(t);
    };
    // (The scheduling barrier keeps the refill between this set's MFMAs and the next set's: the scheduler sank
    // every set's loads below the last MFMAs, which then waited for all of them.)
    auto consume_refill = [&]<int U>(int j) __attribute__((always_inline)) {
      consume.template operator()<U>();
      step.template operator()<U>(j + D);
      sched_barrier();
    };
    int j = 0;
    if (n >= 2 * D) {
      ((step.template operator()<S>(S), sched_barrier()), ...);  // in set order: the loop's waits assume it
      for (; j + 2 * D <= n; j += D) (consume_refill.template operator()<S>(j + S), ...);
    } else {
      ((S < n ? step.template operator()<S>(S) : void()), ...);
    }
    ((j + S < n ? (j + S + D < n ? consume_refill.template operator()<S>(j + S) : consume.template operator()<S>()) : void()), ...);
    ((j + D + S < n ? consume.template operator()<S>() : void()), ...);
  };
  if ((BIsNK || cols_whole) && !(ragged_k && kt_end == steps)) run.template operator()<true>(std::make_integer_sequence<int, D>{});
  else run.template operator()<false>(std::make_integer_sequence<int, D>{});

  // The waves' sums, band by band: band b (BR rows of the block; one band of all BM rows at BM = 16) is summed by
  // wave b in wave order, acc of wave 0 + wave 1's + wave 2's + wave 3's (the same sum, term for term, whichever wave
  // takes it: bit-identical to one wave taking all), and stored by it. Each wave hands the bands it does not own to
  // their owners through LDS, in as many rounds as the arch's LDS needs; its own band it copies out of acc.
  using f4 = float __attribute__((ext_vector_type(4)));
  f4* red = reinterpret_cast<f4*>(lds);
  constexpr int TB = band_t::tiles_r, per_round = TB * acc_t::tiles_c / reduce_rounds;
  band_t own;
#pragma unroll
  for (int b = 0; b < bands; ++b)
    if (b == wave) {
#pragma unroll
      for (int i = 0; i < TB; ++i)
#pragma unroll
        for (int j = 0; j < acc_t::tiles_c; ++j) __builtin_memcpy(own.data[i][j], acc.data[b * TB + i][j], 16);
    }
  // Slot of writer v in band b's region (the three waves other than b, in wave order).
  auto slot = [&](int b, int v, int k) { return ((b * 3 + v - (v > b)) * per_round + k) * 64 + lane; };
#pragma unroll
  for (int round = 0; round < reduce_rounds; ++round) {
    barrier();
#pragma unroll
    for (int b = 0; b < bands; ++b)
      if (b != wave) {
#pragma unroll
        for (int k = 0; k < per_round; ++k) {
          const int t = round * per_round + k;
          const float* x = acc.data[b * TB + t / acc_t::tiles_c][t % acc_t::tiles_c];
          red[slot(b, wave, k)] = f4{x[0], x[1], x[2], x[3]};
        }
      }
    barrier();
    if (wave < bands) {
#pragma unroll
      for (int k = 0; k < per_round; ++k) {
        const int t = round * per_round + k;
        float* x = own.data[t / acc_t::tiles_c][t % acc_t::tiles_c];
        f4 s = wave == 0 ? f4{x[0], x[1], x[2], x[3]} : red[slot(wave, 0, k)];
#pragma unroll
        for (int v = 1; v < 4; ++v) s += v == wave ? f4{x[0], x[1], x[2], x[3]} : red[slot(wave, v, k)];
#pragma unroll
        for (int e = 0; e < 4; ++e) x[e] = s[e];
      }
    }
  }
  // The band's rows left (none: the band lies past M).
  const int r0 = m0 + BR * wave, rows_left = g.m - r0, cols_left = g.n - n0;
  if (wave >= bands || rows_left <= 0) return;
  // The stores through a view whose origin is the band's (r0, n0): its edge tests compare the lane's row and column
  // inside the band with the rows and columns left, so no lane's row or column of C (m0 + 16 i + lr, n0 + 16 j + lr:
  // values the setup computed for A's and B's addresses) is kept live from the setup to here. (Kept, they spilled
  // 2 VGPRs in the 128-row instances.)
  // fp32 (the splits' partials, unscaled, or C) or bf16 C: two stores, chosen at run time.
  if (p.part || !p.c_bf16) {
    float* const base = p.part ? p.part + (long(split) * g.m + r0) * g.n + n0 : static_cast<float*>(g.c) + long(r0) * g.ldc + n0;
    const gl<float, 1, 1> c(base, 1, 1, rows_left, cols_left, p.part ? long(g.n) : g.ldc);
    store_bounded(c, own, coord{0, 0, 0, 0}, p.part ? 1.f : g.alpha, p.part ? 0.f : g.beta);
  } else {
    const gl<bf16, 1, 1> c(static_cast<bf16*>(g.c) + long(r0) * g.ldc + n0, 1, 1, rows_left, cols_left, g.ldc);
    store_bounded(c, own, coord{0, 0, 0, 0}, g.alpha, g.beta);
  }
}

// C = alpha * (the splits' partial products, summed in split order) + beta * C: one element per thread.
template <class TOut>
__global__ __launch_bounds__(256) void gemm_skinny_reduce(SkinnyArgs p) {
  const GemmArgs& g = p.g;
  const long i = long(blockIdx.x) * 256 + threadIdx.x, mn = long(g.m) * g.n;
  if (i >= mn) return;
  // The partials' loads eight at a time, all in flight together; the sum in split order.
  float s = 0.f;
  for (int k0 = 0; k0 < p.splits; k0 += 8) {
    float x[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) x[k] = k0 + k < p.splits ? p.part[(k0 + k) * mn + i] : 0.f;
#pragma unroll
    for (int k = 0; k < 8; ++k)
      if (k0 + k < p.splits) s += x[k];
  }
  TOut* c = static_cast<TOut*>(g.c) + i / g.n * g.ldc + i % g.n;
  float v = g.alpha * s;
  if (g.beta != 0.f) v += g.beta * static_cast<float>(*c);
  *c = static_cast<TOut>(v);
}

}  // namespace hk::kernels
