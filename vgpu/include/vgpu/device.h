// The virtual CDNA device: memory, dispatch of kernels, and the faults a dispatch can raise. Implemented by
// src/dispatch.cpp (dispatch, worker threads), workgroup.cpp (waves of one workgroup), fault.cpp, profile.cpp,
// code_image.cpp (code objects placed in device memory) and memory_map.cpp.
#pragma once
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "vgpu/arch.h"
#include "vgpu/code_object.h"
#include "vgpu/error.h"
#include "vgpu/memory_map.h"

namespace vgpu {

enum class FaultKind : uint8_t {
  none,
  unknown_instruction,   // an instruction vgpu does not implement (or cannot decode)
  memory_out_of_bounds,  // a global/flat access outside every allocation
  lds_out_of_bounds,     // an LDS access past the workgroup's allocation
  barrier_deadlock,      // waves wait at s_barrier that can never complete
  private_out_of_bounds, // a scratch access past the lane's private segment
  watchdog,              // the dispatch ran past its instruction budget
  bad_launch,            // launch parameters the kernel cannot take
  trap,                  // the kernel executed s_trap: a failed assert, abort() or __builtin_trap()
  lds_dma_hazard,        // an LDS access to bytes a load into LDS may still be writing (race-check mode)
  lds_race,              // waves access the same LDS bytes, one writing, with no barrier between (race-check mode)
  workgroup_deadlock,    // resident workgroups wait on each other and none can finish (e.g. a grid barrier wider
                         // than the workgroups the device holds at once)
};
const char* to_string(FaultKind k);

// The x86 instruction set the MFMA arithmetic runs on in this process: "sse4.1", "avx2" or "avx512" (the widest the
// CPU has, or HK_VGPU_MFMA_SIMD's choice); results are the same bit for bit on each.
const char* mfma_arithmetic();

// Where and why a dispatch stopped. `message()` is the one-line text the HIP error API reports.
struct Fault {
  FaultKind kind = FaultKind::none;
  std::string kernel;
  uint64_t pc = 0;            // byte offset of the instruction from the start of the kernel's code
  std::string instruction;    // disassembled text
  uint32_t workgroup[3] = {0, 0, 0};
  int wave = -1;              // wave index within the workgroup
  int lane = -1;              // first offending lane, -1 if not lane-specific
  std::string detail;         // e.g. "address 0x... is outside every allocation"
  std::string message() const;
  explicit operator bool() const { return kind != FaultKind::none; }
};

// One instruction's counters in a profiled dispatch.
struct InstructionProfile {
  uint64_t pc = 0;                  // byte offset from the kernel entry
  std::string text;                 // disassembly
  uint64_t executed = 0;            // times a wave issued it
  uint64_t lds_accesses = 0;        // DS executions that touched LDS banks
  uint64_t lds_conflict_cycles = 0; // extra cycles its lanes' bank conflicts cost, summed over executions
};

// Where a wave's cycle of the replayed round went (the timing model attributes each one to exactly one cause,
// docs/vgpu-timing.md "Stalls"): it issued; it waited for vector memory (s_waitcnt vmcnt), for LDS / scalar memory
// (lgkmcnt), at a barrier; it was ready but its SIMD's matrix core or vector unit was busy, the memory pipe's queue
// was full, or another wave took the unit (lost arbitration, or not its SIMD's turn); s_nop / s_sleep; a branch's
// refetch; or it had ended.
enum class StallCause : uint8_t {
  issued, vmcnt, lgkmcnt, barrier, matrix_busy, valu_busy, queue_full, arbitration, nop, branch, idle, count
};
inline constexpr size_t kStallCauses = size_t(StallCause::count);
const char* to_string(StallCause c);

// The cycles one instruction of the kernel was charged in the replayed round, over all waves, by cause: a wait is
// charged to the instruction that caused it (s_waitcnt, s_barrier, s_nop, the branch), a stall of a ready wave to the
// instruction that could not issue.
struct InstructionStall {
  uint64_t pc = 0;
  std::string text;
  uint64_t issued = 0;                       // times a wave of the round issued it
  double cycles = 0;                         // stall cycles: every cause but issued and idle
  StallCause cause = StallCause::issued;     // the largest of them
  std::array<double, kStallCauses> by_cause{};
};

// The hot loop of the round: the innermost loop (a backward branch's body) that issued the most MFMAs, else the one
// that issued the most instructions. Per SIMD, over its time in the loop (its first to last issue of a loop
// instruction): the matrix core's use and what its waves issued between consecutive MFMAs (from any code: a ping-pong
// kernel's other wave group runs other code on the same SIMD).
struct HotLoop {
  bool found = false;
  uint64_t begin_pc = 0, end_pc = 0;      // the loop's first instruction and its backward branch
  double mfma_util = 0;                   // matrix cores busy over the SIMDs' time in the loop (first to last issue)
  struct Simd {
    uint64_t mfmas = 0;                   // MFMAs issued on this SIMD in that time
    double between = 0;                   // instructions issued between consecutive ones, on average
    // ...of which: VALU, SALU/SMEM, VMEM, LDS, waits/branches/other
    double between_valu = 0, between_salu = 0, between_vmem = 0, between_lds = 0, between_other = 0;
    double idle_between = 0;              // matrix core idle cycles between consecutive ones, on average
    double util = 0;                      // this SIMD's matrix core busy over its time in the loop
  };
  std::vector<Simd> simds;
};

// The timing model's prediction for one dispatch (Device::set_timing, or HK_VGPU_TIMING=mi300x|mi325x|mi350x|mi355x):
// the sampled workgroups of one CU replayed cycle by cycle (vgpu/src/timing), scaled to the whole grid and bounded by
// the device's L2 and HBM bandwidth. docs/vgpu-timing.md says what is modelled and how.
struct TimingReport {
  bool modelled = false;
  std::string product;
  double clock_ghz = 0;             // the engine clock the model ran at (lower than the peak under MFMA load)
  double peak_clock_ghz = 0;
  double seconds = 0;              // predicted kernel time
  double cycles = 0;               // the same in engine clocks
  double cu_cycles = 0;            // one CU's share of the grid: rounds x round_cycles (a short last round replayed)
  double round_cycles = 0;         // one round of concurrent workgroups on the sampled CU
  double l2_floor_cycles = 0, hbm_floor_cycles = 0;  // the device-level bandwidth bounds
  const char* limiter = "";        // "compute units", "L2 bandwidth" or "HBM bandwidth"
  uint32_t workgroups_per_cu = 0;  // concurrent workgroups on a CU (waves, VGPRs, LDS)
  uint64_t rounds = 0;
  uint32_t sampled_workgroups = 0;
  uint32_t probed_workgroups = 0;  // recorded to weigh the average workgroup's work against the sample's
  double work_weight = 1;          // that average over the sample's mean (instructions issued); scales the round
  bool sample_only = false;        // workgroups outside the sample were not executed
  double mfma_flops = 0;           // matrix FLOPs of the whole grid
  double vmem_bytes = 0, hbm_bytes = 0;  // vector memory traffic of the grid, and what of it reaches HBM
  // Where the sampled CU's time went: matrix cores busy (of 4 x round_cycles), and the waves' time (of waves x
  // round_cycles) waiting on vector memory, on LDS / scalar memory, at barriers, in s_nop / s_sleep / branches, and
  // ready but not picked (issue-bound).
  double valu_busy = 0;            // the SIMDs' vector units busy (of 4 x round_cycles), MFMA excluded
  double mfma_busy = 0, wait_memory = 0, wait_lds = 0, wait_barrier = 0, wait_nop = 0, issue_bound = 0;
  // The replayed round in full (before the work weight scales it): its waves, cycles, and every wave-cycle by cause
  // (they sum to waves x replayed_cycles); the cycles the replay skipped with every wave waiting (no issue possible).
  uint32_t waves = 0;
  double replayed_cycles = 0, skipped_cycles = 0;
  std::array<double, kStallCauses> wave_cycles{};
  std::vector<InstructionStall> top_stalls;  // the instructions with the most stall cycles, most first (up to 32)
  HotLoop hot_loop;
};

// Counters of one dispatch. The profile fields are filled only when profiling is on
// (Device::set_profiling, or HK_VGPU_PROFILE=1 in the environment).
struct DispatchStats {
  uint64_t wave_instructions = 0;   // instructions issued, counted once per wave
  uint64_t waves = 0;
  uint64_t workgroups = 0;
  double wall_seconds = 0;
  bool profiled = false;
  uint64_t lds_accesses = 0;
  uint64_t lds_conflict_cycles = 0;
  std::vector<InstructionProfile> instructions;  // executed instructions, in program order
  TimingReport timing;             // filled when the timing model is on
  // LDS hazards found (src/lds_watch.h): accesses to LDS bytes a load into LDS may still be writing, counted once per
  // wave and instruction; LDS races between waves (race-check mode only). In race-check mode the first one faults.
  uint64_t lds_dma_hazards = 0;
  uint64_t lds_races = 0;
  bool racecheck = false;
};

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t(x) * y * z; }
};

struct Program;  // a decoded kernel, opaque (see executor)
class TimelineFile;  // the timing trace being written (src/timing/timeline.h)

struct LaunchParams {
  Dim3 grid;                 // in workgroups
  Dim3 block;                // work-items per workgroup
  uint32_t dynamic_lds = 0;  // bytes of dynamic LDS on top of the kernel's static LDS
  const void* kernarg = nullptr;  // the complete kernarg segment (explicit and hidden arguments)
  size_t kernarg_size = 0;
};

class Device {
 public:
  // A device standing in for `product` (default_product(arch) for the first form).
  explicit Device(Arch arch) : Device(default_product(arch)) {}
  explicit Device(const ProductInfo& product);
  ~Device();
  Arch arch() const { return arch_; }
  const ArchInfo& info() const { return arch_info(arch_); }
  const ProductInfo& product() const { return product_; }
  MemoryMap& memory() { return memory_; }

  // Decodes (once; cached per code object and kernel) and runs one kernel to completion.
  // Returns the first fault, or a Fault with kind none. Throws nothing for faults inside the kernel.
  Fault dispatch(const std::shared_ptr<const CodeObject>& co, const KernelInfo& kernel, const LaunchParams& lp,
                 DispatchStats* stats = nullptr);

  // Per-instruction counts and the LDS bank-conflict model (slower; off unless HK_VGPU_PROFILE=1).
  void set_profiling(bool on) { profiling_ = on; }
  bool profiling() const { return profiling_; }

  // The timing model for later dispatches: the product to model (of this device's arch), or nullptr for none.
  // `sample_only` executes only the workgroups the model samples (the others' results are not computed).
  // HK_VGPU_TIMING=PRODUCT and HK_VGPU_TIMING_SAMPLE_ONLY=1 set the same.
  void set_timing(const ProductInfo* product, bool sample_only = false) {
    timing_ = product, timing_sample_only_ = sample_only;
  }
  const ProductInfo* timing() const { return timing_; }
  // The replayed round of every later modelled dispatch as a timeline, appended to `path` (Chrome trace-event JSON,
  // one process per dispatch; HK_VGPU_TIMING_TRACE=FILE sets the same); "" for none. Without one nothing is recorded.
  void set_timing_trace(const std::string& path);
  const std::string& timing_trace() const { return timing_trace_; }

  // Race-check mode for later dispatches (HK_VGPU_RACECHECK=1 sets it): the first LDS-DMA hazard faults instead of
  // being a warning, and races between waves on LDS are checked too.
  void set_racecheck(bool on) { racecheck_ = on; }
  bool racecheck() const { return racecheck_; }

  // Device address of the variable `name` (__device__, __constant__) of `co` and its size; nullptr if there is none.
  // The code object's image (its loadable segments) is placed in device memory on first use, once per device.
  void* global_address(const std::shared_ptr<const CodeObject>& co, std::string_view name, size_t* size = nullptr);
  // Base address of `co`'s image on this device (what the code's PC-relative addressing sees).
  uint64_t image_base(const CodeObject& co);

  // Worker threads used for workgroups (default: hardware concurrency; HK_VGPU_THREADS overrides).
  unsigned threads() const { return threads_; }

 private:
  Arch arch_;
  const ProductInfo& product_;
  unsigned threads_;
  bool profiling_ = false;
  const ProductInfo* timing_ = nullptr;
  bool timing_sample_only_ = false;
  std::string timing_trace_;
  std::unique_ptr<TimelineFile> timeline_file_;  // open while timing_trace_ is set
  bool racecheck_ = false;
  // The shader clock s_memtime reads: it advances by each dispatch's cycles, so clocks only grow (exec_smem.cpp).
  std::atomic<uint64_t> clock_{uint64_t(1) << 20};
  MemoryMap memory_;
  std::mutex cache_mu_;
  std::map<std::pair<uint64_t, uint64_t>, std::shared_ptr<Program>> programs_;  // by code object serial, entry
  std::map<uint64_t, uint64_t> images_;  // image base per code object serial
};

}  // namespace vgpu
