// Program control (SOPP): branches, the end of the program, barriers, waits. vgpu completes every memory operation
// before the next instruction; s_waitcnt vmcnt only tells the LDS hazard watch which loads into LDS the wave has
// completed (memory.h, lds_watch.h). Other waits, priorities and scheduling hints have no functional effect.
#include "isa/isa.h"
#include "memory/memory.h"
#include "isa/ops.h"

namespace vgpu {
namespace {

template <auto Cond>
void branch(Wave& w, const Inst& I) {
  if (Cond(w)) w.pc = I.target;
}

void nop(Wave&, const Inst&) {}

// s_waitcnt simm16 (GFX9 encoding, both archs): vmcnt in bits 3:0 and 15:14.
void waitcnt(Wave& w, const Inst& I) { retire_vmem(w, (I.simm & 0xf) | (I.simm >> 14 & 3) << 4); }
// s_waitcnt_vmcnt sdst, simm16: the count is simm16 (the SGPR, null in compiled code, is not modelled).
void waitcnt_vmcnt(Wave& w, const Inst& I) { retire_vmem(w, I.simm & 0xffff); }

}  // namespace

void exec_vmem_counted(Wave& w, const Inst& I) {
  ++w.vm_issued;
  I.vmem_fn(w, I);
}

void register_sopp(IsaTable& t) {
  t.add("s_branch", branch<[](const Wave&) { return true; }>, op::branch);
  t.add("s_cbranch_scc0", branch<[](const Wave& w) { return !w.scc; }>, op::branch);
  t.add("s_cbranch_scc1", branch<[](const Wave& w) { return w.scc; }>, op::branch);
  t.add("s_cbranch_vccz", branch<[](const Wave& w) { return w.vcc() == 0; }>, op::branch);
  t.add("s_cbranch_vccnz", branch<[](const Wave& w) { return w.vcc() != 0; }>, op::branch);
  t.add("s_cbranch_execz", branch<[](const Wave& w) { return w.exec() == 0; }>, op::branch);
  t.add("s_cbranch_execnz", branch<[](const Wave& w) { return w.exec() != 0; }>, op::branch);
  t.add("s_endpgm", [](Wave& w, const Inst&) {
    retire_vmem(w, 0);  // what is in flight still lands (for other waves: once a barrier follows)
    w.state = WaveState::done;
  }, op::ends_program);
  t.add("s_waitcnt", waitcnt, op::encoded_simm16);
  t.add("s_waitcnt_vmcnt", waitcnt_vmcnt, op::encoded_simm16);
  t.add("s_barrier", [](Wave& w, const Inst&) { w.state = WaveState::barrier; });
  // Cache maintenance (buffer_wbinvl1, buffer_inv, buffer_wbl2, gfx90a's buffer_invl2 for system-scope acquires...)
  // completes at once here and is not counted by vmcnt.
  for (const char* name : {"s_waitcnt_lgkmcnt", "s_waitcnt_expcnt", "s_nop", "s_setprio",
                           "s_icache_inv", "s_incperflevel", "s_decperflevel", "s_ttracedata",
                           "s_dcache_wb", "s_dcache_inv", "s_dcache_wb_vol",
                           "s_dcache_inv_vol", "buffer_wbinvl1", "buffer_wbinvl1_vol", "buffer_inv", "buffer_wbl2", "buffer_invl2",
                           "s_sched_barrier", "s_sched_group_barrier", "s_wait_idle"})
    t.add(name, nop);
  // A wave sleeps while it waits for the host to answer a hostcall (printf): answer what is ready.
  t.add("s_sleep", [](Wave& w, const Inst&) {
    if (w.ctx->hostcall) w.ctx->hostcall->service();
  });
  // s_trap: what assert, abort and __builtin_trap end in. The dispatch stops with a fault naming the wave; a failed
  // assert has just printed its message to stderr through a hostcall, which the fault quotes.
  t.add("s_trap", [](Wave& w, const Inst& I) {
    std::string why = "the kernel executed s_trap " + std::to_string(I.simm & 0xff);
    if (w.ctx->hostcall) {
      std::string text = w.ctx->hostcall->last_stderr_message();
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
      if (!text.empty()) why += ": " + text;
    }
    w.fault(I, FaultKind::trap, std::countr_zero(w.exec() | (uint64_t(1) << 63)), std::move(why));
  }, op::encoded_simm16);
  // s_sendmsg: the only message a compute kernel sends is MSG_DEALLOC_VGPRS before ending, which needs no model.
  t.add("s_sendmsg", nop);
  // Issue classes (registered as SALU; timing/model.cpp): branches and messages take the branch unit; the waits, the
  // barrier, s_nop, s_sleep, s_setprio and s_endpgm take no issue unit; the scalar cache's maintenance is scalar
  // memory; the vector caches' is internal.
  t.mark({"s_branch", "s_cbranch_scc0", "s_cbranch_scc1", "s_cbranch_vccz", "s_cbranch_vccnz", "s_cbranch_execz",
          "s_cbranch_execnz", "s_trap", "s_sendmsg", "s_icache_inv"}, IssueKind::branch);
  t.mark({"s_waitcnt", "s_waitcnt_vmcnt", "s_waitcnt_lgkmcnt", "s_waitcnt_expcnt"}, IssueKind::waitcnt);
  t.mark({"s_waitcnt_vmcnt"}, op::waits_vmcnt);
  t.mark({"s_waitcnt_lgkmcnt"}, uint8_t(op::waits_lgkmcnt | op::encoded_simm16));
  t.mark({"s_waitcnt_expcnt"}, op::waits_expcnt);
  t.mark({"s_barrier"}, IssueKind::barrier);
  t.mark({"s_nop"}, IssueKind::nop);
  t.mark({"s_sleep"}, IssueKind::sleep);
  t.mark({"s_setprio"}, IssueKind::setprio);
  t.mark({"s_endpgm"}, IssueKind::end);
  t.mark({"s_dcache_wb", "s_dcache_inv", "s_dcache_wb_vol", "s_dcache_inv_vol"}, IssueKind::smem);
  t.mark({"buffer_wbinvl1", "buffer_wbinvl1_vol", "buffer_inv", "buffer_wbl2", "buffer_invl2"}, IssueKind::internal);
}

}  // namespace vgpu
