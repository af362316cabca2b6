// Watching a workgroup's LDS for hazards (docs/vgpu-memory.md, "LDS-DMA hazards and races"):
// - bytes a load straight into LDS (LDS DMA) may still be writing: issued, and not yet completed by the issuing wave's
//   s_waitcnt vmcnt (for another wave: by such a wait followed by a barrier). Any access to them is an LDS-DMA hazard.
// - in race-check mode (HK_VGPU_RACECHECK=1), also plain races: a write and a read or write of the same bytes by
//   different waves with no barrier between them.
// By default hazards are warnings (counted, the first few printed); in race-check mode the first hazard or race faults.
#pragma once
#include <cstdint>
#include <vector>

namespace vgpu {

struct Wave;
struct Inst;

// How an instruction touches LDS. LDS atomics take no part in the race check (they are the way waves share a word
// without a barrier), but touching bytes an LDS DMA still writes is a hazard for them too.
enum class LdsUse : uint8_t { read, write, atomic, dma };

// Per worker thread and reused across its workgroups without clearing: every mark carries the serial of the
// workgroup (DMA marks) or the barrier interval (race marks) that made it, so a stale mark never matches.
struct LdsWatch {
  struct DmaMark {
    uint32_t serial = 0;  // the workgroup's (LdsWatch::serial)
    uint32_t seq = 0;     // the load's vmcnt sequence number in its wave (Wave::vm_issued at issue)
    uint32_t inst = 0;    // instruction index of the load
    uint32_t wave = 0;
  };
  std::vector<DmaMark> dma;              // per LDS dword; sized when a workgroup first loads into LDS
  // A filter in front of the per-dword marks (outside race-check mode): the dwords each load into LDS wrote (one
  // wave's instruction) as one span, and per block of kBlock dwords the number of spans that may still be in flight
  // for some wave (not yet completed by a barrier after the loader's wait) covering it. An access that meets no such
  // block meets no mark in flight and skips the per-dword check. The span of the load being issued is `open` until
  // the next watched access of another instruction.
  struct DmaSpan {
    uint32_t seq = 0, wave = 0;
    uint32_t lo = 0, hi = 0;  // dwords, inclusive
  };
  static constexpr uint32_t kBlock = 16;
  std::vector<DmaSpan> spans;
  std::vector<uint16_t> spans_over;  // per block
  uint32_t spans_lo = ~0u, spans_hi = 0;  // the dwords of all `spans` lie in [spans_lo, spans_hi] (none: lo > hi)
  DmaSpan open;
  uint64_t open_insts = 0;  // the open span's wave instruction count (Wave::insts)
  bool has_open = false;
  // Whether a span is open and belongs to the instruction wave `wave` is executing after `insts` instructions.
  bool open_is(uint32_t wave, uint64_t insts) const { return has_open && open.wave == wave && open_insts == insts; }
  // Whether the open span belongs to another instruction (it is committed before that one's accesses are checked).
  bool open_is_other(uint32_t wave, uint64_t insts) const { return has_open && !open_is(wave, insts); }
  // Past kMaxSpans spans in flight (a workgroup that loads into LDS without barriers): every access takes the
  // per-dword check until the next workgroup (the counts stay far below their 16-bit limit).
  static constexpr size_t kMaxSpans = 8192;
  bool saturated = false;
  std::vector<uint64_t> writer, reader;  // race check, per LDS dword: epoch << 32 | wave << 24 | instruction index
  uint32_t serial = 0;                   // bumped per workgroup
  uint32_t epoch = 0;                    // bumped per workgroup and per barrier opening
  bool racecheck = false;
};

// Called for each lane's access once it is inside the allocation (lds_ptr). Returns false after raising a fault
// (race-check mode). Records the lane's write when `use` is dma.
bool watch_lds(Wave& w, const Inst& I, uint32_t addr, uint32_t bytes, int lane, LdsUse use);

// Ends the open span (the load into LDS being issued): from here on it counts in spans_over like the others. What
// the first watched access of another instruction does.
void commit_open_span(LdsWatch& x);

// At a barrier's opening (after the waves' vm_retired_at_barrier moved): drops the filter's spans no wave can see in
// flight any more.
struct Workgroup;
void retire_lds_spans(Workgroup& wg);

// After the dispatch: one line per kind of finding that was only warned about, with the count.
struct DispatchCtx;
void summarize_lds_hazards(const DispatchCtx& ctx);

}  // namespace vgpu
