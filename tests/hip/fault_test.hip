// Planted faults, one per kind: each launch must return the documented error code, hipGetErrorString must carry
// the fault's details (kernel, pc, instruction, wave, lane), the error must be reported once by hipGetLastError
// and once by the next synchronisation, and the process must carry on running good kernels afterwards.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "hip_check.h"

// A store far past the end of a hipMalloc'd buffer.
__global__ void oob_global_store(int* data, long long offset) { data[offset + threadIdx.x] = 1; }

// A store into a __shared__ array at an index far past the workgroup's LDS allocation.
__global__ void oob_lds_store(int* out, int index) {
  __shared__ int table[64];
  table[threadIdx.x] = int(threadIdx.x);
  __syncthreads();
  table[index + int(threadIdx.x)] = 5;
  __syncthreads();
  out[threadIdx.x] = table[threadIdx.x];
}

// Wave 0 waits at the barrier; wave 1 spins on a flag that wave 0 sets only after the barrier.
__global__ void barrier_deadlock(int* out) {
  __shared__ volatile int flag;
  if (threadIdx.x / 64 == 0) {
    __syncthreads();
    flag = 12345;
  } else {
    while (flag != 12345) {
    }
  }
  out[threadIdx.x] = flag;
}

// An instruction vgpu does not implement (it halts the wave on hardware).
__global__ void unknown_instruction(int* out) {
  asm volatile("s_sethalt 1");
  out[threadIdx.x] = 1;
}

__global__ void square(int* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = i * i;
}

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

bool contains(const std::string& text, const std::string& part) { return lower(text).find(lower(part)) != std::string::npos; }

// After a launch that faulted with `code`: the details, the one-time reports, and recovery.
void check_fault(hipError_t launched, hipError_t code, const std::string& kernel,
                 const std::vector<std::string>& mnemonics, bool lane_specific) {
  EXPECT_EQ(launched, code) << hipGetErrorName(launched);
  std::string text = hipGetErrorString(code);
  SCOPED_TRACE("hipGetErrorString: " + text);
  EXPECT_EQ(text.rfind(hipGetErrorString(hipSuccess), 0), std::string::npos);
  EXPECT_TRUE(contains(text, kernel));
  EXPECT_TRUE(contains(text, "pc"));
  EXPECT_TRUE(std::any_of(mnemonics.begin(), mnemonics.end(), [&](const std::string& m) { return contains(text, m); }))
      << "no instruction mnemonic of the expected kind";
  EXPECT_TRUE(contains(text, "wave"));
  if (lane_specific) EXPECT_TRUE(contains(text, "lane"));

  // Reported by hipGetLastError until read, and once by the next synchronisation, whose failure becomes the last
  // error again (every failing call sets it, as in HIP).
  EXPECT_EQ(hipPeekAtLastError(), code);
  EXPECT_EQ(hipGetLastError(), code);
  EXPECT_EQ(hipGetLastError(), hipSuccess);
  EXPECT_EQ(hipDeviceSynchronize(), code);
  EXPECT_EQ(std::string(hipGetErrorString(code)), text);  // a program that checks at the sync sees the details
  EXPECT_EQ(hipDeviceSynchronize(), hipSuccess);
  EXPECT_EQ(hipGetLastError(), code);
  EXPECT_EQ(hipGetLastError(), hipSuccess);

  // The process carries on: allocation and a good kernel work.
  const int n = 300;
  DeviceBuffer<int> d(n);
  ASSERT_NE(d.ptr, nullptr);
  square<<<(n + 127) / 128, 128>>>(d.ptr, n);
  ASSERT_EQ(hipGetLastError(), hipSuccess);
  std::vector<int> host(n);
  ASSERT_EQ(hipMemcpy(host.data(), d.ptr, d.bytes(), hipMemcpyDeviceToHost), hipSuccess);
  for (int i = 0; i < n; ++i) ASSERT_EQ(host[i], i * i);
}

}  // namespace

TEST(Faults, GlobalStoreOutOfBounds) {
  DeviceBuffer<int> d(64);
  void* args[] = {&d.ptr, nullptr};
  long long offset = 1ll << 30;  // 4 GiB past the buffer
  args[1] = &offset;
  hipError_t e = hipLaunchKernel(reinterpret_cast<const void*>(oob_global_store), dim3(1), dim3(64), args, 0, nullptr);
  check_fault(e, hipErrorIllegalAddress, "oob_global_store", {"global_store", "flat_store"}, true);
}

TEST(Faults, GlobalStoreOutOfBoundsThroughTripleChevron) {
  DeviceBuffer<int> d(64);
  oob_global_store<<<2, 64>>>(d.ptr, 1ll << 31);
  check_fault(hipPeekAtLastError(), hipErrorIllegalAddress, "oob_global_store", {"global_store", "flat_store"}, true);
}

TEST(Faults, LdsOutOfBounds) {
  DeviceBuffer<int> d(64);
  int index = 1 << 20;  // 4 MiB into LDS
  void* args[] = {&d.ptr, &index};
  hipError_t e = hipLaunchKernel(reinterpret_cast<const void*>(oob_lds_store), dim3(1), dim3(64), args, 0, nullptr);
  check_fault(e, hipErrorIllegalAddress, "oob_lds_store", {"ds_write", "ds_store"}, true);
}

TEST(Faults, BarrierDeadlock) {
  DeviceBuffer<int> d(128);
  void* args[] = {&d.ptr};
  hipError_t e = hipLaunchKernel(reinterpret_cast<const void*>(barrier_deadlock), dim3(1), dim3(128), args, 0, nullptr);
  check_fault(e, hipErrorLaunchTimeOut, "barrier_deadlock", {"s_barrier", "ds_read", "s_cbranch", "s_branch"}, false);
}

TEST(Faults, UnknownInstruction) {
  DeviceBuffer<int> d(64);
  void* args[] = {&d.ptr};
  hipError_t e = hipLaunchKernel(reinterpret_cast<const void*>(unknown_instruction), dim3(1), dim3(64), args, 0, nullptr);
  check_fault(e, hipErrorLaunchFailure, "unknown_instruction", {"s_sethalt"}, false);
}

TEST(Faults, StreamSynchronizeReportsTheFaultOfItsStream) {
  hipStream_t s;
  HIP_ASSERT(hipStreamCreate(&s));
  DeviceBuffer<int> d(64);
  oob_global_store<<<1, 64, 0, s>>>(d.ptr, 1ll << 30);
  EXPECT_EQ(hipGetLastError(), hipErrorIllegalAddress);
  EXPECT_EQ(hipStreamSynchronize(nullptr), hipSuccess);  // another stream's fault
  EXPECT_EQ(hipStreamSynchronize(s), hipErrorIllegalAddress);
  EXPECT_EQ(hipStreamSynchronize(s), hipSuccess);
  EXPECT_EQ(hipDeviceSynchronize(), hipSuccess);
  EXPECT_EQ(hipGetLastError(), hipErrorIllegalAddress);  // set again by the failing hipStreamSynchronize
  EXPECT_EQ(hipGetLastError(), hipSuccess);
  HIP_ASSERT(hipStreamDestroy(s));
}
