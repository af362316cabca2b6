// The scope of an operation is a type: wave (one wave64) or group<N> (N waves of a workgroup cooperating).
#pragma once
#include <hip/hip_runtime.h>

namespace hk {

__device__ inline int lane_id() { return int(threadIdx.x % 64); }
__device__ inline int wave_id() { return int(threadIdx.x / 64); }

template <int N>
struct group {
  static constexpr int waves = N;
  static constexpr int threads = 64 * N;
  // Index of this thread within the group (groups are consecutive runs of N waves in the workgroup).
  __device__ static int thread() { return int(threadIdx.x) % threads; }
  __device__ static int wave() { return wave_id() % N; }
};

using wave = group<1>;

}  // namespace hk
