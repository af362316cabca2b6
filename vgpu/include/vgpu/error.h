// The exception vgpu throws for malformed inputs; kept apart from device.h so that the loader can use it alone.
#pragma once
#include <stdexcept>

namespace vgpu {

// Thrown for malformed inputs (code objects, launch parameters) outside a running kernel.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace vgpu
