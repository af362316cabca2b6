// Block reductions through __shared__ memory: a tree of partial sums with a __syncthreads() between levels,
// in static and in dynamic (extern __shared__) LDS.
#include <numeric>
#include <vector>

#include "hip_check.h"

constexpr int kBlock = 256;

__global__ void block_sum_static(const int* in, int* out, int n) {
  __shared__ int partial[kBlock];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  partial[tid] = i < n ? in[i] : 0;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (tid < stride) partial[tid] += partial[tid + stride];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = partial[0];
}

// Dynamic LDS sized by the launch; also keeps a max, so two arrays share the dynamic allocation.
__global__ void block_sum_max_dynamic(const int* in, int* sums, int* maxima, int n) {
  extern __shared__ int lds[];
  int* sum = lds;
  int* max = lds + blockDim.x;
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  sum[tid] = i < n ? in[i] : 0;
  max[tid] = i < n ? in[i] : INT_MIN;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (tid < stride) {
      sum[tid] += sum[tid + stride];
      max[tid] = max[tid] > max[tid + stride] ? max[tid] : max[tid + stride];
    }
    __syncthreads();
  }
  if (tid == 0) {
    sums[blockIdx.x] = sum[0];
    maxima[blockIdx.x] = max[0];
  }
}

namespace {

std::vector<int> input(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = (i * 7919) % 1000 - 500;
  return v;
}

}  // namespace

TEST(Reduction, StaticShared) {
  const int n = 5 * kBlock + 77;
  const int blocks = (n + kBlock - 1) / kBlock;
  std::vector<int> in = input(n), out(blocks, 0);
  DeviceBuffer<int> din(n), dout(blocks);
  HIP_ASSERT(hipMemcpy(din.ptr, in.data(), din.bytes(), hipMemcpyHostToDevice));
  block_sum_static<<<blocks, kBlock>>>(din.ptr, dout.ptr, n);
  HIP_ASSERT(hipGetLastError());
  HIP_ASSERT(hipMemcpy(out.data(), dout.ptr, dout.bytes(), hipMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b) {
    int end = std::min(n, (b + 1) * kBlock);
    int expected = std::accumulate(in.begin() + b * kBlock, in.begin() + end, 0);
    EXPECT_EQ(out[b], expected) << "block " << b;
  }
}

TEST(Reduction, DynamicShared) {
  const int block = 128;
  const int n = 7 * block - 3;
  const int blocks = (n + block - 1) / block;
  std::vector<int> in = input(n), sums(blocks), maxima(blocks);
  DeviceBuffer<int> din(n), dsums(blocks), dmax(blocks);
  HIP_ASSERT(hipMemcpy(din.ptr, in.data(), din.bytes(), hipMemcpyHostToDevice));
  block_sum_max_dynamic<<<blocks, block, 2 * block * sizeof(int)>>>(din.ptr, dsums.ptr, dmax.ptr, n);
  HIP_ASSERT(hipGetLastError());
  HIP_ASSERT(hipMemcpy(sums.data(), dsums.ptr, dsums.bytes(), hipMemcpyDeviceToHost));
  HIP_ASSERT(hipMemcpy(maxima.data(), dmax.ptr, dmax.bytes(), hipMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b) {
    auto first = in.begin() + b * block, last = in.begin() + std::min(n, (b + 1) * block);
    EXPECT_EQ(sums[b], std::accumulate(first, last, 0)) << "block " << b;
    EXPECT_EQ(maxima[b], *std::max_element(first, last)) << "block " << b;
  }
}

TEST(Reduction, TooMuchDynamicSharedIsRefused) {
  hipDeviceProp_t props;
  HIP_ASSERT(hipGetDeviceProperties(&props, 0));
  DeviceBuffer<int> d(4);
  block_sum_max_dynamic<<<1, 64, props.sharedMemPerBlock + 4>>>(d.ptr, d.ptr, d.ptr, 1);
  EXPECT_EQ(hipGetLastError(), hipErrorInvalidValue);
  EXPECT_EQ(hipGetLastError(), hipSuccess);
}
