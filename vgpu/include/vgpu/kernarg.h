// Building a kernel's kernarg segment from its metadata: explicit arguments, then the hidden ones the compiler reads
// (block counts, group sizes, remainders, grid dims, dynamic LDS size), all at the offsets the metadata gives.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "vgpu/code_object.h"
#include "vgpu/device.h"

namespace vgpu {

// `args[i]` points at the value of the i-th explicit argument (as hipLaunchKernel passes them).
// Throws vgpu::Error if fewer explicit values are given than the kernel declares.
std::vector<uint8_t> build_kernarg(const KernelInfo& kernel, std::span<const void* const> args, Dim3 grid, Dim3 block,
                                   uint32_t dynamic_lds);

// Fills only the hidden arguments of an already packed explicit-argument buffer (at least kernarg_segment_size).
void fill_hidden_args(const KernelInfo& kernel, std::span<uint8_t> kernarg, Dim3 grid, Dim3 block,
                      uint32_t dynamic_lds);

}  // namespace vgpu
