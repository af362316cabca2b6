// Group sums (ops/group_reduce.h): wave_sum and group_sum over groups of 1, 2, 4 and 8 waves of a 512-thread
// workgroup, two values at once, each checked against a float64 host sum, with every thread of a group holding the
// same bits; and twice in a row through the same scratch (the barrier that guards its reuse).
#include "hk/hk.h"
#include "hk/ops/group_reduce.h"
#include "hk_test_util.h"

using namespace hk;

constexpr int threads = 512;

template <int W>
__global__ void __launch_bounds__(threads) sums(const float* in, float* out) {
  __shared__ sv<float, threads / 64 * 2> scratch;
  const int tid = threadIdx.x;
  float x[2] = {in[tid], in[tid] * in[tid]};
  group_sum<group<W>>(x, scratch);
  float again[2] = {-in[tid], 1.f};  // a second call through the same scratch
  group_sum<group<W>>(again, scratch);
  out[4 * tid] = x[0], out[4 * tid + 1] = x[1], out[4 * tid + 2] = again[0], out[4 * tid + 3] = again[1];
}

template <int W>
void check() {
  SCOPED_TRACE("group of " + std::to_string(W) + " waves");
  hktest::Buffer<float> in(threads, 7, 3.f), out(4 * threads);
  hipLaunchKernelGGL(sums<W>, dim3(1), dim3(threads), 0, nullptr, in.dev, out.dev);
  HIP_ASSERT(hipDeviceSynchronize());
  const std::vector<float> got = out.read();
  constexpr int n = 64 * W;
  for (int g = 0; g < threads / n; ++g) {
    double want[4] = {0, 0, 0, double(n)}, mag[2] = {0, 0};
    for (int t = g * n; t < (g + 1) * n; ++t) {
      const double v = in.host[t], sq = double(float(in.host[t] * in.host[t]));
      want[0] += v, want[1] += sq, want[2] -= v, mag[0] += std::fabs(v), mag[1] += sq;
    }
    for (int k = 0; k < 4; ++k) {
      const double tol = n * 0x1p-24 * (k == 3 ? n : mag[k % 2]);
      EXPECT_NEAR(got[4 * g * n + k], want[k], tol) << "group " << g << " value " << k;
      for (int t = g * n + 1; t < (g + 1) * n; ++t)
        if (got[4 * t + k] != got[4 * g * n + k]) {
          ADD_FAILURE() << "thread " << t << " of group " << g << " holds other bits for value " << k;
          break;
        }
    }
  }
}

TEST(GroupReduce, GroupsOfOneToEightWaves) {
  check<1>();
  check<2>();
  check<4>();
  check<8>();
}
