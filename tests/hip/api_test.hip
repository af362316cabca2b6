// Runtime API behaviour outside kernels: invalid arguments give the proper error codes without crashing, the
// last-error state follows HIP, and memory functions (allocation kinds, copies, fills, pointer queries) work.
#include <cstring>
#include <string>
#include <vector>

#include "hip_check.h"

__global__ void increment(int* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
}

__global__ __launch_bounds__(128) void bounded(int* data) { data[threadIdx.x] = 1; }

__global__ void sum_args(long long* out, char a, short b, int c, long long d, float e, double f) {
  *out = a + b + c + d + static_cast<long long>(e) + static_cast<long long>(f);
}

TEST(Api, NullPointersAreInvalidValues) {
  EXPECT_EQ(hipMalloc(nullptr, 16), hipErrorInvalidValue);
  int x = 0;
  EXPECT_EQ(hipMemcpy(nullptr, &x, 4, hipMemcpyHostToDevice), hipErrorInvalidValue);
  EXPECT_EQ(hipMemcpy(&x, nullptr, 4, hipMemcpyDeviceToHost), hipErrorInvalidValue);
  EXPECT_EQ(hipMemset(nullptr, 0, 4), hipErrorInvalidValue);
  EXPECT_EQ(hipGetDeviceProperties(nullptr, 0), hipErrorInvalidValue);
  EXPECT_EQ(hipGetDeviceCount(nullptr), hipErrorInvalidValue);
  EXPECT_EQ(hipEventCreate(nullptr), hipErrorInvalidValue);
  EXPECT_EQ(hipStreamCreate(nullptr), hipErrorInvalidValue);
  (void)hipGetLastError();
}

TEST(Api, ZeroSizedAndNullFrees) {
  void* p = reinterpret_cast<void*>(1);
  HIP_ASSERT(hipMalloc(&p, 0));
  EXPECT_EQ(p, nullptr);
  HIP_ASSERT(hipFree(nullptr));
  int on_stack = 0;
  EXPECT_EQ(hipFree(&on_stack), hipErrorInvalidValue);
  (void)hipGetLastError();
}

TEST(Api, LastErrorIsStickyUntilRead) {
  (void)hipGetLastError();
  EXPECT_EQ(hipSetDevice(7), hipErrorInvalidDevice);
  int count;
  HIP_ASSERT(hipGetDeviceCount(&count));  // a success does not clear it
  EXPECT_EQ(hipPeekAtLastError(), hipErrorInvalidDevice);
  EXPECT_EQ(hipPeekAtLastError(), hipErrorInvalidDevice);
  EXPECT_EQ(hipGetLastError(), hipErrorInvalidDevice);
  EXPECT_EQ(hipGetLastError(), hipSuccess);
}

TEST(Api, ErrorNamesAndStrings) {
  EXPECT_STREQ(hipGetErrorName(hipSuccess), "hipSuccess");
  EXPECT_STREQ(hipGetErrorName(hipErrorInvalidValue), "hipErrorInvalidValue");
  EXPECT_STREQ(hipGetErrorName(hipErrorIllegalAddress), "hipErrorIllegalAddress");
  EXPECT_STREQ(hipGetErrorString(hipSuccess), "no error");
  EXPECT_NE(std::string(hipGetErrorString(hipErrorOutOfMemory)).find("out of memory"), std::string::npos);
}

TEST(Api, BadLaunchConfigurations) {
  DeviceBuffer<int> d(2048);
  int n = 2048;
  void* args[] = {&d.ptr, &n};
  const void* k = reinterpret_cast<const void*>(increment);
  EXPECT_EQ(hipLaunchKernel(k, dim3(0), dim3(64), args, 0, nullptr), hipErrorInvalidConfiguration);
  EXPECT_EQ(hipLaunchKernel(k, dim3(1), dim3(0), args, 0, nullptr), hipErrorInvalidConfiguration);
  EXPECT_EQ(hipLaunchKernel(k, dim3(1), dim3(1025), args, 0, nullptr), hipErrorInvalidConfiguration);
  EXPECT_EQ(hipLaunchKernel(k, dim3(1), dim3(32, 32, 2), args, 0, nullptr), hipErrorInvalidConfiguration);
  EXPECT_EQ(hipGetLastError(), hipErrorInvalidConfiguration);
  EXPECT_EQ(hipLaunchKernel(nullptr, dim3(1), dim3(64), args, 0, nullptr), hipErrorInvalidDeviceFunction);
  int not_a_kernel = 0;
  EXPECT_EQ(hipLaunchKernel(&not_a_kernel, dim3(1), dim3(64), args, 0, nullptr), hipErrorInvalidDeviceFunction);
  EXPECT_EQ(hipLaunchKernel(k, dim3(1), dim3(64), nullptr, 0, nullptr), hipErrorInvalidValue);
  // A block larger than the kernel's __launch_bounds__.
  void* bounded_args[] = {&d.ptr};
  EXPECT_EQ(hipLaunchKernel(reinterpret_cast<const void*>(bounded), dim3(1), dim3(256), bounded_args, 0, nullptr),
            hipErrorLaunchFailure);
  HIP_ASSERT(hipLaunchKernel(reinterpret_cast<const void*>(bounded), dim3(1), dim3(128), bounded_args, 0, nullptr));
  // An unknown stream handle.
  int fake_stream_storage = 0;
  EXPECT_EQ(hipLaunchKernel(k, dim3(1), dim3(64), args, 0, reinterpret_cast<hipStream_t>(&fake_stream_storage)),
            hipErrorInvalidHandle);
  increment<<<0, 64>>>(d.ptr, n);
  EXPECT_EQ(hipGetLastError(), hipErrorInvalidConfiguration);
  EXPECT_EQ(hipGetLastError(), hipSuccess);
  // Nothing above was a fault: synchronisation has nothing to report.
  EXPECT_EQ(hipDeviceSynchronize(), hipSuccess);
}

TEST(Api, ArgumentsOfEverySize) {
  DeviceBuffer<long long> out(1);
  sum_args<<<1, 1>>>(out.ptr, char(-3), short(300), 70000, 1ll << 40, 2.75f, 1e6);
  HIP_ASSERT(hipGetLastError());
  long long v = 0;
  HIP_ASSERT(hipMemcpy(&v, out.ptr, sizeof v, hipMemcpyDeviceToHost));
  EXPECT_EQ(v, -3 + 300 + 70000 + (1ll << 40) + 2 + 1000000);
}

TEST(Api, OldStyleConfigureSetupLaunch) {
  DeviceBuffer<int> d(100);
  HIP_ASSERT(hipMemset(d.ptr, 0, d.bytes()));
  int n = 100;
  HIP_ASSERT(hipConfigureCall(dim3(2), dim3(64), 0, nullptr));
  HIP_ASSERT(hipSetupArgument(&d.ptr, sizeof d.ptr, 0));
  HIP_ASSERT(hipSetupArgument(&n, sizeof n, 8));
  HIP_ASSERT(hipLaunchByPtr(reinterpret_cast<const void*>(increment)));
  std::vector<int> host(100);
  HIP_ASSERT(hipMemcpy(host.data(), d.ptr, d.bytes(), hipMemcpyDeviceToHost));
  for (int v : host) ASSERT_EQ(v, 1);
}

TEST(Api, FunctionAttributes) {
  hipFuncAttributes attr;
  HIP_ASSERT(hipFuncGetAttributes(&attr, reinterpret_cast<const void*>(bounded)));
  EXPECT_EQ(attr.maxThreadsPerBlock, 128);
  EXPECT_EQ(attr.sharedSizeBytes, 0u);
  int dummy = 0;
  EXPECT_EQ(hipFuncGetAttributes(&attr, &dummy), hipErrorInvalidDeviceFunction);
  HIP_ASSERT(hipFuncSetAttribute(reinterpret_cast<const void*>(increment), hipFuncAttributeMaxDynamicSharedMemorySize,
                                 4096));
  HIP_ASSERT(hipFuncGetAttributes(&attr, reinterpret_cast<const void*>(increment)));
  EXPECT_EQ(attr.maxDynamicSharedSizeBytes, 4096);
  EXPECT_EQ(hipFuncSetAttribute(reinterpret_cast<const void*>(increment), hipFuncAttributeMaxDynamicSharedMemorySize,
                                1 << 30),
            hipErrorInvalidValue);
  int blocks = 0;
  HIP_ASSERT(hipOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, reinterpret_cast<const void*>(increment), 256, 0));
  EXPECT_GT(blocks, 0);
  (void)hipGetLastError();
}

TEST(Api, CopiesPastAnAllocationAreRefused) {
  DeviceBuffer<int> d(16);
  std::vector<int> host(32, 1);
  EXPECT_EQ(hipMemcpy(d.ptr, host.data(), 32 * sizeof(int), hipMemcpyHostToDevice), hipErrorInvalidValue);
  // The description explains the latest error of its code, and only that one.
  EXPECT_NE(std::string(hipGetErrorString(hipErrorInvalidValue)).find("past the end"), std::string::npos);
  EXPECT_EQ(hipMalloc(nullptr, 4), hipErrorInvalidValue);
  EXPECT_STREQ(hipGetErrorString(hipErrorInvalidValue), "invalid argument");
  EXPECT_EQ(hipMemset(d.ptr + 8, 0, 9 * sizeof(int)), hipErrorInvalidValue);
  HIP_ASSERT(hipMemcpy(d.ptr + 8, host.data(), 8 * sizeof(int), hipMemcpyHostToDevice));
  EXPECT_EQ(hipMemcpy(d.ptr, host.data(), 4, hipMemcpyKind(99)), hipErrorInvalidMemcpyDirection);
  (void)hipGetLastError();
}

TEST(Api, MemoryKindsAreUsableByKernels) {
  const int n = 256;
  int* managed = nullptr;
  int* pinned = nullptr;
  HIP_ASSERT(hipMallocManaged(reinterpret_cast<void**>(&managed), n * sizeof(int), hipMemAttachGlobal));
  HIP_ASSERT(hipHostMalloc(reinterpret_cast<void**>(&pinned), n * sizeof(int), 0));
  for (int i = 0; i < n; ++i) managed[i] = i, pinned[i] = 2 * i;
  increment<<<1, n>>>(managed, n);
  increment<<<1, n>>>(pinned, n);
  HIP_ASSERT(hipDeviceSynchronize());
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(managed[i], i + 1);
    ASSERT_EQ(pinned[i], 2 * i + 1);
  }
  hipPointerAttribute_t attr;
  HIP_ASSERT(hipPointerGetAttributes(&attr, managed + 5));
  EXPECT_EQ(attr.type, hipMemoryTypeManaged);
  EXPECT_EQ(attr.isManaged, 1);
  HIP_ASSERT(hipPointerGetAttributes(&attr, pinned));
  EXPECT_EQ(attr.type, hipMemoryTypeHost);
  HIP_ASSERT(hipFree(managed));
  HIP_ASSERT(hipHostFree(pinned));

  // Memory registered from the host is usable in place.
  std::vector<int> registered(n, 10);
  HIP_ASSERT(hipHostRegister(registered.data(), n * sizeof(int), hipHostRegisterDefault));
  int* device_view = nullptr;
  HIP_ASSERT(hipHostGetDevicePointer(reinterpret_cast<void**>(&device_view), registered.data(), 0));
  increment<<<1, n>>>(device_view, n);
  HIP_ASSERT(hipDeviceSynchronize());
  for (int v : registered) ASSERT_EQ(v, 11);
  HIP_ASSERT(hipHostUnregister(registered.data()));
}

__device__ int device_variable = 5;

// Allocations, registrations and the device's own memory (code images) share one ledger: each pointer is freed or
// unregistered by its own call, once, and memory the device placed is never the program's to free.
TEST(Api, AllocationsRegistrationsAndDeviceMemoryAreToldApart) {
  void* p = nullptr;
  HIP_ASSERT(hipMalloc(&p, 64));
  EXPECT_EQ(hipHostUnregister(p), hipErrorHostMemoryNotRegistered);
  size_t size = 0;
  HIP_ASSERT(hipMemPtrGetInfo(static_cast<char*>(p) + 10, &size));
  EXPECT_EQ(size, 64u);
  HIP_ASSERT(hipFree(p));
  EXPECT_EQ(hipFree(p), hipErrorInvalidValue);
  EXPECT_EQ(hipMemPtrGetInfo(p, &size), hipErrorInvalidValue);

  std::vector<int> host(32);
  HIP_ASSERT(hipHostRegister(host.data(), host.size() * sizeof(int), hipHostRegisterDefault));
  EXPECT_EQ(hipHostRegister(host.data() + 8, 4 * sizeof(int), hipHostRegisterDefault),
            hipErrorHostMemoryAlreadyRegistered);
  EXPECT_EQ(hipFree(host.data()), hipErrorInvalidValue);
  unsigned flags = 99;
  HIP_ASSERT(hipHostGetFlags(&flags, host.data() + 3));
  EXPECT_EQ(flags, unsigned(hipHostRegisterDefault));
  HIP_ASSERT(hipHostUnregister(host.data()));
  EXPECT_EQ(hipHostUnregister(host.data()), hipErrorHostMemoryNotRegistered);

  void* variable = nullptr;
  HIP_ASSERT(hipGetSymbolAddress(&variable, HIP_SYMBOL(device_variable)));
  EXPECT_EQ(hipFree(variable), hipErrorInvalidValue);
  hipPointerAttribute_t attr;
  HIP_ASSERT(hipPointerGetAttributes(&attr, variable));
  EXPECT_EQ(attr.type, hipMemoryTypeUnregistered);  // the device's own memory is not a program allocation
  int value = 0;
  HIP_ASSERT(hipMemcpyFromSymbol(&value, HIP_SYMBOL(device_variable), sizeof value, 0, hipMemcpyDeviceToHost));
  EXPECT_EQ(value, 5);
  (void)hipGetLastError();
}

TEST(Api, FillsAndTwoDimensionalCopies) {
  DeviceBuffer<uint16_t> d16(100);
  HIP_ASSERT(hipMemsetD16(d16.ptr, 0xbeef, 100));
  std::vector<uint16_t> h16(100);
  HIP_ASSERT(hipMemcpy(h16.data(), d16.ptr, d16.bytes(), hipMemcpyDeviceToHost));
  for (uint16_t v : h16) ASSERT_EQ(v, 0xbeef);

  void* pitched = nullptr;
  size_t pitch = 0;
  HIP_ASSERT(hipMallocPitch(&pitched, &pitch, 10 * sizeof(int), 4));
  EXPECT_GE(pitch, 10 * sizeof(int));
  std::vector<int> rows(40);
  for (int i = 0; i < 40; ++i) rows[i] = i;
  HIP_ASSERT(hipMemcpy2D(pitched, pitch, rows.data(), 10 * sizeof(int), 10 * sizeof(int), 4, hipMemcpyHostToDevice));
  std::vector<int> back(40, -1);
  HIP_ASSERT(hipMemcpy2D(back.data(), 10 * sizeof(int), pitched, pitch, 10 * sizeof(int), 4, hipMemcpyDeviceToHost));
  EXPECT_EQ(back, rows);
  HIP_ASSERT(hipFree(pitched));
}

TEST(Api, UnsupportedFunctionsSayNotSupported) {
  hipSurfaceObject_t surface = 0;
  EXPECT_EQ(hipCreateSurfaceObject(&surface, nullptr), hipErrorNotSupported);
  EXPECT_NE(std::string(hipGetErrorString(hipErrorNotSupported)).find("hipCreateSurfaceObject"), std::string::npos);
  EXPECT_EQ(hipGetLastError(), hipErrorNotSupported);
}
