// Program control (SOPP): branches, the end of the program, barriers. Waits, priorities and scheduling hints have
// no functional effect in vgpu, which completes every memory operation before the next instruction.
#include "isa.h"
#include "ops.h"

namespace vgpu {
namespace {

template <auto Cond>
void branch(Wave& w, const Inst& I) {
  if (Cond(w)) w.pc = I.target;
}

void nop(Wave&, const Inst&) {}

}  // namespace

void register_sopp(IsaTable& t) {
  t.add("s_branch", branch<[](const Wave&) { return true; }>);
  t.add("s_cbranch_scc0", branch<[](const Wave& w) { return !w.scc; }>);
  t.add("s_cbranch_scc1", branch<[](const Wave& w) { return w.scc; }>);
  t.add("s_cbranch_vccz", branch<[](const Wave& w) { return w.vcc() == 0; }>);
  t.add("s_cbranch_vccnz", branch<[](const Wave& w) { return w.vcc() != 0; }>);
  t.add("s_cbranch_execz", branch<[](const Wave& w) { return w.exec() == 0; }>);
  t.add("s_cbranch_execnz", branch<[](const Wave& w) { return w.exec() != 0; }>);
  t.add("s_endpgm", [](Wave& w, const Inst&) { w.state = WaveState::done; });
  t.add("s_barrier", [](Wave& w, const Inst&) { w.state = WaveState::barrier; });
  for (const char* name : {"s_waitcnt", "s_waitcnt_vmcnt", "s_waitcnt_lgkmcnt", "s_waitcnt_expcnt", "s_nop", "s_setprio",
                           "s_sleep", "s_icache_inv", "s_incperflevel", "s_decperflevel", "s_ttracedata",
                           "s_set_gpr_idx_mode", "s_dcache_wb", "s_dcache_inv", "s_dcache_wb_vol",
                           "s_dcache_inv_vol", "buffer_wbinvl1", "buffer_wbinvl1_vol", "buffer_inv", "buffer_wbl2",
                           "s_sched_barrier", "s_sched_group_barrier", "s_wait_idle"})
    t.add(name, nop);
  // s_sendmsg: the only message a compute kernel sends is MSG_DEALLOC_VGPRS before ending, which needs no model.
  t.add("s_sendmsg", nop);
}

}  // namespace vgpu
