// vgpu's extension of the HIP runtime API: what the virtual device measured for the most recent kernel launch.
// Programs that may also run on ROCm look these functions up with dlsym(RTLD_DEFAULT, "vgpuGetLastDispatch").
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vgpuDispatchInfo {
  char kernel[256];                       // the kernel's symbol name
  char arch[16];                          // "gfx942" or "gfx950"
  unsigned grid[3];                       // workgroups
  unsigned block[3];                      // work-items per workgroup
  unsigned long long waves;
  unsigned long long wave_instructions;   // instructions issued, counted once per wave
  unsigned long long lds_accesses;        // DS instructions that touched LDS banks (profiled runs)
  unsigned long long lds_conflict_cycles; // extra cycles from LDS bank conflicts (profiled runs)
  double wall_seconds;                    // host time of the emulation
  int profiled;                           // 1 when HK_VGPU_PROFILE=1 (the LDS fields are meaningful)
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

#ifdef __cplusplus
}
#endif
