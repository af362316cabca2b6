// Vector addition with a ragged tail: n is not a multiple of the block, so the last block has idle work-items
// that must not write.
#include <vector>

#include "hip_check.h"

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

namespace {

void run(int n, int block) {
  SCOPED_TRACE("n=" + std::to_string(n) + " block=" + std::to_string(block));
  const int slack = 64;  // elements past n that must stay untouched
  std::vector<float> a(n), b(n), c(n + slack, -1.0f);
  for (int i = 0; i < n; ++i) {
    a[i] = float(i) * 0.5f;
    b[i] = float(3 * i + 1);
  }
  DeviceBuffer<float> da(n), db(n), dc(n + slack);
  ASSERT_TRUE(da.ptr && db.ptr && dc.ptr);
  HIP_ASSERT(hipMemcpy(da.ptr, a.data(), da.bytes(), hipMemcpyHostToDevice));
  HIP_ASSERT(hipMemcpy(db.ptr, b.data(), db.bytes(), hipMemcpyHostToDevice));
  HIP_ASSERT(hipMemcpy(dc.ptr, c.data(), dc.bytes(), hipMemcpyHostToDevice));

  int grid = (n + block - 1) / block;
  vector_add<<<grid, block>>>(da.ptr, db.ptr, dc.ptr, n);
  HIP_ASSERT(hipGetLastError());
  HIP_ASSERT(hipDeviceSynchronize());
  HIP_ASSERT(hipMemcpy(c.data(), dc.ptr, dc.bytes(), hipMemcpyDeviceToHost));

  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << "element " << i;
  for (int i = n; i < n + slack; ++i) ASSERT_EQ(c[i], -1.0f) << "element " << i << " past the end was written";
}

}  // namespace

TEST(VectorAdd, RaggedTail) { run(1000, 256); }
TEST(VectorAdd, OneElement) { run(1, 64); }
TEST(VectorAdd, OnePastABlock) { run(257, 128); }
TEST(VectorAdd, PartialWave) { run(100, 96); }  // a block of one and a half waves

TEST(VectorAdd, LaunchThroughHipLaunchKernel) {
  const int n = 300;
  std::vector<float> a(n, 1.25f), b(n, 2.0f), c(n, 0.0f);
  DeviceBuffer<float> da(n), db(n), dc(n);
  HIP_ASSERT(hipMemcpy(da.ptr, a.data(), da.bytes(), hipMemcpyHostToDevice));
  HIP_ASSERT(hipMemcpy(db.ptr, b.data(), db.bytes(), hipMemcpyHostToDevice));
  int count = n;
  void* args[] = {&da.ptr, &db.ptr, &dc.ptr, &count};
  HIP_ASSERT(hipLaunchKernel(reinterpret_cast<const void*>(vector_add), dim3(3), dim3(128), args, 0, nullptr));
  HIP_ASSERT(hipMemcpy(c.data(), dc.ptr, dc.bytes(), hipMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], 3.25f) << "element " << i;
}

TEST(VectorAdd, LaunchThroughHipLaunchKernelGGL) {
  const int n = 130;
  std::vector<float> a(n), b(n), c(n);
  for (int i = 0; i < n; ++i) a[i] = float(i), b[i] = float(-2 * i);
  DeviceBuffer<float> da(n), db(n), dc(n);
  HIP_ASSERT(hipMemcpy(da.ptr, a.data(), da.bytes(), hipMemcpyHostToDevice));
  HIP_ASSERT(hipMemcpy(db.ptr, b.data(), db.bytes(), hipMemcpyHostToDevice));
  hipLaunchKernelGGL(vector_add, dim3(2), dim3(128), 0, 0, da.ptr, db.ptr, dc.ptr, n);
  HIP_ASSERT(hipGetLastError());
  HIP_ASSERT(hipMemcpy(c.data(), dc.ptr, dc.bytes(), hipMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], float(-i)) << "element " << i;
}
