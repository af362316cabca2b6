// The kernel report: what a kernel's code object says about its resources, and what a profiled vgpu run measured.
#pragma once
#include <string>
#include <vector>

#include "vgpu/code_object.h"
#include "vgpu/hip_ext.h"

namespace hk::report {

// Static facts from the code object's metadata and descriptor.
struct Resources {
  std::string kernel;
  std::string arch;
  unsigned vgprs = 0, agprs = 0, sgprs = 0, vgpr_spills = 0, sgpr_spills = 0;
  unsigned lds_bytes = 0, scratch_bytes = 0;
  unsigned waves_per_simd = 0;  // occupancy the registers and LDS allow for `block_threads`
};
Resources resources(const vgpu::KernelInfo& k, vgpu::Arch arch, unsigned block_threads);

// Dynamic facts from a profiled dispatch's per-instruction counts.
struct Profile {
  unsigned long long instructions = 0, salu = 0, valu = 0, mfma = 0, lds = 0, vmem = 0, other = 0;
  unsigned long long lds_conflict_cycles = 0;
  // The hot loop: the backward branch taken most often and the code it closes.
  unsigned long long loop_begin = 0, loop_end = 0;
  unsigned loop_instructions = 0, loop_mfma = 0;
  unsigned long long loop_lds_conflict_cycles = 0;
};
Profile profile(const std::vector<vgpuInstructionProfile>& insts);

// All kernels of this program's own binary for `arch` (the code objects clang embedded in it).
std::vector<vgpu::KernelInfo> own_kernels(vgpu::Arch arch);

// One table row per kernel, and the header above it.
std::string header();
std::string row(const Resources& r, const Profile* p);

}  // namespace hk::report
