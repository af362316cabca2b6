// clock64(), wall_clock64() and the hardware ids as kernels read them: the clocks are nonzero and never go back
// (within a wave, and from one dispatch to the next), the shader clock grows with the work done, and the XCC id and
// CU id are the same for every wave of a workgroup, the XCC the one round-robin placement gives (workgroup % XCDs).
#include <algorithm>
#include <set>
#include <vector>

#include "hip_check.h"

struct Sample {
  long long clock_before, clock_after, wall_before, wall_after;
  unsigned xcc, smid;
  int checksum;
};

__global__ void timed_work(Sample* out, int iterations) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  Sample s;
  s.clock_before = clock64();
  s.wall_before = wall_clock64();
  int x = i;
  for (int k = 0; k < iterations; ++k) x = x * 1103515245 + 12345;
  s.clock_after = clock64();
  s.wall_after = wall_clock64();
  s.xcc = __builtin_amdgcn_s_getreg((3 << 11) | (0 << 6) | 20);  // XCC_ID[3:0]
  s.smid = __smid();
  s.checksum = x;
  out[i] = s;
}

namespace {

std::vector<Sample> run(int blocks, int threads, int iterations) {
  DeviceBuffer<Sample> d(size_t(blocks) * threads);
  timed_work<<<blocks, threads>>>(d.ptr, iterations);
  std::vector<Sample> host(d.count);
  EXPECT_EQ(hipDeviceSynchronize(), hipSuccess);
  EXPECT_EQ(hipMemcpy(host.data(), d.ptr, d.bytes(), hipMemcpyDeviceToHost), hipSuccess);
  return host;
}

}  // namespace

TEST(Clocks, NonzeroMonotonicAndGrowingWithWork) {
  const int blocks = 20, threads = 256;
  std::vector<Sample> a = run(blocks, threads, 10), b = run(blocks, threads, 1000);
  long long latest_a = 0, earliest_b = 1ll << 62;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_GT(a[i].clock_before, 0);
    ASSERT_GT(a[i].clock_after, a[i].clock_before);
    ASSERT_GT(a[i].wall_before, 0);
    ASSERT_GE(a[i].wall_after, a[i].wall_before);
    ASSERT_GE(b[i].wall_before, a[i].wall_after);
    // 1000 iterations cost more shader cycles than 10.
    ASSERT_GT(b[i].clock_after - b[i].clock_before, a[i].clock_after - a[i].clock_before + 900);
    latest_a = std::max(latest_a, a[i].clock_after);
    earliest_b = std::min(earliest_b, b[i].clock_before);
  }
  EXPECT_GT(earliest_b, latest_a) << "the shader clock went back between dispatches";
  int wall_rate_khz = 0;
  HIP_ASSERT(hipDeviceGetAttribute(&wall_rate_khz, hipDeviceAttributeWallClockRate, 0));
  EXPECT_GT(wall_rate_khz, 0);
}

TEST(HardwareIds, XccAndCuFollowTheWorkgroup) {
  const hk::arch::target* t = test_target();
  ASSERT_NE(t, nullptr);
  const int blocks = 40, threads = 256;
  std::vector<Sample> s = run(blocks, threads, 1);
  std::set<unsigned> cus_of_xcc0;
  for (int b = 0; b < blocks; ++b) {
    const Sample& first = s[size_t(b) * threads];
    EXPECT_EQ(first.xcc, unsigned(b % t->xcds)) << "block " << b;
    for (int k = 0; k < threads; ++k) {
      EXPECT_EQ(s[size_t(b) * threads + k].xcc, first.xcc);
      EXPECT_EQ(s[size_t(b) * threads + k].smid, first.smid);
    }
    if (first.xcc == 0) cus_of_xcc0.insert(first.smid);
  }
  // Workgroups that share an XCD are spread over its CUs.
  EXPECT_EQ(cus_of_xcc0.size(), size_t((blocks + t->xcds - 1) / t->xcds));
}
