// hk::gemm_int8 on each virtual device: ragged M, N and K (K not a multiple of the MFMA's 16 / 32: the edge chunk
// is read byte by byte), int32 C exact against int64 sums, bf16 / fp32 C with per-row and per-column scales (each
// optional), padded leading dimensions, and every validation error.
#include <hip/hip_runtime.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gemm/gemm_int8.h"
#include "host/device.h"

namespace {

using O = hk::GemmInt8Problem::Output;

using hk_host::DeviceArray;

void run(int m, int n, int k, O out, bool rows, bool cols, long pad = 4) {
  SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " out " + std::to_string(int(out)));
  const long ld = (k + 3) / 4 * 4 + pad, ldc = n + 3;
  std::mt19937 rng(m * 7 + n * 3 + k);
  std::vector<int8_t> a(size_t(m) * ld), b(size_t(n) * ld);
  for (auto& x : a) x = int8_t(rng());
  for (auto& x : b) x = int8_t(rng());
  std::vector<float> rs(m), cs(n);
  for (auto& x : rs) x = std::uniform_real_distribution<float>(0.25f, 4.f)(rng);
  for (auto& x : cs) x = std::uniform_real_distribution<float>(-0.01f, 0.01f)(rng);
  const size_t ce = out == O::bf16 ? 2 : 4;
  std::vector<uint8_t> c(size_t(m) * ldc * ce, 0xab);
  DeviceArray<int8_t> da(a), db(b);
  DeviceArray<float> drs(rs), dcs(cs);
  DeviceArray<uint8_t> dc(c);
  for (hipError_t e : {da.status(), db.status(), drs.status(), dcs.status(), dc.status()}) ASSERT_EQ(e, hipSuccess);
  hk::GemmInt8Problem p;
  p.m = m, p.n = n, p.k = k, p.a = da.p, p.lda = ld, p.b = db.p, p.ldb = ld, p.c = dc.p, p.ldc = ldc, p.c_type = out;
  if (rows) p.row_scale = drs.p;
  if (cols) p.col_scale = dcs.p;
  const hk::Status s = hk::gemm_int8(p);
  ASSERT_TRUE(s) << s.message;
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  ASSERT_EQ(hipMemcpy(c.data(), dc.p, c.size(), hipMemcpyDeviceToHost), hipSuccess);
  int bad = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < ldc; ++j) {
      const size_t at = (size_t(i) * ldc + j) * ce;
      if (j >= n) {  // past n: untouched
        for (size_t x = 0; x < ce; ++x)
          if (c[at + x] != 0xab && bad++ < 5) ADD_FAILURE() << "C[" << i << "][" << j << "] past n was written";
        continue;
      }
      int64_t acc = 0;
      for (int x = 0; x < k; ++x) acc += int64_t(a[size_t(i) * ld + x]) * b[size_t(j) * ld + x];
      const int32_t want = int32_t(uint32_t(uint64_t(acc)));
      if (out == O::int32) {
        int32_t g;
        std::memcpy(&g, &c[at], 4);
        if (g != want && bad++ < 5) ADD_FAILURE() << "C[" << i << "][" << j << "] = " << g << ", want " << want;
        continue;
      }
      const double ref = double(want) * (rows ? rs[i] : 1.f) * (cols ? cs[j] : 1.f);
      double g;
      if (out == O::fp32) {
        float f;
        std::memcpy(&f, &c[at], 4);
        g = f;
      } else {
        uint16_t h;
        std::memcpy(&h, &c[at], 2);
        g = std::bit_cast<float>(uint32_t(h) << 16);
      }
      const double tol = ((out == O::bf16 ? 0x1p-8 : 0) + 0x1p-22) * std::fabs(ref) + 1e-30;
      if (!(std::fabs(g - ref) <= tol) && bad++ < 5) ADD_FAILURE() << "C[" << i << "][" << j << "] = " << g << ", want " << ref;
    }
  EXPECT_EQ(bad, 0);
}

TEST(GemmInt8, Int32Exact) {
  run(128, 128, 64, O::int32, false, false);
  run(67, 45, 37, O::int32, false, false);     // K edge: a partial chunk
  run(300, 256, 512, O::int32, false, false, 0);
  run(1, 200, 4, O::int32, false, false);
}

TEST(GemmInt8, ScaledOutputs) {
  run(130, 129, 96, O::bf16, true, true);
  run(33, 150, 40, O::fp32, true, false);
  run(64, 70, 16, O::bf16, false, true);
  run(20, 20, 100, O::fp32, false, false);
}

TEST(GemmInt8, RefusesBadProblems) {
  std::vector<int8_t> bytes(8192);
  DeviceArray<int8_t> buf(bytes);
  ASSERT_EQ(buf.status(), hipSuccess);
  auto base = [&] {
    hk::GemmInt8Problem p;
    p.m = 16, p.n = 16, p.k = 64, p.a = buf.p, p.lda = 64, p.b = buf.p + 1024, p.ldb = 64, p.c = buf.p + 4096, p.ldc = 16;
    return p;
  };
  auto refused = [&](hk::GemmInt8Problem p, const char* words) {
    const hk::Status s = hk::gemm_int8(p);
    EXPECT_FALSE(s) << words;
    EXPECT_NE(s.message.find(words), std::string::npos) << s.message;
  };
  hk::GemmInt8Problem p = base();
  p.k = 0, refused(p, "positive");
  p = base(), p.b = nullptr, refused(p, "null pointer for B");
  p = base(), p.lda = 62, refused(p, "lda");
  p = base(), p.ldb = 32, refused(p, "ldb");
  p = base(), p.ldc = 15, refused(p, "ldc");
  p = base(), p.row_scale = reinterpret_cast<const float*>(buf.p), refused(p, "scales need a bf16 or fp32 C");
  p = base(), p.a = buf.p + 1, refused(p, "aligned to 4 bytes");
  p = base(), p.c_type = O(9), refused(p, "C must be int32");
  p = base(), p.m = 200, refused(p, "A does not lie inside");
}

}  // namespace
