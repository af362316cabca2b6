// Faults: their names and one-line messages, and how a wave records the first fault of its dispatch.
#include <algorithm>
#include <cstdio>

#include "isa/isa.h"
#include "wave.h"

namespace vgpu {

const char* to_string(FaultKind k) {
  switch (k) {
    case FaultKind::none: return "no fault";
    case FaultKind::unknown_instruction: return "unknown instruction";
    case FaultKind::memory_out_of_bounds: return "out-of-bounds memory access";
    case FaultKind::lds_out_of_bounds: return "LDS access out of bounds";
    case FaultKind::barrier_deadlock: return "barrier deadlock";
    case FaultKind::private_out_of_bounds: return "private memory access out of bounds";
    case FaultKind::watchdog: return "instruction budget exhausted";
    case FaultKind::bad_launch: return "invalid launch";
    case FaultKind::trap: return "device trap (assert, abort or __builtin_trap)";
    case FaultKind::lds_dma_hazard: return "LDS-DMA hazard";
    case FaultKind::lds_race: return "LDS race between waves";
    case FaultKind::workgroup_deadlock: return "workgroup deadlock";
  }
  return "fault";
}

std::string Fault::message() const {
  if (!*this) return "no fault";
  char buf[96];
  std::string m = std::string("vgpu: ") + to_string(kind) + " in kernel " + kernel;
  if (kind != FaultKind::bad_launch) {
    std::snprintf(buf, sizeof buf, " at pc 0x%llx", (unsigned long long)pc);
    m += buf;
    m += ": '" + instruction + "'";
    std::snprintf(buf, sizeof buf, " (workgroup (%u,%u,%u), wave %d", workgroup[0], workgroup[1], workgroup[2], wave);
    m += buf;
    if (lane >= 0) m += ", lane " + std::to_string(lane);
    m += ")";
  }
  if (!detail.empty()) m += ": " + detail;
  return m;
}

Fault describe_fault(const Wave& w, const Inst& at, FaultKind kind, int lane, std::string detail) {
  Fault f;
  f.kind = kind;
  f.kernel = w.ctx->prog->kernel;
  f.pc = at.pc;
  f.instruction = w.ctx->prog->texts[at.text];
  std::copy(std::begin(w.wg->id), std::end(w.wg->id), f.workgroup);
  f.wave = w.id;
  f.lane = lane;
  f.detail = std::move(detail);
  return f;
}

void Wave::fault(const Inst& at, FaultKind kind, int lane, std::string detail) {
  state = WaveState::faulted;
  std::lock_guard lock(ctx->fault_mu);
  if (ctx->faulted.load()) return;
  ctx->fault = describe_fault(*this, at, kind, lane, std::move(detail));
  ctx->faulted.store(true);
}

void warn_hardware_defect(const Wave& w, const Inst& at, HardwareDefect defect, const std::string& why) {
  const uint32_t bit = uint32_t(defect);
  if (w.ctx->prog->defects_warned.fetch_or(bit, std::memory_order_relaxed) & bit) return;
  const char* what = defect == HardwareDefect::constant_mfma_scale ? "hardware defect" : "hardware behaviour";
  std::fprintf(stderr, "vgpu: warning: %s in kernel %s at pc 0x%llx: '%s' (workgroup (%u,%u,%u), wave %d): %s\n",
               what, w.ctx->prog->kernel.c_str(), (unsigned long long)at.pc, w.ctx->prog->texts[at.text].c_str(),
               w.wg->id[0], w.wg->id[1], w.wg->id[2], w.id, why.c_str());
}

bool global_access_outside(Wave& w, const Inst& I, uint64_t addr, uint64_t bytes, int lane, bool read) {
  const MemoryRange r = w.ctx->memory->nearest_below(addr);
  const uint64_t end = r.base + r.size, page_end = (end + kPageBytes - 1) / kPageBytes * kPageBytes;
  // In race-check mode the over-read is the bug it usually is.
  if (read && !w.ctx->racecheck && r && r.owned && addr < end && addr + bytes <= page_end && addr + bytes >= addr) {
    char why[200];
    std::snprintf(why, sizeof why, "lane %d reads %llu bytes at 0x%llx, %llu of them past the end of the %llu-byte "
                  "allocation at 0x%llx but inside its last page: they read 0 (the hardware maps whole pages)", lane,
                  (unsigned long long)bytes, (unsigned long long)addr, (unsigned long long)(addr + bytes - end),
                  (unsigned long long)r.size, (unsigned long long)r.base);
    warn_hardware_defect(w, I, HardwareDefect::global_read_past_allocation, why);
    return true;
  }
  char buf[256];
  int n = std::snprintf(buf, sizeof buf, "address 0x%llx (%llu bytes) is outside every allocation",
                        (unsigned long long)addr, (unsigned long long)bytes);
  // Where the access ends past an allocation, say by how much: over-reads of a few bytes and wild addresses differ.
  if (r && n > 0 && size_t(n) < sizeof buf)
    std::snprintf(buf + n, sizeof buf - n,
                  addr >= end ? " (it starts %llu bytes past the end of the %llu-byte allocation at 0x%llx)"
                              : " (its last %llu bytes lie past the end of the %llu-byte allocation at 0x%llx)",
                  (unsigned long long)(addr >= end ? addr - end : addr + bytes - end), (unsigned long long)r.size,
                  (unsigned long long)r.base);
  w.fault(I, FaultKind::memory_out_of_bounds, lane, buf);
  return false;
}

void exec_unknown(Wave& w, const Inst& I) {
  w.fault(I, FaultKind::unknown_instruction, -1, "vgpu does not implement this instruction");
}

}  // namespace vgpu
