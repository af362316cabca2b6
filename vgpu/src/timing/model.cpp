// The cycle model of one CU (docs/vgpu-timing.md). Waves of the sampled workgroups sit on 4 SIMDs as the hardware
// places them (a workgroup's waves round-robin over the SIMDs). Each clock one SIMD, in turn, may issue: at most one
// instruction per wave and one per category (VALU or MFMA, SALU/SMEM, VMEM, LDS, branch/message), waves taken by
// {s_setprio priority, age} (timing.md 4, [RPC]). Every latency is known when an instruction issues (fixed
// latencies behind bandwidth-limited pipes), so s_waitcnt resolves at once to the cycle its counters allow.
#include "timing/model.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>

namespace vgpu {
namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

struct SimWave {
  const std::vector<TraceOp>* ops = nullptr;
  size_t next = 0;
  int simd = 0, group = 0;
  uint32_t priority = 0;
  uint64_t age = 0;
  uint64_t ready = 0;        // the first cycle it may issue again
  bool at_barrier = false, done = false;
  std::deque<uint64_t> vm, lgkm;  // completion cycles of outstanding counted operations, in issue order
  uint64_t finished = 0;
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
  double wait_memory = 0, wait_lds = 0, wait_barrier = 0, wait_nop = 0, issue_bound = 0, wave_cycles = 0;
};

CuResult simulate_cu(const ProductInfo& product, const Program& prog, const std::vector<InstTiming>& facts,
                     const std::vector<WorkgroupTrace>& traces, double vmem_latency, size_t groups = SIZE_MAX) {
  const TimingFacts& f = product.timing;
  const ArchInfo& arch = arch_info(product.arch);

  std::vector<SimWave> waves;
  int next_simd = 0;
  for (size_t g = 0; g < std::min(groups, traces.size()); ++g)  // the first `groups` workgroups
    for (const WaveTrace& t : traces[g].waves) {
      SimWave w;
      w.ops = &t.ops, w.group = int(g), w.simd = next_simd, w.age = waves.size();
      next_simd = (next_simd + 1) % int(arch.simds_per_cu);
      waves.push_back(w);
    }
  std::vector<std::vector<int>> on_simd(arch.simds_per_cu);
  for (size_t i = 0; i < waves.size(); ++i) on_simd[waves[i].simd].push_back(int(i));
  std::vector<uint64_t> valu_free(arch.simds_per_cu, 0), mfma_free(arch.simds_per_cu, 0);
  std::vector<uint64_t> lds_port_free(2, 0);
  uint64_t vmem_free = 0;
  CuResult r;
  size_t live = waves.size();
  for (SimWave& w : waves)
    if (w.ops->empty()) w.done = true, --live;

  auto arrive_barrier = [&](int group, uint64_t now) {
    bool all = true;
    for (const SimWave& w : waves)
      if (w.group == group && !w.done && !w.at_barrier) all = false;
    if (!all) return;
    for (SimWave& w : waves)
      if (w.group == group && w.at_barrier) {
        w.at_barrier = false;
        r.wait_barrier += double(now + f.barrier_cycles - w.ready);
        w.ready = now + f.barrier_cycles;
      }
  };

  std::vector<int> candidates;
  uint64_t now = 0;
  int idle_turns = 0;
  while (live > 0) {
    const int simd = int(now % arch.simds_per_cu);
    candidates.clear();
    for (int i : on_simd[simd]) {
      const SimWave& w = waves[i];
      if (!w.done && !w.at_barrier && w.ready <= now) candidates.push_back(i);
    }
    std::sort(candidates.begin(), candidates.end(), [&](int a, int b) {
      const SimWave &x = waves[a], &y = waves[b];
      return x.priority != y.priority ? x.priority > y.priority : x.age < y.age;
    });
    bool used[6] = {};  // valu/mfma, salu/smem, vmem, lds, branch, internal (unlimited)
    bool issued_any = false;
    for (int i : candidates) {
      SimWave& w = waves[i];
      const TraceOp& op = (*w.ops)[w.next];
      const Inst& I = prog.insts[op.inst];
      const InstTiming& t = facts[op.inst];
      int unit = 5;
      switch (t.kind) {
        case IssueKind::valu: case IssueKind::mfma: unit = 0; break;
        case IssueKind::salu: case IssueKind::smem: unit = 1; break;
        case IssueKind::vmem: unit = 2; break;
        case IssueKind::lds: unit = 3; break;
        case IssueKind::branch: unit = 4; break;
        default: break;
      }
      bool blocked = unit < 5 && used[unit];
      if (t.kind == IssueKind::valu || t.kind == IssueKind::mfma) blocked |= valu_free[simd] > now;
      if (t.kind == IssueKind::mfma) blocked |= mfma_free[simd] > now;
      // A pipe with more than a few hundred cycles of backlog stops accepting (the hardware's queues are finite).
      if (t.kind == IssueKind::vmem) blocked |= vmem_free > now + 256;
      if (t.kind == IssueKind::lds) blocked |= lds_port_free[simd / 2] > now + 64;
      if (blocked) {
        // Ready, not picked: it waits a whole turn. Waiting for its SIMD's matrix core is MFMA-bound, not issue-bound.
        if (!(t.kind == IssueKind::mfma && mfma_free[simd] > now)) r.issue_bound += arch.simds_per_cu;
        continue;
      }
      if (unit < 5) used[unit] = true;
      issued_any = true;
      w.next++;
      w.ready = now + 1;
      switch (t.kind) {
        case IssueKind::valu: valu_free[simd] = now + t.valu_cycles, r.valu_busy += t.valu_cycles; break;
        case IssueKind::mfma:
          valu_free[simd] = now + 4;
          mfma_free[simd] = now + 4ull * t.passes;
          r.mfma_busy += 4.0 * t.passes, r.mfma_flops += t.flops;
          r.mfma_busy_by_class[int(t.mfma_class)] += 4.0 * t.passes;
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
          uint64_t& port = lds_port_free[simd / 2];
          port = std::max(now, port) + ceil_div(bytes, f.lds_port_bytes_per_clk) + op.lds_extra;
          w.lgkm.push_back(port + f.lds_latency);
          break;
        }
        case IssueKind::branch: w.ready = now + f.branch_cycles, r.wait_nop += f.branch_cycles; break;
        case IssueKind::nop: {
          const uint64_t c = uint64_t(f.wait_state_cycles) * ((I.simm & 0xf) + 1);
          w.ready = now + c, r.wait_nop += double(c);
          break;
        }
        case IssueKind::sleep: {
          const uint64_t c = 64ull * std::max<uint32_t>(1, I.simm & 0x7f);
          w.ready = now + c, r.wait_nop += double(c);
          break;
        }
        case IssueKind::setprio: w.priority = I.simm & 3; break;
        case IssueKind::waitcnt: {
          // gfx9 encoding: vmcnt [3:0] and [15:14], lgkmcnt [11:8].
          const uint32_t vm = (I.simm & 0xf) | ((I.simm >> 14) & 3) << 4, lgkm = (I.simm >> 8) & 0xf;
          const uint64_t t_vm = settle(w.vm, vm), t_lgkm = settle(w.lgkm, lgkm);
          const uint64_t until = std::max({now + 1, t_vm, t_lgkm});
          if (until > now + 1) (t_vm >= t_lgkm ? r.wait_memory : r.wait_lds) += double(until - now - 1);
          w.ready = until;
          break;
        }
        case IssueKind::barrier:
          w.at_barrier = true;
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
    if (idle_turns >= int(arch.simds_per_cu) && live > 0) {
      uint64_t soonest = UINT64_MAX;
      for (const SimWave& w : waves)
        if (!w.done && !w.at_barrier) soonest = std::min(soonest, w.ready);
      if (soonest != UINT64_MAX && soonest > now) now = soonest / arch.simds_per_cu * arch.simds_per_cu;
      idle_turns = 0;
    }
  }
  for (const SimWave& w : waves) r.cycles = std::max(r.cycles, w.finished);
  r.wave_cycles = double(r.cycles) * double(waves.size());
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
                            const std::vector<WorkgroupTrace>& probes) {
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
  for (size_t i = 0; i < facts.size(); ++i) facts[i] = inst_timing(program.arch, program.insts[i]);
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

  const CuResult cu = simulate_cu(product, program, facts, traces, latency);
  rep.round_cycles = double(cu.cycles) * weight;
  rep.cu_cycles = rep.round_cycles * double(sample.rounds);
  // A short last round (plan_timing_sample) is replayed with that many of the sampled workgroups.
  if (sample.last_round && sample.last_round < traces.size()) {
    const CuResult last = simulate_cu(product, program, facts, traces, latency, sample.last_round);
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
  if (cu.cycles) {
    rep.wait_memory = cu.wait_memory / cu.wave_cycles, rep.wait_lds = cu.wait_lds / cu.wave_cycles;
    rep.wait_barrier = cu.wait_barrier / cu.wave_cycles, rep.wait_nop = cu.wait_nop / cu.wave_cycles;
    rep.issue_bound = cu.issue_bound / cu.wave_cycles;
  }
  return rep;
}

}  // namespace vgpu
