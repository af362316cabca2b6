// What GLOBAL, FLAT, SCRATCH, MUBUF and DS loads and atomics share: how a narrow load lands in its VGPR, and the
// table of memory atomics with their float rules.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "isa/formats.h"
#include "isa/ops.h"

namespace vgpu {

// How a loaded value lands in its VGPR: whole dwords, extended to 32 bits, or into one 16-bit half.
enum class Ext : uint8_t { dwords, u8, i8, u16, i16, u8_d16, i8_d16, u16_d16, u8_d16_hi, i8_d16_hi, u16_d16_hi };

// The VGPR value for `x` (the loaded 1 or 2 bytes, zero-extended). D16 loads zero the half they do not load: with
// SRAM ECC on (MI300X and MI355X report sramecc+) the hardware writes the whole register.
inline uint32_t extend(uint32_t x, Ext e) {
  switch (e) {
    case Ext::i8: return uint32_t(int32_t(int8_t(x)));
    case Ext::i16: return uint32_t(int32_t(int16_t(x)));
    case Ext::i8_d16: return uint16_t(int16_t(int8_t(x)));
    case Ext::u8_d16_hi: case Ext::u16_d16_hi: return x << 16;
    case Ext::i8_d16_hi: return uint32_t(uint16_t(int16_t(int8_t(x)))) << 16;
    default: return x;
  }
}

// Float atomics run in the L2 cache and round to nearest even; ADD_F32 flushes its input denormals while the packed
// 16-bit and F64 adds keep them (CDNA3/CDNA4 ISA, "Denorm Handling Rules for Memory Ops").
inline float flush_denorm(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.f, x) : x; }

template <bool bf16>
uint32_t pk_add16(uint32_t a, uint32_t b) {
  // Two 16-bit operands sum exactly enough in f32 that rounding the f32 sum to 16 bits is the correctly rounded sum.
  auto half = [](uint32_t x, int i) -> float {
    uint16_t h = uint16_t(x >> (16 * i));
    return bf16 ? bf16_to_f32(h) : float(std::bit_cast<f16>(h));
  };
  auto pack = [](float f) -> uint32_t { return bf16 ? f32_to_bf16(f) : std::bit_cast<uint16_t>(f16(f)); };
  return pack(half(a, 0) + half(b, 0)) | pack(half(a, 1) + half(b, 1)) << 16;
}

// min/max_f64 (CDNA4 ISA 9.2.3): a signaling NaN operand returns that NaN quieted (the memory value first); otherwise
// the smaller/larger under -inf < ... < -0 < +0 < ... < +inf, where a quiet NaN loses to any number.
template <bool max>
uint64_t minmax_f64(uint64_t a, uint64_t b) {
  constexpr uint64_t quiet = 1ull << 51;
  auto snan = [](uint64_t x) { return std::isnan(std::bit_cast<double>(x)) && !(x & quiet); };
  if (snan(a)) return a | quiet;
  if (snan(b)) return b | quiet;
  const double x = std::bit_cast<double>(a), y = std::bit_cast<double>(b);
  if (std::isnan(x)) return std::isnan(y) ? a : b;
  if (std::isnan(y)) return a;
  if (x == y) return (std::signbit(x) == max) ? b : a;  // +0 beats -0 for max, -0 beats +0 for min
  return (max ? x > y : x < y) ? a : b;
}

// Every memory atomic of the GLOBAL/FLAT/MUBUF families: calls add.template operator()<T, Op, cmpswap>(suffix) with
// Op(old, data, compare) -> new, for suffix "swap", "add", ..., "cmpswap_x2".
template <class Add>
void for_each_atomic(Add&& add) {
  using u32 = uint32_t;
  using u64 = uint64_t;
  using i32 = int32_t;
  using i64 = int64_t;
#define HK_ATOMIC(name, T, expr) add.template operator()<T, [](T o, T d, T) -> T { return (expr); }, false>(name);
  HK_ATOMIC("swap", u32, d)
  HK_ATOMIC("add", u32, o + d)
  HK_ATOMIC("sub", u32, o - d)
  HK_ATOMIC("smin", u32, u32(std::min(i32(o), i32(d))))
  HK_ATOMIC("umin", u32, std::min(o, d))
  HK_ATOMIC("smax", u32, u32(std::max(i32(o), i32(d))))
  HK_ATOMIC("umax", u32, std::max(o, d))
  HK_ATOMIC("and", u32, o & d)
  HK_ATOMIC("or", u32, o | d)
  HK_ATOMIC("xor", u32, o ^ d)
  HK_ATOMIC("inc", u32, o >= d ? 0 : o + 1)
  HK_ATOMIC("dec", u32, (o == 0 || o > d) ? d : o - 1)
  HK_ATOMIC("swap_x2", u64, d)
  HK_ATOMIC("add_x2", u64, o + d)
  HK_ATOMIC("sub_x2", u64, o - d)
  HK_ATOMIC("smin_x2", u64, u64(std::min(i64(o), i64(d))))
  HK_ATOMIC("umin_x2", u64, std::min(o, d))
  HK_ATOMIC("smax_x2", u64, u64(std::max(i64(o), i64(d))))
  HK_ATOMIC("umax_x2", u64, std::max(o, d))
  HK_ATOMIC("and_x2", u64, o & d)
  HK_ATOMIC("or_x2", u64, o | d)
  HK_ATOMIC("xor_x2", u64, o ^ d)
  HK_ATOMIC("inc_x2", u64, o >= d ? 0 : o + 1)
  HK_ATOMIC("dec_x2", u64, (o == 0 || o > d) ? d : o - 1)
  HK_ATOMIC("add_f32", u32, std::bit_cast<u32>(flush_denorm(std::bit_cast<float>(o)) + flush_denorm(std::bit_cast<float>(d))))
  HK_ATOMIC("pk_add_f16", u32, pk_add16<false>(o, d))
  HK_ATOMIC("pk_add_bf16", u32, pk_add16<true>(o, d))  // gfx950 (the disassembler decodes it only there)
  HK_ATOMIC("add_f64", u64, std::bit_cast<u64>(std::bit_cast<double>(o) + std::bit_cast<double>(d)))
  HK_ATOMIC("min_f64", u64, minmax_f64<false>(o, d))
  HK_ATOMIC("max_f64", u64, minmax_f64<true>(o, d))
#undef HK_ATOMIC
  add.template operator()<u32, [](u32 o, u32 d, u32 c) { return o == c ? d : o; }, true>("cmpswap");
  add.template operator()<u64, [](u64 o, u64 d, u64 c) { return o == c ? d : o; }, true>("cmpswap_x2");
}

// Instruction names built at registration time must outlive the table, which keeps string_views.
inline std::string_view intern(std::string s) {
  static std::vector<std::unique_ptr<std::string>> pool;
  pool.push_back(std::make_unique<std::string>(std::move(s)));
  return *pool.back();
}

}  // namespace vgpu
