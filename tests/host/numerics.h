// The host model of the device's element types: rounding to bf16, f16 and the fp8 formats, and their bytes as the
// device stores them. Plain C++ (no HIP, no googletest), so tests, tools and benchmarks share one model. It is written
// from the format definitions and is independent of hk's conversions and of vgpu's (vgpu/src/isa/formats.h): fp8 goes
// through the fp8 model in tests/fp8_ref.h.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "../fp8_ref.h"
#include "hk/arch/target_id.h"

namespace hk_host {

// The element types a device matrix can hold.
enum class Type { fp32, bf16, f16, fp8_e4m3, fp8_e5m2 };

// The targets (whose fp8 formats differ: FNUZ on gfx942, OCP on gfx950), named as hk names them; device.h asks hk's
// lookup which one a device is.
using Arch = hk::arch::target_id;
inline constexpr std::string_view name(Type t) {
  switch (t) {
    case Type::fp32: return "fp32";
    case Type::bf16: return "bf16";
    case Type::f16: return "f16";
    case Type::fp8_e4m3: return "fp8_e4m3";
    case Type::fp8_e5m2: return "fp8_e5m2";
  }
  return "?";
}
// The type of a name as name(Type) spells it (how hk's APIs and tools print their element types).
inline std::optional<Type> type_named(std::string_view n) {
  for (Type t : {Type::fp32, Type::bf16, Type::f16, Type::fp8_e4m3, Type::fp8_e5m2})
    if (n == name(t)) return t;
  return std::nullopt;
}
inline constexpr bool is_fp8(Type t) { return t == Type::fp8_e4m3 || t == Type::fp8_e5m2; }
inline constexpr size_t bytes_of(Type t) { return t == Type::fp32 ? 4 : is_fp8(t) ? 1 : 2; }

// The relative rounding error of one rounding to t (half an ulp: 2^-p for p stored mantissa bits + 1).
inline constexpr double unit_roundoff(Type t) {
  switch (t) {
    case Type::fp32: return 0x1p-24;
    case Type::bf16: return 0x1p-8;
    case Type::f16: return 0x1p-11;
    case Type::fp8_e4m3: return 0x1p-4;
    case Type::fp8_e5m2: return 0x1p-3;
  }
  return 0;
}

// --- bf16 and f16: round to nearest even -------------------------------------------------------------------------

inline uint16_t bf16_bits(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return uint16_t(u >> 16 | 0x40);  // stays a (quiet) NaN
  return uint16_t((u + 0x7fff + (u >> 16 & 1)) >> 16);
}
inline float bf16_value(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }
inline float round_bf16(float f) { return bf16_value(bf16_bits(f)); }

inline uint16_t f16_bits(float f) { return std::bit_cast<uint16_t>(_Float16(f)); }
inline float f16_value(uint16_t h) { return float(std::bit_cast<_Float16>(h)); }
inline float round_f16(float f) { return float(_Float16(f)); }

// --- fp8 ---------------------------------------------------------------------------------------------------------------

// One fp8 format with its code table (from fp8_ref's decoding), for fast decoding and for encoding values that are
// codes already; any other value is rounded by fp8_ref's round-to-nearest-even.
class Fp8 {
 public:
  explicit Fp8(const fp8_ref::F8& f) : format_(f) {
    for (int c = 0; c < 256; ++c) {
      value_[c] = float(fp8_ref::value(uint8_t(c), f));
      if (!std::isnan(value_[c]) && !(value_[c] == 0 && std::signbit(value_[c]))) exact_.emplace(value_[c], uint8_t(c));
    }
    top_ = fp8_ref::max_code(f);
    max_ = value_[top_];
    for (int c = 0; c <= top_; ++c) mag_[c] = value_[c];  // the magnitudes, increasing with the code
    mag_[top_ + 1] = 2.0 * value_[top_] - value_[top_ - 1];  // encode_rne's virtual code past the top
  }
  const fp8_ref::F8& format() const { return format_; }
  float max() const { return max_; }
  float value(uint8_t code) const { return value_[code]; }
  bool finite(uint8_t code) const { return std::isfinite(value_[code]); }
  // Round to nearest even; past the largest value: +-max when saturating (hk's conversions), else inf or NaN.
  uint8_t code(float x, bool saturate = false) const {
    if (saturate && !std::isnan(x)) x = std::fmax(-max_, std::fmin(x, max_));
    if (x == 0 && std::signbit(x)) return fp8_ref::zero_code(format_, true);
    if (auto it = exact_.find(x); it != exact_.end()) return it->second;
    const double a = std::fabs(double(x));
    if (!(a < mag_[top_ + 1])) return fp8_ref::encode_rne(x, format_, saturate);  // NaN, inf, past the top
    // encode_rne's nearest code, ties to the even one, found by bisection instead of its scan of every code.
    const int hi = int(std::upper_bound(mag_, mag_ + top_ + 2, a) - mag_), lo = hi - 1;
    const double dl = a - mag_[lo], dh = mag_[hi] - a;
    const int best = dl < dh ? lo : dh < dl ? hi : (hi % 2 == 0 ? hi : lo);
    if (best > top_ || best == 0) return fp8_ref::encode_rne(x, format_, saturate);
    return uint8_t((std::signbit(x) ? 0x80 : 0) | best);
  }
  float round(float x, bool saturate = false) const { return value(code(x, saturate)); }

 private:
  fp8_ref::F8 format_;
  float value_[256];
  float max_;
  int top_;
  double mag_[130];
  std::unordered_map<float, uint8_t> exact_;
};

// The device's fp8 formats: e4m3 and e5m2, FNUZ on gfx942 and OCP on gfx950.
inline const Fp8& fp8_format(Type t, Arch a) {
  static const Fp8 e4_fnuz(fp8_ref::e4m3fnuz), e5_fnuz(fp8_ref::e5m2fnuz), e4_ocp(fp8_ref::e4m3fn), e5_ocp(fp8_ref::e5m2);
  const bool ocp = a == Arch::gfx950;
  return t == Type::fp8_e5m2 ? (ocp ? e5_ocp : e5_fnuz) : (ocp ? e4_ocp : e4_fnuz);
}

// --- One element type as a device stores it ------------------------------------------------------------------------

// An element type on a given target: what rounding to it gives, and its bytes.
struct Format {
  Type type;
  Arch arch;
  size_t bytes() const { return bytes_of(type); }
  const Fp8& fp8() const { return fp8_format(type, arch); }
  // The nearest value of the type (ties to even); fp8 saturates to +-max as hk's conversions do.
  float round(float x) const {
    switch (type) {
      case Type::fp32: return x;
      case Type::bf16: return round_bf16(x);
      case Type::f16: return round_f16(x);
      default: return fp8().round(x, /*saturate=*/true);
    }
  }
  // x's bytes as the device holds them (x rounded to the type first).
  void store(float x, uint8_t* out) const {
    switch (type) {
      case Type::fp32: std::memcpy(out, &x, 4); break;
      case Type::bf16: { const uint16_t b = bf16_bits(x); std::memcpy(out, &b, 2); break; }
      case Type::f16: { const uint16_t h = f16_bits(x); std::memcpy(out, &h, 2); break; }
      default: *out = fp8().code(x, /*saturate=*/true);
    }
  }
  float load(const uint8_t* in) const {
    uint16_t h;
    switch (type) {
      case Type::fp32: { float f; std::memcpy(&f, in, 4); return f; }
      case Type::bf16: std::memcpy(&h, in, 2); return bf16_value(h);
      case Type::f16: std::memcpy(&h, in, 2); return f16_value(h);
      default: return fp8().value(*in);
    }
  }
  std::vector<uint8_t> encode(const std::vector<float>& v) const {
    std::vector<uint8_t> out(v.size() * bytes());
    for (size_t i = 0; i < v.size(); ++i) store(v[i], &out[i * bytes()]);
    return out;
  }
  std::vector<float> decode(const std::vector<uint8_t>& raw) const {
    std::vector<float> out(raw.size() / bytes());
    for (size_t i = 0; i < out.size(); ++i) out[i] = load(&raw[i * bytes()]);
    return out;
  }
};

}  // namespace hk_host
