// Narrow float formats: bf16 and the 8-bit formats. gfx942 uses the FNUZ variants (no negative zero, 0x80 is NaN,
// no infinities); gfx950 uses the OCP variants (e4m3fn: no infinities, S.1111.111 is NaN; e5m2: IEEE-like).
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

namespace vgpu {

enum class Fp8 : uint8_t { e4m3fnuz, e5m2fnuz, e4m3fn, e5m2 };

struct Fp8Spec {
  int exp_bits, man_bits, bias;
  bool fnuz;      // 0x80 is the only NaN; no -0, no inf
  bool has_inf;   // e5m2 (OCP): exponent all ones is inf/NaN as in IEEE
  float max;      // largest finite value
};

constexpr Fp8Spec spec(Fp8 f) {
  switch (f) {
    case Fp8::e4m3fnuz: return {4, 3, 8, true, false, 240.f};
    case Fp8::e5m2fnuz: return {5, 2, 16, true, false, 57344.f};
    case Fp8::e4m3fn: return {4, 3, 7, false, false, 448.f};
    case Fp8::e5m2: return {5, 2, 15, false, true, 57344.f};
  }
  return {4, 3, 7, false, false, 448.f};
}

// The e4m3 / e5m2 format an arch's fp8 / bf8 instructions use.
inline Fp8 fp8_format(bool gfx950) { return gfx950 ? Fp8::e4m3fn : Fp8::e4m3fnuz; }
inline Fp8 bf8_format(bool gfx950) { return gfx950 ? Fp8::e5m2 : Fp8::e5m2fnuz; }

// Exact value of an 8-bit code.
inline float decode_fp8(uint8_t code, Fp8 f) {
  const Fp8Spec s = spec(f);
  const bool neg = code & 0x80;
  const int e = (code >> s.man_bits) & ((1 << s.exp_bits) - 1), m = code & ((1 << s.man_bits) - 1);
  const int emax = (1 << s.exp_bits) - 1;
  if (s.fnuz) {
    if (code == 0x80) return NAN;
  } else if (s.has_inf) {
    if (e == emax) return m ? NAN : (neg ? -INFINITY : INFINITY);
  } else if (e == emax && m == (1 << s.man_bits) - 1) {
    return NAN;
  }
  float v = e == 0 ? std::ldexp(float(m), 1 - s.bias - s.man_bits)
                   : std::ldexp(float(m | (1 << s.man_bits)), e - s.bias - s.man_bits);
  return neg ? -v : v;
}

inline float bf16_to_f32(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

// f32 -> bf16, round to nearest even; NaN stays NaN (quiet).
inline uint16_t f32_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return uint16_t((u >> 16) | 0x40);
  return uint16_t((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

}  // namespace vgpu
