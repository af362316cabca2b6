// Device variables: __constant__ and __device__ globals reached from the host with hipMemcpyToSymbol /
// hipMemcpyFromSymbol / hipGetSymbolAddress, and from kernels through their PC-relative addresses.
#include <hip/hip_runtime.h>

#include <vector>

#include <gtest/gtest.h>

#include "hip_check.h"

__constant__ float coefficients[8];
__device__ int total;
__device__ int initialised = 42;

__global__ void polynomial(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.f;
  for (int k = 7; k >= 0; --k) acc = acc * x[i] + coefficients[k];
  y[i] = acc;
  atomicAdd(&total, initialised);
}

TEST(Symbols, ConstantTableAndCounter) {
  const float c[8] = {1.f, -0.5f, 0.25f, 2.f, 0.f, -1.f, 0.125f, 3.f};
  ASSERT_EQ(hipMemcpyToSymbol(HIP_SYMBOL(coefficients), c, sizeof c), hipSuccess);
  const int zero = 0;
  ASSERT_EQ(hipMemcpyToSymbol(HIP_SYMBOL(total), &zero, sizeof zero), hipSuccess);
  size_t size = 0;
  ASSERT_EQ(hipGetSymbolSize(&size, HIP_SYMBOL(coefficients)), hipSuccess);
  EXPECT_EQ(size, sizeof c);
  void* address = nullptr;
  ASSERT_EQ(hipGetSymbolAddress(&address, HIP_SYMBOL(total)), hipSuccess);
  EXPECT_NE(address, nullptr);

  const int n = 300;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = float(i % 17) * 0.125f - 1.f;
  float *dx, *dy;
  ASSERT_EQ(hipMalloc(&dx, n * 4), hipSuccess);
  ASSERT_EQ(hipMalloc(&dy, n * 4), hipSuccess);
  ASSERT_EQ(hipMemcpy(dx, x.data(), n * 4, hipMemcpyHostToDevice), hipSuccess);
  polynomial<<<(n + 127) / 128, 128>>>(dx, dy, n);
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  ASSERT_EQ(hipMemcpy(y.data(), dy, n * 4, hipMemcpyDeviceToHost), hipSuccess);
  for (int i = 0; i < n; ++i) {
    float acc = 0.f;
    for (int k = 7; k >= 0; --k) acc = std::fma(acc, x[i], c[k]);  // the device contracts to fma
    EXPECT_NEAR(y[i], acc, 1e-5f) << i;
  }
  int got = 0;
  ASSERT_EQ(hipMemcpyFromSymbol(&got, HIP_SYMBOL(total), sizeof got), hipSuccess);
  EXPECT_EQ(got, 42 * n);
  // A copy past the variable's end is refused.
  float big[16] = {};
  EXPECT_EQ(hipMemcpyToSymbol(HIP_SYMBOL(coefficients), big, sizeof big), hipErrorInvalidValue);
  EXPECT_EQ(hipGetLastError(), hipErrorInvalidValue);
  hipFree(dx);
  hipFree(dy);
}
