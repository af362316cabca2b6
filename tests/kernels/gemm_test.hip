// hk::gemm on each virtual device: many shapes (square, skinny, ragged in every dimension, K = 16), both orientations
// of B, bf16, f16, fp8 e4m3 and fp8 e5m2 inputs, fp32 and bf16 outputs, alpha/beta, and every validation error. fp8
// inputs are random codes of the device arch's format; the host reference decodes those bytes with its own model of
// the format (gfx942: FNUZ e4m3, bias 8, max 240, and FNUZ e5m2, bias 16, max 57344, 0x80 the only NaN, no inf;
// gfx950: OCP e4m3fn, bias 7, max 448, S.1111.111 NaN, and OCP e5m2, bias 15, S.11111.00 inf, S.11111.xx NaN): the
// host toolkit's (tests/host/) operands, reference and tolerance, on the arch hk_host::device_arch() reports.
#include <hip/hip_runtime.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gemm/gemm.h"
#include "host/scalar_type.h"
#include "host/gtest.h"

namespace {

bool is_fp8(hk::scalar_type t) { return t == hk::scalar_type::fp8_e4m3 || t == hk::scalar_type::fp8_e5m2; }

// t as the device stores it, in the host toolkit's model (tests/host/; fp8 in the device arch's format).
using hk_host::device_format;

// A device matrix of `rows` x `ld` elements of type t, filled with seeded random values exact in t (fp8: codes of
// magnitude at most 4, subnormals included; else uniform in [-1, 1]), the host copy kept.
struct Matrix : hk_host::DeviceMatrix {
  long ld;
  void* dev;
  Matrix(hk::scalar_type t, long rows, long cols, long ld_, uint32_t seed, long offset = 0)
      : DeviceMatrix(hk_host::random_matrix(rows, cols, device_format(t), seed, is_fp8(t) ? 4.f : 1.f, ld_), device_format(t),
                     offset),
        ld(ld_), dev(data()) {
    EXPECT_EQ(status(), hipSuccess);
  }
};

struct Case {
  int m, n, k;
  bool b_is_nk;
  hk::scalar_type in, out;
  float alpha = 1.f, beta = 0.f;
  bool tight = false;  // lda, ldb, ldc equal to the rows (else padded past the next 16-byte boundary)
  long offset = 0;     // A, B and C start this many elements past their allocations' (16-byte aligned) starts
};

std::string name(const Case& c) {
  return std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) + (c.b_is_nk ? " A*B^T " : " A*B ") +
         hk::to_string(c.in) + "->" + hk::to_string(c.out) + " alpha=" + std::to_string(c.alpha) +
         " beta=" + std::to_string(c.beta) + (c.tight ? " tight" : "") + (c.offset ? " offset " + std::to_string(c.offset) : "");
}

using Feed = hk::GemmProblem::Feed;
hk_host::Matrix run_feed(const Case& c, Feed feed);

// Every case runs through registers and with the feed hk::gemm picks (straight into LDS where A and B allow it, the
// skinny kernel for m <= 256 where rows start on 16-byte boundaries); m <= 256 also straight into LDS where A and B
// allow it, so that the tiled kernels still see the small shapes.
void run(const Case& c) {
  run_feed(c, Feed::registers);
  run_feed(c, Feed::automatic);
  if (c.m <= 256) run_feed(c, Feed::lds_dma);
}

// The case through `feed`; returns C as computed (lds_dma refused where A and B do not allow it: nothing is checked).
hk_host::Matrix run_feed(const Case& c, Feed feed) {
  SCOPED_TRACE(name(c) + (feed == Feed::registers ? " registers" : feed == Feed::lds_dma ? " lds_dma" : " automatic"));
  // Leading dimensions equal to the rows, or padded past the next 16-byte boundary.
  const long unit = is_fp8(c.in) ? 16 : 8;
  auto ld = [&](long cols) { return c.tight ? cols : (cols + unit - 1) / unit * unit + unit; };
  Matrix A(c.in, c.m, c.k, ld(c.k), 1, c.offset), C(c.out, c.m, c.n, c.tight ? c.n : c.n + 3, 3, c.offset);
  Matrix B(c.in, c.b_is_nk ? c.n : c.k, c.b_is_nk ? c.k : c.n, ld(c.b_is_nk ? c.k : c.n), 2, c.offset);
  const hk_host::Matrix c0 = C.host;
  hk::GemmProblem p;
  p.m = c.m, p.n = c.n, p.k = c.k;
  p.a = A.dev, p.lda = A.ld, p.b = B.dev, p.ldb = B.ld, p.b_is_nk = c.b_is_nk, p.c = C.dev, p.ldc = C.ld;
  p.ab_type = c.in, p.c_type = c.out, p.alpha = c.alpha, p.beta = c.beta, p.feed = feed;
  hk::Status s = hk::gemm(p);
  if (feed == Feed::lds_dma && !s && s.message.find("LDS DMA feed needs") != std::string::npos) return hk_host::Matrix(0, 0);
  EXPECT_TRUE(s) << s.message;
  EXPECT_EQ(hipDeviceSynchronize(), hipSuccess);
  if (!s) return hk_host::Matrix(0, 0);
  const hk_host::Matrix got = C.download();
  // fp32 accumulation in another order (the toolkit's bound), then the rounding of a bf16 C.
  const hk_host::Matmul ref{{A.host}, {B.host, c.b_is_nk}, &c0, c.alpha, c.beta};
  hk_host::expect_ok(hk_host::compare(got, ref, device_format(c.out).type, "C"));
  int written = 0;  // padding past n is never written
  for (int i = 0; i < c.m; ++i)
    for (int j = c.n; j < C.ld; ++j)
      if (got(i, j) != c0(i, j) && written++ < 5) ADD_FAILURE() << "padding at " << i << "," << j << " was written";
  EXPECT_EQ(written, 0);
  return got;
}

using dtype = hk::scalar_type;

TEST(Gemm, SquareTiles) {
  run({128, 128, 64, false, dtype::bf16, dtype::fp32});
  run({256, 128, 128, true, dtype::bf16, dtype::fp32});
}

// More 256 x 256 tiles than CUs with a last round under half full (19 x 17 = 323 tiles: 19 left over on gfx942's 304
// CUs, 67 on gfx950's 256): whole rounds of 256 x 256 tiles, then the last round's tiles as 128 x 256 halves, ragged
// in m and n (the last tile row's lower half lies partly outside C), several K steps, C read back (beta).
TEST(Gemm, LastRoundInHalfTiles) {
  run_feed({4800, 4302, 136, true, dtype::bf16, dtype::fp32, -2.f, 0.75f}, Feed::automatic);
  run_feed({4800, 4302, 40, false, dtype::f16, dtype::bf16}, Feed::automatic);
  run_feed({4800, 4302, 64, true, dtype::fp8_e5m2, dtype::fp32}, Feed::automatic);
}

TEST(Gemm, RaggedEveryDimension) {
  run({100, 70, 40, false, dtype::bf16, dtype::fp32});
  run({129, 257, 72, true, dtype::bf16, dtype::fp32});
  run({200, 130, 200, false, dtype::f16, dtype::fp32});
}

// Operands larger than the kernels' tiles: the same run loads and stores tiles that lie inside A, B and C (the
// unchecked paths) and tiles on their edges in every dimension (the checked ones), with padded leading dimensions.
TEST(Gemm, InsideAndEdgeTilesInOneRun) {
  run({512, 300, 200, true, dtype::bf16, dtype::fp32});
  run({300, 512, 136, false, dtype::f16, dtype::fp32});
  run({256, 260, 64, true, dtype::bf16, dtype::fp32, -2.f, 0.75f});  // C read back (beta) in inside and edge tiles
  run({260, 512, 40, false, dtype::f16, dtype::bf16, 0.5f, -1.f});
}

TEST(Gemm, KNotAWholeDmaUnit) {  // k = 20, 10: the registers feed serves these
  run({45, 50, 20, false, dtype::bf16, dtype::fp32});
  run({70, 33, 10, true, dtype::f16, dtype::fp32});
}

TEST(Gemm, LdsDmaFeedIsRefusedWhereItCannotRun) {
  Matrix A(dtype::bf16, 300, 64, 64, 1), B(dtype::bf16, 280, 64, 64, 2), C(dtype::fp32, 300, 280, 280, 3);
  hk::GemmProblem p;
  p.m = 300, p.n = 280, p.k = 64, p.a = A.dev, p.lda = 64, p.b = B.dev, p.ldb = 64, p.b_is_nk = true, p.c = C.dev, p.ldc = 280;
  p.feed = Feed::lds_dma;
  hk::Status s = hk::gemm(p);
  ASSERT_TRUE(s) << s.message;
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  p.k = 21, p.lda = p.ldb = 24;  // 21 elements: not a whole DMA unit on either arch
  s = hk::gemm(p);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message.find("LDS DMA feed needs"), std::string::npos) << s.message;
}

TEST(Gemm, SkinnyAndSmallK) {
  run({1, 300, 16, true, dtype::bf16, dtype::fp32});
  run({300, 1, 24, false, dtype::bf16, dtype::fp32});
  run({64, 64, 16, false, dtype::f16, dtype::fp32});
  run({33, 17, 8, true, dtype::f16, dtype::fp32});
}

TEST(Gemm, Bf16OutputAndAlphaBeta) {
  run({130, 140, 96, true, dtype::bf16, dtype::bf16});
  run({128, 128, 64, false, dtype::f16, dtype::bf16, 0.5f, 0.f});
  run({70, 90, 48, true, dtype::bf16, dtype::fp32, -2.f, 0.75f});
}

TEST(Gemm, ValidationErrors) {
  Matrix A(dtype::bf16, 64, 64, 64, 1), B(dtype::bf16, 64, 64, 64, 2), C(dtype::fp32, 64, 64, 64, 3);
  auto base = [&] {
    hk::GemmProblem p;
    p.m = p.n = p.k = 64;
    p.a = A.dev, p.b = B.dev, p.c = C.dev, p.lda = p.ldb = p.ldc = 64;
    return p;
  };
  auto expect_error = [&](hk::GemmProblem p, const char* fragment) {
    hk::Status s = hk::gemm(p);
    EXPECT_FALSE(s) << fragment;
    EXPECT_NE(s.message.find(fragment), std::string::npos) << "message: " << s.message;
  };
  { auto p = base(); p.m = 0; expect_error(p, "must be positive"); }
  { auto p = base(); p.k = -5; expect_error(p, "must be positive"); }
  { auto p = base(); p.a = nullptr; expect_error(p, "null pointer for A"); }
  { auto p = base(); p.c = nullptr; expect_error(p, "null pointer for C"); }
  { auto p = base(); p.ab_type = dtype::fp32; expect_error(p, "A and B must be bf16 or f16"); }
  { auto p = base(); p.c_type = dtype::f16; expect_error(p, "C must be fp32 or bf16"); }
  { auto p = base(); p.lda = 32; expect_error(p, "lda"); }
  { auto p = base(); p.ldb = 60; expect_error(p, "ldb"); }
  { auto p = base(); p.ldc = 10; expect_error(p, "ldc"); }
  { auto p = base(); p.a = static_cast<char*>(A.dev) + 1; p.m = 8; expect_error(p, "aligned to their element size"); }
  { auto p = base(); p.c = static_cast<char*>(C.dev) + 2; p.m = 8; expect_error(p, "C is not aligned"); }
  { auto p = base(); p.m = 65; expect_error(p, "A does not lie inside"); }
  { auto p = base(); p.n = 70; p.ldb = 72; p.ldc = 70; expect_error(p, "B does not lie inside"); }
  int on_host[64];
  { auto p = base(); p.c = on_host; expect_error(p, "C does not lie inside"); }
}

// Any leading dimension and any element-aligned pointer: k = 1, 3, 7, 10 with lda = k, odd n with ldb = n, pointers
// one element past a 16-byte boundary. These take the registers feed's element loads (automatic falls back to it).
TEST(GemmAnyLayout, TightLeadingDimensions) {
  for (int k : {1, 3, 7, 10}) {
    run({64, 10, k, false, dtype::bf16, dtype::fp32, 1.f, 0.f, true});
    run({37, 21, k, true, dtype::f16, dtype::fp32, 1.f, 0.f, true});
  }
  run({3, 5, 7, false, dtype::bf16, dtype::fp32, 1.f, 0.f, true});
  run({130, 131, 33, false, dtype::f16, dtype::bf16, 1.f, 0.f, true});
}

TEST(GemmAnyLayout, PointersOffsetByOneElement) {
  run({70, 45, 40, false, dtype::bf16, dtype::fp32, 1.f, 0.f, false, 1});
  run({33, 64, 24, true, dtype::f16, dtype::bf16, 2.f, 0.5f, true, 1});
}

TEST(GemmAnyLayoutFp8, TightLeadingDimensionsAndOffsets) {
  for (int k : {1, 3, 7, 10}) run({40, 9, k, false, dtype::fp8_e4m3, dtype::fp32, 1.f, 0.f, true});
  run({3, 5, 7, true, dtype::fp8_e5m2, dtype::fp32, 1.f, 0.f, true});
  run({65, 33, 45, true, dtype::fp8_e4m3, dtype::bf16, 1.f, 0.f, true, 1});
  run({50, 31, 64, false, dtype::fp8_e5m2, dtype::fp32, 1.f, 0.f, false, 1});
}

// fp8 e4m3 (the device arch's format): both feeds (straight into LDS where k, lda, ldb allow it, through registers
// otherwise and when asked), both orientations of B, fp32 and bf16 C.
TEST(GemmFp8, SquareTiles) {
  run({128, 128, 128, true, dtype::fp8_e4m3, dtype::fp32});
  run({256, 256, 256, true, dtype::fp8_e4m3, dtype::fp32});
  run({128, 256, 384, false, dtype::fp8_e4m3, dtype::fp32});
}

TEST(GemmFp8, RaggedEveryDimension) {
  run({100, 70, 48, true, dtype::fp8_e4m3, dtype::fp32});    // k a whole DMA unit: loads straight into LDS
  run({129, 257, 200, true, dtype::fp8_e4m3, dtype::fp32});  // k ragged in the last 128/64-deep step
  run({130, 140, 100, true, dtype::fp8_e4m3, dtype::fp32});  // k = 100: not a 16-byte unit, through registers
  run({77, 135, 150, false, dtype::fp8_e4m3, dtype::fp32});
  run({200, 96, 272, false, dtype::fp8_e4m3, dtype::fp32});
}

TEST(GemmFp8, KIs32) {
  run({64, 64, 32, true, dtype::fp8_e4m3, dtype::fp32});
  run({150, 40, 32, false, dtype::fp8_e4m3, dtype::fp32});
}

TEST(GemmFp8, Bf16OutputAndAlphaBeta) {
  run({130, 140, 96, true, dtype::fp8_e4m3, dtype::bf16});
  run({128, 128, 160, false, dtype::fp8_e4m3, dtype::bf16, 0.5f, 0.f});
  run({70, 90, 48, true, dtype::fp8_e4m3, dtype::fp32, -2.f, 0.75f});
}

// fp8 e5m2 (the device arch's format, FNUZ on gfx942, OCP on gfx950) through the same kernel: both feeds, both
// orientations of B, ragged sizes, fp32 and bf16 C.
TEST(GemmFp8E5m2, SquareTiles) {
  run({128, 128, 128, true, dtype::fp8_e5m2, dtype::fp32});
  run({128, 256, 256, false, dtype::fp8_e5m2, dtype::fp32});
}

TEST(GemmFp8E5m2, RaggedEveryDimension) {
  run({100, 70, 48, true, dtype::fp8_e5m2, dtype::fp32});    // straight into LDS
  run({129, 257, 200, true, dtype::fp8_e5m2, dtype::fp32});  // k ragged in the last step
  run({130, 140, 100, true, dtype::fp8_e5m2, dtype::fp32});  // k = 100: through registers
  run({77, 135, 150, false, dtype::fp8_e5m2, dtype::fp32});
  run({200, 96, 272, false, dtype::fp8_e5m2, dtype::fp32});
}

TEST(GemmFp8E5m2, Bf16OutputAndAlphaBeta) {
  run({130, 140, 96, true, dtype::fp8_e5m2, dtype::bf16});
  run({128, 128, 160, false, dtype::fp8_e5m2, dtype::bf16, 0.5f, 0.f});
  run({70, 90, 48, false, dtype::fp8_e5m2, dtype::fp32, -2.f, 0.75f});
}

// The skinny kernel (m <= 256, rows on 16-byte boundaries: hk::gemm's automatic feed): m = 1, 7, 16, 64, 256 and
// between, n and k ragged (k not a whole step: the last step's chunks zero-filled; a K x N B's column chunks crossing
// n), both orientations of B, every input type, fp32 and bf16 C, alpha and beta; few blocks of C and long K split
// into ranges summed by the reduce kernel (n = 40, 96), many blocks in one pass (n = 2100).
TEST(GemmSkinny, RowsTypesAndLayouts) {
  for (bool nk : {true, false}) {
    run_feed({1, 2100, 520, nk, dtype::bf16, dtype::fp32}, Feed::automatic);
    run_feed({7, 96, 3000, nk, dtype::f16, dtype::fp32, -2.f, 0.75f}, Feed::automatic);
    run_feed({16, 40, 4104, nk, dtype::fp8_e4m3, dtype::bf16}, Feed::automatic);
    run_feed({64, 300, 1000, nk, dtype::fp8_e5m2, dtype::fp32, 0.5f, -1.f}, Feed::automatic);
    run_feed({256, 72, 264, nk, dtype::bf16, dtype::bf16, 1.f, 0.5f}, Feed::automatic);
    run_feed({33, 130, 136, nk, dtype::f16, dtype::fp32}, Feed::automatic);
  }
  run_feed({100, 50, 2048, true, dtype::fp8_e4m3, dtype::fp32}, Feed::automatic);
  run_feed({17, 257, 72, false, dtype::fp8_e5m2, dtype::bf16, -1.f, 2.f}, Feed::automatic);
  // m > 128: 128-row blocks (gfx942: 64-row ones where the last block is at most half full: m = 150, 192), n and k
  // ragged; fp8 A * B^T in 128-row blocks on both archs at m = 250.
  run_feed({150, 130, 1000, true, dtype::fp8_e4m3, dtype::fp32, 0.5f, 1.f}, Feed::automatic);
  run_feed({250, 70, 1000, true, dtype::fp8_e5m2, dtype::bf16, -1.f, 0.5f}, Feed::automatic);
  run_feed({192, 90, 520, false, dtype::f16, dtype::bf16}, Feed::automatic);
  run_feed({200, 100, 328, true, dtype::bf16, dtype::fp32, 1.f, -1.f}, Feed::automatic);
}

// Every sum is taken in a fixed order: the same bits run after run and whatever the number of host threads vgpu runs
// workgroups on (a child process per thread count: vgpu reads HK_VGPU_THREADS when it starts). The skinny kernel's
// split K (partial products summed by the reduce kernel), its 128-row blocks (the waves' sums met in LDS), the bf16 /
// f16 ping-pong kernel, the fp8 ping-pong kernel (A * B^T) and the 4-wave fp8 kernel (A * B).
struct DeterminismCase {
  Case c;
  Feed feed;
};
const DeterminismCase determinism_cases[] = {
    {{16, 64, 8192, true, dtype::bf16, dtype::fp32, 1.f, 0.5f}, Feed::automatic},
    {{200, 520, 1000, true, dtype::bf16, dtype::fp32}, Feed::automatic},
    {{600, 520, 320, true, dtype::bf16, dtype::bf16, -2.f, 0.75f}, Feed::lds_dma},
    {{520, 600, 200, false, dtype::f16, dtype::fp32}, Feed::lds_dma},
    {{520, 600, 384, true, dtype::fp8_e4m3, dtype::fp32, 0.5f, 1.f}, Feed::lds_dma},
    {{300, 272, 384, false, dtype::fp8_e5m2, dtype::bf16}, Feed::lds_dma},
};

std::vector<char> bytes_of(const hk_host::Matrix& m) {
  const auto* p = reinterpret_cast<const char*>(m.values.data());
  return std::vector<char>(p, p + m.values.size() * sizeof(m.values[0]));
}

// C's bits of every case, one after the other (each checked against the reference as it runs).
std::vector<char> determinism_bits() {
  std::vector<char> all;
  for (const DeterminismCase& d : determinism_cases) {
    const std::vector<char> bits = bytes_of(run_feed(d.c, d.feed));
    EXPECT_FALSE(bits.empty()) << name(d.c);
    all.insert(all.end(), bits.begin(), bits.end());
  }
  return all;
}

TEST(GemmDeterminism, RunToRun) {
  const std::vector<char> first = determinism_bits();
  EXPECT_TRUE(determinism_bits() == first);
}

// Run by AcrossThreadCounts in a child process: writes C's bits to $HK_GEMM_BITS.
TEST(GemmDeterminism, WriteBits) {
  const char* path = std::getenv("HK_GEMM_BITS");
  if (!path) GTEST_SKIP() << "run by AcrossThreadCounts";
  const std::vector<char> bits = determinism_bits();
  std::ofstream(path, std::ios::binary).write(bits.data(), std::streamsize(bits.size()));
}

TEST(GemmDeterminism, AcrossThreadCounts) {
  if (std::getenv("HK_GEMM_BITS")) GTEST_SKIP() << "in the child";
  const std::vector<char> here = determinism_bits();
  char self[4096] = {};
  ASSERT_GT(readlink("/proc/self/exe", self, sizeof(self) - 1), 0);  // this program (the shell's /proc/self is the shell)
  for (int threads : {1, 2}) {
    // Named by this process: the arch's test programs may run at once.
    const std::string path = testing::TempDir() + "gemm_bits_" + std::to_string(getpid()) + "_" + std::to_string(threads);
    const std::string cmd = "HK_VGPU_THREADS=" + std::to_string(threads) + " HK_GEMM_BITS=" + path + " '" + self +
                            "' --gtest_filter=GemmDeterminism.WriteBits > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> there((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(there.size(), here.size()) << threads << " threads";
    EXPECT_TRUE(there == here) << "C differs with HK_VGPU_THREADS=" << threads;
    std::remove(path.c_str());
  }
}

TEST(GemmFp8, LdsDmaFeedIsRefusedWhereItCannotRun) {
  Matrix A(dtype::fp8_e4m3, 300, 64, 64, 1), B(dtype::fp8_e4m3, 280, 64, 64, 2), C(dtype::fp32, 300, 280, 280, 3);
  hk::GemmProblem p;
  p.m = 300, p.n = 280, p.k = 64, p.a = A.dev, p.lda = 64, p.b = B.dev, p.ldb = 64, p.b_is_nk = true, p.c = C.dev, p.ldc = 280;
  p.ab_type = dtype::fp8_e4m3, p.feed = Feed::lds_dma;
  hk::Status s = hk::gemm(p);
  ASSERT_TRUE(s) << s.message;
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  p.k = 21, p.lda = p.ldb = 32;  // 21 bytes: not a whole DMA unit on either arch
  s = hk::gemm(p);
  EXPECT_FALSE(s);
  EXPECT_NE(s.message.find("LDS DMA feed needs"), std::string::npos) << s.message;
}

}  // namespace
