// Narrow float formats: bf16 and the 8-bit formats. gfx942 uses the FNUZ variants (no negative zero, 0x80 is NaN,
// no infinities); gfx950 uses the OCP variants (e4m3fn: no infinities, S.1111.111 is NaN; e5m2: IEEE-like).
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

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
// (`ocp`: the arch's Fp8Flavour, vgpu/arch.h; this header stands alone for the conversion tests.)
inline Fp8 fp8_format(bool ocp) { return ocp ? Fp8::e4m3fn : Fp8::e4m3fnuz; }
inline Fp8 bf8_format(bool ocp) { return ocp ? Fp8::e5m2 : Fp8::e5m2fnuz; }

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

// Bits of the decoded value as the hardware returns it: NaN codes give a quiet NaN carrying the code's sign bit.
inline uint32_t decode_fp8_bits(uint8_t code, Fp8 f) {
  const float v = decode_fp8(code, f);
  if (std::isnan(v)) return 0x7fc00000u | uint32_t(code & 0x80) << 24;
  return std::bit_cast<uint32_t>(v);
}

// --- f32 -> fp8 / bf8 ----------------------------------------------------------------------------------------------
// The conversion vgpu models for v_cvt_pk_{fp8,bf8}_f32, v_cvt_sr_{fp8,bf8}_f32 and their gfx950 scalef32 forms
// (docs/vgpu-numerics.md gives the sources):
//   - rounding: nearest-even, or stochastic: the seed's top (23 - mantissa bits) bits are added to the f32 mantissa
//     (after aligning subnormal results to the format's smallest exponent, dropping the bits shifted out) and the sum
//     is truncated;
//   - overflow of a finite input (the rounded magnitude exceeds the largest finite code): NaN for e4m3 (OCP S.1111.111,
//     FNUZ 0x80), infinity for OCP e5m2, 0x80 for FNUZ e5m2; with `saturate` the largest finite value instead;
//   - infinities: OCP e5m2 keeps them, the others give NaN (saturation does not apply to them);
//   - NaN: OCP S.1111.111 (e4m3) or S.11111.10 (e5m2) with the input's sign, FNUZ 0x80;
//   - zeros and underflow: OCP keeps the sign; FNUZ has no negative zero and gives 0x00.
// `scale_exp` divides the input by 2^scale_exp first (exactly: only the exponent changes).
namespace detail {

struct Fp8Limits {
  int man_bits, emin, emax;  // smallest and largest unbiased exponent of a normal code
  uint8_t max_code;          // largest finite magnitude code
};

constexpr Fp8Limits limits(Fp8 f) {
  const Fp8Spec s = spec(f);
  const int emax_field = (1 << s.exp_bits) - 1 - (s.has_inf ? 1 : 0);  // OCP e4m3 and FNUZ use the top exponent
  const uint8_t max_code = s.fnuz ? 0x7f : s.has_inf ? 0x7b : 0x7e;
  return {s.man_bits, 1 - s.bias, emax_field - s.bias, max_code};
}

inline uint8_t fp8_overflow(Fp8 f, uint8_t sign, bool saturate) {
  const Fp8Spec s = spec(f);
  if (saturate) return sign | limits(f).max_code;
  if (s.fnuz) return 0x80;
  return sign | (s.has_inf ? 0x7c : 0x7f);
}

template <bool Stochastic>
inline uint8_t encode_fp8(float x, uint32_t seed, Fp8 f, bool saturate, int scale_exp) {
  const Fp8Spec s = spec(f);
  const Fp8Limits L = limits(f);
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const uint8_t sign = uint8_t(u >> 24 & 0x80);
  const uint32_t efield = u >> 23 & 0xff;
  uint32_t man = u & 0x7fffff;
  if (efield == 0xff) {
    if (man) return s.fnuz ? 0x80 : uint8_t(sign | (s.has_inf ? 0x7e : 0x7f));  // NaN
    return s.fnuz ? 0x80 : uint8_t(sign | (s.has_inf ? 0x7c : 0x7f));           // infinity
  }
  const uint8_t zero = s.fnuz ? 0 : sign;
  if (efield == 0 && man == 0) return zero;
  int exp = int(efield) - 127;
  if (efield == 0) {  // f32 subnormal: normalise (exact)
    exp = -126;
    while (!(man & 0x800000)) man <<= 1, exp--;
    man &= 0x7fffff;
  }
  exp -= scale_exp;
  if (exp > L.emax) return fp8_overflow(f, sign, saturate);
  const bool sub = exp < L.emin;
  const int m = L.man_bits, drop = 23 - m;
  uint32_t q;  // the magnitude's code relative to the exponent field below
  if (sub) {
    const uint32_t diff = uint32_t(L.emin - exp);
    const uint64_t sig = uint64_t(man | 0x800000);  // 24-bit significand, scaled by 2^(emin - 23)
    if constexpr (Stochastic) {
      const uint64_t aligned = diff >= 32 ? 0 : sig >> diff;
      q = uint32_t((aligned + (seed >> (9 + m))) >> drop);
    } else {
      const uint32_t sh = uint32_t(drop) + diff;
      if (sh > 40) return zero;
      const uint64_t keep = sig >> sh, rem = sig & ((uint64_t(1) << sh) - 1), half = uint64_t(1) << (sh - 1);
      q = uint32_t(keep + ((rem > half || (rem == half && (keep & 1))) ? 1 : 0));
    }
  } else {
    if constexpr (Stochastic) {
      q = (man + (seed >> (9 + m))) >> drop;  // a carry out of the mantissa steps the exponent below
    } else {
      const uint32_t keep = man >> drop, rem = man & ((1u << drop) - 1), half = 1u << (drop - 1);
      q = keep + ((rem > half || (rem == half && (keep & 1))) ? 1 : 0);
    }
    q += uint32_t(exp - L.emin + 1) << m;
  }
  if (q > L.max_code) return fp8_overflow(f, sign, saturate);
  if (q == 0) return zero;
  return uint8_t(sign | q);
}

}  // namespace detail

// f32 -> 8-bit code, round to nearest even.
inline uint8_t encode_fp8(float x, Fp8 f, bool saturate = false, int scale_exp = 0) {
  return detail::encode_fp8<false>(x, 0, f, saturate, scale_exp);
}
// f32 -> 8-bit code, stochastic rounding with the random bits `seed`.
inline uint8_t encode_fp8_sr(float x, uint32_t seed, Fp8 f, bool saturate = false, int scale_exp = 0) {
  return detail::encode_fp8<true>(x, seed, f, saturate, scale_exp);
}

}  // namespace vgpu
