// vgpuGetLastDispatch (vgpu/include/vgpu/hip_ext.h): what the virtual device measured for the most recent kernel
// launch of the process, for programs that want per-kernel numbers.
#include <cstdio>
#include <cstring>

#include "runtime.h"
#include "vgpu/hip_ext.h"

namespace vgpu::hiprt {
namespace {

std::mutex g_last_mu;
bool g_have_last = false;
vgpuDispatchInfo g_last;
vgpuTimingInfo g_last_timing;
bool g_last_modelled = false;
std::vector<vgpuTimingInfo> g_timing_log;  // modelled launches since the last vgpuSetTiming
std::vector<std::vector<vgpuTimingStall>> g_stall_log;  // their top stalls
std::vector<vgpuInstructionProfile> g_last_instructions;

}  // namespace

void remember_dispatch(const KernelInfo& kernel, Arch arch, const LaunchParams& lp, const DispatchStats& stats) {
  count_dispatch(stats);
  vgpuDispatchInfo info;
  std::memset(&info, 0, sizeof info);
  std::snprintf(info.kernel, sizeof info.kernel, "%s", kernel.name.c_str());
  std::snprintf(info.arch, sizeof info.arch, "%.*s", int(arch_info(arch).name.size()), arch_info(arch).name.data());
  info.grid[0] = lp.grid.x, info.grid[1] = lp.grid.y, info.grid[2] = lp.grid.z;
  info.block[0] = lp.block.x, info.block[1] = lp.block.y, info.block[2] = lp.block.z;
  info.waves = stats.waves;
  info.wave_instructions = stats.wave_instructions;
  info.lds_accesses = stats.lds_accesses;
  info.lds_conflict_cycles = stats.lds_conflict_cycles;
  info.wall_seconds = stats.wall_seconds;
  info.profiled = stats.profiled ? 1 : 0;
  info.lds_dma_hazards = stats.lds_dma_hazards;
  info.lds_races = stats.lds_races;
  info.racecheck = stats.racecheck ? 1 : 0;
  std::vector<vgpuInstructionProfile> insts(stats.instructions.size());
  for (size_t i = 0; i < insts.size(); ++i) {
    const InstructionProfile& p = stats.instructions[i];
    insts[i].pc = p.pc;
    std::snprintf(insts[i].text, sizeof insts[i].text, "%s", p.text.c_str());
    insts[i].executed = p.executed;
    insts[i].lds_accesses = p.lds_accesses;
    insts[i].lds_conflict_cycles = p.lds_conflict_cycles;
  }
  const TimingReport& t = stats.timing;
  vgpuTimingInfo timing;
  std::memset(&timing, 0, sizeof timing);
  std::snprintf(timing.product, sizeof timing.product, "%s", t.product.c_str());
  std::snprintf(timing.kernel, sizeof timing.kernel, "%s", kernel.name.c_str());
  std::snprintf(timing.limiter, sizeof timing.limiter, "%s", t.limiter);
  timing.seconds = t.seconds, timing.cycles = t.cycles, timing.clock_ghz = t.clock_ghz;
  timing.peak_clock_ghz = t.peak_clock_ghz;
  timing.round_cycles = t.round_cycles, timing.rounds = t.rounds, timing.workgroups_per_cu = t.workgroups_per_cu;
  timing.sampled_workgroups = t.sampled_workgroups, timing.sample_only = t.sample_only;
  timing.probed_workgroups = t.probed_workgroups, timing.work_weight = t.work_weight;
  timing.l2_floor_cycles = t.l2_floor_cycles, timing.hbm_floor_cycles = t.hbm_floor_cycles;
  timing.mfma_flops = t.mfma_flops, timing.vmem_bytes = t.vmem_bytes, timing.hbm_bytes = t.hbm_bytes;
  timing.mfma_busy = t.mfma_busy, timing.wait_memory = t.wait_memory, timing.wait_lds = t.wait_lds;
  timing.wait_barrier = t.wait_barrier, timing.wait_nop = t.wait_nop, timing.issue_bound = t.issue_bound;
  timing.valu_busy = t.valu_busy;
  timing.waves = t.waves, timing.replayed_cycles = t.replayed_cycles, timing.skipped_cycles = t.skipped_cycles;
  static_assert(VGPU_STALL_CAUSES == int(kStallCauses));
  for (size_t c = 0; c < kStallCauses; ++c) timing.wave_cycles[c] = t.wave_cycles[c];
  timing.hot_loop_found = t.hot_loop.found;
  timing.hot_loop_begin_pc = t.hot_loop.begin_pc, timing.hot_loop_end_pc = t.hot_loop.end_pc;
  timing.hot_loop_mfma_util = t.hot_loop.mfma_util;
  for (size_t s = 0; s < t.hot_loop.simds.size() && s < 4; ++s) {
    const HotLoop::Simd& h = t.hot_loop.simds[s];
    timing.hot_loop_simd[s] = {h.mfmas, h.between, h.between_valu, h.between_salu, h.between_vmem, h.between_lds,
                               h.between_other, h.idle_between, h.util};
  }
  std::vector<vgpuTimingStall> stalls(t.top_stalls.size());
  for (size_t i = 0; i < stalls.size(); ++i) {
    const InstructionStall& s = t.top_stalls[i];
    stalls[i].pc = s.pc;
    std::snprintf(stalls[i].text, sizeof stalls[i].text, "%s", s.text.c_str());
    stalls[i].issued = s.issued, stalls[i].cycles = s.cycles, stalls[i].cause = int(s.cause);
    for (size_t c = 0; c < kStallCauses; ++c) stalls[i].by_cause[c] = s.by_cause[c];
  }
  std::lock_guard lock(g_last_mu);
  g_last = info;
  g_last_timing = timing;
  g_last_modelled = t.modelled;
  if (t.modelled) g_timing_log.push_back(timing), g_stall_log.push_back(std::move(stalls));
  g_last_instructions = std::move(insts);
  g_have_last = true;
}

}  // namespace vgpu::hiprt

using namespace vgpu::hiprt;

extern "C" __attribute__((visibility("default"))) int vgpuGetLastDispatch(vgpuDispatchInfo* out) {
  if (!out) return 1;
  std::lock_guard lock(g_last_mu);
  if (!g_have_last) return 1;
  *out = g_last;
  return 0;
}

extern "C" __attribute__((visibility("default"))) const char* vgpuMfmaArithmetic(void) {
  return vgpu::mfma_arithmetic();
}

extern "C" __attribute__((visibility("default"))) int vgpuSetProfiling(int on) {
  Runtime::get().device().set_profiling(on != 0);
  return 0;
}

extern "C" __attribute__((visibility("default"))) int vgpuSetRaceCheck(int on) {
  Runtime::get().device().set_racecheck(on != 0);
  return 0;
}

extern "C" __attribute__((visibility("default"))) int vgpuGetLastDispatchInstructions(vgpuInstructionProfile* out,
                                                                                      int max) {
  std::lock_guard lock(g_last_mu);
  const int n = int(g_last_instructions.size());
  for (int i = 0; out && i < n && i < max; ++i) out[i] = g_last_instructions[i];
  return n;
}

extern "C" __attribute__((visibility("default"))) int vgpuSetTiming(const char* product, int sample_only) {
  vgpu::Device& dev = Runtime::get().device();
  {
    std::lock_guard lock(g_last_mu);
    g_timing_log.clear();
    g_stall_log.clear();
  }
  if (!product || !*product) return dev.set_timing(nullptr), 0;
  const vgpu::ProductInfo* p = vgpu::find_product(product);
  if (!p) return 1;
  dev.set_timing(p, sample_only != 0);
  return 0;
}

extern "C" __attribute__((visibility("default"))) int vgpuGetLastTiming(vgpuTimingInfo* out) {
  if (!out) return 1;
  std::lock_guard lock(g_last_mu);
  if (!g_have_last || !g_last_modelled) return 1;
  *out = g_last_timing;
  return 0;
}

extern "C" __attribute__((visibility("default"))) int vgpuGetTimingLog(vgpuTimingInfo* out, int max) {
  std::lock_guard lock(g_last_mu);
  const int n = int(g_timing_log.size());
  for (int i = 0; out && i < n && i < max; ++i) out[i] = g_timing_log[i];
  return n;
}

extern "C" __attribute__((visibility("default"))) int vgpuGetTimingStalls(int launch, vgpuTimingStall* out, int max) {
  std::lock_guard lock(g_last_mu);
  if (launch < 0) launch = int(g_stall_log.size()) - 1;
  if (launch < 0 || launch >= int(g_stall_log.size())) return 0;
  const std::vector<vgpuTimingStall>& s = g_stall_log[size_t(launch)];
  for (int i = 0; out && i < int(s.size()) && i < max; ++i) out[i] = s[size_t(i)];
  return int(s.size());
}

extern "C" __attribute__((visibility("default"))) const char* vgpuStallCauseName(int cause) {
  return cause >= 0 && cause < VGPU_STALL_CAUSES ? vgpu::to_string(vgpu::StallCause(cause)) : "?";
}

extern "C" __attribute__((visibility("default"))) int vgpuSetTimingTrace(const char* path) {
  Runtime::get().device().set_timing_trace(path ? path : "");
  return 0;
}
