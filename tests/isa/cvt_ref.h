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

namespace cvt_ref {

// --- Test plumbing ---------------------------------------------------------------------------------------------------

inline std::string arch() {
  if (const char* env = std::getenv("HK_VGPU_ARCH"); env && *env) return env;
  hipDeviceProp_t p;
  if (hipGetDeviceProperties(&p, 0) != hipSuccess) return "";
  std::string n = p.gcnArchName;
  return n.substr(0, n.find(':'));
}
inline bool gfx950() { return arch() == "gfx950"; }

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

// --- 8-bit float formats ---------------------------------------------------------------------------------------------

struct F8 {
  const char* name;
  int e, m, bias;
  bool fnuz;     // 0x80 is the NaN, no infinities, no negative zero
  bool ieee;     // e5m2 (OCP): all-ones exponent holds infinities and NaNs
};
inline constexpr F8 e4m3fnuz{"e4m3fnuz", 4, 3, 8, true, false};
inline constexpr F8 e5m2fnuz{"e5m2fnuz", 5, 2, 16, true, false};
inline constexpr F8 e4m3fn{"e4m3fn", 4, 3, 7, false, false};
inline constexpr F8 e5m2{"e5m2", 5, 2, 15, false, true};

// The arch's fp8 (e4m3) and bf8 (e5m2) formats.
inline F8 fp8_of(bool g950) { return g950 ? e4m3fn : e4m3fnuz; }
inline F8 bf8_of(bool g950) { return g950 ? e5m2 : e5m2fnuz; }

inline bool is_nan(uint8_t c, const F8& f) {
  const int E = c >> f.m & ((1 << f.e) - 1), M = c & ((1 << f.m) - 1);
  if (f.fnuz) return c == 0x80;
  if (f.ieee) return E == (1 << f.e) - 1 && M != 0;
  return E == (1 << f.e) - 1 && M == (1 << f.m) - 1;
}

// Value of a code (NaN for NaN codes).
inline double value(uint8_t c, const F8& f) {
  if (is_nan(c, f)) return NAN;
  const int E = c >> f.m & ((1 << f.e) - 1), M = c & ((1 << f.m) - 1);
  const double s = (c & 0x80) ? -1.0 : 1.0;
  if (f.ieee && E == (1 << f.e) - 1) return s * INFINITY;
  if (E == 0) return s * std::ldexp(double(M), 1 - f.bias - f.m);
  return s * std::ldexp(1.0 + std::ldexp(double(M), -f.m), E - f.bias);
}

// Largest finite magnitude code.
inline uint8_t max_code(const F8& f) {
  uint8_t best = 0;
  for (int c = 0; c < 0x80; ++c)
    if (std::isfinite(value(uint8_t(c), f))) best = uint8_t(c);
  return best;
}

inline uint8_t nan_code(const F8& f, bool neg) {
  if (f.fnuz) return 0x80;
  return uint8_t((neg ? 0x80 : 0) | (f.ieee ? 0x7e : 0x7f));
}

// The code an overflowing or infinite input gets.
inline uint8_t overflow_code(const F8& f, bool neg, bool infinite_input, bool saturate) {
  if (f.fnuz) return (saturate && !infinite_input) ? uint8_t((neg ? 0x80 : 0) | max_code(f)) : 0x80;
  const uint8_t s = neg ? 0x80 : 0;
  if (saturate && !infinite_input) return uint8_t(s | max_code(f));
  return uint8_t(s | (f.ieee ? 0x7c : 0x7f));
}

inline uint8_t zero_code(const F8& f, bool neg) { return (neg && !f.fnuz) ? 0x80 : 0; }

// Round to nearest, ties to the even code: the nearest of the finite codes and the code one step past the largest
// finite value (which stands for overflow), by exhaustive search.
inline uint8_t encode_rne(double x, const F8& f, bool saturate = false) {
  const bool neg = std::signbit(x);
  if (std::isnan(x)) return nan_code(f, neg);
  if (std::isinf(x)) return overflow_code(f, neg, true, saturate);
  const double a = std::fabs(x);
  const int top = max_code(f);
  auto val = [&](int c) {  // magnitude code -> value, with the virtual code top + 1
    return c <= top ? value(uint8_t(c), f) : value(uint8_t(top), f) * 2 - value(uint8_t(top - 1), f);
  };
  if (a >= val(top + 1)) return overflow_code(f, neg, false, saturate);
  int best = 0;
  for (int c = 1; c <= top + 1; ++c) {
    const double d = std::fabs(a - val(c)), db = std::fabs(a - val(best));
    if (d < db || (d == db && (c & 1) == 0)) best = c;
  }
  if (best > top) return overflow_code(f, neg, false, saturate);
  if (best == 0) return zero_code(f, neg);
  return uint8_t((neg ? 0x80 : 0) | best);
}

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

// f32 -> bf16, round to nearest even, by comparing the distances to the two candidates (NaN: any NaN).
inline uint16_t bf16_rne(float x) {
  const uint32_t u = bits(x);
  if (std::isnan(x)) return uint16_t(u >> 16 | 0x40);
  if (std::isinf(x)) return uint16_t(u >> 16);
  const uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;  // hi is one bf16 step further from zero
  auto mag = [](uint32_t b) {
    return (b & 0x7fffffffu) == 0x7f800000u ? std::ldexp(1.0, 128) : std::fabs(double(from_bits(b)));
  };
  const double a = std::fabs(double(x)), dl = a - mag(lo), dh = mag(hi) - a;
  if (dl < dh || (dl == dh && ((lo >> 16) & 1) == 0)) return uint16_t(lo >> 16);
  return uint16_t(hi >> 16);
}

// --- f16 -------------------------------------------------------------------------------------------------------------

inline uint16_t h_bits(_Float16 h) { return std::bit_cast<uint16_t>(h); }
inline _Float16 h_from(uint16_t u) { return std::bit_cast<_Float16>(u); }
// One rounding of an exact long double (x87: 64-bit significand) to f16.
inline uint16_t f16_round(long double x) { return h_bits(_Float16(x)); }

}  // namespace cvt_ref
