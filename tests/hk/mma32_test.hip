// The 32x32 MFMA family (mfma32 tiles: v_mfma_f32_32x32x8_{bf16,f16} on gfx942, 32x32x16 on gfx950): mma_AB / ABt /
// AtB / AtBt for bf16 and f16 through shared and global paths, reductions, broadcasts, maps and masks on the 32x32
// accumulator, and the accumulator as the next mma's operand through a shared scratch tile, each against a host
// reference, on each virtual device.
#include <algorithm>

#include "hk/hk.h"
#include "hk_test_util.h"

using namespace hk;

template <class T, int R, int C, layout L = layout::row>
using rt32 = rt<T, R, C, L, mfma32>;

// The layout formulas themselves (host): the accumulator is the 32x32 MFMA's D (lane j + 32 ((i / 4) % 2), register
// 4 (i / 8) + i % 4), and an operand fragment holds k = (lane / 32) * E + e.
static_assert(rt_acc32<32, 32>::E == 16 && rt_acc32<32, 32>::base_rows == 32 && rt_acc32<32, 32>::base_cols == 32);
constexpr bool acc32_layout_ok() {
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < 32; ++j) {
      const int lane = j + 32 * ((i / 4) % 2), reg = 4 * (i / 8) + i % 4;
      if (rt_acc32<32, 32>::row_of(0, lane, reg) != i || rt_acc32<32, 32>::col_of(0, lane, reg) != j) return false;
    }
  return true;
}
static_assert(acc32_layout_ok(), "rt_acc32 must be the 32x32 MFMA's accumulator layout");
static_assert(rt32<bf16, 32, 2 * arch::mfma32_elems>::row_of(0, 37, 1) == 5 &&
              rt32<bf16, 32, 2 * arch::mfma32_elems>::col_of(0, 37, 1) == arch::mfma32_elems + 1);
static_assert(rt_acc<16, 16>::E == 4 && std::same_as<rt_acc<16, 16>, rt<float, 16, 16, layout::col, mfma16>>,
              "the default family is unchanged");

// D = A B^T + C with A, B through shared tiles (row layout) and C from global.
template <class T, int M, int N, int K>
__global__ void abt_through_shared(const T* a, const T* b, const float* c, float* d) {
  __shared__ st<T, M, K> sa;
  __shared__ st<T, N, K> sb;
  gl<T, 1, 1, M, K> ga(const_cast<T*>(a), 1, 1, M, K);
  gl<T, 1, 1, N, K> gb(const_cast<T*>(b), 1, 1, N, K);
  gl<float, 1, 1, M, N> gc(const_cast<float*>(c), 1, 1, M, N), gd(d, 1, 1, M, N);
  load<wave>(sa, ga, {});
  load<wave>(sb, gb, {});
  barrier();
  rt32<T, M, K> ra;
  rt32<T, N, K> rb;
  rt_acc32<M, N> acc;
  load(ra, sa);
  load(rb, sb);
  load(acc, gc, {});
  mma_ABt(acc, ra, rb, acc);
  store(gd, acc, {});
}

// D = A B with A (M x K) and B (K x N, row-major) through shared tiles: B is read in the col layout (ds_read_b64_tr_b16
// on gfx950).
template <class T, int M, int N, int K>
__global__ void ab_through_shared(const T* a, const T* b, float* d) {
  __shared__ st<T, M, K> sa;
  __shared__ st<T, K, N> sb;
  load<wave>(sa, gl<T, 1, 1, M, K>(const_cast<T*>(a), 1, 1, M, K), {});
  load<wave>(sb, gl<T, 1, 1, K, N>(const_cast<T*>(b), 1, 1, K, N), {});
  barrier();
  rt32<T, M, K> ra;
  rt32<T, K, N, layout::col> rb;
  load(ra, sa);
  load(rb, sb);
  rt_acc32<M, N> acc;
  zero(acc);
  mma_AB(acc, ra, rb, acc);
  store(gl<float, 1, 1, M, N>(d, 1, 1, M, N), acc, {});
}

// The four transposes with operands straight from global memory in the layout each needs.
template <class T, int M, int N, int K, int Variant>
__global__ void mma_variants(const T* a, const T* b, float* d) {
  rt_acc32<M, N> acc;
  zero(acc);
  gl<float, 1, 1, M, N> gd(d, 1, 1, M, N);
  if constexpr (Variant == 0) {  // A: M x K, B: K x N
    rt32<T, M, K, layout::row> ra;
    rt32<T, K, N, layout::col> rb;
    load(ra, gl<T, 1, 1, M, K>(const_cast<T*>(a), 1, 1, M, K), {});
    load(rb, gl<T, 1, 1, K, N>(const_cast<T*>(b), 1, 1, K, N), {});
    mma_AB(acc, ra, rb, acc);
  } else if constexpr (Variant == 1) {  // A: K x M, B: K x N
    rt32<T, K, M, layout::col> ra;
    rt32<T, K, N, layout::col> rb;
    load(ra, gl<T, 1, 1, K, M>(const_cast<T*>(a), 1, 1, K, M), {});
    load(rb, gl<T, 1, 1, K, N>(const_cast<T*>(b), 1, 1, K, N), {});
    mma_AtB(acc, ra, rb, acc);
  } else if constexpr (Variant == 2) {  // A: K x M, B: N x K
    rt32<T, K, M, layout::col> ra;
    rt32<T, N, K, layout::row> rb;
    load(ra, gl<T, 1, 1, K, M>(const_cast<T*>(a), 1, 1, K, M), {});
    load(rb, gl<T, 1, 1, N, K>(const_cast<T*>(b), 1, 1, N, K), {});
    mma_AtBt(acc, ra, rb, acc);
  } else {  // A: M x K, B: N x K
    rt32<T, M, K, layout::row> ra;
    rt32<T, N, K, layout::row> rb;
    load(ra, gl<T, 1, 1, M, K>(const_cast<T*>(a), 1, 1, M, K), {});
    load(rb, gl<T, 1, 1, N, K>(const_cast<T*>(b), 1, 1, N, K), {});
    mma_ABt(acc, ra, rb, acc);
  }
  store(gd, acc, {});
}

// D[i][j] = sum_k A(i, k) * B(k, j) + C[i][j] with A(i, k) and B(k, j) read through the given index maps.
template <class FA, class FB>
std::vector<float> host_mm(int M, int N, int K, FA A, FB B, const std::vector<float>* C) {
  std::vector<float> d(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = C ? (*C)[i * N + j] : 0.0;
      for (int k = 0; k < K; ++k) s += double(A(i, k)) * double(B(k, j));
      d[i * N + j] = float(s);
    }
  return d;
}

template <class T, int M, int N, int K>
void check_abt() {
  hktest::Buffer<T> a(M * K, 11), b(N * K, 12);
  hktest::Buffer<float> c(M * N, 13), d(M * N);
  hipLaunchKernelGGL((abt_through_shared<T, M, N, K>), dim3(1), dim3(64), 0, 0, a.dev, b.dev, c.dev, d.dev);
  HIP_OK(hipDeviceSynchronize());
  auto want = host_mm(M, N, K, [&](int i, int k) { return a.host[i * K + k]; },
                      [&](int k, int j) { return b.host[j * K + k]; }, &c.host);
  hktest::expect_close(d.read(), want, 1e-4f, 1e-4f, "mma_ABt (32x32, shared)");
}

template <class T, int M, int N, int K>
void check_ab_shared() {
  hktest::Buffer<T> a(M * K, 14), b(K * N, 15);
  hktest::Buffer<float> d(M * N);
  hipLaunchKernelGGL((ab_through_shared<T, M, N, K>), dim3(1), dim3(64), 0, 0, a.dev, b.dev, d.dev);
  HIP_OK(hipDeviceSynchronize());
  auto want = host_mm(M, N, K, [&](int i, int k) { return a.host[i * K + k]; },
                      [&](int k, int j) { return b.host[k * N + j]; }, nullptr);
  hktest::expect_close(d.read(), want, 1e-4f, 1e-4f, "mma_AB (32x32, shared)");
}

template <class T, int M, int N, int K, int V>
void check_variant() {
  hktest::Buffer<T> a(M * K, 16 + V), b(N * K, 26 + V);
  hktest::Buffer<float> d(M * N);
  hipLaunchKernelGGL((mma_variants<T, M, N, K, V>), dim3(1), dim3(64), 0, 0, a.dev, b.dev, d.dev);
  HIP_OK(hipDeviceSynchronize());
  const bool a_t = V == 1 || V == 2, b_t = V == 2 || V == 3;  // A stored K x M; B stored N x K
  auto at = [&](int i, int k) { return a_t ? a.host[k * M + i] : a.host[i * K + k]; };
  auto bt = [&](int k, int j) { return b_t ? b.host[j * K + k] : b.host[k * N + j]; };
  const char* names[] = {"mma_AB (32x32)", "mma_AtB (32x32)", "mma_AtBt (32x32)", "mma_ABt (32x32, global)"};
  hktest::expect_close(d.read(), host_mm(M, N, K, at, bt, nullptr), 1e-4f, 1e-4f, names[V]);
}

TEST(Mma32, ABtBf16ThroughShared) { check_abt<bf16, 64, 32, 64>(); }
TEST(Mma32, ABtF16ThroughShared) { check_abt<half, 32, 64, 128>(); }
TEST(Mma32, ABBf16ThroughShared) { check_ab_shared<bf16, 32, 64, 64>(); }
TEST(Mma32, ABF16ThroughShared) { check_ab_shared<half, 64, 32, 32>(); }
TEST(Mma32, ABBf16) { check_variant<bf16, 64, 32, 32, 0>(); }
TEST(Mma32, ABF16) { check_variant<half, 32, 32, 64, 0>(); }
TEST(Mma32, AtBBf16) { check_variant<bf16, 32, 64, 32, 1>(); }
TEST(Mma32, AtBF16) { check_variant<half, 32, 32, 48, 1>(); }
TEST(Mma32, AtBtBf16) { check_variant<bf16, 32, 32, 64, 2>(); }
TEST(Mma32, AtBtF16) { check_variant<half, 64, 32, 32, 2>(); }
TEST(Mma32, ABtBf16Global) { check_variant<bf16, 32, 64, 32, 3>(); }
TEST(Mma32, ABtF16Global) { check_variant<half, 32, 32, 80, 3>(); }

// ---- reductions, broadcasts, maps and masks on the 32x32 accumulator ----

constexpr int RM = 64, RN = 96;

// rows: max, min, sum per row; cols: max, min, sum per column; out: the softmax of each row.
__global__ void reduce32(const float* x, float* out, float* rows, float* cols) {
  gl<float, 1, 1, RM, RN> gx(const_cast<float*>(x), 1, 1, RM, RN), go(out, 1, 1, RM, RN);
  rt_acc32<RM, RN> t;
  load(t, gx, {});
  rv32<float, RM, vec_align::rows> rmax, rmin, rsum;
  rv32<float, RN, vec_align::cols> cmax, cmin, csum;
  row_max(rmax, t);
  row_min(rmin, t);
  col_max(cmax, t);
  col_min(cmin, t);
  col_sum(csum, t);
  sub_row(t, rmax);
  exp(t);
  row_sum(rsum, t);
  div_row(t, rsum);
  store(go, t, {});
  const int lane = lane_id();
  for (int i = 0; i < RM / 32; ++i)
    for (int e = 0; e < 16; ++e) {
      const int r = 32 * i + 8 * (e / 4) + 4 * (lane / 32) + e % 4;
      if (lane % 32 == 0) rows[3 * r] = rmax.data[i][e], rows[3 * r + 1] = rmin.data[i][e], rows[3 * r + 2] = rsum.data[i][e];
    }
  for (int j = 0; j < RN / 32; ++j) {
    const int c = 32 * j + lane % 32;
    if (lane < 32) cols[3 * c] = cmax.data[j][0], cols[3 * c + 1] = cmin.data[j][0], cols[3 * c + 2] = csum.data[j][0];
  }
}

TEST(Mma32Reduce, RowsAndColsAndSoftmax) {
  hktest::Buffer<float> x(RM * RN, 31, 4.f), out(RM * RN), rows(3 * RM), cols(3 * RN);
  hipLaunchKernelGGL(reduce32, dim3(1), dim3(64), 0, 0, x.dev, out.dev, rows.dev, cols.dev);
  HIP_OK(hipDeviceSynchronize());
  std::vector<float> wr(3 * RM), wc(3 * RN), wo(RM * RN);
  for (int i = 0; i < RM; ++i) {
    float mx = -INFINITY, mn = INFINITY;
    for (int j = 0; j < RN; ++j) mx = std::max(mx, x.host[i * RN + j]), mn = std::min(mn, x.host[i * RN + j]);
    double s = 0;
    for (int j = 0; j < RN; ++j) s += std::exp(double(x.host[i * RN + j]) - mx);
    for (int j = 0; j < RN; ++j) wo[i * RN + j] = float(std::exp(double(x.host[i * RN + j]) - mx) / s);
    wr[3 * i] = mx, wr[3 * i + 1] = mn, wr[3 * i + 2] = float(s);
  }
  for (int j = 0; j < RN; ++j) {
    float mx = -INFINITY, mn = INFINITY;
    double s = 0;
    for (int i = 0; i < RM; ++i) mx = std::max(mx, x.host[i * RN + j]), mn = std::min(mn, x.host[i * RN + j]), s += x.host[i * RN + j];
    wc[3 * j] = mx, wc[3 * j + 1] = mn, wc[3 * j + 2] = float(s);
  }
  hktest::expect_close(rows.read(), wr, 1e-4f, 1e-5f, "row max/min/sum(exp) (32x32)");
  hktest::expect_close(cols.read(), wc, 1e-4f, 1e-5f, "col max/min/sum (32x32)");
  hktest::expect_close(out.read(), wo, 1e-6f, 1e-5f, "softmax rows (32x32)");
}

// out = causal_mask(relu((a * b + 1.5) * colscale[j] - a) / 2 + max(a, b)), rowsum of a added per row via mul_row/add.
__global__ void maps32(const float* a, const float* b, const float* colscale, float* out, bf16* low) {
  gl<float, 1, 1, RM, RN> ga(const_cast<float*>(a), 1, 1, RM, RN), gb(const_cast<float*>(b), 1, 1, RM, RN);
  rt_acc32<RM, RN> x, y, r, s;
  load(x, ga, {});
  load(y, gb, {});
  mul(r, x, y);
  add(r, r, 1.5f);
  rv32<float, RN, vec_align::cols> cs;
  const int lane = lane_id();
  for (int j = 0; j < RN / 32; ++j) cs.data[j][0] = colscale[32 * j + lane % 32];
  mul_col(r, cs);
  sub(r, r, x);
  relu(r);
  div(r, r, 2.0f);
  max(s, x, y);
  add(r, r, s);
  make_causal(r, 0, 0, 8, -1000.f);  // col > row + 8 -> -1000
  store(gl<float, 1, 1, RM, RN>(out, 1, 1, RM, RN), r, {});
  store(gl<bf16, 1, 1, RM, RN>(low, 1, 1, RM, RN), r, {});
}

TEST(Mma32Maps, ElementwiseBroadcastMask) {
  hktest::Buffer<float> a(RM * RN, 41), b(RM * RN, 42), cs(RN, 43), out(RM * RN);
  hktest::Buffer<bf16> low(RM * RN);
  hipLaunchKernelGGL(maps32, dim3(1), dim3(64), 0, 0, a.dev, b.dev, cs.dev, out.dev, low.dev);
  HIP_OK(hipDeviceSynchronize());
  std::vector<float> want(RM * RN), want_low(RM * RN);
  for (int i = 0; i < RM; ++i)
    for (int j = 0; j < RN; ++j) {
      const float u = a.host[i * RN + j], v = b.host[i * RN + j];
      float r = (u * v + 1.5f) * cs.host[j] - u;
      r = std::max(r, 0.f) / 2.f + std::max(u, v);
      if (j > i + 8) r = -1000.f;
      want[i * RN + j] = r;
      want_low[i * RN + j] = hktest::quantize_bf16(r);
    }
  hktest::expect_close(out.read(), want, 1e-6f, 1e-6f, "maps (32x32)");
  hktest::expect_close(low.read(), want_low, 0.f, 1e-2f, "maps -> bf16 store (32x32)");
}

// Attention's second product with 32x32 tiles: P = Q K^T (fp32), P -> bf16/f16 A operand through a shared scratch tile,
// O = P V with V (Nk x D) read from shared in the col layout.
template <class T, int Mq, int Nk, int D>
__global__ void pv32(const T* q, const T* k, const T* v, float* o) {
  __shared__ st<T, Mq, D> sq;
  __shared__ st<T, Nk, D> sk, sv;
  __shared__ st<T, Mq, Nk> scratch;
  load<wave>(sq, gl<T, 1, 1, Mq, D>(const_cast<T*>(q), 1, 1, Mq, D), {});
  load<wave>(sk, gl<T, 1, 1, Nk, D>(const_cast<T*>(k), 1, 1, Nk, D), {});
  load<wave>(sv, gl<T, 1, 1, Nk, D>(const_cast<T*>(v), 1, 1, Nk, D), {});
  barrier();
  rt32<T, Mq, D> rq;
  rt32<T, Nk, D> rk;
  rt32<T, Nk, D, layout::col> rv_;
  load(rq, sq);
  load(rk, sk);
  load(rv_, sv);
  rt_acc32<Mq, Nk> p;
  zero(p);
  mma_ABt(p, rq, rk, p);
  // (No scaling of P here: clang fuses an fp32 multiply with the f16 conversion into v_fma_mixlo_f16, which vgpu
  // currently computes as zero for f32 sources; see the report of the change that added this test.)
  rt32<T, Mq, Nk> pa;
  swap_layout(pa, p, scratch);
  rt_acc32<Mq, D> out;
  zero(out);
  mma_AB(out, pa, rv_, out);
  store(gl<float, 1, 1, Mq, D>(o, 1, 1, Mq, D), out, {});
}

template <class T>
void check_pv() {
  constexpr int Mq = 32, Nk = 64, D = 32;
  hktest::Buffer<T> q(Mq * D, 51), k(Nk * D, 52), v(Nk * D, 53);
  hktest::Buffer<float> o(Mq * D);
  hipLaunchKernelGGL((pv32<T, Mq, Nk, D>), dim3(1), dim3(64), 0, 0, q.dev, k.dev, v.dev, o.dev);
  HIP_OK(hipDeviceSynchronize());
  auto p = host_mm(Mq, Nk, D, [&](int i, int x) { return q.host[i * D + x]; },
                   [&](int x, int j) { return k.host[j * D + x]; }, nullptr);
  for (auto& x : p) x = hktest::quantize<T>(x);
  auto want = host_mm(Mq, D, Nk, [&](int i, int x) { return p[i * Nk + x]; },
                      [&](int x, int j) { return v.host[x * D + j]; }, nullptr);
  // P's rounding to 16 bits may differ from the host's by one ulp where the fp32 sums differ in the last bit.
  hktest::expect_close(o.read(), want, 2e-2f, 1e-2f, "P V (32x32, P through shared scratch)");
}

TEST(Mma32, PVBf16ThroughScratch) { check_pv<bf16>(); }
TEST(Mma32, PVF16ThroughScratch) { check_pv<half>(); }

// The 32x32 family runs the arch's 32x32 MFMA: v_mfma_f32_32x32x8 on gfx942, 32x32x16 on gfx950 (no 16x16 ones).
TEST(Mma32, RunsThe32x32Instruction) {
  if (!hktest::set_profiling(true)) GTEST_SKIP() << "not on vgpu";
  constexpr int M = 32, N = 32, K = 64;
  hktest::Buffer<bf16> a(M * K, 61), b(N * K, 62);
  hktest::Buffer<float> d(M * N);
  hipLaunchKernelGGL((mma_variants<bf16, M, N, K, 3>), dim3(1), dim3(64), 0, 0, a.dev, b.dev, d.dev);
  HIP_OK(hipDeviceSynchronize());
  hktest::set_profiling(false);
  const std::string want = hktest::is_gfx950() ? "v_mfma_f32_32x32x16_bf16" : "v_mfma_f32_32x32x8_bf16";
  int n32 = 0, other = 0;
  for (const auto& t : hktest::last_instructions()) {
    if (!t.starts_with("v_mfma")) continue;
    if (t.starts_with(want)) ++n32;
    else ++other;
  }
  EXPECT_GT(n32, 0) << "no " << want;
  EXPECT_EQ(other, 0) << "other MFMAs in a 32x32-family kernel";
}

// Row-layout reads of mfma32 operands from st (32 lanes on 32 rows at one column, per lane half) are free of LDS bank
// conflicts on both archs under vgpu's bank model, like the 16x16 family's (tests/hk/banks_test.hip).
template <class T, int R, int C>
__global__ void read_rows32(const T* g, float* out) {
  __shared__ st<T, R, C> s;
  load<wave>(s, gl<T, 1, 1, R, C>(const_cast<T*>(g), 1, 1, R, C), {});
  barrier();
  rt32<T, R, C> r;
  load(r, s);
  float acc = 0.f;
  for (int i = 0; i < r.tiles_r; ++i)
    for (int j = 0; j < r.tiles_c; ++j)
      for (int e = 0; e < r.E; ++e) acc += float(r.data[i][j][e]);
  out[lane_id()] = acc;
}

template <class T, int R, int C>
void check_row_banks() {
  if (!hktest::set_profiling(true)) GTEST_SKIP() << "not on vgpu";
  hktest::Buffer<T> g(R * C, 71);
  hktest::Buffer<float> o(64);
  hipLaunchKernelGGL((read_rows32<T, R, C>), dim3(1), dim3(64), 0, 0, g.dev, o.dev);
  HIP_OK(hipDeviceSynchronize());
  hktest::set_profiling(false);
  const auto s = hktest::last_lds("ds_read");
  EXPECT_GT(s.accesses, 0u);
  EXPECT_EQ(s.conflict_cycles, 0u) << s.example;
}

TEST(Mma32Banks, RowReadsBf16) { check_row_banks<bf16, 64, 64>(); }
TEST(Mma32Banks, RowReadsF16Wide) { check_row_banks<half, 32, 128>(); }
