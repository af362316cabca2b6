// Profile merging and reporting (see profile.h).
#include "timing/profile.h"

namespace vgpu {

void Profile::add(const Profile& other) {
  for (size_t i = 0; i < other.executed.size(); ++i) {
    executed[i] += other.executed[i];
    lds_accesses[i] += other.lds_accesses[i];
    lds_conflicts[i] += other.lds_conflicts[i];
  }
}

void report_profile(const Program& program, const Profile& profile, DispatchStats& stats) {
  stats.instructions.clear();
  stats.lds_accesses = stats.lds_conflict_cycles = 0;
  for (size_t i = 0; i < profile.executed.size(); ++i) {
    if (!profile.executed[i]) continue;
    const Inst& I = program.insts[i];
    stats.instructions.push_back({uint64_t(int64_t(I.pc)), program.texts[I.text], profile.executed[i],
                                  profile.lds_accesses[i], profile.lds_conflicts[i]});
    stats.lds_accesses += profile.lds_accesses[i];
    stats.lds_conflict_cycles += profile.lds_conflicts[i];
  }
}

}  // namespace vgpu
