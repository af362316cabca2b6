// Definitions for the functions listed in unsupported.def. This file deliberately does not include the HIP
// headers: each stub is declared without parameters, which at the machine level is compatible with any argument
// list, and returns an int, which is how both hipError_t and hiprtcResult are returned.
namespace vgpu::hiprt {
int unsupported_stub(const char* function);  // errors.cpp: reports once, returns hipErrorNotSupported
}

#define HK_UNSUPPORTED(name) \
  extern "C" __attribute__((visibility("default"))) int name() { return vgpu::hiprt::unsupported_stub(#name); }
// hiprtc functions return hiprtcResult; HIPRTC_ERROR_INTERNAL_ERROR is 11.
#define HK_UNSUPPORTED_RTC(name)                                       \
  extern "C" __attribute__((visibility("default"))) int name() {      \
    vgpu::hiprt::unsupported_stub(#name);                              \
    return 11;                                                         \
  }

#include "unsupported.def"
