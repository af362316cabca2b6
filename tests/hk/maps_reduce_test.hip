// Maps, broadcasts, masks and reductions on accumulator tiles (the softmax building blocks), written once over the
// MFMA family and run for both, against host references. Families: Reduce and Maps (16x16), Mma32Reduce and Mma32Maps
// (32x32).
#include <algorithm>
#include <cmath>

#include "hk/hk.h"
#include "hk_test_util.h"

using namespace hk;

template <int M, int N>
using glf = gl<float, 1, 1, M, N>;

// rows: max, min, sum(exp(x - max)) per row; cols: max, min, sum per column; out: the softmax of each row.
template <class S, int M, int N>
__global__ void softmax_rows(const float* x, float* out, float* rows, float* cols) {
  using Acc = rt_acc<M, N, S>;
  Acc t;
  load(t, glf<M, N>(const_cast<float*>(x), 1, 1, M, N), {});
  rv<float, M, vec_align::rows, S> rmax, rmin, rsum;
  rv<float, N, vec_align::cols, S> cmax, cmin, csum;
  row_max(rmax, t);
  row_min(rmin, t);
  col_max(cmax, t);
  col_min(cmin, t);
  col_sum(csum, t);
  sub_row(t, rmax);
  exp(t);
  row_sum(rsum, t);
  div_row(t, rsum);
  store(glf<M, N>(out, 1, 1, M, N), t, {});
  // A row vector's element (i, e) is the row of the accumulator's element (i, e); the lanes of column 0 write it.
  // A column vector's element j is the column of the lane's elements in block j; the first lane group writes it.
  const int lane = lane_id();
  for (int i = 0; i < M / S::dim; ++i)
    for (int e = 0; e < decltype(rmax)::per_block; ++e) {
      const int r = Acc::row_of(i, lane, e);
      if (Acc::col_of(0, lane, e) == 0) rows[3 * r] = rmax.data[i][e], rows[3 * r + 1] = rmin.data[i][e], rows[3 * r + 2] = rsum.data[i][e];
    }
  for (int j = 0; j < N / S::dim; ++j) {
    const int c = Acc::col_of(j, lane, 0);
    if (lane < S::dim) cols[3 * c] = cmax.data[j][0], cols[3 * c + 1] = cmin.data[j][0], cols[3 * c + 2] = csum.data[j][0];
  }
}

template <class S, int M, int N>
void check_softmax() {
  hktest::Buffer<float> x(M * N, 7 + M, 4.f), out(M * N), rows(3 * M), cols(3 * N);
  hipLaunchKernelGGL((softmax_rows<S, M, N>), dim3(1), dim3(64), 0, 0, x.dev, out.dev, rows.dev, cols.dev);
  HIP_ASSERT(hipDeviceSynchronize());
  auto at = [&](int i, int j) { return double(x.host[i * N + j]); };
  const std::vector<float> got_rows = rows.read(), got_cols = cols.read(), got = out.read();
  // max and min are exact; sums are within the bound of fp32 accumulation; exp within a few ulps.
  hk_host::Comparison r("row max/min/sum(exp) mfma" + std::to_string(S::dim)), c("col max/min/sum mfma" + std::to_string(S::dim)),
      o("softmax rows mfma" + std::to_string(S::dim));
  for (int i = 0; i < M; ++i) {
    double mx = -INFINITY, mn = INFINITY, s = 0;
    for (int j = 0; j < N; ++j) mx = std::max(mx, at(i, j)), mn = std::min(mn, at(i, j));
    for (int j = 0; j < N; ++j) s += std::exp(at(i, j) - mx);
    r.check(i, 0, got_rows[3 * i], mx, 0);
    r.check(i, 1, got_rows[3 * i + 1], mn, 0);
    r.check(i, 2, got_rows[3 * i + 2], s, hk_host::fp32_sum_bound(N, s) + 1e-5 * s);
    for (int j = 0; j < N; ++j) o.check(i, j, got[i * N + j], std::exp(at(i, j) - mx) / s, 1e-6 + 1e-5 * std::exp(at(i, j) - mx) / s);
  }
  for (int j = 0; j < N; ++j) {
    double mx = -INFINITY, mn = INFINITY, s = 0, mag = 0;
    for (int i = 0; i < M; ++i) mx = std::max(mx, at(i, j)), mn = std::min(mn, at(i, j)), s += at(i, j), mag += std::fabs(at(i, j));
    c.check(j, 0, got_cols[3 * j], mx, 0);
    c.check(j, 1, got_cols[3 * j + 1], mn, 0);
    c.check(j, 2, got_cols[3 * j + 2], s, hk_host::fp32_sum_bound(M, mag));
  }
  hk_host::expect_ok(r);
  hk_host::expect_ok(c);
  hk_host::expect_ok(o);
}

TEST(Reduce, SoftmaxRowsAndColumnStats) { check_softmax<mfma16, 32, 48>(); }
TEST(Mma32Reduce, RowsAndColsAndSoftmax) { check_softmax<mfma32, 64, 96>(); }

// Elementwise maps with tiles and scalars: out = min((max(a, b) + 2 - a b) / 4 + relu(a b), |a|), then copied.
template <class S, int M, int N>
__global__ void maps_kernel(const float* a, const float* b, float* out, float* copied) {
  rt_acc<M, N, S> x, y, r, s;
  load(x, glf<M, N>(const_cast<float*>(a), 1, 1, M, N), {});
  load(y, glf<M, N>(const_cast<float*>(b), 1, 1, M, N), {});
  max(r, x, y);
  add(r, r, 2.0f);
  mul(s, x, y);
  sub(r, r, s);
  relu(s);
  div(r, r, 4.0f);
  add(r, r, s);
  abs(x);
  min(r, r, x);
  store(glf<M, N>(out, 1, 1, M, N), r, {});
  rt<float, M, N, layout::col, S> c;
  copy(c, r);
  store(glf<M, N>(copied, 1, 1, M, N), c, {});
}

template <class S, int M, int N>
void check_maps() {
  hktest::Buffer<float> a(M * N, 8, 3.f), b(M * N, 9, 3.f), out(M * N), copied(M * N);
  hipLaunchKernelGGL((maps_kernel<S, M, N>), dim3(1), dim3(64), 0, 0, a.dev, b.dev, out.dev, copied.dev);
  HIP_ASSERT(hipDeviceSynchronize());
  std::vector<float> want(M * N);
  for (int i = 0; i < M * N; ++i) {
    const float x = a.host[i], y = b.host[i];
    want[i] = std::min((std::max(x, y) + 2.f - x * y) / 4.f + std::max(x * y, 0.f), std::fabs(x));
  }
  hk_host::expect_close(out.read(), want, 1e-6, 1e-6, "maps mfma" + std::to_string(S::dim));
  hk_host::expect_close(copied.read(), want, 1e-6, 1e-6, "copy mfma" + std::to_string(S::dim));
}

TEST(Maps, ElementwiseAndScalar) { check_maps<mfma16, 32, 48>(); }
TEST(Mma32Maps, ElementwiseAndScalar) { check_maps<mfma32, 64, 96>(); }

// Broadcasts and a mask: out = causal_mask((relu((a b + 1.5) colscale[j] rowscale[i] - a) / 2 + max(a, b)) / coldiv[j]),
// stored as fp32 and as bf16.
template <class S, int M, int N>
__global__ void broadcast_mask(const float* a, const float* b, const float* colscale, const float* rowscale,
                               const float* coldiv, float* out, bf16* low) {
  using Acc = rt_acc<M, N, S>;
  Acc x, y, r, s;
  load(x, glf<M, N>(const_cast<float*>(a), 1, 1, M, N), {});
  load(y, glf<M, N>(const_cast<float*>(b), 1, 1, M, N), {});
  rv<float, N, vec_align::cols, S> cs, cd;
  rv<float, M, vec_align::rows, S> rs;
  const int lane = lane_id();
  for (int j = 0; j < N / S::dim; ++j) cs.data[j][0] = colscale[Acc::col_of(j, lane, 0)], cd.data[j][0] = coldiv[Acc::col_of(j, lane, 0)];
  for (int i = 0; i < M / S::dim; ++i)
    for (int e = 0; e < decltype(rs)::per_block; ++e) rs.data[i][e] = rowscale[Acc::row_of(i, lane, e)];
  mul(r, x, y);
  add(r, r, 1.5f);
  mul_col(r, cs);
  mul_row(r, rs);
  sub(r, r, x);
  relu(r);
  div(r, r, 2.0f);
  max(s, x, y);
  add(r, r, s);
  div_col(r, cd);
  make_causal(r, 0, 0, 8, -1000.f);  // col > row + 8 -> -1000
  store(glf<M, N>(out, 1, 1, M, N), r, {});
  store(gl<bf16, 1, 1, M, N>(low, 1, 1, M, N), r, {});
}

template <class S, int M, int N>
void check_broadcast_mask() {
  hktest::Buffer<float> a(M * N, 41), b(M * N, 42), cs(N, 43), rs(M, 44), cd(N, 45), out(M * N);
  hktest::Buffer<bf16> low(M * N);
  for (auto& d : cd.host) d = 0.5f + std::fabs(d);  // divisors away from zero
  cd.upload();
  hipLaunchKernelGGL((broadcast_mask<S, M, N>), dim3(1), dim3(64), 0, 0, a.dev, b.dev, cs.dev, rs.dev, cd.dev, out.dev, low.dev);
  HIP_ASSERT(hipDeviceSynchronize());
  std::vector<float> want(M * N), want_low(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      const float u = a.host[i * N + j], v = b.host[i * N + j];
      float r = (u * v + 1.5f) * cs.host[j] * rs.host[i] - u;
      r = (std::max(r, 0.f) / 2.f + std::max(u, v)) / cd.host[j];
      if (j > i + 8) r = -1000.f;
      want[i * N + j] = r;
      want_low[i * N + j] = hk_host::round_bf16(r);
    }
  // The device may fuse a multiply and an add (one rounding fewer): a few ulps.
  hk_host::expect_close(out.read(), want, 1e-6, 1e-6, "broadcasts and mask mfma" + std::to_string(S::dim));
  hk_host::expect_close(low.read(), want_low, 0, 1e-2, "-> bf16 store mfma" + std::to_string(S::dim));
}

TEST(Maps, BroadcastAndMask) { check_broadcast_mask<mfma16, 32, 48>(); }
TEST(Mma32Maps, ElementwiseBroadcastMask) { check_broadcast_mask<mfma32, 64, 96>(); }
