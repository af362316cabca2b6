// What the timing model records while the functional executor runs a sampled workgroup: each wave's instructions in
// the order it issued them, with the facts only execution knows (active lanes, LDS bank-conflict cycles), and the
// global allocations the workgroup touched. The cycle model (model.cpp) replays these streams; it never re-executes.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "timing/profile.h"

namespace vgpu {

struct TraceOp {
  uint32_t inst;           // index into Program::insts
  uint16_t lds_extra;      // extra cycles of this DS instruction's bank conflicts (vgpu's bank model)
  uint8_t lanes;           // active lanes at issue (64 = all)
};

struct WaveTrace {
  std::vector<TraceOp> ops;
};

// One sampled workgroup: its waves' streams and the global allocations (base, bytes) its vector memory reached.
struct WorkgroupTrace {
  uint64_t linear = 0;
  std::vector<WaveTrace> waves;
  std::vector<std::pair<uint64_t, uint64_t>> allocations;
  Profile conflicts;       // the bank model's per-instruction counters, read back per execution
  bool done = false;
};

}  // namespace vgpu
