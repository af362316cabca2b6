// hk::grouped_gemm on each virtual device: ragged groups with empty ones (first, middle, last), one group, groups
// smaller than a tile and larger than one, bf16 / f16 / fp8 e4m3 / e5m2 inputs, B (G, K, N) and (G, N, K), padded
// group strides, int32 and int64 offsets, alpha / beta, the registers feed, and every refusal. Each group's C is
// checked against the host toolkit's double-precision reference of its own rows of A and its own B; C's padding
// columns must stay untouched.
#include <hip/hip_runtime.h>

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gemm/gemm.h"
#include "host/device.h"
#include "host/gtest.h"
#include "host/scalar_type.h"

namespace {

using dtype = hk::scalar_type;
using Feed = hk::GemmProblem::Feed;
using hk_host::device_format;

bool is_fp8(dtype t) { return t == dtype::fp8_e4m3 || t == dtype::fp8_e5m2; }

// Rows r0 .. r0 + rows - 1 of m.
hk_host::Matrix rows_of(const hk_host::Matrix& m, long r0, long rows) {
  hk_host::Matrix out(rows, m.cols);
  for (long i = 0; i < rows; ++i)
    for (long j = 0; j < m.cols; ++j) out.values[size_t(i * out.ld + j)] = m(r0 + i, j);
  return out;
}

struct Case {
  std::vector<long> rows;  // per group
  int n, k;
  bool b_is_nk;
  dtype in, out = dtype::fp32;
  bool int64 = false;
  long b_pad_rows = 0;  // rows of padding between the groups' B matrices
  float alpha = 1.f, beta = 0.f;
  Feed feed = Feed::automatic;
};

void run(const Case& c) {
  std::string what = "groups";
  for (long r : c.rows) what += " " + std::to_string(r);
  SCOPED_TRACE(what + " n " + std::to_string(c.n) + " k " + std::to_string(c.k) + (c.b_is_nk ? " A*B^T " : " A*B ") +
               hk::to_string(c.in) + "->" + hk::to_string(c.out) + (c.feed == Feed::registers ? " registers" : ""));
  const int groups = int(c.rows.size());
  std::vector<long> offsets{0};
  for (long r : c.rows) offsets.push_back(offsets.back() + r);
  const long m = offsets.back();
  const hk_host::Format fin = device_format(c.in), fout = device_format(c.out);
  const float limit = is_fp8(c.in) ? 4.f : 1.f;
  const long b_rows = c.b_is_nk ? c.n : c.k, b_cols = c.b_is_nk ? c.k : c.n, unit = is_fp8(c.in) ? 16 : 8;
  const long lda = (c.k + unit - 1) / unit * unit, ldb = (b_cols + unit - 1) / unit * unit, ldc = c.n + 3;
  hk_host::DeviceMatrix A(hk_host::random_matrix(m, c.k, fin, 1, limit, lda), fin);
  hk_host::DeviceMatrix B(hk_host::random_matrix(groups * (b_rows + c.b_pad_rows), b_cols, fin, 2, limit, ldb), fin);
  hk_host::DeviceMatrix C(hk_host::random_matrix(m, c.n, fout, 3, 1.f, ldc), fout);
  std::vector<int32_t> off32(offsets.begin(), offsets.end());
  hk_host::DeviceArray<long> off64(offsets);
  hk_host::DeviceArray<int32_t> off32d(off32);
  for (hipError_t e : {A.status(), B.status(), C.status(), off64.status(), off32d.status()}) ASSERT_EQ(e, hipSuccess);
  const hk_host::Matrix c0 = C.host;
  hk::GroupedGemmProblem p;
  p.m = int(m), p.n = c.n, p.k = c.k, p.a = A.data(), p.lda = lda, p.b = B.data(), p.ldb = ldb, p.b_is_nk = c.b_is_nk;
  p.c = C.data(), p.ldc = ldc, p.ab_type = c.in, p.c_type = c.out, p.alpha = c.alpha, p.beta = c.beta, p.feed = c.feed;
  p.groups = groups, p.offsets_int64 = c.int64, p.b_group_stride = c.b_pad_rows ? (b_rows + c.b_pad_rows) * ldb : 0;
  p.offsets = c.int64 ? static_cast<const void*>(off64.p) : off32d.p;
  const hk::Status s = hk::grouped_gemm(p);
  ASSERT_TRUE(s) << s.message;
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  const hk_host::Matrix got = C.download();
  for (int g = 0; g < groups; ++g) {
    if (c.rows[g] == 0) continue;
    const hk_host::Matrix a = rows_of(A.host, offsets[g], c.rows[g]), b = rows_of(B.host, g * (b_rows + c.b_pad_rows), b_rows);
    const hk_host::Matrix cg = rows_of(c0, offsets[g], c.rows[g]);
    const hk_host::Matmul ref{{a}, {b, c.b_is_nk}, &cg, c.alpha, c.beta};
    hk_host::expect_ok(hk_host::compare(rows_of(got, offsets[g], c.rows[g]), ref, fout.type, "C of group " + std::to_string(g)));
  }
  int written = 0;  // padding past n is never written
  for (long i = 0; i < m; ++i)
    for (long j = c.n; j < ldc; ++j)
      if (got(i, j) != c0(i, j) && written++ < 5) ADD_FAILURE() << "padding at " << i << "," << j << " was written";
}

TEST(GroupedGemm, RaggedGroupsWithEmptyOnes) {
  run({{0, 17, 300, 1, 0, 129, 0}, 200, 96, false, dtype::bf16});
  run({{0, 17, 300, 1, 0, 129, 0}, 200, 96, true, dtype::bf16, dtype::bf16, true});
}

TEST(GroupedGemm, OneGroup) {
  run({{77}, 64, 128, true, dtype::f16, dtype::fp32, true, 0, 0.5f, 1.f});
  run({{300}, 256, 64, false, dtype::bf16});
}

TEST(GroupedGemm, PaddedGroupStrideAlphaBetaAndRegistersFeed) {
  run({{40, 0, 3, 260}, 72, 80, true, dtype::bf16, dtype::fp32, false, 5, 2.f, -1.f});
  run({{40, 0, 3, 260}, 70, 99, false, dtype::f16, dtype::bf16, true, 2, 1.f, 0.f, Feed::registers});
}

TEST(GroupedGemmFp8, BothOrientationsBothFormats) {
  run({{0, 130, 5, 0, 260}, 144, 256, true, dtype::fp8_e4m3, dtype::fp32, false, 0, 0.25f});
  run({{0, 130, 5, 0, 260}, 144, 256, false, dtype::fp8_e4m3, dtype::bf16, true});
  run({{33, 0, 200}, 100, 72, true, dtype::fp8_e5m2, dtype::fp32, true, 3});
  run({{33, 0, 200}, 100, 72, false, dtype::fp8_e5m2, dtype::fp32, false, 0, 1.f, 0.f, Feed::registers});
}

TEST(GroupedGemm, Refusals) {
  const std::vector<long> good{0, 10, 10, 64};
  hk_host::DeviceArray<long> off(good), bad_start(std::vector<long>{1, 10, 10, 64}),
      decreasing(std::vector<long>{0, 30, 10, 64}), short_end(std::vector<long>{0, 10, 10, 60});
  hk_host::DeviceArray<uint8_t> A(std::vector<uint8_t>(64 * 64 * 2)), B(std::vector<uint8_t>(3 * 64 * 64 * 2)),
      C(std::vector<uint8_t>(64 * 64 * 4));
  for (hipError_t e : {off.status(), bad_start.status(), decreasing.status(), short_end.status(), A.status(), B.status(), C.status()})
    ASSERT_EQ(e, hipSuccess);
  auto base = [&] {
    hk::GroupedGemmProblem p;
    p.m = p.n = p.k = 64;
    p.a = A.p, p.b = B.p, p.c = C.p, p.lda = p.ldb = p.ldc = 64;
    p.groups = 3, p.offsets = off.p, p.offsets_int64 = true;
    return p;
  };
  auto refused = [&](const hk::GroupedGemmProblem& p, const char* fragment) {
    const hk::Status s = hk::grouped_gemm(p);
    EXPECT_FALSE(s) << fragment;
    EXPECT_NE(s.message.find(fragment), std::string::npos) << "message: " << s.message;
    EXPECT_EQ(s.message.rfind("hk::grouped_gemm: ", 0), 0u) << s.message;
  };
  { const hk::Status s = hk::grouped_gemm(base()); EXPECT_TRUE(s) << s.message; }
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  { auto p = base(); p.groups = 0; refused(p, "groups must be positive"); }
  { auto p = base(); p.offsets = nullptr; refused(p, "null pointer for the offsets"); }
  { auto p = base(); p.offsets = reinterpret_cast<const char*>(off.p) + 4; refused(p, "aligned to their 8-byte"); }
  { auto p = base(); p.groups = 4; refused(p, "do not lie inside one device allocation"); }
  { auto p = base(); p.offsets = bad_start.p; refused(p, "offsets[0] must be 0"); }
  { auto p = base(); p.offsets = decreasing.p; refused(p, "must not decrease"); }
  { auto p = base(); p.offsets = short_end.p; refused(p, "must be m, the rows of A and C"); }
  { auto p = base(); p.ab_type = dtype::fp32; refused(p, "A and B must be bf16 or f16"); }
  { auto p = base(); p.c_type = dtype::f16; refused(p, "C must be fp32 or bf16"); }
  { auto p = base(); p.m = 0; refused(p, "must be positive"); }
  { auto p = base(); p.b_group_stride = 64 * 63; refused(p, "the groups' B matrices would overlap"); }
  { auto p = base(); p.b_group_stride = 64 * 65; refused(p, "B does not lie inside"); }
  { auto p = base(); p.lda = 63; refused(p, "lda"); }
  { auto p = base(); p.feed = Feed::lds_dma, p.b_group_stride = 64 * 64 + 1, p.groups = 2, p.m = 10;
    p.offsets = off.p; refused(p, "LDS DMA feed"); }
}

}  // namespace
