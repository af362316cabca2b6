// The worked example of docs/design.md: one wave computes softmax(Q K^T / sqrt(d)) for a 32-row block of queries
// against 64 keys, in hk's vocabulary. The same source compiles for gfx942 and gfx950.
#include "hk/hk.h"
#include "hk_test_util.h"

using namespace hk;

constexpr int N = 32, M = 64, D = 64;  // queries, keys, head dimension

__global__ void attention_scores(const bf16* q, const bf16* k, float* p) {
  __shared__ st<bf16, N, D> sq;
  __shared__ st<bf16, M, D> sk;
  load<wave>(sq, gl<bf16, 1, 1, N, D>(const_cast<bf16*>(q), 1, 1, N, D), {});  // HBM -> LDS
  load<wave>(sk, gl<bf16, 1, 1, M, D>(const_cast<bf16*>(k), 1, 1, M, D), {});
  barrier();
  rt<bf16, N, D> rq;  // LDS -> registers, in the MFMA's operand layout
  rt<bf16, M, D> rk;
  load(rq, sq);
  load(rk, sk);
  rt_acc<N, M> s;
  zero(s);
  mma_ABt(s, rq, rk, s);        // S = Q K^T on the matrix cores
  mul(s, s, 0.125f);            // / sqrt(64)
  rv<float, N, vec_align::rows> row;
  row_max(row, s);
  sub_row(s, row);              // softmax, row by row
  exp(s);
  row_sum(row, s);
  div_row(s, row);
  store(gl<float, 1, 1, N, M>(p, 1, 1, N, M), s, {});
}

TEST(Example, AttentionScores) {
  hktest::Buffer<bf16> q(N * D, 1), k(M * D, 2);
  hktest::Buffer<float> p(N * M);
  hipLaunchKernelGGL(attention_scores, dim3(1), dim3(64), 0, 0, q.dev, k.dev, p.dev);
  HIP_ASSERT(hipDeviceSynchronize());
  std::vector<float> want(N * M);
  for (int i = 0; i < N; ++i) {
    std::vector<double> s(M);
    double mx = -1e30, sum = 0;
    for (int j = 0; j < M; ++j) {
      for (int d = 0; d < D; ++d) s[j] += double(q.host[i * D + d]) * k.host[j * D + d];
      s[j] *= 0.125, mx = std::max(mx, s[j]);
    }
    for (int j = 0; j < M; ++j) sum += std::exp(s[j] - mx);
    for (int j = 0; j < M; ++j) want[i * M + j] = float(std::exp(s[j] - mx) / sum);
  }
  hktest::expect_close(p.read(), want, 1e-6f, 1e-4f, "softmax(QK^T/8)");
}
