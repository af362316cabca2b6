// Helpers shared by the HIP runtime tests.
#pragma once
#include <hip/hip_runtime.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "hk/arch/target.h"
#include "host/device.h"

// Asserts that a HIP call succeeds, printing the runtime's description (with any fault detail) if not.
#define HIP_ASSERT(expr)                                                                          \
  do {                                                                                            \
    hipError_t hip_assert_status_ = (expr);                                                       \
    ASSERT_EQ(hip_assert_status_, hipSuccess) << #expr << ": " << hipGetErrorString(hip_assert_status_); \
  } while (0)

// The target the test runs on (hk's one lookup of arch names): HK_VGPU_ARCH as the CTest registration sets it, else
// what the device reports; null for an arch hk is not built for.
inline const hk::arch::target* test_target() {
  if (const char* env = std::getenv("HK_VGPU_ARCH"); env && *env) return hk::arch::find_target(env);
  return hk::arch::device_target(0);
}
inline std::string test_arch() {
  const hk::arch::target* t = test_target();
  return t ? t->name : "";
}

// A device buffer of T that frees itself.
template <typename T>
struct DeviceBuffer {
  T* ptr = nullptr;
  size_t count = 0;
  explicit DeviceBuffer(size_t n) : count(n) {
    if (hipMalloc(&ptr, n * sizeof(T)) != hipSuccess) ptr = nullptr;
  }
  ~DeviceBuffer() {
    if (ptr) (void)hipFree(ptr);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  size_t bytes() const { return count * sizeof(T); }
};
