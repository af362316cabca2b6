// Per-lane memory access for vector memory and LDS instructions: address spaces, bounds checks, atomics.
#pragma once
#include <algorithm>
#include <cstdio>

#include "memory/lds_banks.h"
#include "isa/ops.h"

namespace vgpu {

enum class Space : uint8_t { global, flat, scratch };

// s_waitcnt vmcnt(N): every vector memory instruction but the N latest is complete (their LDS DMA writes included).
inline void retire_vmem(Wave& w, uint32_t outstanding) {
  const uint32_t done = w.vm_issued > outstanding ? w.vm_issued - outstanding : 0;
  if (done > w.vm_retired) w.vm_retired = done;
}

// The hazard watch's common case inline: outside race-check mode, an access that meets no block with a load into
// LDS in flight (LdsWatch::spans_over) and, for a load, continues the span its instruction opened, only writes the
// load's marks. Everything else goes to watch_lds.
// A load into LDS's lane whose bytes meet no span in flight: extends the instruction's open span over them and writes
// their marks (what watch_lds does for it).
inline void mark_dma_lane(Wave& w, const Inst& I, uint32_t addr, uint32_t bytes) {
  LdsWatch& x = *w.wg->watch;
  const uint32_t first = addr / 4, last = (addr + bytes - 1) / 4;
  x.open.lo = std::min(x.open.lo, first), x.open.hi = std::max(x.open.hi, last);
  const uint32_t inst = uint32_t(&I - w.ctx->prog->insts.data());
  for (uint32_t d = first; d <= last; ++d) x.dma[d] = {x.serial, w.vm_issued, inst, uint32_t(w.id)};
}

// Whether LDS bytes [lo, hi) meet a block with a load into LDS in flight (LdsWatch::spans_over).
inline bool meets_spans_in_flight(const LdsWatch& x, uint64_t lo, uint64_t hi) {
  for (uint64_t b = lo / 4 / LdsWatch::kBlock; b <= (hi - 1) / 4 / LdsWatch::kBlock; ++b)
    if (x.spans_over[b] != 0) return true;
  return false;
}

inline bool watch_lds_inline(Wave& w, const Inst& I, uint32_t addr, uint32_t bytes, int lane, LdsUse use) {
  Workgroup& wg = *w.wg;
  LdsWatch& x = *wg.watch;
  const bool dma = use == LdsUse::dma;
  if (x.racecheck || !wg.watching_dma || x.saturated || x.open_is_other(uint32_t(w.id), w.insts) ||
      (dma && !x.has_open) || meets_spans_in_flight(x, addr, uint64_t(addr) + bytes))
    return watch_lds(w, I, addr, bytes, lane, use);
  if (dma) mark_dma_lane(w, I, addr, bytes);
  return true;
}

// Host pointer for `bytes` at LDS offset `addr` accessed as `use`, or nullptr after raising an LDS fault (out of
// bounds, or a hazard in race-check mode). Loads into LDS and, once one was issued or with the race check on, every
// access are watched for hazards (lds_watch.h); otherwise this costs one test.
// A read past the allocation returns zeros, as the hardware's LDS range check makes it (compiled code reads a
// neighbour's slot speculatively, e.g. lane 0's index - 1, and discards it); it is warned about once per kernel.
// Writes and atomics there, and every out-of-range access in race-check mode, are faults: they are bugs.
inline uint8_t* lds_ptr(Wave& w, const Inst& I, uint64_t addr, uint32_t bytes, int lane, LdsUse use) {
  if (addr + bytes > w.wg->lds_bytes) {
    if (use == LdsUse::read && !w.ctx->racecheck && bytes <= 16) {
      alignas(16) static const uint8_t zeros[16] = {};
      char why[160];
      std::snprintf(why, sizeof why, "lane %d reads LDS address 0x%llx (%u bytes), past the workgroup's %u-byte "
                    "allocation: it reads 0 as on the hardware", lane, (unsigned long long)addr, bytes,
                    w.wg->lds_bytes);
      warn_hardware_defect(w, I, HardwareDefect::lds_read_out_of_range, why);
      return const_cast<uint8_t*>(zeros);  // read only: LdsUse::read never writes through it
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "LDS address 0x%llx (%u bytes) is past the workgroup's %u-byte allocation",
                  (unsigned long long)addr, bytes, w.wg->lds_bytes);
    w.fault(I, FaultKind::lds_out_of_bounds, lane, buf);
    return nullptr;
  }
  if ((w.wg->watching || use == LdsUse::dma) && !watch_lds_inline(w, I, uint32_t(addr), bytes, lane, use)) [[unlikely]]
    return nullptr;
  return w.wg->lds + addr;
}

// Whether lds_ptr, called for each lane enabled in `exec` with LDS address base[l] + offset and `bytes` (at most 64)
// as a read, write or atomic, would return lds + address for every one of them with no other effect, so that an
// instruction can take its lanes' pointers straight: every address lies inside the allocation and, when the workgroup
// is watched, the race check is off and the hazard filter shows no load into LDS in flight over any of them. Commits
// the open span of an earlier load as the first watched lane would. When false, the caller takes every lane through
// lds_ptr as before, which finds the same faults and hazards in the same order.
inline bool lds_lanes_clear(Wave& w, uint64_t exec, const uint32_t* base, uint64_t offset, uint32_t bytes) {
  const Workgroup& wg = *w.wg;
  uint32_t highest = 0, lowest = ~0u;
  if (exec == ~0ull) {  // a full wave: no per-lane test, so the loop runs in vectors
    for (int l = 0; l < kLanes; ++l) highest = std::max(highest, base[l]), lowest = std::min(lowest, base[l]);
  } else {
    for (int l = 0; l < kLanes; ++l) {
      const bool on = exec >> l & 1;
      highest = std::max(highest, on ? base[l] : 0u), lowest = std::min(lowest, on ? base[l] : ~0u);
    }
  }
  if (uint64_t(highest) + offset + bytes > wg.lds_bytes) return false;
  if (!wg.watching) return true;
  LdsWatch& x = *wg.watch;
  if (x.racecheck || !wg.watching_dma) return false;
  if (x.open_is_other(uint32_t(w.id), w.insts)) commit_open_span(x);
  if (x.saturated) return false;  // (committing may have saturated the filter)
  // No block counted between the lowest and the highest lane's blocks (every counted block lies between the blocks
  // of spans_lo and spans_hi): no lane meets one.
  constexpr uint32_t block_bytes = 4 * LdsWatch::kBlock;
  if (lowest > highest || (highest + offset + bytes - 1) / block_bytes < x.spans_lo / LdsWatch::kBlock ||
      (lowest + offset) / block_bytes > x.spans_hi / LdsWatch::kBlock)
    return true;
  // bytes <= 64 reach at most two blocks of 16 dwords: the first and the last.
  const uint16_t* over = x.spans_over.data();
  uint32_t meets = 0;
  for (int l = 0; l < kLanes; ++l) {
    const bool on = exec >> l & 1;
    const uint32_t a = on ? uint32_t(base[l] + offset) : 0u;  // a disabled lane's address may lie anywhere
    const uint32_t counted = over[a / block_bytes] | over[(a + bytes - 1) / block_bytes];
    meets |= on ? counted : 0u;
  }
  return meets == 0;
}

// For a load into LDS after its first enabled lane went through lds_ptr (which opened its span): whether lds_ptr
// would, for each later lane writing inside LDS bytes [lo, hi), only extend the span and write the lane's marks,
// which mark_dma_lane then does. True when the race check is off, the filter is on and no span in flight meets
// [lo, hi).
inline bool dma_lanes_clear(Wave& w, uint64_t lo, uint64_t hi) {
  const Workgroup& wg = *w.wg;
  const LdsWatch& x = *wg.watch;
  return !x.racecheck && wg.watching_dma && !x.saturated && x.open_is(uint32_t(w.id), w.insts) &&
         !meets_spans_in_flight(x, lo, hi);
}

inline uint8_t* private_ptr(Wave& w, const Inst& I, uint64_t addr, uint32_t bytes, int lane) {
  if (addr + bytes > w.ctx->private_bytes) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "private address 0x%llx (%u bytes) is past the lane's %u-byte private segment",
                  (unsigned long long)addr, bytes, w.ctx->private_bytes);
    w.fault(I, FaultKind::private_out_of_bounds, lane, buf);
    return nullptr;
  }
  return w.priv + size_t(lane) * w.ctx->private_bytes + addr;
}

// Records an LDS access of `bytes` per lane at the given byte addresses for the bank-conflict profile.
inline void profile_lds(Wave& w, const Inst& I, const uint32_t* byte_addr, uint32_t bytes, bool write) {
  const size_t idx = size_t(&I - w.ctx->prog->insts.data());
  alignas(64) uint32_t dwords[kLanes];
  for (int l = 0; l < kLanes; ++l) dwords[l] = byte_addr[l] >> 2;
  const BankModel& m = bank_model(w.ctx->prog->arch, bytes, write);
  w.profile->lds_accesses[idx]++;
  w.profile->lds_conflicts[idx] += conflict_cycles(m, dwords, (bytes + 3) / 4, w.exec());
}

// Resolves a lane's address in `space` to host memory; nullptr after raising the fault that explains why not.
// `use` says how an LDS address (flat) is accessed.
inline uint8_t* lane_ptr(Wave& w, const Inst& I, Space space, uint64_t addr, uint32_t bytes, int lane,
                         LdsUse use) {
  if (space == Space::scratch) return private_ptr(w, I, addr, bytes, lane);
  if (space == Space::flat) {
    const uint32_t hi = uint32_t(addr >> 32);
    if (hi == kSharedApertureHi) return lds_ptr(w, I, uint32_t(addr), bytes, lane, use);
    if (hi == kPrivateApertureHi) return private_ptr(w, I, uint32_t(addr), bytes, lane);
  }
  if (!check_global(w, I, addr, bytes, lane, use == LdsUse::read)) return nullptr;
  return reinterpret_cast<uint8_t*>(addr);
}

// Atomic read-modify-write of a 32- or 64-bit word; returns the old value. Global memory is shared between worker
// threads, so every global atomic is a host atomic.
template <class T, class F>
inline T atomic_rmw(T* p, F f) {
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(p, &old, f(old), true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
  }
  return old;
}

}  // namespace vgpu
