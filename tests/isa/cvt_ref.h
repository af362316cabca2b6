// Host references for the conversion, packed-math and cross-lane tests, written from the format and instruction
// definitions (docs/vgpu-numerics.md, /work/shared/reference/cdna.md) and independent of vgpu's own code: codes are
// decoded from their bit fields, and rounding is decided by searching the code table for the nearest value.
#pragma once
#include <hip/hip_runtime.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hk/arch/target.h"

#include "fp8_ref.h"
#include "host/device.h"
#include "isa_arch.h"

namespace cvt_ref {

// --- Test plumbing ---------------------------------------------------------------------------------------------------

// The arch of the device (vgpu's lookup: the ISA tests also run on gfx90a, which hk's does not know).
inline bool gfx950() { return isa_arch::gfx950(); }
// The 8-bit float instructions exist (not on gfx90a).
inline bool has_fp8() { return isa_arch::has_fp8(); }

// A device copy of a host vector.
template <class T>
struct Dev {
  T* p = nullptr;
  size_t n = 0;
  explicit Dev(const std::vector<T>& h) : n(h.size()) {
    EXPECT_EQ(hipMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)), hipSuccess);
    if (n) EXPECT_EQ(hipMemcpy(p, h.data(), n * sizeof(T), hipMemcpyHostToDevice), hipSuccess);
  }
  explicit Dev(size_t count) : Dev(std::vector<T>(count)) {}
  std::vector<T> get() const {
    std::vector<T> h(n);
    EXPECT_EQ(hipDeviceSynchronize(), hipSuccess);
    if (n) EXPECT_EQ(hipMemcpy(h.data(), p, n * sizeof(T), hipMemcpyDeviceToHost), hipSuccess);
    return h;
  }
  ~Dev() { (void)hipFree(p); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
};

inline uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }
inline float from_bits(uint32_t u) { return std::bit_cast<float>(u); }

// --- 8-bit float formats: fp8_ref.h (the host toolkit's fp8 model) ---------------------------------------------------

using namespace fp8_ref;

// Stochastic rounding as the ISA model states it: the magnitude is taken in units of 2^-23 of its binade (the binade of
// the smallest normal for subnormal results; finer bits are dropped), the top 23 - m bits of the seed are added, and
// the sum is truncated to the format's precision.
inline uint8_t encode_sr(double x, uint32_t seed, const F8& f, bool saturate = false) {
  const bool neg = std::signbit(x);
  if (std::isnan(x)) return nan_code(f, neg);
  if (std::isinf(x)) return overflow_code(f, neg, true, saturate);
  const double a = std::fabs(x);
  if (a == 0) return zero_code(f, neg);
  const int emin = 1 - f.bias;
  const int e = std::max(std::ilogb(a), emin);
  const double unit = std::ldexp(1.0, e - 23);
  double t = std::floor(a / unit) + double(seed >> (9 + f.m));
  t = std::floor(t / std::ldexp(1.0, 23 - f.m)) * std::ldexp(1.0, 23 - f.m);
  const double mag = t * unit;
  const int top = max_code(f);
  if (mag > value(uint8_t(top), f)) return overflow_code(f, neg, false, saturate);
  if (mag == 0) return zero_code(f, neg);
  for (int c = 1; c <= top; ++c)
    if (value(uint8_t(c), f) == mag) return uint8_t((neg ? 0x80 : 0) | c);
  ADD_FAILURE() << "encode_sr: " << mag << " is no code of " << f.name;
  return 0;
}

// --- bf16 ------------------------------------------------------------------------------------------------------------

// f32 -> bf16, round to nearest even (NaN: a quiet NaN): the host toolkit's rounding.
inline uint16_t bf16_rne(float x) { return hk_host::bf16_bits(x); }

// --- f16 -------------------------------------------------------------------------------------------------------------

inline uint16_t h_bits(_Float16 h) { return std::bit_cast<uint16_t>(h); }
inline _Float16 h_from(uint16_t u) { return std::bit_cast<_Float16>(u); }
// One rounding of an exact long double (x87: 64-bit significand) to f16.
inline uint16_t f16_round(long double x) { return h_bits(_Float16(x)); }

}  // namespace cvt_ref
