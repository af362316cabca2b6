// hk::gemm_blockwise on each virtual device: e4m3 A and B (N x K) in the device arch's format, fp32 scales per 1 x 128
// of A and 128 x 128 of B spread over 2^-8 .. 2^8 (or powers of two), ragged M and N (partial scale blocks of B),
// padded leading dimensions of the operands and the scales, both feeds, bf16 and fp32 C, and every refusal. The
// reference decodes the quantized values and applies each 128-k block's scales in double precision.
#include <hip/hip_runtime.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gemm/gemm_blockwise.h"
#include "host/device.h"
#include "host/gtest.h"
#include "host/scalar_type.h"

namespace {

using dtype = hk::scalar_type;
using Feed = hk::GemmProblem::Feed;
using hk_host::device_format;

struct Case {
  int m, n, k;
  dtype out = dtype::bf16;
  bool pow2 = false;
  long pad = 0;  // extra elements per row of A, B, C and the scales
  Feed feed = Feed::automatic;
};

void run(const Case& c) {
  SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) + " -> " + hk::to_string(c.out) +
               (c.pow2 ? " pow2" : "") + " pad " + std::to_string(c.pad) + (c.feed == Feed::registers ? " registers" : ""));
  const hk_host::Format f8 = device_format(dtype::fp8_e4m3), fc = device_format(c.out);
  const long ld = c.k + 16 * c.pad, kb = c.k / 128, nb = (c.n + 127) / 128, lds = kb + c.pad, ldc = c.n + c.pad;
  hk_host::DeviceMatrix A(hk_host::random_matrix(c.m, c.k, f8, 1, 4.f, ld), f8), B(hk_host::random_matrix(c.n, c.k, f8, 2, 4.f, ld), f8);
  hk_host::DeviceMatrix C(hk_host::random_matrix(c.m, c.n, fc, 3, 1.f, ldc), fc);
  std::mt19937 rng(c.m + c.n + c.k);
  auto scale = [&] {
    const float e = std::uniform_real_distribution<float>(-8.f, 8.f)(rng);
    return c.pow2 ? std::ldexp(1.f, int(std::lround(e))) : std::exp2(e);
  };
  std::vector<float> sa(size_t(c.m) * lds), sb(size_t(nb) * lds);
  for (float& x : sa) x = scale();
  for (float& x : sb) x = scale();
  hk_host::DeviceArray<float> dsa(sa), dsb(sb);
  for (hipError_t e : {A.status(), B.status(), C.status(), dsa.status(), dsb.status()}) ASSERT_EQ(e, hipSuccess);
  const hk_host::Matrix c0 = C.host;
  hk::GemmBlockwiseProblem p;
  p.m = c.m, p.n = c.n, p.k = c.k, p.a = A.data(), p.lda = ld, p.b = B.data(), p.ldb = ld, p.c = C.data(), p.ldc = ldc;
  p.scale_a = dsa.p, p.ld_scale_a = lds, p.scale_b = dsb.p, p.ld_scale_b = lds, p.c_type = c.out, p.pow2_scales = c.pow2;
  p.feed = c.feed;
  const hk::Status s = hk::gemm_blockwise(p);
  ASSERT_TRUE(s) << s.message;
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  const hk_host::Matrix got = C.download();
  hk_host::Comparison check("C");
  for (int i = 0; i < c.m; ++i)
    for (int j = 0; j < c.n; ++j) {
      double value = 0, magnitude = 0;
      for (int x = 0; x < kb; ++x) {
        double part = 0, mag = 0;
        for (int y = 128 * x; y < 128 * x + 128; ++y) {
          const double t = double(A.host(i, y)) * B.host(j, y);
          part += t, mag += std::fabs(t);
        }
        const double s2 = double(sa[size_t(i) * lds + x]) * sb[size_t(j / 128) * lds + x];
        value += part * s2, magnitude += mag * s2;
      }
      check.check(i, j, got(i, j), value, hk_host::matmul_tolerance({value, magnitude}, c.k, fc.type));
    }
  hk_host::expect_ok(check);
  int written = 0;  // padding past n is never written
  for (int i = 0; i < c.m; ++i)
    for (long j = c.n; j < ldc; ++j)
      if (got(i, j) != c0(i, j) && written++ < 5) ADD_FAILURE() << "padding at " << i << "," << j << " was written";
}

TEST(GemmBlockwise, SquareTiles) { run({256, 256, 512}); }

TEST(GemmBlockwise, RaggedMAndN) {
  run({300, 200, 384, dtype::fp32});
  run({1, 130, 128, dtype::bf16, false, 1});
  run({129, 1, 256, dtype::bf16, false, 0, Feed::registers});
  run({70, 100, 1024});  // waves past N (their scales of B clamped to the last block), eight 128-k blocks
}

TEST(GemmBlockwise, PowerOfTwoScales) { run({160, 136, 256, dtype::bf16, true, 2}); }

TEST(GemmBlockwise, Refusals) {
  hk_host::DeviceArray<uint8_t> buf(std::vector<uint8_t>(1 << 16));
  ASSERT_EQ(buf.status(), hipSuccess);
  auto base = [&] {
    hk::GemmBlockwiseProblem p;
    p.m = p.n = 64, p.k = 128;
    p.a = buf.p, p.lda = 128, p.b = buf.p + 8192, p.ldb = 128, p.c = buf.p + 16384, p.ldc = 64;
    p.scale_a = reinterpret_cast<const float*>(buf.p + 32768), p.ld_scale_a = 1;
    p.scale_b = reinterpret_cast<const float*>(buf.p + 33024), p.ld_scale_b = 1;
    return p;
  };
  auto refused = [](const hk::GemmBlockwiseProblem& p, const char* fragment) {
    const hk::Status s = hk::gemm_blockwise(p);
    EXPECT_FALSE(s) << fragment;
    EXPECT_NE(s.message.find(fragment), std::string::npos) << "message: " << s.message;
  };
  { const hk::Status s = hk::gemm_blockwise(base()); EXPECT_TRUE(s) << s.message; }
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  { auto p = base(); p.k = 100, p.lda = p.ldb = 128; refused(p, "must be a multiple of 128"); }
  { auto p = base(); p.m = 0; refused(p, "must be positive"); }
  { auto p = base(); p.scale_a = nullptr; refused(p, "null pointer for scale_a"); }
  { auto p = base(); p.scale_b = nullptr; refused(p, "null pointer for scale_b"); }
  { auto p = base(); p.c_type = dtype::f16; refused(p, "C must be bf16 or fp32"); }
  { auto p = base(); p.lda = 64; refused(p, "lda"); }
  { auto p = base(); p.k = 256, p.lda = p.ldb = 256; refused(p, "ld_scale_a (1) is less than k / 128"); }
  { auto p = base(); p.ld_scale_b = 0; refused(p, "ld_scale_b"); }
  { auto p = base(); p.scale_a = reinterpret_cast<const float*>(buf.p + 32770); refused(p, "aligned to 4 bytes"); }
  { auto p = base(); p.m = 1000, p.ldc = 64; refused(p, "does not lie inside"); }
  { auto p = base(); p.scale_b = reinterpret_cast<const float*>(buf.p + (1 << 16) - 4), p.n = 200, p.ldc = 200, p.c = buf.p;
    refused(p, "scale_b (ceil(n/128) x k/128) does not lie inside"); }
  { auto p = base(); p.feed = Feed::lds_dma, p.a = buf.p + 1; refused(p, "LDS DMA feed"); }
}

}  // namespace
