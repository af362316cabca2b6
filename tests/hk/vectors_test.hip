// Register and shared vectors: global -> rv, global -> sv -> rv, rv -> sv -> global and rv -> global, rows- and
// cols-aligned, both MFMA families, vectors that overhang the tensor (zeros read, nothing written past it). Each rv is
// checked through what it is for: broadcast into an accumulator tile (add_row / add_col onto zeros).
#include <cstdint>

#include "hk/hk.h"
#include "hk_test_util.h"

using namespace hk;

// v = the vector at `at` of src (a row of a 1 x n tensor); tile = broadcast of v; out_* = v written back three ways.
template <class T, int N, vec_align A, class S>
__global__ void vectors(const T* src, int n, int at, float* tile, T* out_direct, T* out_shared, float* out_reduced) {
  const gl<T, 1, 1> g(const_cast<T*>(src), 1, 1, 1, n);
  constexpr int M = A == vec_align::rows ? N : S::dim, K = A == vec_align::rows ? S::dim : N;
  rv<float, N, A, S> direct, staged;
  load(direct, g, {0, 0, 0, at});
  __shared__ sv<T, N> shared_in;
  __shared__ sv<float, N> shared_out;
  load<wave>(shared_in, g, {0, 0, 0, at});
  wave_barrier();
  load(staged, shared_in);
  rt_acc<M, K, S> t;
  zero(t);
  if constexpr (A == vec_align::rows) add_row(t, staged);
  else add_col(t, staged);
  store(gl<float, 1, 1, M, K>(tile, 1, 1, M, K), t, {});
  store(gl<T, 1, 1>(out_direct, 1, 1, 1, n), direct, {0, 0, 0, at});
  store(shared_out, staged);
  wave_barrier();
  store<wave>(gl<T, 1, 1>(out_shared, 1, 1, 1, n), shared_out, {0, 0, 0, at});
  // A reduction's result out: the row (col) sums of the broadcast tile are K (M) times the vector.
  rv<float, N, A, S> sums;
  if constexpr (A == vec_align::rows) row_sum(sums, t);
  else col_sum(sums, t);
  store(gl<float, 1, 1>(out_reduced, 1, 1, 1, n), sums, {0, 0, 0, at});
}

template <class T, int N, vec_align A, class S>
void check(int n, int at) {
  SCOPED_TRACE(testing::Message() << N << "-vector " << (A == vec_align::rows ? "rows" : "cols") << " mfma" << S::dim
                                  << " at " << at << " of " << n);
  constexpr int M = A == vec_align::rows ? N : S::dim, K = A == vec_align::rows ? S::dim : N;
  hktest::Buffer<T> src(n, 77 + N);
  hktest::Buffer<float> tile(M * K), reduced(n);
  hktest::Buffer<T> direct(n), shared(n);
  hipLaunchKernelGGL((vectors<T, N, A, S>), dim3(1), dim3(64), 0, 0, src.dev, n, at, tile.dev, direct.dev, shared.dev,
                     reduced.dev);
  HIP_ASSERT(hipDeviceSynchronize());
  auto v = [&](int i) { const int c = at * N + i; return c < n ? src.host[c] : 0.f; };
  std::vector<float> want_tile(M * K), want_out(n, 0.f), want_sum(n, 0.f);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < K; ++j) want_tile[i * K + j] = v(A == vec_align::rows ? i : j);
  for (int i = 0; i < N && at * N + i < n; ++i) {
    want_out[at * N + i] = v(i);
    want_sum[at * N + i] = float(A == vec_align::rows ? K : M) * v(i);
  }
  hktest::expect_close(tile.read(), want_tile, 0, 0, "broadcast of the loaded vector");
  hktest::expect_close(direct.read(), want_out, 0, 0, "rv -> global (only the vector's elements inside the tensor)");
  hktest::expect_close(shared.read(), want_out, 0, 0, "global -> sv -> rv -> sv -> global");
  hktest::expect_close(reduced.read(), want_sum, 0, 1e-6f, "reduction -> global");
}

TEST(Vectors, RowsMfma16) { check<float, 64, vec_align::rows, mfma16>(200, 1); }
TEST(Vectors, ColsMfma16Bf16Edge) { check<bf16, 48, vec_align::cols, mfma16>(100, 2); }  // elements 96..143 of 100
TEST(Vectors, RowsMfma32Edge) { check<float, 64, vec_align::rows, mfma32>(90, 1); }     // 64..127 of 90
TEST(Vectors, ColsMfma32Half) { check<half, 96, vec_align::cols, mfma32>(96, 0); }
