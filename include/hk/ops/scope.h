// The scope of an operation is a type: wave (one wave64) or group<N> (N waves of a workgroup cooperating).
#pragma once
#include <hip/hip_runtime.h>

namespace hk {

__device__ inline int lane_id() { return int(threadIdx.x % 64); }
__device__ inline int wave_id() { return int(threadIdx.x / 64); }
// The lane index read anew from the hardware (v_mbcnt), opaque to the compiler: what is derived from it is made where
// it is used. For the code after a loop, whose lane arithmetic the compiler would otherwise share with the code
// before the loop and hold in registers through it.
__device__ inline int lane_id_anew() {
  int lane;
  asm volatile("v_mbcnt_lo_u32_b32 %0, -1, 0\n\tv_mbcnt_hi_u32_b32 %0, -1, %0" : "=v"(lane));
  return lane;
}
// Where an op takes its lane index from (its `Lane` template argument): lane_id(), or lane_id_anew (lane_anew: an
// epilogue's transpose and store after a loop at the register limit).
struct lane_of_thread {
  __device__ int operator()() const { return lane_id(); }
};
struct lane_anew {
  __device__ int operator()() const { return lane_id_anew(); }
};

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
