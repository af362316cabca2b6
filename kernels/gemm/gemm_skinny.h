// The skinny GEMM kernel: C = alpha * A * op(B) + beta * C for few rows of A (M up to a few hundred: tokens in flight
// at decode), N and K in the thousands. Every byte of B meets only M rows of A, so the work is bound by reading B from
// HBM once; the schedule is about keeping HBM busy, and the matrix cores (M >= 16 would ask too much of the VALU) only
// have to keep out of the way. The model of attention_decode.h, which reaches 97% of HBM the same way:
//   - A workgroup of 4 waves owns a BM x WN block of C (BM = 16 or 64 rows, WN = 32 columns) and a range of K steps
//     (a split); its waves take the range's steps in turn (wave w: steps w, w + 4, ...), each with its own
//     accumulators, and meet once at the end, where waves 1..3 hand theirs to wave 0 through LDS and wave 0 adds them
//     in wave order. No barrier in the loop: a wave waits for nothing but its own loads.
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
//   - A (M x K, small) is read by every column block from L2. Where the blocks of C are too few to keep HBM busy
//     (under a quarter of the CUs) the host splits K into `splits` ranges, a workgroup per CU; with splits > 1 each workgroup writes its fp32 partial block to a workspace
//     and gemm_skinny_reduce sums the splits in split order, then applies alpha and beta: every sum is taken in a
//     fixed order, so results are bit-identical from run to run.
//   - Edges: rows of A and B past M and N are clamped to the last row (read, never stored); the last step of a K that
//     is not a whole number of steps reads chunk by chunk and zero-fills past K (A and B both, so no product of
//     garbage can reach C), and a K x N B's column chunks that cross N likewise. The host takes this kernel only where
//     A's and B's rows start on 16-byte boundaries (else the tiled kernels run).
#pragma once
#include "gemm_common.h"

namespace hk::kernels {

struct SkinnyArgs {
  GemmArgs g;
  float* part;             // splits > 1: [split][m][n] fp32 partial products; null: C directly
  int splits, split_steps;  // K ranges per block of C and their length in steps
  int tiles_m, tiles_n;     // blocks of C (BM x WN)
};

// The kernel's geometry for element type T and BM rows of C (the same for both orientations of B).
template <class T, int BM>
struct SkinnyShape {
  static constexpr int LE = 16 / int(sizeof(T));            // elements per 16-byte chunk
  static constexpr int WN = 32;                             // columns of C per workgroup
  static constexpr int NC = BM <= 16 ? 8 : 4;               // chunks per lane of each row and step
  static constexpr int KB = 4 * NC * LE;                    // K elements per step
  static constexpr int E = elems_per_lane<T>;               // a lane's operand elements per MFMA
  static constexpr int KS = 4 * E > 64 ? 4 * E : 64;        // K rows per LDS round trip (B given K x N)
  static constexpr int UPS = KS / (4 * LE);                 // chunks per lane of a row per sub-block
  static_assert(KB % KS == 0 && BM % 16 == 0, "gemm_skinny: a step is whole sub-blocks");
};

namespace skinny {

// A 16-byte chunk of `valid` elements at p (>= LE: all of it, one load), the rest zero.
template <class T>
__device__ inline uint4 load_chunk(const T* p, int valid) {
  constexpr int LE = 16 / int(sizeof(T));
  if (valid >= LE) return *reinterpret_cast<const uint4*>(p);
  using U = std::conditional_t<sizeof(T) == 2, uint16_t, uint8_t>;
  hk::detail::chunk<U, LE> c;
  const U* q = reinterpret_cast<const U*>(p);
#pragma unroll
  for (int e = 0; e < LE; ++e) c.v[e] = e < valid ? q[e] : U(0);
  return __builtin_bit_cast(uint4, c);
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

template <class T, class TOut, bool BIsNK, int BM>
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
  static_assert(sizeof(a_sub) == MB * UPS * 16 && sizeof(b_sub) == NB * UPS * 16, "gemm_skinny: sub-tiles are the chunks");
  using b_lds = st<T, KS, WN>;
  // LDS: the waves' B sub-blocks in the loop (K x N only), then waves 1..3's accumulators.
  constexpr int lds_b = BIsNK ? 0 : 4 * int(sizeof(b_lds)), lds_acc = 3 * 64 * int(sizeof(acc_t));  // sizeof: one lane's
  __shared__ __attribute__((aligned(16))) char lds[lds_b > lds_acc ? lds_b : lds_acc];

  const GemmArgs& g = p.g;
  const int wave = __builtin_amdgcn_readfirstlane(wave_id()), lane = lane_id(), lr = lane % 16, lg = lane / 16;
  int id = xcd_remap(int(blockIdx.x), int(gridDim.x));
  const int tile_m = id % p.tiles_m;
  id /= p.tiles_m;
  const int tile_n = id % p.tiles_n, split = id / p.tiles_n;
  const int m0 = tile_m * BM, n0 = tile_n * WN;
  const int steps = (g.k + KB - 1) / KB, kt_begin = split * p.split_steps;
  const int kt_end = std::min(steps, kt_begin + p.split_steps);
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

  uint4 ra[MB][NC], rb[NB * NC];
  // Step kt's loads; Masked: chunk by chunk inside K (and N), zeros outside.
  auto issue = [&]<bool Masked>(int kt) __attribute__((always_inline)) {
    const int k0 = kt * KB;
#pragma unroll
    for (int u = 0; u < NC; ++u) {
      const int kk = k0 + LE * 4 * u, valid = Masked ? g.k - kk - LE * lg : LE;
#pragma unroll
      for (int i = 0; i < MB; ++i) ra[i][u] = skinny::load_chunk(arow[i] + kk, valid);
      if constexpr (BIsNK) {
#pragma unroll
        for (int i = 0; i < NB; ++i) rb[i * NC + u] = skinny::load_chunk(brow[i] + kk, valid);
      }
    }
    if constexpr (!BIsNK) {
#pragma unroll
      for (int q = 0; q < LOADS; ++q) {
        const int k = k0 + q * RPI;  // + this lane's row lane / CR
        const T* src = brow[0] + long(k) * g.ldb;
        rb[q] = Masked ? (k + lane / CR < g.k ? skinny::load_chunk(src, b_cols) : uint4{0, 0, 0, 0}) : skinny::load_chunk(src, LE);
      }
    }
  };

  b_lds& sb = reinterpret_cast<b_lds*>(lds)[wave];
  // This lane's rows of the LDS sub-block (B given K x N): row q RPI + lane / CR of the step, where q counts loads.
  acc_t acc;
  zero(acc);
  auto consume = [&]() __attribute__((always_inline)) {
#pragma unroll
    for (int s = 0; s < SUBS; ++s) {
      a_sub a;
#pragma unroll
      for (int i = 0; i < MB; ++i) __builtin_memcpy(&a.data[i][0][0], &ra[i][s * UPS], UPS * 16);
      b_sub b;
      if constexpr (BIsNK) {
#pragma unroll
        for (int i = 0; i < NB; ++i) __builtin_memcpy(&b.data[i][0][0], &rb[i * NC + s * UPS], UPS * 16);
        mma_ABt(acc, a, b, acc);
      } else {
        constexpr int piece = b_lds::chunk_elems;
#pragma unroll
        for (int q = 0; q < KS / RPI; ++q) {
          const int r = skinny::permuted<Shape>(q * RPI + lane / CR);
          const T* src = reinterpret_cast<const T*>(&rb[s * (KS / RPI) + q]);
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

  int kt = kt_begin + wave;
  auto step = [&](int t) __attribute__((always_inline)) {
    if ((ragged_k && t == steps - 1) || (!BIsNK && !cols_whole)) issue.template operator()<true>(t);
    else issue.template operator()<false>(t);
  };
  if (kt < kt_end) step(kt);
  for (; kt < kt_end; kt += 4) {
    consume();
    if (kt + 4 < kt_end) step(kt + 4);  // the registers are free: the next step's loads fly from here
  }

  // The waves' sums, in wave order, by wave 0.
  using f4 = float __attribute__((ext_vector_type(4)));
  f4* red = reinterpret_cast<f4*>(lds);
  constexpr int blocks = acc_t::tiles_r * acc_t::tiles_c;
  barrier();
  if (wave > 0) {
#pragma unroll
    for (int b = 0; b < blocks; ++b) {
      const float* x = acc.data[b / acc_t::tiles_c][b % acc_t::tiles_c];
      red[((wave - 1) * blocks + b) * 64 + lane] = f4{x[0], x[1], x[2], x[3]};
    }
  }
  barrier();
  if (wave > 0) return;
#pragma unroll
  for (int w = 0; w < 3; ++w)
#pragma unroll
    for (int b = 0; b < blocks; ++b) {
      const f4 y = red[(w * blocks + b) * 64 + lane];
      float* x = acc.data[b / acc_t::tiles_c][b % acc_t::tiles_c];
#pragma unroll
      for (int e = 0; e < 4; ++e) x[e] += y[e];
    }
  if (p.part) {
    const gl<float, 1, 1> part(p.part + long(split) * g.m * g.n, 1, 1, g.m, g.n);
    store_bounded(part, acc, coord{0, 0, tile_m, tile_n});
  } else {
    const gl<TOut, 1, 1> c(static_cast<TOut*>(g.c), 1, 1, g.m, g.n, g.ldc);
    store_bounded(c, acc, coord{0, 0, tile_m, tile_n}, g.alpha, g.beta);
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
