// Small exports of the real runtime that are not about the device: names for tracing, half-precision helpers,
// channel descriptors, build information for debuggers, and the hiprtc error strings.
#include <cstring>

#include "runtime.h"
// After runtime.h, which brings in hip_runtime_api.h first.
#include <hip/amd_detail/amd_channel_descriptor.h>
#include <hip/amd_detail/hip_prof_str.h>
#include <hip/hiprtc.h>

using namespace vgpu::hiprt;

HK_HIP_API const char* hipApiName(uint32_t id) { return hip_api_name(id); }

HK_HIP_API const char* hipGetCmdName(uint32_t) { return "unknown"; }

HK_HIP_API hipChannelFormatDesc hipCreateChannelDesc(int x, int y, int z, int w, hipChannelFormatKind f) {
  hipChannelFormatDesc d;
  d.x = x;
  d.y = y;
  d.z = z;
  d.w = w;
  d.f = f;
  return d;
}

// IEEE half <-> float, as libgcc's helpers of the same name (the real runtime exports them weakly).
HK_HIP_API unsigned short __gnu_f2h_ieee(float f) {
  _Float16 h = static_cast<_Float16>(f);
  unsigned short bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

HK_HIP_API float __gnu_h2f_ieee(unsigned short bits) {
  _Float16 h;
  std::memcpy(&h, &bits, sizeof h);
  return static_cast<float>(h);
}

// Build identification the ROCm debugger asks the runtime for.
HK_HIP_API size_t amd_dbgapi_get_build_id() { return 0; }
HK_HIP_API const char* amd_dbgapi_get_build_name() { return "vgpu"; }
HK_HIP_API const char* amd_dbgapi_get_git_hash() { return ""; }

HK_HIP_API const char* hiprtcGetErrorString(hiprtcResult result) {
  switch (result) {
    case HIPRTC_SUCCESS: return "HIPRTC_SUCCESS";
    case HIPRTC_ERROR_OUT_OF_MEMORY: return "HIPRTC_ERROR_OUT_OF_MEMORY";
    case HIPRTC_ERROR_PROGRAM_CREATION_FAILURE: return "HIPRTC_ERROR_PROGRAM_CREATION_FAILURE";
    case HIPRTC_ERROR_INVALID_INPUT: return "HIPRTC_ERROR_INVALID_INPUT";
    case HIPRTC_ERROR_INVALID_PROGRAM: return "HIPRTC_ERROR_INVALID_PROGRAM";
    case HIPRTC_ERROR_INVALID_OPTION: return "HIPRTC_ERROR_INVALID_OPTION";
    case HIPRTC_ERROR_COMPILATION: return "HIPRTC_ERROR_COMPILATION";
    case HIPRTC_ERROR_BUILTIN_OPERATION_FAILURE: return "HIPRTC_ERROR_BUILTIN_OPERATION_FAILURE";
    case HIPRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION:
      return "HIPRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION";
    case HIPRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION: return "HIPRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION";
    case HIPRTC_ERROR_NAME_EXPRESSION_NOT_VALID: return "HIPRTC_ERROR_NAME_EXPRESSION_NOT_VALID";
    case HIPRTC_ERROR_INTERNAL_ERROR: return "HIPRTC_ERROR_INTERNAL_ERROR";
    default: return "HIPRTC_ERROR_INVALID_INPUT";
  }
}

HK_HIP_API hiprtcResult hiprtcVersion(int* major, int* minor) {
  if (!major || !minor) return HIPRTC_ERROR_INVALID_INPUT;
  *major = HIP_VERSION_MAJOR;
  *minor = HIP_VERSION_MINOR;
  return HIPRTC_SUCCESS;
}

// There is no profiler to start or stop; the calls succeed so that instrumented programs run unchanged.
HK_HIP_API hipError_t hipProfilerStart() { return hipSuccess; }
HK_HIP_API hipError_t hipProfilerStop() { return hipSuccess; }
