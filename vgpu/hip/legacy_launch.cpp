// C++-linkage overloads of hipExtModuleLaunchKernel and hipHccModuleLaunchKernel that the 6.4 runtime still exports
// for programs built against old headers. They cannot share a translation unit with hip_ext.h, which declares the
// C-linkage functions of the same parameter types.
#include "runtime.h"

using namespace vgpu::hiprt;

__attribute__((visibility("default"))) hipError_t hipExtModuleLaunchKernel(
    hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx, uint32_t by, uint32_t bz, size_t shared,
    hipStream_t stream, void** params, void** extra, hipEvent_t start, hipEvent_t stop, uint32_t /*flags*/) {
  return global_size_launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra, start, stop);
}

__attribute__((visibility("default"))) hipError_t hipHccModuleLaunchKernel(
    hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx, uint32_t by, uint32_t bz, size_t shared,
    hipStream_t stream, void** params, void** extra, hipEvent_t start, hipEvent_t stop) {
  return global_size_launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra, start, stop);
}
