// The replayed CU round as a timeline (HK_VGPU_TIMING_TRACE=FILE, docs/vgpu-timing.md): what each wave did in each
// cycle, as the cycle model (model.cpp) attributes it, and when each SIMD's matrix core and vector unit and each LDS
// port were busy. Recorded only when a trace is asked for (simulate_cu's Traced instantiation); written as Chrome
// trace-event JSON (Perfetto, chrome://tracing), one process per dispatch.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "program.h"
#include "timing/trace.h"
#include "vgpu/device.h"

namespace vgpu {

// A stretch of one wave's time: issuing a run of consecutive instructions of one class (cause issued: ops
// [op, op + count) of the wave's stream), or one cause of waiting charged to the instruction at ops[op].
struct TimelineSlice {
  uint64_t start = 0, end = 0;
  uint32_t op = 0, count = 1;
  uint16_t wave = 0;
  StallCause cause = StallCause::issued;
  uint8_t kind = 0;  // issued: the IssueKind of the run's instructions (model.h)
};

struct Timeline {
  struct WaveInfo {
    int simd = 0, group = 0, index = 0;    // SIMD, workgroup of the sample, wave index in its workgroup
    const std::vector<TraceOp>* ops = nullptr;
  };
  std::vector<WaveInfo> waves;
  std::vector<TimelineSlice> slices;       // in the order they were charged (per wave: in time order)
  // Busy intervals [start, end), merged where they touch: per SIMD the matrix core and the VALU, per LDS port.
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> mfma, valu, lds_port;
  uint64_t cycles = 0;

  static void busy(std::vector<std::pair<uint64_t, uint64_t>>& track, uint64_t start, uint64_t end) {
    if (end <= start) return;
    if (!track.empty() && track.back().second >= start) track.back().second = std::max(track.back().second, end);
    else track.push_back({start, end});
  }
};

// The Chrome trace of one process after another in one file, kept a complete JSON array after every dispatch.
class TimelineFile {
 public:
  explicit TimelineFile(std::string path) : path_(std::move(path)) {}
  ~TimelineFile();
  TimelineFile(const TimelineFile&) = delete;
  TimelineFile& operator=(const TimelineFile&) = delete;
  // Appends one dispatch's round; false (with a message on stderr) if the file cannot be written.
  bool append(const Program& prog, const TimingReport& report, const Timeline& timeline);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  int dispatches_ = 0;
};

}  // namespace vgpu
