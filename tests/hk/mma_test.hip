// mma_AB / mma_ABt / mma_AtB / mma_AtBt for bf16 and f16 with fp32 accumulation, through shared and register
// tiles, on each virtual device, against a host matmul of the same quantised inputs.
#include "hk/hk.h"
#include "hk_test_util.h"

using namespace hk;

template <class T, int M, int N, int K>
__global__ void abt_through_shared(const T* a, const T* b, const float* c, float* d) {
  __shared__ st<T, M, K> sa;
  __shared__ st<T, N, K> sb;
  gl<T, 1, 1, M, K> ga(const_cast<T*>(a), 1, 1, M, K);
  gl<T, 1, 1, N, K> gb(const_cast<T*>(b), 1, 1, N, K);
  gl<float, 1, 1, M, N> gc(const_cast<float*>(c), 1, 1, M, N), gd(d, 1, 1, M, N);
  load<wave>(sa, ga, {});
  load<wave>(sb, gb, {});
  barrier();
  rt<T, M, K> ra;
  rt<T, N, K> rb;
  rt_acc<M, N> acc;
  load(ra, sa);
  load(rb, sb);
  load(acc, gc, {});
  mma_ABt(acc, ra, rb, acc);
  store(gd, acc, {});
}

// The other three transposes read their operands straight from global memory in the layout each needs.
template <class T, int M, int N, int K, int Variant>
__global__ void mma_variants(const T* a, const T* b, float* d) {
  rt_acc<M, N> acc;
  zero(acc);
  gl<float, 1, 1, M, N> gd(d, 1, 1, M, N);
  if constexpr (Variant == 0) {  // A: M x K, B: K x N
    rt<T, M, K, layout::row> ra;
    rt<T, K, N, layout::col> rb;
    load(ra, gl<T, 1, 1, M, K>(const_cast<T*>(a), 1, 1, M, K), {});
    load(rb, gl<T, 1, 1, K, N>(const_cast<T*>(b), 1, 1, K, N), {});
    mma_AB(acc, ra, rb, acc);
  } else if constexpr (Variant == 1) {  // A: K x M, B: K x N
    rt<T, K, M, layout::col> ra;
    rt<T, K, N, layout::col> rb;
    load(ra, gl<T, 1, 1, K, M>(const_cast<T*>(a), 1, 1, K, M), {});
    load(rb, gl<T, 1, 1, K, N>(const_cast<T*>(b), 1, 1, K, N), {});
    mma_AtB(acc, ra, rb, acc);
  } else {  // A: K x M, B: N x K
    rt<T, K, M, layout::col> ra;
    rt<T, N, K, layout::row> rb;
    load(ra, gl<T, 1, 1, K, M>(const_cast<T*>(a), 1, 1, K, M), {});
    load(rb, gl<T, 1, 1, N, K>(const_cast<T*>(b), 1, 1, N, K), {});
    mma_AtBt(acc, ra, rb, acc);
  }
  store(gd, acc, {});
}

// D[i][j] = sum_k A(i, k) * B(k, j) + C[i][j] with A(i, k) and B(k, j) read through the given index maps.
template <class FA, class FB>
std::vector<float> host_mm(int M, int N, int K, FA A, FB B, const std::vector<float>* C) {
  std::vector<float> d(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = C ? (*C)[i * N + j] : 0.0;
      for (int k = 0; k < K; ++k) s += double(A(i, k)) * double(B(k, j));
      d[i * N + j] = float(s);
    }
  return d;
}

template <class T, int M, int N, int K>
void check_abt() {
  hktest::Buffer<T> a(M * K, 1), b(N * K, 2);
  hktest::Buffer<float> c(M * N, 3), d(M * N);
  hipLaunchKernelGGL((abt_through_shared<T, M, N, K>), dim3(1), dim3(64), 0, 0, a.dev, b.dev, c.dev, d.dev);
  HIP_OK(hipDeviceSynchronize());
  auto want = host_mm(M, N, K, [&](int i, int k) { return a.host[i * K + k]; },
                      [&](int k, int j) { return b.host[j * K + k]; }, &c.host);
  hktest::expect_close(d.read(), want, 1e-4f, 1e-4f, "mma_ABt");
}

template <class T, int M, int N, int K, int V>
void check_variant() {
  hktest::Buffer<T> a(M * K, 4), b(N * K, 5);
  hktest::Buffer<float> d(M * N);
  hipLaunchKernelGGL((mma_variants<T, M, N, K, V>), dim3(1), dim3(64), 0, 0, a.dev, b.dev, d.dev);
  HIP_OK(hipDeviceSynchronize());
  auto at = [&](int i, int k) { return V == 0 ? a.host[i * K + k] : a.host[k * M + i]; };
  auto bt = [&](int k, int j) { return V == 2 ? b.host[j * K + k] : b.host[k * N + j]; };
  const char* names[] = {"mma_AB", "mma_AtB", "mma_AtBt"};
  hktest::expect_close(d.read(), host_mm(M, N, K, at, bt, nullptr), 1e-4f, 1e-4f, names[V]);
}

TEST(Mma, ABtBf16ThroughShared) { check_abt<bf16, 32, 32, 64>(); }
TEST(Mma, ABtF16ThroughShared) { check_abt<half, 16, 48, 128>(); }
TEST(Mma, ABBf16) { check_variant<bf16, 32, 16, 64, 0>(); }
TEST(Mma, AtBBf16) { check_variant<bf16, 16, 32, 32, 1>(); }
TEST(Mma, AtBtF16) { check_variant<half, 16, 16, 64, 2>(); }
// The rest of {bf16, f16} x {AB, AtB, AtBt}, at other shapes.
TEST(Mma, ABF16) { check_variant<half, 48, 32, 32, 0>(); }
TEST(Mma, AtBF16) { check_variant<half, 32, 48, 64, 1>(); }
TEST(Mma, AtBtBf16) { check_variant<bf16, 32, 32, 128, 2>(); }
