// hk::gemm_mx (gfx950): every pair of the five OCP MX element formats (e4m3, e5m2, e2m3, e3m2, e2m1), ragged M and N,
// K a multiple of 32 but not of 64, fp32 / bf16 / f16 C with alpha and beta, the E8M0 edge scales 0 (2^-127), 254
// (2^127) and 255 (NaN), and every validation error; on gfx942 the refusal. The reference decodes each element from
// its bits by the OCP formulas (written out here, independently of vgpu) and applies the scales in float64.
#include <hip/hip_runtime.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gemm/gemm_mx.h"
#include "host/device.h"

namespace {

using hk::mx_format;
constexpr mx_format kFormats[] = {mx_format::e4m3, mx_format::e5m2, mx_format::e2m3, mx_format::e3m2, mx_format::e2m1};

bool on_gfx950() { return hk_host::device_arch() == hk::arch::target_id::gfx950; }

// The value of an element code: sign, exponent (bias 2^(eb-1) - 1, subnormals at 0), mantissa; e4m3fn's S.1111.111
// is NaN, e5m2's all-ones exponent inf / NaN, the 6- and 4-bit formats have neither.
double decode(uint32_t x, mx_format f) {
  const int eb = f == mx_format::e4m3 ? 4 : f == mx_format::e5m2 ? 5 : f == mx_format::e3m2 ? 3 : 2;
  const int mb = f == mx_format::e4m3 || f == mx_format::e2m3 ? 3 : f == mx_format::e2m1 ? 1 : 2;
  const int bias = (1 << (eb - 1)) - 1, e = int(x >> mb) & ((1 << eb) - 1), m = int(x) & ((1 << mb) - 1);
  const bool neg = x >> (eb + mb) & 1;
  if (f == mx_format::e4m3 && e == 15 && m == 7) return NAN;
  if (f == mx_format::e5m2 && e == 31) return m ? NAN : neg ? -INFINITY : INFINITY;
  const double mag = e == 0 ? std::ldexp(double(m), 1 - bias - mb) : std::ldexp(double(m + (1 << mb)), e - bias - mb);
  return neg ? -mag : mag;
}

using hk_host::DeviceArray;

struct Case {
  int m, n, k;
  mx_format fa, fb;
  hk::scalar_type out = hk::scalar_type::fp32;
  float alpha = 1.f, beta = 0.f;
  bool edges = false;  // plant the edge scales (see run)
  bool tight = false;  // scale rows k / 32 apart (dword-aligned where k is a multiple of 128: the ping-pong kernel's),
                       // rows k + 64 apart (16-byte aligned in every format there)
};

// Runs one case against the reference; rows padded to lda = ldb = k rounded up to 64 + 32, scale rows to k/32 + 1
// (where tight: k + 64 and k/32).
void run(const Case& c) {
  SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) + " " + hk::to_string(c.fa) +
               " x " + hk::to_string(c.fb) + " -> " + hk::to_string(c.out));
  std::mt19937 rng(c.m * 131 + c.n * 7 + c.k + int(c.fa) * 5 + int(c.fb));
  const int blocks = c.k / 32, ba = hk::bits_of(c.fa), bb = hk::bits_of(c.fb);
  const long ld = c.tight ? c.k + 64 : (c.k + 63) / 64 * 64 + 32, lds = c.tight ? blocks : blocks + 1;
  const size_t row_a = size_t(ld) * ba / 8, row_b = size_t(ld) * bb / 8;
  std::vector<uint8_t> a(c.m * row_a), b(c.n * row_b), sa(size_t(c.m) * lds, 0xff), sb(size_t(c.n) * lds, 0xff);
  std::vector<uint32_t> ca(size_t(c.m) * c.k), cb(size_t(c.n) * c.k);
  auto code = [&](mx_format f) {
    for (;;) {
      const uint32_t x = rng() & ((1u << hk::bits_of(f)) - 1);
      const double v = decode(x, f);
      if (std::isfinite(v) && std::fabs(v) <= 16) return x;
    }
  };
  auto put = [](uint8_t* row, int x, int bits, uint32_t v) {
    for (int t = 0; t < bits; ++t)
      if (v >> t & 1) row[(x * bits + t) / 8] |= uint8_t(1u << ((x * bits + t) % 8));
  };
  for (int i = 0; i < c.m; ++i)
    for (int x = 0; x < c.k; ++x) put(&a[i * row_a], x, ba, ca[size_t(i) * c.k + x] = code(c.fa));
  for (int j = 0; j < c.n; ++j)
    for (int x = 0; x < c.k; ++x) put(&b[j * row_b], x, bb, cb[size_t(j) * c.k + x] = code(c.fb));
  // Past k the rows hold codes too (they must not be read): 0xff bytes, NaN in e4m3.
  for (int i = 0; i < c.m; ++i)
    for (size_t x = size_t(c.k) * ba / 8; x < row_a; ++x) a[i * row_a + x] = 0xff;
  for (int j = 0; j < c.n; ++j)
    for (size_t x = size_t(c.k) * bb / 8; x < row_b; ++x) b[j * row_b + x] = 0xff;
  for (int i = 0; i < c.m; ++i)
    for (int kb = 0; kb < blocks; ++kb) sa[i * lds + kb] = uint8_t(120 + rng() % 15);
  for (int j = 0; j < c.n; ++j)
    for (int kb = 0; kb < blocks; ++kb) sb[j * lds + kb] = uint8_t(c.edges && kb == 0 ? 100 + rng() % 11 : 120 + rng() % 15);
  if (c.edges) {  // A row 0 block 0: 2^-127; row 1 block 0: 2^127 (B's block 0 at most 2^-17: finite); row 2: NaN
    sa[0] = 0, sa[1 * lds] = 254, sa[2 * lds + blocks - 1] = 255, sb[3 * lds] = 0;
  }
  const size_t ce = hk::size_of(c.out);
  std::vector<uint8_t> c0(size_t(c.m) * c.n * ce);
  std::vector<double> c0v(size_t(c.m) * c.n);
  for (size_t x = 0; x < c0v.size(); ++x) {
    const float v = std::uniform_real_distribution<float>(-2.f, 2.f)(rng);
    if (c.out == hk::scalar_type::fp32) std::memcpy(&c0[x * 4], &v, 4), c0v[x] = v;
    else if (c.out == hk::scalar_type::bf16) {
      const uint16_t h = uint16_t(std::bit_cast<uint32_t>(v) >> 16);
      std::memcpy(&c0[x * 2], &h, 2), c0v[x] = std::bit_cast<float>(uint32_t(h) << 16);
    } else {
      const _Float16 h = _Float16(v);
      std::memcpy(&c0[x * 2], &h, 2), c0v[x] = double(h);
    }
  }
  DeviceArray<uint8_t> da(a), db(b), dsa(sa), dsb(sb), dc(c0);
  for (hipError_t e : {da.status(), db.status(), dsa.status(), dsb.status(), dc.status()}) ASSERT_EQ(e, hipSuccess);
  hk::GemmMxProblem p;
  p.m = c.m, p.n = c.n, p.k = c.k, p.a = da.p, p.lda = ld, p.a_format = c.fa, p.b = db.p, p.ldb = ld, p.b_format = c.fb;
  p.scale_a = dsa.p, p.ld_scale_a = lds, p.scale_b = dsb.p, p.ld_scale_b = lds, p.c = dc.p, p.ldc = c.n, p.c_type = c.out;
  p.alpha = c.alpha, p.beta = c.beta;
  const hk::Status s = hk::gemm_mx(p);
  ASSERT_TRUE(s) << s.message;
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  std::vector<uint8_t> got(c0.size());
  ASSERT_EQ(hipMemcpy(got.data(), dc.p, got.size(), hipMemcpyDeviceToHost), hipSuccess);
  const double eps = c.out == hk::scalar_type::bf16 ? 0x1p-8 : c.out == hk::scalar_type::f16 ? 0x1p-11 : 0;
  const double tiny = c.out == hk::scalar_type::bf16 ? 0x1p-133 : c.out == hk::scalar_type::f16 ? 0x1p-24 : 0x1p-149;
  const double top = c.out == hk::scalar_type::bf16 ? 0x1.fep127 : c.out == hk::scalar_type::f16 ? 65504.0 : double(FLT_MAX);
  int bad = 0;
  for (int i = 0; i < c.m; ++i)
    for (int j = 0; j < c.n; ++j) {
      double acc = 0, mag = 0;
      for (int kb = 0; kb < blocks; ++kb) {
        const int xa = sa[i * lds + kb], xb = sb[j * lds + kb];
        const double scale = xa == 255 || xb == 255 ? NAN : std::ldexp(1.0, xa + xb - 254);
        for (int x = 32 * kb; x < 32 * kb + 32; ++x) {
          const double t = decode(ca[size_t(i) * c.k + x], c.fa) * decode(cb[size_t(j) * c.k + x], c.fb) * scale;
          acc += t, mag += std::fabs(t);
        }
      }
      const size_t at = size_t(i) * c.n + j;
      const double want = c.alpha * acc + c.beta * c0v[at];
      const double m2 = std::fabs(c.alpha) * mag + std::fabs(c.beta * c0v[at]);
      double g;
      if (c.out == hk::scalar_type::fp32) g = std::bit_cast<float>(uint32_t(got[at * 4] | got[at * 4 + 1] << 8 | got[at * 4 + 2] << 16 | uint32_t(got[at * 4 + 3]) << 24));
      else if (c.out == hk::scalar_type::bf16) g = std::bit_cast<float>(uint32_t(got[at * 2] | got[at * 2 + 1] << 8) << 16);
      else g = double(std::bit_cast<_Float16>(uint16_t(got[at * 2] | got[at * 2 + 1] << 8)));
      const double tol = (c.k + 8) * std::ldexp(m2, -23) + eps * std::fabs(want) + tiny;
      bool ok;
      if (std::isnan(want)) ok = std::isnan(g);
      else if (std::fabs(want) > top * (1 + eps)) ok = std::isinf(g) && (g > 0) == (want > 0);
      // Within the tolerance of the overflow point (half an ulp past the largest finite value), inf is right too.
      else if (std::isinf(g)) ok = std::fabs(want) + tol >= top * (1 + eps / 2) && (g > 0) == (want > 0);
      else ok = std::fabs(g - want) <= tol;
      if (!ok && bad++ < 5) ADD_FAILURE() << "C[" << i << "][" << j << "] = " << g << ", want " << want << " (sum |terms| " << m2 << ")";
    }
  EXPECT_EQ(bad, 0);
}

TEST(GemmMx, EveryFormatPairRagged) {
  if (!on_gfx950()) GTEST_SKIP() << "the MX formats are gfx950's";
  for (mx_format fa : kFormats)
    for (mx_format fb : kFormats) run({67, 45, 96, fa, fb});
}

TEST(GemmMx, OutputsAlphaBeta) {
  if (!on_gfx950()) GTEST_SKIP() << "the MX formats are gfx950's";
  run({130, 129, 64, mx_format::e4m3, mx_format::e2m1, hk::scalar_type::bf16, 0.5f, 2.f});
  run({33, 150, 128, mx_format::e3m2, mx_format::e5m2, hk::scalar_type::f16, 1.f, -1.f});
  run({128, 128, 32, mx_format::e2m3, mx_format::e2m3, hk::scalar_type::fp32, -2.f, 0.5f});
  run({1, 1, 32, mx_format::e2m1, mx_format::e4m3});
}

TEST(GemmMx, EdgeScales) {
  if (!on_gfx950()) GTEST_SKIP() << "the MX formats are gfx950's";
  for (mx_format f : kFormats) run({300, 256, 512, f, f, hk::scalar_type::fp32, 1.f, 0.f, true});
  run({40, 36, 96, mx_format::e4m3, mx_format::e2m1, hk::scalar_type::bf16, 1.f, 0.f, true});
}

// The 8-wave ping-pong kernel (both operands 8-bit, both fp6 or both e2m1, k whole steps of 128 k (e2m1: 256), rows
// 16-byte and scale rows dword-aligned): ragged 256-row tiles, the edge scales, every output.
TEST(GemmMx, PingPongKernel) {
  if (!on_gfx950()) GTEST_SKIP() << "the MX formats are gfx950's";
  for (mx_format fa : {mx_format::e4m3, mx_format::e5m2})
    for (mx_format fb : {mx_format::e4m3, mx_format::e5m2}) run({300, 260, 512, fa, fb, hk::scalar_type::fp32, 1.f, 0.f, true, true});
  run({300, 260, 512, mx_format::e2m1, mx_format::e2m1, hk::scalar_type::fp32, 1.f, 0.f, true, true});
  for (mx_format fa : {mx_format::e2m3, mx_format::e3m2})
    for (mx_format fb : {mx_format::e2m3, mx_format::e3m2}) run({300, 260, 512, fa, fb, hk::scalar_type::fp32, 1.f, 0.f, true, true});
  run({257, 513, 256, mx_format::e3m2, mx_format::e2m3, hk::scalar_type::f16, 1.f, 0.5f, false, true});
  run({257, 513, 256, mx_format::e2m1, mx_format::e2m1, hk::scalar_type::bf16, 0.5f, 2.f, false, true});
  run({100, 300, 384, mx_format::e4m3, mx_format::e5m2, hk::scalar_type::bf16, 1.f, -1.f, false, true});
}

TEST(GemmMx, RefusesBadProblems) {
  std::vector<uint8_t> bytes(4096);
  DeviceArray<uint8_t> buf(bytes);
  ASSERT_EQ(buf.status(), hipSuccess);
  auto base = [&] {
    hk::GemmMxProblem p;
    p.m = 16, p.n = 16, p.k = 64, p.a = buf.p, p.lda = 64, p.b = buf.p + 1024, p.ldb = 64, p.scale_a = buf.p + 2048;
    p.ld_scale_a = 2, p.scale_b = buf.p + 2304, p.ld_scale_b = 2, p.c = buf.p + 3072, p.ldc = 16;
    return p;
  };
  auto refused = [&](hk::GemmMxProblem p, const char* words) {
    const hk::Status s = hk::gemm_mx(p);
    EXPECT_FALSE(s) << words;
    EXPECT_NE(s.message.find(words), std::string::npos) << s.message;
  };
  if (!on_gfx950()) return refused(base(), "need gfx950");
  hk::GemmMxProblem p = base();
  p.k = 100, refused(p, "multiple of 32");
  p = base(), p.m = 0, refused(p, "positive");
  p = base(), p.scale_b = nullptr, refused(p, "null pointer for scale_b");
  p = base(), p.lda = 48, refused(p, "lda");
  p = base(), p.ld_scale_a = 1, refused(p, "ld_scale_a");
  p = base(), p.a_format = mx_format(7), refused(p, "e4m3, e5m2");
  p = base(), p.c_type = hk::scalar_type::fp8_e4m3, refused(p, "C must be fp32, bf16 or f16");
  p = base(), p.a = buf.p + 2, refused(p, "aligned to 4 bytes");
  p = base(), p.m = 100, refused(p, "A does not lie inside");
  p = base(), p.ldc = 8, refused(p, "ldc");
}

}  // namespace
