// Packed math (VOP3P) instruction by instruction: each case is one inline-asm instruction with a chosen set of
// op_sel / op_sel_hi / neg_lo / neg_hi / clamp modifiers or inline constants, checked against a host model of the
// ISA's operand-half selection written here (exact arithmetic, one rounding). Then the same operations as clang
// emits them from ordinary code and builtins.
#include <hip/hip_runtime.h>

#include <functional>
#include <random>

#include "cvt_ref.h"

using namespace cvt_ref;

namespace {

constexpr int kBlock = 256;
constexpr int kN = 1500;
int blocks(size_t n) { return int((n + kBlock - 1) / kBlock); }

// One instruction: %0 is D (read-write, starting from d[i]), %1..%3 are S0..S2.
#define HK_CASE(NAME, ASM)                                                                                    \
  __global__ void NAME(const unsigned* a, const unsigned* b, const unsigned* c, const unsigned* d, unsigned* out, \
                       int n) {                                                                               \
    const int i = blockIdx.x * blockDim.x + threadIdx.x;                                                      \
    if (i >= n) return;                                                                                       \
    unsigned r = d[i];                                                                                        \
    asm volatile(ASM : "+v"(r) : "v"(a[i]), "v"(b[i]), "v"(c[i]));                                           \
    out[i] = r;                                                                                               \
  }
// The same for gfx950-only instructions (an empty kernel elsewhere; the host does not run it there).
#if defined(__gfx950__) || !defined(__HIP_DEVICE_COMPILE__)
#define HK_CASE950(NAME, ASM) HK_CASE(NAME, ASM)
#else
#define HK_CASE950(NAME, ASM) \
  __global__ void NAME(const unsigned*, const unsigned*, const unsigned*, const unsigned*, unsigned*, int) {}
#endif

// f16
HK_CASE(pk_fma, "v_pk_fma_f16 %0, %1, %2, %3")
HK_CASE(pk_fma_sel, "v_pk_fma_f16 %0, %1, %2, %3 op_sel:[1,0,1] op_sel_hi:[0,1,1] neg_lo:[1,0,0] neg_hi:[0,1,1]")
HK_CASE(pk_fma_clamp, "v_pk_fma_f16 %0, %1, %2, %3 op_sel:[0,1,0] op_sel_hi:[1,0,0] clamp")
HK_CASE(pk_add_sel, "v_pk_add_f16 %0, %1, %2 op_sel:[1,1] op_sel_hi:[0,0]")
HK_CASE(pk_add_neg, "v_pk_add_f16 %0, %1, %2 neg_lo:[0,1] neg_hi:[1,1]")
HK_CASE(pk_mul_neg, "v_pk_mul_f16 %0, %1, %2 neg_lo:[1,1] neg_hi:[1,0]")
HK_CASE(pk_min, "v_pk_min_f16 %0, %1, %2")
HK_CASE(pk_max_sel, "v_pk_max_f16 %0, %1, %2 op_sel:[0,1] op_sel_hi:[1,0]")
HK_CASE(pk_fmac, "v_pk_fmac_f16 %0, %1, %2")
HK_CASE(pk_mul_const, "v_pk_mul_f16 %0, %1, 2.0")
HK_CASE(pk_mul_const_lo, "v_pk_mul_f16 %0, %1, 2.0 op_sel_hi:[1,0]")
HK_CASE(pk_fma_const, "v_pk_fma_f16 %0, %1, -1.0, 0.5 op_sel_hi:[1,0,0]")
HK_CASE950(pk_minimum3, "v_pk_minimum3_f16 %0, %1, %2, %3")
HK_CASE950(pk_maximum3, "v_pk_maximum3_f16 %0, %1, %2, %3 op_sel:[1,0,0] op_sel_hi:[0,1,1]")
// 16-bit integers
HK_CASE(pk_add_u16, "v_pk_add_u16 %0, %1, %2")
HK_CASE(pk_add_u16_clamp, "v_pk_add_u16 %0, %1, %2 op_sel:[1,0] clamp")
HK_CASE(pk_add_i16_clamp, "v_pk_add_i16 %0, %1, %2 op_sel_hi:[0,1] clamp")
HK_CASE(pk_sub_u16_clamp, "v_pk_sub_u16 %0, %1, %2 clamp")
HK_CASE(pk_sub_i16, "v_pk_sub_i16 %0, %1, %2 op_sel:[0,1]")
HK_CASE(pk_sub_i16_clamp, "v_pk_sub_i16 %0, %1, %2 clamp")
HK_CASE(pk_mul_lo, "v_pk_mul_lo_u16 %0, %1, %2 op_sel:[1,1] op_sel_hi:[0,1]")
HK_CASE(pk_mad_u16, "v_pk_mad_u16 %0, %1, %2, %3 clamp")
HK_CASE(pk_mad_i16, "v_pk_mad_i16 %0, %1, %2, %3 op_sel:[0,0,1] op_sel_hi:[1,1,0]")
HK_CASE(pk_mad_i16_clamp, "v_pk_mad_i16 %0, %1, %2, %3 clamp")
HK_CASE(pk_min_i16, "v_pk_min_i16 %0, %1, %2")
HK_CASE(pk_max_i16, "v_pk_max_i16 %0, %1, %2 op_sel:[1,0]")
HK_CASE(pk_min_u16, "v_pk_min_u16 %0, %1, %2 op_sel_hi:[0,0]")
HK_CASE(pk_max_u16, "v_pk_max_u16 %0, %1, %2")
HK_CASE(pk_lshl, "v_pk_lshlrev_b16 %0, %1, %2")
HK_CASE(pk_lshr, "v_pk_lshrrev_b16 %0, %1, %2 op_sel_hi:[0,1]")
HK_CASE(pk_ashr, "v_pk_ashrrev_i16 %0, %1, %2 op_sel:[1,0]")
HK_CASE(pk_add_u16_m1, "v_pk_add_u16 %0, %1, -1")
HK_CASE(pk_add_u16_5, "v_pk_add_u16 %0, %1, 5")
HK_CASE(pk_add_u16_5lo, "v_pk_add_u16 %0, %1, 5 op_sel_hi:[1,0]")
HK_CASE(pk_add_u16_f1, "v_pk_add_u16 %0, %1, 1.0")
// dot products
HK_CASE(dot2_f16, "v_dot2_f32_f16 %0, %1, %2, %3")
HK_CASE(dot2_f16_neg, "v_dot2_f32_f16 %0, %1, %2, %3 neg_lo:[1,0,1] neg_hi:[0,1,0]")
HK_CASE(dot2_f16_clamp, "v_dot2_f32_f16 %0, %1, %2, %3 clamp")
HK_CASE(dot2c_f16, "v_dot2c_f32_f16 %0, %1, %2")
HK_CASE(dot2_i16, "v_dot2_i32_i16 %0, %1, %2, %3")
HK_CASE(dot2_u16_clamp, "v_dot2_u32_u16 %0, %1, %2, %3 clamp")
HK_CASE(dot4_i8, "v_dot4_i32_i8 %0, %1, %2, %3")
HK_CASE(dot4_u8, "v_dot4_u32_u8 %0, %1, %2, %3")
HK_CASE(dot4_i8_clamp, "v_dot4_i32_i8 %0, %1, %2, %3 clamp")
HK_CASE(dot8_i4, "v_dot8_i32_i4 %0, %1, %2, %3")
HK_CASE(dot8_u4_clamp, "v_dot8_u32_u4 %0, %1, %2, %3 clamp")
HK_CASE(dot2c_i16, "v_dot2c_i32_i16 %0, %1, %2")
HK_CASE(dot4c_i8, "v_dot4c_i32_i8 %0, %1, %2")
HK_CASE(dot8c_i4, "v_dot8c_i32_i4 %0, %1, %2")
HK_CASE950(dot2_bf16, "v_dot2_f32_bf16 %0, %1, %2, %3 neg_lo:[0,1,0]")
HK_CASE950(dot2c_bf16, "v_dot2c_f32_bf16 %0, %1, %2")
// mixed precision fma
HK_CASE(mix_f32, "v_fma_mix_f32 %0, %1, %2, %3 op_sel_hi:[1,1,0]")
HK_CASE(mix_f32_sel, "v_fma_mix_f32 %0, -%1, |%2|, %3 op_sel:[1,0,1] op_sel_hi:[1,0,1]")
HK_CASE(mixlo, "v_fma_mixlo_f16 %0, %1, %2, %3 op_sel:[0,1,0] op_sel_hi:[1,1,0]")
HK_CASE(mixhi_clamp, "v_fma_mixhi_f16 %0, %1, -%2, %3 op_sel_hi:[1,1,1] clamp")

// Packed f32 on register pairs.
typedef float f2 __attribute__((ext_vector_type(2)));
__global__ void pk_f32_ops(const f2* a, const f2* b, const f2* c, f2* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  f2 r0, r1, r2, r3, r4;
  asm volatile("v_pk_fma_f32 %0, %1, %2, %3 op_sel:[1,0,1] op_sel_hi:[0,1,1] neg_lo:[1,0,0] neg_hi:[0,0,1]"
               : "=v"(r0) : "v"(a[i]), "v"(b[i]), "v"(c[i]));
  asm volatile("v_pk_mul_f32 %0, %1, %2 op_sel:[0,1] op_sel_hi:[1,0] neg_hi:[1,1]" : "=v"(r1) : "v"(a[i]), "v"(b[i]));
  asm volatile("v_pk_add_f32 %0, %1, %2" : "=v"(r2) : "v"(a[i]), "v"(b[i]));
  asm volatile("v_pk_mul_f32 %0, %1, 2.0 op_sel_hi:[1,0]" : "=v"(r3) : "v"(a[i]));
  asm volatile("v_pk_mov_b32 %0, %1, %2 op_sel:[1,0]" : "=v"(r4) : "v"(a[i]), "v"(b[i]));
  out[5 * i] = r0, out[5 * i + 1] = r1, out[5 * i + 2] = r2, out[5 * i + 3] = r3, out[5 * i + 4] = r4;
}

// Packed math as clang emits it.
typedef _Float16 h2 __attribute__((ext_vector_type(2)));
typedef short s2 __attribute__((ext_vector_type(2)));
typedef unsigned short us2 __attribute__((ext_vector_type(2)));
__global__ void compiled(const h2* a, const h2* b, const h2* c, const s2* x, const s2* y, h2* oh, s2* os, float* of,
                         int* oi, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  oh[4 * i + 0] = a[i] * b[i] + c[i];
  oh[4 * i + 1] = a[i].yx - b[i];
  oh[4 * i + 2] = a[i] * (h2){2.0f16, 2.0f16} + (h2){1.0f16, -1.0f16};
  oh[4 * i + 3] = __builtin_elementwise_max(a[i], b[i]);
  os[3 * i + 0] = x[i] + y[i];
  os[3 * i + 1] = x[i] * y[i];
  os[3 * i + 2] = x[i] << (s2){3, 11};
  of[2 * i + 0] = __builtin_amdgcn_fdot2(a[i], b[i], of[2 * i + 1], false);
  of[2 * i + 1] = __builtin_fmaf(float(a[i].x), float(b[i].y), of[2 * i + 1]);
  oi[3 * i + 0] = __builtin_amdgcn_sdot2(x[i], y[i], oi[3 * i + 2], false);
  oi[3 * i + 1] = int(__builtin_amdgcn_udot4(unsigned(oi[3 * i + 1]), unsigned(oi[3 * i + 2]), 7u, true));
  oi[3 * i + 2] = __builtin_amdgcn_sdot8(oi[3 * i + 2], oi[3 * i + 1] ^ 0x5555, -3, false);
}

// --- Host model --------------------------------------------------------------------------------------------------------

struct Mods {
  unsigned op_sel = 0, op_sel_hi = 7, neg_lo = 0, neg_hi = 0;
  bool clamp = false;
};
inline uint16_t half_sel(unsigned x, bool hi) { return uint16_t(hi ? x >> 16 : x); }

using F3 = std::function<long double(long double, long double, long double)>;
using I3 = std::function<int64_t(int64_t, int64_t, int64_t)>;

bool f16_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

// Packed f16: one exact result per half, rounded once (clamp to [0, 1], NaN to 0, after rounding).
unsigned model_f16(const unsigned* s, int nsrc, Mods m, const F3& f) {
  unsigned r = 0;
  for (int h = 0; h < 2; ++h) {
    long double v[3] = {};
    for (int k = 0; k < nsrc; ++k) {
      uint16_t x = half_sel(s[k], ((h ? m.op_sel_hi : m.op_sel) >> k) & 1);
      if (((h ? m.neg_hi : m.neg_lo) >> k) & 1) x ^= 0x8000;
      v[k] = (long double)h_from(x);
    }
    uint16_t o = f16_round(f(v[0], v[1], v[2]));
    if (m.clamp) {
      const _Float16 q = h_from(o);
      o = f16_nan(o) ? 0 : h_bits(q < 0 ? _Float16(0) : q > 1 ? _Float16(1) : q);
    }
    r |= unsigned(o) << 16 * h;
  }
  return r;
}

// Packed 16-bit integers: exact result, wrapped or (clamp) saturated.
unsigned model_i16(const unsigned* s, int nsrc, Mods m, bool is_signed, const I3& f) {
  unsigned r = 0;
  for (int h = 0; h < 2; ++h) {
    int64_t v[3] = {};
    for (int k = 0; k < nsrc; ++k) {
      const uint16_t x = half_sel(s[k], ((h ? m.op_sel_hi : m.op_sel) >> k) & 1);
      v[k] = is_signed ? int64_t(int16_t(x)) : int64_t(x);
    }
    int64_t o = f(v[0], v[1], v[2]);
    if (m.clamp) o = is_signed ? std::clamp<int64_t>(o, -32768, 32767) : std::clamp<int64_t>(o, 0, 65535);
    r |= unsigned(uint16_t(o)) << 16 * h;
  }
  return r;
}

long double minnum(long double a, long double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return (a < b || (a == b && std::signbit(a))) ? a : b;
}
long double maxnum(long double a, long double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return (a > b || (a == b && !std::signbit(a))) ? a : b;
}
long double minimum(long double a, long double b) { return std::isnan(a) || std::isnan(b) ? NAN : minnum(a, b); }
long double maximum(long double a, long double b) { return std::isnan(a) || std::isnan(b) ? NAN : maxnum(a, b); }

int64_t idot(unsigned a, unsigned b, int n, bool sgn) {
  const int bits = 32 / n;
  int64_t s = 0;
  for (int i = 0; i < n; ++i) {
    int64_t x = a >> bits * i & ((1ull << bits) - 1), y = b >> bits * i & ((1ull << bits) - 1);
    if (sgn) {
      if (x >> (bits - 1)) x -= int64_t(1) << bits;
      if (y >> (bits - 1)) y -= int64_t(1) << bits;
    }
    s += x * y;
  }
  return s;
}
unsigned sat32(int64_t v, bool sgn, bool clamp) {
  if (!clamp) return unsigned(v);
  return sgn ? unsigned(int32_t(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX))) : unsigned(std::clamp<int64_t>(v, 0, UINT32_MAX));
}

// f32 = x.lo*y.lo + x.hi*y.hi + c, one rounding (the test inputs keep the sum exact in long double).
float dot2(unsigned x, unsigned y, float c, bool bf16, unsigned neg_lo, unsigned neg_hi) {
  auto val = [&](uint16_t h) { return bf16 ? (long double)from_bits(unsigned(h) << 16) : (long double)h_from(h); };
  long double s = 0;
  for (int h = 0; h < 2; ++h) {
    uint16_t p = half_sel(x, h), q = half_sel(y, h);
    if (((h ? neg_hi : neg_lo) >> 0) & 1) p ^= 0x8000;
    if (((h ? neg_hi : neg_lo) >> 1) & 1) q ^= 0x8000;
    s += val(p) * val(q);
  }
  if (neg_hi >> 2 & 1) c = std::fabs(c);
  if (neg_lo >> 2 & 1) c = -c;
  return float(s + c);
}

// A mix source: f32 or the selected f16 half, then |x| and -x.
float mix_src(unsigned v, int k, unsigned op_sel, unsigned op_sel_hi, bool neg, bool abs) {
  float x = (op_sel_hi >> k & 1) ? float(h_from(half_sel(v, op_sel >> k & 1))) : from_bits(v);
  if (abs) x = std::fabs(x);
  if (neg) x = -x;
  return x;
}

// --- Inputs ----------------------------------------------------------------------------------------------------------

uint16_t f16_sample(std::mt19937& rng, bool moderate) {
  static const uint16_t specials[] = {0x0000, 0x8000, 0x3c00, 0xbc00, 0x7c00, 0xfc00, 0x7e00, 0x0001, 0x83ff, 0x7bff,
                                      0xfbff, 0x3800, 0x3bff, 0x3c01, 0x0400, 0x5bff};
  if (moderate) {  // |x| in [2^-6, 2^6), exact products and sums
    const uint16_t e = uint16_t(9 + rng() % 12), m = uint16_t(rng() & 0x3ff);
    return uint16_t((rng() & 1) << 15 | e << 10 | m);
  }
  if (rng() % 5 == 0) return specials[rng() % (sizeof specials / sizeof specials[0])];
  if (rng() % 3 == 0) return uint16_t(rng() & 0xffff & ~0x7c00u) | uint16_t((rng() % 31) << 10);
  const float f = std::uniform_real_distribution<float>(-4.f, 4.f)(rng);
  return h_bits(_Float16(f));
}

struct Inputs {
  std::vector<unsigned> a, b, c, d;
};

// kind 0: f16 halves with special values; 1: moderate f16 halves; 2: integers; 3: moderate f16 halves with moderate
// f32 in S2 and D (sums exact in long double); 4: the same with bf16 halves.
Inputs make_inputs(uint32_t seed, int kind) {
  std::mt19937 rng(seed);
  Inputs in;
  const unsigned iedge[] = {0u, 1u, 0xffffffffu, 0x7fff7fffu, 0x80008000u, 0x7fff8000u, 0xffff0001u, 0x00ff00ffu};
  auto moderate_f32 = [&] { return bits(float(int(rng() % 200000) - 100000) / 128.f); };
  auto bf16 = [&] { return unsigned((rng() & 1) << 15 | (121 + rng() % 12) << 7 | (rng() & 0x7f)); };
  for (int i = 0; i < kN; ++i) {
    auto pick = [&](int slot) -> unsigned {
      if (kind == 2) return i % 7 == 0 ? iedge[(i / 7 + slot) % 8] : unsigned(rng());
      if (kind >= 3 && slot >= 2) return moderate_f32();
      if (kind == 4) return bf16() | bf16() << 16;
      return unsigned(f16_sample(rng, kind != 0)) | unsigned(f16_sample(rng, kind != 0)) << 16;
    };
    in.a.push_back(pick(0));
    in.b.push_back(pick(1));
    in.c.push_back(pick(2));
    in.d.push_back(kind == 2 ? unsigned(rng()) : pick(3));
  }
  return in;
}

using Kernel = void (*)(const unsigned*, const unsigned*, const unsigned*, const unsigned*, unsigned*, int);

std::vector<unsigned> run(Kernel k, const Inputs& in) {
  Dev<unsigned> a(in.a), b(in.b), c(in.c), d(in.d), out(in.a.size());
  hipLaunchKernelGGL(k, dim3(blocks(in.a.size())), dim3(kBlock), 0, 0, a.p, b.p, c.p, d.p, out.p, int(in.a.size()));
  return out.get();
}

std::string hex(unsigned x) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", x);
  return buf;
}

// Compares a case with the model; f16 results compare NaN with NaN per half.
void check(const char* name, Kernel k, int kind, const std::function<unsigned(const unsigned*, unsigned)>& model,
           bool halves_f16 = false, bool f32_result = false) {
  const Inputs in = make_inputs(std::hash<std::string>{}(name) & 0xffff, kind);
  const auto got = run(k, in);
  int bad = 0;
  for (size_t i = 0; i < in.a.size(); ++i) {
    const unsigned s[3] = {in.a[i], in.b[i], in.c[i]};
    const unsigned want = model(s, in.d[i]);
    bool ok = got[i] == want;
    if (!ok && halves_f16)
      ok = (f16_nan(uint16_t(got[i])) ? f16_nan(uint16_t(want)) : uint16_t(got[i]) == uint16_t(want)) &&
           (f16_nan(uint16_t(got[i] >> 16)) ? f16_nan(uint16_t(want >> 16)) : (got[i] >> 16) == (want >> 16));
    if (!ok && f32_result) ok = std::isnan(from_bits(got[i])) && std::isnan(from_bits(want));
    if (!ok && bad++ < 6)
      ADD_FAILURE() << name << ": a=" << hex(s[0]) << " b=" << hex(s[1]) << " c=" << hex(s[2]) << " d=" << hex(in.d[i])
                    << ": got " << hex(got[i]) << " want " << hex(want);
  }
  EXPECT_EQ(bad, 0) << name;
}

}  // namespace

TEST(Packed, F16) {
  auto fma = [](long double a, long double b, long double c) { return a * b + c; };
  auto add = [](long double a, long double b, long double) { return a + b; };
  auto mul = [](long double a, long double b, long double) { return a * b; };
  auto mn = [](long double a, long double b, long double) { return minnum(a, b); };
  auto mx = [](long double a, long double b, long double) { return maxnum(a, b); };
  check("pk_fma", pk_fma, 0, [&](const unsigned* s, unsigned) { return model_f16(s, 3, {}, fma); }, true);
  check("pk_fma_sel", pk_fma_sel, 0, [&](const unsigned* s, unsigned) {
    return model_f16(s, 3, {.op_sel = 0b101, .op_sel_hi = 0b110, .neg_lo = 0b001, .neg_hi = 0b110}, fma);
  }, true);
  check("pk_fma_clamp", pk_fma_clamp, 0, [&](const unsigned* s, unsigned) {
    return model_f16(s, 3, {.op_sel = 0b010, .op_sel_hi = 0b001, .clamp = true}, fma);
  }, true);
  check("pk_add_sel", pk_add_sel, 0, [&](const unsigned* s, unsigned) {
    return model_f16(s, 2, {.op_sel = 0b11, .op_sel_hi = 0b00}, add);
  }, true);
  check("pk_add_neg", pk_add_neg, 0, [&](const unsigned* s, unsigned) {
    return model_f16(s, 2, {.neg_lo = 0b10, .neg_hi = 0b11}, add);
  }, true);
  check("pk_mul_neg", pk_mul_neg, 0, [&](const unsigned* s, unsigned) {
    return model_f16(s, 2, {.neg_lo = 0b11, .neg_hi = 0b01}, mul);
  }, true);
  check("pk_min", pk_min, 0, [&](const unsigned* s, unsigned) { return model_f16(s, 2, {}, mn); }, true);
  check("pk_max_sel", pk_max_sel, 0, [&](const unsigned* s, unsigned) {
    return model_f16(s, 2, {.op_sel = 0b10, .op_sel_hi = 0b01}, mx);
  }, true);
  check("pk_fmac", pk_fmac, 0, [&](const unsigned* s, unsigned d) {
    const unsigned t[3] = {s[0], s[1], d};
    return model_f16(t, 3, {}, fma);
  }, true);
}

// An inline constant reaches a packed f16 operation as its f16 value in bits 15:0 and zero in bits 31:16, so with the
// default op_sel_hi the high result sees 0; op_sel_hi = 0 feeds the constant to both halves (as LLVM emits it).
TEST(Packed, F16InlineConstants) {
  auto mul = [](long double a, long double b, long double) { return a * b; };
  auto fma = [](long double a, long double b, long double c) { return a * b + c; };
  check("pk_mul_const", pk_mul_const, 0, [&](const unsigned* s, unsigned) {
    const unsigned t[2] = {s[0], 0x00004000u};
    return model_f16(t, 2, {}, mul);
  }, true);
  check("pk_mul_const_lo", pk_mul_const_lo, 0, [&](const unsigned* s, unsigned) {
    const unsigned t[2] = {s[0], 0x00004000u};
    return model_f16(t, 2, {.op_sel_hi = 0b01}, mul);
  }, true);
  check("pk_fma_const", pk_fma_const, 0, [&](const unsigned* s, unsigned) {
    const unsigned t[3] = {s[0], 0x0000bc00u, 0x00003800u};
    return model_f16(t, 3, {.op_sel_hi = 0b001}, fma);
  }, true);
}

TEST(Packed, Gfx950Minimum3Maximum3) {
  if (!gfx950()) GTEST_SKIP() << "gfx950 only";
  check("pk_minimum3", pk_minimum3, 0, [&](const unsigned* s, unsigned) {
    return model_f16(s, 3, {}, [](long double a, long double b, long double c) { return minimum(minimum(a, b), c); });
  }, true);
  check("pk_maximum3", pk_maximum3, 0, [&](const unsigned* s, unsigned) {
    return model_f16(s, 3, {.op_sel = 0b001, .op_sel_hi = 0b110},
                     [](long double a, long double b, long double c) { return maximum(maximum(a, b), c); });
  }, true);
}

TEST(Packed, Int16) {
  auto add = [](int64_t a, int64_t b, int64_t) { return a + b; };
  auto sub = [](int64_t a, int64_t b, int64_t) { return a - b; };
  auto mad = [](int64_t a, int64_t b, int64_t c) { return a * b + c; };
  auto mn = [](int64_t a, int64_t b, int64_t) { return std::min(a, b); };
  auto mx = [](int64_t a, int64_t b, int64_t) { return std::max(a, b); };
  check("pk_add_u16", pk_add_u16, 2, [&](const unsigned* s, unsigned) { return model_i16(s, 2, {}, false, add); });
  check("pk_add_u16_clamp", pk_add_u16_clamp, 2,
        [&](const unsigned* s, unsigned) { return model_i16(s, 2, {.op_sel = 1, .clamp = true}, false, add); });
  check("pk_add_i16_clamp", pk_add_i16_clamp, 2,
        [&](const unsigned* s, unsigned) { return model_i16(s, 2, {.op_sel_hi = 2, .clamp = true}, true, add); });
  check("pk_sub_u16_clamp", pk_sub_u16_clamp, 2,
        [&](const unsigned* s, unsigned) { return model_i16(s, 2, {.clamp = true}, false, sub); });
  check("pk_sub_i16", pk_sub_i16, 2, [&](const unsigned* s, unsigned) { return model_i16(s, 2, {.op_sel = 2}, true, sub); });
  check("pk_sub_i16_clamp", pk_sub_i16_clamp, 2,
        [&](const unsigned* s, unsigned) { return model_i16(s, 2, {.clamp = true}, true, sub); });
  check("pk_mul_lo", pk_mul_lo, 2, [&](const unsigned* s, unsigned) {
    return model_i16(s, 2, {.op_sel = 3, .op_sel_hi = 2}, false, [](int64_t a, int64_t b, int64_t) { return a * b; });
  });
  check("pk_mad_u16", pk_mad_u16, 2, [&](const unsigned* s, unsigned) { return model_i16(s, 3, {.clamp = true}, false, mad); });
  check("pk_mad_i16", pk_mad_i16, 2,
        [&](const unsigned* s, unsigned) { return model_i16(s, 3, {.op_sel = 4, .op_sel_hi = 3}, true, mad); });
  check("pk_mad_i16_clamp", pk_mad_i16_clamp, 2,
        [&](const unsigned* s, unsigned) { return model_i16(s, 3, {.clamp = true}, true, mad); });
  check("pk_min_i16", pk_min_i16, 2, [&](const unsigned* s, unsigned) { return model_i16(s, 2, {}, true, mn); });
  check("pk_max_i16", pk_max_i16, 2, [&](const unsigned* s, unsigned) { return model_i16(s, 2, {.op_sel = 1}, true, mx); });
  check("pk_min_u16", pk_min_u16, 2, [&](const unsigned* s, unsigned) { return model_i16(s, 2, {.op_sel_hi = 0}, false, mn); });
  check("pk_max_u16", pk_max_u16, 2, [&](const unsigned* s, unsigned) { return model_i16(s, 2, {}, false, mx); });
  // Shifts: the count is the low 4 bits of the selected half of S0.
  check("pk_lshl", pk_lshl, 2, [&](const unsigned* s, unsigned) {
    return model_i16(s, 2, {}, false, [](int64_t n, int64_t x, int64_t) { return x << (n & 15); });
  });
  check("pk_lshr", pk_lshr, 2, [&](const unsigned* s, unsigned) {
    return model_i16(s, 2, {.op_sel_hi = 2}, false, [](int64_t n, int64_t x, int64_t) { return x >> (n & 15); });
  });
  check("pk_ashr", pk_ashr, 2, [&](const unsigned* s, unsigned) {
    return model_i16(s, 2, {.op_sel = 1}, true, [](int64_t n, int64_t x, int64_t) { return x >> (n & 15); });
  });
}

// Integer inline constants arrive sign-extended to 32 bits; a float constant in an integer operation arrives as its
// f32 bit pattern (LLVM's description of the hardware in AMDGPUBaseInfo).
TEST(Packed, Int16InlineConstants) {
  auto add = [](int64_t a, int64_t b, int64_t) { return a + b; };
  auto with = [&](unsigned k, unsigned op_sel_hi) {
    return [=](const unsigned* s, unsigned) {
      const unsigned t[2] = {s[0], k};
      return model_i16(t, 2, {.op_sel_hi = op_sel_hi}, false, add);
    };
  };
  check("pk_add_u16_m1", pk_add_u16_m1, 2, with(0xffffffffu, 3));
  check("pk_add_u16_5", pk_add_u16_5, 2, with(5u, 3));
  check("pk_add_u16_5lo", pk_add_u16_5lo, 2, with(5u, 1));
  check("pk_add_u16_f1", pk_add_u16_f1, 2, with(0x3f800000u, 3));
}

TEST(Packed, Dot) {
  check("dot2_f16", dot2_f16, 3, [&](const unsigned* s, unsigned) { return bits(dot2(s[0], s[1], from_bits(s[2]), false, 0, 0)); },
        false, true);
  check("dot2_f16_neg", dot2_f16_neg, 3,
        [&](const unsigned* s, unsigned) { return bits(dot2(s[0], s[1], from_bits(s[2]), false, 0b101, 0b010)); }, false, true);
  check("dot2_f16_clamp", dot2_f16_clamp, 3, [&](const unsigned* s, unsigned) {
    const float r = dot2(s[0], s[1], from_bits(s[2]), false, 0, 0);
    return bits(std::isnan(r) ? 0.f : std::min(std::max(r, 0.f), 1.f));
  }, false, true);
  check("dot2c_f16", dot2c_f16, 3,
        [&](const unsigned* s, unsigned d) { return bits(dot2(s[0], s[1], from_bits(d), false, 0, 0)); }, false, true);
  check("dot2_i16", dot2_i16, 2, [&](const unsigned* s, unsigned) { return sat32(idot(s[0], s[1], 2, true) + int32_t(s[2]), true, false); });
  check("dot2_u16_clamp", dot2_u16_clamp, 2,
        [&](const unsigned* s, unsigned) { return sat32(idot(s[0], s[1], 2, false) + int64_t(s[2]), false, true); });
  check("dot4_i8", dot4_i8, 2, [&](const unsigned* s, unsigned) { return sat32(idot(s[0], s[1], 4, true) + int32_t(s[2]), true, false); });
  check("dot4_u8", dot4_u8, 2, [&](const unsigned* s, unsigned) { return sat32(idot(s[0], s[1], 4, false) + int64_t(s[2]), false, false); });
  check("dot4_i8_clamp", dot4_i8_clamp, 2,
        [&](const unsigned* s, unsigned) { return sat32(idot(s[0], s[1], 4, true) + int32_t(s[2]), true, true); });
  check("dot8_i4", dot8_i4, 2, [&](const unsigned* s, unsigned) { return sat32(idot(s[0], s[1], 8, true) + int32_t(s[2]), true, false); });
  check("dot8_u4_clamp", dot8_u4_clamp, 2,
        [&](const unsigned* s, unsigned) { return sat32(idot(s[0], s[1], 8, false) + int64_t(s[2]), false, true); });
  check("dot2c_i16", dot2c_i16, 2, [&](const unsigned* s, unsigned d) { return sat32(idot(s[0], s[1], 2, true) + int32_t(d), true, false); });
  check("dot4c_i8", dot4c_i8, 2, [&](const unsigned* s, unsigned d) { return sat32(idot(s[0], s[1], 4, true) + int32_t(d), true, false); });
  check("dot8c_i4", dot8c_i4, 2, [&](const unsigned* s, unsigned d) { return sat32(idot(s[0], s[1], 8, true) + int32_t(d), true, false); });
}

TEST(Packed, Gfx950DotBf16) {
  if (!gfx950()) GTEST_SKIP() << "gfx950 only";
  check("dot2_bf16", dot2_bf16, 4,
        [&](const unsigned* s, unsigned) { return bits(dot2(s[0], s[1], from_bits(s[2]), true, 0b010, 0)); }, false, true);
  check("dot2c_bf16", dot2c_bf16, 4, [&](const unsigned* s, unsigned d) { return bits(dot2(s[0], s[1], from_bits(d), true, 0, 0)); },
        false, true);
}

TEST(Packed, FmaMix) {
  check("mix_f32", mix_f32, 3, [&](const unsigned* s, unsigned) {
    return bits(std::fma(mix_src(s[0], 0, 0, 3, false, false), mix_src(s[1], 1, 0, 3, false, false),
                         mix_src(s[2], 2, 0, 3, false, false)));
  }, false, true);
  check("mix_f32_sel", mix_f32_sel, 0, [&](const unsigned* s, unsigned) {
    return bits(std::fma(mix_src(s[0], 0, 0b101, 0b101, true, false), mix_src(s[1], 1, 0b101, 0b101, false, true),
                         mix_src(s[2], 2, 0b101, 0b101, false, false)));
  }, false, true);
  check("mixlo", mixlo, 3, [&](const unsigned* s, unsigned d) {
    const long double r = (long double)mix_src(s[0], 0, 0b010, 0b011, false, false) * mix_src(s[1], 1, 0b010, 0b011, false, false) +
                          mix_src(s[2], 2, 0b010, 0b011, false, false);
    return (d & 0xffff0000u) | f16_round(r);
  }, true);
  check("mixhi_clamp", mixhi_clamp, 1, [&](const unsigned* s, unsigned d) {
    const long double r = (long double)mix_src(s[0], 0, 0, 7, false, false) * mix_src(s[1], 1, 0, 7, true, false) +
                          mix_src(s[2], 2, 0, 7, false, false);
    _Float16 h = _Float16(r);
    h = std::isnan(float(h)) ? _Float16(0) : h < 0 ? _Float16(0) : h > 1 ? _Float16(1) : h;
    return (d & 0xffffu) | unsigned(h_bits(h)) << 16;
  }, true);
}

TEST(Packed, F32Pairs) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-50.f, 50.f);
  const int n = 800;
  std::vector<f2> a(n), b(n), c(n);
  for (int i = 0; i < n; ++i) a[i] = {u(rng), u(rng)}, b[i] = {u(rng), u(rng)}, c[i] = {u(rng), u(rng)};
  Dev<f2> da(a), db(b), dc(c), out(5 * n);
  hipLaunchKernelGGL(pk_f32_ops, dim3(blocks(n)), dim3(kBlock), 0, 0, da.p, db.p, dc.p, out.p, n);
  auto r = out.get();
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    // fma op_sel:[1,0,1] op_sel_hi:[0,1,1] neg_lo:[1,0,0] neg_hi:[0,0,1]
    const f2 w0 = {std::fma(-a[i][1], b[i][0], c[i][1]), std::fma(a[i][0], b[i][1], -c[i][1])};
    // mul op_sel:[0,1] op_sel_hi:[1,0] neg_hi:[1,1]
    const f2 w1 = {a[i][0] * b[i][1], -a[i][1] * -b[i][0]};
    const f2 w2 = {a[i][0] + b[i][0], a[i][1] + b[i][1]};
    const f2 w3 = {a[i][0] * 2.f, a[i][1] * 2.f};
    const f2 w4 = {a[i][1], b[i][0]};  // v_pk_mov_b32 op_sel:[1,0]: D.lo = S0.hi, D.hi = S1.lo
    const f2 want[5] = {w0, w1, w2, w3, w4};
    for (int k = 0; k < 5; ++k)
      if ((bits(r[5 * i + k][0]) != bits(want[k][0]) || bits(r[5 * i + k][1]) != bits(want[k][1])) && bad++ < 10)
        ADD_FAILURE() << "case " << k << " element " << i << ": got " << r[5 * i + k][0] << ", " << r[5 * i + k][1]
                      << " want " << want[k][0] << ", " << want[k][1];
  }
  EXPECT_EQ(bad, 0);
}

TEST(Packed, AsClangEmitsIt) {
  std::mt19937 rng(17);
  const int n = 1000;
  std::vector<h2> a(n), b(n), c(n);
  std::vector<s2> x(n), y(n);
  std::vector<float> f(2 * n);
  std::vector<int> iv(3 * n);
  for (int i = 0; i < n; ++i) {
    auto h = [&] { return h_from(f16_sample(rng, true)); };
    a[i] = {h(), h()}, b[i] = {h(), h()}, c[i] = {h(), h()};
    x[i] = {short(rng()), short(rng())}, y[i] = {short(rng()), short(rng())};
    f[2 * i + 1] = float(int(rng() % 20000) - 10000) / 64.f;
    for (int k = 0; k < 3; ++k) iv[3 * i + k] = int(rng());
  }
  Dev<h2> da(a), db(b), dc(c), oh(4 * n);
  Dev<s2> dx(x), dy(y), os(3 * n);
  Dev<float> of(f);
  Dev<int> oi(iv);
  hipLaunchKernelGGL(compiled, dim3(blocks(n)), dim3(kBlock), 0, 0, da.p, db.p, dc.p, dx.p, dy.p, oh.p, os.p, of.p, oi.p, n);
  auto rh = oh.get();
  auto rs = os.get();
  auto rf = of.get();
  auto ri = oi.get();
  int bad = 0;
  auto expect_h = [&](int i, int k, _Float16 got, long double want) {
    if (h_bits(got) != f16_round(want) && bad++ < 10)
      ADD_FAILURE() << "half case " << k << " element " << i << ": got " << float(got) << " want " << double(want);
  };
  for (int i = 0; i < n; ++i) {
    for (int e = 0; e < 2; ++e) {
      const long double A = a[i][e], B = b[i][e], C = c[i][e], As = a[i][1 - e];
      expect_h(i, 0, rh[4 * i][e], A * B + C);
      expect_h(i, 1, rh[4 * i + 1][e], (long double)As - B);
      expect_h(i, 2, rh[4 * i + 2][e], (long double)_Float16(A * 2) + (e ? -1 : 1));
      expect_h(i, 3, rh[4 * i + 3][e], maxnum(A, B));
      if (rs[3 * i][e] != short(x[i][e] + y[i][e]) || rs[3 * i + 1][e] != short(x[i][e] * y[i][e]) ||
          rs[3 * i + 2][e] != short(x[i][e] << (e ? 11 : 3)))
        if (bad++ < 10) ADD_FAILURE() << "short case element " << i;
    }
    const float acc = f[2 * i + 1];
    const long double dot = (long double)a[i][0] * b[i][0] + (long double)a[i][1] * b[i][1] + acc;
    if (bits(rf[2 * i]) != bits(float(dot)) && bad++ < 10) ADD_FAILURE() << "fdot2 " << i << ": " << rf[2 * i] << " vs " << float(dot);
    if (bits(rf[2 * i + 1]) != bits(std::fma(float(a[i][0]), float(b[i][1]), acc)) && bad++ < 10)
      ADD_FAILURE() << "fma mix " << i;
    const int sd = int(int64_t(x[i][0]) * y[i][0] + int64_t(x[i][1]) * y[i][1] + iv[3 * i + 2]);
    const unsigned ud = sat32(idot(unsigned(iv[3 * i + 1]), unsigned(iv[3 * i + 2]), 4, false) + 7, false, true);
    const int s8 = int(idot(unsigned(iv[3 * i + 2]), ud ^ 0x5555u, 8, true) - 3);
    if ((ri[3 * i] != sd || unsigned(ri[3 * i + 1]) != ud || ri[3 * i + 2] != s8) && bad++ < 10)
      ADD_FAILURE() << "integer dots " << i << ": " << ri[3 * i] << " " << ri[3 * i + 1] << " " << ri[3 * i + 2] << " want " << sd
                    << " " << ud << " " << s8;
  }
  EXPECT_EQ(bad, 0);
}
