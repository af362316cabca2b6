// hk without the optimizer: this program is compiled at -O0 -g (tests/hk/CMakeLists.txt), as someone stepping through
// their own kernel builds it, and runs on each virtual device. One workgroup of four waves uses every op family:
// global -> LDS through registers (memory) and straight into LDS (async) with their waits (sync) and an edge-checked
// load (edges), LDS -> register tiles, the MFMA (mma), a causal mask (masks), elementwise maps, row reductions into
// register vectors (reduce, vectors), a sum across the group (group_reduce), the accumulator-order read of a shared
// tile (acc_order) and counter-based random bits (philox). Values an SGPR operand needs (a buffer resource, M0,
// soffset) must be made wave-uniform explicitly: at -O0 every value comes back from the stack per lane.
#include "hk/hk.h"
#include "hk/ops/acc_order.h"
#include "hk/ops/async.h"
#include "hk/ops/group_reduce.h"
#include "hk/ops/philox.h"
#include "hk_test_util.h"

using namespace hk;

constexpr int Waves = 4, N = 16 * Waves, M = 64, D = 64;  // queries (16 per wave), keys, head dimension
using Group = group<Waves>;

struct Out {
  float* p;        // N x M: the causal softmax of Q K^T / 8
  float* row_sum;  // N: each row's sum of exp before normalising
  float* total;    // one per thread: the group's sum of q's first 256 elements, as group_sum returns it
  bf16* v_acc;     // 64 x 64: V read in accumulator order and stored back
  uint32_t* bits;  // 4 per thread: philox words for counter (thread, 1, 2, 3)
};

__global__ void __launch_bounds__(64 * Waves) every_family(const bf16* q, const bf16* k, const bf16* v, Out out) {
  __shared__ st<bf16, N, D> sq;
  __shared__ st<bf16, M, D> sk, s_v;
  __shared__ sv<float, Waves> scratch;
  load<Group>(sq, gl<bf16, 1, 1, N, D>(const_cast<bf16*>(q), 1, 1, N, D), {});
  load_async<Group>(sk, gl<bf16, 1, 1, M, D>(const_cast<bf16*>(k), 1, 1, M, D), {});
  load_bounded<Group>(s_v, gl<bf16, 1, 1, M, D>(const_cast<bf16*>(v), 1, 1, M, D), {});
  wait_vmcnt<0>();
  barrier();

  const int w = wave_id();
  rt<bf16, 16, D> rq;
  rt<bf16, M, D> rk;
  load(rq, sq, {0, 0, w, 0});
  load(rk, sk);
  rt_acc<16, M> s;
  zero(s);
  mma_ABt(s, rq, rk, s);
  mul(s, s, 0.125f);
  make_causal(s, 16 * w, 0);
  rv<float, 16, vec_align::rows> row;
  row_max(row, s);
  sub_row(s, row);
  exp(s);
  row_sum(row, s);
  div_row(s, row);
  store(gl<float, 1, 1, N, M>(out.p, 1, 1, N, M), s, {0, 0, w, 0});
  store(gl<float, 1, 1, 1, N>(out.row_sum, 1, 1, 1, N), row, {0, 0, 0, w});

  float total[1] = {float(q[threadIdx.x])};
  group_sum<Group>(total, scratch);
  out.total[threadIdx.x] = total[0];

  rt<bf16, M, D, layout::col> vc;
  load_acc_order(vc, s_v);
  if (w == 0) store(gl<bf16, 1, 1, M, D>(out.v_acc, 1, 1, M, D), vc, {});

  const auto r = philox4x32_r<10>({threadIdx.x, 1, 2, 3}, 0x1234u, 0x5678u);
  for (int i = 0; i < 4; ++i) out.bits[4 * threadIdx.x + i] = r.v[i];
}

TEST(DebugBuild, EveryOpFamilyAtO0) {
  hktest::Buffer<bf16> q(N * D, 1), k(M * D, 2), v(M * D, 3);
  hktest::Buffer<float> p(N * M), sums(N), total(64 * Waves);
  hktest::Buffer<bf16> v_acc(M * D);
  uint32_t* bits = nullptr;
  HIP_ASSERT(hipMalloc(&bits, 4 * 64 * Waves * sizeof(uint32_t)));
  hipLaunchKernelGGL(every_family, dim3(1), dim3(64 * Waves), 0, 0, q.dev, k.dev, v.dev,
                     Out{p.dev, sums.dev, total.dev, v_acc.dev, bits});
  HIP_ASSERT(hipDeviceSynchronize());

  std::vector<float> want(N * M, 0.f), want_sums(N);
  double want_total = 0;
  for (int i = 0; i < N; ++i) {
    std::vector<double> s(M, 0.0);
    double mx = -1e300, sum = 0;
    for (int j = 0; j <= i && j < M; ++j) {
      for (int d = 0; d < D; ++d) s[j] += double(q.host[i * D + d]) * double(k.host[j * D + d]);
      s[j] *= 0.125, mx = std::max(mx, s[j]);
    }
    for (int j = 0; j <= i && j < M; ++j) sum += std::exp(s[j] - mx);
    for (int j = 0; j <= i && j < M; ++j) want[i * M + j] = float(std::exp(s[j] - mx) / sum);
    want_sums[i] = float(sum);
  }
  for (int t = 0; t < 64 * Waves; ++t) want_total += double(q.host[t]);
  hktest::expect_close(p.read(), want, 1e-6f, 1e-4f, "causal softmax(QK^T/8)");
  hktest::expect_close(sums.read(), want_sums, 1e-5f, 1e-4f, "row sums");
  const std::vector<float> got_total = total.read();
  for (int t = 0; t < 64 * Waves; ++t) ASSERT_NEAR(got_total[t], want_total, 1e-4) << "thread " << t;

  // load_acc_order reads V's rows in the accumulator's row order (ops/acc_order.h), and store writes the tile's rows
  // as it holds them: with 4 elements per lane (gfx942) that is V itself; with 8 (gfx950) row 32t + 8g + e of the
  // store holds V's row 32t + 16(e / 4) + 4g + e % 4.
  const std::vector<float> got_v = v_acc.read();
  const bool eight = hk_host::device_arch() == hk_host::Arch::gfx950;
  for (int i = 0; i < M * D; ++i) {
    const int r = i / D, t = r / 32, g = r % 32 / 8, e = r % 8;
    const int src = eight ? 32 * t + 16 * (e / 4) + 4 * g + e % 4 : r;
    ASSERT_EQ(got_v[i], float(v.host[src * D + i % D])) << "V element " << i;
  }

  std::vector<uint32_t> got_bits(4 * 64 * Waves);
  HIP_ASSERT(hipMemcpy(got_bits.data(), bits, got_bits.size() * sizeof(uint32_t), hipMemcpyDeviceToHost));
  HIP_ASSERT(hipFree(bits));
  for (uint32_t t = 0; t < 64 * Waves; ++t) {
    const auto r = philox4x32_r<10>({t, 1, 2, 3}, 0x1234u, 0x5678u);
    for (int i = 0; i < 4; ++i) ASSERT_EQ(got_bits[4 * t + i], r.v[i]) << "thread " << t << " word " << i;
  }
}
