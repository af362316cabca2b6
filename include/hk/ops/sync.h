// Synchronisation and scheduling: barriers, compiler scheduling fences, wave priority, and the chiplet-aware
// workgroup order.
#pragma once
#include <utility>

#include "../arch.h"

namespace hk {

__device__ inline void barrier() { __syncthreads(); }
// Keep the compiler from moving instructions across this point (mask 0: nothing may cross).
__device__ inline void sched_barrier() { __builtin_amdgcn_sched_barrier(0); }
template <int Priority>
__device__ inline void set_priority() { __builtin_amdgcn_s_setprio(Priority); }

// Orders the LDS accesses of one wave around this point, for data passed between lanes through shared memory (a
// wave's LDS operations complete in issue order, so no s_waitcnt or s_barrier is needed, only that the compiler keep
// the order).
__device__ inline void wave_barrier() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}

// Instruction classes of the scheduling barriers (LLVM's masks for llvm.amdgcn.sched_barrier / sched_group_barrier).
enum class sched : int {
  none = 0, alu = 0x1, valu = 0x2, salu = 0x4, mfma = 0x8, vmem = 0x10, vmem_read = 0x20, vmem_write = 0x40,
  ds = 0x80, ds_read = 0x100, ds_write = 0x200, transcendental = 0x400,
};
__host__ __device__ constexpr sched operator|(sched a, sched b) { return sched(int(a) | int(b)); }

// sched_barrier<Allow>(): only instructions of the classes in Allow may be moved across this point.
template <sched Allow>
__device__ inline void sched_barrier() { __builtin_amdgcn_sched_barrier(int(Allow)); }

// A scheduling group: the scheduler places Count instructions of class Mask here, in the order of the calls with the
// same SyncId (e.g. one mfma, then two ds_read, then one mfma ... to interleave a tile's reads with its multiplies).
template <sched Mask, int Count, int SyncId = 0>
__device__ inline void sched_group_barrier() {
  static_assert(Count > 0, "sched_group_barrier: the group must hold at least one instruction");
  static_assert(Mask != sched::none, "sched_group_barrier: name the instruction classes of the group");
  __builtin_amdgcn_sched_group_barrier(int(Mask), Count, SyncId);
}

// Pairs scheduling groups: one MFMA, then Count instructions of class Other (VALU by default), Pairs times — a
// block's independent vector work (a softmax, a rescale) placed in the shadow of its multiplies.
template <int Pairs, int Count, sched Other = sched::valu, int SyncId = 0>
__device__ inline void interleave_mfma() {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    ((sched_group_barrier<sched::mfma, 1, SyncId>(), sched_group_barrier<Other, Count + 0 * I, SyncId>()), ...);
  }(std::make_integer_sequence<int, Pairs>{});
}

// Explicit waits (s_waitcnt): until at most N vector-memory loads/stores (vmcnt) or N LDS/scalar-memory/message
// operations (lgkmcnt) of this wave are outstanding. The immediate's encoding comes from the arch layer.
template <int N>
__device__ inline void wait_vmcnt() {
  static_assert(0 <= N && N <= arch::current::vmcnt_max, "wait_vmcnt: vmcnt is 0..63 on gfx942/gfx950");
  __builtin_amdgcn_s_waitcnt(arch::current::waitcnt(N, arch::current::expcnt_max, arch::current::lgkmcnt_max));
}
template <int N>
__device__ inline void wait_lgkmcnt() {
  static_assert(0 <= N && N <= arch::current::lgkmcnt_max, "wait_lgkmcnt: lgkmcnt is 0..15 on gfx942/gfx950");
  __builtin_amdgcn_s_waitcnt(arch::current::waitcnt(arch::current::vmcnt_max, arch::current::expcnt_max, N));
}
template <int VM, int LGKM>
__device__ inline void wait_counts() {
  static_assert(0 <= VM && VM <= arch::current::vmcnt_max && 0 <= LGKM && LGKM <= arch::current::lgkmcnt_max,
                "wait_counts: vmcnt is 0..63 and lgkmcnt 0..15 on gfx942/gfx950");
  __builtin_amdgcn_s_waitcnt(arch::current::waitcnt(VM, arch::current::expcnt_max, LGKM));
}

// Workgroups are dealt to the XCDs round-robin (id mod xcds). Remapping ids so that each XCD gets a contiguous run
// keeps neighbouring output tiles on one XCD's L2. Returns the logical block id for hardware id `id` of `count`.
__host__ __device__ inline int xcd_remap(int id, int count, int xcds = arch::current::xcds) {
  const int per_xcd = count / xcds, rem = count % xcds;
  const int xcd = id % xcds, slot = id / xcds;
  // XCDs below `rem` hold one extra block.
  return xcd * per_xcd + (xcd < rem ? xcd : rem) + slot;
}

}  // namespace hk
