// The device: one virtual product of vgpu/arch.h's table (MI300X for gfx942 and MI355X for gfx950 unless
// HK_VGPU_PRODUCT names another). Properties, attributes, selection, versions, synchronisation and reset.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "graph.h"
#include "stream_queue.h"
// After runtime.h, which brings in hip_runtime_api.h first.
#include <hip/hip_deprecated.h>

// hip_runtime_api.h renames hipGetDeviceProperties / hipChooseDevice to their 6.0 versions by macro; the library
// also exports the unversioned names with the older property struct, for programs built against HIP 5.
#undef hipGetDeviceProperties
#undef hipChooseDevice

namespace vgpu::hiprt {
namespace {

constexpr int kDeviceCount = 1;

bool valid_device(int id) { return id >= 0 && id < kDeviceCount; }

std::string gcn_arch_name(Arch a) { return std::string(arch_info(a).name) + ":sramecc+:xnack-"; }

void fill_properties(hipDeviceProp_tR0600& p) {
  const ProductInfo& prod = Runtime::get().product();
  const ArchInfo& ai = arch_info(prod.arch);
  std::memset(&p, 0, sizeof p);
  std::snprintf(p.name, sizeof p.name, "vgpu (%.*s)", int(prod.name.size()), prod.name.data());
  std::snprintf(p.gcnArchName, sizeof p.gcnArchName, "%s", gcn_arch_name(prod.arch).c_str());
  std::memcpy(p.uuid.bytes, "vgpu-virtual-gpu", 16);
  p.totalGlobalMem = prod.hbm_bytes;
  p.sharedMemPerBlock = ai.lds_bytes;
  p.regsPerBlock = int(ai.registers_per_lane * ai.wave_size);  // one wave may hold them all
  p.warpSize = int(ai.wave_size);
  p.memPitch = size_t(INT32_MAX);
  p.maxThreadsPerBlock = 1024;
  p.maxThreadsDim[0] = p.maxThreadsDim[1] = p.maxThreadsDim[2] = 1024;
  p.maxGridSize[0] = INT32_MAX;
  p.maxGridSize[1] = p.maxGridSize[2] = 65536;
  p.clockRate = int(prod.peak_clock_mhz * 1000);
  p.totalConstMem = size_t(INT32_MAX);
  p.major = int(ai.version_major);
  p.minor = int(ai.version_minor);
  p.textureAlignment = 256;
  p.texturePitchAlignment = 256;
  p.deviceOverlap = 1;
  p.multiProcessorCount = int(prod.compute_units);
  p.kernelExecTimeoutEnabled = 0;
  p.integrated = 0;
  p.canMapHostMemory = 1;
  p.computeMode = 0;  // default
  p.concurrentKernels = 1;
  p.ECCEnabled = 0;
  p.pciDeviceID = prod.pci_device_id;
  p.asyncEngineCount = 1;
  p.unifiedAddressing = 1;
  p.memoryClockRate = int(prod.memory_clock_khz());
  p.memoryBusWidth = int(prod.hbm_bus_bits);
  p.l2CacheSize = int(prod.l2_bytes_per_xcd);  // what one workgroup's XCD has
  p.maxThreadsPerMultiProcessor = int(ai.max_waves_per_cu() * ai.wave_size);
  p.streamPrioritiesSupported = 1;
  p.globalL1CacheSupported = 1;
  p.localL1CacheSupported = 1;
  p.sharedMemPerMultiprocessor = ai.lds_bytes;
  p.regsPerMultiprocessor = int(ai.simds_per_cu * ai.registers_per_lane * ai.wave_size);
  p.managedMemory = 1;
  p.hostNativeAtomicSupported = 1;
  p.pageableMemoryAccess = 0;
  p.concurrentManagedAccess = 1;
  p.canUseHostPointerForRegisteredMem = 1;
  p.cooperativeLaunch = 0;  // vgpu does not promise that all workgroups of a grid run at once
  p.sharedMemPerBlockOptin = ai.lds_bytes;
  p.directManagedMemAccessFromHost = 1;
  p.maxBlocksPerMultiProcessor = int(ai.max_waves_per_cu());
  p.hostRegisterSupported = 1;
  p.memoryPoolsSupported = 0;
  p.maxSharedMemoryPerMultiProcessor = ai.lds_bytes;
  p.clockInstructionRate = 100000;  // s_memtime / wall clock, 100 MHz
  hipDeviceArch_t& f = p.arch;
  f.hasGlobalInt32Atomics = f.hasGlobalFloatAtomicExch = f.hasSharedInt32Atomics = f.hasSharedFloatAtomicExch = 1;
  f.hasFloatAtomicAdd = f.hasGlobalInt64Atomics = f.hasSharedInt64Atomics = f.hasDoubles = 1;
  f.hasWarpVote = f.hasWarpBallot = f.hasWarpShuffle = f.hasFunnelShift = 1;
  f.hasThreadFenceSystem = f.hasSyncThreadsExt = f.has3dGrid = 1;
  p.isLargeBar = 1;
  p.asicRevision = 0;
}

// The pre-6.0 struct carries a subset of the same facts in another order.
void fill_properties(hipDeviceProp_tR0000& old) {
  hipDeviceProp_tR0600 p;
  fill_properties(p);
  std::memset(&old, 0, sizeof old);
  std::memcpy(old.name, p.name, sizeof old.name);
  std::memcpy(old.gcnArchName, p.gcnArchName, sizeof old.gcnArchName);
  old.totalGlobalMem = p.totalGlobalMem;
  old.sharedMemPerBlock = p.sharedMemPerBlock;
  old.regsPerBlock = p.regsPerBlock;
  old.warpSize = p.warpSize;
  old.maxThreadsPerBlock = p.maxThreadsPerBlock;
  std::copy(std::begin(p.maxThreadsDim), std::end(p.maxThreadsDim), old.maxThreadsDim);
  std::copy(std::begin(p.maxGridSize), std::end(p.maxGridSize), old.maxGridSize);
  old.clockRate = p.clockRate;
  old.memoryClockRate = p.memoryClockRate;
  old.memoryBusWidth = p.memoryBusWidth;
  old.totalConstMem = p.totalConstMem;
  old.major = p.major;
  old.minor = p.minor;
  old.multiProcessorCount = p.multiProcessorCount;
  old.l2CacheSize = p.l2CacheSize;
  old.maxThreadsPerMultiProcessor = p.maxThreadsPerMultiProcessor;
  old.computeMode = p.computeMode;
  old.clockInstructionRate = p.clockInstructionRate;
  old.arch = p.arch;
  old.concurrentKernels = p.concurrentKernels;
  old.pciDeviceID = p.pciDeviceID;
  old.maxSharedMemoryPerMultiProcessor = p.maxSharedMemoryPerMultiProcessor;
  old.canMapHostMemory = p.canMapHostMemory;
  const ArchInfo& ai = arch_info(Runtime::get().arch());
  old.gcnArch = int(ai.version_major * 100 + ai.version_minor * 10 + ai.version_stepping);
  old.integrated = p.integrated;
  old.cooperativeLaunch = p.cooperativeLaunch;
  old.memPitch = p.memPitch;
  old.textureAlignment = p.textureAlignment;
  old.texturePitchAlignment = p.texturePitchAlignment;
  old.isLargeBar = p.isLargeBar;
  old.managedMemory = p.managedMemory;
  old.directManagedMemAccessFromHost = p.directManagedMemAccessFromHost;
  old.concurrentManagedAccess = p.concurrentManagedAccess;
}

// hipDeviceGetAttribute: the integer-valued attributes, from the same description.
bool attribute(hipDeviceAttribute_t attr, int& v) {
  hipDeviceProp_tR0600 p;
  fill_properties(p);
  switch (attr) {
    case hipDeviceAttributeEccEnabled: v = p.ECCEnabled; break;
    case hipDeviceAttributeAsyncEngineCount: v = p.asyncEngineCount; break;
    case hipDeviceAttributeCanMapHostMemory: v = p.canMapHostMemory; break;
    case hipDeviceAttributeCanUseHostPointerForRegisteredMem: v = p.canUseHostPointerForRegisteredMem; break;
    case hipDeviceAttributeClockRate: v = p.clockRate; break;
    case hipDeviceAttributeComputeMode: v = p.computeMode; break;
    case hipDeviceAttributeComputePreemptionSupported: v = 0; break;
    case hipDeviceAttributeConcurrentKernels: v = p.concurrentKernels; break;
    case hipDeviceAttributeConcurrentManagedAccess: v = p.concurrentManagedAccess; break;
    case hipDeviceAttributeCooperativeLaunch: v = p.cooperativeLaunch; break;
    case hipDeviceAttributeCooperativeMultiDeviceLaunch: v = 0; break;
    case hipDeviceAttributeDeviceOverlap: v = p.deviceOverlap; break;
    case hipDeviceAttributeDirectManagedMemAccessFromHost: v = p.directManagedMemAccessFromHost; break;
    case hipDeviceAttributeGlobalL1CacheSupported: v = p.globalL1CacheSupported; break;
    case hipDeviceAttributeHostNativeAtomicSupported: v = p.hostNativeAtomicSupported; break;
    case hipDeviceAttributeIntegrated: v = p.integrated; break;
    case hipDeviceAttributeIsMultiGpuBoard: v = 0; break;
    case hipDeviceAttributeKernelExecTimeout: v = p.kernelExecTimeoutEnabled; break;
    case hipDeviceAttributeL2CacheSize: v = p.l2CacheSize; break;
    case hipDeviceAttributeLocalL1CacheSupported: v = p.localL1CacheSupported; break;
    case hipDeviceAttributeComputeCapabilityMajor: v = p.major; break;
    case hipDeviceAttributeComputeCapabilityMinor: v = p.minor; break;
    case hipDeviceAttributeManagedMemory: v = p.managedMemory; break;
    case hipDeviceAttributeMaxBlocksPerMultiProcessor: v = p.maxBlocksPerMultiProcessor; break;
    case hipDeviceAttributeMaxBlockDimX: v = p.maxThreadsDim[0]; break;
    case hipDeviceAttributeMaxBlockDimY: v = p.maxThreadsDim[1]; break;
    case hipDeviceAttributeMaxBlockDimZ: v = p.maxThreadsDim[2]; break;
    case hipDeviceAttributeMaxGridDimX: v = p.maxGridSize[0]; break;
    case hipDeviceAttributeMaxGridDimY: v = p.maxGridSize[1]; break;
    case hipDeviceAttributeMaxGridDimZ: v = p.maxGridSize[2]; break;
    case hipDeviceAttributeMaxThreadsPerBlock: v = p.maxThreadsPerBlock; break;
    case hipDeviceAttributeMaxThreadsPerMultiProcessor: v = p.maxThreadsPerMultiProcessor; break;
    case hipDeviceAttributeMaxPitch: v = int(std::min<size_t>(p.memPitch, INT32_MAX)); break;
    case hipDeviceAttributeMemoryBusWidth: v = p.memoryBusWidth; break;
    case hipDeviceAttributeMemoryClockRate: v = p.memoryClockRate; break;
    case hipDeviceAttributeMultiprocessorCount: v = p.multiProcessorCount; break;
    case hipDeviceAttributePhysicalMultiProcessorCount: v = p.multiProcessorCount; break;
    case hipDeviceAttributePageableMemoryAccess: v = p.pageableMemoryAccess; break;
    case hipDeviceAttributePageableMemoryAccessUsesHostPageTables: v = 0; break;
    case hipDeviceAttributePciBusId: v = p.pciBusID; break;
    case hipDeviceAttributePciDeviceId: v = p.pciDeviceID; break;
    case hipDeviceAttributePciDomainID: v = p.pciDomainID; break;
    case hipDeviceAttributeMaxRegistersPerBlock: v = p.regsPerBlock; break;
    case hipDeviceAttributeMaxRegistersPerMultiprocessor: v = p.regsPerMultiprocessor; break;
    case hipDeviceAttributeMaxSharedMemoryPerBlock: v = int(p.sharedMemPerBlock); break;
    case hipDeviceAttributeSharedMemPerBlockOptin: v = int(p.sharedMemPerBlockOptin); break;
    case hipDeviceAttributeSharedMemPerMultiprocessor: v = int(p.sharedMemPerMultiprocessor); break;
    case hipDeviceAttributeMaxSharedMemoryPerMultiprocessor: v = int(p.maxSharedMemoryPerMultiProcessor); break;
    case hipDeviceAttributeStreamPrioritiesSupported: v = p.streamPrioritiesSupported; break;
    case hipDeviceAttributeTextureAlignment: v = int(p.textureAlignment); break;
    case hipDeviceAttributeTexturePitchAlignment: v = int(p.texturePitchAlignment); break;
    case hipDeviceAttributeTotalConstantMemory: v = int(std::min<size_t>(p.totalConstMem, INT32_MAX)); break;
    case hipDeviceAttributeUnifiedAddressing: v = p.unifiedAddressing; break;
    case hipDeviceAttributeWarpSize: v = p.warpSize; break;
    case hipDeviceAttributeMemoryPoolsSupported: v = p.memoryPoolsSupported; break;
    case hipDeviceAttributeVirtualMemoryManagementSupported: v = 0; break;
    case hipDeviceAttributeHostRegisterSupported: v = p.hostRegisterSupported; break;
    case hipDeviceAttributeClockInstructionRate: v = p.clockInstructionRate; break;
    case hipDeviceAttributeIsLargeBar: v = p.isLargeBar; break;
    case hipDeviceAttributeAsicRevision: v = p.asicRevision; break;
    case hipDeviceAttributeCanUseStreamWaitValue: v = 0; break;
    case hipDeviceAttributeImageSupport: v = arch_info(Runtime::get().arch()).image_support; break;
    case hipDeviceAttributeFineGrainSupport: v = 1; break;
    case hipDeviceAttributeWallClockRate: v = p.clockInstructionRate; break;
    default: return false;
  }
  return true;
}

unsigned g_device_flags = 0;

}  // namespace
}  // namespace vgpu::hiprt

using namespace vgpu;
using namespace vgpu::hiprt;

HK_HIP_API hipError_t hipInit(unsigned int flags) { return flags == 0 ? hipSuccess : done(hipErrorInvalidValue); }

HK_HIP_API hipError_t hipDriverGetVersion(int* version) {
  if (!version) return done(hipErrorInvalidValue);
  *version = HIP_VERSION;
  return hipSuccess;
}

HK_HIP_API hipError_t hipRuntimeGetVersion(int* version) {
  if (!version) return done(hipErrorInvalidValue);
  *version = HIP_VERSION;
  return hipSuccess;
}

HK_HIP_API hipError_t hipGetDeviceCount(int* count) {
  if (!count) return done(hipErrorInvalidValue);
  *count = kDeviceCount;
  return hipSuccess;
}

HK_HIP_API hipError_t hipSetDevice(int id) { return valid_device(id) ? hipSuccess : done(hipErrorInvalidDevice); }

HK_HIP_API hipError_t hipGetDevice(int* id) {
  if (!id) return done(hipErrorInvalidValue);
  *id = 0;
  return hipSuccess;
}

HK_HIP_API hipError_t hipDeviceGet(hipDevice_t* device, int ordinal) {
  if (!device) return done(hipErrorInvalidValue);
  if (!valid_device(ordinal)) return done(hipErrorInvalidDevice);
  *device = ordinal;
  return hipSuccess;
}

HK_HIP_API hipError_t hipSetValidDevices(int* devices, int count) {
  if (count < 0 || (count > 0 && !devices)) return done(hipErrorInvalidValue);
  for (int i = 0; i < count; ++i)
    if (!valid_device(devices[i])) return done(hipErrorInvalidDevice);
  return hipSuccess;
}

HK_HIP_API hipError_t hipGetDevicePropertiesR0600(hipDeviceProp_tR0600* props, int id) {
  if (!props) return done(hipErrorInvalidValue);
  if (!valid_device(id)) return done(hipErrorInvalidDevice);
  fill_properties(*props);
  return hipSuccess;
}

HK_HIP_API hipError_t hipGetDevicePropertiesR0000(hipDeviceProp_tR0000* props, int id) {
  if (!props) return done(hipErrorInvalidValue);
  if (!valid_device(id)) return done(hipErrorInvalidDevice);
  fill_properties(*props);
  return hipSuccess;
}

HK_HIP_API hipError_t hipGetDeviceProperties(hipDeviceProp_tR0000* props, int id) {
  return hipGetDevicePropertiesR0000(props, id);
}

HK_HIP_API hipError_t hipChooseDeviceR0600(int* device, const hipDeviceProp_tR0600* props) {
  if (!device || !props) return done(hipErrorInvalidValue);
  *device = 0;
  return hipSuccess;
}

HK_HIP_API hipError_t hipChooseDeviceR0000(int* device, const hipDeviceProp_tR0000* props) {
  if (!device || !props) return done(hipErrorInvalidValue);
  *device = 0;
  return hipSuccess;
}

HK_HIP_API hipError_t hipChooseDevice(int* device, const hipDeviceProp_tR0000* props) {
  return hipChooseDeviceR0000(device, props);
}

HK_HIP_API hipError_t hipDeviceGetAttribute(int* value, hipDeviceAttribute_t attr, int id) {
  if (!value) return done(hipErrorInvalidValue);
  if (!valid_device(id)) return done(hipErrorInvalidDevice);
  return attribute(attr, *value) ? hipSuccess : done(hipErrorInvalidValue);
}

HK_HIP_API hipError_t hipDeviceGetName(char* name, int len, hipDevice_t id) {
  if (!name || len <= 0) return done(hipErrorInvalidValue);
  if (!valid_device(id)) return done(hipErrorInvalidDevice);
  hipDeviceProp_tR0600 p;
  fill_properties(p);
  std::snprintf(name, size_t(len), "%s", p.name);
  return hipSuccess;
}

HK_HIP_API hipError_t hipDeviceGetUuid(hipUUID* uuid, hipDevice_t id) {
  if (!uuid) return done(hipErrorInvalidValue);
  if (!valid_device(id)) return done(hipErrorInvalidDevice);
  hipDeviceProp_tR0600 p;
  fill_properties(p);
  *uuid = p.uuid;
  return hipSuccess;
}

HK_HIP_API hipError_t hipDeviceTotalMem(size_t* bytes, hipDevice_t id) {
  if (!bytes) return done(hipErrorInvalidValue);
  if (!valid_device(id)) return done(hipErrorInvalidDevice);
  *bytes = Runtime::get().product().hbm_bytes;
  return hipSuccess;
}

HK_HIP_API hipError_t hipDeviceComputeCapability(int* major, int* minor, hipDevice_t id) {
  if (!major || !minor) return done(hipErrorInvalidValue);
  if (!valid_device(id)) return done(hipErrorInvalidDevice);
  const ArchInfo& ai = arch_info(Runtime::get().arch());
  *major = int(ai.version_major);
  *minor = int(ai.version_minor);
  return hipSuccess;
}

HK_HIP_API hipError_t hipDeviceGetPCIBusId(char* bus_id, int len, int id) {
  if (!bus_id || len <= 0) return done(hipErrorInvalidValue);
  if (!valid_device(id)) return done(hipErrorInvalidDevice);
  std::snprintf(bus_id, size_t(len), "0000:00:00.0");
  return hipSuccess;
}

HK_HIP_API hipError_t hipDeviceGetByPCIBusId(int* id, const char* bus_id) {
  if (!id || !bus_id) return done(hipErrorInvalidValue);
  if (std::strcmp(bus_id, "0000:00:00.0") != 0 && std::strcmp(bus_id, "00:00.0") != 0)
    return done(hipErrorInvalidDevice);
  *id = 0;
  return hipSuccess;
}

HK_HIP_API hipError_t hipSetDeviceFlags(unsigned int flags) {
  g_device_flags = flags;
  return hipSuccess;
}

HK_HIP_API hipError_t hipGetDeviceFlags(unsigned int* flags) {
  if (!flags) return done(hipErrorInvalidValue);
  *flags = g_device_flags;
  return hipSuccess;
}

HK_HIP_API hipError_t hipDeviceGetLimit(size_t* value, enum hipLimit_t limit) {
  if (!value) return done(hipErrorInvalidValue);
  switch (limit) {
    case hipLimitStackSize: *value = 1024; return hipSuccess;
    case hipLimitMallocHeapSize: *value = 0; return hipSuccess;  // no device-side malloc
    case hipLimitPrintfFifoSize: *value = 0; return hipSuccess;  // no device-side printf
    default: return done(hipErrorUnsupportedLimit);
  }
}

HK_HIP_API hipError_t hipDeviceSetLimit(enum hipLimit_t limit, size_t) {
  if (limit == hipLimitStackSize) return hipSuccess;  // scratch is sized per kernel from its metadata
  return done(hipErrorUnsupportedLimit);
}

HK_HIP_API hipError_t hipDeviceGetCacheConfig(hipFuncCache_t* config) {
  if (!config) return done(hipErrorInvalidValue);
  *config = hipFuncCachePreferNone;
  return hipSuccess;
}
HK_HIP_API hipError_t hipDeviceSetCacheConfig(hipFuncCache_t) { return hipSuccess; }
HK_HIP_API hipError_t hipDeviceGetSharedMemConfig(hipSharedMemConfig* config) {
  if (!config) return done(hipErrorInvalidValue);
  *config = hipSharedMemBankSizeFourByte;
  return hipSuccess;
}
HK_HIP_API hipError_t hipDeviceSetSharedMemConfig(hipSharedMemConfig) { return hipSuccess; }

HK_HIP_API hipError_t hipDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least) *least = 0;
  if (greatest) *greatest = -1;
  return hipSuccess;
}

// One device: there is no peer.
HK_HIP_API hipError_t hipDeviceCanAccessPeer(int* can, int id, int peer) {
  if (!can) return done(hipErrorInvalidValue);
  if (!valid_device(id) || !valid_device(peer)) return done(hipErrorInvalidDevice);
  *can = 0;
  return hipSuccess;
}
HK_HIP_API hipError_t hipDeviceEnablePeerAccess(int, unsigned int) { return done(hipErrorInvalidDevice); }
HK_HIP_API hipError_t hipDeviceDisablePeerAccess(int) { return done(hipErrorPeerAccessNotEnabled); }

HK_HIP_API hipError_t hipDeviceSynchronize() {
  // Work finished when it was enqueued, but for what is queued behind host functions (stream_queue.h); what is left
  // to report is a fault not yet seen by a synchronisation.
  if (hipError_t e = check_unsafe_call(); e != hipSuccess) return e;
  drain_all();
  return resurface(Runtime::get().take_all_pending());
}

HK_HIP_API hipError_t hipCtxSynchronize() { return hipDeviceSynchronize(); }

HK_HIP_API hipError_t hipDeviceReset() {
  drain_all();         // work queued behind host functions still runs, as it would have before the reset
  abandon_captures();  // before the streams taking part are destroyed
  Runtime::get().reset();
  return hipSuccess;
}
