// Bit-exactness guard of vgpu's MFMA arithmetic: every fused-model MFMA (bf16, f16, xf32, fp8/bf8, f8f6f4) as executed
// (the vectorized fast path in exec_mfma.cpp) against the literal reference model (one element and group at a time,
// integer arithmetic), on random register images built to reach every branch of the model: subnormals, zeros, infinities,
// NaNs, exponent spreads from none to the whole format, cancellation, overflow of products and sums, C far above and far
// below the products, broadcast modifiers, inline-constant C and (gfx950) extreme E8M0 scales. D must match bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "isa/isa.h"
#include "wave.h"

namespace vgpu {
namespace {

struct Fmt {
  int bits, exp_bits, man_bits;  // element width and its exponent / mantissa fields
};
constexpr Fmt kF32{32, 8, 23}, kBf16{16, 8, 7}, kF16{16, 5, 10}, kE4m3{8, 4, 3}, kE5m2{8, 5, 2};
constexpr Fmt kE2m3{6, 2, 3}, kE3m2{6, 3, 2}, kE2m1{4, 2, 1};
constexpr Fmt kF8f6f4[5] = {kE4m3, kE5m2, kE2m3, kE3m2, kE2m1};

// The operand formats from the mnemonic (f8f6f4: from cbsz/blgp, 0 e4m3, 1 e5m2, 2 e2m3, 3 e3m2, 4 e2m1).
void formats_of(const std::string& name, int cbsz, int blgp, Fmt& a, Fmt& b) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("xf32")) a = b = kF32;
  else if (has("bf16")) a = b = kBf16;
  else if (has("f16")) a = b = kF16;
  else if (has("f8f6f4")) a = kF8f6f4[cbsz], b = kF8f6f4[blgp];
  else {
    a = has("_bf8_") ? kE5m2 : kE4m3;
    b = name.ends_with("bf8") ? kE5m2 : kE4m3;
  }
}

// How the elements of one register image are drawn. `center` and `spread` pick the exponent field around a random
// point (spread 0: all elements in one binade), `special` is the chance of a zero / inf / NaN / extreme code.
struct Recipe {
  int center, spread;
  double special;
  bool raw;             // uniform random bits (every code equally likely)
  bool finite = false;  // the special codes only zeros, subnormals and the smallest normal (no inf/NaN: the
                        // whole-block fast path then runs, and its exponent range bounds are met)
};

uint32_t element(std::mt19937_64& rng, const Fmt& f, const Recipe& r) {
  const uint32_t mask = f.bits == 32 ? ~0u : (1u << f.bits) - 1, emax = (1u << f.exp_bits) - 1;
  if (r.raw) return uint32_t(rng()) & mask;
  const uint32_t sign = uint32_t(rng() & 1) << (f.bits - 1);
  uint32_t man = uint32_t(rng()) & ((1u << f.man_bits) - 1);
  if (std::uniform_real_distribution<>(0, 1)(rng) < r.special) {
    switch (r.finite ? (rng() % 2 ? 0 : 3 + 2 * (rng() % 2)) : rng() % 6) {
      case 0: return sign;                                          // +-0
      case 1: return sign | emax << f.man_bits;                     // inf (or NaN / largest value in fp8)
      case 2: return sign | emax << f.man_bits | 1;                 // NaN (or a large finite fp8)
      case 3: return sign | man;                                    // subnormal
      case 4: return sign | (emax - 1) << f.man_bits | ((1u << f.man_bits) - 1);  // largest finite
      default: return sign | 1u << f.man_bits;                      // smallest normal
    }
  }
  if (rng() % 4 == 0) man = 0;  // powers of two: exact cancellations and ties
  const int e = r.center + int(rng() % uint64_t(2 * r.spread + 1)) - r.spread;
  const uint32_t ex = uint32_t(std::clamp(e, 0, int(emax) - (r.finite ? 1 : 0)));
  return sign | ex << f.man_bits | man;
}

// Fills `regs` registers from `first` with elements of format f, packed low element first into each lane's bit
// string over the registers (6-bit elements straddle registers).
void fill(std::vector<uint32_t>& file, int first, int regs, std::mt19937_64& rng, const Fmt& f, const Recipe& r) {
  for (int l = 0; l < kLanes; ++l)
    for (int r0 = 0; r0 < regs; ++r0) file[(first + r0) * kLanes + l] = 0;
  for (int l = 0; l < kLanes; ++l)
    for (int bit = 0; bit + f.bits <= regs * 32; bit += f.bits) {
      const uint64_t e = f.bits == 32 ? element(rng, f, r) : element(rng, f, r) & ((1u << f.bits) - 1);
      const int reg = bit / 32, sh = bit % 32;
      file[(first + reg) * kLanes + l] |= uint32_t(e << sh);
      if (sh + f.bits > 32) file[(first + reg + 1) * kLanes + l] |= uint32_t(e >> (32 - sh));
    }
}

Recipe random_recipe(std::mt19937_64& rng, const Fmt& f) {
  const int emax = (1 << f.exp_bits) - 1;
  Recipe r{};
  switch (rng() % 8) {
    case 6: r = {int(rng() % (emax + 1)), int(1 + rng() % 12), 0.03, false, true}; break;  // a few binades, finite
    case 7: r = {emax / 2, emax / 2 + 1, 0.03, false, true}; break;                       // whole range, finite
    case 0: r.raw = true; break;
    case 1: r = {int(rng() % (emax + 1)), 0, 0.0, false}; break;                            // one binade
    case 2: r = {int(rng() % (emax + 1)), int(1 + rng() % 12), 0.02, false}; break;         // a few binades
    case 3: r = {emax / 2, emax / 2 + 1, 0.1, false}; break;                                // the whole range
    case 4: r = {int(rng() % 3), int(rng() % 4), 0.05, false}; break;                       // subnormals and tiny
    default: r = {emax - 1 - int(rng() % 3), int(rng() % 4), 0.05, false}; break;           // near overflow
  }
  return r;
}

// f32 C values: mostly around a random binade, some of every kind; a quarter of them powers of two (the bounds of
// the fast path's ranges).
uint32_t c_value(std::mt19937_64& rng, int center, int spread) {
  const uint32_t sign = uint32_t(rng() & 1) << 31, man = rng() % 4 == 0 ? 0 : uint32_t(rng()) & 0x7fffff;
  switch (rng() % 16) {
    case 0: return sign;
    case 1: return sign | 0x7f800000;
    case 2: return sign | 0x7fc00000 | (man & 0xffff);
    case 3: return sign | man;  // subnormal
    case 4: return uint32_t(rng());
    default: {
      const int e = std::clamp(center + int(rng() % uint64_t(2 * spread + 1)) - spread, 0, 254);
      return sign | uint32_t(e) << 23 | man;
    }
  }
}

struct Case {
  int a_regs, b_regs, c_regs;
  bool scaled;
};

// Register counts from the mnemonic's shape: A and B hold dim * k elements of `bits` over 64 lanes, C/D M * N * blocks.
Case case_of(const std::string& name, const Fmt& fa, const Fmt& fb) {
  int m = 0, n = 0, k = 0, blocks = 1;
  const size_t p = name.find("f32_") + 4;
  std::sscanf(name.c_str() + p, "%dx%dx%d", &m, &n, &k);
  if (const size_t q = name.find("b_", p); q != std::string::npos && name[q - 2] == '_') blocks = name[q - 1] - '0';
  if (name.find("_16b_") != std::string::npos) blocks = 16;
  // gfx90a's bf16 forms with k = 2 (v_mfma_f32_32x32x2bf16...) are the block forms, 64 / M blocks; the name says not.
  if (name.ends_with("bf16") && k == 2) blocks = 64 / m;
  const int elems_a = m * k * blocks, elems_c = m * n * blocks;
  return {std::max(1, elems_a * fa.bits / 32 / kLanes), std::max(1, elems_a * fb.bits / 32 / kLanes),
          elems_c / kLanes, name.find("mfma_scale") != std::string::npos};
}

constexpr int kA = 0, kB = 16, kC = 32, kDFast = 64, kDRef = 96, kScaleA = 128, kScaleB = 129, kRegs = 130;

struct Machine {
  Program prog;
  DispatchCtx ctx;
  Workgroup wg;
  Wave w;
  std::vector<uint32_t> file = std::vector<uint32_t>(size_t(kRegs) * kLanes);
  explicit Machine(Arch arch) {
    prog.arch = arch;
    prog.texts = {"mfma"};
    ctx.prog = &prog;
    ctx.arch = &arch_info(arch);
    wg.ctx = &ctx;
    w.ctx = &ctx;
    w.wg = &wg;
    w.v = reinterpret_cast<uint32_t(*)[kLanes]>(file.data());
  }
};

// Runs `trials` random cases of one instruction on one arch; returns the number of mismatching D elements (the first
// few are printed).
int check(const std::string& name, Arch arch, int trials, uint64_t seed) {
  const OpInfo* fast = isa_table().find(name);
  const OpInfo* ref = mfma_reference_table().find(name);
  EXPECT_TRUE(fast && ref) << name;
  if (!fast || !ref) return 1;
  Machine mc(arch);
  std::mt19937_64 rng(seed);
  int bad = 0;
  for (int t = 0; t < trials; ++t) {
    Inst I;
    I.name = name.c_str();
    const bool f8f6f4 = name.find("f8f6f4") != std::string::npos;
    if (f8f6f4) {
      I.cbsz = uint8_t(rng() % 5), I.blgp = uint8_t(rng() % 5);
    } else if (rng() % 4 == 0) {  // broadcast modifiers now and then
      I.cbsz = uint8_t(rng() % 3);
      I.abid = uint8_t(rng() % (1u << I.cbsz));
      I.blgp = uint8_t(rng() % 8);
    }
    Fmt fa, fb;
    formats_of(name, I.cbsz, I.blgp, fa, fb);
    const Case cs = case_of(name, fa, fb);
    I.nops = cs.scaled ? 6 : 4;
    for (int o = 0; o < I.nops; ++o) I.op[o].kind = OpKind::vgpr;
    I.op[1].reg = kA, I.op[2].reg = kB, I.op[3].reg = kC;
    I.op[1].width = uint8_t(cs.a_regs), I.op[2].width = uint8_t(cs.b_regs), I.op[3].width = uint8_t(cs.c_regs);
    const Recipe ra = random_recipe(rng, fa), rb = rng() % 3 ? random_recipe(rng, fb) : ra;
    fill(mc.file, kA, cs.a_regs, rng, fa, ra);
    fill(mc.file, kB, cs.b_regs, rng, fb, rb);
    // C around the products' binade (so that both floors of the model matter), or anywhere.
    const int bias_a = (1 << (fa.exp_bits - 1)) - 1, bias_b = (1 << (fb.exp_bits - 1)) - 1;
    const int prod = ra.raw ? 127 : std::clamp(127 + ra.center - bias_a + rb.center - bias_b, 0, 254);
    const int c_center = rng() % 3 ? prod + int(rng() % 61) - 30 : int(rng() % 255), c_spread = int(rng() % 8);
    for (int x = kC * kLanes; x < (kC + cs.c_regs) * kLanes; ++x) mc.file[x] = c_value(rng, c_center, c_spread);
    if (rng() % 8 == 0) {  // C as an inline constant
      I.op[3] = Operand{};
      I.op[3].kind = OpKind::imm;
      const uint32_t consts[] = {0, 0x3f800000, 0xbf000000, 0x40800000};
      I.op[3].imm = consts[rng() % 4];
    }
    if (cs.scaled) {
      I.op[4].reg = kScaleA, I.op[5].reg = kScaleB;
      I.op_sel = uint8_t(rng() % 4), I.op_sel_hi = uint8_t(rng() % 4);
      const int mode = int(rng() % 3);  // near 1.0, anywhere (NaN 255 included), or extreme
      for (int x = kScaleA * kLanes; x < (kScaleB + 1) * kLanes; ++x) {
        uint32_t w = 0;
        for (int byte = 0; byte < 4; ++byte) {
          uint32_t s = mode == 0 ? 120 + uint32_t(rng() % 15) : mode == 1 ? uint32_t(rng() % 256)
                                                                          : (rng() % 2 ? uint32_t(rng() % 8) : 247 + uint32_t(rng() % 9));
          w |= s << (8 * byte);
        }
        mc.file[x] = w;
      }
    }
    mc.w.state = WaveState::running;
    I.op[0].reg = kDFast, I.op[0].width = uint8_t(cs.c_regs);
    fast->fn(mc.w, I);
    I.op[0].reg = kDRef;
    ref->fn(mc.w, I);
    EXPECT_EQ(mc.w.state, WaveState::running) << name << ": faulted";
    for (int x = 0; x < cs.c_regs * kLanes; ++x) {
      const uint32_t got = mc.file[kDFast * kLanes + x], want = mc.file[kDRef * kLanes + x];
      if (got != want && bad++ < 5)
        ADD_FAILURE() << name << " " << arch_info(arch).name << " trial " << t << " reg " << x / kLanes
                      << " lane " << x % kLanes << ": fast 0x" << std::hex << got << ", reference 0x" << want;
    }
  }
  return bad;
}

// The mnemonics of a table's f32/i32-accumulating MFMAs, one per instruction: where a gfx940+ name ('_' after the shape)
// and a pre-gfx940 one name the same function, the gfx940+ name; gfx90a-only forms under their own name.
std::vector<std::string> canonical_mfmas(const IsaTable& table) {
  std::map<ExecFn, std::string> by_function;
  table.for_each([&](const OpInfo& op) {
    if (!op.name.starts_with("v_mfma_f32_") && !op.name.starts_with("v_mfma_i32_") &&
        !op.name.starts_with("v_mfma_scale_f32_"))
      return;
    size_t p = op.name.find("32_") + 3;
    while (p < op.name.size() && (std::isdigit(op.name[p]) || op.name[p] == 'x')) ++p;
    const bool new_style = p < op.name.size() && op.name[p] == '_';
    auto [it, fresh] = by_function.emplace(op.fn, std::string(op.name));
    if (!fresh && new_style) it->second = op.name;
  });
  std::vector<std::string> names;
  for (auto& [fn, name] : by_function) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

// The vector operand decoders (SSE4.1 four at a time, and the AVX2 gather's eight at a time with every field) against
// the scalar one, exhaustively. The reference gathers and decodes on its own, lane by lane with the scalar decoders.
TEST(MfmaModel, VectorDecoderMatchesScalarOnEveryF16AndBf16Code) { EXPECT_EQ(vgpu::mfma_decode_mismatches(), 0); }

TEST(MfmaModel, ReferenceCoversEveryFusedForm) {
  // Every MFMA of the instruction table except the f32-input and i8 ones (not fused: fma chain, integer sum).
  std::vector<std::string> want;
  for (const auto& n : canonical_mfmas(isa_table()))
    if (!n.ends_with("i8") && !(n.ends_with("_f32") && n.find("xf32") == std::string::npos)) want.push_back(n);
  EXPECT_EQ(canonical_mfmas(mfma_reference_table()), want);
  EXPECT_GE(want.size(), 20u);
  // gfx90a's bf16 forms with two elements per register are fused forms like the others.
  for (const char* n : {"v_mfma_f32_32x32x2bf16", "v_mfma_f32_16x16x2bf16", "v_mfma_f32_4x4x2bf16",
                        "v_mfma_f32_32x32x4bf16", "v_mfma_f32_16x16x8bf16"})
    EXPECT_NE(std::find(want.begin(), want.end(), n), want.end()) << n;
}

// Runs the whole-block path's final step on products all a * b (bf16 bits, A and B filled with them; trials alternate
// a_neg and a_pos, or with `cancel` a_pos and a word of a_pos and a_neg, whose products cancel in pairs of k so that
// the truncated sum is 0) against C from `c_of`, for the bf16 forms that take the path and every instruction set the
// CPU has; D must match the reference bit for bit.
template <class CValue>
void final_step_case(const char* what, uint32_t a_neg, uint32_t a_pos, uint32_t b, bool cancel, CValue c_of) {
  const MfmaSimd before = mfma_simd();
  for (MfmaSimd path : mfma_simd_supported()) {
    set_mfma_simd(path);
    for (const char* name : {"v_mfma_f32_16x16x16_bf16", "v_mfma_f32_16x16x32_bf16", "v_mfma_f32_32x32x8_bf16"}) {
      const OpInfo* fast = isa_table().find(name);
      const OpInfo* ref = mfma_reference_table().find(name);
      ASSERT_TRUE(fast && ref) << name;
      const Case cs = case_of(name, kBf16, kBf16);
      Machine mc(Arch::gfx950);
      std::mt19937_64 rng(7);
      for (int trial = 0; trial < 40; ++trial) {
        const uint32_t a_word = trial % 2 == 0 ? a_pos | a_pos << 16 : cancel ? a_pos | a_neg << 16 : a_neg | a_neg << 16;
        for (int x = kA * kLanes; x < (kA + cs.a_regs) * kLanes; ++x) mc.file[x] = a_word;
        for (int x = kB * kLanes; x < (kB + cs.b_regs) * kLanes; ++x) mc.file[x] = b | b << 16;
        for (int x = kC * kLanes; x < (kC + cs.c_regs) * kLanes; ++x) mc.file[x] = c_of(rng);
        Inst I;
        I.name = name;
        I.nops = 4;
        for (int o = 0; o < 4; ++o) I.op[o].kind = OpKind::vgpr;
        I.op[1].reg = kA, I.op[2].reg = kB, I.op[3].reg = kC;
        I.op[1].width = I.op[2].width = uint8_t(cs.a_regs), I.op[3].width = uint8_t(cs.c_regs);
        mc.w.state = WaveState::running;
        I.op[0].reg = kDFast, I.op[0].width = uint8_t(cs.c_regs);
        fast->fn(mc.w, I);
        I.op[0].reg = kDRef;
        ref->fn(mc.w, I);
        int bad = 0;
        for (int x = 0; x < cs.c_regs * kLanes; ++x)
          bad += mc.file[kDFast * kLanes + x] != mc.file[kDRef * kLanes + x];
        EXPECT_EQ(bad, 0) << what << ": " << name << " " << mfma_simd_name(path) << " trial " << trial;
      }
    }
  }
  set_mfma_simd(before);
}

// The bounds of the int32 final step of the whole-block path: every product 1.5 * 1.5 (E = 0, so the truncated sum t
// is 8 * 2.25 * 2^24, about 2^28.2) and C just below and above 2^6 and 2^7 (C * 2^24 around 2^30 and 2^31), with
// both signs: floor(C * u) + t overflows int32 in some lanes and not in others, and some vectors mix lanes inside and
// outside the step's range.
TEST(MfmaModel, Int32FinalStepBounds) {
  final_step_case("C near 2^6 and 2^7", 0xbfc0u, 0x3fc0u, 0x3fc0u, false, [](std::mt19937_64& rng) {
    const uint32_t sign = uint32_t(rng() & 1) << 31, binade = 127 + 5 + uint32_t(rng() % 3);  // 2^5 .. 2^7
    const uint32_t man = rng() % 2 ? 0x7fffff - uint32_t(rng() % 0x40000) : uint32_t(rng() % 0x40000);
    return sign | binade << 23 | man;
  });
}

// The int32 step's low end: products near 2^121 (1.5 * 2^60 squared, E = 120, u = 2^-96) against C from the
// subnormals up to 2^-20, both signs, and zeros: C * u is exact, subnormal (inexact, floor still 0 or -1) or
// underflows to 0 (a negative C's floor -1 lost: such vectors take the other step), and some vectors mix them. Half
// the trials have products that cancel (a truncated sum of 0), so that C's floor alone decides D.
TEST(MfmaModel, Int32FinalStepTinyC) {
  final_step_case("C far below the products", 0xddc0u, 0x5dc0u, 0x5dc0u, true, [](std::mt19937_64& rng) {
    const uint32_t sign = uint32_t(rng() & 1) << 31;
    switch (rng() % 6) {
      case 0: return sign;                                              // +-0
      case 1: return sign | uint32_t(1 + rng() % 0x7fffff);            // subnormal
      default: return sign | uint32_t(1 + rng() % 107) << 23 | uint32_t(rng() % 0x800000);  // 2^-126 .. 2^-20
    }
  });
}

// Per arch (fp8/bf8 are FNUZ on gfx942, OCP on gfx950; the other forms do not depend on it, so gfx90a, which has no
// fp8, adds nothing: its own bf16 forms run under both) and per instruction set
// the arithmetic is compiled for: each one this CPU has runs, the others are skipped (and say so).
class FastMatchesReference : public testing::TestWithParam<std::tuple<Arch, MfmaSimd>> {};

TEST_P(FastMatchesReference, EveryFusedForm) {
  const auto [arch_id, path] = GetParam();
  const std::vector<MfmaSimd> supported = mfma_simd_supported();
  if (std::find(supported.begin(), supported.end(), path) == supported.end())
    GTEST_SKIP() << "this CPU lacks " << mfma_simd_name(path);
  const MfmaSimd before = mfma_simd();
  set_mfma_simd(path);
  ASSERT_EQ(mfma_simd(), path) << "the arithmetic did not switch to " << mfma_simd_name(path);
  const ArchInfo& arch = arch_info(arch_id);
  uint64_t seed = arch.version_major * 100 + arch.version_minor * 10 + arch.version_stepping;  // 942, 950
  int total = 0;
  for (const auto& name : canonical_mfmas(mfma_reference_table())) {
    const bool big = name.find("f8f6f4") != std::string::npos || name.find("32x32x16") != std::string::npos;
    total += check(name, arch_id, big ? 150 : 400, ++seed);
  }
  set_mfma_simd(before);
  EXPECT_EQ(total, 0);
}

INSTANTIATE_TEST_SUITE_P(ArchSimd, FastMatchesReference,
                         testing::Combine(testing::Values(Arch::gfx942, Arch::gfx950),
                                          testing::Values(MfmaSimd::sse41, MfmaSimd::avx2, MfmaSimd::avx512)),
                         [](const auto& info) {
                           std::string path = mfma_simd_name(std::get<1>(info.param));
                           path.erase(std::remove(path.begin(), path.end(), '.'), path.end());
                           return std::string(arch_info(std::get<0>(info.param)).name) + "_" + path;
                         });

}  // namespace
}  // namespace vgpu
