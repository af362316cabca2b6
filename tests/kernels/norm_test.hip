// hk::layer_norm / rms_norm and their backwards on each virtual device against the float64 host reference
// (rotary_norm_ref.h): hidden sizes 1, 7, 64, 2048, 5000 and 16384 (every row shape the kernels pick, full and
// ragged), bf16 / f16 / fp32 activations with their own or fp32 weights, with and without residual, bias, dropout and
// padded rows. The Philox4x32-10 stream is checked bit for bit: the host generator against the published
// known-answer vectors, hk's device generator against the host one, and every dropout mask element against the host.
// The backward takes the forward's own outputs (r, mean, rstd) and regenerates its mask; dweight and dbias must be
// identical run after run. Every validation error of the four entry points.
#include <hip/hip_runtime.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hk/ops/philox.h"
#include "kernels/rotary_norm_ref.h"
#include "norm/norm.h"

namespace {

using dtype = hk::scalar_type;
using rnref::DeviceArray;

// ---- Philox ------------------------------------------------------------------------------------------------------

// The known-answer vectors published with the generator (Random123's kat_vectors, philox4x32 with 10 rounds, the
// norms', and 7, attention's).
TEST(Philox, HostMatchesPublishedVectors) {
  struct Kat { std::array<uint32_t, 4> ctr; std::array<uint32_t, 2> key; std::array<uint32_t, 4> out; };
  const std::array<uint32_t, 4> zeros{0, 0, 0, 0}, ones{~0u, ~0u, ~0u, ~0u}, pi{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344};
  const std::array<uint32_t, 2> key_zeros{0, 0}, key_ones{~0u, ~0u}, key_pi{0xa4093822, 0x299f31d0};
  const Kat kats10[] = {
      {zeros, key_zeros, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {ones, key_ones, {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {pi, key_pi, {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  const Kat kats7[] = {
      {zeros, key_zeros, {0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48}},
      {ones, key_ones, {0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662}},
      {pi, key_pi, {0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a}},
  };
  for (const Kat& k : kats10) EXPECT_EQ(rnref::philox4x32_r<10>(k.ctr, k.key), k.out);
  for (const Kat& k : kats7) EXPECT_EQ(rnref::philox4x32_r<7>(k.ctr, k.key), k.out);
}

template <int Rounds>
__global__ void philox_words(uint32_t* out, int blocks, uint32_t key0, uint32_t key1) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= blocks) return;
  const hk::philox4x32 w = hk::philox4x32_r<Rounds>({{uint32_t(i) * 0x9E3779B1u, uint32_t(i), ~uint32_t(i), 7u}}, key0, key1);
  for (int v = 0; v < 4; ++v) out[4 * i + v] = w.v[v];
}

template <int Rounds>
void philox_device_matches_host() {
  const int blocks = 4096;
  DeviceArray words(dtype::fp32, 4 * blocks);  // uint32 bits
  const uint32_t key0 = 0x01234567, key1 = 0x89abcdef;
  hipLaunchKernelGGL(philox_words<Rounds>, dim3(blocks / 256), dim3(256), 0, nullptr, static_cast<uint32_t*>(words.dev),
                     blocks, key0, key1);
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  std::vector<uint32_t> got(4 * blocks);
  ASSERT_EQ(hipMemcpy(got.data(), words.dev, got.size() * 4, hipMemcpyDeviceToHost), hipSuccess);
  int bad = 0;
  for (int i = 0; i < blocks; ++i) {
    const auto want = rnref::philox4x32_r<Rounds>({uint32_t(i) * 0x9E3779B1u, uint32_t(i), ~uint32_t(i), 7u}, {key0, key1});
    for (int v = 0; v < 4; ++v)
      if (got[4 * i + v] != want[v] && bad++ < 5) ADD_FAILURE() << Rounds << " rounds: block " << i << " word " << v;
  }
  EXPECT_EQ(bad, 0);
}
TEST(Philox, DeviceMatchesHost) {
  philox_device_matches_host<10>();
  philox_device_matches_host<7>();
}

// ---- forward and backward ----------------------------------------------------------------------------------------

enum class Mask { bytes, bits, none };  // the dropout mask the forward writes

struct Case {
  int rows, cols;
  bool rms;
  dtype type, weight_type;
  float p = 0.f;
  bool residual = true, bias = true, padded = false, dresidual_in = false;
  uint64_t seed = 1234, offset = 0;
  Mask mask = Mask::bytes;
};

std::string name(const Case& c) {
  return std::to_string(c.rows) + "x" + std::to_string(c.cols) + (c.rms ? " rms " : " layer ") + hk::to_string(c.type) +
         "/" + hk::to_string(c.weight_type) + " p=" + std::to_string(c.p) + (c.residual ? " +residual" : "") +
         (c.bias ? " +bias" : "") + (c.padded ? " padded" : "") + (c.dresidual_in ? " +dresidual_in" : "") +
         (c.mask == Mask::bits ? " bit mask" : c.mask == Mask::none ? " no mask" : "");
}

// Compares a rows x cols device matrix (row stride ld) with dense expectations; padding past cols must hold `pad`.
void check(const char* what, const std::vector<float>& got, const std::vector<rnref::Expect>& want, int rows, int cols,
           long ld, float pad) {
  int bad = 0;
  for (int i = 0; i < rows; ++i)
    for (long j = 0; j < ld; ++j) {
      const float g = got[size_t(i) * ld + j];
      if (j >= cols) {
        if (i + 1 < rows && g != pad && bad++ < 5) ADD_FAILURE() << what << " padding at " << i << "," << j << " was written";
        continue;
      }
      const rnref::Expect& w = want[size_t(i) * cols + j];
      if (!w.accepts(g) && bad++ < 5)
        ADD_FAILURE() << what << "[" << i << "][" << j << "] = " << g << ", want " << w.value << " (tol " << w.tol << ")";
    }
  EXPECT_EQ(bad, 0) << what;
}

// Dense rows x cols host values of a matrix stored with row stride ld.
std::vector<float> dense(const std::vector<float>& v, int rows, int cols, long ld) {
  std::vector<float> out(size_t(rows) * cols);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) out[size_t(i) * cols + j] = v[size_t(i) * ld + j];
  return out;
}

void run(const Case& c) {
  SCOPED_TRACE(name(c));
  // Padded rows keep 8-column chunks aligned (the kernels' vector path, ragged tails element by element); unpadded
  // rows of odd sizes take the element-by-element path throughout.
  const long ld = c.padded ? (c.cols + 7) / 8 * 8 + 8 : c.cols;
  const long ld_bits = (c.cols + 7) / 8 + (c.padded ? 3 : 0);  // bytes per row of the bit mask
  const size_t n = size_t(c.rows) * ld;
  const float pad = -7.f;  // what padding holds; every output starts filled with it
  DeviceArray x(c.type, n), residual(c.type, c.residual ? n : 1), weight(c.weight_type, c.cols), bias(c.weight_type, c.bias ? c.cols : 1);
  DeviceArray y(c.type, n), r(c.type, n), mean(dtype::fp32, c.rows), rstd(dtype::fp32, c.rows), mask(dtype::fp32, n, true);
  DeviceArray bits(dtype::fp32, size_t(c.rows) * ld_bits, true);
  x.random(1, -2.f, 2.f), residual.random(2), weight.random(3, 0.5f, 1.5f), bias.random(4);
  y.fill(pad), r.fill(pad), mask.fill(200.f), bits.fill(0xa5);
  hk::NormProblem p;
  p.rows = c.rows, p.cols = c.cols, p.type = c.type, p.weight_type = c.weight_type;
  p.x = x.dev, p.ldx = ld, p.weight = weight.dev, p.y = y.dev, p.ldy = ld, p.residual_out = r.dev, p.ld_residual_out = ld;
  if (c.residual) p.residual = residual.dev, p.ld_residual = ld;
  if (c.bias) p.bias = bias.dev;
  if (!c.rms) p.mean = static_cast<float*>(mean.dev);
  p.rstd = static_cast<float*>(rstd.dev);
  if (c.mask == Mask::bytes) p.mask = static_cast<uint8_t*>(mask.dev), p.ld_mask = ld;
  if (c.mask == Mask::bits) p.mask_bits = static_cast<uint8_t*>(bits.dev), p.ld_mask_bits = ld_bits;
  p.p = c.p, p.seed = c.seed, p.offset = c.offset;
  const hk::Status s = c.rms ? hk::rms_norm(p) : hk::layer_norm(p);
  ASSERT_TRUE(s) << s.message;
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);

  const rnref::NormShape sh{c.rows, c.cols, c.rms, p.eps, c.p, c.seed, c.offset};
  const auto want = rnref::norm_forward_reference(sh, dense(x.host, c.rows, c.cols, ld),
                                                  c.residual ? dense(residual.host, c.rows, c.cols, ld) : std::vector<float>{},
                                                  weight.host, c.bias ? bias.host : std::vector<float>{}, c.type, c.weight_type);
  check("r", r.download(), want.r, c.rows, c.cols, ld, pad);
  check("y", y.download(), want.y, c.rows, c.cols, ld, pad);
  std::vector<rnref::Expect> want_mask(want.mask.size());
  for (size_t i = 0; i < want.mask.size(); ++i) want_mask[i] = {double(want.mask[i]), 0};  // bit for bit
  if (c.mask == Mask::bytes) check("mask", mask.download(), want_mask, c.rows, c.cols, ld, 200.f);
  if (c.mask == Mask::bits) {
    // Bit c % 8 of byte c / 8; the last byte's bits past cols are zero, the padding bytes untouched.
    const std::vector<float> got = bits.download();
    int bad = 0;
    for (int i = 0; i < c.rows; ++i)
      for (long j = 0; j < ld_bits; ++j) {
        const int g = int(got[size_t(i) * ld_bits + j]);
        int w = 0xa5;
        if (j < (c.cols + 7) / 8) {
          w = 0;
          for (int v = 0; v < 8 && 8 * j + v < c.cols; ++v) w |= int(want.mask[size_t(i) * c.cols + 8 * j + v]) << v;
        }
        if (g != w && bad++ < 5) ADD_FAILURE() << "mask_bits[" << i << "][" << j << "] = " << g << ", want " << w;
      }
    EXPECT_EQ(bad, 0) << "mask_bits";
  }
  if (c.mask == Mask::none) EXPECT_EQ(mask.download(), std::vector<float>(n, 200.f)) << "no mask asked, none written";
  check("rstd", rstd.download(), want.rstd, 1, c.rows, c.rows, pad);
  if (!c.rms) check("mean", mean.download(), want.mean, 1, c.rows, c.rows, pad);

  // The backward from the forward's own r, mean and rstd.
  DeviceArray dy(c.type, n), dres_in(c.type, c.dresidual_in ? n : 1), dx(c.type, n), dres(c.type, n);
  DeviceArray dweight(c.weight_type, c.cols), dbias(c.weight_type, c.cols);
  dy.random(5), dres_in.random(6), dx.fill(pad), dres.fill(pad);
  const size_t ws_bytes = hk::norm_backward_workspace_bytes(c.rows, c.cols);
  DeviceArray workspace(dtype::fp32, ws_bytes / 4);
  hk::NormBackwardProblem b;
  b.rows = c.rows, b.cols = c.cols, b.type = c.type, b.weight_type = c.weight_type;
  b.dy = dy.dev, b.ldy = ld, b.r = r.dev, b.ldr = ld, b.rstd = static_cast<const float*>(rstd.dev), b.weight = weight.dev;
  if (!c.rms) b.mean = static_cast<const float*>(mean.dev), b.dbias = dbias.dev;
  if (c.dresidual_in) b.dresidual_in = dres_in.dev, b.ld_dresidual_in = ld;
  b.dx = dx.dev, b.ldx = ld, b.dresidual = dres.dev, b.ld_dresidual = ld, b.dweight = dweight.dev;
  b.workspace = workspace.dev, b.workspace_bytes = ws_bytes, b.p = c.p, b.seed = c.seed, b.offset = c.offset;
  const hk::Status bs = c.rms ? hk::rms_norm_backward(b) : hk::layer_norm_backward(b);
  ASSERT_TRUE(bs) << bs.message;
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  const std::vector<float> r_dev = r.download(), mean_dev = mean.download(), rstd_dev = rstd.download();
  const auto bw = rnref::norm_backward_reference(sh, dense(dy.host, c.rows, c.cols, ld), dense(r_dev, c.rows, c.cols, ld),
                                                 mean_dev, rstd_dev, weight.host,
                                                 c.dresidual_in ? dense(dres_in.host, c.rows, c.cols, ld) : std::vector<float>{},
                                                 c.type, c.weight_type);
  check("dx", dx.download(), bw.dx, c.rows, c.cols, ld, pad);
  check("dresidual", dres.download(), bw.dresidual, c.rows, c.cols, ld, pad);
  const std::vector<float> dw1 = dweight.download(), db1 = dbias.download();
  check("dweight", dw1, bw.dweight, 1, c.cols, c.cols, pad);
  if (!c.rms) check("dbias", db1, bw.dbias, 1, c.cols, c.cols, pad);

  // Run after run, the same bits (dweight / dbias reduced in a fixed order).
  dweight.fill(0.f), dbias.fill(0.f);
  ASSERT_TRUE(c.rms ? hk::rms_norm_backward(b) : hk::layer_norm_backward(b));
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  EXPECT_EQ(dweight.download(), dw1);
  if (!c.rms) EXPECT_EQ(dbias.download(), db1);
}

// Every row shape: one wave per row (up to 256 and 1024 columns), 4 waves (4096), 8 waves (16384); ragged chunks.
TEST(LayerNorm, HiddenSizes) {
  run({37, 1, false, dtype::bf16, dtype::bf16, 0.2f});
  run({40, 7, false, dtype::f16, dtype::fp32, 0.1f, true, true, true});
  run({33, 64, false, dtype::fp32, dtype::fp32, 0.f});
  run({9, 2048, false, dtype::bf16, dtype::fp32, 0.1f, true, true, false, true});
  run({7, 5000, false, dtype::bf16, dtype::bf16, 0.25f, true, true, true});
  run({3, 16384, false, dtype::f16, dtype::f16, 0.05f});
}

TEST(RmsNorm, HiddenSizes) {
  run({21, 1, true, dtype::fp32, dtype::fp32, 0.5f, true, false});
  run({40, 7, true, dtype::bf16, dtype::bf16, 0.f, false, false});
  run({33, 64, true, dtype::f16, dtype::f16, 0.3f, true, false, true, true});
  run({9, 2048, true, dtype::fp32, dtype::fp32, 0.1f, true, false});
  run({6, 5000, true, dtype::bf16, dtype::fp32, 0.1f, false, false, false, true});
  run({3, 16384, true, dtype::bf16, dtype::bf16, 0.1f, true, false, true});
}

// More rows than the backward's grid has teams (4096 waves: each team loops over rows), odd sizes in each row shape.
TEST(LayerNorm, ManyRowsAndRaggedShapes) {
  run({4200, 5, false, dtype::bf16, dtype::bf16, 0.1f, true, true, false, true});
  run({1100, 700, false, dtype::bf16, dtype::fp32, 0.1f});
  run({5, 3001, false, dtype::fp32, dtype::fp32, 0.4f, false, true, true});
  run({2, 9999, false, dtype::bf16, dtype::bf16, 0.f, true, false});
}

// Whole chunks (cols % 8 == 0, the branch-free kernels) with more rows than the backward has teams, in the one-wave,
// two-wave, 8-wave and widest backward shapes: each team loops over rows, keeping the weight and its partials.
TEST(LayerNorm, ManyRowsWholeChunks) {
  run({4500, 256, false, dtype::bf16, dtype::bf16, 0.1f, true, true, true});
  run({2100, 1024, false, dtype::f16, dtype::f16, 0.1f});
  run({600, 4096, true, dtype::bf16, dtype::fp32, 0.1f, true, false});
  run({300, 16384, false, dtype::bf16, dtype::bf16, 0.1f, true, true, false, true});
}

// The mask is optional and may be bit-packed; y and r do not depend on which (the backward regenerates it).
TEST(LayerNorm, MaskKinds) {
  for (Mask m : {Mask::bits, Mask::none}) {
    run({37, 1, false, dtype::bf16, dtype::bf16, 0.2f, true, true, false, false, 1234, 0, m});
    run({40, 77, false, dtype::f16, dtype::fp32, 0.1f, true, true, true, false, 1234, 0, m});
    run({9, 2048, false, dtype::bf16, dtype::bf16, 0.1f, true, true, true, false, 1234, 0, m});
    run({5, 5003, true, dtype::bf16, dtype::bf16, 0.3f, true, false, false, false, 1234, 0, m});
  }
}

TEST(RmsNorm, ManyRowsAndRaggedShapes) {
  run({1100, 3, true, dtype::f16, dtype::f16, 0.2f, true, false});
  run({260, 1000, true, dtype::bf16, dtype::bf16, 0.f, true, false, true, true});
}

// The mask depends on (seed, offset, row, col) alone: another seed or offset moves to a fresh stream.
TEST(LayerNorm, SeedAndOffsetSelectTheStream) {
  run({20, 300, false, dtype::bf16, dtype::bf16, 0.5f, true, true, false, false, 99});
  Case c{20, 300, false, dtype::bf16, dtype::bf16, 0.5f};
  c.offset = 1ull << 33 | 5;
  run(c);
}

// ---- validation --------------------------------------------------------------------------------------------------

template <class Problem, class Api>
void expect_error(Api api, const Problem& p, const char* fragment) {
  const hk::Status s = api(p);
  EXPECT_FALSE(s) << fragment;
  EXPECT_NE(s.message.find(fragment), std::string::npos) << "message: " << s.message;
}

TEST(NormValidation, Forward) {
  const int rows = 4, cols = 64;
  DeviceArray x(dtype::bf16, rows * cols), res(dtype::bf16, rows * cols), w(dtype::bf16, cols), bias(dtype::bf16, cols);
  DeviceArray y(dtype::bf16, rows * cols), r(dtype::bf16, rows * cols), stats(dtype::fp32, 2 * rows);
  DeviceArray mask(dtype::fp32, rows * cols, true);
  auto base = [&] {
    hk::NormProblem p;
    p.rows = rows, p.cols = cols, p.x = x.dev, p.ldx = cols, p.residual = res.dev, p.ld_residual = cols;
    p.weight = w.dev, p.bias = bias.dev, p.y = y.dev, p.ldy = cols, p.residual_out = r.dev, p.ld_residual_out = cols;
    p.mean = static_cast<float*>(stats.dev), p.rstd = static_cast<float*>(stats.dev) + rows;
    p.mask = static_cast<uint8_t*>(mask.dev), p.ld_mask = cols;
    return p;
  };
  ASSERT_TRUE(hk::layer_norm(base()));
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  auto ln = [](const hk::NormProblem& p) { return hk::layer_norm(p); };
  auto rms = [](const hk::NormProblem& p) { return hk::rms_norm(p); };
  { auto p = base(); p.rows = 0; expect_error(ln, p, "rows must be positive"); }
  { auto p = base(); p.cols = 0; expect_error(ln, p, "cols must be 1 .. 16384"); }
  { auto p = base(); p.cols = 16385; expect_error(rms, p, "cols must be 1 .. 16384"); }
  { auto p = base(); p.type = dtype::fp8_e5m2; expect_error(ln, p, "activations must be bf16, f16 or fp32"); }
  { auto p = base(); p.weight_type = dtype::f16; expect_error(ln, p, "weight_type must be"); }
  { auto p = base(); p.p = 1.f; expect_error(ln, p, "dropout p must be in [0, 1)"); }
  { auto p = base(); p.p = -0.1f; expect_error(ln, p, "dropout p must be in [0, 1)"); }
  { auto p = base(); p.x = nullptr; expect_error(ln, p, "null pointer for x"); }
  { auto p = base(); p.weight = nullptr; expect_error(ln, p, "null pointer for weight"); }
  { auto p = base(); p.y = nullptr; expect_error(ln, p, "null pointer for y"); }
  { auto p = base(); p.mean = nullptr; expect_error(rms, p, "RMSNorm has no bias"); }
  { auto p = base(); p.bias = nullptr; expect_error(rms, p, "RMSNorm has no mean"); }
  { auto p = base(); p.eps = -1.f; expect_error(ln, p, "eps must be finite"); }
  { auto p = base(); p.ldx = cols - 1; expect_error(ln, p, "x's row stride"); }
  { auto p = base(); p.ld_residual = 3; expect_error(ln, p, "residual's row stride"); }
  { auto p = base(); p.ldy = 3; expect_error(ln, p, "y's row stride"); }
  { auto p = base(); p.ld_residual_out = 3; expect_error(ln, p, "residual_out's row stride"); }
  { auto p = base(); p.ld_mask = 3; expect_error(ln, p, "mask's row stride"); }
  { auto p = base(); p.mask_bits = static_cast<uint8_t*>(mask.dev) + 1; p.ld_mask_bits = 7; expect_error(ln, p, "mask_bits's row stride"); }
  { auto p = base(); p.mask_bits = static_cast<uint8_t*>(mask.dev) + 8; p.ld_mask_bits = 8; expect_error(ln, p, "mask overlaps mask_bits"); }
  { auto p = base(); p.x = static_cast<char*>(x.dev) + 1; expect_error(ln, p, "x is not aligned"); }
  { auto p = base(); p.ldx = cols + 1; expect_error(ln, p, "x does not lie inside"); }
  { auto p = base(); p.weight_type = dtype::fp32; expect_error(ln, p, "weight does not lie inside"); }
  { auto p = base(); p.mean = static_cast<float*>(stats.dev) + rows + 1; expect_error(ln, p, "mean does not lie inside"); }
  { auto p = base(); p.rstd = static_cast<float*>(stats.dev) + rows + 1; expect_error(ln, p, "rstd does not lie inside"); }
  { auto p = base(); p.y = res.dev; expect_error(ln, p, "y overlaps residual"); }
  { auto p = base(); p.residual_out = x.dev; expect_error(ln, p, "residual_out overlaps x"); }
  { auto p = base(); p.rstd = p.mean; expect_error(ln, p, "mean overlaps rstd"); }
  { auto p = base(); p.residual_out = y.dev; expect_error(ln, p, "y overlaps residual_out"); }
  { auto p = base(); int host[64]; p.bias = host; expect_error(ln, p, "bias does not lie inside"); }
}

TEST(NormValidation, Backward) {
  const int rows = 4, cols = 64;
  DeviceArray dy(dtype::bf16, rows * cols), r(dtype::bf16, rows * cols), w(dtype::bf16, cols), stats(dtype::fp32, 2 * rows);
  DeviceArray dx(dtype::bf16, rows * cols), dres(dtype::bf16, rows * cols), dw(dtype::bf16, cols), db(dtype::bf16, cols);
  const size_t ws = hk::norm_backward_workspace_bytes(rows, cols);
  DeviceArray workspace(dtype::fp32, ws / 4);
  auto base = [&] {
    hk::NormBackwardProblem p;
    p.rows = rows, p.cols = cols, p.dy = dy.dev, p.ldy = cols, p.r = r.dev, p.ldr = cols, p.weight = w.dev;
    p.mean = static_cast<const float*>(stats.dev), p.rstd = static_cast<const float*>(stats.dev) + rows;
    p.dx = dx.dev, p.ldx = cols, p.dresidual = dres.dev, p.ld_dresidual = cols, p.dweight = dw.dev, p.dbias = db.dev;
    p.workspace = workspace.dev, p.workspace_bytes = ws;
    return p;
  };
  ASSERT_TRUE(hk::layer_norm_backward(base()));
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  auto ln = [](const hk::NormBackwardProblem& p) { return hk::layer_norm_backward(p); };
  auto rms = [](const hk::NormBackwardProblem& p) { return hk::rms_norm_backward(p); };
  { auto p = base(); p.rows = -1; expect_error(ln, p, "rows must be positive"); }
  { auto p = base(); p.cols = 20000; expect_error(rms, p, "cols must be 1 .. 16384"); }
  { auto p = base(); p.type = dtype::fp8_e4m3; expect_error(ln, p, "activations must be"); }
  { auto p = base(); p.weight_type = dtype::f16; expect_error(ln, p, "weight_type must be"); }
  { auto p = base(); p.p = 2.f; expect_error(ln, p, "dropout p"); }
  { auto p = base(); p.dy = nullptr; expect_error(ln, p, "null pointer for dy"); }
  { auto p = base(); p.r = nullptr; expect_error(ln, p, "null pointer for r"); }
  { auto p = base(); p.rstd = nullptr; expect_error(ln, p, "null pointer for rstd"); }
  { auto p = base(); p.weight = nullptr; expect_error(ln, p, "null pointer for weight"); }
  { auto p = base(); p.dx = nullptr; expect_error(ln, p, "null pointer for dx"); }
  { auto p = base(); p.dweight = nullptr; expect_error(ln, p, "null pointer for dweight"); }
  { auto p = base(); p.mean = nullptr; expect_error(ln, p, "null pointer for mean"); }
  { auto p = base(); expect_error(rms, p, "RMSNorm has no mean and no bias"); }
  { auto p = base(); p.ldy = 1; expect_error(ln, p, "dy's row stride"); }
  { auto p = base(); p.ldr = 1; expect_error(ln, p, "r's row stride"); }
  { auto p = base(); p.dresidual_in = dy.dev; p.ld_dresidual_in = 1; expect_error(ln, p, "dresidual_in's row stride"); }
  { auto p = base(); p.ldx = 1; expect_error(ln, p, "dx's row stride"); }
  { auto p = base(); p.ld_dresidual = 1; expect_error(ln, p, "dresidual's row stride"); }
  { auto p = base(); p.r = static_cast<const char*>(r.dev) + 1; expect_error(ln, p, "r is not aligned"); }
  { auto p = base(); p.weight_type = dtype::fp32; expect_error(ln, p, "weight does not lie inside"); }
  { auto p = base(); p.workspace_bytes = ws - 4; expect_error(ln, p, "the workspace must hold"); }
  { auto p = base(); p.workspace = nullptr; expect_error(ln, p, "the workspace must hold"); }
  { auto p = base(); p.workspace = static_cast<char*>(workspace.dev) + 2; expect_error(ln, p, "16-byte aligned device memory"); }
  { auto p = base(); p.dx = dres.dev; expect_error(ln, p, "dx overlaps dresidual"); }
  { auto p = base(); p.dresidual = const_cast<void*>(p.dy); expect_error(ln, p, "dresidual overlaps dy"); }
  { auto p = base(); p.dweight = w.dev; expect_error(ln, p, "dweight overlaps weight"); }
  { auto p = base(); p.dbias = dw.dev; expect_error(ln, p, "dweight overlaps dbias"); }
  { auto p = base(); p.dresidual_in = dx.dev; p.ld_dresidual_in = cols; expect_error(ln, p, "dx overlaps dresidual_in"); }
  { auto p = base(); int host[8]; p.mean = reinterpret_cast<const float*>(host); expect_error(ln, p, "mean does not lie inside"); }
  EXPECT_EQ(hk::norm_backward_workspace_bytes(0, 64), 0u);
  EXPECT_EQ(hk::norm_backward_workspace_bytes(4, 16385), 0u);
}

}  // namespace
