// Synchronisation and scheduling: barriers, compiler scheduling fences, wave priority, and the chiplet-aware
// workgroup order.
#pragma once
#include "../arch.h"

namespace hk {

__device__ inline void barrier() { __syncthreads(); }
// Keep the compiler from moving instructions across this point (mask 0: nothing may cross).
__device__ inline void sched_barrier() { __builtin_amdgcn_sched_barrier(0); }
template <int Priority>
__device__ inline void set_priority() { __builtin_amdgcn_s_setprio(Priority); }

// Workgroups are dealt to the XCDs round-robin (id mod xcds). Remapping ids so that each XCD gets a contiguous run
// keeps neighbouring output tiles on one XCD's L2. Returns the logical block id for hardware id `id` of `count`.
__host__ __device__ inline int xcd_remap(int id, int count, int xcds = arch::current::xcds) {
  const int per_xcd = count / xcds, rem = count % xcds;
  const int xcd = id % xcds, slot = id / xcds;
  // XCDs below `rem` hold one extra block.
  return xcd * per_xcd + (xcd < rem ? xcd : rem) + slot;
}

}  // namespace hk
