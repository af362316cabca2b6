// The LDS hazard watch (lds_watch.h): LDS DMA bytes still in flight, and races between waves in race-check mode.
#include "memory/lds_watch.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "wave.h"

namespace vgpu {
namespace {

constexpr uint32_t kSharedReaders = 0xff;  // reader mark: more than one wave read the dword in this interval
constexpr size_t kWarningsPerDispatch = 8;

uint64_t race_mark(uint32_t epoch, uint32_t wave, uint32_t inst) {
  return uint64_t(epoch) << 32 | uint64_t(wave & 0xff) << 24 | (inst & 0xffffff);
}
uint32_t mark_epoch(uint64_t m) { return uint32_t(m >> 32); }
uint32_t mark_wave(uint64_t m) { return uint32_t(m >> 24) & 0xff; }
uint32_t mark_inst(uint64_t m) { return uint32_t(m) & 0xffffff; }

const char* verb(LdsUse use) {
  switch (use) {
    case LdsUse::read: return "reads";
    case LdsUse::write: return "writes";
    case LdsUse::atomic: return "updates (atomic)";
    case LdsUse::dma: return "loads into";
  }
  return "touches";
}

std::string describe(const Program& p, uint32_t inst) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "pc 0x%x", unsigned(p.insts[inst].pc));
  return std::string(buf) + " ('" + p.texts[p.insts[inst].text] + "')";
}

std::string bytes_text(uint32_t dword) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "LDS bytes 0x%x..0x%x", 4 * dword, 4 * dword + 3);
  return buf;
}

// A hazard of this wave at instruction I: a fault in race-check mode (returns false), otherwise counted and, for the
// first few distinct (instruction, other instruction) pairs of the dispatch, printed to stderr.
bool report(Wave& w, const Inst& I, int lane, FaultKind kind, uint32_t other_inst, std::string detail) {
  DispatchCtx& ctx = *w.ctx;
  if (w.hazard_at == w.insts) return true;  // one report per instruction execution, for its first lane
  w.hazard_at = w.insts;
  (kind == FaultKind::lds_dma_hazard ? ctx.lds_dma_hazards : ctx.lds_races).fetch_add(1, std::memory_order_relaxed);
  if (ctx.racecheck) {
    w.fault(I, kind, lane, std::move(detail) + " (HK_VGPU_RACECHECK=1 makes this a fault)");
    return false;
  }
  const uint32_t inst = uint32_t(&I - ctx.prog->insts.data());
  std::lock_guard lock(ctx.warn_mu);
  if (ctx.warned.size() >= kWarningsPerDispatch ||
      std::find(ctx.warned.begin(), ctx.warned.end(), std::pair{inst, other_inst}) != ctx.warned.end())
    return true;
  ctx.warned.emplace_back(inst, other_inst);
  Fault f = describe_fault(w, I, kind, lane, std::move(detail));
  std::fprintf(stderr, "vgpu: warning: %s\n", f.message().substr(6).c_str());  // drop the "vgpu: " prefix
  return true;
}

void add_span(LdsWatch& x, const LdsWatch::DmaSpan& s, int by) {
  for (uint32_t b = s.lo / LdsWatch::kBlock; b <= s.hi / LdsWatch::kBlock; ++b) x.spans_over[b] = uint16_t(x.spans_over[b] + by);
}

}  // namespace

void commit_open_span(LdsWatch& x) {
  if (!x.has_open) return;
  x.has_open = false;
  if (x.spans.size() >= LdsWatch::kMaxSpans) {
    x.saturated = true;
    return;
  }
  x.spans.push_back(x.open);
  add_span(x, x.open, 1);
  x.spans_lo = std::min(x.spans_lo, x.open.lo), x.spans_hi = std::max(x.spans_hi, x.open.hi);
}

void retire_lds_spans(Workgroup& wg) {
  if (!wg.watching_dma || wg.watch->racecheck) return;
  LdsWatch& x = *wg.watch;
  commit_open_span(x);
  x.spans_lo = ~0u, x.spans_hi = 0;
  for (size_t i = 0; i < x.spans.size();) {
    if (x.spans[i].seq <= wg.waves[x.spans[i].wave].vm_retired_at_barrier) {
      add_span(x, x.spans[i], -1);
      x.spans[i] = x.spans.back();
      x.spans.pop_back();
    } else {
      x.spans_lo = std::min(x.spans_lo, x.spans[i].lo), x.spans_hi = std::max(x.spans_hi, x.spans[i].hi);
      ++i;
    }
  }
}

bool watch_lds(Wave& w, const Inst& I, uint32_t addr, uint32_t bytes, int lane, LdsUse use) {
  Workgroup& wg = *w.wg;
  LdsWatch& x = *wg.watch;
  const Program& p = *w.ctx->prog;
  const uint32_t inst = uint32_t(&I - p.insts.data());
  const uint32_t first = addr / 4, last = (addr + bytes - 1) / 4;
  const bool dma = use == LdsUse::dma;
  if (dma && !wg.watching_dma) {
    // The workgroup's first load into LDS: from here on every LDS access is watched.
    const size_t dwords = (wg.lds_bytes + 3) / 4;
    if (x.dma.size() < dwords) x.dma.resize(dwords);
    x.spans.clear(), x.has_open = false, x.saturated = false;
    x.spans_lo = ~0u, x.spans_hi = 0;
    x.spans_over.assign(dwords / LdsWatch::kBlock + 1, 0);
    wg.watching = wg.watching_dma = true;
  }
  if (!x.racecheck && wg.watching_dma) {
    if (x.open_is_other(uint32_t(w.id), w.insts)) commit_open_span(x);
    if (dma) {  // this load's span: its lanes extend it
      if (!x.has_open) x.open = {w.vm_issued, uint32_t(w.id), first, last}, x.open_insts = w.insts, x.has_open = true;
      x.open.lo = std::min(x.open.lo, first), x.open.hi = std::max(x.open.hi, last);
    }
    bool meets = x.saturated;
    for (uint32_t b = first / LdsWatch::kBlock; b <= last / LdsWatch::kBlock; ++b) meets |= x.spans_over[b] != 0;
    if (!meets) {  // no mark in flight here: only a load's own marks to write
      if (dma)
        for (uint32_t d = first; d <= last; ++d) x.dma[d] = {x.serial, w.vm_issued, inst, uint32_t(w.id)};
      return true;
    }
  }
  for (uint32_t d = first; d <= last; ++d) {
    if (wg.watching_dma) {
      LdsWatch::DmaMark& m = x.dma[d];
      if (m.serial == x.serial) {
        // In flight: not completed by the loader's s_waitcnt vmcnt; for another wave, not by one followed by a
        // barrier. A wave's own loads into the same bytes land in order.
        const Wave& loader = wg.waves[m.wave];
        const bool own = int(m.wave) == w.id;
        const bool in_flight = m.seq > (own ? loader.vm_retired : loader.vm_retired_at_barrier);
        if (in_flight && !(own && use == LdsUse::dma)) {
          std::string why = std::string(verb(use)) + " " + bytes_text(d) + " while the load into LDS at " +
                            describe(p, m.inst) + " of wave " + std::to_string(m.wave) + " may still be writing them (" +
                            (own ? "not yet completed by the wave's s_waitcnt vmcnt)"
                                 : "not completed by that wave's s_waitcnt vmcnt followed by a barrier)");
          if (!report(w, I, lane, FaultKind::lds_dma_hazard, m.inst, std::move(why))) return false;
        }
      }
      if (use == LdsUse::dma) m = {x.serial, w.vm_issued, inst, uint32_t(w.id)};
    }
    if (!x.racecheck || use == LdsUse::atomic) continue;
    // Plain races: within one barrier interval, a write and any other access of the dword by different waves.
    uint64_t& wr = x.writer[d];
    uint64_t& rd = x.reader[d];
    const uint32_t me = uint32_t(w.id);
    const bool wr_other = mark_epoch(wr) == x.epoch && mark_wave(wr) != me;
    const bool rd_now = mark_epoch(rd) == x.epoch;
    const bool rd_other = rd_now && mark_wave(rd) != me;
    auto race = [&](uint64_t other, const char* what) {
      const uint32_t ow = mark_wave(other);
      std::string who = ow == kSharedReaders ? std::string("other waves") : "wave " + std::to_string(ow);
      return report(w, I, lane, FaultKind::lds_race, mark_inst(other),
                    std::string(verb(use)) + " " + bytes_text(d) + " that " + who + " " + what + " at " +
                        describe(p, mark_inst(other)) + " with no barrier between");
    };
    if (use == LdsUse::read) {
      if (wr_other && !race(wr, "wrote")) return false;
      // A second wave's read marks the dword as shared by readers (keeping the first reader's instruction).
      rd = rd_other ? race_mark(x.epoch, kSharedReaders, mark_inst(rd))
           : rd_now ? rd
                    : race_mark(x.epoch, me, inst);
    } else {
      if (wr_other && !race(wr, "wrote")) return false;
      if (rd_other && !race(rd, "read")) return false;
      wr = race_mark(x.epoch, me, inst);
    }
  }
  return true;
}

void summarize_lds_hazards(const DispatchCtx& ctx) {
  if (ctx.racecheck) return;  // the first one faulted
  if (const uint64_t n = ctx.lds_dma_hazards.load())
    std::fprintf(stderr,
                 "vgpu: warning: kernel %s: %llu LDS-DMA hazard%s (accesses to LDS bytes that a load into LDS may "
                 "still be writing; the data was taken as landed at issue). HK_VGPU_RACECHECK=1 makes the first one a "
                 "fault and also checks for LDS races between waves.\n",
                 ctx.prog->kernel.c_str(), (unsigned long long)n, n == 1 ? "" : "s");
}

}  // namespace vgpu
