// The virtual device as programs see it: properties and attributes match the arch the test runs on; events
// time work on the host clock; streams run work in order and report on synchronisation.
#include <cstring>
#include <string>
#include <vector>

#include "hip_check.h"

__global__ void fill(int* out, int value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value;
}

__global__ void add_one(int* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
}

TEST(Device, Count) {
  int count = 0;
  HIP_ASSERT(hipGetDeviceCount(&count));
  EXPECT_EQ(count, 1);
  HIP_ASSERT(hipSetDevice(0));
  EXPECT_EQ(hipSetDevice(1), hipErrorInvalidDevice);
  int id = -1;
  HIP_ASSERT(hipGetDevice(&id));
  EXPECT_EQ(id, 0);
  (void)hipGetLastError();
}

TEST(Device, PropertiesMatchTheArch) {
  const hk::arch::target* target = test_target();
  ASSERT_NE(target, nullptr);
  const bool cdna4 = target->id == hk::arch::target_id::gfx950;
  hipDeviceProp_t p;
  HIP_ASSERT(hipGetDeviceProperties(&p, 0));
  EXPECT_EQ(hk::arch::target_of(p), target) << p.gcnArchName;
  EXPECT_NE(std::string(p.gcnArchName).find(':'), std::string::npos) << p.gcnArchName << " has no target features";
  EXPECT_STREQ(p.name, cdna4 ? "vgpu (MI355X)" : "vgpu (MI300X)");
  EXPECT_EQ(p.sharedMemPerBlock, cdna4 ? 160u * 1024 : 64u * 1024);
  EXPECT_EQ(p.maxSharedMemoryPerMultiProcessor, p.sharedMemPerBlock);
  EXPECT_EQ(p.warpSize, 64);
  EXPECT_EQ(p.maxThreadsPerBlock, 1024);
  EXPECT_EQ(p.maxThreadsDim[0], 1024);
  EXPECT_EQ(p.multiProcessorCount, cdna4 ? 256 : 304);
  EXPECT_EQ(p.clockRate, cdna4 ? 2400000 : 2100000);
  EXPECT_EQ(p.major, 9);
  EXPECT_EQ(p.minor, cdna4 ? 5 : 4);
  EXPECT_GT(p.totalGlobalMem, size_t(100) << 30);
  EXPECT_EQ(p.managedMemory, 1);
}

TEST(Device, AttributesAgreeWithProperties) {
  hipDeviceProp_t p;
  HIP_ASSERT(hipGetDeviceProperties(&p, 0));
  int v = 0;
  HIP_ASSERT(hipDeviceGetAttribute(&v, hipDeviceAttributeWarpSize, 0));
  EXPECT_EQ(v, p.warpSize);
  HIP_ASSERT(hipDeviceGetAttribute(&v, hipDeviceAttributeMaxSharedMemoryPerBlock, 0));
  EXPECT_EQ(size_t(v), p.sharedMemPerBlock);
  HIP_ASSERT(hipDeviceGetAttribute(&v, hipDeviceAttributeMultiprocessorCount, 0));
  EXPECT_EQ(v, p.multiProcessorCount);
  HIP_ASSERT(hipDeviceGetAttribute(&v, hipDeviceAttributeMaxThreadsPerBlock, 0));
  EXPECT_EQ(v, 1024);
  HIP_ASSERT(hipDeviceGetAttribute(&v, hipDeviceAttributeComputeCapabilityMinor, 0));
  EXPECT_EQ(v, p.minor);
  EXPECT_EQ(hipDeviceGetAttribute(&v, hipDeviceAttributeWarpSize, 3), hipErrorInvalidDevice);
  EXPECT_EQ(hipDeviceGetAttribute(nullptr, hipDeviceAttributeWarpSize, 0), hipErrorInvalidValue);
  char name[64];
  HIP_ASSERT(hipDeviceGetName(name, sizeof name, 0));
  EXPECT_STREQ(name, p.name);
  (void)hipGetLastError();
}

TEST(Device, Versions) {
  int runtime = 0, driver = 0;
  HIP_ASSERT(hipRuntimeGetVersion(&runtime));
  HIP_ASSERT(hipDriverGetVersion(&driver));
  EXPECT_EQ(runtime, HIP_VERSION);
  EXPECT_EQ(driver, HIP_VERSION);
  HIP_ASSERT(hipInit(0));
}

TEST(Device, MemoryInfo) {
  size_t free_bytes = 0, total = 0;
  HIP_ASSERT(hipMemGetInfo(&free_bytes, &total));
  EXPECT_GT(total, 0u);
  EXPECT_LE(free_bytes, total);
}

TEST(Events, ElapsedTimeAroundAKernel) {
  const int n = 4096;
  DeviceBuffer<int> d(n);
  hipEvent_t start, stop;
  HIP_ASSERT(hipEventCreate(&start));
  HIP_ASSERT(hipEventCreate(&stop));
  float ms = -1;
  EXPECT_EQ(hipEventElapsedTime(&ms, start, stop), hipErrorInvalidHandle);  // not recorded yet
  HIP_ASSERT(hipEventRecord(start, nullptr));
  fill<<<n / 256, 256>>>(d.ptr, 7, n);
  HIP_ASSERT(hipEventRecord(stop, nullptr));
  HIP_ASSERT(hipEventSynchronize(stop));
  HIP_ASSERT(hipEventQuery(stop));
  HIP_ASSERT(hipEventElapsedTime(&ms, start, stop));
  EXPECT_GE(ms, 0.0f);
  EXPECT_LT(ms, 600000.0f);
  std::vector<int> host(n);
  HIP_ASSERT(hipMemcpy(host.data(), d.ptr, d.bytes(), hipMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) ASSERT_EQ(host[i], 7);
  HIP_ASSERT(hipEventDestroy(start));
  HIP_ASSERT(hipEventDestroy(stop));
  EXPECT_EQ(hipEventDestroy(start), hipErrorInvalidHandle);

  hipEvent_t untimed;
  HIP_ASSERT(hipEventCreateWithFlags(&untimed, hipEventDisableTiming));
  HIP_ASSERT(hipEventCreate(&start));
  HIP_ASSERT(hipEventRecord(start, nullptr));
  HIP_ASSERT(hipEventRecord(untimed, nullptr));
  EXPECT_EQ(hipEventElapsedTime(&ms, start, untimed), hipErrorInvalidHandle);
  HIP_ASSERT(hipEventDestroy(untimed));
  HIP_ASSERT(hipEventDestroy(start));
  (void)hipGetLastError();
}

TEST(Streams, WorkRunsInOrder) {
  const int n = 1000;
  hipStream_t s;
  HIP_ASSERT(hipStreamCreate(&s));
  std::vector<int> host(n);
  for (int i = 0; i < n; ++i) host[i] = i;
  DeviceBuffer<int> d(n);
  HIP_ASSERT(hipMemcpyAsync(d.ptr, host.data(), d.bytes(), hipMemcpyHostToDevice, s));
  add_one<<<(n + 255) / 256, 256, 0, s>>>(d.ptr, n);
  add_one<<<(n + 255) / 256, 256, 0, s>>>(d.ptr, n);
  HIP_ASSERT(hipGetLastError());
  std::vector<int> result(n, 0);
  HIP_ASSERT(hipMemcpyAsync(result.data(), d.ptr, d.bytes(), hipMemcpyDeviceToHost, s));
  HIP_ASSERT(hipStreamSynchronize(s));
  HIP_ASSERT(hipStreamQuery(s));
  for (int i = 0; i < n; ++i) ASSERT_EQ(result[i], i + 2);
  HIP_ASSERT(hipStreamDestroy(s));
}

TEST(Streams, FlagsPriorityCallbackAndMemset) {
  hipStream_t s;
  HIP_ASSERT(hipStreamCreateWithPriority(&s, hipStreamNonBlocking, -1));
  unsigned flags = 0;
  int priority = 0;
  HIP_ASSERT(hipStreamGetFlags(s, &flags));
  HIP_ASSERT(hipStreamGetPriority(s, &priority));
  EXPECT_EQ(flags, unsigned(hipStreamNonBlocking));
  EXPECT_EQ(priority, -1);

  DeviceBuffer<int> d(300);
  HIP_ASSERT(hipMemsetD32Async(d.ptr, 0x01020304, 300, s));
  int seen = 0;
  HIP_ASSERT(hipStreamAddCallback(
      s, [](hipStream_t, hipError_t status, void* user) { *static_cast<int*>(user) = status == hipSuccess ? 1 : 2; },
      &seen, 0));
  HIP_ASSERT(hipStreamSynchronize(s));
  EXPECT_EQ(seen, 1);
  std::vector<int> host(300);
  HIP_ASSERT(hipMemcpy(host.data(), d.ptr, d.bytes(), hipMemcpyDeviceToHost));
  for (int v : host) ASSERT_EQ(v, 0x01020304);

  hipEvent_t e;
  HIP_ASSERT(hipEventCreate(&e));
  HIP_ASSERT(hipEventRecord(e, s));
  HIP_ASSERT(hipStreamWaitEvent(nullptr, e, 0));
  HIP_ASSERT(hipEventDestroy(e));
  HIP_ASSERT(hipStreamDestroy(s));
  EXPECT_EQ(hipStreamSynchronize(s), hipErrorInvalidHandle);
  EXPECT_EQ(hipStreamDestroy(s), hipErrorInvalidHandle);
  (void)hipGetLastError();
}

TEST(Device, ResetFreesMemoryAndKeepsKernels) {
  DeviceBuffer<int> keep(16);  // freed by the reset; its destructor's hipFree then reports an invalid pointer
  HIP_ASSERT(hipDeviceReset());
  EXPECT_EQ(hipFree(keep.ptr), hipErrorInvalidValue);
  keep.ptr = nullptr;
  (void)hipGetLastError();
  DeviceBuffer<int> d(64);
  ASSERT_NE(d.ptr, nullptr);
  fill<<<1, 64>>>(d.ptr, 3, 64);
  HIP_ASSERT(hipGetLastError());
  std::vector<int> host(64);
  HIP_ASSERT(hipMemcpy(host.data(), d.ptr, d.bytes(), hipMemcpyDeviceToHost));
  for (int v : host) ASSERT_EQ(v, 3);
}
