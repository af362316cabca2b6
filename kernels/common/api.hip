#include "api.h"

#include "hk/arch/target.h"

namespace hk {

const char* to_string(scalar_type t) {
  switch (t) {
    case scalar_type::bf16: return "bf16";
    case scalar_type::f16: return "f16";
    case scalar_type::fp32: return "fp32";
    case scalar_type::fp8_e4m3: return "fp8_e4m3";
    case scalar_type::fp8_e5m2: return "fp8_e5m2";
  }
  return "?";
}

size_t size_of(scalar_type t) {
  switch (t) {
    case scalar_type::fp32: return 4;
    case scalar_type::bf16:
    case scalar_type::f16: return 2;
    case scalar_type::fp8_e4m3:
    case scalar_type::fp8_e5m2: return 1;
  }
  return 0;
}

namespace api {

const arch::target* current_target(const char* entry, Status& status) {
  int device = 0;
  hipDeviceProp_t prop;
  if (hipGetDevice(&device) != hipSuccess || hipGetDeviceProperties(&prop, device) != hipSuccess) {
    (void)hipGetLastError();
    status = error(entry, hipErrorNoDevice, "no HIP device");
    return nullptr;
  }
  const arch::target* t = arch::target_of(prop);
  if (!t) {
    std::string built;
    for (const arch::target& k : arch::targets) built += std::string(built.empty() ? "" : ", ") + k.name;
    status = error(entry, hipErrorNoBinaryForGpu, std::string("no kernel for ") + prop.gcnArchName + " (built for " + built + ")");
  }
  return t;
}

bool inside_allocation(const void* p, size_t bytes) {
  void* base = nullptr;
  size_t size = 0;
  if (hipMemGetAddressRange(reinterpret_cast<hipDeviceptr_t*>(&base), &size, const_cast<void*>(p)) != hipSuccess) {
    (void)hipGetLastError();
    return false;  // not memory the runtime allocated
  }
  return static_cast<const char*>(p) + bytes <= static_cast<const char*>(base) + size;
}

}  // namespace api
}  // namespace hk
