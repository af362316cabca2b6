// Shared by the tile-library tests: device buffers, bf16/f16 quantisation on the host, and tolerant comparison.
#pragma once
#include <hip/hip_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#define HIP_OK(x) ASSERT_EQ((x), hipSuccess) << hipGetErrorString(x)

namespace hktest {

// Host model of the device types: round to nearest even, independent of the device's conversion code.
inline float quantize_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float quantize_f16(float f) { return float(_Float16(f)); }

template <class T>
float quantize(float f) {
  if constexpr (std::is_same_v<T, __bf16>) return quantize_bf16(f);
  else if constexpr (std::is_same_v<T, _Float16>) return quantize_f16(f);
  else return f;
}

template <class T>
struct Buffer {
  T* dev = nullptr;
  std::vector<float> host;  // the exact values the device holds, as float
  explicit Buffer(size_t n, uint32_t seed = 0, float scale = 1.f) : host(n) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<T> raw(n);
    for (size_t i = 0; i < n; ++i) {
      host[i] = seed ? quantize<T>(u(rng)) : 0.f;
      raw[i] = T(host[i]);
    }
    EXPECT_EQ(hipMalloc(&dev, n * sizeof(T)), hipSuccess);
    EXPECT_EQ(hipMemcpy(dev, raw.data(), n * sizeof(T), hipMemcpyHostToDevice), hipSuccess);
  }
  ~Buffer() { (void)hipFree(dev); }
  std::vector<float> read() const {
    std::vector<T> raw(host.size());
    EXPECT_EQ(hipMemcpy(raw.data(), dev, raw.size() * sizeof(T), hipMemcpyDeviceToHost), hipSuccess);
    std::vector<float> out(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) out[i] = float(raw[i]);
    return out;
  }
};

// |got - want| <= atol + rtol * |want| everywhere; reports the first few misses.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, float atol, float rtol,
                         const char* what) {
  ASSERT_EQ(got.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok = std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i]) ||
              (std::isnan(got[i]) && std::isnan(want[i])) || got[i] == want[i];
    if (!ok && bad++ < 5) ADD_FAILURE() << what << " [" << i << "]: got " << got[i] << " want " << want[i];
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " elements differ";
}

inline bool is_gfx950() {
  hipDeviceProp_t p;
  return hipGetDeviceProperties(&p, 0) == hipSuccess && std::strncmp(p.gcnArchName, "gfx950", 6) == 0;
}

}  // namespace hktest
