// Execution state: a dispatch, its workgroups and their wave64 waves.
#pragma once
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "host/hostcall.h"
#include "memory/lds_watch.h"
#include "timing/profile.h"
#include "program.h"
#include "vgpu/device.h"

namespace vgpu {

inline constexpr int kLanes = 64;
// The shader clock's substitute when no timing model runs: a wave64 instruction occupies its SIMD for 4 cycles.
inline constexpr uint64_t kCyclesPerInstruction = 4;
// Flat-address apertures (high 32 bits of a 64-bit address). Host user addresses stay below 2^47.
inline constexpr uint32_t kSharedApertureHi = 0x10000, kPrivateApertureHi = 0x20000;
// The private segment buffer (gfx90a's MUBUF scratch): the base of the V# vgpu hands a kernel that asks for one. Above
// every host user address and 2^40 wide; buffer accesses through it reach the lanes' private memory (exec_mubuf.cpp).
inline constexpr uint64_t kPrivateBufferBase = 0xff0000000000ull, kPrivateBufferSpan = 1ull << 40;
// Its V# words: that base, SWIZZLE_ENABLE (bit 63), every record in range; dword 3 with ADD_TID_ENABLE (bit 23), index
// stride 64 (bits 22:21 = 3), element size 4 (bits 20:19 = 1) and a 32-bit data format, as the hardware's own is.
inline constexpr uint32_t kPrivateBufferRsrc[4] = {uint32_t(kPrivateBufferBase), uint32_t(kPrivateBufferBase >> 32) |
                                                   0x80000000u, 0xffffffffu, 1u << 23 | 3u << 21 | 1u << 19 | 4u << 15};

// State shared by every workgroup of one dispatch.
struct DispatchCtx {
  const Program* prog = nullptr;
  MemoryMap* memory = nullptr;
  const ArchInfo* arch = nullptr;
  const ProductInfo* product = nullptr;
  uint64_t clock_base = 0;       // s_memtime at the dispatch's start (see exec_smem.cpp)
  LaunchParams launch;
  uint64_t kernarg_addr = 0;
  uint64_t code_base = 0;        // device address of the kernel's first instruction (image base + entry)
  uint64_t dispatch_packet_addr = 0;
  uint32_t lds_bytes = 0;        // static + dynamic LDS of each workgroup
  uint32_t private_bytes = 0;    // scratch bytes per lane
  uint64_t watchdog = 0;         // instruction budget per wave while others wait at a barrier
  uint64_t instruction_limit = 0;  // instructions a wave may run (HK_VGPU_INSTRUCTION_LIMIT); 0: no limit
  HostcallBuffer* hostcall = nullptr;  // set when the kernel takes a hostcall buffer (printf)
  std::atomic<bool> faulted{false};
  std::mutex fault_mu;
  Fault fault;
  std::atomic<uint64_t> instructions{0};
  // LDS hazards (lds_watch.h): counted; in race-check mode the first one faults, otherwise a few are printed.
  bool racecheck = false;
  std::atomic<uint64_t> lds_dma_hazards{0}, lds_races{0};
  std::mutex warn_mu;
  std::vector<std::pair<uint32_t, uint32_t>> warned;  // (instruction, load instruction) pairs already printed
  bool profiling = false;
  std::mutex profile_mu;
  Profile profile;  // the sum over workers
};

struct Workgroup;
struct WorkgroupTrace;


enum class WaveState : uint8_t { running, barrier, done, faulted };

struct alignas(64) Wave {
  uint32_t s[sreg::count] = {};  // scalar registers in hardware encoding (see sreg)
  bool scc = false;
  WaveState state = WaveState::running;
  int32_t pc = 0;                // instruction index into Program::insts
  int id = 0;                    // wave index within the workgroup
  uint32_t (*v)[kLanes] = nullptr;  // unified VGPR file, v[register][lane]
  uint8_t* priv = nullptr;       // private memory, lane l at priv + l * private_bytes
  Workgroup* wg = nullptr;
  DispatchCtx* ctx = nullptr;
  uint64_t insts = 0;            // instructions executed by this wave (kept current: s_memtime reads it)
  bool gpr_idx_on = false;       // MODE.gpr_idx_en (s_set_gpr_idx_on/off): M0 indexes VALU operands
  // The global allocations the wave touched last ([mem_lo, mem_hi)) and before that: a GEMM's loads alternate
  // between two (A and B), and each miss is a locked lookup in the memory map.
  uint64_t mem_lo = 0, mem_hi = 0, prev_mem_lo = 0, prev_mem_hi = 0;
  // vmcnt: vector memory instructions issued so far, and how many of them the wave's s_waitcnt has completed (at the
  // last barrier's opening, for other waves). Loads straight into LDS write it at issue; until they are completed,
  // other accesses to those bytes are hazards (lds_watch.h).
  uint32_t vm_issued = 0, vm_retired = 0, vm_retired_at_barrier = 0;
  uint64_t hazard_at = ~uint64_t(0);  // `insts` when this wave last reported a hazard: one report per instruction
  Profile* profile = nullptr;       // set when the dispatch is profiled (and while the timing model records)
  WorkgroupTrace* trace = nullptr;  // set while the timing model records this wave's workgroup (timing/trace.h)

  uint64_t exec() const { return s64(sreg::exec); }
  void set_exec(uint64_t e) { set_s64(sreg::exec, e); }
  uint64_t vcc() const { return s64(sreg::vcc); }
  void set_vcc(uint64_t m) { set_s64(sreg::vcc, m); }
  uint64_t s64(uint16_t r) const { return uint64_t(s[r]) | uint64_t(s[r + 1]) << 32; }
  void set_s64(uint16_t r, uint64_t x) { s[r] = uint32_t(x); s[r + 1] = uint32_t(x >> 32); }

  // Whether [lo, hi) lies in the allocation before the last one; if so, that one becomes the last.
  bool use_prev_allocation(uint64_t lo, uint64_t hi) {
    if (!(lo >= prev_mem_lo && hi <= prev_mem_hi && hi >= lo)) return false;
    std::swap(mem_lo, prev_mem_lo), std::swap(mem_hi, prev_mem_hi);
    return true;
  }

  // Records a fault (the first one of the dispatch wins) and stops this wave.
  void fault(const Inst& at, FaultKind kind, int lane, std::string detail);
};

// The fault this wave would raise at `at` (what Wave::fault records; warnings print its message).
Fault describe_fault(const Wave& w, const Inst& at, FaultKind kind, int lane, std::string detail);

// Prints a warning about `defect` at `at`, the first time the kernel meets it (fault.cpp).
void warn_hardware_defect(const Wave& w, const Inst& at, HardwareDefect defect, const std::string& why);

struct Workgroup {
  uint32_t id[3] = {0, 0, 0};
  Wave* waves = nullptr;
  LdsWatch* watch = nullptr;
  bool watching = false;      // race check on, or a load into LDS issued: LDS accesses go through watch_lds
  bool watching_dma = false;  // a load into LDS issued: LdsWatch::dma is sized and its marks count
  uint64_t linear = 0;  // x fastest: what places the workgroup on an XCD and CU
  uint8_t* lds = nullptr;
  uint32_t lds_bytes = 0;
  DispatchCtx* ctx = nullptr;
};

// Scalar operand reads (32 and 64 bits).
inline uint32_t read_s32(const Wave& w, const Operand& o) {
  switch (o.kind) {
    case OpKind::sgpr: return w.s[o.reg];
    case OpKind::imm: return uint32_t(o.imm);
    case OpKind::scc: return w.scc;
    case OpKind::vccz: return w.vcc() == 0;
    case OpKind::execz: return w.exec() == 0;
    case OpKind::aperture: return (o.reg & 2) ? kPrivateApertureHi : kSharedApertureHi;
    default: return 0;
  }
}
inline uint64_t read_s64(const Wave& w, const Operand& o) {
  switch (o.kind) {
    case OpKind::sgpr: return w.s64(o.reg);
    case OpKind::imm: return o.imm;
    case OpKind::aperture: return uint64_t((o.reg & 2) ? kPrivateApertureHi : kSharedApertureHi) << 32 |
                                  ((o.reg & 1) ? 0xffffffffu : 0);
    default: return read_s32(w, o);
  }
}
inline void write_s32(Wave& w, const Operand& o, uint32_t x) {
  if (o.kind == OpKind::sgpr) w.s[o.reg] = x;
}
inline void write_s64(Wave& w, const Operand& o, uint64_t x) {
  if (o.kind == OpKind::sgpr) w.set_s64(o.reg, x);
}

// check_global's slow end (fault.cpp): an access in no allocation. A read past an allocation's end inside its last
// page is allowed (see check_global); anything else raises the fault, saying how far past which allocation it lies.
bool global_access_outside(Wave& w, const Inst& I, uint64_t addr, uint64_t bytes, int lane, bool read);

// Checks that [addr, addr + bytes) lies in one allocation; raises a fault naming the lane otherwise. A read (`read`)
// that starts in an allocation vgpu made and ends past it but inside its last page is allowed outside race-check mode
// (it reads 0 there, and is warned about once per kernel): the hardware maps whole pages.
inline bool check_global(Wave& w, const Inst& I, uint64_t addr, uint64_t bytes, int lane, bool read = false) {
  if (addr >= w.mem_lo && addr + bytes <= w.mem_hi && addr + bytes >= addr) return true;
  if (w.use_prev_allocation(addr, addr + bytes)) return true;
  const MemoryRange r = w.ctx->memory->find(addr);
  if (r && addr + bytes <= r.base + r.size) {
    w.prev_mem_lo = w.mem_lo, w.prev_mem_hi = w.mem_hi;
    w.mem_lo = r.base, w.mem_hi = r.base + r.size;
    return true;
  }
  return global_access_outside(w, I, addr, bytes, lane, read);
}

}  // namespace vgpu
