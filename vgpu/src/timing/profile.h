// Per-instruction counters of a profiled dispatch (HK_VGPU_PROFILE=1): each worker thread counts into its own
// Profile, the dispatch sums them and reports the executed instructions in its DispatchStats.
#pragma once
#include <cstdint>
#include <vector>

#include "program.h"
#include "vgpu/device.h"

namespace vgpu {

struct Profile {
  std::vector<uint64_t> executed, lds_accesses, lds_conflicts;  // per instruction index of the Program
  void resize(size_t n) { executed.assign(n, 0), lds_accesses.assign(n, 0), lds_conflicts.assign(n, 0); }
  // Adds another worker's counts (same program).
  void add(const Profile& other);
};

// The executed instructions of `program`, in program order with their counts, and the LDS totals.
void report_profile(const Program& program, const Profile& profile, DispatchStats& stats);

}  // namespace vgpu
