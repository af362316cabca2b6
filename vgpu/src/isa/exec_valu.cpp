// Vector ALU: VOP1, VOP2, VOP3 arithmetic, conversions and lane moves. One line per operation: the lambda's
// signature gives the operand types, and valu<> does reads, modifiers and the EXEC-masked write for all lanes.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "isa/isa.h"
#include "isa/ops.h"

namespace vgpu {
namespace {

using u16 = uint16_t;
using i16 = int16_t;
using u32 = uint32_t;
using i32 = int32_t;
using u64 = uint64_t;
using i64 = int64_t;
using f32 = float;
using f64 = double;

template <auto F>
constexpr ImmType imm_type() {
  using Tr = traits_of<F>;
  if constexpr (Tr::arity == 0) {
    return ImmType::b32;
  } else {
    using A = std::tuple_element_t<0, typename Tr::args>;
    if constexpr (std::is_same_v<A, f64>) return ImmType::f64;
    else if constexpr (std::is_same_v<A, f32>) return ImmType::f32;
    else if constexpr (std::is_same_v<A, f16>) return ImmType::f16;
    else if constexpr (sizeof(A) == 8) return ImmType::b64;
    else return ImmType::b32;
  }
}

template <auto F, int first = 1>
void addv(IsaTable& t, std::string_view name) {
  t.add(name, valu<F, first>, imm_type<F>());
}

// Integer add/sub whose VOP3 clamp bit saturates to the type's range instead of wrapping (LLVM's usubsat/uaddsat on
// GFX9: `v_sub_u32_e64 ... clamp`): Sat when the bit is set, Wrap otherwise.
template <auto Wrap, auto Sat>
void valu_clamped(Wave& w, const Inst& I) {
  if (I.flags & mod::clamp) valu<Sat, 1>(w, I);
  else valu<Wrap, 1>(w, I);
}
template <auto Wrap, auto Sat>
void addv_clamped(IsaTable& t, std::string_view name) {
  t.add(name, valu_clamped<Wrap, Sat>, imm_type<Wrap>());
}

// D = F(S0, S1, D): the accumulating forms (v_mac, v_fmac).
template <auto F>
void valu_acc(Wave& w, const Inst& I) {
  using T = typename traits_of<F>::ret;
  Lanes<T> a, b, d, r;
  fetch(w, I, 1, 0, a);
  fetch(w, I, 2, 1, b);
  fetch(w, I, 0, 2, d);
  for (int l = 0; l < kLanes; ++l) r[l] = F(a[l], b[l], d[l]);
  output_modifiers(I, r);
  store(w, I, 0, r);
}

// Integer add/sub with a carry (or borrow) out per lane to operand 1 and, for addc/subb, a carry in from operand 4.
template <auto F, bool carry_in>
void valu_carry(Wave& w, const Inst& I) {
  Lanes<u32> a, b, r;
  fetch(w, I, 2, 0, a);
  fetch(w, I, 3, 1, b);
  const uint64_t cin = carry_in ? read_mask(w, I.op[4]) : 0, exec = w.exec();
  uint64_t cout = 0;
  for (int l = 0; l < kLanes; ++l) {
    bool c = cin >> l & 1;
    r[l] = F(a[l], b[l], c);
    cout |= uint64_t(c) << l;
  }
  store(w, I, 0, r);
  write_s64(w, I.op[1], cout & exec);
}

// v_mad_u64_u32 / v_mad_i64_i32: D.u64 = S0 * S1 + S2, carry out to operand 1.
template <bool is_signed>
void mad64(Wave& w, const Inst& I) {
  Lanes<u32> a, b;
  Lanes<u64> c, r;
  fetch(w, I, 2, 0, a);
  fetch(w, I, 3, 1, b);
  fetch(w, I, 4, 2, c);
  uint64_t cout = 0;
  for (int l = 0; l < kLanes; ++l) {
    if constexpr (is_signed) {
      __int128 p = __int128(i64(i32(a[l]))) * i64(i32(b[l])) + __int128(i64(c[l]));
      r[l] = u64(p);
      cout |= uint64_t(p != __int128(i64(r[l]))) << l;
    } else {
      unsigned __int128 p = (unsigned __int128)(u64(a[l]) * u64(b[l])) + c[l];
      r[l] = u64(p);
      cout |= uint64_t(p >> 64 != 0) << l;
    }
  }
  store(w, I, 0, r);
  write_s64(w, I.op[1], cout & w.exec());
}

void v_cndmask_b32(Wave& w, const Inst& I) {
  if (I.flags & mod::plain) {  // sources read in place
    alignas(64) uint32_t bcast[2][kLanes];
    const uint32_t* a = plain_source(w, I.op[1], bcast[0]);
    const uint32_t* b = plain_source(w, I.op[2], bcast[1]);
    const uint64_t m = read_mask(w, I.op[3]);
    if (w.exec() == ~0ull) {  // a full wave: straight into D
      select_lanes(m, a, b, w.v[I.op[0].reg]);
      return;
    }
    Lanes<u32> r;
    select_lanes(m, a, b, r.v);
    store(w, I, 0, r);
    return;
  }
  Lanes<u32> a, b, r;
  fetch(w, I, 1, 0, a);
  fetch(w, I, 2, 1, b);
  const uint64_t m = read_mask(w, I.op[3]);
  for (int l = 0; l < kLanes; ++l) r[l] = (m >> l & 1) ? b[l] : a[l];
  store(w, I, 0, r);
}

int first_active_lane(const Wave& w) {
  uint64_t e = w.exec();
  return e ? std::countr_zero(e) : 0;
}

void v_readfirstlane_b32(Wave& w, const Inst& I) {
  const Operand& s = I.op[1];
  write_s32(w, I.op[0], s.kind == OpKind::vgpr ? w.v[s.reg][first_active_lane(w)] : read_s32(w, s));
}
void v_readlane_b32(Wave& w, const Inst& I) {
  int lane = int(read_s32(w, I.op[2]) & 63);
  const Operand& s = I.op[1];
  write_s32(w, I.op[0], s.kind == OpKind::vgpr ? w.v[s.reg][lane] : read_s32(w, s));
}
void v_writelane_b32(Wave& w, const Inst& I) {
  int lane = int(read_s32(w, I.op[2]) & 63);
  w.v[I.op[0].reg][lane] = read_s32(w, I.op[1]);  // writes regardless of EXEC
}

// v_mbcnt_{lo,hi}_u32_b32: count of mask bits below this lane (in the low or high 32 lanes) plus S1.
template <bool hi>
void v_mbcnt(Wave& w, const Inst& I) {
  Lanes<u32> m, add, r;
  fetch(w, I, 1, 0, m);
  fetch(w, I, 2, 1, add);
  for (int l = 0; l < kLanes; ++l) {
    int below = hi ? (l < 32 ? 0 : l - 32) : (l < 32 ? l : 32);
    u32 mask = below >= 32 ? ~0u : (1u << below) - 1;
    r[l] = u32(std::popcount(m[l] & mask)) + add[l];
  }
  store(w, I, 0, r);
}

void v_swap_b32(Wave& w, const Inst& I) {
  uint32_t* a = w.v[I.op[0].reg];
  uint32_t* b = w.v[I.op[1].reg];
  const uint64_t e = w.exec();
  for (int l = 0; l < kLanes; ++l)
    if (e >> l & 1) std::swap(a[l], b[l]);
}

// Relative register moves through M0 (dynamically indexed arrays held in VGPRs).
void v_movrels_b32(Wave& w, const Inst& I) {
  Operand src = I.op[1];
  src.reg = uint16_t(src.reg + w.s[sreg::m0]);
  Inst J = I;
  J.op[1] = src;
  valu<[](u32 a) { return a; }>(w, J);
}
void v_movreld_b32(Wave& w, const Inst& I) {
  Inst J = I;
  J.op[0].reg = uint16_t(I.op[0].reg + w.s[sreg::m0]);
  valu<[](u32 a) { return a; }>(w, J);
}
void v_movrelsd_b32(Wave& w, const Inst& I) {
  Inst J = I;
  J.op[0].reg = uint16_t(I.op[0].reg + w.s[sreg::m0]);
  J.op[1].reg = uint16_t(I.op[1].reg + w.s[sreg::m0]);
  valu<[](u32 a) { return a; }>(w, J);
}

// Packed f32 (VOP3P on 64-bit register pairs): op_sel / op_sel_hi pick each source's half for the low / high
// result, neg_lo / neg_hi negate it.
template <auto F>
void vpk_f32(Wave& w, const Inst& I) {
  constexpr int n = int(traits_of<F>::arity);
  Lanes<u64> src[n];
  for (int k = 0; k < n; ++k) fetch(w, I, 1 + k, k, src[k]);
  Lanes<u64> r;
  for (int l = 0; l < kLanes; ++l) {
    f32 lo[3] = {}, hi[3] = {};
    for (int k = 0; k < n; ++k) {
      u64 x = src[k][l];
      lo[k] = std::bit_cast<f32>(u32((I.op_sel >> k & 1) ? x >> 32 : x));
      hi[k] = std::bit_cast<f32>(u32((I.op_sel_hi >> k & 1) ? x >> 32 : x));
      if (I.neg_lo >> k & 1) lo[k] = -lo[k];
      if (I.neg_hi >> k & 1) hi[k] = -hi[k];
    }
    f32 a, b;
    if constexpr (n == 1) a = F(lo[0]), b = F(hi[0]);
    else if constexpr (n == 2) a = F(lo[0], lo[1]), b = F(hi[0], hi[1]);
    else a = F(lo[0], lo[1], lo[2]), b = F(hi[0], hi[1], hi[2]);
    r[l] = u64(std::bit_cast<u32>(a)) | u64(std::bit_cast<u32>(b)) << 32;
  }
  store(w, I, 0, r);
}

// v_pk_mov_b32: D.lo = a half of S0, D.hi = a half of S1, chosen by op_sel[0] and op_sel[1].
void v_pk_mov_b32(Wave& w, const Inst& I) {
  Lanes<u64> a, b, r;
  fetch(w, I, 1, 0, a);
  fetch(w, I, 2, 1, b);
  for (int l = 0; l < kLanes; ++l)
    r[l] = ((I.op_sel & 1) ? a[l] >> 32 : a[l] & 0xffffffffu) | ((I.op_sel & 2) ? b[l] >> 32 : b[l]) << 32;
  store(w, I, 0, r);
}

// v_bitop3_b32 / _b16 (gfx950): each result bit is the truth table bitop3 indexed by (S0 << 2 | S1 << 1 | S2).
template <class T>
void v_bitop3(Wave& w, const Inst& I) {
  Lanes<T> a, b, c, r;
  fetch(w, I, 1, 0, a);
  fetch(w, I, 2, 1, b);
  fetch(w, I, 3, 2, c);
  const uint32_t lut = I.simm;
  for (int l = 0; l < kLanes; ++l) {
    T x = 0;
    for (int bit = 0; bit < 8; ++bit)
      if (lut >> bit & 1) x |= T((bit & 4 ? a[l] : T(~a[l])) & (bit & 2 ? b[l] : T(~b[l])) & (bit & 1 ? c[l] : T(~c[l])));
    r[l] = x;
  }
  store(w, I, 0, r);
}

template <class F>
F ldexp_(F x, i32 e) { return std::ldexp(x, e); }

template <class F>
int exponent_of(F x) {  // unbiased exponent as frexp gives it, minus one (IEEE exponent)
  int e;
  std::frexp(x, &e);
  return e - 1;
}

// V_DIV_SCALE: scales numerator or denominator by 2^(+-64/128) when the quotient would lose precision; VCC marks
// the lanes whose result v_div_fmas must scale back.
template <class F>
void v_div_scale(Wave& w, const Inst& I) {
  Lanes<F> s0, s1, s2, r;
  fetch(w, I, 2, 0, s0);
  fetch(w, I, 3, 1, s1);
  fetch(w, I, 4, 2, s2);
  constexpr bool dbl = sizeof(F) == 8;
  constexpr int big = dbl ? 128 : 64, exp_limit = dbl ? 768 : 96;
  uint64_t vcc = 0;
  for (int l = 0; l < kLanes; ++l) {
    F a = s0[l], den = s1[l], num = s2[l], d = a;
    bool flag = false;
    if (num == 0 || den == 0) {
      d = std::numeric_limits<F>::quiet_NaN();
    } else if (exponent_of(num) - exponent_of(den) >= exp_limit) {
      flag = true;
      if (a == den) d = ldexp_(a, big);
    } else if (std::fpclassify(den) == FP_SUBNORMAL) {
      d = ldexp_(a, big);
    } else if (std::fpclassify(1.0 / double(den)) == FP_SUBNORMAL && std::fpclassify(num / den) == FP_SUBNORMAL) {
      flag = true;
      if (a == den) d = ldexp_(a, big);
    } else if (std::fpclassify(1.0 / double(den)) == FP_SUBNORMAL) {  // the ISA tests 1/S1 in f64 for both widths
      d = ldexp_(a, -big);
    } else if (std::fpclassify(num / den) == FP_SUBNORMAL) {
      flag = true;
      if (a == num) d = ldexp_(a, big);
    } else if (exponent_of(num) <= (dbl ? 53 - 1023 : 23 - 127)) {  // tiny numerator: scale both operands
      d = ldexp_(a, big);
    }
    r[l] = d;
    vcc |= uint64_t(flag) << l;
  }
  store(w, I, 0, r);
  write_s64(w, I.op[1], vcc & w.exec());
}

template <class F>
void v_div_fmas(Wave& w, const Inst& I) {
  Lanes<F> a, b, c, r;
  fetch(w, I, 1, 0, a);
  fetch(w, I, 2, 1, b);
  fetch(w, I, 3, 2, c);
  const uint64_t vcc = w.vcc();
  constexpr int big = sizeof(F) == 8 ? 128 : 64;
  for (int l = 0; l < kLanes; ++l) {
    F x = std::fma(a[l], b[l], c[l]);
    if (vcc >> l & 1) x = ldexp_(x, exponent_of(c[l]) > 0 ? big : -big);
    r[l] = x;
  }
  output_modifiers(I, r);
  store(w, I, 0, r);
}

// V_DIV_FIXUP: S0 quotient estimate, S1 denominator, S2 numerator; handles the special values.
template <class F>
F div_fixup(F q, F den, F num) {
  const bool neg = std::signbit(den) != std::signbit(num);
  const F inf = std::numeric_limits<F>::infinity();
  if (std::isnan(num)) return num;
  if (std::isnan(den)) return den;
  if (den == 0 && num == 0) return std::numeric_limits<F>::quiet_NaN();
  if (std::isinf(den) && std::isinf(num)) return std::numeric_limits<F>::quiet_NaN();
  if (den == 0 || std::isinf(num)) return neg ? -inf : inf;
  if (std::isinf(den) || num == 0) return neg ? F(-0.0) : F(0.0);
  return neg ? -std::fabs(q) : std::fabs(q);
}

template <class F>
F fract(F x) {
  if (std::isinf(x)) return std::numeric_limits<F>::quiet_NaN();
  F r = x - std::floor(x);
  return std::min(r, std::nextafter(F(1), F(0)));
}

template <class T>
T med3(T a, T b, T c) {
  return std::max(std::min(a, b), std::min(std::max(a, b), c));
}

// Float min/max in IEEE mode: a NaN operand yields the other one.
template <class F>
F fmin_(F a, F b) { return std::isnan(double(a)) ? b : std::isnan(double(b)) ? a : (a < b || (a == b && std::signbit(double(a)))) ? a : b; }
template <class F>
F fmax_(F a, F b) { return std::isnan(double(a)) ? b : std::isnan(double(b)) ? a : (a > b || (a == b && !std::signbit(double(a)))) ? a : b; }

template <class I, class F>
I cvt_int(F x) {  // saturating, NaN -> 0
  if (std::isnan(x)) return 0;
  if (x <= F(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (x >= F(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return I(x);
}

bool class_match(double x, bool is_snan, u32 mask) {
  int bit;
  if (std::isnan(x)) bit = is_snan ? 0 : 1;
  else if (std::isinf(x)) bit = x < 0 ? 2 : 9;
  else if (x == 0) bit = std::signbit(x) ? 5 : 6;
  else if (std::fpclassify(x) == FP_SUBNORMAL) bit = x < 0 ? 4 : 7;
  else bit = x < 0 ? 3 : 8;
  return mask >> bit & 1;
}

u32 bfe32(u32 x, u32 off, u32 width, bool sign) {
  off &= 31, width &= 31;
  if (width == 0) return 0;
  u32 v = x >> off;
  if (off + width < 32) v &= (1u << width) - 1;
  if (sign && width < 32 && (v >> (width - 1) & 1)) v |= ~((1u << width) - 1);
  return v;
}

// v_perm_b32 D = {S0, S1} bytes chosen by S2: each selector byte picks a byte of the 64-bit {S0, S1} (0-7), a word's
// sign (8-11), 0 (12) or 0xff (13 and up).
constexpr auto perm_lane = [](u32 a, u32 b, u32 sel) {
  u64 bytes = (u64(a) << 32) | b;
  u32 r = 0;
  for (int i = 0; i < 4; ++i) {
    u32 s = sel >> (8 * i) & 0xff, x;
    if (s < 8) x = u32(bytes >> (8 * s)) & 0xff;
    else if (s < 12) { u32 hi_byte = u32(bytes >> (8 * (2 * (s - 8) + 1))) & 0xff; x = (hi_byte & 0x80) ? 0xff : 0; }
    else x = s == 12 ? 0 : 0xff;
    r |= x << (8 * i);
  }
  return r;
};
// Compiled code gives the selector as an SGPR or a constant, the same for every lane: when it only picks bytes, each
// result byte is a fixed shift of {S0, S1} (a loop the compiler vectorizes). Other selectors go lane by lane.
void v_perm_b32(Wave& w, const Inst& I) {
  const Operand& so = I.op[3];
  const bool uniform = so.kind != OpKind::vgpr && !so.abs && !so.neg && !(I.flags & (mod::dpp | mod::sdwa));
  const u32 sel = uniform ? read_s32(w, so) : 0;
  if (!uniform || (sel & 0xf8f8f8f8u) != 0) return valu<perm_lane>(w, I);
  Lanes<u32> a, b, r;
  fetch(w, I, 1, 0, a);
  fetch(w, I, 2, 1, b);
  const u32 shift[4] = {8 * (sel & 7), 8 * (sel >> 8 & 7), 8 * (sel >> 16 & 7), 8 * (sel >> 24 & 7)};
  for (int l = 0; l < kLanes; ++l) {
    const u64 bytes = (u64(a[l]) << 32) | b[l];
    r[l] = (u32(bytes >> shift[0]) & 0xff) | (u32(bytes >> shift[1]) & 0xff) << 8 |
           (u32(bytes >> shift[2]) & 0xff) << 16 | (u32(bytes >> shift[3]) & 0xff) << 24;
  }
  store(w, I, 0, r);
}

}  // namespace

bool class_match_f32(float x, u32 mask) {
  return class_match(x, std::isnan(x) && !(std::bit_cast<u32>(x) & 0x400000), mask);
}
bool class_match_f64(double x, u32 mask) {
  return class_match(x, std::isnan(x) && !(std::bit_cast<u64>(x) & (u64(1) << 51)), mask);
}
bool class_match_f16(f16 x, u32 mask) {
  return class_match(double(x), std::isnan(float(x)) && !(std::bit_cast<u16>(x) & 0x200), mask);
}

void register_valu(IsaTable& t) {
#define V(name, ...) addv<[] __VA_ARGS__>(t, name)
  // Moves and bit operations.
  V("v_mov_b32", (u32 a) { return a; });
  V("v_mov_b64", (u64 a) { return a; });
  V("v_accvgpr_read_b32", (u32 a) { return a; });
  V("v_accvgpr_write_b32", (u32 a) { return a; });
  V("v_accvgpr_mov_b32", (u32 a) { return a; });
  V("v_not_b32", (u32 a) { return ~a; });
  V("v_bfrev_b32", (u32 a) { u32 r = 0; for (int i = 0; i < 32; ++i) r |= (a >> i & 1) << (31 - i); return r; });
  V("v_ffbh_u32", (u32 a) { return a ? u32(std::countl_zero(a)) : ~0u; });
  V("v_ffbl_b32", (u32 a) { return a ? u32(std::countr_zero(a)) : ~0u; });
  V("v_ffbh_i32", (i32 a) { u32 x = u32(a < 0 ? ~a : a); return x ? u32(std::countl_zero(x) - 1 + 1) : ~0u; });
  V("v_and_b32", (u32 a, u32 b) { return a & b; });
  V("v_or_b32", (u32 a, u32 b) { return a | b; });
  V("v_xor_b32", (u32 a, u32 b) { return a ^ b; });
  V("v_xnor_b32", (u32 a, u32 b) { return ~(a ^ b); });
  V("v_lshlrev_b32", (u32 s, u32 a) { return a << (s & 31); });
  V("v_lshrrev_b32", (u32 s, u32 a) { return a >> (s & 31); });
  V("v_ashrrev_i32", (u32 s, i32 a) { return a >> (s & 31); });
  V("v_lshlrev_b64", (u32 s, u64 a) { return a << (s & 63); });
  V("v_lshrrev_b64", (u32 s, u64 a) { return a >> (s & 63); });
  V("v_ashrrev_i64", (u32 s, i64 a) { return a >> (s & 63); });
  V("v_lshlrev_b16", (u16 s, u16 a) { return u16(a << (s & 15)); });
  V("v_lshrrev_b16", (u16 s, u16 a) { return u16(a >> (s & 15)); });
  V("v_ashrrev_i16", (u16 s, i16 a) { return i16(a >> (s & 15)); });
  V("v_bfe_u32", (u32 a, u32 o, u32 w) { return bfe32(a, o, w, false); });
  V("v_bfe_i32", (u32 a, u32 o, u32 w) { return bfe32(a, o, w, true); });
  V("v_bfi_b32", (u32 m, u32 a, u32 b) { return (m & a) | (~m & b); });
  V("v_bfm_b32", (u32 w, u32 o) { return ((w & 31) ? (1u << (w & 31)) - 1 : 0u) << (o & 31); });
  V("v_alignbit_b32", (u32 a, u32 b, u32 s) { return u32(((u64(a) << 32) | b) >> (s & 31)); });
  V("v_alignbyte_b32", (u32 a, u32 b, u32 s) { return u32(((u64(a) << 32) | b) >> (8 * (s & 3))); });
  V("v_bcnt_u32_b32", (u32 a, u32 b) { return u32(std::popcount(a)) + b; });
  V("v_lshl_or_b32", (u32 a, u32 s, u32 b) { return (a << (s & 31)) | b; });
  V("v_and_or_b32", (u32 a, u32 b, u32 c) { return (a & b) | c; });
  V("v_or3_b32", (u32 a, u32 b, u32 c) { return a | b | c; });
  V("v_xad_u32", (u32 a, u32 b, u32 c) { return (a ^ b) + c; });
  V("v_lshl_add_u32", (u32 a, u32 s, u32 b) { return (a << (s & 31)) + b; });
  V("v_add_lshl_u32", (u32 a, u32 b, u32 s) { return (a + b) << (s & 31); });
  V("v_lshl_add_u64", (u64 a, u32 s, u64 b) { return (a << (s & 63)) + b; });
  t.add("v_perm_b32", v_perm_b32, ImmType::b32);
  t.add("v_bitop3_b32", v_bitop3<u32>);
  t.add("v_bitop3_b16", v_bitop3<u16>);
  V("v_pack_b32_f16", (f16 a, f16 b) { return u32(std::bit_cast<u16>(a)) | u32(std::bit_cast<u16>(b)) << 16; });

  // Integer arithmetic.
  // Wrapping, or saturating with the clamp bit.
#define VC(name, wrap, sat) addv_clamped<[] wrap, [] sat>(t, name)
  VC("v_add_u32", (u32 a, u32 b) { return a + b; }, (u32 a, u32 b) { return u32(std::min<u64>(u64(a) + b, 0xffffffffu)); });
  VC("v_sub_u32", (u32 a, u32 b) { return a - b; }, (u32 a, u32 b) { return a >= b ? a - b : 0u; });
  VC("v_subrev_u32", (u32 a, u32 b) { return b - a; }, (u32 a, u32 b) { return b >= a ? b - a : 0u; });
  VC("v_add_i32", (i32 a, i32 b) { return i32(u32(a) + u32(b)); },
     (i32 a, i32 b) { return i32(std::clamp<i64>(i64(a) + b, INT32_MIN, INT32_MAX)); });
  VC("v_sub_i32", (i32 a, i32 b) { return i32(u32(a) - u32(b)); },
     (i32 a, i32 b) { return i32(std::clamp<i64>(i64(a) - b, INT32_MIN, INT32_MAX)); });
  VC("v_add_u16", (u16 a, u16 b) { return u16(a + b); }, (u16 a, u16 b) { return u16(std::min(a + b, 0xffff)); });
  VC("v_sub_u16", (u16 a, u16 b) { return u16(a - b); }, (u16 a, u16 b) { return u16(a >= b ? a - b : 0); });
  VC("v_subrev_u16", (u16 a, u16 b) { return u16(b - a); }, (u16 a, u16 b) { return u16(b >= a ? b - a : 0); });
  VC("v_add_i16", (i16 a, i16 b) { return i16(u16(a) + u16(b)); },
     (i16 a, i16 b) { return i16(std::clamp<i32>(i32(a) + b, INT16_MIN, INT16_MAX)); });
  VC("v_sub_i16", (i16 a, i16 b) { return i16(u16(a) - u16(b)); },
     (i16 a, i16 b) { return i16(std::clamp<i32>(i32(a) - b, INT16_MIN, INT16_MAX)); });
#undef VC
  V("v_mul_lo_u16", (u16 a, u16 b) { return u16(a * b); });
  V("v_add3_u32", (u32 a, u32 b, u32 c) { return a + b + c; });
  V("v_mul_lo_u32", (u32 a, u32 b) { return a * b; });
  V("v_mul_hi_u32", (u32 a, u32 b) { return u32((u64(a) * b) >> 32); });
  V("v_mul_hi_i32", (i32 a, i32 b) { return i32((i64(a) * b) >> 32); });
  V("v_mul_u32_u24", (u32 a, u32 b) { return (a & 0xffffff) * (b & 0xffffff); });
  V("v_mul_hi_u32_u24", (u32 a, u32 b) { return u32((u64(a & 0xffffff) * (b & 0xffffff)) >> 32); });
  V("v_mul_i32_i24", (u32 a, u32 b) { return u32(i32(a << 8) >> 8) * u32(i32(b << 8) >> 8); });
  V("v_mul_hi_i32_i24", (u32 a, u32 b) { return u32((i64(i32(a << 8) >> 8) * i64(i32(b << 8) >> 8)) >> 32); });
  V("v_mad_u32_u24", (u32 a, u32 b, u32 c) { return (a & 0xffffff) * (b & 0xffffff) + c; });
  V("v_mad_i32_i24", (u32 a, u32 b, u32 c) { return u32(i32(a << 8) >> 8) * u32(i32(b << 8) >> 8) + c; });
  V("v_mad_u16", (u16 a, u16 b, u16 c) { return u16(a * b + c); });
  V("v_mad_legacy_u16", (u16 a, u16 b, u16 c) { return u16(a * b + c); });
  V("v_mad_legacy_i16", (i16 a, i16 b, i16 c) { return i16(a * b + c); });
  V("v_mad_i16", (i16 a, i16 b, i16 c) { return i16(a * b + c); });
  V("v_min_i32", (i32 a, i32 b) { return std::min(a, b); });
  V("v_max_i32", (i32 a, i32 b) { return std::max(a, b); });
  V("v_min_u32", (u32 a, u32 b) { return std::min(a, b); });
  V("v_max_u32", (u32 a, u32 b) { return std::max(a, b); });
  V("v_min_i16", (i16 a, i16 b) { return std::min(a, b); });
  V("v_max_i16", (i16 a, i16 b) { return std::max(a, b); });
  V("v_min_u16", (u16 a, u16 b) { return std::min(a, b); });
  V("v_max_u16", (u16 a, u16 b) { return std::max(a, b); });
  V("v_min3_i32", (i32 a, i32 b, i32 c) { return std::min({a, b, c}); });
  V("v_max3_i32", (i32 a, i32 b, i32 c) { return std::max({a, b, c}); });
  V("v_min3_u32", (u32 a, u32 b, u32 c) { return std::min({a, b, c}); });
  V("v_max3_u32", (u32 a, u32 b, u32 c) { return std::max({a, b, c}); });
  V("v_med3_i32", (i32 a, i32 b, i32 c) { return med3(a, b, c); });
  V("v_med3_u32", (u32 a, u32 b, u32 c) { return med3(a, b, c); });
  // 16-bit three-operand forms (GFX9; rocPRIM's gfx90a reductions use them).
  V("v_min3_i16", (i16 a, i16 b, i16 c) { return std::min({a, b, c}); });
  V("v_max3_i16", (i16 a, i16 b, i16 c) { return std::max({a, b, c}); });
  V("v_min3_u16", (u16 a, u16 b, u16 c) { return std::min({a, b, c}); });
  V("v_max3_u16", (u16 a, u16 b, u16 c) { return std::max({a, b, c}); });
  V("v_med3_i16", (i16 a, i16 b, i16 c) { return med3(a, b, c); });
  V("v_med3_u16", (u16 a, u16 b, u16 c) { return med3(a, b, c); });
  V("v_sad_u32", (u32 a, u32 b, u32 c) { return (a > b ? a - b : b - a) + c; });
  t.add("v_add_co_u32", valu_carry<[](u32 a, u32 b, bool& c) { u64 r = u64(a) + b; c = r >> 32; return u32(r); }, false>);
  t.add("v_sub_co_u32", valu_carry<[](u32 a, u32 b, bool& c) { c = b > a; return a - b; }, false>);
  t.add("v_subrev_co_u32", valu_carry<[](u32 a, u32 b, bool& c) { c = a > b; return b - a; }, false>);
  t.add("v_addc_co_u32", valu_carry<[](u32 a, u32 b, bool& c) { u64 r = u64(a) + b + c; c = r >> 32; return u32(r); }, true>);
  t.add("v_subb_co_u32", valu_carry<[](u32 a, u32 b, bool& c) { u64 s = u64(b) + c; c = s > a; return u32(a - s); }, true>);
  t.add("v_subbrev_co_u32", valu_carry<[](u32 a, u32 b, bool& c) { u64 s = u64(a) + c; c = s > b; return u32(b - s); }, true>);
  t.add("v_mad_u64_u32", mad64<false>);
  t.add("v_mad_i64_i32", mad64<true>);

  // f32 arithmetic (the transcendentals v_exp/log/rcp/rsq/sqrt_f32 live in exec_cvt.cpp with the ISA's special cases).
  V("v_add_f32", (f32 a, f32 b) { return a + b; });
  V("v_sub_f32", (f32 a, f32 b) { return a - b; });
  V("v_subrev_f32", (f32 a, f32 b) { return b - a; });
  V("v_mul_f32", (f32 a, f32 b) { return a * b; });
  V("v_mul_legacy_f32", (f32 a, f32 b) { return (a == 0 || b == 0) ? 0.0f : a * b; });
  V("v_min_f32", (f32 a, f32 b) { return fmin_(a, b); });
  V("v_max_f32", (f32 a, f32 b) { return fmax_(a, b); });
  V("v_min3_f32", (f32 a, f32 b, f32 c) { return fmin_(fmin_(a, b), c); });
  V("v_max3_f32", (f32 a, f32 b, f32 c) { return fmax_(fmax_(a, b), c); });
  V("v_med3_f32", (f32 a, f32 b, f32 c) { return fmax_(fmin_(a, b), fmin_(fmax_(a, b), c)); });
  V("v_fma_f32", (f32 a, f32 b, f32 c) { return std::fma(a, b, c); });
  V("v_mad_f32", (f32 a, f32 b, f32 c) { return a * b + c; });
  V("v_mad_legacy_f32", (f32 a, f32 b, f32 c) { return ((a == 0 || b == 0) ? 0.0f : a * b) + c; });
  V("v_madmk_f32", (f32 a, f32 k, f32 b) { return a * k + b; });
  V("v_madak_f32", (f32 a, f32 b, f32 k) { return a * b + k; });
  V("v_fmamk_f32", (f32 a, f32 k, f32 b) { return std::fma(a, k, b); });
  V("v_fmaak_f32", (f32 a, f32 b, f32 k) { return std::fma(a, b, k); });
  t.add("v_pk_fma_f32", vpk_f32<[](f32 a, f32 b, f32 c) { return std::fma(a, b, c); }>, ImmType::f32);
  t.add("v_pk_mul_f32", vpk_f32<[](f32 a, f32 b) { return a * b; }>, ImmType::f32);
  t.add("v_pk_add_f32", vpk_f32<[](f32 a, f32 b) { return a + b; }>, ImmType::f32);
  t.add("v_pk_mov_b32", v_pk_mov_b32);
  t.add("v_mac_f32", valu_acc<[](f32 a, f32 b, f32 d) { return a * b + d; }>, ImmType::f32);
  t.add("v_fmac_f32", valu_acc<[](f32 a, f32 b, f32 d) { return std::fma(a, b, d); }>, ImmType::f32);
  V("v_ldexp_f32", (f32 a, i32 e) { return std::ldexp(a, e); });
  V("v_sin_f32", (f32 a) { return std::sin(a * 6.283185307179586f); });  // input in revolutions
  V("v_cos_f32", (f32 a) { return std::cos(a * 6.283185307179586f); });
  V("v_fract_f32", (f32 a) { return fract(a); });
  V("v_trunc_f32", (f32 a) { return std::trunc(a); });
  V("v_ceil_f32", (f32 a) { return std::ceil(a); });
  V("v_floor_f32", (f32 a) { return std::floor(a); });
  V("v_rndne_f32", (f32 a) { return std::nearbyint(a); });
  V("v_frexp_mant_f32", (f32 a) { int e; return std::isfinite(a) ? std::frexp(a, &e) : a; });
  V("v_frexp_exp_i32_f32", (f32 a) { int e = 0; if (std::isfinite(a)) std::frexp(a, &e); return i32(e); });
  t.add("v_div_scale_f32", v_div_scale<f32>, ImmType::f32);
  t.add("v_div_fmas_f32", v_div_fmas<f32>, ImmType::f32);
  V("v_div_fixup_f32", (f32 q, f32 d, f32 n) { return div_fixup(q, d, n); });

  // f64 arithmetic.
  V("v_add_f64", (f64 a, f64 b) { return a + b; });
  V("v_mul_f64", (f64 a, f64 b) { return a * b; });
  V("v_min_f64", (f64 a, f64 b) { return fmin_(a, b); });
  V("v_max_f64", (f64 a, f64 b) { return fmax_(a, b); });
  V("v_fma_f64", (f64 a, f64 b, f64 c) { return std::fma(a, b, c); });
  t.add("v_fmac_f64", valu_acc<[](f64 a, f64 b, f64 d) { return std::fma(a, b, d); }>, ImmType::f64);
  V("v_ldexp_f64", (f64 a, i32 e) { return std::ldexp(a, e); });
  V("v_rcp_f64", (f64 a) { return 1.0 / a; });
  V("v_rsq_f64", (f64 a) { return 1.0 / std::sqrt(a); });
  V("v_sqrt_f64", (f64 a) { return std::sqrt(a); });
  V("v_fract_f64", (f64 a) { return fract(a); });
  V("v_trunc_f64", (f64 a) { return std::trunc(a); });
  V("v_ceil_f64", (f64 a) { return std::ceil(a); });
  V("v_floor_f64", (f64 a) { return std::floor(a); });
  V("v_rndne_f64", (f64 a) { return std::nearbyint(a); });
  V("v_frexp_mant_f64", (f64 a) { int e; return std::isfinite(a) ? std::frexp(a, &e) : a; });
  V("v_frexp_exp_i32_f64", (f64 a) { int e = 0; if (std::isfinite(a)) std::frexp(a, &e); return i32(e); });
  t.add("v_div_scale_f64", v_div_scale<f64>, ImmType::f64);
  t.add("v_div_fmas_f64", v_div_fmas<f64>, ImmType::f64);
  V("v_div_fixup_f64", (f64 q, f64 d, f64 n) { return div_fixup(q, d, n); });

  // f16 arithmetic.
  V("v_add_f16", (f16 a, f16 b) { return f16(a + b); });
  V("v_sub_f16", (f16 a, f16 b) { return f16(a - b); });
  V("v_subrev_f16", (f16 a, f16 b) { return f16(b - a); });
  V("v_mul_f16", (f16 a, f16 b) { return f16(a * b); });
  V("v_min_f16", (f16 a, f16 b) { return fmin_(a, b); });
  V("v_max_f16", (f16 a, f16 b) { return fmax_(a, b); });
  V("v_min3_f16", (f16 a, f16 b, f16 c) { return fmin_(fmin_(a, b), c); });
  V("v_max3_f16", (f16 a, f16 b, f16 c) { return fmax_(fmax_(a, b), c); });
  V("v_med3_f16", (f16 a, f16 b, f16 c) { return fmax_(fmin_(a, b), fmin_(fmax_(a, b), c)); });
  V("v_fma_f16", (f16 a, f16 b, f16 c) { return f16(std::fma(float(a), float(b), float(c))); });
  V("v_mad_f16", (f16 a, f16 b, f16 c) { return f16(f16(a * b) + c); });
  t.add("v_mac_f16", valu_acc<[](f16 a, f16 b, f16 d) { return f16(f16(a * b) + d); }>, ImmType::f16);
  V("v_ldexp_f16", (f16 a, i16 e) { return f16(std::ldexp(float(a), e)); });
  V("v_exp_f16", (f16 a) { return f16(std::exp2(float(a))); });
  V("v_log_f16", (f16 a) { return f16(std::log2(float(a))); });
  V("v_rcp_f16", (f16 a) { return f16(1.0f / float(a)); });
  // f16 division (clang: the quotient from v_rcp_f32 in f32, then this): the f16 rules of div_fixup. Every special
  // value it returns is exact in f16, and a NaN operand comes back quieted through the f32 conversion.
  V("v_div_fixup_f16", (f16 q, f16 d, f16 n) { return f16(div_fixup(float(q), float(d), float(n))); });
  V("v_rsq_f16", (f16 a) { return f16(1.0f / std::sqrt(float(a))); });
  V("v_sqrt_f16", (f16 a) { return f16(std::sqrt(float(a))); });
  // The transcendentals above issue at a quarter of the VALU's rate (timing.md 4).
  t.mark({"v_sin_f32", "v_cos_f32", "v_rcp_f64", "v_rsq_f64", "v_sqrt_f64", "v_exp_f16", "v_log_f16", "v_rcp_f16",
          "v_rsq_f16", "v_sqrt_f16"}, op::quarter_rate);
  V("v_floor_f16", (f16 a) { return f16(std::floor(float(a))); });
  V("v_ceil_f16", (f16 a) { return f16(std::ceil(float(a))); });
  V("v_trunc_f16", (f16 a) { return f16(std::trunc(float(a))); });
  V("v_rndne_f16", (f16 a) { return f16(std::nearbyint(float(a))); });
  V("v_fract_f16", (f16 a) { return f16(fract(float(a))); });

  // Conversions.
  V("v_cvt_f32_i32", (i32 a) { return f32(a); });
  V("v_cvt_f32_u32", (u32 a) { return f32(a); });
  V("v_cvt_i32_f32", (f32 a) { return cvt_int<i32>(a); });
  V("v_cvt_u32_f32", (f32 a) { return cvt_int<u32>(a); });
  V("v_cvt_rpi_i32_f32", (f32 a) { return cvt_int<i32>(std::floor(a + 0.5f)); });
  V("v_cvt_flr_i32_f32", (f32 a) { return cvt_int<i32>(std::floor(a)); });
  V("v_cvt_f64_i32", (i32 a) { return f64(a); });
  V("v_cvt_f64_u32", (u32 a) { return f64(a); });
  V("v_cvt_i32_f64", (f64 a) { return cvt_int<i32>(a); });
  V("v_cvt_u32_f64", (f64 a) { return cvt_int<u32>(a); });
  V("v_cvt_f32_f64", (f64 a) { return f32(a); });
  V("v_cvt_f64_f32", (f32 a) { return f64(a); });
  V("v_cvt_f16_f32", (f32 a) { return f16(a); });
  V("v_cvt_f32_f16", (f16 a) { return f32(a); });
  V("v_cvt_f16_u16", (u16 a) { return f16(a); });
  V("v_cvt_f16_i16", (i16 a) { return f16(a); });
  V("v_cvt_u16_f16", (f16 a) { return cvt_int<u16>(float(a)); });
  V("v_cvt_i16_f16", (f16 a) { return cvt_int<i16>(float(a)); });
  V("v_cvt_f32_ubyte0", (u32 a) { return f32(a & 0xff); });
  V("v_cvt_f32_ubyte1", (u32 a) { return f32(a >> 8 & 0xff); });
  V("v_cvt_f32_ubyte2", (u32 a) { return f32(a >> 16 & 0xff); });
  V("v_cvt_f32_ubyte3", (u32 a) { return f32(a >> 24); });
  V("v_cvt_pkrtz_f16_f32", (f32 a, f32 b) {
    auto rtz = [](f32 x) {  // round toward zero: step back from a rounded-away result
      f16 h = f16(x);
      if (std::isfinite(x) && std::fabs(float(h)) > std::fabs(x)) h = std::bit_cast<f16>(uint16_t(std::bit_cast<uint16_t>(h) - 1));
      return u32(std::bit_cast<u16>(h));
    };
    return rtz(a) | rtz(b) << 16;
  });
  V("v_cvt_pk_u16_u32", (u32 a, u32 b) { return std::min(a, 0xffffu) | std::min(b, 0xffffu) << 16; });
  V("v_cvt_pk_i16_i32", (i32 a, i32 b) { return u32(u16(std::clamp(a, -32768, 32767))) | u32(u16(std::clamp(b, -32768, 32767))) << 16; });

  // Lane moves and counts.
  t.add("v_cndmask_b32", v_cndmask_b32);
  t.add("v_readfirstlane_b32", v_readfirstlane_b32);
  t.add("v_readlane_b32", v_readlane_b32);
  t.add("v_writelane_b32", v_writelane_b32);
  t.add("v_mbcnt_lo_u32_b32", v_mbcnt<false>);
  t.add("v_mbcnt_hi_u32_b32", v_mbcnt<true>);
  t.add("v_swap_b32", v_swap_b32);
  t.add("v_movrels_b32", v_movrels_b32);
  t.add("v_movreld_b32", v_movreld_b32);
  t.add("v_movrelsd_b32", v_movrelsd_b32);
  t.add("v_nop", [](Wave&, const Inst&) {});
#undef V
}

}  // namespace vgpu
