// Host reference of the 8-bit float formats (FNUZ e4m3/e5m2 on gfx942, OCP e4m3fn/e5m2 on gfx950), written from
// the format definitions and independent of hk's and vgpu's conversions: codes are decoded from their bit fields and
// rounding is decided by searching the code table for the nearest value. Shared by the ISA conversion tests, the
// GEMM tests and hk-run.
#pragma once
#include <cmath>
#include <cstdint>

namespace fp8_ref {


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
inline F8 fp8_of(bool ocp) { return ocp ? e4m3fn : e4m3fnuz; }
inline F8 bf8_of(bool ocp) { return ocp ? e5m2 : e5m2fnuz; }

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

}  // namespace fp8_ref
