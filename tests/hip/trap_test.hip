// assert, abort and __builtin_trap in device code: the dispatch ends with hipErrorAssert and a message naming the
// kernel, pc, wave and lane (and, for assert, the failed condition, which also goes to stderr as on ROCm); the
// process carries on running good kernels.
#undef NDEBUG  // the tests build in Release; assert must stay
#include <cassert>
#include <string>
#include <vector>

#include "hip_check.h"

// Lanes whose value reaches the limit fail the assertion: in a block of 128 with data[i] = i and limit 70, the
// first failing wave is wave 1, its first failing lane 6.
__global__ void checked_values(const int* data, int limit, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  assert(data[i] < limit);
  out[i] = data[i] * 2;
}

__global__ void aborts_in_lane(int* out, int lane) {
  if (int(threadIdx.x) == lane) abort();
  out[threadIdx.x] = 1;
}

__global__ void traps(int* out) {
  if (threadIdx.x >= 64) __builtin_trap();
  out[threadIdx.x] = 1;
}

__global__ void doubles(int* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= 2;
}

namespace {

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

// The fault's report, its one-time reports, and that the process carries on.
void check_trap(hipError_t launched, const std::vector<std::string>& parts) {
  EXPECT_EQ(launched, hipErrorAssert) << hipGetErrorName(launched);
  const std::string text = hipGetErrorString(hipErrorAssert);
  expect_contains(text, "device trap");
  expect_contains(text, " pc 0x");
  expect_contains(text, "s_trap");
  for (const std::string& p : parts) expect_contains(text, p);
  EXPECT_EQ(hipGetLastError(), hipErrorAssert);
  EXPECT_EQ(hipDeviceSynchronize(), hipErrorAssert);
  EXPECT_EQ(hipDeviceSynchronize(), hipSuccess);
  (void)hipGetLastError();

  const int n = 200;
  std::vector<int> host(n);
  for (int i = 0; i < n; ++i) host[i] = i - 7;
  DeviceBuffer<int> d(n);
  ASSERT_EQ(hipMemcpy(d.ptr, host.data(), d.bytes(), hipMemcpyHostToDevice), hipSuccess);
  doubles<<<2, 128>>>(d.ptr, n);
  ASSERT_EQ(hipMemcpy(host.data(), d.ptr, d.bytes(), hipMemcpyDeviceToHost), hipSuccess);
  for (int i = 0; i < n; ++i) ASSERT_EQ(host[i], 2 * (i - 7));
}

}  // namespace

TEST(Trap, FailedAssertNamesKernelWaveLaneAndCondition) {
  const int n = 128;
  std::vector<int> values(n);
  for (int i = 0; i < n; ++i) values[i] = i;
  DeviceBuffer<int> data(n), out(n);
  ASSERT_EQ(hipMemcpy(data.ptr, values.data(), data.bytes(), hipMemcpyHostToDevice), hipSuccess);
  testing::internal::CaptureStderr();
  checked_values<<<1, n>>>(data.ptr, 70, out.ptr);
  const hipError_t launched = hipPeekAtLastError();
  const std::string err = testing::internal::GetCapturedStderr();
  expect_contains(err, "checked_values");
  expect_contains(err, "Device-side assertion `data[i] < limit' failed.");
  check_trap(launched, {"checked_values", "wave 1", "lane 6", "data[i] < limit", "trap_test.hip"});
}

TEST(Trap, PassingAssertRunsToTheEnd) {
  const int n = 128;
  std::vector<int> values(n);
  for (int i = 0; i < n; ++i) values[i] = i;
  DeviceBuffer<int> data(n), out(n);
  ASSERT_EQ(hipMemcpy(data.ptr, values.data(), data.bytes(), hipMemcpyHostToDevice), hipSuccess);
  checked_values<<<1, n>>>(data.ptr, n, out.ptr);
  HIP_ASSERT(hipDeviceSynchronize());
  ASSERT_EQ(hipMemcpy(values.data(), out.ptr, out.bytes(), hipMemcpyDeviceToHost), hipSuccess);
  for (int i = 0; i < n; ++i) ASSERT_EQ(values[i], 2 * i);
}

TEST(Trap, AbortNamesKernelAndLane) {
  DeviceBuffer<int> out(256);
  aborts_in_lane<<<1, 256>>>(out.ptr, 150);
  check_trap(hipPeekAtLastError(), {"aborts_in_lane", "wave 2", "lane 22"});
}

TEST(Trap, BuiltinTrapNamesKernelAndWave) {
  DeviceBuffer<int> out(128);
  traps<<<1, 128>>>(out.ptr);
  check_trap(hipPeekAtLastError(), {"traps", "wave 1", "lane 0"});
}
