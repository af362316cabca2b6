// Conversions to and from bf16 and the fp8 formats, and the f32 transcendental unit (v_exp/log/rcp/rsq/sqrt_f32).
// The numerics, their sources and the choices where the documentation is silent are in docs/vgpu-numerics.md.
#include <cmath>
#include <limits>

#include "isa/formats.h"
#include "isa/isa.h"
#include "isa/ops.h"

namespace vgpu {
namespace {

using u32 = uint32_t;
using u64 = uint64_t;
using f32 = float;

// The e4m3 (fp8) or e5m2 (bf8) format of the arch: FNUZ on gfx942, OCP on gfx950 (gfx90a has no fp8 instructions: the
// decoder refuses them there).
Fp8 format_of(const Wave& w, bool bf8) {
  const bool ocp = w.ctx->arch->fp8 == Fp8Flavour::ocp;
  return bf8 ? bf8_format(ocp) : fp8_format(ocp);
}

// COMPUTE_PGM_RSRC1.FP16_OVFL (bit 26): clamp overflowing finite results of the fp8 conversions to the largest finite
// value instead of NaN / infinity (an assumption carried over from the gfx12 ISA; see docs/vgpu-numerics.md).
bool fp8_saturates(const Wave& w) { return w.ctx->prog->info.kd.pgm_rsrc1 >> 26 & 1; }

// FP_DENORM for f32 (RSRC1 bits 17:16): bit 0 set keeps denormal inputs, bit 1 set keeps denormal results.
u32 fp32_denorm_mode(const Wave& w) { return w.ctx->prog->info.kd.float_mode() >> 4 & 3; }

bool is_denormal(f32 x) { return std::fpclassify(x) == FP_SUBNORMAL; }
f32 flush(f32 x) { return is_denormal(x) ? std::copysign(0.0f, x) : x; }
f32 quiet(f32 x) { return std::bit_cast<f32>(std::bit_cast<u32>(x) | 0x400000u); }
// The NaN the transcendental unit produces for an invalid operation (the ISA's functional examples show 0xffc00000).
f32 invalid() { return std::bit_cast<f32>(0xffc00000u); }

// Scale exponent of a scalef32 operand: only the f32 exponent field counts (an E8M0 scale written as an f32); an
// all-ones exponent field is the E8M0 NaN.
constexpr int kScaleNaN = 1 << 20;
int scale_exponent(u32 scale_bits) {
  const u32 e = scale_bits >> 23 & 0xff;
  return e == 0xff ? kScaleNaN : int(e) - 127;
}

// --- fp8 / bf8 -> f32 ---------------------------------------------------------------------------------------------

// v_cvt_f32_{fp8,bf8}: byte 0 of src0, or the byte an SDWA src0_sel picks.
template <bool bf8>
void v_cvt_f32_f8(Wave& w, const Inst& I) {
  const Fp8 f = format_of(w, bf8);
  Lanes<u32> a;
  fetch(w, I, 1, 0, a);
  Lanes<f32> r;
  for (int l = 0; l < kLanes; ++l) r[l] = std::bit_cast<f32>(decode_fp8_bits(uint8_t(a[l]), f));
  output_modifiers(I, r);
  store(w, I, 0, r, (I.flags & mod::dpp) ? dpp_write_mask(w, I) : ~0ull);
}

// v_cvt_pk_f32_{fp8,bf8}: word 0 of src0 (or the word an SDWA src0_sel picks) to two f32: low byte to D[0].
template <bool bf8>
void v_cvt_pk_f32_f8(Wave& w, const Inst& I) {
  const Fp8 f = format_of(w, bf8);
  Lanes<u32> a;
  fetch(w, I, 1, 0, a);
  Lanes<u64> r;
  for (int l = 0; l < kLanes; ++l)
    r[l] = u64(decode_fp8_bits(uint8_t(a[l]), f)) | u64(decode_fp8_bits(uint8_t(a[l] >> 8), f)) << 32;
  store(w, I, 0, r);
}

// --- f32 -> fp8 / bf8 ---------------------------------------------------------------------------------------------

// v_cvt_sr_{fp8,bf8}_f32 D, S0, S1: D.byte[op_sel[3:2]] = code(S0) rounded stochastically with the random bits S1;
// the other bytes of D are kept.
template <bool bf8>
void v_cvt_sr_f8_f32(Wave& w, const Inst& I) {
  const Fp8 f = format_of(w, bf8);
  const bool sat = fp8_saturates(w);
  Lanes<f32> a;
  Lanes<u32> seed;
  fetch(w, I, 1, 0, a);
  fetch(w, I, 2, 1, seed);
  const int shift = 8 * (I.op_sel >> 2 & 3);
  const u64 exec = w.exec();
  u32* d = w.v[I.op[0].reg];
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    d[l] = (d[l] & ~(0xffu << shift)) | u32(encode_fp8_sr(a[l], seed[l], f, sat)) << shift;
  }
}

// --- gfx950 scaled conversions (v_cvt_scalef32_*): the value is multiplied (decode) or divided (encode) by 2^e, e
// the exponent of the f32 scale operand. The formats are OCP.

f32 scaled_decode(uint8_t code, Fp8 f, int scale_exp) {
  const f32 v = std::bit_cast<f32>(decode_fp8_bits(code, f));
  if (scale_exp == kScaleNaN) return std::numeric_limits<f32>::quiet_NaN();
  if (std::isnan(v) || std::isinf(v) || v == 0) return v;
  return f32(std::ldexp(double(v), scale_exp));  // exact in double; one rounding to f32 (subnormals, overflow)
}

uint8_t scaled_nan(Fp8 f) { return f == Fp8::e5m2 ? 0x7e : 0x7f; }

// v_cvt_scalef32_f32_{fp8,bf8} D, S0, scale: byte (2 * op_sel[0] + op_sel[1]) of S0.
template <bool bf8>
void v_cvt_scalef32_f32_f8(Wave& w, const Inst& I) {
  const Fp8 f = format_of(w, bf8);
  Lanes<u32> a, s;
  fetch(w, I, 1, 0, a);
  fetch(w, I, 2, 1, s);
  const int shift = 8 * ((I.op_sel & 1) * 2 + (I.op_sel >> 1 & 1));
  Lanes<f32> r;
  for (int l = 0; l < kLanes; ++l) r[l] = scaled_decode(uint8_t(a[l] >> shift), f, scale_exponent(s[l]));
  output_modifiers(I, r);
  store(w, I, 0, r);
}

// v_cvt_scalef32_pk_f32_{fp8,bf8} D[2], S0, scale: word op_sel[0] of S0.
template <bool bf8>
void v_cvt_scalef32_pk_f32_f8(Wave& w, const Inst& I) {
  const Fp8 f = format_of(w, bf8);
  Lanes<u32> a, s;
  fetch(w, I, 1, 0, a);
  fetch(w, I, 2, 1, s);
  const int shift = (I.op_sel & 1) ? 16 : 0;
  Lanes<u64> r;
  for (int l = 0; l < kLanes; ++l) {
    const int e = scale_exponent(s[l]);
    const u32 word = a[l] >> shift;
    r[l] = u64(std::bit_cast<u32>(scaled_decode(uint8_t(word), f, e))) |
           u64(std::bit_cast<u32>(scaled_decode(uint8_t(word >> 8), f, e))) << 32;
  }
  store(w, I, 0, r);
}

// v_cvt_pk_{fp8,bf8}_f32 D, S0, S1 and (gfx950) v_cvt_scalef32_pk_{fp8,bf8}_f32 D, S0, S1, scale:
// D.word[op_sel[2]] (scaled: op_sel[3]) = {code(S1 / 2^e), code(S0 / 2^e)}, rounded to nearest even, e = 0 unscaled;
// the other word of D is kept.
template <bool bf8, bool scaled>
void v_cvt_pk_f8_f32(Wave& w, const Inst& I) {
  const Fp8 f = format_of(w, bf8);
  const bool sat = fp8_saturates(w);
  Lanes<f32> a, b;
  Lanes<u32> s;
  fetch(w, I, 1, 0, a);
  fetch(w, I, 2, 1, b);
  if constexpr (scaled) fetch(w, I, 3, 2, s);
  const int shift = (I.op_sel >> (scaled ? 3 : 2) & 1) ? 16 : 0;
  const u64 exec = w.exec();
  u32* d = w.v[I.op[0].reg];
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    const int e = scaled ? scale_exponent(s[l]) : 0;
    const uint8_t lo = scaled && e == kScaleNaN ? scaled_nan(f) : encode_fp8(a[l], f, sat, e);
    const uint8_t hi = scaled && e == kScaleNaN ? scaled_nan(f) : encode_fp8(b[l], f, sat, e);
    const u32 word = u32(lo) | u32(hi) << 8;
    d[l] = (d[l] & ~(0xffffu << shift)) | word << shift;
  }
}

// v_cvt_scalef32_sr_{fp8,bf8}_f32 D, S0, seed, scale: D.byte[op_sel[3:2]] = code(S0 / 2^e), stochastic rounding.
template <bool bf8>
void v_cvt_scalef32_sr_f8_f32(Wave& w, const Inst& I) {
  const Fp8 f = format_of(w, bf8);
  const bool sat = fp8_saturates(w);
  Lanes<f32> a;
  Lanes<u32> seed, s;
  fetch(w, I, 1, 0, a);
  fetch(w, I, 2, 1, seed);
  fetch(w, I, 3, 2, s);
  const int shift = 8 * (I.op_sel >> 2 & 3);
  const u64 exec = w.exec();
  u32* d = w.v[I.op[0].reg];
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    const int e = scale_exponent(s[l]);
    const uint8_t code = e == kScaleNaN ? scaled_nan(f) : encode_fp8_sr(a[l], seed[l], f, sat, e);
    d[l] = (d[l] & ~(0xffu << shift)) | u32(code) << shift;
  }
}

// --- bf16 and f16 (gfx950) ------------------------------------------------------------------------------------------

// f32 -> bf16 under the kernel's f32 denormal mode: round to nearest even, NaN kept (quieted).
uint16_t to_bf16(f32 x, u32 denorm) {
  if (!(denorm & 1)) x = flush(x);
  uint16_t h = f32_to_bf16(x);
  if (!(denorm & 2) && (h & 0x7f80) == 0 && (h & 0x7f)) h &= 0x8000;
  return h;
}

// v_cvt_pk_bf16_f32 D, S0, S1: D = {bf16(S1), bf16(S0)}. Output modifiers act on the f32 values before rounding.
void v_cvt_pk_bf16_f32(Wave& w, const Inst& I) {
  Lanes<f32> a, b;
  fetch(w, I, 1, 0, a);
  fetch(w, I, 2, 1, b);
  output_modifiers(I, a);
  output_modifiers(I, b);
  const u32 denorm = fp32_denorm_mode(w);
  Lanes<u32> r;
  for (int l = 0; l < kLanes; ++l) r[l] = u32(to_bf16(a[l], denorm)) | u32(to_bf16(b[l], denorm)) << 16;
  store(w, I, 0, r);
}

// v_rcp_f32: denormal inputs read as zero; a denormal result (|S0| > 2^126) is kept when the kernel's f32 denormal
// mode keeps denormal results (the v_div_scale / v_div_fmas division sequence relies on it) and flushed otherwise.
void v_rcp_f32(Wave& w, const Inst& I) {
  Lanes<f32> a, r;
  fetch(w, I, 1, 0, a);
  const bool keep = fp32_denorm_mode(w) & 2;
  for (int l = 0; l < kLanes; ++l) {
    const f32 x = a[l];
    r[l] = std::isnan(x) ? quiet(x) : 1.0f / flush(x);
    if (!keep) r[l] = flush(r[l]);
  }
  output_modifiers(I, r);
  store(w, I, 0, r, (I.flags & mod::dpp) ? dpp_write_mask(w, I) : ~0ull);
}

}  // namespace

void register_cvt(IsaTable& t) {
  t.add("v_cvt_f32_fp8", v_cvt_f32_f8<false>);
  t.add("v_cvt_f32_bf8", v_cvt_f32_f8<true>);
  t.add("v_cvt_pk_f32_fp8", v_cvt_pk_f32_f8<false>);
  t.add("v_cvt_pk_f32_bf8", v_cvt_pk_f32_f8<true>);
  t.add("v_cvt_pk_fp8_f32", v_cvt_pk_f8_f32<false, false>, ImmType::f32);
  t.add("v_cvt_pk_bf8_f32", v_cvt_pk_f8_f32<true, false>, ImmType::f32);
  t.add("v_cvt_sr_fp8_f32", v_cvt_sr_f8_f32<false>, ImmType::f32);
  t.add("v_cvt_sr_bf8_f32", v_cvt_sr_f8_f32<true>, ImmType::f32);

  // gfx950.
  t.add("v_cvt_scalef32_f32_fp8", v_cvt_scalef32_f32_f8<false>, ImmType::f32);
  t.add("v_cvt_scalef32_f32_bf8", v_cvt_scalef32_f32_f8<true>, ImmType::f32);
  t.add("v_cvt_scalef32_pk_f32_fp8", v_cvt_scalef32_pk_f32_f8<false>, ImmType::f32);
  t.add("v_cvt_scalef32_pk_f32_bf8", v_cvt_scalef32_pk_f32_f8<true>, ImmType::f32);
  t.add("v_cvt_scalef32_pk_fp8_f32", v_cvt_pk_f8_f32<false, true>, ImmType::f32);
  t.add("v_cvt_scalef32_pk_bf8_f32", v_cvt_pk_f8_f32<true, true>, ImmType::f32);
  t.add("v_cvt_scalef32_sr_fp8_f32", v_cvt_scalef32_sr_f8_f32<false>, ImmType::f32);
  t.add("v_cvt_scalef32_sr_bf8_f32", v_cvt_scalef32_sr_f8_f32<true>, ImmType::f32);
  t.add("v_cvt_pk_bf16_f32", v_cvt_pk_bf16_f32, ImmType::f32);
  t.add("v_cvt_f32_bf16", valu<[](u32 a) { return bf16_to_f32(uint16_t(a)); }>);
  t.add("v_cvt_pk_f16_f32", valu<[](f32 a, f32 b) {
          return u32(std::bit_cast<uint16_t>(f16(a))) | u32(std::bit_cast<uint16_t>(f16(b))) << 16;
        }>, ImmType::f32);

  // The f32 transcendental unit. These replace the libm-based entries of register_valu (this table is filled after
  // it): ISA special cases, denormal inputs of log/rcp/rsq/sqrt read as zero, denormal results of exp flushed to zero
  // whatever the kernel's denormal mode (rcp: see above), results correctly rounded (the ISA promises 1 ULP).
  t.add("v_exp_f32", valu<[](f32 a) {
          if (std::isnan(a)) return quiet(a);
          return flush(f32(std::exp2(double(a))));
        }>, ImmType::f32, op::quarter_rate);
  t.add("v_log_f32", valu<[](f32 a) {
          a = flush(a);
          if (std::isnan(a)) return quiet(a);
          if (a == 0) return -std::numeric_limits<f32>::infinity();
          if (a < 0) return invalid();
          return f32(std::log2(double(a)));
        }>, ImmType::f32, op::quarter_rate);
  t.add("v_rcp_f32", v_rcp_f32, ImmType::f32, op::quarter_rate);
  t.add("v_rcp_iflag_f32", v_rcp_f32, ImmType::f32, op::quarter_rate);
  t.add("v_rsq_f32", valu<[](f32 a) {
          a = flush(a);
          if (std::isnan(a)) return quiet(a);
          if (a == 0) return std::copysign(std::numeric_limits<f32>::infinity(), a);
          if (a < 0) return invalid();
          return f32(1.0 / std::sqrt(double(a)));
        }>, ImmType::f32, op::quarter_rate);
  t.add("v_sqrt_f32", valu<[](f32 a) {
          a = flush(a);
          if (std::isnan(a)) return quiet(a);
          if (a < 0) return invalid();
          return std::sqrt(a);
        }>, ImmType::f32, op::quarter_rate);
}

}  // namespace vgpu
