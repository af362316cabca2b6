// The fused dropout + residual + LayerNorm / RMSNorm kernels. A row is held in registers by a team of waves (a
// hk::group): thread t of the team holds the 4-column chunks t, t + team threads, ... of the row, so each Philox call
// serves the 4 columns it was made for, and a row's statistics are one group_sum. The team size and chunks per thread
// (NormShape) are picked from the hidden size, so every size up to 16384 is one pass over HBM with no spills.
#pragma once
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
};

template <class T>
__device__ inline float load_f(const void* p, long i) { return float(static_cast<const T*>(p)[i]); }
template <class T>
__device__ inline void store_f(void* p, long i, float v) { static_cast<T*>(p)[i] = T(v); }

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
    const int q = k * S::row_threads + t;
    bool keep[4] = {false, false, false, false};
    if (live && 4 * q < a.cols) a.dropout.keep4(keep, row, q);
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      const int col = 4 * q + v;
      float value = 0.f;
      if (live && col < a.cols) {
        value = keep[v] ? load_f<T>(a.x, row * a.ldx + col) * a.dropout.scale : 0.f;
        if (a.residual) value += load_f<T>(a.residual, row * a.ld_residual + col);
        if (a.residual_out) store_f<T>(a.residual_out, row * a.ld_residual_out + col, value);
        if (a.mask) a.mask[row * a.ld_mask + col] = keep[v];
      }
      r[k][v] = value;
      sum[0] += value;
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
  for (int k = 0; k < S::chunks; ++k)
#pragma unroll
    for (int v = 0; v < 4; ++v)
      if ((k * S::row_threads + t) * 4 + v < a.cols) squares[0] += (r[k][v] - mean) * (r[k][v] - mean);
  group_sum<G>(squares, scratch);
  const float rstd = 1.f / sqrtf(squares[0] / float(a.cols) + a.eps);
  if (!live) return;
  if (t == 0) {
    if (a.mean) a.mean[row] = mean;
    if (a.rstd) a.rstd[row] = rstd;
  }
#pragma unroll
  for (int k = 0; k < S::chunks; ++k)
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      const int col = (k * S::row_threads + t) * 4 + v;
      if (col >= a.cols) continue;
      float y = (r[k][v] - mean) * rstd * load_f<TW>(a.weight, col);
      if (a.bias) y += load_f<TW>(a.bias, col);
      store_f<T>(a.y, row * a.ldy + col, y);
    }
}

// dr = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * weight (RMSNorm: no mean(g) term), plus the
// gradient reaching r directly; dx = dr through the dropout mask. Each team also sums dy * xhat and dy over its rows
// per column into its own partial.
template <class T, class TW, class S>
__global__ void __launch_bounds__(S::block_threads) norm_backward(NormBackwardArgs a) {
  using G = group<S::waves_per_row>;
  __shared__ sv<float, S::block_waves * 2> scratch;
  const int t = G::thread(), team_in_block = wave_id() / S::waves_per_row;
  float dweight[S::chunks][4] = {}, dbias[S::chunks][4] = {};
  for (long first = long(blockIdx.x) * S::rows_per_block; first < a.rows; first += long(gridDim.x) * S::rows_per_block) {
    const long row = first + team_in_block;
    const bool live = row < a.rows;
    const float mean = live && !a.rms ? a.mean[row] : 0.f, rstd = live ? a.rstd[row] : 0.f;
    float xhat[S::chunks][4], g[S::chunks][4], sums[2] = {0.f, 0.f};
#pragma unroll
    for (int k = 0; k < S::chunks; ++k)
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        const int col = (k * S::row_threads + t) * 4 + v;
        xhat[k][v] = g[k][v] = 0.f;
        if (!live || col >= a.cols) continue;
        const float dy = load_f<T>(a.dy, row * a.ldy + col);
        xhat[k][v] = (load_f<T>(a.r, row * a.ldr + col) - mean) * rstd;
        g[k][v] = dy * load_f<TW>(a.weight, col);
        sums[0] += g[k][v];
        sums[1] += g[k][v] * xhat[k][v];
        dweight[k][v] += dy * xhat[k][v];
        dbias[k][v] += dy;
      }
    group_sum<G>(sums, scratch);
    const float mean_g = a.rms ? 0.f : sums[0] / float(a.cols), mean_gx = sums[1] / float(a.cols);
    if (!live) continue;
#pragma unroll
    for (int k = 0; k < S::chunks; ++k) {
      const int q = k * S::row_threads + t;
      if (4 * q >= a.cols) continue;
      bool keep[4];
      a.dropout.keep4(keep, row, q);
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        const int col = 4 * q + v;
        if (col >= a.cols) continue;
        float dr = rstd * (g[k][v] - mean_g - xhat[k][v] * mean_gx);
        if (a.dresidual_in) dr += load_f<T>(a.dresidual_in, row * a.ld_dresidual_in + col);
        if (a.dresidual) store_f<T>(a.dresidual, row * a.ld_dresidual + col, dr);
        store_f<T>(a.dx, row * a.ldx + col, keep[v] ? dr * a.dropout.scale : 0.f);
      }
    }
  }
  const long team = long(blockIdx.x) * S::rows_per_block + team_in_block;
#pragma unroll
  for (int k = 0; k < S::chunks; ++k)
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      const int col = (k * S::row_threads + t) * 4 + v;
      if (col >= a.cols) continue;
      a.partial_dweight[team * a.cols + col] = dweight[k][v];
      if (a.partial_dbias) a.partial_dbias[team * a.cols + col] = dbias[k][v];
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
