// Helpers shared by the HIP runtime tests.
#pragma once
#include <hip/hip_runtime.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "host/device.h"

// Asserts that a HIP call succeeds, printing the runtime's description (with any fault detail) if not.
#define HIP_ASSERT(expr)                                                                          \
  do {                                                                                            \
    hipError_t hip_assert_status_ = (expr);                                                       \
    ASSERT_EQ(hip_assert_status_, hipSuccess) << #expr << ": " << hipGetErrorString(hip_assert_status_); \
  } while (0)

// The arch the test runs on: HK_VGPU_ARCH as the CTest registration sets it (what the runtime is asked for, so the
// tests can check what the device then reports), else the host toolkit's lookup of the device.
inline std::string test_arch() {
  if (const char* env = std::getenv("HK_VGPU_ARCH"); env && *env) return env;
  return std::string(hk_host::name(hk_host::device_arch()));
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
