// Running one workgroup: its waves, set up as the hardware starts them, scheduled round-robin until each ends, with
// s_barrier and the barrier-deadlock watchdog. A workgroup can be run in slices and resumed (its state lives in its
// WorkerStorage), so the dispatch can keep several in flight. Dispatch (dispatch.cpp) hands workgroups to worker
// threads.
#pragma once
#include <vector>

#include "timing/profile.h"
#include "wave.h"

namespace vgpu {

// One workgroup slot of a worker thread, reused across workgroups (register files are not cleared: hardware does not
// either). It holds everything a started workgroup needs to be resumed.
struct WorkerStorage {
  Profile profile;
  std::vector<uint32_t> vgprs;
  std::vector<uint8_t> lds, priv;
  std::vector<Wave> waves;
  LdsWatch lds_watch;
  Workgroup wg;
  int nwaves = 0;
  uint64_t spent_while_waiting = 0;  // instructions run while some wave waits at a barrier
  int released_turns = 0;            // short turns left since the last barrier opened (workgroup.cpp)
  WorkgroupTrace* trace = nullptr;
};

// Sets up workgroup `linear` (x fastest) in `storage`, its waves at their first instruction; with `trace`, its waves
// record their instruction streams for the timing model.
void start_workgroup(DispatchCtx& ctx, uint64_t linear, WorkerStorage& storage, WorkgroupTrace* trace = nullptr);

// Runs the started workgroup until it ends or faults (true), or until its waves have run at least `budget`
// instructions in this call (false: resume it with another call). `ran` gets the instructions run.
bool step_workgroup(DispatchCtx& ctx, WorkerStorage& storage, uint64_t budget, uint64_t& ran);

// Whether the started workgroup is waiting on something outside it: each of its running waves, stepped until it is back
// at the same instruction, has the same registers again (a loop that re-reads memory nobody in the workgroup changes),
// and at least one wave runs. The probe's instructions are real execution.
bool workgroup_waits(DispatchCtx& ctx, WorkerStorage& storage);

// Runs workgroup `linear` to completion or to the dispatch's first fault.
inline void run_workgroup(DispatchCtx& ctx, uint64_t linear, WorkerStorage& storage, WorkgroupTrace* trace = nullptr) {
  uint64_t ran = 0;
  start_workgroup(ctx, linear, storage, trace);
  step_workgroup(ctx, storage, ~uint64_t(0), ran);
}

}  // namespace vgpu
