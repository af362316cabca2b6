// vgpu's extension of the HIP runtime API: what the virtual device measured for the most recent kernel launch.
// Programs that may also run on ROCm look these functions up with dlsym(RTLD_DEFAULT, "vgpuGetLastDispatch").
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vgpuDispatchInfo {
  char kernel[256];                       // the kernel's symbol name
  char arch[16];                          // "gfx90a", "gfx942" or "gfx950"
  unsigned grid[3];                       // workgroups
  unsigned block[3];                      // work-items per workgroup
  unsigned long long waves;
  unsigned long long wave_instructions;   // instructions issued, counted once per wave
  unsigned long long lds_accesses;        // DS instructions that touched LDS banks (profiled runs)
  unsigned long long lds_conflict_cycles; // extra cycles from LDS bank conflicts (profiled runs)
  double wall_seconds;                    // host time of the emulation
  int profiled;                           // 1 when HK_VGPU_PROFILE=1 (the LDS fields are meaningful)
  // LDS hazards (docs/vgpu-memory.md): accesses to LDS bytes a load straight into LDS may still be writing, once per
  // wave and instruction, and (race-check mode) races between waves on LDS. In race-check mode the first one faults.
  unsigned long long lds_dma_hazards;
  unsigned long long lds_races;
  int racecheck;                          // 1 when the launch ran in race-check mode
} vgpuDispatchInfo;

// Fills `out` with the last dispatch of this process. Returns 0, or 1 if no kernel has run yet.
int vgpuGetLastDispatch(vgpuDispatchInfo* out);

typedef struct vgpuInstructionProfile {
  unsigned long long pc;                  // byte offset from the kernel entry
  char text[96];                          // disassembly (truncated)
  unsigned long long executed;            // wave-level executions
  unsigned long long lds_accesses;
  unsigned long long lds_conflict_cycles;
} vgpuInstructionProfile;

// The executed instructions of the last profiled dispatch, in program order: fills up to `max` entries and returns
// how many there are in all (0 if the last dispatch was not profiled).
int vgpuGetLastDispatchInstructions(vgpuInstructionProfile* out, int max);

// Turns per-instruction counts and the LDS bank-conflict model on (1) or off (0) for later launches; returns 0.
// The same as HK_VGPU_PROFILE=1 in the environment, for programs that profile only some kernels.
int vgpuSetProfiling(int on);

// Race-check mode on (1) or off (0) for later launches; returns 0. The same as HK_VGPU_RACECHECK=1: the first LDS-DMA
// hazard of a launch is a fault (hipErrorLaunchFailure) instead of a warning, and LDS races between waves are checked.
int vgpuSetRaceCheck(int on);

// The x86 instruction set vgpu's MFMA arithmetic runs on in this process: "sse4.1", "avx2" or "avx512" (the widest
// the CPU has; HK_VGPU_MFMA_SIMD picks a narrower one). The results are the same bit for bit on each.
const char* vgpuMfmaArithmetic(void);

// The timing model (docs/vgpu-timing.md). vgpuSetTiming("mi355x", 0) models later launches on that product (of the
// device's arch; a launch on another arch fails); nullptr or "" turns it off. With sample_only = 1 only the
// workgroups the model samples are executed: the others' results are not computed. Returns 0, or 1 for an unknown
// product. The same as HK_VGPU_TIMING=PRODUCT and HK_VGPU_TIMING_SAMPLE_ONLY=1.
int vgpuSetTiming(const char* product, int sample_only);

// Where a wave's cycle of the replayed round went (vgpu::StallCause, docs/vgpu-timing.md "Stalls"): the indices of
// vgpuTimingInfo::wave_cycles and vgpuTimingStall::by_cause. vgpuStallCauseName names them ("vmcnt wait", ...).
enum {
  VGPU_STALL_ISSUED, VGPU_STALL_VMCNT, VGPU_STALL_LGKMCNT, VGPU_STALL_BARRIER, VGPU_STALL_MATRIX_BUSY,
  VGPU_STALL_VALU_BUSY, VGPU_STALL_QUEUE_FULL, VGPU_STALL_ARBITRATION, VGPU_STALL_NOP, VGPU_STALL_BRANCH,
  VGPU_STALL_IDLE, VGPU_STALL_CAUSES
};
const char* vgpuStallCauseName(int cause);

// The hot loop's MFMAs on one SIMD (vgpu::HotLoop::Simd): what its waves issued between consecutive ones.
typedef struct vgpuTimingHotLoopSimd {
  unsigned long long mfmas;
  double between;                   // instructions between consecutive MFMAs, on average; of which:
  double between_valu, between_salu, between_vmem, between_lds, between_other;  // (SALU includes SMEM)
  double idle_between;              // matrix core idle cycles between consecutive MFMAs, on average
  double util;                      // the matrix core busy over this SIMD's time in the loop
} vgpuTimingHotLoopSimd;

typedef struct vgpuTimingInfo {
  char product[16];                 // "MI355X"
  char kernel[256];                 // the kernel's symbol name
  double seconds;                   // predicted kernel time
  double cycles;                    // the same in engine clocks at clock_ghz
  double clock_ghz;                 // the modelled engine clock: below the peak under dense MFMA load
  double peak_clock_ghz;
  double round_cycles;              // one round of concurrent workgroups on the sampled CU
  unsigned long long rounds;        // rounds of the busiest CU's share of the grid
  unsigned workgroups_per_cu;       // concurrent workgroups per CU
  unsigned sampled_workgroups;      // workgroups whose instruction streams were replayed
  unsigned probed_workgroups;       // workgroups across the grid recorded to weigh the average workgroup's work
  double work_weight;               // that average over the sampled workgroups' (1 for a uniform grid)
  int sample_only;                  // 1: the other workgroups were not executed
  char limiter[32];                 // "compute units", "L2 bandwidth" or "HBM bandwidth"
  double l2_floor_cycles, hbm_floor_cycles;
  double mfma_flops;                // matrix FLOPs of the grid
  double vmem_bytes, hbm_bytes;     // vector memory traffic of the grid, and what of it reaches HBM
  // Where the time went: matrix cores busy (fraction of 4 SIMDs x round), the waves' time (fraction of waves x round)
  // waiting on vector memory, on LDS / scalar memory, at barriers, in s_nop / s_sleep / branches, and ready but not
  // picked because another wave took the unit (issue-bound).
  double mfma_busy, wait_memory, wait_lds, wait_barrier, wait_nop, issue_bound;
  double valu_busy;                 // the SIMDs' vector units busy with VALU work (fraction of 4 SIMDs x round)
  // The replayed round (before work_weight scales it): waves x replayed_cycles wave-cycles, each attributed to one
  // cause (wave_cycles, by VGPU_STALL_*); the cycles the replay skipped with no wave able to issue.
  unsigned waves;
  double replayed_cycles, skipped_cycles;
  double wave_cycles[VGPU_STALL_CAUSES];
  // The hot loop (the innermost loop that issued the most MFMAs): its PCs, MFMA use, and per SIMD what lies between
  // consecutive MFMAs. hot_loop_found = 0 when the kernel has no loop.
  int hot_loop_found;
  unsigned long long hot_loop_begin_pc, hot_loop_end_pc;
  double hot_loop_mfma_util;
  vgpuTimingHotLoopSimd hot_loop_simd[4];
} vgpuTimingInfo;

// One instruction's stall cycles in the replayed round (vgpu::InstructionStall): a wait is charged to the instruction
// that caused it (s_waitcnt, s_barrier, s_nop, a branch), a ready wave's stall to the instruction that could not issue.
typedef struct vgpuTimingStall {
  unsigned long long pc;            // byte offset from the kernel entry
  char text[96];                    // disassembly (truncated)
  unsigned long long issued;        // times the round's waves issued it
  double cycles;                    // stall cycles (every cause but issued and idle), summed over the waves
  int cause;                        // the largest of them (VGPU_STALL_*)
  double by_cause[VGPU_STALL_CAUSES];
} vgpuTimingStall;

// The timing model's prediction for the last launch. Returns 0, or 1 if that launch was not modelled.
int vgpuGetLastTiming(vgpuTimingInfo* out);

// Every modelled launch since the last vgpuSetTiming call, in launch order (a program that launches several kernels
// per operation sums them): fills up to `max` entries and returns how many there are in all.
int vgpuGetTimingLog(vgpuTimingInfo* out, int max);

// The instructions that stalled most in modelled launch `launch` (an index into vgpuGetTimingLog's entries; -1: the
// last modelled launch), most first: fills up to `max` and returns how many there are (at most 32; 0 if none).
int vgpuGetTimingStalls(int launch, vgpuTimingStall* out, int max);

// Writes the replayed round of every later modelled launch to `path` as Chrome trace-event JSON (Perfetto,
// chrome://tracing; one process per launch), or stops with "" or NULL; returns 0. HK_VGPU_TIMING_TRACE=FILE sets the
// same at start-up.
int vgpuSetTimingTrace(const char* path);

#ifdef __cplusplus
}
#endif
