// Row and column reductions (max, min, sum) of accumulator tiles of both MFMA families and several shapes, each
// checked through the broadcast of the same name: out = x op reduce(x) along rows and along columns, against a host
// reference. (The accumulator is fp32 on both archs; inputs span several binades, with ties and negative zeros.)
#include <cmath>

#include "hk/hk.h"
#include "hk_test_util.h"

using namespace hk;

enum class Red { max, min, sum };

template <int M, int N, class S, Red R>
__global__ void reduce_and_broadcast(const float* x, float* by_row, float* by_col) {
  using G = gl<float, 1, 1, M, N>;
  rt_acc<M, N, S> t, r, c;
  load(t, G(const_cast<float*>(x), 1, 1, M, N), {});
  rv<float, M, vec_align::rows, S> rows;
  rv<float, N, vec_align::cols, S> cols;
  copy(r, t);
  copy(c, t);
  if constexpr (R == Red::max) row_max(rows, t), col_max(cols, t), max_row(r, rows), max_col(c, cols);
  if constexpr (R == Red::min) row_min(rows, t), col_min(cols, t), min_row(r, rows), min_col(c, cols);
  if constexpr (R == Red::sum) row_sum(rows, t), col_sum(cols, t), sub_row(r, rows), sub_col(c, cols);
  store(G(by_row, 1, 1, M, N), r, {});
  store(G(by_col, 1, 1, M, N), c, {});
}

template <int M, int N, class S, Red R>
void check() {
  hktest::Buffer<float> x(M * N, 17 + M + N, 8.f), by_row(M * N), by_col(M * N);
  // Spread the magnitudes over binades and plant ties and negative zeros: max/min must be exact.
  std::vector<float> v = x.host;
  for (int i = 0; i < M * N; ++i) v[i] = i % 7 == 0 ? std::ldexp(v[i], i % 13 - 6) : i % 11 == 0 ? -0.f : v[i];
  for (int i = 5; i < M * N; i += 9) v[i] = v[i - 5];
  HIP_ASSERT(hipMemcpy(x.dev, v.data(), v.size() * sizeof(float), hipMemcpyHostToDevice));
  hipLaunchKernelGGL((reduce_and_broadcast<M, N, S, R>), dim3(1), dim3(64), 0, 0, x.dev, by_row.dev, by_col.dev);
  HIP_ASSERT(hipDeviceSynchronize());
  auto fold = [&](int n, auto at) {
    double acc = R == Red::sum ? 0.0 : at(0);
    for (int k = 0; k < n; ++k) {
      const double y = at(k);
      acc = R == Red::max ? std::max(acc, y) : R == Red::min ? std::min(acc, y) : acc + y;
    }
    return acc;
  };
  std::vector<float> want_row(M * N), want_col(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      const double rr = fold(N, [&](int k) { return double(v[i * N + k]); });
      const double cc = fold(M, [&](int k) { return double(v[k * N + j]); });
      const double x0 = v[i * N + j];
      auto op = [&](double a) { return R == Red::max ? std::max(x0, a) : R == Red::min ? std::min(x0, a) : x0 - a; };
      want_row[i * N + j] = float(op(rr));
      want_col[i * N + j] = float(op(cc));
    }
  // max/min are exact; a sum of n fp32 terms in any order is within n * 2^-23 of the sum of their magnitudes.
  double row_mag = 0, col_mag = 0;
  for (int i = 0; i < M; ++i) row_mag = std::max(row_mag, fold(N, [&](int k) { return double(std::fabs(v[i * N + k])); }));
  for (int j = 0; j < N; ++j) col_mag = std::max(col_mag, fold(M, [&](int k) { return double(std::fabs(v[k * N + j])); }));
  const bool sum = R == Red::sum;
  hktest::expect_close(by_row.read(), want_row, sum ? float((N + 1) * std::ldexp(row_mag, -23)) : 0.f, 0.f,
                       "row reduction, broadcast back");
  hktest::expect_close(by_col.read(), want_col, sum ? float((M + 1) * std::ldexp(col_mag, -23)) : 0.f, 0.f,
                       "col reduction, broadcast back");
}

#define HK_REDUCE_CASES(Fam, M, N)                                                                 \
  TEST(ReduceMatrix, Max_##Fam##_##M##x##N) { check<M, N, Fam, Red::max>(); }                      \
  TEST(ReduceMatrix, Min_##Fam##_##M##x##N) { check<M, N, Fam, Red::min>(); }                      \
  TEST(ReduceMatrix, Sum_##Fam##_##M##x##N) { check<M, N, Fam, Red::sum>(); }
HK_REDUCE_CASES(mfma16, 16, 16)
HK_REDUCE_CASES(mfma16, 32, 48)
HK_REDUCE_CASES(mfma16, 64, 128)
HK_REDUCE_CASES(mfma32, 32, 32)
HK_REDUCE_CASES(mfma32, 64, 96)
