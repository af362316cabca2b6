// Running one workgroup's waves (see workgroup.h).
#include "workgroup.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "timing/trace.h"

namespace vgpu {
namespace {

// After a barrier opens, each wave's first kReleasedTurns * kReleasedSlice instructions run in turns of kReleasedSlice.
constexpr uint64_t kReleasedSlice = 4;
constexpr int kReleasedTurns = 8;

void init_wave(Wave& w, const DispatchCtx& ctx, const Workgroup& wg, int index, uint32_t items) {
  const Program& p = *ctx.prog;
  const KernelDescriptor& kd = p.info.kd;
  std::fill(std::begin(w.s), std::end(w.s), 0u);
  w.scc = false;
  w.state = WaveState::running;
  w.pc = 0;
  w.id = index;
  w.insts = 0;
  w.gpr_idx_on = false;
  w.mem_lo = w.mem_hi = w.prev_mem_lo = w.prev_mem_hi = 0;
  w.vm_issued = w.vm_retired = w.vm_retired_at_barrier = 0;
  w.hazard_at = ~uint64_t(0);
  // User SGPRs, packed from s0 in the order AMDGPUUsage lists them.
  uint32_t s = 0;
  auto put64 = [&](uint64_t x) { w.s[s++] = uint32_t(x), w.s[s++] = uint32_t(x >> 32); };
  // The private segment buffer (code without architected flat scratch: gfx90a): a V# over the lanes' private memory.
  if (kd.enable_private_segment_buffer())
    for (uint32_t word : kPrivateBufferRsrc) w.s[s++] = word;
  if (kd.enable_dispatch_ptr()) put64(ctx.dispatch_packet_addr);
  if (kd.enable_queue_ptr()) put64(0);
  if (kd.enable_kernarg_segment_ptr()) put64(ctx.kernarg_addr);
  if (kd.enable_dispatch_id()) put64(0);
  if (kd.enable_flat_scratch_init()) put64(0);
  // Preloaded kernel arguments (KERNARG_PRELOAD_SPEC: length in dwords, bits 6:0; offset, bits 15:7) follow.
  const uint32_t user = kd.user_sgpr_count();
  const uint32_t preload = kd.kernarg_preload & 0x7f, first = kd.kernarg_preload >> 7;
  for (uint32_t i = 0; i < preload && s < user; ++i)
    std::memcpy(&w.s[s++], (const uint8_t*)ctx.kernarg_addr + 4 * (first + i), 4);
  s = user;
  for (int d = 0; d < 3; ++d)
    if (kd.enable_wg_id(d)) w.s[s++] = wg.id[d];
  if (kd.enable_wg_info()) w.s[s++] = 0;
  if (kd.enable_private_segment()) w.s[s++] = 0;  // scratch wave offset: per-lane memory is separate here
  // v0: packed work-item ids; EXEC: the live lanes.
  const LaunchParams& lp = ctx.launch;
  uint64_t exec = 0;
  for (int l = 0; l < kLanes; ++l) {
    uint32_t flat = uint32_t(index) * kLanes + uint32_t(l);
    uint32_t x = flat % lp.block.x, y = flat / lp.block.x % lp.block.y, z = flat / (lp.block.x * lp.block.y);
    w.v[0][l] = x | y << 10 | z << 20;
    if (flat < items) exec |= 1ull << l;
  }
  w.set_exec(exec);
}

// Runs a wave until it blocks, ends, faults, or spends `budget` instructions.
// One counter: w.insts is kept current (s_memtime reads it) and also measures the budget.
template <bool profiled>
uint64_t run_wave_loop(Wave& w, const Inst* insts, uint64_t budget) {
  const uint64_t start = w.insts;
  while (w.state == WaveState::running && w.insts - start < budget) {
    const int pc = w.pc++;
    if constexpr (profiled) w.profile->executed[pc]++;
    ++w.insts;
    insts[pc].fn(w, insts[pc]);
  }
  return w.insts - start;
}
// The same for a wave the timing model records: each instruction with its active lanes and the extra cycles the bank
// model gives a DS access, and each global allocation the wave reaches (its one-allocation cache changes then).
uint64_t run_wave_traced(Wave& w, const Inst* insts, uint64_t budget) {
  WorkgroupTrace& t = *w.trace;
  std::vector<TraceOp>& ops = t.waves[w.id].ops;
  const uint64_t start = w.insts;
  while (w.state == WaveState::running && w.insts - start < budget) {
    const int pc = w.pc++;
    const uint64_t conflicts = t.conflicts.lds_conflicts[pc], mem_lo = w.mem_lo;
    const uint8_t lanes = uint8_t(std::popcount(w.exec()));
    t.conflicts.executed[pc]++;
    ++w.insts;  // current for s_memtime, as in run_wave_loop
    insts[pc].fn(w, insts[pc]);
    const uint64_t extra = t.conflicts.lds_conflicts[pc] - conflicts;
    ops.push_back({uint32_t(pc), uint16_t(std::min<uint64_t>(extra, 0xffff)), lanes});
    if (w.mem_lo != mem_lo) {
      const std::pair<uint64_t, uint64_t> a{w.mem_lo, w.mem_hi - w.mem_lo};
      if (std::find(t.allocations.begin(), t.allocations.end(), a) == t.allocations.end()) t.allocations.push_back(a);
    }
  }
  return w.insts - start;
}

inline uint64_t run_wave(Wave& w, const Inst* insts, uint64_t budget) {
  if (w.trace) return run_wave_traced(w, insts, budget);
  return w.profile ? run_wave_loop<true>(w, insts, budget) : run_wave_loop<false>(w, insts, budget);
}

// A wave's registers: what must repeat for a loop to be making no progress.
std::vector<uint32_t> wave_registers(const Wave& w, uint32_t vgprs) {
  std::vector<uint32_t> r(std::begin(w.s), std::end(w.s));
  r.push_back(w.scc);
  r.insert(r.end(), &w.v[0][0], &w.v[0][0] + size_t(vgprs) * kLanes);
  return r;
}

}  // namespace

bool workgroup_waits(DispatchCtx& ctx, WorkerStorage& st) {
  constexpr int kProbe = 4096;  // instructions a wave may take to come back to where it was
  const Program& p = *ctx.prog;
  int running = 0;
  for (int i = 0; i < st.nwaves; ++i) {
    Wave& w = st.waves[i];
    if (w.state != WaveState::running) continue;
    ++running;
    const int pc = w.pc;
    const std::vector<uint32_t> before = wave_registers(w, p.vgprs);
    bool back = false;
    for (int n = 0; n < kProbe && w.state == WaveState::running && !back; ++n) {
      run_wave(w, p.insts.data(), 1);
      back = w.pc == pc;
    }
    if (!back || w.state != WaveState::running || wave_registers(w, p.vgprs) != before) return false;
  }
  return running > 0;
}

void start_workgroup(DispatchCtx& ctx, uint64_t linear, WorkerStorage& st, WorkgroupTrace* trace) {
  const Program& p = *ctx.prog;
  const LaunchParams& lp = ctx.launch;
  Workgroup& wg = st.wg;
  wg = Workgroup{};
  wg.id[0] = uint32_t(linear % lp.grid.x);
  wg.id[1] = uint32_t(linear / lp.grid.x % lp.grid.y);
  wg.id[2] = uint32_t(linear / (uint64_t(lp.grid.x) * lp.grid.y));
  wg.linear = linear;
  wg.ctx = &ctx;
  wg.lds_bytes = ctx.lds_bytes;
  std::fill(st.lds.begin(), st.lds.end(), 0);
  wg.lds = st.lds.data();
  wg.waves = st.waves.data();
  // The hazard watch: a new serial and interval make every older mark stale.
  LdsWatch& watch = st.lds_watch;
  watch.racecheck = ctx.racecheck;
  ++watch.serial, ++watch.epoch;
  if (ctx.racecheck && watch.writer.size() < (ctx.lds_bytes + 3) / 4) {
    watch.writer.resize((ctx.lds_bytes + 3) / 4);
    watch.reader.resize((ctx.lds_bytes + 3) / 4);
  }
  wg.watch = &watch;
  wg.watching = ctx.racecheck;

  const uint32_t items = uint32_t(lp.block.count());
  const int nwaves = int((items + kLanes - 1) / kLanes);
  st.nwaves = nwaves;
  st.spent_while_waiting = 0;
  st.released_turns = 0;
  st.trace = trace;
  if (trace) {
    trace->linear = linear;
    trace->waves.assign(nwaves, {});
    trace->conflicts.resize(p.insts.size());
  }
  for (int i = 0; i < nwaves; ++i) {
    Wave& w = st.waves[i];
    w.v = reinterpret_cast<uint32_t(*)[kLanes]>(st.vgprs.data() + size_t(i) * p.vgprs * kLanes);
    w.priv = st.priv.data() + size_t(i) * kLanes * ctx.private_bytes;
    w.wg = &wg;
    w.ctx = &ctx;
    w.profile = trace ? &trace->conflicts : ctx.profiling ? &st.profile : nullptr;
    w.trace = trace;
    init_wave(w, ctx, wg, i, items);
  }
}

bool step_workgroup(DispatchCtx& ctx, WorkerStorage& st, uint64_t budget, uint64_t& ran_total) {
  const Program& p = *ctx.prog;
  const int nwaves = st.nwaves;
  LdsWatch& watch = st.lds_watch;
  Workgroup& wg = st.wg;
  WorkgroupTrace* trace = st.trace;
  ran_total = 0;
  const Inst* insts = p.insts.data();
  const uint64_t quantum = std::min<uint64_t>(2048, budget);  // a short slice is shared out finer
  uint64_t& spent_while_waiting = st.spent_while_waiting;
  for (;;) {
    int running = 0, waiting = 0;
    uint64_t ran = 0;
    // Waves leave a barrier together, as on hardware, where they issue interleaved: the first instructions after it
    // run in short turns. Otherwise wave 0 could run a whole quantum ahead and overwrite LDS the others have yet to
    // read after the barrier (rocPRIM's adjacent_find reuses one LDS word for its tile id and its running result).
    const uint64_t slice = st.released_turns > 0 ? std::min(kReleasedSlice, quantum) : quantum;
    st.released_turns -= st.released_turns > 0;
    for (int i = 0; i < nwaves; ++i) {
      Wave& w = st.waves[i];
      if (w.state == WaveState::running) ran += run_wave(w, insts, slice);
      if (ctx.instruction_limit && w.insts > ctx.instruction_limit && w.state != WaveState::done &&
          w.state != WaveState::faulted)
        w.fault(insts[std::max(w.pc, 1) - 1], FaultKind::watchdog, -1,
                "the wave ran more than HK_VGPU_INSTRUCTION_LIMIT=" + std::to_string(ctx.instruction_limit) +
                    " instructions");
      if (w.state == WaveState::faulted) return true;
      running += w.state == WaveState::running;
      waiting += w.state == WaveState::barrier;
    }
    ran_total += ran;
    if (ctx.faulted.load(std::memory_order_relaxed)) return true;
    if (running == 0 && waiting == 0) break;
    if (running == 0) {
      // Every wave still alive has arrived: the barrier opens (ended waves do not count, as on hardware). Loads into
      // LDS their waves completed before it are now complete for every wave; a new interval starts for the race check.
      for (int i = 0; i < nwaves; ++i) {
        Wave& w = st.waves[i];
        if (w.state == WaveState::barrier) w.state = WaveState::running;
        w.vm_retired_at_barrier = w.vm_retired;
      }
      retire_lds_spans(wg);
      ++watch.epoch;
      spent_while_waiting = 0;
      st.released_turns = kReleasedTurns;
      continue;
    }
    if (waiting > 0 && (spent_while_waiting += ran) > ctx.watchdog) {
      int waiter = 0, spinner = 0;
      for (int i = nwaves - 1; i >= 0; --i) {
        if (st.waves[i].state == WaveState::barrier) waiter = i;
        if (st.waves[i].state == WaveState::running) spinner = i;
      }
      Wave& w = st.waves[waiter];
      Wave& s = st.waves[spinner];
      w.fault(insts[w.pc - 1], FaultKind::barrier_deadlock, -1,
              "wave " + std::to_string(waiter) + " waits at s_barrier while wave " + std::to_string(spinner) +
                  " ran " + std::to_string(spent_while_waiting) + " instructions without reaching it (now at pc 0x" +
                  [&] { char b[32]; std::snprintf(b, sizeof b, "%x", insts[s.pc].pc); return std::string(b); }() +
                  ": '" + p.texts[insts[s.pc].text] + "')");
      return true;
    }
    if (ran_total >= budget) return false;
  }
  uint64_t total = 0;
  for (int i = 0; i < nwaves; ++i) total += st.waves[i].insts;
  if (trace) {
    trace->done = true;
    if (ctx.profiling) st.profile.add(trace->conflicts);  // a recorded workgroup counts in the profile too
  }
  ctx.instructions.fetch_add(total, std::memory_order_relaxed);
  return true;
}

}  // namespace vgpu
