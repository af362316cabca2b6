// The (deprecated) context API: with a single device there is a single context, the primary one, and every
// context operation refers to it. Driver-style programs call these before hipModuleLoad.
#include <vector>

#include "runtime.h"

// The one context, completing the header's opaque type.
struct ihipCtx_t {
  unsigned flags = 0;
};

using namespace vgpu::hiprt;

namespace {

ihipCtx_t g_primary;
thread_local std::vector<hipCtx_t> t_context_stack;

bool valid(hipCtx_t ctx) { return ctx == &g_primary; }

}  // namespace

HK_HIP_API hipError_t hipCtxCreate(hipCtx_t* ctx, unsigned int flags, hipDevice_t device) {
  if (!ctx) return done(hipErrorInvalidValue);
  if (device != 0) return done(hipErrorInvalidDevice);
  g_primary.flags = flags;
  *ctx = &g_primary;
  t_context_stack.push_back(&g_primary);
  return hipSuccess;
}

HK_HIP_API hipError_t hipCtxDestroy(hipCtx_t ctx) {
  if (!valid(ctx)) return done(hipErrorInvalidContext);
  std::erase(t_context_stack, ctx);
  return hipSuccess;
}

HK_HIP_API hipError_t hipCtxGetCurrent(hipCtx_t* ctx) {
  if (!ctx) return done(hipErrorInvalidValue);
  *ctx = &g_primary;
  return hipSuccess;
}

HK_HIP_API hipError_t hipCtxSetCurrent(hipCtx_t ctx) {
  if (ctx && !valid(ctx)) return done(hipErrorInvalidContext);
  return hipSuccess;
}

HK_HIP_API hipError_t hipCtxPushCurrent(hipCtx_t ctx) {
  if (!valid(ctx)) return done(hipErrorInvalidContext);
  t_context_stack.push_back(ctx);
  return hipSuccess;
}

HK_HIP_API hipError_t hipCtxPopCurrent(hipCtx_t* ctx) {
  if (t_context_stack.empty()) return done(hipErrorInvalidContext);
  if (ctx) *ctx = t_context_stack.back();
  t_context_stack.pop_back();
  return hipSuccess;
}

HK_HIP_API hipError_t hipCtxGetDevice(hipDevice_t* device) {
  if (!device) return done(hipErrorInvalidValue);
  *device = 0;
  return hipSuccess;
}

HK_HIP_API hipError_t hipCtxGetApiVersion(hipCtx_t ctx, int* version) {
  if (!version) return done(hipErrorInvalidValue);
  if (!valid(ctx)) return done(hipErrorInvalidContext);
  *version = HIP_VERSION;
  return hipSuccess;
}

HK_HIP_API hipError_t hipCtxGetFlags(unsigned int* flags) {
  if (!flags) return done(hipErrorInvalidValue);
  *flags = g_primary.flags;
  return hipSuccess;
}

HK_HIP_API hipError_t hipCtxGetCacheConfig(hipFuncCache_t* config) {
  if (!config) return done(hipErrorInvalidValue);
  *config = hipFuncCachePreferNone;
  return hipSuccess;
}
HK_HIP_API hipError_t hipCtxSetCacheConfig(hipFuncCache_t) { return hipSuccess; }
HK_HIP_API hipError_t hipCtxGetSharedMemConfig(hipSharedMemConfig* config) {
  if (!config) return done(hipErrorInvalidValue);
  *config = hipSharedMemBankSizeFourByte;
  return hipSuccess;
}
HK_HIP_API hipError_t hipCtxSetSharedMemConfig(hipSharedMemConfig) { return hipSuccess; }
HK_HIP_API hipError_t hipCtxEnablePeerAccess(hipCtx_t, unsigned int) { return done(hipErrorInvalidContext); }
HK_HIP_API hipError_t hipCtxDisablePeerAccess(hipCtx_t) { return done(hipErrorPeerAccessNotEnabled); }

HK_HIP_API hipError_t hipDevicePrimaryCtxRetain(hipCtx_t* ctx, hipDevice_t device) {
  if (!ctx) return done(hipErrorInvalidValue);
  if (device != 0) return done(hipErrorInvalidDevice);
  *ctx = &g_primary;
  return hipSuccess;
}

HK_HIP_API hipError_t hipDevicePrimaryCtxRelease(hipDevice_t device) {
  return device == 0 ? hipSuccess : done(hipErrorInvalidDevice);
}

HK_HIP_API hipError_t hipDevicePrimaryCtxGetState(hipDevice_t device, unsigned int* flags, int* active) {
  if (!flags || !active) return done(hipErrorInvalidValue);
  if (device != 0) return done(hipErrorInvalidDevice);
  *flags = g_primary.flags;
  *active = 1;
  return hipSuccess;
}

HK_HIP_API hipError_t hipDevicePrimaryCtxReset(hipDevice_t device) {
  if (device != 0) return done(hipErrorInvalidDevice);
  return hipDeviceReset();
}

HK_HIP_API hipError_t hipDevicePrimaryCtxSetFlags(hipDevice_t device, unsigned int flags) {
  if (device != 0) return done(hipErrorInvalidDevice);
  g_primary.flags = flags;
  return hipSuccess;
}
