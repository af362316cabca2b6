// The Chrome trace-event JSON of a replayed round (timeline.h). One engine cycle is written as one microsecond (the
// format's unit), so the viewers' time axis reads in cycles. Per dispatch: a process named by the kernel; a thread per
// wave, sorted by SIMD; "X" slices for runs of issued instructions (their text in args) and for waits (named by
// cause); "C" counters per SIMD (matrix core, VALU) and per LDS port, 1 while busy.
#include "timing/timeline.h"

#include <cxxabi.h>

#include <cinttypes>
#include <cstdlib>

#include "timing/model.h"

namespace vgpu {

const char* to_string(StallCause c) {
  switch (c) {
    case StallCause::issued: return "issued";
    case StallCause::vmcnt: return "vmcnt wait";
    case StallCause::lgkmcnt: return "lgkmcnt wait";
    case StallCause::barrier: return "barrier";
    case StallCause::matrix_busy: return "matrix core busy";
    case StallCause::valu_busy: return "VALU busy";
    case StallCause::queue_full: return "memory queue full";
    case StallCause::arbitration: return "lost arbitration";
    case StallCause::nop: return "s_nop/s_sleep";
    case StallCause::branch: return "branch";
    case StallCause::idle: return "idle (ended)";
    case StallCause::count: break;
  }
  return "?";
}

const char* issue_kind_name(IssueKind k) {
  switch (k) {
    case IssueKind::valu: return "VALU";
    case IssueKind::mfma: return "MFMA";
    case IssueKind::salu: return "SALU";
    case IssueKind::smem: return "SMEM";
    case IssueKind::vmem: return "VMEM";
    case IssueKind::lds: return "LDS";
    case IssueKind::branch: return "branch";
    case IssueKind::waitcnt: return "s_waitcnt";
    case IssueKind::barrier: return "s_barrier";
    case IssueKind::nop: return "s_nop";
    case IssueKind::sleep: return "s_sleep";
    case IssueKind::setprio: return "s_setprio";
    case IssueKind::end: return "s_endpgm";
    case IssueKind::internal: return "other";
  }
  return "?";
}

namespace {

// Chrome's reserved colour names (Perfetto picks its own by slice name).
const char* colour(StallCause c, IssueKind k) {
  if (c == StallCause::issued) switch (k) {
      case IssueKind::mfma: return "thread_state_running";
      case IssueKind::valu: return "rail_response";
      case IssueKind::salu: case IssueKind::setprio: return "olive";
      case IssueKind::smem: case IssueKind::vmem: return "rail_load";
      case IssueKind::lds: return "yellow";
      default: return "grey";
    }
  switch (c) {
    case StallCause::vmcnt: return "terrible";
    case StallCause::lgkmcnt: return "bad";
    case StallCause::barrier: return "thread_state_iowait";
    case StallCause::matrix_busy: return "thread_state_runnable";
    case StallCause::valu_busy: return "rail_animation";
    case StallCause::queue_full: return "rail_idle";
    case StallCause::arbitration: return "thread_state_sleeping";
    case StallCause::idle: return "white";
    default: return "generic_work";
  }
}

void escape(std::string& out, std::string_view s) {
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (uint8_t(c) < 0x20) out += ' ';
    else out += c;
  }
}

// A kernel's readable name: its symbol demangled, without the argument list.
std::string readable(const std::string& symbol) {
  int status = 0;
  char* plain = abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status);
  std::string name = status == 0 && plain ? plain : symbol;
  std::free(plain);
  if (size_t cut = name.find('('); cut != std::string::npos) name.resize(cut);
  return name;
}

// Instructions listed in a run's args at most (the rest are counted).
constexpr uint32_t kListed = 16;

}  // namespace

TimelineFile::~TimelineFile() {
  if (file_) std::fclose(file_);
}

bool TimelineFile::append(const Program& prog, const TimingReport& report, const Timeline& tl) {
  if (!file_) {
    file_ = std::fopen(path_.c_str(), "w");
    if (!file_) return std::fprintf(stderr, "vgpu: cannot write the timing trace %s\n", path_.c_str()), false;
  } else {
    std::fseek(file_, -3, SEEK_END);  // over the closing "\n]\n": the array goes on
  }
  const int pid = ++dispatches_;
  std::string out;
  out.reserve(1 << 20);
  char buf[256];
  auto flush = [&] {
    std::fwrite(out.data(), 1, out.size(), file_);
    out.clear();
  };
  bool first = pid == 1;
  auto event = [&] {
    out += first ? "[\n" : ",\n";
    first = false;
  };
  auto meta = [&](const char* what, int tid, const std::string& key, const std::string& value, bool quoted) {
    event();
    std::snprintf(buf, sizeof buf, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%d,\"tid\":%d,\"args\":{\"%s\":", what, pid,
                  tid, key.c_str());
    out += buf;
    if (quoted) out += '"', escape(out, value), out += '"';
    else out += value;
    out += "}}";
  };
  std::snprintf(buf, sizeof buf, "%s on %s: round of %u workgroups, %zu waves, %" PRIu64 " cycles (1 us = 1 cycle)",
                readable(prog.kernel).c_str(), report.product.c_str(), report.sampled_workgroups, tl.waves.size(), tl.cycles);
  meta("process_name", 0, "name", buf, true);
  meta("process_sort_index", 0, "sort_index", std::to_string(pid), false);
  for (size_t w = 0; w < tl.waves.size(); ++w) {
    const Timeline::WaveInfo& info = tl.waves[w];
    std::snprintf(buf, sizeof buf, "SIMD%d wave %zu (workgroup %d wave %d)", info.simd, w, info.group, info.index);
    meta("thread_name", int(w) + 1, "name", buf, true);
    meta("thread_sort_index", int(w) + 1, "sort_index", std::to_string(info.simd * 1000 + int(w)), false);
  }
  for (const TimelineSlice& s : tl.slices) {
    const Timeline::WaveInfo& info = tl.waves[s.wave];
    const std::vector<TraceOp>& ops = *info.ops;
    const Inst& I = prog.insts[ops[s.op].inst];
    const IssueKind kind = IssueKind(s.kind);
    event();
    const char* name = s.cause == StallCause::issued ? issue_kind_name(kind) : to_string(s.cause);
    std::snprintf(buf, sizeof buf,
                  "{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%u,\"ts\":%" PRIu64
                  ",\"dur\":%" PRIu64 ",\"cname\":\"%s\",\"args\":{\"pc\":\"0x%x\",\"n\":%u,\"insts\":[",
                  name, s.cause == StallCause::issued ? "issue" : "wait", pid, unsigned(s.wave) + 1, s.start,
                  s.end - s.start, colour(s.cause, kind), unsigned(I.pc), s.count);
    out += buf;
    for (uint32_t i = 0; i < std::min(s.count, kListed); ++i) {
      const Inst& J = prog.insts[ops[s.op + i].inst];
      std::snprintf(buf, sizeof buf, "%s\"0x%x ", i ? "," : "", unsigned(J.pc));
      out += buf;
      escape(out, prog.texts[J.text]);
      out += '"';
    }
    if (s.count > kListed) out += ",\"... " + std::to_string(s.count - kListed) + " more\"";
    out += "]}}";
    if (out.size() > (1 << 20)) flush();
  }
  auto counter = [&](const std::string& track, const std::vector<std::pair<uint64_t, uint64_t>>& busy) {
    for (auto [start, end] : busy)
      for (auto [ts, v] : {std::pair{start, 1}, {end, 0}}) {
        event();
        std::snprintf(buf, sizeof buf, "{\"ph\":\"C\",\"name\":\"%s\",\"pid\":%d,\"ts\":%" PRIu64 ",\"args\":{\"busy\":%d}}",
                      track.c_str(), pid, ts, v);
        out += buf;
      }
    if (out.size() > (1 << 20)) flush();
  };
  for (size_t s = 0; s < tl.mfma.size(); ++s) counter("SIMD" + std::to_string(s) + " matrix core", tl.mfma[s]);
  for (size_t s = 0; s < tl.valu.size(); ++s) counter("SIMD" + std::to_string(s) + " VALU", tl.valu[s]);
  for (size_t p = 0; p < tl.lds_port.size(); ++p) counter("LDS port " + std::to_string(p), tl.lds_port[p]);
  out += "\n]\n";
  flush();
  std::fflush(file_);
  return !std::ferror(file_);
}

}  // namespace vgpu
