// Matrix cores (MFMA): D = A x B + C for the v_mfma_* forms of gfx90a, gfx942 and gfx950 that accumulate in f32 or i32
// (the f64 forms: exec_mfma_f64.cpp).
//
// Every instruction is one Shape: per block an M x K matrix A times a K x N matrix B plus C, `blocks` independent
// blocks side by side. Execution gathers A, B and C from the registers into dense arrays (the lane layout is the
// GFX9 register-layout formula of AMD's matrix instruction calculator, see in_loc/out_loc), multiplies them with the
// arithmetic model of the element type, and scatters D back. docs/vgpu-mfma.md records the sources of the layouts,
// the arithmetic model and what is not modelled.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <immintrin.h>

#include "isa/formats.h"
#include "vgpu/device.h"
#include "isa/mfma_simd.h"
#include "isa/isa.h"
#include "isa/ops.h"

namespace vgpu {
namespace {

// Element types of the A and B operands (program.h). fp8/bf8 are e4m3/e5m2 in the arch's flavour (FNUZ on gfx942,
// OCP on gfx950); f8f6f4 takes its format from cbsz (A) and blgp (B): e4m3, e5m2 (8-bit), e2m3, e3m2 (6-bit, packed
// 32 to six registers) or e2m1 (4-bit, 32 to four registers).
using Ty = MfmaType;

struct Shape {
  int m, n, k, blocks;
  Ty a, b;
  bool scaled = false;  // v_mfma_scale_*: E8M0 scales in operands 4 and 5
};

constexpr int bits_of(Ty t) {
  switch (t) {
    case Ty::f32:
    case Ty::xf32: return 32;
    case Ty::f16:
    case Ty::bf16: return 16;
    default: return 8;
  }
}

// --- Register layouts ------------------------------------------------------------------------------------------------

struct Loc {
  int reg, lane, sub;  // register offset from the operand's first register, lane, element within the register
  int shift;           // the element's lowest bit in that register (a 6-bit element may continue in the next one)
};

// Where A[i][k] (dim = M) or B[k][i] (dim = N, i = column) of block b lives. Lanes are split into 64 / (dim * B)
// groups; each group holds `epg` consecutive k of its rows. The gfx950 f8f6f4 forms (8-bit elements, 32 or more k per
// group) instead deal k out in chunks of 16 to the lane groups in turn; their 6- and 4-bit elements (fp6, fp4) keep
// the plain formula, 32 consecutive k per lane packed low bits first into one bit string over the lane's registers
// (an fp6 element may straddle two registers).
constexpr Loc in_loc(int dim, int K, int B, int i, int k, int b, int bits) {
  const int lanes_per_block = 64 / (dim * B), epg = K / lanes_per_block;
  int local, lane;
  if (epg > 16 && bits == 8) {
    const int chunk = k / 16, g = chunk % lanes_per_block;
    local = chunk / lanes_per_block * 16 + k % 16;
    lane = b * dim + g * dim * B + i;
  } else {
    local = k % epg;
    lane = b * dim + k / epg * dim * B + i;
  }
  const int bit = local * bits;
  return {bit / 32, lane, bit % 32 / bits, bit % 32};
}

// Where C[i][j] / D[i][j] of block b lives: column j along the lanes, rows in groups of four registers.
// 32x32: lane j + 32 * (floor(i/4) mod 2), register 4 * floor(i/8) + i mod 4. 16x16: lane j + 16 * floor(i/4), register i mod 4.
constexpr Loc out_loc(int M, int N, int i, int j, int b) {
  const int multirows = 64 / N, mn4 = M * N / 4, blocks_per_reg = (64 + mn4 - 1) / mn4;
  const int reg = b * (M * N / 64) + i / (4 * multirows) * 4 + i % 4;
  const int lane = b % blocks_per_reg * N + i / 4 % multirows * blocks_per_reg * N + j;
  return {reg, lane, 0, 0};
}

static_assert(out_loc(32, 32, 13, 5, 0).reg == 5 && out_loc(32, 32, 13, 5, 0).lane == 5 + 32);
static_assert(out_loc(16, 16, 13, 5, 0).reg == 1 && out_loc(16, 16, 13, 5, 0).lane == 5 + 48);
static_assert(in_loc(16, 128, 1, 3, 100, 0, 8).lane == 3 + 16 * 2 && in_loc(16, 128, 1, 3, 100, 0, 8).reg == 5);
// f8f6f4 sub-byte: 16x16x128 fp4 A[3][100] in lane 3 + 16 * 3, register 0, bits 19:16; 32x32x64 fp6 A[5][41] in lane
// 5 + 32, bits 59:54 of the lane's bit string: register 1, bits 27:22; element 5 (bits 35:30) straddles registers 0-1.
static_assert(in_loc(16, 128, 1, 3, 100, 0, 4).lane == 3 + 48 && in_loc(16, 128, 1, 3, 100, 0, 4).shift == 16);
static_assert(in_loc(32, 64, 1, 5, 41, 0, 6).lane == 37 && in_loc(32, 64, 1, 5, 41, 0, 6).reg == 1 &&
              in_loc(32, 64, 1, 5, 41, 0, 6).shift == 22 && in_loc(32, 64, 1, 5, 5, 0, 6).shift == 30);
// gfx90a's own forms, rows of the calculator's CDNA2 tables: 32x32x2bf16 A[5][1] of block 1 in lane 37, bits 31:16;
// 4x4x2bf16 A[1][1] of block 9 in lane 37, bits 31:16; 16x16x8bf16 A[3][5] in lane 35, bits 31:16; 32x32x8i8
// A[7][6] in lane 39, bits 23:16; 16x16x16i8 A[2][13] in lane 50, bits 15:8.
constexpr bool at(Loc l, int reg, int lane, int sub) { return l.reg == reg && l.lane == lane && l.sub == sub; }
static_assert(at(in_loc(32, 2, 2, 5, 1, 1, 16), 0, 37, 1) && at(in_loc(4, 2, 16, 1, 1, 9, 16), 0, 37, 1));
static_assert(at(in_loc(16, 8, 1, 3, 5, 0, 16), 0, 35, 1));
static_assert(at(in_loc(32, 8, 1, 7, 6, 0, 8), 0, 39, 2) && at(in_loc(16, 16, 1, 2, 13, 0, 8), 0, 50, 1));

// Layout tables, computed at compile time per instruction: for each element of A (b, i, k), B (b, j, k) or C/D
// (b, i, j) in row-major order, its word in the register file (register offset * 64 + lane) and bit shift. KMajor:
// the elements in (b, k, i) order instead, the order the fused arithmetic reads B in. Bits: the element width (f8f6f4:
// 8, 6 or 4 by cbsz / blgp).
template <Shape S, bool IsA, bool KMajor = false, int Bits = bits_of(IsA ? S.a : S.b)>
struct InTable {
  static constexpr int dim = IsA ? S.m : S.n, bits = Bits, count = S.blocks * dim * S.k;
  uint16_t word[count]{};
  uint8_t shift[count]{};
  int span = 0;  // words of the register file the operand occupies (whole registers: the modifiers move lanes)
  constexpr InTable() {
    for (int b = 0; b < S.blocks; ++b)
      for (int i = 0; i < dim; ++i)
        for (int k = 0; k < S.k; ++k) {
          const Loc L = in_loc(dim, S.k, S.blocks, i, k, b, bits);
          const int x = KMajor ? (b * S.k + k) * dim + i : (b * dim + i) * S.k + k;
          word[x] = uint16_t(L.reg * kLanes + L.lane);
          shift[x] = uint8_t(L.shift);
          span = std::max(span, (L.reg + (L.shift + bits > 32 ? 2 : 1)) * kLanes);
        }
  }
};
template <Shape S, bool IsA, bool KMajor = false, int Bits = bits_of(IsA ? S.a : S.b)>
inline constexpr InTable<S, IsA, KMajor, Bits> in_table{};

template <Shape S>
struct OutTable {
  static constexpr int count = S.blocks * S.m * S.n;
  uint16_t word[count]{};
  constexpr OutTable() {
    for (int b = 0; b < S.blocks; ++b)
      for (int i = 0; i < S.m; ++i)
        for (int j = 0; j < S.n; ++j) {
          const Loc L = out_loc(S.m, S.n, i, j, b);
          word[(b * S.m + i) * S.n + j] = uint16_t(L.reg * kLanes + L.lane);
        }
  }
};
template <Shape S>
inline constexpr OutTable<S> out_table{};

// --- Numbers ---------------------------------------------------------------------------------------------------------

constexpr int kZeroE = -20000, kZeroQ = 20000;  // exponents of a zero: below / above every real one

// Decoded elements, one array per field. A finite nonzero element is m * 2^q, with e the exponent of its leading
// digit clamped to the format's minimum normal exponent (the convention of the fused model below); a zero has m = 0,
// e = kZeroE, q = kZeroQ. `v` is the exact value (every element type is exactly a float; inf/NaN for the special ones).
// e16 and e_pair are e again for the fused arithmetic's 16-bit lanes: e16 as loaded for B's columns, e_pair twice in
// one 32-bit word (a broadcast of A's element is then one 32-bit load).
template <int N>
struct Elems {
  float v[N];
  int32_t m[N], e[N], q[N];
  int16_t e16[N];
  int32_t e_pair[N];
  uint8_t special[N];
  bool any_special;  // some element is inf/NaN
};

struct Decoded {
  float f;
  int32_t m;
  int16_t e, q;
  uint8_t special;
};

// A float format: exponent and mantissa widths, bias; NaN/inf conventions.
struct Format {
  int exp_bits, man_bits, bias;
  bool has_inf_nan;  // exponent all ones is inf/NaN (IEEE style)
  bool fnuz;         // 0x80 is the only NaN
  bool e4m3fn;       // S.1111.111 is the only NaN
};

constexpr Format kF16{5, 10, 15, true, false, false};
constexpr Format kBf16{8, 7, 127, true, false, false};
constexpr Format kTf32{8, 10, 127, true, false, false};  // xf32: f32 truncated to 10 mantissa bits

Format fp8_format_of(Fp8 f) {
  const Fp8Spec s = spec(f);
  return {s.exp_bits, s.man_bits, s.bias, s.has_inf, s.fnuz, !s.fnuz && !s.has_inf};
}

// Sign, exponent and mantissa fields to a Decoded; `f` is supplied by the caller (exact, computed cheaply per format).
inline Decoded make(float f, bool neg, int ex, int man, const Format& F) {
  const int e = ex == 0 ? 1 - F.bias : ex - F.bias;
  const int m = ex == 0 ? man : man | (1 << F.man_bits);
  if (m == 0) return {f, 0, int16_t(kZeroE), int16_t(kZeroQ), 0};
  return {f, neg ? -m : m, int16_t(e), int16_t(e - F.man_bits), 0};
}

// Generic decode of a narrow float (used to build the fp8 tables).
Decoded decode_slow(uint32_t bits, const Format& F) {
  const int width = 1 + F.exp_bits + F.man_bits;
  const bool neg = bits >> (width - 1) & 1;
  const int ex = int(bits >> F.man_bits) & ((1 << F.exp_bits) - 1);
  const int man = int(bits) & ((1 << F.man_bits) - 1);
  const int emax = (1 << F.exp_bits) - 1;
  if ((F.fnuz && bits == (1u << (width - 1))) || (F.has_inf_nan && ex == emax) ||
      (F.e4m3fn && ex == emax && man == (1 << F.man_bits) - 1))
    return {F.has_inf_nan && man == 0 ? (neg ? -INFINITY : INFINITY) : NAN, 0, int16_t(kZeroE), int16_t(kZeroQ), 1};
  const int e = ex == 0 ? 1 - F.bias : ex - F.bias;
  const int m = ex == 0 ? man : man | (1 << F.man_bits);
  const float f = neg ? -std::ldexp(float(m), e - F.man_bits) : std::ldexp(float(m), e - F.man_bits);
  return make(f, neg, ex, man, F);
}

// The OCP MX sub-byte formats of the f8f6f4 forms (OCP Microscaling spec 5.3: no inf or NaN codes), as the table
// indices after the four Fp8 ones: e2m3 (fp6, bias 1), e3m2 (bf6, bias 3), e2m1 (fp4, bias 1).
enum : int { kTableE2m3 = 4, kTableE3m2 = 5, kTableE2m1 = 6, kTables = 7 };
constexpr Format kE2m3{2, 3, 1, false, false, false}, kE3m2{3, 2, 3, false, false, false}, kE2m1{2, 1, 1, false, false, false};

struct Fp8Tables {
  Decoded t[kTables][256];
  Fp8Tables() {
    for (int f = 0; f < 4; ++f)
      for (uint32_t x = 0; x < 256; ++x) t[f][x] = decode_slow(x, fp8_format_of(Fp8(f)));
    const Format sub[3] = {kE2m3, kE3m2, kE2m1};
    for (int f = 0; f < 3; ++f)
      for (uint32_t x = 0; x < 256; ++x) t[kTableE2m3 + f][x] = decode_slow(x & 63, sub[f]);  // codes are masked
  }
};
const Fp8Tables& fp8_tables() {
  static const Fp8Tables tables;
  return tables;
}

// The element decoders, by operand type; fp8 formats index the tables.
inline Decoded decode_f16(uint32_t h) {
  const float f = float(std::bit_cast<_Float16>(uint16_t(h)));
  const int ex = int(h >> 10) & 31;
  if (ex == 31) return {f, 0, int16_t(kZeroE), int16_t(kZeroQ), 1};
  return make(f, h >> 15 & 1, ex, int(h) & 0x3ff, kF16);
}
inline Decoded decode_bf16(uint32_t h) {
  const float f = std::bit_cast<float>(h << 16);
  const int ex = int(h >> 7) & 0xff;
  if (ex == 0xff) return {f, 0, int16_t(kZeroE), int16_t(kZeroQ), 1};
  return make(f, h >> 15 & 1, ex, int(h) & 0x7f, kBf16);
}
inline Decoded decode_tf32(uint32_t x) {
  x &= ~0x1fffu;
  const float f = std::bit_cast<float>(x);
  const int ex = int(x >> 23) & 0xff;
  if (ex == 0xff) return {f, 0, int16_t(kZeroE), int16_t(kZeroQ), 1};
  return make(f, x >> 31, ex, int(x >> 13) & 0x3ff, kTf32);
}

// --- Arithmetic ------------------------------------------------------------------------------------------------------
//
// The bf16/f16/xf32/fp8 forms use the fused dot-product-add that MMA-Sim (Microsoft Research, "Bit-accurate modeling
// of GPU matrix multiply-accumulate units", arXiv:2511.10909) derived for CDNA3 and validated bit for bit against
// MI300 hardware: k is taken in groups (8 for bf16/f16, 4 for xf32, 16 for fp8); within a group the exact products are
// aligned to the largest product exponent E and truncated to 24 fraction bits, summed exactly, then floored to 31
// fraction bits and added to C (floored to 24 fraction bits) relative to the larger of E and C's exponent, and the sum
// is rounded to f32 (nearest even); that f32 is C for the next group. fp8 groups sum their even and odd k separately
// first (each truncated as above, then both floored to 24 bits relative to the larger). f32 forms are a chain of fused
// multiply-adds over k. Integer forms wrap modulo 2^32. docs/vgpu-mfma.md has the details and the sources.

// 2^x as a double, x clamped to the normal range.
inline double pow2(int x) {
  x = std::clamp(x, -1022, 1023);
  return std::bit_cast<double>(uint64_t(x + 1023) << 52);
}

// floor(x * 2^s) and trunc(x * 2^s) for an integer x.
inline int64_t shift_floor(int64_t x, int s) {
  if (s >= 0) return x << s;
  return -s >= 63 ? (x < 0 ? -1 : 0) : x >> -s;
}
inline int64_t shift_trunc(int64_t x, int s) {
  if (s >= 0) return x << s;
  if (-s >= 63) return 0;
  return x < 0 ? -((-x) >> -s) : x >> -s;
}

// C as the model sees it: its exponent (clamped to -126; kZeroE for zero).
inline int exponent_of_c(float c) {
  const uint32_t cb = std::bit_cast<uint32_t>(c);
  if ((cb & 0x7fffffff) == 0) return kZeroE;
  const int cex = int(cb >> 23) & 0xff;
  return cex == 0 ? -126 : cex - 127;
}

// The final step shared by both paths: S (the group's sum of products, already truncated, exact) with leading
// exponent E is floored to 31 fraction bits and C to 24 fraction bits relative to max(E, exponent of C); the exact sum
// of the two is rounded to f32. `c_cutoff`: fp8 groups drop C entirely when its exponent is 26 or more below.
inline float add_c(double S, int E, float c, bool c_cutoff) {
  const int ec = exponent_of_c(c);
  const int emax = std::max(E, ec);
  if (emax <= kZeroE) return 0.f;  // no nonzero product and C = 0
  const double s1 = std::floor(S * pow2(31 - emax));
  const double c1 = c_cutoff && ec < emax - 25 ? 0.0 : std::floor(double(c) * pow2(24 - emax));
  const double total = s1 + c1 * 128;
  if (total == 0) return 0.f;
  return float(total * pow2(emax - 31));
}

// Exact path of one group, for groups where truncation drops bits, a product may reach 2^128, or an input is inf or
// NaN: c + sum over k < g of a[ia + k * sa] * b[ib + k * sb] * 2^delta in integer arithmetic.
// Out of line: it is the cold path, and one compiled copy keeps NaN payloads the same wherever it is called from (they
// depend on the operand order the compiler picks for the products; the model does not define them).
template <int N>
[[gnu::noinline]] float fused_group_exact(const Elems<N>& a, int ia, int sa, const Elems<N>& b, int ib, int sb, int g, float c,
                        int delta, bool nan_scale, bool fp8) {
  bool special = nan_scale || !std::isfinite(c);
  for (int k = 0; k < g; ++k) special |= a.special[ia + k * sa] | b.special[ib + k * sb];
  if (special) {  // a NaN or an infinity among the inputs: the result is the non-finite value of the exact sum
    if (nan_scale) return NAN;
    double s = c;
    for (int k = 0; k < g; ++k) s += double(a.v[ia + k * sa]) * double(b.v[ib + k * sb]) * pow2(delta);
    return float(s);
  }
  int64_t mp[16];
  int qp[16], ep[16];
  bool pinf = false, ninf = false;
  for (int k = 0; k < g; ++k) {
    mp[k] = int64_t(a.m[ia + k * sa]) * b.m[ib + k * sb];
    qp[k] = a.q[ia + k * sa] + b.q[ib + k * sb] + delta;
    ep[k] = a.e[ia + k * sa] + b.e[ib + k * sb] + delta;
    if (mp[k] != 0 && ep[k] >= 126) {  // products of 2^128 or more overflow
      const int top = std::bit_width(uint64_t(mp[k] < 0 ? -mp[k] : mp[k])) - 1 + qp[k];
      if (top >= 128) (mp[k] < 0 ? ninf : pinf) = true;
    }
  }
  if (pinf || ninf) return pinf && ninf ? NAN : pinf ? INFINITY : -INFINITY;
  // Aligned truncated sum over k = first, first + step, ... in units of 2^(E - 24).
  auto truncated = [&](int first, int step, int& E) {
    E = kZeroE;
    for (int k = first; k < g; k += step)
      if (mp[k] != 0) E = std::max(E, ep[k]);
    int64_t t = 0;
    if (E != kZeroE)
      for (int k = first; k < g; k += step)
        if (mp[k] != 0) t += shift_trunc(mp[k], qp[k] - E + 24);
    return t;
  };
  if (!fp8) {
    int E;
    const int64_t t = truncated(0, 1, E);
    return add_c(double(t) * pow2(E - 24), E, c, false);
  }
  int E0, E1;
  const int64_t t0 = truncated(0, 2, E0), t1 = truncated(1, 2, E1);
  const int e = std::max(E0, E1);
  if (e == kZeroE) return add_c(0, e, c, true);
  const int64_t s = shift_floor(t0, E0 - e) + shift_floor(t1, E1 - e);  // units of 2^(e - 24)
  return add_c(double(s) * pow2(e - 24), e, c, true);
}

// The final step of one group for one column j (scalar): E and T per half as fused_matmul computed them (E kZeroE
// for only zero products), the group's B inf/NaN flag, and the scale exponents. Takes the exact integer path where the
// shortcut does not hold; otherwise floors and adds C.
template <int H, int NE>
inline float finish_column(const Elems<NE>& a, int ia, const Elems<NE>& bt, int ib, int stride, int G, float acc,
                           const int* E, const double* T, bool b_special, int xa, int xb, bool fp8) {
  if (std::isnan(acc)) return acc;  // a NaN accumulator stays NaN
  const int delta = xa + xb - 254;
  const bool nan_scale = xa == 255 || xb == 255;
  bool exact = !b_special && !nan_scale && std::isfinite(acc);
  for (int h = 0; h < H; ++h) exact &= E[h] == kZeroE || E[h] + delta < 126;
  if (!exact) return fused_group_exact(a, ia, 1, bt, ib, stride, G, acc, delta, nan_scale, fp8);
  // The group's sum s (exact, a multiple of 2^(em - 24)) with leading exponent em.
  double s;
  int em;
  if constexpr (H == 1) {
    em = E[0] == kZeroE ? kZeroE : E[0] + delta;
    s = em == kZeroE ? 0.0 : T[0] * pow2(em - 24);
  } else {
    const int e0 = E[0] == kZeroE ? kZeroE : E[0] + delta, e1 = E[1] == kZeroE ? kZeroE : E[1] + delta;
    em = std::max(e0, e1);
    s = em == kZeroE ? 0.0 : (std::floor(T[0] * pow2(e0 - em)) + std::floor(T[1] * pow2(e1 - em))) * pow2(em - 24);
  }
  // Common case: the floors change nothing (s has no bits below 2^(emax - 31), C none below 2^(emax - 24)),
  // so the result is s + C rounded once.
  const int ec = exponent_of_c(acc), emax = std::max(em, ec);
  if (em != kZeroE && (ec == kZeroE || (em >= emax - 7 && ec >= emax - 1)))
    return ec == kZeroE ? float(s) : float(s + double(acc));
  return add_c(s, em, acc, fp8);
}

// The fused model's fast path, once per instruction set (mfma_fused_simd.inc describes it), and the choice among
// them: the widest the CPU has, unless HK_VGPU_MFMA_SIMD or set_mfma_simd asks for another. Forms whose N is not a
// multiple of a set's width (the 4x4 ones) take the widest that fits.
namespace fused_sse41 {
#pragma GCC push_options
#pragma GCC target("sse4.1")
// The forms only this copy serves inline it whole into mfma<S>, where GCC takes block_short's b_special (left unset
// where B has no inf/NaN, and then never read: finish_vector reads it only if bt.any_special) for a read.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
using V = simd::Sse41;
#include "isa/mfma_fused_simd.inc"
#pragma GCC diagnostic pop
#pragma GCC pop_options
}  // namespace fused_sse41
namespace fused_avx2 {
#pragma GCC push_options
#pragma GCC target("avx2")
using V = simd::Avx2;
#include "isa/mfma_fused_simd.inc"
#pragma GCC pop_options
}  // namespace fused_avx2
namespace fused_avx512 {
#pragma GCC push_options
#pragma GCC target("avx512f")
using V = simd::Avx512;
#include "isa/mfma_fused_simd.inc"
#pragma GCC pop_options
}  // namespace fused_avx512

bool cpu_has(MfmaSimd s) {
  __builtin_cpu_init();
  switch (s) {
    case MfmaSimd::avx512: return __builtin_cpu_supports("avx512f");
    case MfmaSimd::avx2: return __builtin_cpu_supports("avx2");
    default: return __builtin_cpu_supports("sse4.1");
  }
}

MfmaSimd initial_simd() {
  MfmaSimd best = MfmaSimd::sse41;
  for (MfmaSimd s : {MfmaSimd::avx2, MfmaSimd::avx512})
    if (cpu_has(s)) best = s;
  if (const char* want = std::getenv("HK_VGPU_MFMA_SIMD"); want && *want) {
    for (MfmaSimd s : {MfmaSimd::sse41, MfmaSimd::avx2, MfmaSimd::avx512})
      if (std::strcmp(want, mfma_simd_name(s)) == 0) {
        if (cpu_has(s)) return s;
        std::fprintf(stderr, "vgpu: this CPU lacks %s (HK_VGPU_MFMA_SIMD); using %s\n", want, mfma_simd_name(best));
        return best;
      }
    std::fprintf(stderr, "vgpu: ignoring HK_VGPU_MFMA_SIMD=%s (one of sse4.1, avx2, avx512)\n", want);
  }
  return best;
}

std::atomic<MfmaSimd>& active_simd() {
  static std::atomic<MfmaSimd> active{initial_simd()};
  return active;
}

// Only the single-block forms with groups of 8 k or more (every form hk's kernels use: 16x16x16/32 and 32x32x8/16
// bf16 and f16, fp8/bf8, f8f6f4) have AVX2 and AVX-512 copies; the rest (the 2-, 4- and 16-block forms, xf32, gfx90a's
// groups of 2 and 4 k) take the SSE4.1 one: each wide copy of a form costs compile time (the two were ~43% of this
// file's), and these forms run in no hot path.
template <int B, int G>
constexpr bool wide_simd = B == 1 && G >= 8;

template <int M, int N, int K, int B, int G, bool fp8, int kblocks, int NE>
void fused_matmul(const Elems<NE>& a, const Elems<NE>& bt, const uint32_t* const* c, uint32_t* const* d,
                  const int* sa, const int* sb) {
  switch (active_simd().load(std::memory_order_relaxed)) {
    case MfmaSimd::avx512:
      if constexpr (wide_simd<B, G> && N % simd::Avx512::W == 0)
        return fused_avx512::fused_matmul<M, N, K, B, G, fp8, kblocks>(a, bt, c, d, sa, sb);
      [[fallthrough]];
    case MfmaSimd::avx2:
      if constexpr (wide_simd<B, G> && N % simd::Avx2::W == 0)
        return fused_avx2::fused_matmul<M, N, K, B, G, fp8, kblocks>(a, bt, c, d, sa, sb);
      [[fallthrough]];
    default: return fused_sse41::fused_matmul<M, N, K, B, G, fp8, kblocks>(a, bt, c, d, sa, sb);
  }
}

// The model literally: every element of D, group by group, through the exact integer path. Far slower than
// fused_matmul; it is what fused_matmul is tested against bit for bit (mfma_reference_table, tests/vgpu).
template <int M, int N, int K, int B, int G, bool fp8, int kblocks, int NE>
void fused_matmul_reference(const Elems<NE>& a, const Elems<NE>& bt, const uint32_t* c, uint32_t* d, const int* sa,
                            const int* sb) {
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        float acc = std::bit_cast<float>(c[(b * M + i) * N + j]);
        for (int k0 = 0; k0 < K; k0 += G) {
          if (std::isnan(acc)) continue;  // a NaN accumulator stays NaN
          const int kb = kblocks > 1 ? k0 / 32 : 0;
          const int xa = sa[i * kblocks + kb], xb = sb[j * kblocks + kb];
          acc = fused_group_exact(a, (b * M + i) * K + k0, 1, bt, (b * K + k0) * N + j, N, G, acc, xa + xb - 254,
                                  xa == 255 || xb == 255, fp8);
        }
        d[(b * M + i) * N + j] = std::bit_cast<uint32_t>(acc);
      }
}

// --- Execution -------------------------------------------------------------------------------------------------------

// f32 forms: D[r][j] = C[r][j] + a[r][0] * b[j][0] + ... as a chain of fused multiply-adds in k order. a holds the
// rows of all blocks (rows x K), b the columns of each block (N x K per block of rows_per_block rows). Compiled with
// and without FMA instructions (chosen at load time) so that std::fma is one instruction rather than a library call.
__attribute__((target_clones("fma", "default"))) void f32_chain(const uint32_t* a, const uint32_t* b,
                                                                     const uint32_t* c, uint32_t* d, int rows,
                                                                     int rows_per_block, int N, int K) {
  for (int r = 0; r < rows; ++r) {
    const uint32_t* ar = a + r * K;
    const uint32_t* bb = b + r / rows_per_block * N * K;
    for (int j = 0; j < N; ++j) {
      float acc = std::bit_cast<float>(c[r * N + j]);
      for (int k = 0; k < K; ++k) acc = std::fma(std::bit_cast<float>(ar[k]), std::bit_cast<float>(bb[j * K + k]), acc);
      d[r * N + j] = std::bit_cast<uint32_t>(acc);
    }
  }
}


bool fail(Wave& w, const Inst& I, const char* what) {
  w.fault(I, FaultKind::unknown_instruction, -1, what);
  return false;
}

struct Setup {
  uint8_t src_a[kLanes], src_b[kLanes];  // lane each lane's A / B registers are read from (cbsz/abid, blgp)
  bool permuted = false;
  int fmt_a = -1, fmt_b = -1;            // fp8 table of A / B (an Fp8 value or kTableE*), -1 for other types
  int bits_a = 8, bits_b = 8;            // f8f6f4: element width of A / B (8, 6 or 4)
};

// Lane sources for the broadcast modifiers: cbsz/abid broadcast one block of 64 >> cbsz lanes of A to all blocks,
// blgp permutes the lanes of B (ISA table: 0 none, 1/2 broadcast lanes 0-31 / 32-63, 3 rotate by 16, 4-7 broadcast
// one group of 16 lanes).
bool lane_sources(Wave& w, const Inst& I, Setup& s) {
  if (I.cbsz > 4 || I.abid >= (1u << I.cbsz) || I.blgp > 7)
    return fail(w, I, "MFMA with an illegal cbsz/abid/blgp combination");
  s.permuted = I.cbsz || I.blgp;
  if (!s.permuted) return true;  // the tables are only read for permuted operands
  const int S = 64 >> I.cbsz;
  for (int l = 0; l < kLanes; ++l) {
    s.src_a[l] = uint8_t(I.cbsz ? l % S + S * I.abid : l);
    int b = l;
    switch (I.blgp) {
      case 1: b = l % 32; break;
      case 2: b = l % 32 + 32; break;
      case 3: b = (l + 16) % 64; break;
      case 4: case 5: case 6: case 7: b = l % 16 + 16 * (I.blgp - 4); break;
      default: break;
    }
    s.src_b[l] = uint8_t(b);
  }
  return true;
}

template <Shape S>
bool check_operands(Wave& w, const Inst& I) {
  const int need = S.scaled ? 6 : 4;
  if (I.nops != need) return fail(w, I, "MFMA with an unexpected operand count");
  for (int i = 0; i < 3; ++i)
    if (I.op[i].kind != OpKind::vgpr) return fail(w, I, "MFMA operand that is not a VGPR or AGPR");
  if (I.op[3].kind != OpKind::vgpr && I.op[3].kind != OpKind::imm)
    return fail(w, I, "MFMA accumulator that is neither a register nor an inline constant");
  for (int i = 0; i < need; ++i)
    if (I.op[i].neg || I.op[i].abs) return fail(w, I, "MFMA operand negation/abs is not modelled");
  if (I.neg_lo || I.neg_hi) return fail(w, I, "MFMA neg_lo/neg_hi is not modelled");
  if (I.flags & mod::clamp) return fail(w, I, "MFMA clamp is not modelled");
  return true;
}

// The f8f6f4 format code of cbsz/blgp (LLVM AMDGPU, CDNA4 ISA): 0 e4m3 (fp8), 1 e5m2 (bf8), 2 e2m3 (fp6), 3 e3m2
// (bf6), 4 e2m1 (fp4); the others are illegal.
bool f8f6f4_format(Wave& w, const Inst& I, int code, int& fmt, int& bits) {
  switch (code) {
    case 0: return fmt = int(Fp8::e4m3fn), bits = 8, true;
    case 1: return fmt = int(Fp8::e5m2), bits = 8, true;
    case 2: return fmt = kTableE2m3, bits = 6, true;
    case 3: return fmt = kTableE3m2, bits = 6, true;
    case 4: return fmt = kTableE2m1, bits = 4, true;
    default: return fail(w, I, "MFMA f8f6f4 with an illegal format code (cbsz/blgp above 4)");
  }
}

int fp8_table_of(Ty t, Fp8Flavour flavour) {
  if (t == Ty::fp8) return int(fp8_format(flavour == Fp8Flavour::ocp));
  if (t == Ty::bf8) return int(bf8_format(flavour == Fp8Flavour::ocp));
  return -1;
}

// Raw bits of every element of A (IsA) or B, in (block, row or column, k) order, or (block, k, row or column).
template <Shape S, bool IsA, bool KMajor = false, int Bits = bits_of(IsA ? S.a : S.b)>
inline void gather_bits(const Wave& w, const Inst& I, const Setup& s, uint32_t* out) {
  constexpr auto& T = in_table<S, IsA, KMajor, Bits>;
  constexpr int bits = T.bits;
  const uint32_t* file = w.v[I.op[IsA ? 1 : 2].reg];
  const uint8_t* src = IsA ? s.src_a : s.src_b;
  for (int x = 0; x < T.count; ++x) {
    int word = T.word[x];
    if (s.permuted) word = (word & ~(kLanes - 1)) | src[word & (kLanes - 1)];
    if constexpr (bits == 32) out[x] = file[word];
    else if constexpr (bits == 6) {  // the element may continue in the lane's next register
      uint32_t v = file[word] >> T.shift[x];
      if (T.shift[x] > 26) v |= file[word + kLanes] << (32 - T.shift[x]);
      out[x] = v & 63u;
    }
    else out[x] = file[word] >> T.shift[x] & ((1u << bits) - 1);
  }
}
// The element width of A (IsA) or B: f8f6f4's from cbsz / blgp, the type's otherwise.
template <Shape S, bool IsA>
inline int operand_bits(const Setup& s) {
  if constexpr ((IsA ? S.a : S.b) == Ty::f8f6f4) return IsA ? s.bits_a : s.bits_b;
  return bits_of(IsA ? S.a : S.b);
}
// Words of the register file an operand occupies (f8f6f4: 8, 6 or 4 registers by its format).
template <Shape S, bool IsA>
inline int operand_span(const Setup& s) {
  return S.blocks * (IsA ? S.m : S.n) * S.k * operand_bits<S, IsA>(s) / 32;
}
template <Shape S, bool IsA, bool KMajor = false>
inline void gather(const Wave& w, const Inst& I, const Setup& s, uint32_t* out) {
  if constexpr ((IsA ? S.a : S.b) == Ty::f8f6f4) {
    const int bits = operand_bits<S, IsA>(s);
    if (bits == 6) return gather_bits<S, IsA, KMajor, 6>(w, I, s, out);
    if (bits == 4) return gather_bits<S, IsA, KMajor, 4>(w, I, s, out);
  }
  gather_bits<S, IsA, KMajor>(w, I, s, out);
}

// Four 16-bit floats (the low halves of raw[x..x+3]) decoded at once (decode16_simd.inc). Returns the lanes with an
// all-ones exponent (inf/NaN), which the caller decodes one by one instead.
namespace decode_sse41 {
#pragma GCC push_options
#pragma GCC target("sse4.1")
using V = simd::Sse41;
#include "isa/decode16_simd.inc"
#pragma GCC pop_options
}  // namespace decode_sse41
template <int EB, int MB, int N>
inline int decode16x4(const uint32_t* raw, int x, Elems<N>& out) {
  unsigned special;
  decode_sse41::decode16<EB, MB>(simd::Sse41::load(reinterpret_cast<const int32_t*>(raw + x)), x, out, special);
  std::memset(&out.special[x], 0, 4);
  return int(special);
}

// The fields the fused arithmetic reads besides e (e16, e_pair) and the any-special flag, from e and special.
template <int N>
inline void finish_elems(Elems<N>& out) {
  uint8_t any = 0;
  for (int x = 0; x < N; ++x) {
    any |= out.special[x];
    out.e16[x] = int16_t(out.e[x]);
    out.e_pair[x] = int32_t(uint32_t(uint16_t(out.e16[x])) * 0x10001u);
  }
  out.any_special = any != 0;
}

// One element decoded by the scalar decoder of its type into every field.
template <Ty t, int N>
inline void decode_one(uint32_t raw, const Decoded* fp8_table, int x, Elems<N>& out) {
  Decoded d;
  if constexpr (t == Ty::f16) d = decode_f16(raw);
  else if constexpr (t == Ty::bf16) d = decode_bf16(raw);
  else if constexpr (t == Ty::xf32) d = decode_tf32(raw);
  else d = fp8_table[raw];
  out.v[x] = d.f, out.m[x] = d.m, out.e[x] = d.e, out.q[x] = d.q, out.special[x] = d.special;
}

// Decodes the raw elements, in the order given; 16-bit floats four at a time unless Scalar (the reference's decode:
// one element at a time, the scalar decoders only).
template <Ty t, int N, bool Scalar = false>
inline void decode_all(const uint32_t* raw, int fmt, Elems<N>& out) {
  const Decoded* table = fmt >= 0 ? fp8_tables().t[fmt] : nullptr;
  if constexpr (!Scalar && (t == Ty::f16 || t == Ty::bf16)) {
    static_assert(N % 4 == 0);
    for (int x = 0; x < N; x += 4) {
      const int special = t == Ty::f16 ? decode16x4<5, 10>(raw, x, out) : decode16x4<8, 7>(raw, x, out);
      for (int l = 0; l < 4; ++l)
        if (special >> l & 1) decode_one<t>(raw[x + l], table, x + l, out);
    }
  } else {
    for (int x = 0; x < N; ++x) decode_one<t>(raw[x], table, x, out);
  }
  finish_elems(out);
}

// Where the elements of each chunk of eight (in in_table order) of a 16-bit operand lie in the register file: eight
// consecutive words at one shift (B in (block, k, column) order: 16 lanes of one register per k), four words of two
// consecutive elements each, low half first (A in (block, row, k) order), or anywhere (read one by one).
enum class Chunk : uint8_t { run, pairs, scattered };
template <Shape S, bool IsA, bool KMajor>
struct ChunkTable {
  static constexpr auto& T = in_table<S, IsA, KMajor>;
  static constexpr int count = T.count / 8;
  Chunk kind[count]{};
  constexpr ChunkTable() {
    for (int c = 0; c < count; ++c) {
      const int x = 8 * c;
      bool run = true, pairs = true;
      for (int j = 0; j < 8; ++j) {
        run = run && T.word[x + j] == T.word[x] + j && T.shift[x + j] == T.shift[x];
        pairs = pairs && T.word[x + j] == T.word[x + (j & ~1)] && T.shift[x + j] == (j & 1) * 16;
      }
      kind[c] = run ? Chunk::run : pairs ? Chunk::pairs : Chunk::scattered;
    }
  }
};
template <Shape S, bool IsA, bool KMajor>
inline constexpr ChunkTable<S, IsA, KMajor> chunk_table{};

// Gather and decode of a 16-bit operand eight elements at a time with AVX2, in one pass that also writes e16, e_pair
// and special (decode_all makes a second pass for them): the elements of a chunk come from the register file as one
// load (a run) or four (pairs), not eight table lookups. Same fields, bit for bit, as gather + decode_all
// (mfma_decode_mismatches checks the decoder on every code, the model test the gather of every form).
namespace gather_avx2 {
#pragma GCC push_options
#pragma GCC target("avx2")
using V = simd::Avx2;
#include "isa/decode16_simd.inc"

// Eight 16-bit floats (the low halves of h's lanes; the high halves are ignored) of type t, decoded by decode16
// (decode16_simd.inc) into elements x..x+7 with e16 and e_pair, inf/NaN lanes by the scalar decoder. Returns whether
// any lane was inf/NaN.
template <Ty t, int N>
inline bool decode16x8(__m256i h, int x, Elems<N>& out) {
  constexpr int EB = t == Ty::f16 ? 5 : 8, MB = t == Ty::f16 ? 10 : 7;
  unsigned special;
  const __m256i ez = decode16<EB, MB>(h, x, out, special);
  // e fits int16 (kZeroE included), so the saturating pack is exact.
  _mm_storeu_si128((__m128i*)&out.e16[x], _mm_packs_epi32(_mm256_castsi256_si128(ez), _mm256_extracti128_si256(ez, 1)));
  _mm256_storeu_si256((__m256i*)&out.e_pair[x],
                      _mm256_or_si256(_mm256_and_si256(ez, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(ez, 16)));
  std::memset(&out.special[x], 0, 8);
  if (special) [[unlikely]] {
    alignas(32) uint32_t raw[8];
    _mm256_store_si256((__m256i*)raw, h);
    for (int l = 0; l < 8; ++l)
      if (special >> l & 1) {
        decode_one<t>(raw[l] & 0xffff, nullptr, x + l, out);
        out.e16[x + l] = int16_t(out.e[x + l]);
        out.e_pair[x + l] = int32_t(uint32_t(uint16_t(out.e16[x + l])) * 0x10001u);
      }
  }
  return special != 0;
}

// A (IsA) or B of a 16-bit form without broadcast modifiers, in the order `decoded` keeps it.
template <Shape S, bool IsA, int N>
[[gnu::noinline]] void gather_decode(const uint32_t* file, Elems<N>& out) {
  constexpr auto& T = in_table<S, IsA, !IsA>;
  constexpr auto& C = chunk_table<S, IsA, !IsA>;
  constexpr Ty t = IsA ? S.a : S.b;
  bool any = false;
  for (int c = 0; c < C.count; ++c) {
    const int x = 8 * c;
    __m256i h;
    if (C.kind[c] == Chunk::run) {
      h = _mm256_srl_epi32(_mm256_loadu_si256((const __m256i*)(file + T.word[x])), _mm_cvtsi32_si128(T.shift[x]));
    } else if (C.kind[c] == Chunk::pairs) {
      h = _mm256_cvtepu16_epi32(_mm_setr_epi32(int(file[T.word[x]]), int(file[T.word[x + 2]]),
                                               int(file[T.word[x + 4]]), int(file[T.word[x + 6]])));
    } else {
      alignas(32) uint32_t raw[8];
      for (int j = 0; j < 8; ++j) raw[j] = file[T.word[x + j]] >> T.shift[x + j];
      h = _mm256_load_si256((const __m256i*)raw);
    }
    any |= decode16x8<t>(h, x, out);
  }
  out.any_special = any;
}

// decode16x8 over `count` raw codes (a multiple of 8), for the decoder's exhaustive test.
template <Ty t, int N>
void decode_codes(const uint32_t* raw, Elems<N>& out) {
  bool any = false;
  for (int x = 0; x < N; x += 8) any |= decode16x8<t>(_mm256_loadu_si256((const __m256i*)(raw + x)), x, out);
  out.any_special = any;
}

#pragma GCC pop_options
}  // namespace gather_avx2

// The decoded elements of the last few A (IsA) or B operands of one form on this thread, keyed by the operand's
// register words, format and broadcast modifiers: a GEMM feeds each A and B fragment to several MFMAs, and they are
// gathered and decoded once. The loops of hk's mma run over (row tile, column tile, k), so an A fragment comes back
// after a few MFMAs and a B fragment after a whole row of tiles (32 fragments in a 64 x 128 wave tile of 16x16x16):
// B keeps more. B comes in (block, k, column) order, the order the fused arithmetic reads it in. Heap-allocated on
// first use (thread_local storage for every form would be megabytes per thread).
template <Shape S, bool IsA>
const Elems<S.blocks * S.m * S.k>& decoded(const Wave& w, const Inst& I, const Setup& s) {
  constexpr auto& T = in_table<S, IsA, !IsA>;
  constexpr int N = S.blocks * S.m * S.k, ways = IsA ? 8 : 32, span = T.span;
  const int words = std::min(span, operand_span<S, IsA>(s));  // an fp6 / fp4 operand is shorter than the fp8 one
  struct Cache {
    uint32_t tag[ways] = {};  // 0: empty
    uint32_t first[ways] = {};  // each way's first register word: most mismatches end here, in one cache line
    int next = 0;
    uint32_t regs[ways][span];
    Elems<N> el[ways];
  };
  static thread_local std::unique_ptr<Cache> cache;
  if (!cache) cache = std::make_unique<Cache>();
  Cache& c = *cache;
  const uint32_t* file = w.v[I.op[IsA ? 1 : 2].reg];
  const int fmt = IsA ? s.fmt_a : s.fmt_b;
  const uint32_t modifiers = !s.permuted ? 0 : IsA ? 1 + (I.cbsz << 4 | I.abid) : 1 + I.blgp;
  const uint32_t tag = uint32_t(fmt + 2) << 16 | modifiers;
  // The ways whose first word matches, four compares at a time; the tag and the whole span only for those.
  static_assert(ways % 4 == 0 && ways <= 32);
  const __m128i word0 = _mm_set1_epi32(int(file[0]));
  uint32_t candidates = 0;
  for (int x = 0; x < ways; x += 4)
    candidates |= uint32_t(_mm_movemask_ps(_mm_castsi128_ps(
                      _mm_cmpeq_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c.first + x)), word0))))
                  << x;
  for (; candidates; candidates &= candidates - 1) {
    const int x = std::countr_zero(candidates);
    if (c.tag[x] == tag && std::memcmp(c.regs[x], file, size_t(words) * 4) == 0) return c.el[x];
  }
  const int x = c.next;
  c.next = (x + 1) % ways;
  std::memcpy(c.regs[x], file, size_t(words) * 4);
  c.tag[x] = tag, c.first[x] = file[0];
  constexpr Ty t = IsA ? S.a : S.b;
  if constexpr ((t == Ty::bf16 || t == Ty::f16) && N % 8 == 0) {
    if (!s.permuted && active_simd().load(std::memory_order_relaxed) != MfmaSimd::sse41) {
      gather_avx2::gather_decode<S, IsA>(file, c.el[x]);
      return c.el[x];
    }
  }
  alignas(64) uint32_t raw[N];
  gather<S, IsA, !IsA>(w, I, s, raw);
  decode_all<t>(raw, fmt, c.el[x]);
  return c.el[x];
}

// The reference's operands: gathered through the layout table element by element and decoded one at a time by the
// scalar decoders, with no cache, so that the model test checks `decoded`'s gather and decode as well.
template <Shape S, bool IsA>
std::unique_ptr<Elems<S.blocks * S.m * S.k>> decoded_reference(const Wave& w, const Inst& I, const Setup& s) {
  constexpr int N = S.blocks * S.m * S.k;
  auto out = std::make_unique<Elems<N>>();
  std::vector<uint32_t> raw(N);
  gather<S, IsA, !IsA>(w, I, s, raw.data());
  decode_all<IsA ? S.a : S.b, N, true>(raw.data(), IsA ? s.fmt_a : s.fmt_b, *out);
  return out;
}

// Whether each row of C/D (block, i) is consecutive words of the register file (16x16 and 32x32 single-block forms):
// the fused arithmetic then reads C and writes D in place.
template <Shape S>
constexpr bool rows_in_place() {
  constexpr auto& T = out_table<S>;
  for (int r = 0; r < S.blocks * S.m; ++r)
    for (int j = 0; j < S.n; ++j)
      if (T.word[r * S.n + j] != T.word[r * S.n] + j) return false;
  return true;
}

template <Shape S>
inline void read_c(const Wave& w, const Inst& I, uint32_t* c) {
  constexpr auto& T = out_table<S>;
  if (I.op[3].kind == OpKind::vgpr) {
    const uint32_t* file = w.v[I.op[3].reg];
    for (int x = 0; x < T.count; ++x) c[x] = file[T.word[x]];
  } else {
    for (int x = 0; x < T.count; ++x) c[x] = uint32_t(I.op[3].imm);
  }
}

// MFMAs ignore EXEC: every lane of D is written.
template <Shape S>
inline void write_d(Wave& w, const Inst& I, const uint32_t* d) {
  constexpr auto& T = out_table<S>;
  uint32_t* file = w.v[I.op[0].reg];
  for (int x = 0; x < T.count; ++x) file[T.word[x]] = d[x];
}

// E8M0 scale of row/column `r`, k-block `kb`: a VGPR supplies byte `sel` of lane r + dim * kb; an SGPR or inline
// constant supplies bits 30:23 of its value (the hardware behaviour LLVM works around, LLVM PR 158117).
inline int scale_of(const Wave& w, const Operand& o, int sel, int dim, int r, int kb) {
  if (o.kind == OpKind::vgpr) return int(w.v[o.reg][r + dim * kb] >> (8 * sel) & 0xff);
  return int(read_s32(w, o) >> 23 & 0xff);
}

// Reference: the fused forms use fused_matmul_reference instead of fused_matmul (see mfma_reference_table).
template <Shape S, bool Reference = false>
void mfma(Wave& w, const Inst& I) {
  constexpr int M = S.m, N = S.n, K = S.k, B = S.blocks;
  if (!check_operands<S>(w, I)) return;
  Setup s;
  if constexpr (S.a == Ty::f8f6f4) {
    if (!f8f6f4_format(w, I, I.cbsz, s.fmt_a, s.bits_a) || !f8f6f4_format(w, I, I.blgp, s.fmt_b, s.bits_b)) return;
  } else {
    if (!lane_sources(w, I, s)) return;
    s.fmt_a = fp8_table_of(S.a, w.ctx->arch->fp8);
    s.fmt_b = fp8_table_of(S.b, w.ctx->arch->fp8);
  }

  alignas(64) uint32_t c[B * M * N], d[B * M * N];
  constexpr bool fused = S.a != Ty::i8 && S.a != Ty::f32;
  if constexpr (!fused) {
    alignas(64) uint32_t ra[B * M * K], rb[B * N * K];
    gather<S, true>(w, I, s, ra);
    gather<S, false>(w, I, s, rb);
    read_c<S>(w, I, c);
    if constexpr (S.a == Ty::i8) {
      alignas(64) int32_t a[B * M * K], bt[B * N * K];
      for (int x = 0; x < B * M * K; ++x) a[x] = int8_t(ra[x]);
      for (int x = 0; x < B * N * K; ++x) bt[x] = int8_t(rb[x]);
      for (int b = 0; b < B; ++b)
        for (int i = 0; i < M; ++i)
          for (int j = 0; j < N; ++j) {
            uint32_t acc = c[(b * M + i) * N + j];
            const int32_t* ar = a + (b * M + i) * K;
            const int32_t* br = bt + (b * N + j) * K;
            for (int k = 0; k < K; ++k) acc += uint32_t(ar[k] * br[k]);
            d[(b * M + i) * N + j] = acc;
          }
    } else {
      f32_chain(ra, rb, c, d, B * M, M, N, K);
    }
    write_d<S>(w, I, d);
  } else {
    constexpr bool fp8 = bits_of(S.a) == 8;
    constexpr int G = S.a == Ty::xf32 ? 4 : fp8 ? 16 : (K < 8 ? K : 8);
    static_assert(K % G == 0 && G <= 16);
    constexpr int kblocks = S.scaled ? K / 32 : 1;
    static_assert(B * M * K == B * N * K);
    // C is read only after the operand lookups below: fetching its lines now overlaps their misses with that work
    // (a GEMM wave's accumulators, tens of KiB, are mostly out of L1 by the time an MFMA comes back to them).
    if (I.op[3].kind == OpKind::vgpr)
      for (int x = 0; x < B * M * N; x += 16) _mm_prefetch(reinterpret_cast<const char*>(w.v[I.op[3].reg] + x), _MM_HINT_T0);
    std::unique_ptr<Elems<B * M * K>> a_ref, b_ref;
    if constexpr (Reference) a_ref = decoded_reference<S, true>(w, I, s), b_ref = decoded_reference<S, false>(w, I, s);
    const Elems<B * M * K>& a = Reference ? *a_ref : decoded<S, true>(w, I, s);
    const Elems<B * M * K>& bt = Reference ? *b_ref : decoded<S, false>(w, I, s);
    // Scale exponents (E8M0) per row of A / column of B and 32-k block; 255 is NaN.
    int sa[M * kblocks], sb[N * kblocks];
    for (int x = 0; x < M * kblocks; ++x) sa[x] = 127;
    for (int x = 0; x < N * kblocks; ++x) sb[x] = 127;
    if constexpr (S.scaled) {
      if (I.op[4].kind != OpKind::vgpr || I.op[5].kind != OpKind::vgpr)
        warn_hardware_defect(w, I, HardwareDefect::constant_mfma_scale,
                             "a scale given as an SGPR or inline constant is read from its bits 30:23, not 7:0, on "
                             "CDNA4 hardware (vgpu does the same): the constant scale 127 (1.0) that clang-21 emits "
                             "scales the result by 2^-127. Pass the scales in VGPRs (LLVM PR 158117)");
      const int sel_a = (I.op_sel & 1) | (I.op_sel_hi & 1) << 1, sel_b = (I.op_sel >> 1 & 1) | (I.op_sel_hi >> 1 & 1) << 1;
      for (int kb = 0; kb < kblocks; ++kb) {
        for (int i = 0; i < M; ++i) sa[i * kblocks + kb] = scale_of(w, I.op[4], sel_a, M, i, kb);
        for (int j = 0; j < N; ++j) sb[j * kblocks + kb] = scale_of(w, I.op[5], sel_b, N, j, kb);
      }
    }
    if constexpr (Reference) {
      read_c<S>(w, I, c);
      fused_matmul_reference<M, N, K, B, G, fp8, kblocks>(a, bt, c, d, sa, sb);
      write_d<S>(w, I, d);
      return;
    }
    // Rows of C and D: in place in the register file where the layout allows and D is C or apart from it (C's row i
    // is read whole before D's row i is written), otherwise through the dense arrays.
    constexpr auto& T = out_table<S>;
    constexpr int regs = B * M * N / kLanes;
    const int dreg = I.op[0].reg, creg = I.op[3].reg;
    const bool in_place = rows_in_place<S>() && I.op[3].kind == OpKind::vgpr &&
                          (dreg == creg || dreg + regs <= creg || creg + regs <= dreg);
    const uint32_t* c_row[B * M];
    uint32_t* d_row[B * M];
    if (in_place) {
      for (int r = 0; r < B * M; ++r) c_row[r] = w.v[creg] + T.word[r * N], d_row[r] = w.v[dreg] + T.word[r * N];
    } else {
      read_c<S>(w, I, c);
      for (int r = 0; r < B * M; ++r) c_row[r] = c + r * N, d_row[r] = d + r * N;
    }
    fused_matmul<M, N, K, B, G, fp8, kblocks>(a, bt, c_row, d_row, sa, sb);
    if (!in_place) write_d<S>(w, I, d);
  }
}

// Registers a form under its name(s), with its shape for the timing model; Reference: only the fused-model forms,
// with the reference arithmetic.
template <Shape S, bool Reference>
void add(IsaTable& t, std::string_view name, std::string_view alias = {}) {
  constexpr bool fused = S.a != Ty::i8 && S.a != Ty::f32;
  if constexpr (!Reference || fused) {
    const ImmType imm = S.a == Ty::i8 ? ImmType::b32 : ImmType::f32;
    constexpr InstShape shape = InstShape::mfma(S.m, S.n, S.k, S.blocks, S.a);
    t.add(name, mfma<S, Reference>, imm, 0, shape);
    if (!alias.empty()) t.add(alias, mfma<S, Reference>, imm, 0, shape);
  }
}

template <bool R>
void register_all(IsaTable& t) {
  using enum Ty;
  // f32 inputs (both archs). The second name is the pre-gfx940 spelling, accepted for hand-written assembly.
  add<Shape{32, 32, 1, 2, f32, f32}, R>(t, "v_mfma_f32_32x32x1_2b_f32", "v_mfma_f32_32x32x1f32");
  add<Shape{16, 16, 1, 4, f32, f32}, R>(t, "v_mfma_f32_16x16x1_4b_f32", "v_mfma_f32_16x16x1f32");
  add<Shape{4, 4, 1, 16, f32, f32}, R>(t, "v_mfma_f32_4x4x1_16b_f32", "v_mfma_f32_4x4x1f32");
  add<Shape{32, 32, 2, 1, f32, f32}, R>(t, "v_mfma_f32_32x32x2_f32", "v_mfma_f32_32x32x2f32");
  add<Shape{16, 16, 4, 1, f32, f32}, R>(t, "v_mfma_f32_16x16x4_f32", "v_mfma_f32_16x16x4f32");
  // f16 and bf16 (the bf16 forms are the "_1k" ones of gfx90a).
  add<Shape{32, 32, 4, 2, f16, f16}, R>(t, "v_mfma_f32_32x32x4_2b_f16", "v_mfma_f32_32x32x4f16");
  add<Shape{16, 16, 4, 4, f16, f16}, R>(t, "v_mfma_f32_16x16x4_4b_f16", "v_mfma_f32_16x16x4f16");
  add<Shape{4, 4, 4, 16, f16, f16}, R>(t, "v_mfma_f32_4x4x4_16b_f16", "v_mfma_f32_4x4x4f16");
  add<Shape{32, 32, 8, 1, f16, f16}, R>(t, "v_mfma_f32_32x32x8_f16", "v_mfma_f32_32x32x8f16");
  add<Shape{16, 16, 16, 1, f16, f16}, R>(t, "v_mfma_f32_16x16x16_f16", "v_mfma_f32_16x16x16f16");
  add<Shape{32, 32, 4, 2, bf16, bf16}, R>(t, "v_mfma_f32_32x32x4_2b_bf16", "v_mfma_f32_32x32x4bf16_1k");
  add<Shape{16, 16, 4, 4, bf16, bf16}, R>(t, "v_mfma_f32_16x16x4_4b_bf16", "v_mfma_f32_16x16x4bf16_1k");
  add<Shape{4, 4, 4, 16, bf16, bf16}, R>(t, "v_mfma_f32_4x4x4_16b_bf16", "v_mfma_f32_4x4x4bf16_1k");
  add<Shape{32, 32, 8, 1, bf16, bf16}, R>(t, "v_mfma_f32_32x32x8_bf16", "v_mfma_f32_32x32x8bf16_1k");
  add<Shape{16, 16, 16, 1, bf16, bf16}, R>(t, "v_mfma_f32_16x16x16_bf16", "v_mfma_f32_16x16x16bf16_1k");
  // gfx90a: bf16 with two elements per register (the forms the "_1k" ones followed; half their rate).
  add<Shape{32, 32, 2, 2, bf16, bf16}, R>(t, "v_mfma_f32_32x32x2bf16");
  add<Shape{16, 16, 2, 4, bf16, bf16}, R>(t, "v_mfma_f32_16x16x2bf16");
  add<Shape{4, 4, 2, 16, bf16, bf16}, R>(t, "v_mfma_f32_4x4x2bf16");
  add<Shape{32, 32, 4, 1, bf16, bf16}, R>(t, "v_mfma_f32_32x32x4bf16");
  add<Shape{16, 16, 8, 1, bf16, bf16}, R>(t, "v_mfma_f32_16x16x8bf16");
  // gfx950: twice the k per instruction.
  add<Shape{16, 16, 32, 1, f16, f16}, R>(t, "v_mfma_f32_16x16x32_f16");
  add<Shape{32, 32, 16, 1, f16, f16}, R>(t, "v_mfma_f32_32x32x16_f16");
  add<Shape{16, 16, 32, 1, bf16, bf16}, R>(t, "v_mfma_f32_16x16x32_bf16");
  add<Shape{32, 32, 16, 1, bf16, bf16}, R>(t, "v_mfma_f32_32x32x16_bf16");
  // gfx942: xf32 (f32 inputs truncated to 10 mantissa bits).
  add<Shape{16, 16, 8, 1, xf32, xf32}, R>(t, "v_mfma_f32_16x16x8_xf32", "v_mfma_f32_16x16x8xf32");
  add<Shape{32, 32, 4, 1, xf32, xf32}, R>(t, "v_mfma_f32_32x32x4_xf32", "v_mfma_f32_32x32x4xf32");
  // fp8/bf8: FNUZ formats on gfx942, OCP formats on gfx950.
  add<Shape{16, 16, 32, 1, fp8, fp8}, R>(t, "v_mfma_f32_16x16x32_fp8_fp8");
  add<Shape{16, 16, 32, 1, fp8, bf8}, R>(t, "v_mfma_f32_16x16x32_fp8_bf8");
  add<Shape{16, 16, 32, 1, bf8, fp8}, R>(t, "v_mfma_f32_16x16x32_bf8_fp8");
  add<Shape{16, 16, 32, 1, bf8, bf8}, R>(t, "v_mfma_f32_16x16x32_bf8_bf8");
  add<Shape{32, 32, 16, 1, fp8, fp8}, R>(t, "v_mfma_f32_32x32x16_fp8_fp8");
  add<Shape{32, 32, 16, 1, fp8, bf8}, R>(t, "v_mfma_f32_32x32x16_fp8_bf8");
  add<Shape{32, 32, 16, 1, bf8, fp8}, R>(t, "v_mfma_f32_32x32x16_bf8_fp8");
  add<Shape{32, 32, 16, 1, bf8, bf8}, R>(t, "v_mfma_f32_32x32x16_bf8_bf8");
  // gfx950: f8f6f4 with E8M0 block scales (scaled form) or scale 1.0 (plain form); fp8/bf8/fp6/bf6/fp4 operands.
  add<Shape{16, 16, 128, 1, f8f6f4, f8f6f4, true}, R>(t, "v_mfma_scale_f32_16x16x128_f8f6f4");
  add<Shape{32, 32, 64, 1, f8f6f4, f8f6f4, true}, R>(t, "v_mfma_scale_f32_32x32x64_f8f6f4");
  add<Shape{16, 16, 128, 1, f8f6f4, f8f6f4}, R>(t, "v_mfma_f32_16x16x128_f8f6f4");
  add<Shape{32, 32, 64, 1, f8f6f4, f8f6f4}, R>(t, "v_mfma_f32_32x32x64_f8f6f4");
  // i8 inputs, i32 accumulation (wrapping).
  add<Shape{32, 32, 4, 2, i8, i8}, R>(t, "v_mfma_i32_32x32x4_2b_i8", "v_mfma_i32_32x32x4i8");
  add<Shape{16, 16, 4, 4, i8, i8}, R>(t, "v_mfma_i32_16x16x4_4b_i8", "v_mfma_i32_16x16x4i8");
  add<Shape{4, 4, 4, 16, i8, i8}, R>(t, "v_mfma_i32_4x4x4_16b_i8", "v_mfma_i32_4x4x4i8");
  add<Shape{32, 32, 16, 1, i8, i8}, R>(t, "v_mfma_i32_32x32x16_i8", "v_mfma_i32_32x32x16i8");
  add<Shape{16, 16, 32, 1, i8, i8}, R>(t, "v_mfma_i32_16x16x32_i8", "v_mfma_i32_16x16x32i8");
  add<Shape{32, 32, 8, 1, i8, i8}, R>(t, "v_mfma_i32_32x32x8i8");  // gfx90a
  add<Shape{16, 16, 16, 1, i8, i8}, R>(t, "v_mfma_i32_16x16x16i8");  // gfx90a
  add<Shape{32, 32, 32, 1, i8, i8}, R>(t, "v_mfma_i32_32x32x32_i8");
  add<Shape{16, 16, 64, 1, i8, i8}, R>(t, "v_mfma_i32_16x16x64_i8");
}

}  // namespace

void register_mfma(IsaTable& t) { register_all<false>(t); }

const char* mfma_simd_name(MfmaSimd s) {
  return s == MfmaSimd::avx512 ? "avx512" : s == MfmaSimd::avx2 ? "avx2" : "sse4.1";
}
std::vector<MfmaSimd> mfma_simd_supported() {
  std::vector<MfmaSimd> out;
  for (MfmaSimd s : {MfmaSimd::sse41, MfmaSimd::avx2, MfmaSimd::avx512})
    if (cpu_has(s)) out.push_back(s);
  return out;
}
MfmaSimd mfma_simd() { return active_simd().load(); }
const char* mfma_arithmetic() { return mfma_simd_name(mfma_simd()); }
void set_mfma_simd(MfmaSimd s) { active_simd().store(s); }

int mfma_decode_mismatches() {
  int bad = 0;
  auto check = [&]<int EB, int MB>(Decoded (*scalar)(uint32_t)) {
    for (uint32_t h0 = 0; h0 < 65536; h0 += 4) {
      const uint32_t raw[4] = {h0, h0 + 1, h0 + 2, h0 + 3};
      Elems<4> v;
      const int special = decode16x4<EB, MB>(raw, 0, v);
      for (int l = 0; l < 4; ++l) {
        const Decoded d = scalar(raw[l]);
        if ((special >> l & 1) != d.special) ++bad;
        else if (!d.special && (std::bit_cast<uint32_t>(v.v[l]) != std::bit_cast<uint32_t>(d.f) || v.m[l] != d.m ||
                                v.e[l] != d.e || v.q[l] != d.q))
          ++bad;
      }
    }
  };
  check.operator()<5, 10>(decode_f16);
  check.operator()<8, 7>(decode_bf16);
  // The AVX2 gather's decoder, every field, against the scalar decoders (codes in the high half too: it must
  // ignore them).
  auto check8 = [&]<Ty t>(Decoded (*scalar)(uint32_t)) {
    constexpr int N = 1024;
    std::vector<uint32_t> raw(N);
    auto out = std::make_unique<Elems<N>>();
    for (uint32_t base = 0; base < 65536; base += N) {
      for (int x = 0; x < N; ++x) raw[x] = (base + uint32_t(x)) | (uint32_t(x) * 0x9e37u) << 16;
      gather_avx2::decode_codes<t>(raw.data(), *out);
      bool any = false;
      for (int x = 0; x < N; ++x) {
        const Decoded d = scalar(raw[x] & 0xffff);
        const Elems<N>& v = *out;
        any |= d.special;
        if (std::bit_cast<uint32_t>(v.v[x]) != std::bit_cast<uint32_t>(d.f) || v.m[x] != d.m || v.e[x] != d.e ||
            v.q[x] != d.q || v.special[x] != d.special || v.e16[x] != d.e ||
            v.e_pair[x] != int32_t(uint32_t(uint16_t(d.e)) * 0x10001u))
          ++bad;
      }
      if (out->any_special != any) ++bad;
    }
  };
  if (cpu_has(MfmaSimd::avx2)) {
    check8.operator()<Ty::f16>(decode_f16);
    check8.operator()<Ty::bf16>(decode_bf16);
  }
  return bad;
}

const IsaTable& mfma_reference_table() {
  static const IsaTable table = [] {
    IsaTable t;
    register_all<true>(t);
    return t;
  }();
  return table;
}

}  // namespace vgpu
