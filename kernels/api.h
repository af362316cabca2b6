// What every kernel's host API shares: element types and the status a call returns.
#pragma once
#include <hip/hip_runtime.h>

#include <string>

namespace hk {

enum class dtype { bf16, f16, fp32, fp8_e4m3, fp8_e5m2 };

inline const char* to_string(dtype t) {
  switch (t) {
    case dtype::bf16: return "bf16";
    case dtype::f16: return "f16";
    case dtype::fp32: return "fp32";
    case dtype::fp8_e4m3: return "fp8_e4m3";
    case dtype::fp8_e5m2: return "fp8_e5m2";
  }
  return "?";
}

struct Status {
  hipError_t code = hipSuccess;
  std::string message;           // empty on success
  explicit operator bool() const { return code == hipSuccess; }
};

}  // namespace hk
