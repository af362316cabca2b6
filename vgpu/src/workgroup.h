// Running one workgroup: its waves, set up as the hardware starts them, scheduled round-robin until each ends, with
// s_barrier and the barrier-deadlock watchdog. Dispatch (dispatch.cpp) hands workgroups to worker threads.
#pragma once
#include <vector>

#include "profile.h"
#include "wave.h"

namespace vgpu {

// Per worker thread storage reused across workgroups (register files are not cleared: hardware does not either).
struct WorkerStorage {
  Profile profile;
  std::vector<uint32_t> vgprs;
  std::vector<uint8_t> lds, priv;
  std::vector<Wave> waves;
  LdsWatch lds_watch;
};

// Runs workgroup `linear` (x fastest) of the dispatch to completion or to the dispatch's first fault; with `trace`,
// records each wave's instruction stream for the timing model.
void run_workgroup(DispatchCtx& ctx, uint64_t linear, WorkerStorage& storage, WorkgroupTrace* trace = nullptr);

}  // namespace vgpu
