// Packed math (VOP3P): two 16-bit lanes per register, the dot products and the f16/f32 mixed fma.
//
// Operand halves: for source k, the low result takes the half op_sel[k] selects and the high result the half
// op_sel_hi[k] selects (1 = bits 31:16); neg_lo[k] / neg_hi[k] negate the half feeding the low / high result (float
// operations only). An inline constant reaches the instruction as 32 bits: integer constants sign-extended, float
// constants as an f16 (bf16) value in bits 15:0 with zero above for f16 (bf16) operations and as the f32 value for
// integer operations (LLVM's AMDGPUBaseInfo describes this hardware behaviour), so a constant feeds the high half
// only through op_sel_hi = 0, which is how LLVM emits it. clamp clamps float results to [0, 1] and saturates integer
// results to the result type.
#include <cmath>
#include <limits>

#include "isa/formats.h"
#include "isa/isa.h"
#include "isa/ops.h"

namespace vgpu {
namespace {

using u16 = uint16_t;
using u32 = uint32_t;
using u64 = uint64_t;
using i64 = int64_t;
using f32 = float;

enum class H : uint8_t { f16, bf16, i16, u16 };

constexpr bool is_float(H h) { return h == H::f16 || h == H::bf16; }

inline u16 half_of(u32 x, bool hi) { return u16(hi ? x >> 16 : x); }

inline double to_double(u16 h, H t) {
  if (t == H::f16) return double(std::bit_cast<f16>(h));
  if (t == H::bf16) return double(bf16_to_f32(h));
  if (t == H::i16) return double(int16_t(h));
  return double(h);
}

// IEEE-mode min/max (a quiet NaN operand yields the other one; -0 < +0) and the IEEE 754-2019 minimum/maximum
// (NaN propagates).
inline double min_num(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return (a < b || (a == b && std::signbit(a))) ? a : b;
}
inline double max_num(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return (a > b || (a == b && !std::signbit(a))) ? a : b;
}
inline double minimum(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : min_num(a, b); }
inline double maximum(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : max_num(a, b); }

// Rounds an exact (or double-precision) result to the 16-bit result type.
inline u16 round_half(double r, H t, bool clamp) {
  if (is_float(t)) {
    if (clamp) r = std::isnan(r) ? 0.0 : std::min(std::max(r, 0.0), 1.0);
    if (t == H::f16) return std::bit_cast<u16>(f16(r));  // one rounding from double
    return f32_to_bf16(f32(r));
  }
  const i64 v = i64(r);
  if (clamp) {
    const i64 lo = t == H::i16 ? -32768 : 0, hi = t == H::i16 ? 32767 : 65535;
    return u16(std::clamp(v, lo, hi));
  }
  return u16(v);
}

// A packed 16-bit operation: F takes the sources as doubles (exact for every 16-bit type) and returns the exact or
// double-rounded result, which is rounded once more to the result type.
template <H T, auto F>
void pk16(Wave& w, const Inst& I) {
  constexpr int n = int(traits_of<F>::arity);
  Lanes<u32> src[3];
  for (int k = 0; k < n; ++k) fetch(w, I, 1 + k, k, src[k]);
  const bool clamp = I.flags & mod::clamp;
  Lanes<u32> r;
  for (int l = 0; l < kLanes; ++l) {
    double lo[3] = {}, hi[3] = {};
    for (int k = 0; k < n; ++k) {
      u16 a = half_of(src[k][l], I.op_sel >> k & 1), b = half_of(src[k][l], I.op_sel_hi >> k & 1);
      if constexpr (is_float(T)) {
        if (I.neg_lo >> k & 1) a ^= 0x8000;
        if (I.neg_hi >> k & 1) b ^= 0x8000;
      }
      lo[k] = to_double(a, T);
      hi[k] = to_double(b, T);
    }
    double rl, rh;
    if constexpr (n == 2) rl = F(lo[0], lo[1]), rh = F(hi[0], hi[1]);
    else rl = F(lo[0], lo[1], lo[2]), rh = F(hi[0], hi[1], hi[2]);
    r[l] = u32(round_half(rl, T, clamp)) | u32(round_half(rh, T, clamp)) << 16;
  }
  store(w, I, 0, r);
}

// Integer shifts take the shift count from the low 4 bits of the first source.
template <auto F>
void pk16_shift(Wave& w, const Inst& I) {
  Lanes<u32> s, x;
  fetch(w, I, 1, 0, s);
  fetch(w, I, 2, 1, x);
  Lanes<u32> r;
  for (int l = 0; l < kLanes; ++l) {
    const u16 sl = half_of(s[l], I.op_sel & 1), sh = half_of(s[l], I.op_sel_hi & 1);
    const u16 xl = half_of(x[l], I.op_sel >> 1 & 1), xh = half_of(x[l], I.op_sel_hi >> 1 & 1);
    r[l] = u32(F(u16(sl & 15), xl)) | u32(F(u16(sh & 15), xh)) << 16;
  }
  store(w, I, 0, r);
}

// v_pk_fmac_f16 (VOP2): D.lo = fma(S0.lo, S1.lo, D.lo), D.hi likewise.
void v_pk_fmac_f16(Wave& w, const Inst& I) {
  Lanes<u32> a, b, d;
  fetch(w, I, 1, 0, a);
  fetch(w, I, 2, 1, b);
  fetch(w, I, 0, 2, d);
  Lanes<u32> r;
  for (int l = 0; l < kLanes; ++l) {
    u32 x = 0;
    for (int h = 0; h < 2; ++h) {
      const double p = std::fma(to_double(u16(a[l] >> 16 * h), H::f16), to_double(u16(b[l] >> 16 * h), H::f16),
                                to_double(u16(d[l] >> 16 * h), H::f16));
      x |= u32(round_half(p, H::f16, I.flags & mod::clamp)) << 16 * h;
    }
    r[l] = x;
  }
  store(w, I, 0, r, (I.flags & mod::dpp) ? dpp_write_mask(w, I) : ~0ull);
}

// --- Dot products ---------------------------------------------------------------------------------------------------

// v_dot2_f32_{f16,bf16} D, S0, S1, S2: D = S0.lo * S1.lo + S0.hi * S1.hi + S2, rounded once to f32 (the products are
// exact in double). neg_lo[2] negates S2 and neg_hi[2] takes its absolute value (the mixed-precision convention).
template <H T>
void v_dot2_f32(Wave& w, const Inst& I) {
  Lanes<u32> a, b, c;
  fetch(w, I, 1, 0, a);
  fetch(w, I, 2, 1, b);
  fetch(w, I, 3, 2, c);
  Lanes<f32> r;
  for (int l = 0; l < kLanes; ++l) {
    double p = 0;
    const u32 s[2] = {a[l], b[l]};
    double lo[2], hi[2];
    for (int k = 0; k < 2; ++k) {
      u16 x = half_of(s[k], I.op_sel >> k & 1), y = half_of(s[k], I.op_sel_hi >> k & 1);
      if (I.neg_lo >> k & 1) x ^= 0x8000;
      if (I.neg_hi >> k & 1) y ^= 0x8000;
      lo[k] = to_double(x, T);
      hi[k] = to_double(y, T);
    }
    f32 acc = std::bit_cast<f32>(c[l]);
    if (I.neg_hi >> 2 & 1) acc = std::fabs(acc);
    if (I.neg_lo >> 2 & 1) acc = -acc;
    p = lo[0] * lo[1] + hi[0] * hi[1];
    r[l] = f32(p + double(acc));
  }
  output_modifiers(I, r);
  store(w, I, 0, r);
}

// v_dot2c_f32_{f16,bf16} (VOP2, DPP-capable): D = S0.lo * S1.lo + S0.hi * S1.hi + D.
template <H T>
void v_dot2c_f32(Wave& w, const Inst& I) {
  Lanes<u32> a, b;
  Lanes<f32> d;
  fetch(w, I, 1, 0, a);
  fetch(w, I, 2, 1, b);
  fetch(w, I, 0, 2, d);
  Lanes<f32> r;
  for (int l = 0; l < kLanes; ++l) {
    const double p = to_double(u16(a[l]), T) * to_double(u16(b[l]), T) +
                     to_double(u16(a[l] >> 16), T) * to_double(u16(b[l] >> 16), T);
    r[l] = f32(p + double(d[l]));
  }
  output_modifiers(I, r);
  store(w, I, 0, r, (I.flags & mod::dpp) ? dpp_write_mask(w, I) : ~0ull);
}

// Integer dot products: `N` elements of `Bits` bits per source dword, signed or not, plus the 32-bit S2 (or D for
// the accumulating c-forms). clamp saturates the sum to 32 bits.
template <int N, bool Signed>
i64 idot(u32 a, u32 b, u32 op_sel, u32 op_sel_hi) {
  constexpr int bits = 32 / N;
  if constexpr (N == 2) {  // the 16-bit dot takes its halves through op_sel like the other packed operations
    const u16 al = half_of(a, op_sel & 1), ah = half_of(a, op_sel_hi & 1);
    const u16 bl = half_of(b, op_sel >> 1 & 1), bh = half_of(b, op_sel_hi >> 1 & 1);
    if constexpr (Signed) return i64(int16_t(al)) * int16_t(bl) + i64(int16_t(ah)) * int16_t(bh);
    else return i64(al) * bl + i64(ah) * bh;
  } else {
    i64 s = 0;
    for (int i = 0; i < N; ++i) {
      const u32 x = a >> (bits * i) & ((1u << bits) - 1), y = b >> (bits * i) & ((1u << bits) - 1);
      if constexpr (Signed) {
        const int sh = 32 - bits;
        s += i64(int32_t(x << sh) >> sh) * i64(int32_t(y << sh) >> sh);
      } else {
        s += i64(x) * i64(y);
      }
    }
    return s;
  }
}

template <bool Signed>
u32 sat32(i64 v, bool clamp) {
  if (!clamp) return u32(v);
  if constexpr (Signed) return u32(int32_t(std::clamp<i64>(v, INT32_MIN, INT32_MAX)));
  else return u32(std::clamp<i64>(v, 0, UINT32_MAX));
}

template <int N, bool Signed, bool Accumulate>
void v_dot_int(Wave& w, const Inst& I) {
  Lanes<u32> a, b, c;
  fetch(w, I, 1, 0, a);
  fetch(w, I, 2, 1, b);
  if (Accumulate) fetch(w, I, 0, 2, c);
  else fetch(w, I, 3, 2, c);
  const bool clamp = I.flags & mod::clamp;
  Lanes<u32> r;
  for (int l = 0; l < kLanes; ++l) {
    const i64 acc = Signed ? i64(int32_t(c[l])) : i64(c[l]);
    const u32 sel = Accumulate ? 0 : I.op_sel, sel_hi = Accumulate ? 0xff : I.op_sel_hi;
    r[l] = sat32<Signed>(idot<N, Signed>(a[l], b[l], sel, sel_hi) + acc, clamp);
  }
  store(w, I, 0, r, (Accumulate && (I.flags & mod::dpp)) ? dpp_write_mask(w, I) : ~0ull);
}

// --- Mixed precision fma --------------------------------------------------------------------------------------------

// v_fma_mix_f32 / v_fma_mixlo_f16 / v_fma_mixhi_f16: each source is an f32 (op_sel_hi[k] = 0) or the f16 half op_sel[k]
// picks (op_sel_hi[k] = 1); the source modifiers (written -x and |x|, encoded as neg_lo[k] and neg_hi[k]) negate and take
// the absolute value of the selected value. The fma is computed with one rounding to the result: f32 for mix_f32, f16
// written to the low (mixlo) or high (mixhi) half of D, keeping the other.
enum class Mix : uint8_t { f32, lo, hi };

template <Mix M>
void v_fma_mix(Wave& w, const Inst& I) {
  Lanes<u32> src[3];
  bool neg[3], abs[3];
  for (int k = 0; k < 3; ++k) {
    Inst J = I;  // read the raw bits: the modifiers apply to the selected f16 or f32 value below
    neg[k] = J.op[1 + k].neg || (I.neg_lo >> k & 1);
    abs[k] = J.op[1 + k].abs || (I.neg_hi >> k & 1);
    J.op[1 + k].neg = J.op[1 + k].abs = false;
    fetch(w, J, 1 + k, k, src[k]);
  }
  const bool clamp = I.flags & mod::clamp;
  // Unlike the packed ops, the mixed fma's op_sel_hi defaults to all zeros (all sources f32) when LLVM omits it.
  const uint8_t f16_sources = (I.flags & mod::op_sel_hi_given) ? I.op_sel_hi : 0;
  const u64 exec = w.exec();
  u32* d = w.v[I.op[0].reg];
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    double x[3];
    for (int k = 0; k < 3; ++k) {
      const u32 v = src[k][l];
      x[k] = (f16_sources >> k & 1) ? to_double(half_of(v, I.op_sel >> k & 1), H::f16) : double(std::bit_cast<f32>(v));
      if (abs[k]) x[k] = std::fabs(x[k]);
      if (neg[k]) x[k] = -x[k];
    }
    if constexpr (M == Mix::f32) {
      f32 r = std::fma(f32(x[0]), f32(x[1]), f32(x[2]));  // inputs exact in f32; one rounding
      if (clamp) r = std::isnan(r) ? 0.0f : std::min(std::max(r, 0.0f), 1.0f);
      d[l] = std::bit_cast<u32>(r);
    } else {
      const u16 h = round_half(std::fma(x[0], x[1], x[2]), H::f16, clamp);
      d[l] = M == Mix::lo ? (d[l] & 0xffff0000u) | h : (d[l] & 0xffffu) | u32(h) << 16;
    }
  }
}

}  // namespace

void register_vop3p(IsaTable& t) {
  // f16 (and gfx950 minimum3/maximum3).
  t.add("v_pk_fma_f16", pk16<H::f16, [](double a, double b, double c) { return std::fma(a, b, c); }>, ImmType::pk16);
  t.add("v_pk_add_f16", pk16<H::f16, [](double a, double b) { return a + b; }>, ImmType::pk16);
  t.add("v_pk_mul_f16", pk16<H::f16, [](double a, double b) { return a * b; }>, ImmType::pk16);
  t.add("v_pk_min_f16", pk16<H::f16, [](double a, double b) { return min_num(a, b); }>, ImmType::pk16);
  t.add("v_pk_max_f16", pk16<H::f16, [](double a, double b) { return max_num(a, b); }>, ImmType::pk16);
  t.add("v_pk_minimum3_f16",
        pk16<H::f16, [](double a, double b, double c) { return minimum(minimum(a, b), c); }>, ImmType::pk16);
  t.add("v_pk_maximum3_f16",
        pk16<H::f16, [](double a, double b, double c) { return maximum(maximum(a, b), c); }>, ImmType::pk16);
  t.add("v_pk_fmac_f16", v_pk_fmac_f16, ImmType::pk16);

  // 16-bit integers: exact in double, wrapped (or saturated under clamp) to 16 bits.
  t.add("v_pk_add_u16", pk16<H::u16, [](double a, double b) { return a + b; }>);
  t.add("v_pk_add_i16", pk16<H::i16, [](double a, double b) { return a + b; }>);
  t.add("v_pk_sub_u16", pk16<H::u16, [](double a, double b) { return a - b; }>);
  t.add("v_pk_sub_i16", pk16<H::i16, [](double a, double b) { return a - b; }>);
  t.add("v_pk_mul_lo_u16", pk16<H::u16, [](double a, double b) { return double(u16(i64(a) * i64(b))); }>);
  t.add("v_pk_mad_u16", pk16<H::u16, [](double a, double b, double c) { return a * b + c; }>);
  t.add("v_pk_mad_i16", pk16<H::i16, [](double a, double b, double c) { return a * b + c; }>);
  t.add("v_pk_min_u16", pk16<H::u16, [](double a, double b) { return std::min(a, b); }>);
  t.add("v_pk_max_u16", pk16<H::u16, [](double a, double b) { return std::max(a, b); }>);
  t.add("v_pk_min_i16", pk16<H::i16, [](double a, double b) { return std::min(a, b); }>);
  t.add("v_pk_max_i16", pk16<H::i16, [](double a, double b) { return std::max(a, b); }>);
  t.add("v_pk_lshlrev_b16", pk16_shift<[](u16 s, u16 x) { return u16(x << s); }>);
  t.add("v_pk_lshrrev_b16", pk16_shift<[](u16 s, u16 x) { return u16(x >> s); }>);
  t.add("v_pk_ashrrev_i16", pk16_shift<[](u16 s, u16 x) { return u16(int16_t(x) >> s); }>);

  // Dot products.
  t.add("v_dot2_f32_f16", v_dot2_f32<H::f16>, ImmType::pk16);
  t.add("v_dot2_f32_bf16", v_dot2_f32<H::bf16>, ImmType::bf16);
  t.add("v_dot2c_f32_f16", v_dot2c_f32<H::f16>, ImmType::pk16);
  t.add("v_dot2c_f32_bf16", v_dot2c_f32<H::bf16>, ImmType::bf16);
  t.add("v_dot2_i32_i16", v_dot_int<2, true, false>);
  t.add("v_dot2_u32_u16", v_dot_int<2, false, false>);
  t.add("v_dot4_i32_i8", v_dot_int<4, true, false>);
  t.add("v_dot4_u32_u8", v_dot_int<4, false, false>);
  t.add("v_dot8_i32_i4", v_dot_int<8, true, false>);
  t.add("v_dot8_u32_u4", v_dot_int<8, false, false>);
  t.add("v_dot2c_i32_i16", v_dot_int<2, true, true>);
  t.add("v_dot4c_i32_i8", v_dot_int<4, true, true>);
  t.add("v_dot8c_i32_i4", v_dot_int<8, true, true>);

  // Mixed f16/f32 fma.
  t.add("v_fma_mix_f32", v_fma_mix<Mix::f32>, ImmType::f32);
  t.add("v_fma_mixlo_f16", v_fma_mix<Mix::lo>, ImmType::f32);
  t.add("v_fma_mixhi_f16", v_fma_mix<Mix::hi>, ImmType::f32);
}

}  // namespace vgpu
