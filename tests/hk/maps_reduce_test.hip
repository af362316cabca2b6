// Maps, broadcasts and reductions on accumulator tiles (the softmax building blocks), and fp32 -> bf16/f16 tiles.
#include "hk/hk.h"
#include "hk_test_util.h"

using namespace hk;

constexpr int M = 32, N = 48;

// out = exp(x - rowmax(x)) / rowsum(...) ; rows/cols: row max, row sum, col max, col sum, col min, row min.
__global__ void softmax_rows(const float* x, float* out, float* rows, float* cols) {
  gl<float, 1, 1, M, N> gx(const_cast<float*>(x), 1, 1, M, N), go(out, 1, 1, M, N);
  rt_acc<M, N> t;
  load(t, gx, {});
  rv<float, M, vec_align::rows> rmax, rmin, rsum;
  rv<float, N, vec_align::cols> cmax, cmin, csum;
  row_max(rmax, t);
  row_min(rmin, t);
  col_max(cmax, t);
  col_min(cmin, t);
  col_sum(csum, t);
  sub_row(t, rmax);
  exp(t);
  row_sum(rsum, t);
  div_row(t, rsum);
  store(go, t, {});
  const int lane = lane_id();
  for (int i = 0; i < M / 16; ++i)
    for (int e = 0; e < 4; ++e) {
      int r = 16 * i + 4 * (lane / 16) + e;
      if (lane % 16 == 0) rows[3 * r] = rmax.data[i][e], rows[3 * r + 1] = rmin.data[i][e], rows[3 * r + 2] = rsum.data[i][e];
    }
  for (int j = 0; j < N / 16; ++j) {
    int c = 16 * j + lane % 16;
    if (lane < 16) cols[3 * c] = cmax.data[j][0], cols[3 * c + 1] = cmin.data[j][0], cols[3 * c + 2] = csum.data[j][0];
  }
}

// Elementwise maps and the scalar forms, and conversion of an accumulator to 16-bit tiles of the same layout.
template <class T>
__global__ void maps(const float* a, const float* b, float* out, T* low) {
  gl<float, 1, 1, M, N> ga(const_cast<float*>(a), 1, 1, M, N), gb(const_cast<float*>(b), 1, 1, M, N);
  rt_acc<M, N> x, y, r, s;
  load(x, ga, {});
  load(y, gb, {});
  max(r, x, y);       // max(a, b)
  add(r, r, 2.0f);    // + 2
  mul(s, x, y);       // a * b
  sub(r, r, s);       // max(a,b) + 2 - a*b
  relu(s);            // relu(a*b)
  div(r, r, 4.0f);
  add(r, r, s);       // (max(a,b) + 2 - a*b) / 4 + relu(a*b)
  abs(x);
  min(r, r, x);       // min(..., |a|)
  for (int k = 0; k < 1; ++k) store(gl<float, 1, 1, M, N>(out, 1, 1, M, N), r, {});
  rt<T, M, N, layout::col> lo;
  static_assert(decltype(lo)::E == 4 || !std::same_as<T, float>);
  if constexpr (elems_per_lane<T> == 4) {
    copy(lo, r);
    store(gl<T, 1, 1, M, N>(low, 1, 1, M, N), lo, {});
  }
}

TEST(Reduce, SoftmaxRowsAndColumnStats) {
  hktest::Buffer<float> x(M * N, 7, 4.f), out(M * N), rows(3 * M), cols(3 * N);
  hipLaunchKernelGGL(softmax_rows, dim3(1), dim3(64), 0, 0, x.dev, out.dev, rows.dev, cols.dev);
  HIP_OK(hipDeviceSynchronize());
  std::vector<float> want(M * N), wrows(3 * M), wcols(3 * N);
  for (int i = 0; i < M; ++i) {
    float mx = -INFINITY, mn = INFINITY, sum = 0;
    for (int j = 0; j < N; ++j) mx = std::max(mx, x.host[i * N + j]), mn = std::min(mn, x.host[i * N + j]);
    for (int j = 0; j < N; ++j) sum += std::exp(x.host[i * N + j] - mx);
    for (int j = 0; j < N; ++j) want[i * N + j] = std::exp(x.host[i * N + j] - mx) / sum;
    wrows[3 * i] = mx, wrows[3 * i + 1] = mn, wrows[3 * i + 2] = sum;
  }
  for (int j = 0; j < N; ++j) {
    float mx = -INFINITY, mn = INFINITY, sum = 0;
    for (int i = 0; i < M; ++i) mx = std::max(mx, x.host[i * N + j]), mn = std::min(mn, x.host[i * N + j]), sum += x.host[i * N + j];
    wcols[3 * j] = mx, wcols[3 * j + 1] = mn, wcols[3 * j + 2] = sum;
  }
  hktest::expect_close(out.read(), want, 1e-6f, 1e-5f, "softmax");
  hktest::expect_close(rows.read(), wrows, 1e-5f, 1e-5f, "row max/min/sum");
  hktest::expect_close(cols.read(), wcols, 1e-5f, 1e-5f, "col max/min/sum");
}

TEST(Maps, ElementwiseAndScalar) {
  hktest::Buffer<float> a(M * N, 8, 3.f), b(M * N, 9, 3.f), out(M * N);
  hktest::Buffer<float> low(M * N);
  hipLaunchKernelGGL((maps<float>), dim3(1), dim3(64), 0, 0, a.dev, b.dev, out.dev, low.dev);
  HIP_OK(hipDeviceSynchronize());
  std::vector<float> want(M * N);
  for (int i = 0; i < M * N; ++i) {
    float x = a.host[i], y = b.host[i];
    float r = (std::max(x, y) + 2.f - x * y) / 4.f + std::max(x * y, 0.f);
    want[i] = std::min(r, std::fabs(x));
  }
  hktest::expect_close(out.read(), want, 1e-6f, 1e-6f, "maps");
  hktest::expect_close(low.read(), want, 1e-6f, 1e-6f, "copy to float");
}
