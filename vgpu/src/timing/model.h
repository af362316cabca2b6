// The timing model (docs/vgpu-timing.md): which workgroups of a dispatch to sample, and the prediction made from
// their recorded instruction streams (trace.h).
#pragma once
#include <cstdint>
#include <vector>

#include "program.h"
#include "timing/trace.h"
#include "vgpu/device.h"

namespace vgpu {

struct Timeline;  // timeline.h

// The sampled CU's first round: the workgroups the hardware deals to CU 0 of XCD 0 while it holds
// `workgroups_per_cu` of them at once, and how many such rounds that CU runs for the whole grid.
struct TimingSample {
  uint32_t workgroups_per_cu = 1;
  uint64_t rounds = 1;
  // Workgroups in the CU's last round when its share leaves fewer than workgroups_per_cu for it (0: the last round is
  // full). The dispatcher hands a CU its next workgroup when one ends, so the last round runs only the remainder.
  uint32_t last_round = 0;
  std::vector<uint64_t> workgroups;  // linear ids, ascending
  // Probes: workgroups spread over the whole grid, recorded only to weigh how much work a workgroup does on average
  // against the sample (their instruction counts), for grids whose workgroups differ (causal attention). In
  // sample-only mode they run after the sample, one at a time, and stop early when the first two match it.
  std::vector<uint64_t> probes;      // linear ids, ascending, none of them sampled
};

// Probes a dispatch records at most.
inline constexpr size_t kMaxTimingProbes = 16;

// Whether the probes recorded so far match the sample's mean work exactly (a uniform grid: no more are needed).
bool probes_match_sample(const std::vector<WorkgroupTrace>& sample, const std::vector<WorkgroupTrace>& probes,
                         size_t recorded);

TimingSample plan_timing_sample(const ProductInfo& product, const Program& program, const LaunchParams& launch,
                                uint32_t lds_bytes);

// Replays the traces on one CU of `product` and scales the result to the grid.
// Replays the traces on one CU of `product` and scales the result to the grid. With a `timeline`, the replayed round
// is recorded into it too (timeline.h); without one nothing is recorded.
TimingReport model_dispatch(const ProductInfo& product, const Program& program, const LaunchParams& launch,
                            const TimingSample& sample, const std::vector<WorkgroupTrace>& traces,
                            const std::vector<WorkgroupTrace>& probes, Timeline* timeline = nullptr);

// Static timing facts of one instruction (exposed for tests). Its IssueKind is the instruction table's (program.h).
// The input type class of an MFMA, which picks the sustained clock under dense matrix load (TimingFacts).
enum class MfmaClass : uint8_t { f16, bf16, fp8, other };
struct InstTiming {
  static constexpr uint8_t kNoWait = 63;  // s_waitcnt: the counter is not waited on (the largest count it encodes)
  IssueKind kind = IssueKind::valu;
  MfmaClass mfma_class = MfmaClass::other;
  uint8_t vmcnt = kNoWait, lgkmcnt = kNoWait;  // s_waitcnt forms: the counts they wait for
  uint32_t passes = 0;       // MFMA: 4-cycle passes the matrix core is busy
  double flops = 0;          // MFMA: 2*M*N*K*blocks
  uint32_t bytes_per_lane = 0;  // VMEM / LDS
  bool atomic = false;          // VMEM: a read-modify-write atomic (performed beyond the L2, TimingFacts::atomic_latency)
  uint32_t valu_cycles = 4;  // VALU: cycles the SIMD's vector unit is busy (TimingFacts::valu_cycles, transcendentals)
};
InstTiming inst_timing(Arch arch, const Inst& inst, const TimingFacts& facts);
const char* issue_kind_name(IssueKind k);  // "VALU", "MFMA", ... (timeline.cpp)

}  // namespace vgpu
