// A private array indexed with run-time values: too large to live in registers, so the compiler places it in
// scratch (the private segment), one copy per work-item.
#include <vector>

#include "hip_check.h"

constexpr int kPrivate = 256;

__global__ void private_table(const int* seeds, const int* picks, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int table[kPrivate];
  int seed = seeds[i];
  for (int k = 0; k < kPrivate; ++k) table[k] = seed * (k + 1) ^ k;
  // Scatter with a data-dependent index too, so the stores also go through scratch.
  int p = picks[i];
  table[(p * 3) % kPrivate] += 1000;
  int sum = 0;
  for (int k = 0; k < 4; ++k) sum += table[(p + k * 61) % kPrivate];
  out[i] = sum;
}

namespace {

int expected(int seed, int p) {
  int table[kPrivate];
  for (int k = 0; k < kPrivate; ++k) table[k] = seed * (k + 1) ^ k;
  table[(p * 3) % kPrivate] += 1000;
  int sum = 0;
  for (int k = 0; k < 4; ++k) sum += table[(p + k * 61) % kPrivate];
  return sum;
}

}  // namespace

TEST(Scratch, KernelUsesPrivateSegment) {
  hipFuncAttributes attr;
  HIP_ASSERT(hipFuncGetAttributes(&attr, reinterpret_cast<const void*>(private_table)));
  EXPECT_GE(attr.localSizeBytes, kPrivate * sizeof(int));
}

TEST(Scratch, DynamicallyIndexedPrivateArray) {
  const int n = 600;
  std::vector<int> seeds(n), picks(n), out(n, 0);
  for (int i = 0; i < n; ++i) seeds[i] = i * 13 + 5, picks[i] = (i * 97) % 1000;
  DeviceBuffer<int> dseeds(n), dpicks(n), dout(n);
  HIP_ASSERT(hipMemcpy(dseeds.ptr, seeds.data(), dseeds.bytes(), hipMemcpyHostToDevice));
  HIP_ASSERT(hipMemcpy(dpicks.ptr, picks.data(), dpicks.bytes(), hipMemcpyHostToDevice));
  private_table<<<(n + 127) / 128, 128>>>(dseeds.ptr, dpicks.ptr, dout.ptr, n);
  HIP_ASSERT(hipGetLastError());
  HIP_ASSERT(hipMemcpy(out.data(), dout.ptr, dout.bytes(), hipMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], expected(seeds[i], picks[i])) << "work-item " << i;
}
