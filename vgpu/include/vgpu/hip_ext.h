// vgpu's extension of the HIP runtime API: what the virtual device measured for the most recent kernel launch.
// Programs that may also run on ROCm look the function up with dlsym(RTLD_DEFAULT, "vgpuGetLastDispatch").
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

#ifdef __cplusplus
}
#endif
