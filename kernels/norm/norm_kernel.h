// The fused dropout + residual + LayerNorm / RMSNorm kernels. A row is held in registers by a team of waves (a
// hk::group): thread t of the team holds the 4-column chunks t, t + team threads, ... of the row, so each Philox call
// serves the 4 columns it was made for, and a row's statistics are one group_sum. The team size and chunks per thread
// (NormShape) are picked from the hidden size, so every size up to 16384 is one pass over HBM with no spills.
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
  static constexpr int capacity = row_threads * Chunks * 4;               // the widest row it holds
  static constexpr int block_waves = WavesPerRow >= 4 ? WavesPerRow : 4;  // workgroups of at least 4 waves
  static constexpr int rows_per_block = block_waves / WavesPerRow;
  static constexpr int block_threads = 64 * block_waves;
};
// Hidden sizes up to 256, 1024, 4096, 16384: one wave per row for small rows, 4 or 8 waves for large ones.
using norm_shapes = std::tuple<NormShape<1, 1>, NormShape<1, 4>, NormShape<4, 4>, NormShape<8, 8>>;

// The backward's grid is at most this many workgroups (each leaves one partial per team), independent of the
// device, so the reduction order of dweight / dbias is a function of the problem alone.
inline constexpr int norm_backward_max_blocks = 256;

struct Dropout {
  float p, scale;                     // scale = 1 / (1 - p)
  uint32_t seed_lo, seed_hi, offset_lo, offset_hi;
  // Whether each of the 4 columns of chunk q of `row` is kept.
  __device__ void keep4(bool (&keep)[4], long row, int q) const {
    if (p == 0.f) {
      keep[0] = keep[1] = keep[2] = keep[3] = true;
      return;
    }
    const philox4x32 bits = philox4x32_10({{uint32_t(q), uint32_t(row), offset_lo, offset_hi}}, seed_lo, seed_hi);
#pragma unroll
    for (int v = 0; v < 4; ++v) keep[v] = philox_uniform(bits.v[v]) >= p;
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
  uint8_t* mask;
  long ld_mask;
  float eps;
  Dropout dropout;
  bool rms;
  bool vector;  // every row tensor (and weight, bias, mask) allows 4-column vector accesses
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
  bool vector;             // every row tensor (and weight) allows 4-column vector accesses
};

template <class T>
__device__ inline float load_f(const void* p, long i) { return float(static_cast<const T*>(p)[i]); }
template <class T>
__device__ inline void store_f(void* p, long i, float v) { static_cast<T*>(p)[i] = T(v); }

// The 4 columns of a chunk, `valid` of them inside the row: one vector access (hk's chunk) when all 4 are and the
// tensors' rows are aligned for it (`vector`, decided once on the host), else one access per column.
template <class T>
__device__ inline void load4(float (&v)[4], const void* p, long at, int valid, bool vector) {
  const T* e = static_cast<const T*>(p) + at;
  if (vector && valid == 4) {
    const auto c = *reinterpret_cast<const detail::chunk<T, 4>*>(e);
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = float(c.v[k]);
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = k < valid ? float(e[k]) : 0.f;
  }
}
template <class T>
__device__ inline void store4(void* p, long at, const float (&v)[4], int valid, bool vector) {
  T* e = static_cast<T*>(p) + at;
  if (vector && valid == 4) {
    detail::chunk<T, 4> c;
#pragma unroll
    for (int k = 0; k < 4; ++k) c.v[k] = T(v[k]);
    *reinterpret_cast<detail::chunk<T, 4>*>(e) = c;
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (k < valid) e[k] = T(v[k]);
  }
}

// Columns of chunk q inside a row of `cols` (0 .. 4).
__device__ inline int chunk_valid(int q, int cols) {
  const int n = cols - 4 * q;
  return n < 0 ? 0 : n > 4 ? 4 : n;
}

template <class T, class TW, class S>
__global__ void __launch_bounds__(S::block_threads) norm_forward(NormForwardArgs a) {
  using G = group<S::waves_per_row>;
  __shared__ sv<float, S::block_waves> scratch;
  const int t = G::thread();
  const long row = long(blockIdx.x) * S::rows_per_block + wave_id() / S::waves_per_row;
  const bool live = row < a.rows;  // a team past the last row still joins the group sums' barriers
  float r[S::chunks][4], sum[1] = {0.f};
#pragma unroll
  for (int k = 0; k < S::chunks; ++k) {
    const int q = k * S::row_threads + t, valid = live ? chunk_valid(q, a.cols) : 0;
    float x[4] = {}, res[4] = {};
    bool keep[4] = {false, false, false, false};
    if (valid) {
      a.dropout.keep4(keep, row, q);
      load4<T>(x, a.x, row * a.ldx + 4 * q, valid, a.vector);
      if (a.residual) load4<T>(res, a.residual, row * a.ld_residual + 4 * q, valid, a.vector);
    }
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      r[k][v] = v < valid ? (keep[v] ? x[v] * a.dropout.scale : 0.f) + res[v] : 0.f;
      sum[0] += r[k][v];
    }
    if (!valid) continue;
    if (a.residual_out) store4<T>(a.residual_out, row * a.ld_residual_out + 4 * q, r[k], valid, a.vector);
    if (a.mask) {
      uint8_t* m = a.mask + row * a.ld_mask + 4 * q;
      if (a.vector && valid == 4) *reinterpret_cast<uint32_t*>(m) = keep[0] | keep[1] << 8 | keep[2] << 16 | uint32_t(keep[3]) << 24;
      else
        for (int v = 0; v < valid; ++v) m[v] = keep[v];
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
    for (int v = 0; v < 4; ++v)
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
    float w[4], b[4] = {}, y[4];
    load4<TW>(w, a.weight, 4 * q, valid, a.vector);
    if (a.bias) load4<TW>(b, a.bias, 4 * q, valid, a.vector);
#pragma unroll
    for (int v = 0; v < 4; ++v) y[v] = (r[k][v] - mean) * rstd * w[v] + b[v];
    store4<T>(a.y, row * a.ldy + 4 * q, y, valid, a.vector);
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
  constexpr bool reload = S::chunks > 4;
  constexpr int kept = reload ? 1 : S::chunks;
  __shared__ sv<float, S::block_waves * 2> scratch;
  const int t = G::thread(), team_in_block = wave_id() / S::waves_per_row;
  float dweight[S::chunks][4] = {}, dbias[S::chunks][4] = {};
  for (long first = long(blockIdx.x) * S::rows_per_block; first < a.rows; first += long(gridDim.x) * S::rows_per_block) {
    const long row = first + team_in_block;
    const bool live = row < a.rows;
    const float mean = live && !a.rms ? a.mean[row] : 0.f, rstd = live ? a.rstd[row] : 0.f;
    // The row's start in each tensor once; chunks are 32-bit offsets from it.
    const T* dy_row = static_cast<const T*>(a.dy) + row * a.ldy;
    const T* r_row = static_cast<const T*>(a.r) + row * a.ldr;
    // dy, xhat and g of chunk k (zeros past the row: they add nothing to any sum).
    auto values = [&](int k, float (&dy)[4], float (&xhat)[4], float (&g)[4]) {
      const int q = k * S::row_threads + t, valid = live ? chunk_valid(q, a.cols) : 0;
      float r[4] = {}, w[4] = {};
#pragma unroll
      for (int v = 0; v < 4; ++v) dy[v] = 0.f;
      if (valid) {
        load4<T>(dy, dy_row, 4 * q, valid, a.vector);
        load4<T>(r, r_row, 4 * q, valid, a.vector);
        load4<TW>(w, a.weight, 4 * q, valid, a.vector);
      }
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        xhat[v] = v < valid ? (r[v] - mean) * rstd : 0.f;
        g[v] = dy[v] * w[v];
      }
    };
    float xhat[kept][4], g[kept][4], sums[2] = {0.f, 0.f};
#pragma unroll
    for (int k = 0; k < S::chunks; ++k) {
      float dy[4];
      values(k, dy, xhat[reload ? 0 : k], g[reload ? 0 : k]);
#pragma unroll
      for (int v = 0; v < 4; ++v) {
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
        float dy[4];
        values(k, dy, xhat[0], g[0]);
      }
      const float(&x)[4] = xhat[reload ? 0 : k];
      const float(&gk)[4] = g[reload ? 0 : k];
      bool keep[4];
      a.dropout.keep4(keep, row, q);
      float dr[4] = {}, dx[4];
      if (a.dresidual_in) load4<T>(dr, a.dresidual_in, row * a.ld_dresidual_in + 4 * q, valid, a.vector);
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        dr[v] += rstd * (gk[v] - mean_g - x[v] * mean_gx);
        dx[v] = keep[v] ? dr[v] * a.dropout.scale : 0.f;
      }
      if (a.dresidual) store4<T>(a.dresidual, row * a.ld_dresidual + 4 * q, dr, valid, a.vector);
      store4<T>(a.dx, row * a.ldx + 4 * q, dx, valid, a.vector);
    }
  }
  const long team = long(blockIdx.x) * S::rows_per_block + team_in_block;
#pragma unroll
  for (int k = 0; k < S::chunks; ++k) {
    const int q = k * S::row_threads + t, valid = chunk_valid(q, a.cols);
    if (!valid) continue;
    // Partials are float rows of cols: vector stores when cols keeps 16-byte chunks aligned.
    store4<float>(a.partial_dweight, team * a.cols + 4 * q, dweight[k], valid, a.cols % 4 == 0);
    if (a.partial_dbias) store4<float>(a.partial_dbias, team * a.cols + 4 * q, dbias[k], valid, a.cols % 4 == 0);
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
  for (int team = 0; team < teams; ++team) {
    w += partial_dweight[long(team) * cols + col];
    if (dbias) b += partial_dbias[long(team) * cols + col];
  }
  store_f<TW>(dweight, col, w);
  if (dbias) store_f<TW>(dbias, col, b);
}

}  // namespace hk::kernels
