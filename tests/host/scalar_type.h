// The host toolkit for hk's kernel APIs: their element types (hk::scalar_type) as the toolkit's formats. For the
// kernel tests and the tools that link hk_kernels (the tile-library tests name C++ types instead).
#pragma once
#include "common/api.h"
#include "device.h"

namespace hk_host {

inline constexpr Type type_of(hk::scalar_type t) {
  switch (t) {
    case hk::scalar_type::bf16: return Type::bf16;
    case hk::scalar_type::f16: return Type::f16;
    case hk::scalar_type::fp32: return Type::fp32;
    case hk::scalar_type::fp8_e4m3: return Type::fp8_e4m3;
    case hk::scalar_type::fp8_e5m2: return Type::fp8_e5m2;
  }
  return Type::fp32;
}

// t as the device stores it (fp8 in the device's format).
inline Format device_format(hk::scalar_type t) { return device_format(type_of(t)); }

}  // namespace hk_host
