// The fused dropout + residual + LayerNorm / RMSNorm kernels. The forward is a stream (x and residual read once; y,
// r and the optional mask written once) and the backward nearly one, so their time is HBM's if the CUs keep enough
// bytes in flight. A row is held in registers by a team of waves (a hk::group): thread t of the team holds the
// 8-column chunks t, t + team threads, ... of the row. A chunk is one 16-byte access of a 16-bit tensor (two of an
// fp32 one) when the rows allow it (`vector`, decided once on the host), serves exactly the two Philox calls made for
// its columns (each gives 4 columns' bits), and packs into one byte of a bit mask. A row's statistics are one
// group_sum. The team size and chunks per thread (NormShape) are picked from the hidden size: up to 2048 columns one
// wave per row (4 chunks: 8 16-byte loads in flight per wave, sums without barriers), wider rows 4 or 8 waves, so
// every size up to 16384 is one pass over HBM; the forward has no spills. The backward (its own shapes, below) has no
// VGPR spills at any width; the loop-invariant values the optimizer would hoist out of its row loop (Philox keys,
// bounds masks, addresses) are recomputed per row instead, which leaves SGPR spills (to VGPR lanes) only at 16384.
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
// Hidden sizes up to 512, 2048, 8192, 16384: one wave per row up to 2048, 4 or 8 waves for larger ones.
using norm_shapes = std::tuple<NormShape<1, 1>, NormShape<1, 4>, NormShape<4, 4>, NormShape<8, 4>>;
inline constexpr int norm_chunk = 8;  // columns per chunk
// The backward keeps per-column dweight / dbias partials next to the row, so it holds at most two chunks per thread
// and spreads wide rows over more waves (up to 16: 1024 threads): 512, 2048, 4096, 8192, 16384 columns.
using norm_backward_shapes =
    std::tuple<NormShape<1, 1>, NormShape<4, 1>, NormShape<8, 1>, NormShape<16, 1>, NormShape<16, 2>>;

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
    // Opaque to the optimizer: the key schedule and the counter's first products are not hoisted out of the
    // backward's row loop into registers held across it.
    uint32_t k0 = seed_lo, k1 = seed_hi, c0 = uint32_t(q), c2 = offset_lo, c3 = offset_hi;
    asm volatile("" : "+s"(k0), "+s"(k1), "+v"(c0), "+s"(c2), "+s"(c3));
    return dropout_keep8(philox4x32_10({{c0, uint32_t(row), c2, c3}}, k0, k1), threshold);
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
};

template <class T>
__device__ inline float load_f(const void* p, long i) { return float(static_cast<const T*>(p)[i]); }
template <class T>
__device__ inline void store_f(void* p, long i, float v) { static_cast<T*>(p)[i] = T(v); }

// The 8 columns of a chunk, `valid` of them inside the row: 16-byte vector accesses (hk's chunk) when all 8 are and
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
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = k < valid ? float(e[k]) : 0.f;
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

// Columns of chunk q inside a row of `cols` (0 .. 8).
__device__ inline int chunk_valid(int q, int cols) {
  const int n = cols - norm_chunk * q;
  return n < 0 ? 0 : n > norm_chunk ? norm_chunk : n;
}

template <class T, class TW, class S>
__global__ void __launch_bounds__(S::block_threads) norm_forward(NormForwardArgs a) {
  using G = group<S::waves_per_row>;
  __shared__ sv<float, S::block_waves> scratch;
  const int t = G::thread();
  const long row = long(blockIdx.x) * S::rows_per_block + wave_id() / S::waves_per_row;
  const bool live = row < a.rows;  // a team past the last row still joins the group sums' barriers
  // Every chunk's x and residual loads first (all in flight together), then the dropout, sums and stores.
  float r[S::chunks][8], res[S::chunks][8], sum[1] = {0.f};
#pragma unroll
  for (int k = 0; k < S::chunks; ++k) {
    const int q = k * S::row_threads + t, valid = live ? chunk_valid(q, a.cols) : 0;
#pragma unroll
    for (int v = 0; v < 8; ++v) r[k][v] = res[k][v] = 0.f;
    if (valid) {
      load8<T>(r[k], a.x, row * a.ldx + 8 * q, valid, a.vector);
      if (a.residual) load8<T>(res[k], a.residual, row * a.ld_residual + 8 * q, valid, a.vector);
    }
  }
#pragma unroll
  for (int k = 0; k < S::chunks; ++k) {
    const int q = k * S::row_threads + t, valid = live ? chunk_valid(q, a.cols) : 0;
    const uint32_t keep = valid ? a.dropout.keep8(row, q) : 0u;
#pragma unroll
    for (int v = 0; v < 8; ++v) {
      r[k][v] = v < valid ? (keep >> v & 1 ? r[k][v] * a.dropout.scale : 0.f) + res[k][v] : 0.f;
      sum[0] += r[k][v];
    }
    if (!valid) continue;
    if (a.mask) {
      uint8_t* m = a.mask + row * a.ld_mask + 8 * q;
      if (a.vector && valid == 8) {
        uint32_t lo = 0, hi = 0;
#pragma unroll
        for (int v = 0; v < 4; ++v) lo |= (keep >> v & 1) << 8 * v, hi |= (keep >> (4 + v) & 1) << 8 * v;
        *reinterpret_cast<uint2*>(m) = make_uint2(lo, hi);
      } else {
        for (int v = 0; v < valid; ++v) m[v] = keep >> v & 1;
      }
    }
    if (a.mask_bits) {
      a.mask_bits[row * a.ld_mask_bits + q] = uint8_t(keep & ((1u << valid) - 1));
    }
  }
  // Two passes over the registers (mean, then squared deviations): no cancellation in the variance.
  float mean = 0.f;
  if (!a.rms) {
    group_sum<G>(sum, scratch);
    mean = sum[0] / float(a.cols);
  }
  float squares[1] = {0.f};
#pragma unroll
  for (int k = 0; k < S::chunks; ++k) {
    const int valid = chunk_valid(k * S::row_threads + t, a.cols);
#pragma unroll
    for (int v = 0; v < 8; ++v)
      if (v < valid) squares[0] += (r[k][v] - mean) * (r[k][v] - mean);
  }
  group_sum<G>(squares, scratch);
  const float rstd = 1.f / sqrtf(squares[0] / float(a.cols) + a.eps);
  if (!live) return;
  if (t == 0) {
    if (a.mean) a.mean[row] = mean;
    if (a.rstd) a.rstd[row] = rstd;
  }
#pragma unroll
  for (int k = 0; k < S::chunks; ++k) {
    const int q = k * S::row_threads + t, valid = chunk_valid(q, a.cols);
    if (!valid) continue;
    float w[8], b[8] = {}, y[8];
    load8<TW>(w, a.weight, 8 * q, valid, a.vector);
    if (a.bias) load8<TW>(b, a.bias, 8 * q, valid, a.vector);
#pragma unroll
    for (int v = 0; v < 8; ++v) y[v] = (r[k][v] - mean) * rstd * w[v] + b[v];
    store8<T>(a.y, row * a.ldy + 8 * q, y, valid, a.vector);
    // r after y: a weight load placed after r's stores would wait for them (loads and stores share one counter).
    if (a.residual_out) store8<T>(a.residual_out, row * a.ld_residual_out + 8 * q, r[k], valid, a.vector);
  }
}

// dr = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * weight (RMSNorm: no mean(g) term), plus the
// gradient reaching r directly; dx = dr through the dropout mask. Each team also sums dy * xhat and dy over its rows
// per column into its own partial.
template <class T, class TW, class S>
__global__ void __launch_bounds__(S::block_threads) norm_backward(NormBackwardArgs a) {
  using G = group<S::waves_per_row>;
  // The widest rows would not keep xhat and g in registers next to the dweight / dbias partials: they read dy, r and
  // weight again in the second pass (the row was just read, so from cache) instead.
  constexpr bool reload = S::chunks > 1;
  constexpr int kept = reload ? 1 : S::chunks;
  __shared__ sv<float, S::block_waves * 2> scratch;
  const int t_ = G::thread(), team_in_block = wave_id() / S::waves_per_row;
  float dweight[S::chunks][8] = {}, dbias[S::chunks][8] = {};
  for (long first = long(blockIdx.x) * S::rows_per_block; first < a.rows; first += long(gridDim.x) * S::rows_per_block) {
    const long row = first + team_in_block;
    const bool live = row < a.rows;
    // The thread's chunk positions, opaque per row: their bounds masks and addresses are recomputed (a few VALU
    // instructions) rather than hoisted out of the row loop into 64-bit SGPR masks and VGPRs held across it.
    int t = t_;
    asm volatile("" : "+v"(t));
    const float mean = live && !a.rms ? a.mean[row] : 0.f, rstd = live ? a.rstd[row] : 0.f;
    // The row's start in each tensor once; chunks are 32-bit offsets from it.
    const T* dy_row = static_cast<const T*>(a.dy) + row * a.ldy;
    const T* r_row = static_cast<const T*>(a.r) + row * a.ldr;
    // dy, xhat and g of chunk k (zeros past the row: they add nothing to any sum).
    auto values = [&](int k, float (&dy)[8], float (&xhat)[8], float (&g)[8]) __attribute__((always_inline)) {
      const int q = k * S::row_threads + t, valid = live ? chunk_valid(q, a.cols) : 0;
      float r[8] = {}, w[8] = {};
#pragma unroll
      for (int v = 0; v < 8; ++v) dy[v] = 0.f;
      if (valid) {
        load8<T>(dy, dy_row, 8 * q, valid, a.vector);
        load8<T>(r, r_row, 8 * q, valid, a.vector);
        load8<TW>(w, a.weight, 8 * q, valid, a.vector);
      }
#pragma unroll
      for (int v = 0; v < 8; ++v) {
        xhat[v] = v < valid ? (r[v] - mean) * rstd : 0.f;
        g[v] = dy[v] * w[v];
      }
    };
    float xhat[kept][8], g[kept][8], sums[2] = {0.f, 0.f};
#pragma unroll
    for (int k = 0; k < S::chunks; ++k) {
      float dy[8];
      values(k, dy, xhat[reload ? 0 : k], g[reload ? 0 : k]);
#pragma unroll
      for (int v = 0; v < 8; ++v) {
        const float x = xhat[reload ? 0 : k][v], gv = g[reload ? 0 : k][v];
        sums[0] += gv;
        sums[1] += gv * x;
        dweight[k][v] += dy[v] * x;
        dbias[k][v] += dy[v];
      }
    }
    group_sum<G>(sums, scratch);
    const float mean_g = a.rms ? 0.f : sums[0] / float(a.cols), mean_gx = sums[1] / float(a.cols);
    if (!live) continue;
#pragma unroll
    for (int k = 0; k < S::chunks; ++k) {
      const int q = k * S::row_threads + t, valid = chunk_valid(q, a.cols);
      if (!valid) continue;
      if constexpr (reload) {
        float dy[8];
        values(k, dy, xhat[0], g[0]);
      }
      const float(&x)[8] = xhat[reload ? 0 : k];
      const float(&gk)[8] = g[reload ? 0 : k];
      const uint32_t keep = a.dropout.keep8(row, q);
      float dr[8] = {}, dx[8];
      if (a.dresidual_in) load8<T>(dr, a.dresidual_in, row * a.ld_dresidual_in + 8 * q, valid, a.vector);
#pragma unroll
      for (int v = 0; v < 8; ++v) {
        dr[v] += rstd * (gk[v] - mean_g - x[v] * mean_gx);
        dx[v] = keep >> v & 1 ? dr[v] * a.dropout.scale : 0.f;
      }
      if (a.dresidual) store8<T>(a.dresidual, row * a.ld_dresidual + 8 * q, dr, valid, a.vector);
      store8<T>(a.dx, row * a.ldx + 8 * q, dx, valid, a.vector);
    }
  }
  const long team = long(blockIdx.x) * S::rows_per_block + team_in_block;
#pragma unroll
  for (int k = 0; k < S::chunks; ++k) {
    const int q = k * S::row_threads + t_, valid = chunk_valid(q, a.cols);
    if (!valid) continue;
    // Partials are float rows of cols: vector stores when cols keeps 16-byte chunks aligned.
    store8<float>(a.partial_dweight, team * a.cols + 8 * q, dweight[k], valid, a.cols % 8 == 0);
    if (a.partial_dbias) store8<float>(a.partial_dbias, team * a.cols + 8 * q, dbias[k], valid, a.cols % 8 == 0);
  }
}

inline constexpr int norm_reduce_threads = 256;

// dweight[c] (and dbias[c]) = the teams' partials of column c, added in team order.
template <class TW>
__global__ void __launch_bounds__(norm_reduce_threads)
    norm_reduce_columns(const float* partial_dweight, const float* partial_dbias, int teams, int cols, void* dweight,
                        void* dbias) {
  const int col = blockIdx.x * norm_reduce_threads + threadIdx.x;
  if (col >= cols) return;
  float w = 0.f, b = 0.f;
  // Unrolled so several teams' loads are in flight at once; the additions stay in team order.
#pragma unroll 16
  for (int team = 0; team < teams; ++team) {
    w += partial_dweight[long(team) * cols + col];
    if (dbias) b += partial_dbias[long(team) * cols + col];
  }
  store_f<TW>(dweight, col, w);
  if (dbias) store_f<TW>(dbias, col, b);
}

}  // namespace hk::kernels
