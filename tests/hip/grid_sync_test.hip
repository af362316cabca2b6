// Workgroups that wait on each other: a grid barrier and a chain of flags set from the last workgroup down, which
// need the workgroups resident at once, as hardware runs them. vgpu keeps the workgroups of such a dispatch in flight
// together; a grid barrier wider than the device holds at once can never open, and the dispatch says so.
#include <cstdlib>
#include <string>
#include <vector>

#include "hip_check.h"

namespace {

// Blocks `blocks` workgroups until all arrive: the last to arrive resets the count and advances the generation the
// others spin on (a plain reload loop, no s_sleep: what hipCUB's GridBarrier does).
__device__ void grid_barrier(unsigned* count, unsigned* generation, unsigned blocks) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned gen = __hip_atomic_load(generation, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT);
    if (atomicAdd(count, 1u) == blocks - 1) {
      __hip_atomic_store(count, 0u, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
      __hip_atomic_store(generation, gen + 1, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);
    } else {
      while (__hip_atomic_load(generation, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT) == gen) {
      }
    }
  }
  __syncthreads();
}

// Each round, work-item i of the grid reads its right neighbour's value (another workgroup's, for the first work-item
// of a block) from the previous round: every round needs every workgroup's previous round done.
__global__ void rotate_rounds(unsigned* a, unsigned* b, unsigned* count, unsigned* generation, int rounds) {
  const unsigned n = gridDim.x * blockDim.x, i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int r = 0; r < rounds; ++r) {
    b[i] = a[(i + 1) % n] * 3u + i + unsigned(r);
    grid_barrier(count, generation, gridDim.x);
    unsigned* t = a;
    a = b, b = t;
  }
}

// Workgroup g waits (with s_sleep) for workgroup g + 1's flag, then sets its own: the last workgroup goes first.
__global__ void countdown_chain(unsigned* flags, unsigned* values) {
  const unsigned g = blockIdx.x, last = gridDim.x - 1;
  if (threadIdx.x == 0) {
    unsigned before = 0;
    if (g != last) {
      while (__hip_atomic_load(&flags[g + 1], __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT) == 0)
        __builtin_amdgcn_s_sleep(2);
      before = values[g + 1];
    }
    values[g] = before * 7u + g + 1;
    __hip_atomic_store(&flags[g], 1u, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);
  }
}

// A grid barrier in workgroups that each take all of a CU's LDS: one resident per CU.
__global__ void barrier_with_all_lds(unsigned* count, unsigned* generation, unsigned* out) {
  extern __shared__ unsigned lds[];
  lds[threadIdx.x] = threadIdx.x;
  grid_barrier(count, generation, gridDim.x);
  if (threadIdx.x == 0) out[blockIdx.x] = lds[63] + blockIdx.x;
}

int compute_units() {
  int cus = 0;
  EXPECT_EQ(hipDeviceGetAttribute(&cus, hipDeviceAttributeMultiprocessorCount, 0), hipSuccess);
  return cus;
}

}  // namespace

TEST(GridSync, GridBarrierAcrossResidentWorkgroups) {
  // As many workgroups as the device holds at once, as hipCUB's GridBarrier test launches.
  const int block = 256;
  int per_cu = 0;
  HIP_ASSERT(hipOccupancyMaxActiveBlocksPerMultiprocessor(&per_cu, rotate_rounds, block, 0));
  ASSERT_GT(per_cu, 0);
  const int blocks = per_cu * compute_units(), rounds = 3;
  const size_t n = size_t(blocks) * block;
  std::vector<unsigned> a(n);
  for (size_t i = 0; i < n; ++i) a[i] = unsigned(i * 2654435761u);
  DeviceBuffer<unsigned> da(n), db(n), sync(2);
  HIP_ASSERT(hipMemcpy(da.ptr, a.data(), da.bytes(), hipMemcpyHostToDevice));
  HIP_ASSERT(hipMemset(sync.ptr, 0, sync.bytes()));
  rotate_rounds<<<blocks, block>>>(da.ptr, db.ptr, sync.ptr, sync.ptr + 1, rounds);
  HIP_ASSERT(hipDeviceSynchronize());

  std::vector<unsigned> b(n);
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < n; ++i) b[i] = a[(i + 1) % n] * 3u + unsigned(i) + unsigned(r);
    a.swap(b);
  }
  std::vector<unsigned> got(n);
  // After an odd number of rounds the last round wrote db.
  HIP_ASSERT(hipMemcpy(got.data(), rounds % 2 ? db.ptr : da.ptr, db.bytes(), hipMemcpyDeviceToHost));
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], a[i]) << "work-item " << i;
  unsigned generation = 0;
  HIP_ASSERT(hipMemcpy(&generation, sync.ptr + 1, 4, hipMemcpyDeviceToHost));
  EXPECT_EQ(generation, unsigned(rounds));
}

TEST(GridSync, FlagsSetByLaterWorkgroups) {
  const int blocks = 64;
  DeviceBuffer<unsigned> flags(blocks), values(blocks);
  HIP_ASSERT(hipMemset(flags.ptr, 0, flags.bytes()));
  countdown_chain<<<blocks, 64>>>(flags.ptr, values.ptr);
  HIP_ASSERT(hipDeviceSynchronize());
  std::vector<unsigned> got(blocks);
  HIP_ASSERT(hipMemcpy(got.data(), values.ptr, values.bytes(), hipMemcpyDeviceToHost));
  unsigned before = 0;
  for (int g = blocks - 1; g >= 0; --g) {
    before = before * 7u + unsigned(g) + 1;
    ASSERT_EQ(got[g], before) << "workgroup " << g;
  }
}

TEST(GridSync, BarrierWiderThanTheDeviceIsADeadlock) {
  int lds = 0;
  HIP_ASSERT(hipDeviceGetAttribute(&lds, hipDeviceAttributeMaxSharedMemoryPerBlock, 0));
  HIP_ASSERT(hipFuncSetAttribute(reinterpret_cast<const void*>(barrier_with_all_lds),
                                 hipFuncAttributeMaxDynamicSharedMemorySize, lds));
  int per_cu = 0;
  HIP_ASSERT(hipOccupancyMaxActiveBlocksPerMultiprocessor(&per_cu, barrier_with_all_lds, 64, size_t(lds)));
  ASSERT_EQ(per_cu, 1);
  // One workgroup more than the device holds: the resident ones wait for it, and it waits for a free CU.
  const int blocks = compute_units() + 1;
  DeviceBuffer<unsigned> sync(2), out(blocks);
  HIP_ASSERT(hipMemset(sync.ptr, 0, sync.bytes()));
  setenv("HK_VGPU_BARRIER_WATCHDOG", "4096", 1);  // a short watchdog: the test need not wait long
  barrier_with_all_lds<<<blocks, 64, size_t(lds)>>>(sync.ptr, sync.ptr + 1, out.ptr);
  const hipError_t launched = hipDeviceSynchronize();
  unsetenv("HK_VGPU_BARRIER_WATCHDOG");
  EXPECT_EQ(launched, hipErrorLaunchTimeOut) << hipGetErrorName(launched);
  const std::string text = hipGetErrorString(launched);
  for (const char* part : {"workgroup deadlock", "barrier_with_all_lds", " pc 0x", "resident at once"})
    EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
  (void)hipGetLastError();

  // The device carries on: the same kernel over the workgroups it holds completes.
  HIP_ASSERT(hipMemset(sync.ptr, 0, sync.bytes()));
  barrier_with_all_lds<<<blocks - 1, 64, size_t(lds)>>>(sync.ptr, sync.ptr + 1, out.ptr);
  HIP_ASSERT(hipDeviceSynchronize());
  std::vector<unsigned> got(blocks - 1);
  HIP_ASSERT(hipMemcpy(got.data(), out.ptr, got.size() * 4, hipMemcpyDeviceToHost));
  for (size_t g = 0; g < got.size(); ++g) ASSERT_EQ(got[g], 63u + unsigned(g));
}
