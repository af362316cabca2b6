// The cycle model of one CU (docs/vgpu-timing.md). Waves of the sampled workgroups sit on 4 SIMDs as the hardware
// places them (a workgroup's waves round-robin over the SIMDs). Each clock one SIMD, in turn, may issue: at most one
// instruction per wave and one per category (VALU or MFMA, SALU/SMEM, VMEM, LDS, branch/message), waves taken by
// {s_setprio priority, age} (timing.md 4, [RPC]). Every latency is known when an instruction issues (fixed
// latencies behind bandwidth-limited pipes), so s_waitcnt resolves at once to the cycle its counters allow.
// Every cycle of every wave is charged to one StallCause (device.h): a wait to the instruction that set it, a ready
// wave's lost turn to the instruction that could not issue; a traced replay also records the charges as a timeline.
#include "timing/model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <map>

#include "timing/timeline.h"

namespace vgpu {
namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

struct SimWave {
  const std::vector<TraceOp>* ops = nullptr;
  size_t next = 0;
  int simd = 0, group = 0, index = 0;
  uint32_t priority = 0;
  uint64_t age = 0;
  uint64_t ready = 0;        // the first cycle it may issue again
  bool at_barrier = false, done = false;
  std::deque<uint64_t> vm, lgkm;  // completion cycles of outstanding counted operations, in issue order
  uint64_t finished = 0;
  // Accounting: the wave's cycles before `acc` are charged; until `ready` it waits for `wait`, charged to ops[wait_op]
  // (the instruction that made it wait).
  uint64_t acc = 0;
  StallCause wait = StallCause::issued;
  size_t wait_op = 0;
  std::vector<uint64_t> issued_at;  // the cycle each op issued
};

// The cycle by which all but the newest `keep` of `q` have completed; drops them.
uint64_t settle(std::deque<uint64_t>& q, uint32_t keep) {
  uint64_t t = 0;
  while (q.size() > keep) t = std::max(t, q.front()), q.pop_front();
  return t;
}

struct CuResult {
  uint64_t cycles = 0;
  double mfma_busy = 0, mfma_flops = 0, vmem_bytes = 0;
  double mfma_busy_by_class[4] = {};  // by MfmaClass
  double valu_busy = 0;
  uint64_t skipped = 0;               // cycles the replay jumped over with no wave able to issue
  std::array<double, kStallCauses> by_cause{};             // every wave-cycle of the round, by cause
  std::vector<std::array<double, kStallCauses>> by_inst;   // the same per program instruction
  std::vector<uint64_t> issued_by_inst;
  HotLoop hot_loop;
};

// The categories of which each SIMD issues at most one instruction per turn (timing.md 4, [RPC]: one per wave and one
// each of VALU/MFMA, SALU/SMEM, VMEM, LDS, branch/message per cycle); internal ones (waits, s_nop, s_setprio,
// s_endpgm) take no issue port.
enum IssuePort : int { port_vector, port_scalar, port_vmem, port_lds, port_branch, port_none, kIssuePorts = port_none };
IssuePort issue_port(IssueKind k) {
  switch (k) {
    case IssueKind::valu: case IssueKind::mfma: return port_vector;
    case IssueKind::salu: case IssueKind::smem: return port_scalar;
    case IssueKind::vmem: return port_vmem;
    case IssueKind::lds: return port_lds;
    case IssueKind::branch: return port_branch;
    default: return port_none;
  }
}

// The hot loop (device.h HotLoop) from the waves' issue cycles.
HotLoop find_hot_loop(const ProductInfo& product, const Program& prog, const std::vector<InstTiming>& facts,
                      const std::vector<SimWave>& waves, const std::vector<uint64_t>& issued, uint32_t simds) {
  HotLoop h;
  std::vector<std::pair<int, int>> loops;  // [first, backward branch] instruction indices
  for (size_t i = 0; i < prog.insts.size(); ++i)
    if (prog.insts[i].target >= 0 && size_t(prog.insts[i].target) <= i) loops.push_back({prog.insts[i].target, int(i)});
  std::vector<double> mfmas(prog.insts.size() + 1, 0), all(prog.insts.size() + 1, 0);  // prefix sums of issues
  for (size_t i = 0; i < prog.insts.size(); ++i) {
    mfmas[i + 1] = mfmas[i] + (facts[i].kind == IssueKind::mfma ? double(issued[i]) : 0);
    all[i + 1] = all[i] + double(issued[i]);
  }
  int best = -1;
  auto score = [&](int l) {
    auto [lo, hi] = loops[size_t(l)];
    return std::pair{mfmas[size_t(hi) + 1] - mfmas[size_t(lo)], all[size_t(hi) + 1] - all[size_t(lo)]};
  };
  for (size_t l = 0; l < loops.size(); ++l) {
    bool inner = true;
    for (size_t m = 0; m < loops.size() && inner; ++m)
      inner = m == l || loops[m] == loops[l] || !(loops[l].first <= loops[m].first && loops[m].second <= loops[l].second);
    if (inner && score(int(l)).second > 0 && (best < 0 || score(int(l)) > score(best))) best = int(l);
  }
  if (best < 0) return h;
  const auto [lo, hi] = loops[size_t(best)];
  h.found = true;
  h.begin_pc = uint64_t(prog.insts[size_t(lo)].pc), h.end_pc = uint64_t(prog.insts[size_t(hi)].pc);
  const TimingFacts& f = product.timing;
  h.simds.resize(simds);
  double busy_all = 0, window_all = 0;
  std::vector<std::pair<uint64_t, uint32_t>> events;  // (issue cycle, instruction)
  for (uint32_t s = 0; s < simds; ++s) {
    // The SIMD's time in the loop: from the first to the last issue of a loop instruction on it; everything its waves
    // issued then counts (a ping-pong kernel's other wave group fills the matrix core from other code).
    uint64_t first = UINT64_MAX, last = 0;
    for (const SimWave& w : waves)
      if (w.simd == int(s))
        for (size_t k = 0; k < w.issued_at.size(); ++k)
          if (const int i = int((*w.ops)[k].inst); i >= lo && i <= hi)
            first = std::min(first, w.issued_at[k]), last = std::max(last, w.issued_at[k]);
    if (first == UINT64_MAX) continue;
    events.clear();
    for (const SimWave& w : waves)
      if (w.simd == int(s))
        for (size_t k = 0; k < w.issued_at.size(); ++k)
          if (w.issued_at[k] >= first && w.issued_at[k] <= last) events.push_back({w.issued_at[k], (*w.ops)[k].inst});
    std::stable_sort(events.begin(), events.end(), [](auto& a, auto& b) { return a.first < b.first; });
    HotLoop::Simd& out = h.simds[s];
    uint64_t end = events.back().first + 1, last_free = 0;
    double busy = 0, gaps = 0, between[5] = {};
    bool seen = false;
    double counts[5] = {};
    for (auto [cycle, i] : events) {
      const InstTiming& t = facts[i];
      if (t.kind != IssueKind::mfma) {
        const IssueKind k = t.kind;
        counts[k == IssueKind::valu ? 0 : k == IssueKind::salu || k == IssueKind::smem ? 1 : k == IssueKind::vmem ? 2
               : k == IssueKind::lds ? 3 : 4] += 1;
        continue;
      }
      if (seen) {
        for (int c = 0; c < 5; ++c) between[c] += counts[c];
        gaps += cycle > last_free ? double(cycle - last_free) : 0;
      }
      std::fill(counts, counts + 5, 0);
      seen = true;
      ++out.mfmas;
      const uint64_t free = cycle + uint64_t(f.mfma_pass_cycles) * t.passes;
      busy += double(free - cycle), last_free = free, end = std::max(end, free);
    }
    const double window = double(end - events.front().first);
    out.util = busy / window;
    busy_all += busy, window_all += window;
    if (out.mfmas > 1) {
      const double n = double(out.mfmas - 1);
      out.between_valu = between[0] / n, out.between_salu = between[1] / n, out.between_vmem = between[2] / n;
      out.between_lds = between[3] / n, out.between_other = between[4] / n;
      out.between = (between[0] + between[1] + between[2] + between[3] + between[4]) / n;
      out.idle_between = gaps / n;
    }
  }
  h.mfma_util = window_all > 0 ? busy_all / window_all : 0;
  return h;
}

// Replays the sampled workgroups' streams on one CU. Every cycle of every wave is charged to one StallCause; with
// Traced, the charges and the units' busy intervals are recorded into `tl` as well (nothing is recorded otherwise).
template <bool Traced>
CuResult simulate_cu(const ProductInfo& product, const Program& prog, const std::vector<InstTiming>& facts,
                     const std::vector<WorkgroupTrace>& traces, double vmem_latency, Timeline* tl,
                     size_t groups = SIZE_MAX) {
  const TimingFacts& f = product.timing;
  const ArchInfo& arch = arch_info(product.arch);
  const uint32_t simds = arch.simds_per_cu;

  std::vector<SimWave> waves;
  int next_simd = 0;
  for (size_t g = 0; g < std::min(groups, traces.size()); ++g)  // the first `groups` workgroups
    for (const WaveTrace& t : traces[g].waves) {
      SimWave w;
      w.ops = &t.ops, w.group = int(g), w.simd = next_simd, w.age = waves.size();
      w.index = int(&t - traces[g].waves.data());
      w.issued_at.reserve(t.ops.size());
      next_simd = (next_simd + 1) % int(simds);
      waves.push_back(std::move(w));
    }
  std::vector<std::vector<int>> on_simd(simds);
  for (size_t i = 0; i < waves.size(); ++i) on_simd[waves[i].simd].push_back(int(i));
  std::vector<uint64_t> valu_free(simds, 0), mfma_free(simds, 0);
  std::vector<uint64_t> lds_port_free(2, 0);
  uint64_t vmem_free = 0;
  CuResult r;
  r.by_inst.assign(prog.insts.size(), {});
  r.issued_by_inst.assign(prog.insts.size(), 0);
  size_t live = waves.size();
  for (SimWave& w : waves)
    if (w.ops->empty()) w.done = true, --live;
  std::vector<int64_t> last_slice;  // Traced: each wave's latest slice, which a charge may extend
  if constexpr (Traced) {
    tl->waves.clear();
    for (const SimWave& w : waves) tl->waves.push_back({w.simd, w.group, w.index, w.ops});
    tl->mfma.assign(simds, {}), tl->valu.assign(simds, {}), tl->lds_port.assign(2, {});
    tl->slices.clear();
    last_slice.assign(waves.size(), -1);
  }

  // Charges wave `wi`'s cycles from its `acc` up to `until` to `cause`, and to the instruction at ops[op].
  auto charge = [&](SimWave& w, size_t wi, uint64_t until, StallCause cause, size_t op) {
    if (until <= w.acc) return;
    const double n = double(until - w.acc);
    const uint32_t inst = (*w.ops)[op].inst;
    r.by_cause[size_t(cause)] += n;
    r.by_inst[inst][size_t(cause)] += n;
    if constexpr (Traced) {
      const uint8_t kind = uint8_t(facts[inst].kind);
      if (int64_t& last = last_slice[wi]; last >= 0) {
        TimelineSlice& p = tl->slices[size_t(last)];
        const bool extends = p.end == w.acc && p.cause == cause &&
                             (cause == StallCause::issued ? p.kind == kind && p.op + p.count == op : p.op == op);
        if (extends) {
          p.end = until, p.count += cause == StallCause::issued;
          w.acc = until;
          return;
        }
      }
      last_slice[wi] = int64_t(tl->slices.size());
      tl->slices.push_back({w.acc, until, uint32_t(op), 1, uint16_t(wi), cause, kind});
    }
    w.acc = until;
  };
  // Wave `wi`, ready, has its SIMD's turn at `now`: the wait its last instruction set, any cycles it was ready before
  // this turn came round (off-turn), and this turn (issued, or the reason it could not issue) are charged.
  uint64_t now = 0;
  auto turn = [&](SimWave& w, size_t wi, StallCause cause) {
    charge(w, wi, w.ready, w.wait, w.wait_op);
    charge(w, wi, now + 1 > simds ? now + 1 - simds : 0, StallCause::arbitration, w.next);
    charge(w, wi, now + 1, cause, w.next);
  };

  auto arrive_barrier = [&](int group, uint64_t at) {
    bool all = true;
    for (const SimWave& w : waves)
      if (w.group == group && !w.done && !w.at_barrier) all = false;
    if (!all) return;
    for (SimWave& w : waves)
      if (w.group == group && w.at_barrier) w.at_barrier = false, w.ready = at + f.barrier_cycles;
  };

  std::vector<int> candidates;
  int idle_turns = 0;
  while (live > 0) {
    const int simd = int(now % simds);
    candidates.clear();
    for (int i : on_simd[simd]) {
      const SimWave& w = waves[i];
      if (!w.done && !w.at_barrier && w.ready <= now) candidates.push_back(i);
    }
    std::sort(candidates.begin(), candidates.end(), [&](int a, int b) {
      const SimWave &x = waves[a], &y = waves[b];
      return x.priority != y.priority ? x.priority > y.priority : x.age < y.age;
    });
    bool used[kIssuePorts] = {};
    bool issued_any = false;
    for (int i : candidates) {
      SimWave& w = waves[i];
      const TraceOp& op = (*w.ops)[w.next];
      const Inst& I = prog.insts[op.inst];
      const InstTiming& t = facts[op.inst];
      const IssuePort port = issue_port(t.kind);
      // Why it cannot issue this turn, if it cannot: the most specific reason.
      StallCause blocked = StallCause::issued;
      if (port != port_none && used[port]) blocked = StallCause::arbitration;
      // A pipe whose queue holds more than its backlog limit of work stops accepting (TimingFacts).
      if (t.kind == IssueKind::vmem && vmem_free > now + f.vmem_queue_cycles) blocked = StallCause::queue_full;
      if (t.kind == IssueKind::lds && lds_port_free[simd / 2] > now + f.lds_queue_cycles) blocked = StallCause::queue_full;
      if ((t.kind == IssueKind::valu || t.kind == IssueKind::mfma) && valu_free[simd] > now)
        blocked = StallCause::valu_busy;
      if (t.kind == IssueKind::mfma && mfma_free[simd] > now) blocked = StallCause::matrix_busy;
      turn(w, size_t(i), blocked);
      if (blocked != StallCause::issued) continue;  // ready, not picked: it waits a whole turn
      if (port != port_none) used[port] = true;
      issued_any = true;
      w.issued_at.push_back(now);
      r.issued_by_inst[op.inst]++;
      w.wait_op = w.next++;
      w.ready = now + 1, w.wait = StallCause::issued;
      switch (t.kind) {
        case IssueKind::valu:
          valu_free[simd] = now + t.valu_cycles, r.valu_busy += t.valu_cycles;
          if constexpr (Traced) Timeline::busy(tl->valu[simd], now, valu_free[simd]);
          break;
        case IssueKind::mfma:
          valu_free[simd] = now + f.mfma_issue_cycles;
          mfma_free[simd] = now + uint64_t(f.mfma_pass_cycles) * t.passes;
          r.mfma_busy += double(f.mfma_pass_cycles) * t.passes, r.mfma_flops += t.flops;
          r.mfma_busy_by_class[int(t.mfma_class)] += double(f.mfma_pass_cycles) * t.passes;
          if constexpr (Traced) Timeline::busy(tl->mfma[simd], now, mfma_free[simd]);
          break;
        case IssueKind::smem: w.lgkm.push_back(now + f.smem_latency); break;
        case IssueKind::vmem: {
          const uint64_t bytes = uint64_t(op.lanes) * t.bytes_per_lane;
          const uint64_t start = std::max(now, vmem_free);
          vmem_free = start + ceil_div(bytes, f.vmem_bytes_per_clk_cu);
          w.vm.push_back(vmem_free + (t.atomic ? f.atomic_latency : uint64_t(vmem_latency)));
          r.vmem_bytes += double(bytes);
          break;
        }
        case IssueKind::lds: {
          const uint64_t bytes = uint64_t(op.lanes) * t.bytes_per_lane;
          uint64_t& port_free = lds_port_free[simd / 2];
          const uint64_t start = std::max(now, port_free);
          port_free = start + ceil_div(bytes, f.lds_port_bytes_per_clk) + op.lds_extra;
          w.lgkm.push_back(port_free + f.lds_latency);
          if constexpr (Traced) Timeline::busy(tl->lds_port[simd / 2], start, port_free);
          break;
        }
        case IssueKind::branch: w.ready = now + f.branch_cycles, w.wait = StallCause::branch; break;
        case IssueKind::nop:
          w.ready = now + uint64_t(f.wait_state_cycles) * ((I.simm & 0xf) + 1), w.wait = StallCause::nop;
          break;
        case IssueKind::sleep:
          w.ready = now + uint64_t(f.sleep_cycles) * std::max<uint32_t>(1, I.simm & 0x7f), w.wait = StallCause::nop;
          break;
        case IssueKind::setprio: w.priority = I.simm & 3; break;
        case IssueKind::waitcnt: {
          const uint64_t t_vm = settle(w.vm, t.vmcnt), t_lgkm = settle(w.lgkm, t.lgkmcnt);
          w.ready = std::max({now + 1, t_vm, t_lgkm});
          w.wait = t_vm >= t_lgkm ? StallCause::vmcnt : StallCause::lgkmcnt;
          break;
        }
        case IssueKind::barrier:
          w.at_barrier = true, w.wait = StallCause::barrier;
          arrive_barrier(w.group, now);
          break;
        case IssueKind::end: {
          const uint64_t drained = std::max(settle(w.vm, 0), settle(w.lgkm, 0));
          w.done = true, --live, w.finished = std::max(now + 1, drained);
          arrive_barrier(w.group, now);  // ended waves no longer hold a barrier
          break;
        }
        default: break;
      }
      if (!w.done && w.next >= w.ops->size()) w.done = true, --live, w.finished = now + 1;
    }
    // Nothing could issue on any SIMD for a full turn: skip to the next cycle some wave may issue.
    idle_turns = issued_any ? 0 : idle_turns + 1;
    ++now;
    if (idle_turns >= int(simds) && live > 0) {
      uint64_t soonest = UINT64_MAX;
      for (const SimWave& w : waves)
        if (!w.done && !w.at_barrier) soonest = std::min(soonest, w.ready);
      if (soonest != UINT64_MAX && soonest > now) {
        const uint64_t to = soonest / simds * simds;
        r.skipped += to > now ? to - now : 0;
        now = to;
      }
      idle_turns = 0;
    }
  }
  for (const SimWave& w : waves) r.cycles = std::max(r.cycles, w.finished);
  // What is left of each wave's time: its last wait, then idle after its end.
  for (size_t i = 0; i < waves.size(); ++i) {
    SimWave& w = waves[i];
    if (w.ops->empty()) {
      r.by_cause[size_t(StallCause::idle)] += double(r.cycles);
      continue;
    }
    charge(w, i, std::min(w.ready, r.cycles), w.wait, w.wait_op);
    charge(w, i, r.cycles, StallCause::idle, w.ops->size() - 1);
  }
  if constexpr (Traced) tl->cycles = r.cycles;
  r.hot_loop = find_hot_loop(product, prog, facts, waves, r.issued_by_inst, simds);
  return r;
}

}  // namespace

TimingSample plan_timing_sample(const ProductInfo& product, const Program& program, const LaunchParams& launch,
                                uint32_t lds_bytes) {
  const ArchInfo& arch = arch_info(product.arch);
  const uint32_t wg_waves = std::max<uint32_t>(1, uint32_t(ceil_div(launch.block.count(), arch.wave_size)));
  // Occupancy: each SIMD holds waves up to its wave slots and its share of the unified VGPR file (512 registers per
  // lane per SIMD, allocated in granules of 8); a workgroup's waves take slots on any SIMDs that have room, so a CU
  // holds (SIMDs x waves per SIMD) / (waves per workgroup) workgroups, as LLVM's getMaxWorkGroupsPerCU counts them
  // (AMDGPUBaseInfo.cpp: MaxWavesPerEU x EUsPerCU / waves per workgroup; its cap of 16 workgroups that use a barrier
  // never binds at 8 waves per SIMD, and one-wave workgroups use none). Then LDS.
  const uint32_t vgprs = std::max<uint32_t>(8, uint32_t(ceil_div(program.vgprs, 8) * 8));
  const uint32_t waves_by_vgpr = std::min(arch.waves_per_simd, arch.registers_per_lane / vgprs);
  uint32_t per_cu = waves_by_vgpr * arch.simds_per_cu / wg_waves;
  if (lds_bytes) per_cu = std::min(per_cu, arch.lds_bytes / lds_bytes);
  TimingSample s;
  s.workgroups_per_cu = std::max(1u, per_cu);
  const uint64_t groups = launch.grid.count();
  // Workgroups go to the XCDs round-robin, and within an XCD to its CUs in turn, so CU 0 of XCD 0 receives
  // workgroups 0, CUs, 2 x CUs, ...
  // The sample is one round of concurrent workgroups taken from across that share (slot s holds its
  // (2s+1)/(2 x workgroups_per_cu) quantile), so a grid whose workgroups differ in work (causal attention) is
  // represented by its middle, not by its first workgroups; a uniform grid times the same either way.
  const uint64_t share = ceil_div(groups, product.compute_units);
  s.rounds = ceil_div(share, s.workgroups_per_cu);
  if (const uint64_t rest = share - (s.rounds - 1) * s.workgroups_per_cu; s.rounds > 1 && rest < s.workgroups_per_cu)
    s.last_round = uint32_t(rest);
  const uint64_t slots = std::min<uint64_t>(s.workgroups_per_cu, share);
  for (uint64_t slot = 0; slot < slots; ++slot) {
    uint64_t j = share <= s.workgroups_per_cu ? slot : (2 * slot + 1) * share / (2 * slots);
    while (j > 0 && j * product.compute_units >= groups) --j;  // the CU's last share may be short
    if (s.workgroups.empty() || j * product.compute_units > s.workgroups.back())
      s.workgroups.push_back(j * product.compute_units);
  }
  // Probes at golden-ratio steps through the grid: evenly spread, yet on no power-of-two stride that a kernel's own
  // block-to-work mapping could alias with (quantiles at multiples of groups/32 all landed on one query tile).
  for (uint64_t i = 0; i < kMaxTimingProbes && groups > s.workgroups.size(); ++i) {
    const double position = std::fmod(0.5 + 0.6180339887498949 * double(i), 1.0);
    const uint64_t id = std::min(groups - 1, uint64_t(position * double(groups)));
    if (!std::binary_search(s.workgroups.begin(), s.workgroups.end(), id)) s.probes.push_back(id);
  }
  std::sort(s.probes.begin(), s.probes.end());
  s.probes.erase(std::unique(s.probes.begin(), s.probes.end()), s.probes.end());
  return s;
}

namespace {
// A workgroup's work: the instructions its waves issued.
double work_of(const WorkgroupTrace& t) {
  double n = 0;
  for (const WaveTrace& w : t.waves) n += double(w.ops.size());
  return n;
}
double mean_work(const std::vector<WorkgroupTrace>& traces) {
  double sum = 0, n = 0;
  for (const WorkgroupTrace& t : traces)
    if (t.done) sum += work_of(t), ++n;
  return n ? sum / n : 0;
}
}  // namespace

bool probes_match_sample(const std::vector<WorkgroupTrace>& sample, const std::vector<WorkgroupTrace>& probes,
                         size_t recorded) {
  const double mean = mean_work(sample);
  for (size_t i = 0; i < recorded && i < probes.size(); ++i)
    if (work_of(probes[i]) != mean) return false;
  return true;
}

TimingReport model_dispatch(const ProductInfo& product, const Program& program, const LaunchParams& launch,
                            const TimingSample& sample, const std::vector<WorkgroupTrace>& traces,
                            const std::vector<WorkgroupTrace>& probes, Timeline* timeline) {
  const TimingFacts& f = product.timing;
  TimingReport rep;
  rep.modelled = true;
  rep.product = std::string(product.name);
  rep.workgroups_per_cu = sample.workgroups_per_cu;
  rep.rounds = sample.rounds;
  rep.sampled_workgroups = uint32_t(traces.size());
  const double groups = double(launch.grid.count());

  // Reuse: each global allocation the sample touched is read from (or written to) HBM once, the rest of the vector
  // memory traffic hits L2 / the Infinity Cache; the share that misses sets the latency of every vector access.
  // The timing facts of each of the kernel's instructions, once (the trace names instructions by index).
  std::vector<InstTiming> facts(program.insts.size());
  for (size_t i = 0; i < facts.size(); ++i) facts[i] = inst_timing(program.arch, program.insts[i], f);
  double sample_bytes = 0;
  std::map<uint64_t, uint64_t> allocations;
  for (const WorkgroupTrace& t : traces) {
    for (auto [base, bytes] : t.allocations) allocations[base] = bytes;
    for (const WaveTrace& w : t.waves)
      for (const TraceOp& op : w.ops) {
        const InstTiming& it = facts[op.inst];
        if (it.kind == IssueKind::vmem) sample_bytes += double(op.lanes) * it.bytes_per_lane;
      }
  }
  // The average workgroup against the sampled ones, in instructions issued (1 for a uniform grid): the sample's
  // round, traffic and FLOPs are scaled by it. The probes alone estimate the average (they are spread evenly over the
  // grid; the sample is one CU's, which a kernel's own workgroup order can bias). The replay stays the sample's.
  double weight = 1, probed = 0;
  for (const WorkgroupTrace& t : probes) probed += t.done;
  const double sample_work = mean_work(traces);
  if (probed && sample_work > 0) weight = mean_work(probes) / sample_work;
  rep.work_weight = weight;
  rep.probed_workgroups = uint32_t(probed);
  const double per_group = traces.empty() ? 0 : sample_bytes / double(traces.size()) * weight;
  rep.vmem_bytes = per_group * groups;
  double touched = 0;
  for (auto [base, bytes] : allocations) touched += double(bytes);
  rep.hbm_bytes = std::min(touched, rep.vmem_bytes);
  const double miss = rep.vmem_bytes > 0 ? rep.hbm_bytes / rep.vmem_bytes : 0;
  const double latency = f.l2_latency + (double(f.hbm_latency) - f.l2_latency) * miss;

  const CuResult cu = timeline ? simulate_cu<true>(product, program, facts, traces, latency, timeline)
                               : simulate_cu<false>(product, program, facts, traces, latency, nullptr);
  rep.round_cycles = double(cu.cycles) * weight;
  rep.cu_cycles = rep.round_cycles * double(sample.rounds);
  // A short last round (plan_timing_sample) is replayed with that many of the sampled workgroups.
  if (sample.last_round && sample.last_round < traces.size()) {
    const CuResult last = simulate_cu<false>(product, program, facts, traces, latency, nullptr, sample.last_round);
    rep.cu_cycles = rep.round_cycles * double(sample.rounds - 1) + double(last.cycles) * weight;
  }
  const double simds = double(arch_info(product.arch).simds_per_cu);
  if (cu.cycles) rep.mfma_busy = cu.mfma_busy / (simds * double(cu.cycles));
  if (cu.cycles) rep.valu_busy = cu.valu_busy / (simds * double(cu.cycles));
  // The engine clock: power management lowers it under dense MFMA load. Between the peak clock (no MFMA activity)
  // and the measured sustained clock of the dominant MFMA type (at the MFMA use it was measured at), linearly in the
  // device's MFMA use: the sampled CU's, times the share of CUs the grid occupies (power is the chip's, so a grid
  // of 16 workgroups on 304 CUs runs near the peak clock). The interpolation is chosen: no source says how the clock
  // scales with partial load.
  const double* by_class = cu.mfma_busy_by_class;
  const int dominant = int(std::max_element(by_class, by_class + 4) - by_class);
  const uint32_t sustained = dominant == int(MfmaClass::f16)   ? f.mfma_clock_mhz_f16
                             : dominant == int(MfmaClass::fp8) ? f.mfma_clock_mhz_fp8
                                                               : f.mfma_clock_mhz_bf16;
  const double peak_mhz = product.peak_clock_mhz;
  const double use = dominant == int(MfmaClass::fp8) ? f.mfma_clock_use_fp8 : f.mfma_clock_use_16bit;
  const double busy_cus = std::min(1.0, groups / double(product.compute_units));
  const double load = use > 0 ? std::min(1.0, rep.mfma_busy * busy_cus / use) : 0;
  const double clock_mhz = sustained ? peak_mhz - (peak_mhz - sustained) * load : peak_mhz;
  rep.clock_ghz = clock_mhz * 1e-3;
  rep.peak_clock_ghz = peak_mhz * 1e-3;
  const double clock_hz = clock_mhz * 1e6;
  rep.l2_floor_cycles = rep.vmem_bytes / (double(f.l2_bytes_per_clk_xcd) * product.xcds);
  rep.hbm_floor_cycles = rep.hbm_bytes / (f.hbm_measured_tb_per_s * 1e12) * clock_hz;
  rep.cycles = std::max({rep.cu_cycles, rep.l2_floor_cycles, rep.hbm_floor_cycles});
  rep.limiter = rep.cycles == rep.cu_cycles ? "compute units"
                : rep.cycles == rep.hbm_floor_cycles ? "HBM bandwidth" : "L2 bandwidth";
  rep.seconds = rep.cycles / clock_hz;
  rep.mfma_flops = traces.empty() ? 0 : cu.mfma_flops / double(traces.size()) * groups * weight;
  // Where the waves' time went: every wave-cycle of the replayed round by cause, the old fractions summed from them,
  // and the instructions that stalled most.
  rep.waves = 0;
  for (const WorkgroupTrace& t : traces) rep.waves += uint32_t(t.waves.size());
  rep.replayed_cycles = double(cu.cycles), rep.skipped_cycles = double(cu.skipped);
  rep.wave_cycles = cu.by_cause;
  if (cu.cycles) {
    const double all = double(cu.cycles) * rep.waves;
    auto share = [&](std::initializer_list<StallCause> causes) {
      double n = 0;
      for (StallCause c : causes) n += cu.by_cause[size_t(c)];
      return n / all;
    };
    rep.wait_memory = share({StallCause::vmcnt}), rep.wait_lds = share({StallCause::lgkmcnt});
    rep.wait_barrier = share({StallCause::barrier}), rep.wait_nop = share({StallCause::nop, StallCause::branch});
    rep.issue_bound = share({StallCause::arbitration, StallCause::valu_busy, StallCause::queue_full});
  }
  std::vector<InstructionStall> stalls;
  for (size_t i = 0; i < program.insts.size(); ++i) {
    InstructionStall s;
    s.by_cause = cu.by_inst[i];
    for (size_t c = 0; c < kStallCauses; ++c) {
      if (StallCause(c) == StallCause::issued || StallCause(c) == StallCause::idle) continue;
      s.cycles += s.by_cause[c];
      if (s.cause == StallCause::issued || s.by_cause[c] > s.by_cause[size_t(s.cause)]) s.cause = StallCause(c);
    }
    if (s.cycles <= 0) continue;
    s.pc = uint64_t(program.insts[i].pc), s.text = program.texts[program.insts[i].text];
    s.issued = cu.issued_by_inst[i];
    stalls.push_back(std::move(s));
  }
  constexpr size_t kTopStalls = 32;
  std::stable_sort(stalls.begin(), stalls.end(), [](auto& a, auto& b) { return a.cycles > b.cycles; });
  if (stalls.size() > kTopStalls) stalls.resize(kTopStalls);
  rep.top_stalls = std::move(stalls);
  rep.hot_loop = cu.hot_loop;
  return rep;
}

}  // namespace vgpu
