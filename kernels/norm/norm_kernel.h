// The fused dropout + residual + LayerNorm / RMSNorm kernels. The forward is a stream (x and residual read once; y,
// r and the optional mask written once) and the backward nearly one, so their time is HBM's if the CUs keep enough
// bytes in flight and the VALU work per byte stays under it. A row is held in registers by a team of waves (a
// hk::group): thread t of the team holds the 8-column chunks t, t + team threads, ... of the row. A chunk is one
// 16-byte access of a 16-bit tensor (two of an fp32 one) when the rows allow it (`vector`, decided once on the host),
// serves exactly the one Philox call made for its columns (16 bits a column), and packs into one byte of a bit mask.
// A row's statistics are one group_sum. The team size and chunks per thread (NormShape) are picked from the hidden
// size, the narrowest that holds the row: up to 2048 columns one wave per row (4 chunks: 8 16-byte loads in flight
// per wave, sums without barriers), wider rows 2, 4 or 8 waves, so every size up to 16384 is one pass over HBM.
// Each kernel has a `Full` instance (every row a whole number of chunks, vector accesses: a chunk is in the row or
// not, one uniform branch, no per-column masks) and a ragged one; both do their arithmetic on column pairs (float2:
// packed fp32 FMAs) and drop a column by one compare of its Philox half-word. That took the VALU work a row from
// above HBM's time to under it (MI355X model, 262144 x 2048 bf16 p = 0.1: forward 0.877 -> 0.693 ms, backward
// 1.300 -> 0.709 ms, both ~100% of the sustained bandwidth). No kernel spills (VGPR or SGPR) on either arch: the
// values the optimizer would hoist out of the backward's row loop into registers held across it (Philox keys, the
// ragged shapes' column masks) pass through empty volatile asm and are recomputed instead.
#pragma once
#include <tuple>

#include "hk/hk.h"
#include "hk/ops/group_reduce.h"
#include "hk/ops/philox.h"

namespace hk::kernels {

template <int WavesPerRow, int Chunks>
struct NormShape {
  static constexpr int waves_per_row = WavesPerRow, chunks = Chunks;
  static constexpr int row_threads = 64 * WavesPerRow;
  static constexpr int capacity = row_threads * Chunks * 8;               // the widest row it holds
  static constexpr int block_waves = WavesPerRow >= 4 ? WavesPerRow : 4;  // workgroups of at least 4 waves
  static constexpr int rows_per_block = block_waves / WavesPerRow;
  static constexpr int block_threads = 64 * block_waves;
};
// Hidden sizes up to 512, 1024, 2048, 4096, 8192, 16384: one wave per row up to 2048, 2, 4 or 8 for larger ones
// (each the narrowest that holds the row, so no lane idles at the powers of two).
using norm_shapes = std::tuple<NormShape<1, 1>, NormShape<1, 2>, NormShape<1, 4>, NormShape<2, 4>, NormShape<4, 4>,
                               NormShape<8, 4>>;
inline constexpr int norm_chunk = 8;  // columns per chunk
// The backward keeps per-column dweight / dbias partials next to the row, so it holds at most two chunks per thread
// and spreads wide rows over more waves (up to 16: 1024 threads): 512, 1024, 2048, 4096, 8192, 16384 columns.
using norm_backward_shapes =
    std::tuple<NormShape<1, 1>, NormShape<2, 1>, NormShape<4, 1>, NormShape<8, 1>, NormShape<16, 1>, NormShape<16, 2>>;

// The backward's grid is at most this many waves (4096 / the shape's block waves workgroups, each leaving one
// partial per team), independent of the device, so the reduction order of dweight / dbias is a function of the
// problem alone. Enough waves that each CU of the largest part runs several rows at once (a team's rows are a
// dependent chain), and no more: every team adds a partial row to the column sums.
inline constexpr int norm_backward_max_waves = 4096;

struct Dropout {
  float p, scale;                     // scale = 1 / (1 - p)
  uint32_t seed_lo, seed_hi, offset_lo, offset_hi;
  // A column is kept when its 16 random bits h have h / 2^16 >= p, that is h >= threshold = ceil(p * 2^16) (both
  // sides exact; 0 when p = 0: every column kept). 16 bits a column, not a whole word: one Philox call serves a chunk
  // of 8 columns, half the VALU work of a word each (the forward was VALU-bound on Philox), and p is still resolved
  // to 2^-16 (flash-attention's dropout resolves it to 2^-8).
  uint32_t threshold;
  // Bit v: whether column v of the 8 of chunk q of `row` is kept: the low halves of the four words of Philox block q
  // give columns 0-3, their high halves columns 4-7.
  __device__ __attribute__((always_inline)) uint32_t keep8(long row, int q) const {
    if (threshold == 0) return 0xffu;
    return dropout_keep8(bits(row, q), threshold);
  }
  // Whether column e (0-7) of the chunk whose Philox block is `b` is dropped (keep8's bit e, one compare).
  __device__ __attribute__((always_inline)) bool dropped(const philox4x32& b, int e) const {
    return (e < 4 ? b.v[e] & 0xffffu : b.v[e - 4] >> 16) < threshold;
  }
  // The Philox block of chunk q of `row`: word v's low half decides column v, its high half column 4 + v. The key
  // and the counter's constant words are opaque to the optimizer: not hoisted out of the backward's row loop into
  // registers held across it.
  __device__ __attribute__((always_inline)) philox4x32 bits(long row, int q) const {
    uint32_t k0 = seed_lo, k1 = seed_hi, c0 = uint32_t(q), c2 = offset_lo, c3 = offset_hi;
    asm volatile("" : "+s"(k0), "+s"(k1), "+v"(c0), "+s"(c2), "+s"(c3));
    return philox4x32_r<10>({{c0, uint32_t(row), c2, c3}}, k0, k1);
  }
};

struct NormForwardArgs {
  int rows, cols;
  const void* x;
  long ldx;
  const void* residual;
  long ld_residual;
  const void* weight;
  const void* bias;
  void* y;
  long ldy;
  void* residual_out;
  long ld_residual_out;
  float* mean;
  float* rstd;
  uint8_t* mask;       // a byte per column, or null
  long ld_mask;
  uint8_t* mask_bits;  // a bit per column (bit c % 8 of byte c / 8), or null
  long ld_mask_bits;
  float eps;
  Dropout dropout;
  bool rms;
  bool vector;  // every row tensor (and weight, bias, mask) allows 8-column vector accesses
  bool weight_fp32;  // weight and bias are fp32, else the activations' type
};

struct NormBackwardArgs {
  int rows, cols;
  const void* dy;
  long ldy;
  const void* r;
  long ldr;
  const void* dresidual_in;
  long ld_dresidual_in;
  const float* mean;
  const float* rstd;
  const void* weight;
  void* dx;
  long ldx;
  void* dresidual;
  long ld_dresidual;
  float* partial_dweight;  // [teams][cols]
  float* partial_dbias;    // [teams][cols], or null
  Dropout dropout;
  bool rms;
  bool vector;             // every row tensor (and weight) allows 8-column vector accesses
  bool weight_fp32;        // the weight is fp32, else the activations' type
};

template <class T>
__device__ inline float load_f(const void* p, long i) { return float(static_cast<const T*>(p)[i]); }
template <class T>
__device__ inline void store_f(void* p, long i, float v) { static_cast<T*>(p)[i] = T(v); }

// The 8 columns of a chunk, `valid` (1 .. 8) of them inside the row: 16-byte vector accesses (hk's chunk) when all 8 are and
// the tensors' rows are aligned for them (`vector`, decided once on the host), else one access per column.
template <class T>
__device__ inline void load8(float (&v)[8], const void* p, long at, int valid, bool vector) {
  const T* e = static_cast<const T*>(p) + at;
  if (vector && valid == 8) {
    constexpr int n = 16 / sizeof(T);  // elements per 16-byte access
#pragma unroll
    for (int j = 0; j < 8; j += n) {
      const auto c = *reinterpret_cast<const detail::chunk<T, n>*>(e + j);
#pragma unroll
      for (int k = 0; k < n; ++k) v[j + k] = float(c.v[k]);
    }
  } else {
    // valid >= 1: a column past the row loads column 0 again (inside the row) and is then zeroed, a select rather
    // than a branch (no exec mask, no SGPR pair held per column).
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const float c = float(e[k < valid ? k : 0]);
      v[k] = k < valid ? c : 0.f;
    }
  }
}
template <class T>
__device__ inline void store8(void* p, long at, const float (&v)[8], int valid, bool vector) {
  T* e = static_cast<T*>(p) + at;
  if (vector && valid == 8) {
    constexpr int n = 16 / sizeof(T);
#pragma unroll
    for (int j = 0; j < 8; j += n) {
      detail::chunk<T, n> c;
#pragma unroll
      for (int k = 0; k < n; ++k) c.v[k] = T(v[j + k]);
      *reinterpret_cast<detail::chunk<T, n>*>(e + j) = c;
    }
  } else {
#pragma unroll
    for (int k = 0; k < 8; ++k)
      if (k < valid) e[k] = T(v[k]);
  }
}

// load8 of a weight (or bias) chunk of type TW, or with TW void, fp32 or the activations' type T as the arguments say:
// a uniform branch, so the weight type costs no instance of its own. (The backward's two-chunk shapes, which reload the
// weight in their row loop, keep TW: the branch there spilled 2 SGPRs on gfx942.)
template <class T, class TW>
__device__ __attribute__((always_inline)) inline void load8_weight(float (&v)[8], const void* p, long at, int valid, bool vector,
                                                                  bool fp32) {
  if constexpr (!std::is_void_v<TW>) load8<TW>(v, p, at, valid, vector);
  else if (std::is_same_v<T, float> || fp32) load8<float>(v, p, at, valid, vector);
  else load8<T>(v, p, at, valid, vector);
}

// Columns of chunk q inside a row of `cols` (0 .. 8).
__device__ inline int chunk_valid(int q, int cols) {
  const int n = cols - norm_chunk * q;
  return n < 0 ? 0 : n > norm_chunk ? norm_chunk : n;
}

using float2v = float __attribute__((ext_vector_type(2)));

// The forward. `Full` (decided on the host: vector accesses allowed and cols % 8 == 0): a chunk is all in the row or
// all out, so each chunk is one uniform branch and only 16-byte accesses. The arithmetic is on column pairs (float2:
// v_pk_fma_f32 / v_pk_mul_f32 / v_pk_add_f32), and the dropout takes one compare of a Philox half-word per column,
// the keep bits packed only when a mask is written.
template <class T, class S, bool Full>
__global__ void __launch_bounds__(S::block_threads) norm_forward(NormForwardArgs a) {
  using G = group<S::waves_per_row>;
  __shared__ sv<float, S::block_waves> scratch;
  const int t = G::thread();
  const long row = long(blockIdx.x) * S::rows_per_block + wave_id() / S::waves_per_row;
  const bool live = row < a.rows;  // a team past the last row still joins the group sums' barriers
  const bool vector = Full || a.vector;
  // Columns of chunk q in the row (Full: 0 or 8, known to the compiler). Ragged rows: q opaque, so each loop
  // recomputes its column masks rather than holding 64-bit SGPR masks across the sums (which spilled SGPRs).
  auto columns = [&](int q) __attribute__((always_inline)) {
    if constexpr (!Full) asm volatile("" : "+v"(q));
    return !live ? 0 : Full ? (q < (a.cols >> 3) ? norm_chunk : 0) : chunk_valid(q, a.cols);
  };
  // Every chunk's x and residual loads first (all in flight together), then the dropout, sums and stores.
  float r[S::chunks][8], res[S::chunks][8];
#pragma unroll
  for (int k = 0; k < S::chunks; ++k) {
    const int q = k * S::row_threads + t, valid = columns(q);
#pragma unroll
    for (int v = 0; v < 8; ++v) r[k][v] = res[k][v] = 0.f;
    if (valid) {
      load8<T>(r[k], a.x, row * a.ldx + 8 * q, Full ? norm_chunk : valid, vector);
      if (a.residual) load8<T>(res[k], a.residual, row * a.ld_residual + 8 * q, Full ? norm_chunk : valid, vector);
    }
  }
  float2v sum2 = {0.f, 0.f};
#pragma unroll
  for (int k = 0; k < S::chunks; ++k) {
    const int q = k * S::row_threads + t, valid = columns(q);
    if (!valid) continue;  // r stays 0 past the row
    float scale[8];
#pragma unroll
    for (int v = 0; v < 8; ++v) scale[v] = a.dropout.scale;
    if (a.dropout.threshold) {
      const philox4x32 bits = a.dropout.bits(row, q);
#pragma unroll
      for (int v = 0; v < 8; ++v)
        if (a.dropout.dropped(bits, v)) scale[v] = 0.f;
      if (a.mask || a.mask_bits) {
        const uint32_t keep = dropout_keep8(bits, a.dropout.threshold);
        if (a.mask) {
          uint8_t* m = a.mask + row * a.ld_mask + 8 * q;
          if (vector && valid == 8) {
            uint32_t lo = 0, hi = 0;
#pragma unroll
            for (int v = 0; v < 4; ++v) lo |= (keep >> v & 1) << 8 * v, hi |= (keep >> (4 + v) & 1) << 8 * v;
            *reinterpret_cast<uint2*>(m) = make_uint2(lo, hi);
          } else {
            for (int v = 0; v < valid; ++v) m[v] = keep >> v & 1;
          }
        }
        if (a.mask_bits) a.mask_bits[row * a.ld_mask_bits + q] = uint8_t(keep & ((1u << valid) - 1));
      }
    } else if (a.mask || a.mask_bits) {  // p = 0: every column kept
      if (a.mask) {
        uint8_t* m = a.mask + row * a.ld_mask + 8 * q;
        if (vector && valid == 8) *reinterpret_cast<uint2*>(m) = make_uint2(0x01010101u, 0x01010101u);
        else for (int v = 0; v < valid; ++v) m[v] = 1;
      }
      if (a.mask_bits) a.mask_bits[row * a.ld_mask_bits + q] = uint8_t((1u << valid) - 1);
    }
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      float2v x2 = float2v{r[k][2 * v], r[k][2 * v + 1]} * float2v{scale[2 * v], scale[2 * v + 1]} +
                   float2v{res[k][2 * v], res[k][2 * v + 1]};  // 0 past the row (x, residual loaded as 0)
      r[k][2 * v] = x2.x, r[k][2 * v + 1] = x2.y;
      sum2 += x2;
    }
  }
  // Two passes over the registers (mean, then squared deviations): no cancellation in the variance.
  float mean = 0.f;
  if (!a.rms) {
    float sum[1] = {sum2.x + sum2.y};
    group_sum<G>(sum, scratch);
    mean = sum[0] / float(a.cols);
  }
  float2v sq2 = {0.f, 0.f};
#pragma unroll
  for (int k = 0; k < S::chunks; ++k) {
    const int valid = columns(k * S::row_threads + t);
    if (!valid) continue;
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      float2v d = float2v{r[k][2 * v], r[k][2 * v + 1]} - mean;
      if (!Full && 2 * v >= valid) d.x = 0.f;
      if (!Full && 2 * v + 1 >= valid) d.y = 0.f;
      sq2 += d * d;
    }
  }
  float squares[1] = {sq2.x + sq2.y};
  group_sum<G>(squares, scratch);
  const float rstd = 1.f / sqrtf(squares[0] / float(a.cols) + a.eps), shift = -mean * rstd;
  if (!live) return;
  if (t == 0) {
    if (a.mean) a.mean[row] = mean;
    if (a.rstd) a.rstd[row] = rstd;
  }
#pragma unroll
  for (int k = 0; k < S::chunks; ++k) {
    const int q = k * S::row_threads + t, valid = columns(q);
    if (!valid) continue;
    float w[8], b[8] = {}, y[8];
    load8_weight<T, void>(w, a.weight, 8 * q, Full ? norm_chunk : valid, vector, a.weight_fp32);
    if (a.bias) load8_weight<T, void>(b, a.bias, 8 * q, Full ? norm_chunk : valid, vector, a.weight_fp32);
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      const float2v y2 = (float2v{r[k][2 * v], r[k][2 * v + 1]} * rstd + shift) * float2v{w[2 * v], w[2 * v + 1]} +
                         float2v{b[2 * v], b[2 * v + 1]};
      y[2 * v] = y2.x, y[2 * v + 1] = y2.y;
    }
    store8<T>(a.y, row * a.ldy + 8 * q, y, Full ? norm_chunk : valid, vector);
    // r after y: a weight load placed after r's stores would wait for them (loads and stores share one counter).
    if (a.residual_out) store8<T>(a.residual_out, row * a.ld_residual_out + 8 * q, r[k], Full ? norm_chunk : valid, vector);
  }
}

// dr = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * weight (RMSNorm: no mean(g) term), plus the
// gradient reaching r directly; dx = dr through the dropout mask. Each team also sums dy * xhat and dy over its rows
// per column into its own partial. `Full` (decided on the host: vector accesses allowed and cols % 8 == 0): a chunk is
// all in the row or all out, so the row loop has one uniform branch a chunk and only 16-byte accesses. The arithmetic
// is on column pairs (float2: v_pk_fma_f32 / v_pk_mul_f32 / v_pk_add_f32, two columns an instruction), the weight
// stays in registers across the rows (one-chunk shapes), and the mask takes one compare of a Philox half-word per
// column (no bit packing).
template <class T, class TW, class S, bool Full>
__global__ void __launch_bounds__(S::block_threads) norm_backward(NormBackwardArgs a) {
  using G = group<S::waves_per_row>;
  // The widest rows would not keep xhat, g and the weight in registers next to the dweight / dbias partials: they read
  // dy, r and weight again in the second pass (the row was just read, so from cache) instead.
  constexpr bool reload = S::chunks > 1;
  constexpr int kept = reload ? 1 : S::chunks, second_pass_unroll = reload ? 1 : S::chunks;
  __shared__ sv<float, S::block_waves * 2> scratch;
  const int t_ = G::thread(), team_in_block = wave_id() / S::waves_per_row;
  const bool vector = Full || a.vector;
  // Columns of chunk q in the row (Full: 0 or 8, known to the compiler).
  auto columns = [&](int q) __attribute__((always_inline)) {
    return Full ? (q < (a.cols >> 3) ? norm_chunk : 0) : chunk_valid(q, a.cols);
  };
  float2v dweight[S::chunks][4] = {}, dbias[S::chunks][4] = {};
  float w_kept[kept][8];
  if constexpr (!reload) {
#pragma unroll
    for (int k = 0; k < S::chunks; ++k) {
      const int q = k * S::row_threads + t_, valid = columns(q);
#pragma unroll
      for (int v = 0; v < 8; ++v) w_kept[k][v] = 0.f;
      if (valid) load8_weight<T, TW>(w_kept[k], a.weight, 8 * q, Full ? norm_chunk : valid, vector, a.weight_fp32);
    }
  }
  const float scale = a.dropout.scale;
  for (long first = long(blockIdx.x) * S::rows_per_block; first < a.rows; first += long(gridDim.x) * S::rows_per_block) {
    const long row = first + team_in_block;
    const bool live = row < a.rows;
    // The thread's chunk positions, opaque per row: their bounds masks and addresses are recomputed (a few VALU
    // instructions) rather than hoisted out of the row loop into 64-bit SGPR masks and VGPRs held across it.
    int t = t_;
    asm volatile("" : "+v"(t));
    const float mean = live && !a.rms ? a.mean[row] : 0.f, rstd = live ? a.rstd[row] : 0.f;
    const float shift = -mean * rstd;  // xhat = r rstd + shift
    // The row's start in each tensor once; chunks are 32-bit offsets from it.
    const T* dy_row = static_cast<const T*>(a.dy) + row * a.ldy;
    const T* r_row = static_cast<const T*>(a.r) + row * a.ldr;
    // dy, xhat and g of chunk k as column pairs. Past the row dy and g are 0 and xhat is finite (the shift), so those
    // columns add nothing to any sum and are never stored.
    auto values = [&](int k, float2v (&dy2)[4], float2v (&x2)[4], float2v (&g2)[4]) __attribute__((always_inline)) {
      const int q = k * S::row_threads + t, valid = live ? columns(q) : 0;
      float dy[8], r[8], w[8];
#pragma unroll
      for (int v = 0; v < 8; ++v) dy[v] = r[v] = w[v] = 0.f;
      if (valid) {
        load8<T>(dy, dy_row, 8 * q, Full ? norm_chunk : valid, vector);
        load8<T>(r, r_row, 8 * q, Full ? norm_chunk : valid, vector);
        if constexpr (reload) load8_weight<T, TW>(w, a.weight, 8 * q, Full ? norm_chunk : valid, vector, a.weight_fp32);
      }
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        const float2v r2 = {r[2 * v], r[2 * v + 1]};
        const float2v w2 = reload ? float2v{w[2 * v], w[2 * v + 1]} : float2v{w_kept[k][2 * v], w_kept[k][2 * v + 1]};
        dy2[v] = float2v{dy[2 * v], dy[2 * v + 1]};
        x2[v] = r2 * rstd + shift;
        g2[v] = dy2[v] * w2;
      }
    };
    float2v xhat[kept][4], g[kept][4], sum_g = {0.f, 0.f}, sum_gx = {0.f, 0.f};
#pragma unroll
    for (int k = 0; k < S::chunks; ++k) {
      float2v dy[4];
      float2v(&x)[4] = xhat[reload ? 0 : k];
      float2v(&gk)[4] = g[reload ? 0 : k];
      values(k, dy, x, gk);
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        sum_g += gk[v];
        sum_gx += gk[v] * x[v];
        dweight[k][v] += dy[v] * x[v];
        dbias[k][v] += dy[v];
      }
    }
    float sums[2] = {sum_g.x + sum_g.y, sum_gx.x + sum_gx.y};
    group_sum<G>(sums, scratch);
    if (!live) continue;
    // dr = rstd g + c0 - xhat c1 (c0 = -rstd mean(g), c1 = rstd mean(g xhat)).
    const float c0 = a.rms ? 0.f : -rstd * (sums[0] / float(a.cols)), c1 = rstd * (sums[1] / float(a.cols));
    // The reloading shape's second pass is one chunk's code run twice (it holds nothing per chunk): half the code and
    // the column masks of one chunk live at a time (unrolled, the ragged 16384-column backward spilled SGPRs).
#pragma unroll second_pass_unroll
    for (int k = 0; k < S::chunks; ++k) {
      const int q = k * S::row_threads + t, valid = columns(q);
      if (!valid) continue;
      if constexpr (reload) {
        float2v dy[4];
        values(k, dy, xhat[0], g[0]);
      }
      const float2v(&x)[4] = xhat[reload ? 0 : k];
      const float2v(&gk)[4] = g[reload ? 0 : k];
      float dr[8] = {}, dx[8];
      if (a.dresidual_in) load8<T>(dr, a.dresidual_in, row * a.ld_dresidual_in + 8 * q, Full ? norm_chunk : valid, vector);
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        float2v d = float2v{dr[2 * v], dr[2 * v + 1]} + (gk[v] * rstd + c0) - x[v] * c1;
        dr[2 * v] = d.x, dr[2 * v + 1] = d.y;
        d *= scale;
        dx[2 * v] = d.x, dx[2 * v + 1] = d.y;
      }
      if (a.dropout.threshold) {
        const philox4x32 bits = a.dropout.bits(row, q);
#pragma unroll
        for (int v = 0; v < 8; ++v)
          if (a.dropout.dropped(bits, v)) dx[v] = 0.f;
      }
      if (a.dresidual) store8<T>(a.dresidual, row * a.ld_dresidual + 8 * q, dr, Full ? norm_chunk : valid, vector);
      store8<T>(a.dx, row * a.ldx + 8 * q, dx, Full ? norm_chunk : valid, vector);
    }
  }
  const long team = long(blockIdx.x) * S::rows_per_block + team_in_block;
#pragma unroll
  for (int k = 0; k < S::chunks; ++k) {
    const int q = k * S::row_threads + t_, valid = columns(q);
    if (!valid) continue;
    float dw[8], db[8];
#pragma unroll
    for (int v = 0; v < 4; ++v) dw[2 * v] = dweight[k][v].x, dw[2 * v + 1] = dweight[k][v].y, db[2 * v] = dbias[k][v].x, db[2 * v + 1] = dbias[k][v].y;
    // Partials are float rows of cols: vector stores when cols keeps 16-byte chunks aligned.
    store8<float>(a.partial_dweight, team * a.cols + 8 * q, dw, valid, a.cols % 8 == 0);
    if (a.partial_dbias) store8<float>(a.partial_dbias, team * a.cols + 8 * q, db, valid, a.cols % 8 == 0);
  }
}

// The column sums of the partials: a workgroup takes norm_reduce_columns_per_block columns (4 a thread, one 16-byte
// load a partial row when cols % 4 == 0) and all teams, its norm_reduce_slices thread rows each adding the teams
// s, s + slices, ... in order, then one thread a column adding the slices' sums in slice order through LDS. The order
// is a function of (teams, cols) alone: the same bits for every run and launch.
inline constexpr int norm_reduce_threads = 256, norm_reduce_col_threads = 4,
                     norm_reduce_slices = norm_reduce_threads / norm_reduce_col_threads,
                     norm_reduce_columns_per_block = 4 * norm_reduce_col_threads;

template <class TW>
__global__ void __launch_bounds__(norm_reduce_threads)
    norm_reduce_columns(const float* partial_dweight, const float* partial_dbias, int teams, int cols, void* dweight,
                        void* dbias) {
  constexpr int C = norm_reduce_columns_per_block;
  // dweight's slice sums, then dbias's C words further than back to back: the final reads of the two (lanes 0 .. C - 1
  // and C .. 2C - 1 of the first wave) fall in different banks.
  constexpr int stride = norm_reduce_slices * C + C;
  __shared__ alignas(16) float sums[2 * stride];
  const int lane_col = 4 * (threadIdx.x % norm_reduce_col_threads), slice = threadIdx.x / norm_reduce_col_threads;
  const int col = blockIdx.x * C + lane_col;
  const bool vector = cols % 4 == 0 && col + 4 <= cols;
  float w[4] = {}, b[4] = {};
  auto add = [&](const float* partial, float (&s)[4], int team) __attribute__((always_inline)) {
    const float* p = partial + long(team) * cols + col;
    if (vector) {
      const float4 v = *reinterpret_cast<const float4*>(p);
      s[0] += v.x, s[1] += v.y, s[2] += v.z, s[3] += v.w;
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i)
        if (col + i < cols) s[i] += p[i];
    }
  };
  // Unrolled so several teams' loads are in flight at once; the additions stay in team order.
#pragma unroll 8
  for (int team = slice; team < teams; team += norm_reduce_slices) {
    add(partial_dweight, w, team);
    if (partial_dbias) add(partial_dbias, b, team);
  }
  // One 16-byte write a thread: a quarter wave's 16 lanes cover 64 consecutive words (no bank conflict).
  *reinterpret_cast<float4*>(&sums[slice * C + lane_col]) = make_float4(w[0], w[1], w[2], w[3]);
  *reinterpret_cast<float4*>(&sums[stride + slice * C + lane_col]) = make_float4(b[0], b[1], b[2], b[3]);
  __syncthreads();
  if (threadIdx.x >= 2 * C) return;
  const int which = threadIdx.x / C, c = threadIdx.x % C, out = blockIdx.x * C + c;
  if (out >= cols || (which == 1 && !dbias)) return;
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < norm_reduce_slices; ++i) s += sums[which * stride + i * C + c];
  store_f<TW>(which ? dbias : dweight, out, s);
}

}  // namespace hk::kernels
