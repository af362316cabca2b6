// Questions about kernels: their attributes (registers, LDS, scratch, launch bound), the attributes a program
// may set, occupancy estimates and names.
#include <algorithm>
#include <climits>

#include "runtime.h"

namespace vgpu::hiprt {
namespace {

// The kernel a host stub (`kernel<<<...>>>` function) or a hipFunction_t names, resolved for the device's arch.
hipError_t resolve_host(const void* host_function, ihipModuleSymbol_t*& fn, ResolvedKernel& k) {
  if (!host_function) return done(hipErrorInvalidDeviceFunction);
  fn = Runtime::get().find_function(host_function);
  if (!fn) return done(hipErrorInvalidDeviceFunction);
  return resolve(*fn, k);
}

int max_dynamic_shared(const ihipModuleSymbol_t& fn, const KernelInfo& info) {
  int available = int(Runtime::get().device().info().lds_bytes) - int(info.group_segment_fixed_size);
  return fn.max_dynamic_shared >= 0 ? std::min(fn.max_dynamic_shared, available) : available;
}

void fill_attributes(hipFuncAttributes& a, const ihipModuleSymbol_t& fn, const KernelInfo& info) {
  a = hipFuncAttributes{};
  const ArchInfo& arch = arch_info(Runtime::get().arch());
  a.binaryVersion = int(arch.version_major * 10 + arch.version_minor);  // 94 / 95, as hipDeviceProp_t reports 9.4 / 9.5
  a.cacheModeCA = 0;
  a.constSizeBytes = 0;
  a.localSizeBytes = info.private_segment_fixed_size;
  a.maxDynamicSharedSizeBytes = max_dynamic_shared(fn, info);
  a.maxThreadsPerBlock = int(info.max_flat_workgroup_size ? info.max_flat_workgroup_size : 1024);
  a.numRegs = int(info.vgpr_count);
  a.preferredShmemCarveout = -1;
  a.ptxVersion = a.binaryVersion;
  a.sharedSizeBytes = info.group_segment_fixed_size;
}

// Workgroups of `block` work-items one compute unit can hold: its wave slots (4 SIMDs x 8 waves) and its LDS, shared
// among them.
int blocks_per_cu(const KernelInfo& info, int block, size_t dynamic_shared) {
  if (block <= 0) return 0;
  const ArchInfo& arch = Runtime::get().device().info();
  const uint32_t waves = (uint32_t(block) + arch.wave_size - 1) / arch.wave_size;
  return int(arch.workgroups_per_cu(waves, info.group_segment_fixed_size + dynamic_shared));
}

hipError_t occupancy(int* blocks, const KernelInfo& info, int block, size_t dynamic_shared) {
  if (!blocks || block <= 0) return done(hipErrorInvalidValue);
  *blocks = blocks_per_cu(info, block, dynamic_shared);
  return hipSuccess;
}

hipError_t potential_block(int* grid, int* block, const KernelInfo& info, size_t dynamic_shared, int limit) {
  if (!grid || !block) return done(hipErrorInvalidValue);
  int best = int(info.max_flat_workgroup_size ? info.max_flat_workgroup_size : 1024);
  if (limit > 0) best = std::min(best, limit);
  best = std::max(64, best / 64 * 64);
  *block = best;
  *grid = blocks_per_cu(info, best, dynamic_shared) * int(Runtime::get().device().product().compute_units);
  return hipSuccess;
}

}  // namespace
}  // namespace vgpu::hiprt

using namespace vgpu;
using namespace vgpu::hiprt;

HK_HIP_API hipError_t hipFuncGetAttributes(hipFuncAttributes* attr, const void* host_function) {
  if (!attr) return done(hipErrorInvalidValue);
  ihipModuleSymbol_t* fn = nullptr;
  ResolvedKernel k;
  if (hipError_t e = resolve_host(host_function, fn, k); e != hipSuccess) return e;
  fill_attributes(*attr, *fn, *k.info);
  return hipSuccess;
}

HK_HIP_API hipError_t hipFuncGetAttribute(int* value, hipFunction_attribute attrib, hipFunction_t function) {
  if (!value) return done(hipErrorInvalidValue);
  if (!function) return done(hipErrorInvalidResourceHandle);
  ResolvedKernel k;
  if (hipError_t e = resolve(*function, k); e != hipSuccess) return e;
  hipFuncAttributes a;
  fill_attributes(a, *function, *k.info);
  switch (attrib) {
    case HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = a.maxThreadsPerBlock; break;
    case HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *value = int(a.sharedSizeBytes); break;
    case HIP_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *value = int(a.constSizeBytes); break;
    case HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *value = int(a.localSizeBytes); break;
    case HIP_FUNC_ATTRIBUTE_NUM_REGS: *value = a.numRegs; break;
    case HIP_FUNC_ATTRIBUTE_PTX_VERSION: *value = a.ptxVersion; break;
    case HIP_FUNC_ATTRIBUTE_BINARY_VERSION: *value = a.binaryVersion; break;
    case HIP_FUNC_ATTRIBUTE_CACHE_MODE_CA: *value = a.cacheModeCA; break;
    case HIP_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *value = a.maxDynamicSharedSizeBytes; break;
    case HIP_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *value = a.preferredShmemCarveout; break;
    default: return done(hipErrorInvalidValue);
  }
  return hipSuccess;
}

HK_HIP_API hipError_t hipFuncSetAttribute(const void* host_function, hipFuncAttribute attr, int value) {
  ihipModuleSymbol_t* fn = nullptr;
  ResolvedKernel k;
  if (hipError_t e = resolve_host(host_function, fn, k); e != hipSuccess) return e;
  switch (attr) {
    case hipFuncAttributeMaxDynamicSharedMemorySize: {
      int available = int(Runtime::get().device().info().lds_bytes) - int(k.info->group_segment_fixed_size);
      if (value < 0 || value > available) return done(hipErrorInvalidValue);
      fn->max_dynamic_shared = value;
      return hipSuccess;
    }
    case hipFuncAttributePreferredSharedMemoryCarveout:
      return value >= -1 && value <= 100 ? hipSuccess : done(hipErrorInvalidValue);
    default: return done(hipErrorInvalidValue);
  }
}

// Cache and bank configuration have no effect on CDNA (nor on vgpu); valid values are accepted.
HK_HIP_API hipError_t hipFuncSetCacheConfig(const void* host_function, hipFuncCache_t config) {
  if (!host_function) return done(hipErrorInvalidDeviceFunction);
  if (config < hipFuncCachePreferNone || config > hipFuncCachePreferEqual) return done(hipErrorInvalidValue);
  return hipSuccess;
}

HK_HIP_API hipError_t hipFuncSetSharedMemConfig(const void* host_function, hipSharedMemConfig config) {
  if (!host_function) return done(hipErrorInvalidDeviceFunction);
  if (config < hipSharedMemBankSizeDefault || config > hipSharedMemBankSizeEightByte) return done(hipErrorInvalidValue);
  return hipSuccess;
}

HK_HIP_API hipError_t hipOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* f, int block,
                                                                   size_t dynamic_shared) {
  ihipModuleSymbol_t* fn = nullptr;
  ResolvedKernel k;
  if (hipError_t e = resolve_host(f, fn, k); e != hipSuccess) return e;
  return occupancy(blocks, *k.info, block, dynamic_shared);
}

HK_HIP_API hipError_t hipOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, const void* f, int block,
                                                                            size_t dynamic_shared, unsigned int) {
  return hipOccupancyMaxActiveBlocksPerMultiprocessor(blocks, f, block, dynamic_shared);
}

HK_HIP_API hipError_t hipOccupancyMaxPotentialBlockSize(int* grid, int* block, const void* f, size_t dynamic_shared,
                                                        int limit) {
  ihipModuleSymbol_t* fn = nullptr;
  ResolvedKernel k;
  if (hipError_t e = resolve_host(f, fn, k); e != hipSuccess) return e;
  return potential_block(grid, block, *k.info, dynamic_shared, limit);
}

HK_HIP_API hipError_t hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, hipFunction_t f, int block,
                                                                         size_t dynamic_shared) {
  if (!f) return done(hipErrorInvalidResourceHandle);
  ResolvedKernel k;
  if (hipError_t e = resolve(*f, k); e != hipSuccess) return e;
  return occupancy(blocks, *k.info, block, dynamic_shared);
}

HK_HIP_API hipError_t hipModuleOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, hipFunction_t f,
                                                                                  int block, size_t dynamic_shared,
                                                                                  unsigned int) {
  return hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(blocks, f, block, dynamic_shared);
}

HK_HIP_API hipError_t hipModuleOccupancyMaxPotentialBlockSize(int* grid, int* block, hipFunction_t f,
                                                              size_t dynamic_shared, int limit) {
  if (!f) return done(hipErrorInvalidResourceHandle);
  ResolvedKernel k;
  if (hipError_t e = resolve(*f, k); e != hipSuccess) return e;
  return potential_block(grid, block, *k.info, dynamic_shared, limit);
}

HK_HIP_API hipError_t hipModuleOccupancyMaxPotentialBlockSizeWithFlags(int* grid, int* block, hipFunction_t f,
                                                                       size_t dynamic_shared, int limit,
                                                                       unsigned int) {
  return hipModuleOccupancyMaxPotentialBlockSize(grid, block, f, dynamic_shared, limit);
}

HK_HIP_API const char* hipKernelNameRef(const hipFunction_t f) { return f ? f->name.c_str() : nullptr; }

HK_HIP_API const char* hipKernelNameRefByPtr(const void* host_function, hipStream_t) {
  ihipModuleSymbol_t* fn = host_function ? Runtime::get().find_function(host_function) : nullptr;
  return fn ? fn->name.c_str() : nullptr;
}
