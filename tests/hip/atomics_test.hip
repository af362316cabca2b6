// Atomics on global memory (int and float add, max, compare-and-swap) and on LDS, with many work-items of
// several workgroups contending for the same words.
#include <algorithm>
#include <vector>

#include "hip_check.h"

__global__ void global_atomics(int* counter, float* fsum, int* maximum, const int* values, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  atomicAdd(counter, 1);
  atomicAdd(fsum, 0.5f);
  atomicMax(maximum, values[i]);
}

// An increment built from compare-and-swap, the way lock-free updates are written.
__global__ void cas_increment(int* counter, int* attempts) {
  int old = *counter, seen;
  int tries = 0;
  do {
    seen = old;
    old = atomicCAS(counter, seen, seen + 1);
    ++tries;
  } while (old != seen);
  atomicAdd(attempts, tries);
}

// A 16-bin histogram kept in LDS with LDS atomics, then merged into global memory.
__global__ void lds_histogram(const int* values, int n, int* bins) {
  __shared__ int local[16];
  if (threadIdx.x < 16) local[threadIdx.x] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&local[values[i] & 15], 1);
  __syncthreads();
  if (threadIdx.x < 16) atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

// LDS max and exchange: every lane proposes its id; the largest wins; atomicExch hands out unique tickets.
__global__ void lds_max_exch(int* result_max, int* tickets) {
  __shared__ int best;
  __shared__ int ticket;
  if (threadIdx.x == 0) best = -1, ticket = 0;
  __syncthreads();
  atomicMax(&best, int((threadIdx.x * 37) % blockDim.x));
  int mine = atomicAdd(&ticket, 1);
  __syncthreads();
  if (threadIdx.x == 0) *result_max = best;
  tickets[mine] = threadIdx.x + 1;
}

TEST(Atomics, GlobalAddMax) {
  const int n = 3000;
  std::vector<int> values(n);
  for (int i = 0; i < n; ++i) values[i] = (i * 7919) % 10007;
  DeviceBuffer<int> counter(1), maximum(1), dvalues(n);
  DeviceBuffer<float> fsum(1);
  HIP_ASSERT(hipMemset(counter.ptr, 0, sizeof(int)));
  HIP_ASSERT(hipMemset(fsum.ptr, 0, sizeof(float)));
  HIP_ASSERT(hipMemsetD32(maximum.ptr, -1, 1));
  HIP_ASSERT(hipMemcpy(dvalues.ptr, values.data(), dvalues.bytes(), hipMemcpyHostToDevice));
  global_atomics<<<(n + 255) / 256, 256>>>(counter.ptr, fsum.ptr, maximum.ptr, dvalues.ptr, n);
  HIP_ASSERT(hipGetLastError());
  int c = 0, m = 0;
  float f = 0;
  HIP_ASSERT(hipMemcpy(&c, counter.ptr, sizeof c, hipMemcpyDeviceToHost));
  HIP_ASSERT(hipMemcpy(&f, fsum.ptr, sizeof f, hipMemcpyDeviceToHost));
  HIP_ASSERT(hipMemcpy(&m, maximum.ptr, sizeof m, hipMemcpyDeviceToHost));
  EXPECT_EQ(c, n);
  EXPECT_EQ(f, 0.5f * n);  // exact: every partial sum is a multiple of 0.5 below 2^23
  EXPECT_EQ(m, *std::max_element(values.begin(), values.end()));
}

TEST(Atomics, CompareAndSwapIncrement) {
  const int blocks = 4, block = 192;
  DeviceBuffer<int> counter(1), attempts(1);
  HIP_ASSERT(hipMemset(counter.ptr, 0, sizeof(int)));
  HIP_ASSERT(hipMemset(attempts.ptr, 0, sizeof(int)));
  cas_increment<<<blocks, block>>>(counter.ptr, attempts.ptr);
  HIP_ASSERT(hipGetLastError());
  int c = 0, a = 0;
  HIP_ASSERT(hipMemcpy(&c, counter.ptr, sizeof c, hipMemcpyDeviceToHost));
  HIP_ASSERT(hipMemcpy(&a, attempts.ptr, sizeof a, hipMemcpyDeviceToHost));
  EXPECT_EQ(c, blocks * block);
  EXPECT_GE(a, blocks * block);  // every work-item succeeded once, some after retries
}

TEST(Atomics, LdsHistogram) {
  const int n = 5000;
  std::vector<int> values(n), expected(16, 0), bins(16);
  for (int i = 0; i < n; ++i) values[i] = (i * 31 + i / 7) % 1000, ++expected[values[i] & 15];
  DeviceBuffer<int> dvalues(n), dbins(16);
  HIP_ASSERT(hipMemcpy(dvalues.ptr, values.data(), dvalues.bytes(), hipMemcpyHostToDevice));
  HIP_ASSERT(hipMemset(dbins.ptr, 0, dbins.bytes()));
  lds_histogram<<<3, 256>>>(dvalues.ptr, n, dbins.ptr);
  HIP_ASSERT(hipGetLastError());
  HIP_ASSERT(hipMemcpy(bins.data(), dbins.ptr, dbins.bytes(), hipMemcpyDeviceToHost));
  EXPECT_EQ(bins, expected);
}

TEST(Atomics, LdsMaxAndTickets) {
  const int block = 256;
  DeviceBuffer<int> dmax(1), dtickets(block);
  HIP_ASSERT(hipMemset(dtickets.ptr, 0, dtickets.bytes()));
  lds_max_exch<<<1, block>>>(dmax.ptr, dtickets.ptr);
  HIP_ASSERT(hipGetLastError());
  int m = 0;
  std::vector<int> tickets(block);
  HIP_ASSERT(hipMemcpy(&m, dmax.ptr, sizeof m, hipMemcpyDeviceToHost));
  HIP_ASSERT(hipMemcpy(tickets.data(), dtickets.ptr, dtickets.bytes(), hipMemcpyDeviceToHost));
  EXPECT_EQ(m, block - 1);
  // Every ticket was handed out exactly once: the holders are a permutation of the work-items.
  std::sort(tickets.begin(), tickets.end());
  for (int i = 0; i < block; ++i) ASSERT_EQ(tickets[i], i + 1);
}
