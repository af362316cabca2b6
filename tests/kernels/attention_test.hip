// hk::attention_forward on each virtual device against the float64 host reference (attention_ref.h): O and LSE
// within per-dtype tolerances, for query and key lengths below, equal to and above each other (1, 17, 100, 255, 257,
// 1000), MHA and GQA (Hq / Hkv = 1, 2, 3, 4, 8, with Hkv > 1), D 64 and 128 (and a few cases of the wide heads:
// 192, 256, and 192 for Q and K with 128 for V), bf16 and f16, non-causal, causal and
// windows, rows that see no key, large scores, softcapping, sinks, ALiBi, dropout and their combinations, varlen batches with empty and length-1 sequences, BHSD and padded
// strides; the FP8 forward (Q, K, V in the arch's e4m3, with descales, and softcap; the reference takes the codes' values times the
// descales, and the tolerance is bf16's: the kernel's only roundings are P's and O's); and every validation error. Inputs sit in buffers whose unused elements are NaN, so a read outside the
// tensor poisons the result; O's unused elements and LSE's tail must keep their canary bits.
#include <hip/hip_runtime.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "attention/attention.h"
#include "hk/hk_test_util.h"
#include "host/scalar_type.h"
#include "kernels/attention_ref.h"
#include "kernels/attention_test_util.h"

namespace {

using namespace attn_test;

// FP8 cases: a descale of (which tensor: 0 Q, 1 K, 2 V; sequence b; KV head h), and the descales of a case as the
// problem takes them (3 arrays of 1 or B x Hkv entries, one after the other; none when c.descale is 0).
float descale_of(const Case& c, int which, int b, int h) {
  if (c.descale == 1) return 0.3f + 0.25f * which;
  return 0.05f * float(1 + (3 * b + 5 * h + 7 * which) % 13);
}
std::vector<float> descales(const Case& c) {
  std::vector<float> out;
  const int nb = c.descale == 2 ? int(c.lq.size()) : 1, nh = c.descale == 2 ? c.hkv : 1;
  if (c.descale)
    for (int w = 0; w < 3; ++w)
      for (int b = 0; b < nb; ++b)
        for (int h = 0; h < nh; ++h) out.push_back(descale_of(c, w, b, h));
  return out;
}

// An FP8 input: the tensor's values times `gain` rounded to the arch's e4m3 and its device buffer rewritten with their
// codes (NaN codes around them); `ref` gets the values times the descales of `which` (0 Q, 1 K, 2 V).
void to_fp8(const Case& c, Tensor& t, float gain, int which, std::vector<float>& ref) {
  const hk_host::Format f = hk_host::device_format(dtype::fp8_e4m3);
  std::vector<uint8_t> bytes(t.image.size() * 2, f.fp8().code(NAN));
  t.for_each([&](long at, long packed) {
    t.host[packed] = f.round(t.host[packed] * gain);
    f.store(t.host[packed], &bytes[at]);
  });
  ASSERT_EQ(hipMemcpy(t.dev, bytes.data(), bytes.size(), hipMemcpyHostToDevice), hipSuccess);
  ref = t.host;
  if (!c.descale) return;
  const int ratio = t.heads == c.hq ? c.hq / c.hkv : 1;
  long start = 0;
  for (size_t b = 0; b < t.lens.size(); ++b) {
    for (long i = 0; i < t.lens[b]; ++i)
      for (int h = 0; h < t.heads; ++h)
        for (int x = 0; x < t.dim; ++x) ref[((start + i) * t.heads + h) * t.dim + x] *= descale_of(c, which, int(b), h / ratio);
    start += t.lens[b];
  }
}

void run(const Case& c_in) {
  SCOPED_TRACE(describe(c_in));
  const bool fp8 = c_in.type == dtype::fp8_e4m3;
  Case c = c_in;  // the tensors' 16-bit type (fp8: O's bf16; Q, K, V rewritten below)
  if (fp8) c.type = dtype::bf16;
  const attn_ref::Shape shape = shape_of(c);
  Tensor q(c, c.hq, c.lq, 1, c.magnitude), k(c, c.hkv, c.lk, 2, c.magnitude), v(c, c.hkv, c.lk, 3, 1.f, c.vd()),
      o(c, c.hq, c.lq, 4, 0.f, c.vd());
  std::vector<float> q_ref, k_ref, v_ref;
  if (fp8) {  // codes of a few units, as a quantizer with these descales would make
    to_fp8(c, q, 4.f, 0, q_ref), to_fp8(c, k, 4.f, 1, k_ref), to_fp8(c, v, 4.f, 2, v_ref);
  }
  const DeviceArray<float> ds(descales(c));
  std::vector<uint16_t> o_canary(o.image.size(), canary(c.type));
  ASSERT_EQ(hipMemcpy(o.dev, o_canary.data(), o_canary.size() * 2, hipMemcpyHostToDevice), hipSuccess);
  const long tq = shape.total_q(), lse_elems = tq * c.hq;
  const float lse_canary = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> lse_host(lse_elems + 16, lse_canary);
  float* lse = nullptr;
  ASSERT_EQ(hipMalloc(&lse, lse_host.size() * 4), hipSuccess);
  ASSERT_EQ(hipMemcpy(lse, lse_host.data(), lse_host.size() * 4, hipMemcpyHostToDevice), hipSuccess);
  DeviceInts cu_q(offsets(c.lq)), cu_k(offsets(c.lk));
  const DeviceVariants variants(c);

  hk::AttentionProblem p;
  p.batch = int(c.lq.size()), p.heads_q = c.hq, p.heads_kv = c.hkv, p.head_dim = c.d, p.head_dim_v = c.dv;
  if (!c.varlen) p.seqlen_q = c.lq[0], p.seqlen_k = c.lk[0];
  else p.cu_seqlens_q = cu_q.dev, p.cu_seqlens_k = cu_k.dev;
  p.q = q.dev, p.k = k.dev, p.v = v.dev, p.o = o.dev, p.lse = lse;
  p.q_strides = q.given(), p.k_strides = k.given(), p.v_strides = v.given(), p.o_strides = o.given();
  set_options(c, p, variants);
  if (fp8) {
    p.type = dtype::fp8_e4m3;
    if (c.descale) {
      const int n = c.descale == 2 ? int(c.lq.size()) * c.hkv : 1;
      p.q_descale = ds.dev, p.k_descale = ds.dev + n, p.v_descale = ds.dev + 2 * n;
      p.descale_per_batch = p.descale_per_head = c.descale == 2;
    }
  }
  hk::Status s = hk::attention_forward(p);
  ASSERT_TRUE(s) << s.message;
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);

  const attn_ref::Result want = fp8 ? attn_ref::forward(shape, q_ref, k_ref, v_ref, true)
                                    : attn_ref::forward(shape, q.host, k.host, v.host, c.type == dtype::bf16);
  const std::vector<uint16_t> got = o.download();
  std::vector<bool> is_output(got.size(), false);
  int bad = 0;
  o.for_each([&](long at, long packed) {
    is_output[at] = true;
    const float g = from_bits(got[at], c.type);
    const double w = want.o[packed], tol = want.o_tol[packed];
    if (!(std::fabs(g - w) <= tol) && bad++ < 5)
      ADD_FAILURE() << "O[" << packed << "] = " << g << ", want " << w << " (tol " << tol << ")";
  });
  for (size_t at = 0; at < got.size(); ++at)
    if (!is_output[at] && got[at] != canary(c.type) && bad++ < 5) ADD_FAILURE() << "O's padding at " << at << " was written";
  ASSERT_EQ(hipMemcpy(lse_host.data(), lse, lse_host.size() * 4, hipMemcpyDeviceToHost), hipSuccess);
  long start = 0;
  for (size_t b = 0; b < c.lq.size(); ++b) {
    for (long i = 0; i < c.lq[b]; ++i)
      for (int h = 0; h < c.hq; ++h) {
        // (B, Hq, Sq), or (Hq, total_q) for varlen
        const long at = c.varlen ? h * tq + start + i : (long(b) * c.hq + h) * c.lq[b] + i;
        const long packed = (start + i) * c.hq + h;
        const double g = lse_host[at], w = want.lse[packed], tol = want.lse_tol[packed];
        const bool ok = std::isinf(w) ? g == w : std::fabs(g - w) <= tol;
        if (!ok && bad++ < 5) ADD_FAILURE() << "LSE (" << b << ", " << h << ", " << i << ") = " << g << ", want " << w << " (tol " << tol << ")";
      }
    start += c.lq[b];
  }
  for (long at = lse_elems; at < long(lse_host.size()); ++at)
    if (!std::isnan(lse_host[at]) && bad++ < 5) ADD_FAILURE() << "LSE written past its end at " << at;
  EXPECT_EQ(bad, 0);
  (void)hipFree(lse);
}

// Query and key lengths below, equal to and above each other, from 1 to 1000, and every head ratio.
TEST(AttentionShapes, EqualLengths) {
  run({same(100, 2), same(100, 2), false, 2, 2, 64, dtype::bf16});
  run({same(1, 3), same(1, 3), false, 3, 1, 64, dtype::bf16});
  run({same(1000, 1), same(1000, 1), false, 1, 1, 64, dtype::f16, true});
}
TEST(AttentionShapes, FewerQueriesThanKeys) {
  run({same(17, 1), same(255, 1), false, 6, 2, 128, dtype::f16});  // ratio 3
  run({same(1, 2), same(1000, 2), false, 16, 2, 128, dtype::bf16});  // ratio 8
  run({same(255, 1), same(257, 1), false, 8, 2, 128, dtype::f16, true});  // ratio 4
}
TEST(AttentionShapes, MoreQueriesThanKeys) {
  run({same(257, 1), same(17, 1), false, 8, 4, 64, dtype::bf16});  // ratio 2
  run({same(100, 2), same(1, 2), false, 4, 2, 128, dtype::f16});
}

// Causal (bottom-right) and windows, including rows that see no key at all.
TEST(AttentionMasks, Causal) {
  run({same(257, 1), same(257, 1), false, 1, 1, 128, dtype::bf16, true});
  run({same(100, 1), same(1000, 1), false, 2, 2, 64, dtype::bf16, true});
  run({same(255, 1), same(100, 1), false, 4, 2, 128, dtype::f16, true});  // the first 155 rows see no key
  run({same(1, 2), same(17, 2), false, 2, 1, 64, dtype::bf16, true});
}
TEST(AttentionMasks, Windows) {
  run({same(257, 1), same(257, 1), false, 1, 1, 64, dtype::bf16, true, 32, 0});
  run({same(100, 1), same(255, 1), false, 2, 1, 128, dtype::f16, false, -1, 16});
  run({same(1000, 1), same(1000, 1), false, 2, 1, 64, dtype::bf16, false, 64, 64});  // most tiles skipped
  run({same(17, 1), same(17, 1), false, 1, 1, 128, dtype::bf16, false, 0, 0});        // the diagonal only
  run({same(255, 1), same(100, 1), false, 2, 2, 64, dtype::f16, false, 10, 5});       // rows without a key
  run({same(100, 1), same(100, 1), false, 3, 3, 64, dtype::bf16, false, 20, -1});
}

// Scores far beyond exp's range (the online softmax's stability) and a non-default scale.
TEST(AttentionNumerics, LargeScores) {
  run({same(100, 1), same(100, 1), false, 2, 1, 128, dtype::bf16, true, -1, -1, 0.f, 30.f});
  run({same(64, 1), same(200, 1), false, 2, 2, 64, dtype::f16, false, -1, -1, 0.f, 16.f});
}
TEST(AttentionNumerics, SoftmaxScale) {
  run({same(64, 1), same(80, 1), false, 2, 1, 64, dtype::bf16, false, -1, -1, 0.3f});
}
// Softcapped logits (cap tanh(x / cap)) where the cap bites: scaled scores of magnitude ~5 against caps 2 and 8.
TEST(AttentionVariants, Softcap) {
  const Layout bshd = Layout::bshd;
  run({same(100, 1), same(257, 1), false, 4, 2, 64, dtype::bf16, true, -1, -1, 0.f, 4.f, bshd, 2.f});
  run({same(130, 1), same(90, 1), false, 2, 1, 128, dtype::f16, false, 40, 8, 0.f, 3.f, bshd, 8.f});
  run({{0, 1, 70, 200}, {3, 1, 100, 130}, true, 2, 2, 64, dtype::bf16, true, -1, -1, 0.f, 4.f, bshd, 5.f});
}

// Attention sinks: a logit per head in every row's denominator; rows that see no key then have LSE = the sink.
TEST(AttentionVariants, Sinks) {
  const Layout bshd = Layout::bshd;
  run({same(100, 1), same(257, 1), false, 5, 1, 64, dtype::bf16, true, -1, -1, 0.f, 1.f, bshd, 0.f, true});
  run({same(255, 1), same(100, 1), false, 4, 2, 128, dtype::f16, true, -1, -1, 0.f, 2.f, bshd, 0.f, true});
  run({{0, 1, 70, 200}, {3, 1, 100, 130}, true, 2, 2, 128, dtype::bf16, false, 30, 0, 0.f, 2.f, bshd, 3.f, true});
}

// ALiBi: per head and per (sequence, head) slopes, with and without masks; every tile takes the bias, masked or not.
TEST(AttentionVariants, Alibi) {
  const Layout bshd = Layout::bshd;
  run({same(100, 2), same(257, 2), false, 4, 2, 64, dtype::bf16, false, -1, -1, 0.f, 1.f, bshd, 0.f, false, 1});
  run({same(255, 1), same(100, 1), false, 8, 2, 128, dtype::f16, true, -1, -1, 0.f, 1.f, bshd, 0.f, false, 1});
  run({{0, 1, 70, 200}, {3, 1, 100, 130}, true, 2, 2, 128, dtype::bf16, false, 30, 10, 0.f, 1.f, bshd, 0.f, true, 2});
}

// Dropout against the reference with the same mask (hk's attention dropout): every mask kind, GQA, varlen, sinks, both D
// and types, seeds and offsets past 32 bits.
TEST(AttentionVariants, Dropout) {
  const Layout bshd = Layout::bshd;
  run(dropped({same(100, 2), same(257, 2), false, 4, 2, 64, dtype::bf16}, 0.17f, 42, 0));
  run(dropped({same(255, 1), same(255, 1), false, 8, 2, 128, dtype::f16, true}, 0.5f, 1ull << 40 | 7, 3ull << 32 | 5));
  run(dropped({same(1000, 1), same(1000, 1), false, 2, 1, 64, dtype::bf16, false, 64, 64}, 0.1f, 7, 100));
  run(dropped({{0, 1, 70, 200}, {3, 1, 100, 130}, true, 4, 2, 128, dtype::bf16, true}, 0.3f, 9, 1));
  run(dropped({same(100, 1), same(257, 1), false, 4, 1, 128, dtype::bf16, false, -1, -1, 0.f, 2.f, bshd, 0.f, true},
              0.25f, 5, 0));  // with sinks
}

// The feature combinations (attention_test_util.h's feature_combinations) against the float64 reference.
TEST(AttentionVariants, Combinations) {
  for (const Case& c : feature_combinations()) run(c);
}

// The device's mask itself, element by element: Q = 0 gives every key p = 1 / Sk, and V the identity (Sk = D = 128,
// key j's row e_j) makes O[i][j] = keep(i, j) / (Sk (1 - p)). Returns O's bits (packed by sequence). `combined`: with
// softcap and ALiBi (zero slopes) too, the instance of several features, whose scores are then all 0 as well.
std::vector<float> dropout_pattern(dtype type, float p, uint64_t seed, uint64_t offset, int batch, int hq, int hkv,
                                   int sq, bool combined = false) {
  const Case c{same(sq, batch), same(128, batch), false, hq, hkv, 128, type, false, -1, -1, 0.f, 0.f, Layout::bshd,
               combined ? 5.f : 0.f, false, 0, p, seed, offset};
  Tensor q(c, hq, c.lq, 1, 0.f), k(c, hkv, c.lk, 2, 1.f), v(c, hkv, c.lk, 3, 0.f), o(c, hq, c.lq, 4, 0.f);
  v.for_each([&](long at, long packed) {
    const long row = packed / (long(hkv) * 128) % 128, x = packed % 128;  // key j = row within its sequence
    v.host[packed] = row == x ? 1.f : 0.f;
    v.image[at] = to_bits(v.host[packed], type);
  });
  EXPECT_EQ(hipMemcpy(v.dev, v.image.data(), v.image.size() * 2, hipMemcpyHostToDevice), hipSuccess);
  hk::AttentionProblem pr;
  pr.batch = batch, pr.seqlen_q = sq, pr.seqlen_k = 128, pr.heads_q = hq, pr.heads_kv = hkv, pr.head_dim = 128;
  pr.q = q.dev, pr.k = k.dev, pr.v = v.dev, pr.o = o.dev;
  const DeviceVariants variants(c);
  set_options(c, pr, variants);
  const DeviceArray<float> zero_slopes(std::vector<float>(hq, 0.f));
  if (combined) pr.alibi_slopes = zero_slopes.dev;
  hk::Status s = hk::attention_forward(pr);
  EXPECT_TRUE(s) << s.message;
  EXPECT_EQ(hipDeviceSynchronize(), hipSuccess);
  const std::vector<uint16_t> bits = o.download();
  std::vector<float> out(o.host.size());
  o.for_each([&](long at, long packed) { out[packed] = from_bits(bits[at], type); });
  return out;
}

// The kept fraction (2M elements: within 0.01 of 1 - p), the mask equal to the host's stream element by element, the
// kept values 1 / (Sk (1 - p)), the same bits for the same seed and offset and from the instance of several features
// (softcap and ALiBi with it), another mask for another seed or offset.
TEST(AttentionDropout, Mask) {
  const int batch = 2, hq = 8, hkv = 2, sq = 1000;
  for (const auto& [type, p] : {std::pair{dtype::bf16, 0.1f}, {dtype::f16, 0.5f}, {dtype::bf16, 0.9f}}) {
    SCOPED_TRACE("p " + std::to_string(p));
    const uint64_t seed = 0x123456789abull, offset = 77;
    const std::vector<float> o = dropout_pattern(type, p, seed, offset, batch, hq, hkv, sq);
    const double kept_value = 1.0 / (128.0 * (1.0 - double(p)));
    long kept = 0, wrong = 0;
    for (int b = 0; b < batch; ++b)
      for (int i = 0; i < sq; ++i)
        for (int h = 0; h < hq; ++h)
          for (int j = 0; j < 128; ++j) {
            const float g = o[((long(b) * sq + i) * hq + h) * 128 + j];
            const bool want = philox_ref::attn_dropout_keep(p, seed, offset + uint64_t(b) * hq + h, i, j);
            const bool ok = want ? std::fabs(g - kept_value) <= attn_ref::unit_roundoff(type == dtype::bf16) * kept_value : g == 0.f;
            if (!ok && wrong++ < 5) ADD_FAILURE() << "O(" << b << ", " << i << ", " << h << ", " << j << ") = " << g << ", want " << (want ? kept_value : 0.0);
            kept += g != 0.f;
          }
    EXPECT_EQ(wrong, 0);
    const double fraction = double(kept) / (double(batch) * sq * hq * 128);
    EXPECT_NEAR(fraction, 1.0 - p, 0.01);
    EXPECT_TRUE(dropout_pattern(type, p, seed, offset, batch, hq, hkv, sq) == o);  // the same bits again
    EXPECT_TRUE(dropout_pattern(type, p, seed, offset, batch, hq, hkv, sq, true) == o);  // softcap and ALiBi too
    EXPECT_FALSE(dropout_pattern(type, p, seed + 1, offset, batch, hq, hkv, sq) == o);
    EXPECT_FALSE(dropout_pattern(type, p, seed, offset + 1, batch, hq, hkv, sq) == o);
  }
}

// Packed batches with empty and length-1 sequences on either side.
TEST(AttentionVarlen, Ragged) {
  const std::vector<int> lq{0, 1, 100, 17, 257}, lk{5, 1, 255, 0, 300};
  run({lq, lk, true, 6, 3, 64, dtype::bf16, true});
  run({lq, lk, true, 4, 2, 128, dtype::f16, false, 30, 10});
  run({{1, 1, 1}, {1, 17, 0}, true, 4, 1, 64, dtype::bf16});
}

// Wide heads (32-key tiles, their own kernel shapes): D 256 and 192, and 192 for Q and K with 128 for V (DeepSeek-V3),
// with GQA, causal masks, ragged varlen batches, a sink and a padded layout.
Case wide(Case c, int dv) {
  c.dv = dv;
  return c;
}
TEST(AttentionHeadDims, Wide) {
  run({same(100, 1), same(257, 1), false, 4, 2, 256, dtype::bf16, true});
  run({same(255, 1), same(100, 1), false, 2, 2, 256, dtype::f16, false, 30, 10, 0.f, 1.f, Layout::padded});
  run({same(257, 1), same(257, 1), false, 6, 2, 192, dtype::f16, true});
  run(wide({same(100, 2), same(255, 2), false, 8, 2, 192, dtype::bf16, true}, 128));
  run(wide({{0, 1, 100, 17}, {5, 1, 255, 3}, true, 4, 1, 192, dtype::f16, false, -1, -1, 0.f, 1.f, Layout::bhsd,
            0.f, true}, 128));
}

// The features at the wide heads (their one featured instance, the features read from the arguments): softcap (Gemma
// 2's D 256), ALiBi, dropout, and their combinations (ALiBi on the capped score), each dims' kernel, masks, varlen.
TEST(AttentionHeadDims, WideFeatures) {
  const Layout bshd = Layout::bshd;
  run({same(100, 1), same(257, 1), false, 4, 2, 256, dtype::bf16, true, -1, -1, 0.f, 4.f, bshd, 5.f});
  run({same(90, 2), same(130, 2), false, 4, 1, 256, dtype::f16, false, 30, 10, 0.f, 1.f, bshd, 0.f, false, 2});
  run(dropped(wide({{0, 1, 70, 100}, {3, 1, 100, 130}, true, 4, 2, 192, dtype::bf16, true}, 128), 0.2f, 3, 1ull << 33));
  run({same(100, 1), same(100, 1), false, 2, 2, 192, dtype::f16, false, -1, -1, 0.f, 4.f, bshd, 3.f, false, 1});
  run(dropped({same(70, 1), same(130, 1), false, 4, 2, 256, dtype::bf16, true, -1, -1, 0.f, 4.f, bshd, 5.f, true, 1},
              0.25f, 11, 2));  // every feature, sinks too
  run(dropped(wide({same(100, 1), same(90, 1), false, 2, 1, 192, dtype::f16, false, 20, -1, 0.f, 1.f, bshd, 0.f,
                    false, 2}, 128), 0.1f, 5, 0));
}

// Strided tensors: (B, H, S, D), padded rows and heads, and the default strides.
TEST(AttentionLayouts, Strided) {
  run({same(100, 2), same(257, 2), false, 4, 2, 128, dtype::bf16, true, -1, -1, 0.f, 1.f, Layout::bhsd});
  run({same(100, 2), same(100, 2), false, 3, 1, 64, dtype::f16, false, -1, -1, 0.f, 1.f, Layout::padded});
  run({same(17, 2), same(100, 2), false, 2, 2, 64, dtype::bf16, false, -1, -1, 0.f, 1.f, Layout::bshd_default});
  run({{0, 1, 100, 17}, {5, 1, 255, 3}, true, 4, 2, 64, dtype::bf16, true, -1, -1, 0.f, 1.f, Layout::bhsd});
}

// FP8 (the arch's e4m3: FNUZ on gfx942, OCP on gfx950): D 64 and 128 (both kernels on gfx942), GQA, causal and
// windows, varlen, BHSD, no descales, per-tensor ones and flash-attention 3's (B, Hkv).
Case fp8_case(Case c, int descale) {
  c.type = dtype::fp8_e4m3, c.descale = descale;
  return c;
}
TEST(AttentionFp8, Forward) {
  run(fp8_case({same(100, 2), same(257, 2), false, 4, 2, 128, dtype::bf16}, 2));
  run(fp8_case({same(255, 1), same(255, 1), false, 2, 1, 64, dtype::bf16, true}, 1));
  run(fp8_case({same(17, 2), same(100, 2), false, 8, 1, 128, dtype::bf16, false, 30, 10}, 0));
  run(fp8_case({same(300, 1), same(200, 1), false, 3, 3, 64, dtype::bf16, false, -1, -1, 0.f, 1.f, Layout::bhsd}, 2));
  run(fp8_case({{0, 1, 100, 17}, {5, 1, 255, 3}, true, 4, 2, 128, dtype::bf16, true}, 2));
  run(fp8_case({same(64, 1), same(130, 1), false, 2, 1, 64, dtype::bf16, false, -1, -1, 0.2f, 2.f, Layout::bshd, 0.f, true}, 2));
  // Softcap (flash-attention 3's FP8 forward has it): the descales inside the tanh, caps where they bite.
  run(fp8_case({same(100, 2), same(257, 2), false, 4, 2, 128, dtype::bf16, true, -1, -1, 0.f, 1.f, Layout::bshd, 3.f}, 2));
  run(fp8_case({same(255, 1), same(130, 1), false, 2, 1, 64, dtype::bf16, false, 30, 10, 0.f, 1.f, Layout::bshd, 2.f}, 1));
  run(fp8_case({{0, 1, 100, 17}, {5, 1, 255, 3}, true, 4, 2, 128, dtype::bf16, false, -1, -1, 0.f, 1.f, Layout::bshd,
                5.f, true}, 0));
}
TEST(AttentionFp8, Errors) {
  const int b = 2, s = 64, h = 2, d = 64;
  void *q = nullptr, *o = nullptr, *ws = nullptr;
  float* ds = nullptr;
  ASSERT_EQ(hipMalloc(&q, b * s * h * d), hipSuccess);
  ASSERT_EQ(hipMalloc(&o, b * s * h * d * 2), hipSuccess);
  ASSERT_EQ(hipMalloc(&ws, b * s * h * d * 2), hipSuccess);
  ASSERT_EQ(hipMalloc(&ds, b * h * 4), hipSuccess);
  std::vector<uint8_t> zeros(b * s * h * d, 0);
  std::vector<float> ones(b * h, 1.f);
  ASSERT_EQ(hipMemcpy(q, zeros.data(), zeros.size(), hipMemcpyHostToDevice), hipSuccess);
  ASSERT_EQ(hipMemcpy(ds, ones.data(), ones.size() * 4, hipMemcpyHostToDevice), hipSuccess);
  auto base = [&] {
    hk::AttentionProblem p;
    p.batch = b, p.seqlen_q = p.seqlen_k = s, p.heads_q = p.heads_kv = h, p.head_dim = d, p.type = dtype::fp8_e4m3;
    p.q = p.k = p.v = q, p.o = o;
    p.q_descale = p.k_descale = p.v_descale = ds, p.descale_per_batch = p.descale_per_head = true;
    return p;
  };
  auto expect_error = [&](hk::AttentionProblem p, const char* fragment) {
    hk::Status st = hk::attention_forward(p);
    EXPECT_FALSE(st) << fragment;
    EXPECT_NE(st.message.find(fragment), std::string::npos) << "message: " << st.message;
  };
  EXPECT_EQ(hk::attention_forward_workspace_bytes(base()), size_t(b) * s * h * d * 2);
  ASSERT_TRUE(hk::attention_forward(base()));  // its own workspace
  { auto p = base(); p.workspace = ws, p.workspace_bytes = b * s * h * d * 2; ASSERT_TRUE(hk::attention_forward(p)); }
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  { auto p = base(); p.head_dim = 256; expect_error(p, "the FP8 forward runs head dims 64 and 128"); }
  { auto p = base(); p.alibi_slopes = ds; expect_error(p, "not supported with fp8 inputs"); }
  { auto p = base(); p.dropout_p = 0.1f; expect_error(p, "not supported with fp8 inputs"); }
  { auto p = base(); p.k_strides.row = h * d + 8; expect_error(p, "K strides must be multiples of 16"); }
  { auto p = base(); p.v_descale = ds + 1; expect_error(p, "v_descale must be 4 "); }
  { auto p = base(); p.descale_per_batch = false; p.q_descale = ds + 3; expect_error(p, "q_descale must be 2 "); }
  { auto p = base(); p.workspace = ws, p.workspace_bytes = 64; expect_error(p, "the workspace holds 64 bytes"); }
  { auto p = base(); p.workspace = static_cast<char*>(ws) + 8, p.workspace_bytes = b * s * h * d * 2; expect_error(p, "16-byte aligned"); }
  { auto p = base(); p.workspace = o, p.workspace_bytes = b * s * h * d * 2; expect_error(p, "the workspace overlaps O"); }
  { auto p = base(); p.type = dtype::bf16; expect_error(p, "apply to fp8 inputs only"); }
  {
    hk::AttentionBackwardProblem bp;
    bp.batch = b, bp.seqlen_q = bp.seqlen_k = s, bp.heads_q = bp.heads_kv = h, bp.head_dim = d, bp.type = dtype::fp8_e4m3;
    bp.q = bp.k = bp.v = q, bp.o = o, bp.dout = o, bp.lse = ds, bp.dq = bp.dk = bp.dv = ws;
    hk::Status st = hk::attention_backward(bp);
    EXPECT_FALSE(st);
    EXPECT_NE(st.message.find("fp8 attention is forward-only"), std::string::npos) << st.message;
  }
  for (void* x : {q, o, ws, static_cast<void*>(ds)}) (void)hipFree(x);
}

TEST(AttentionValidation, Errors) {
  const int b = 2, s = 64, h = 2, d = 64;
  auto alloc = [](size_t bytes) {
    void* p = nullptr;
    EXPECT_EQ(hipMalloc(&p, bytes), hipSuccess);
    return p;
  };
  void *q = alloc(b * s * h * d * 2), *k = alloc(b * s * h * d * 2), *v = alloc(b * s * h * d * 2),
       *o = alloc(b * s * h * d * 2);
  float* lse = static_cast<float*>(alloc(b * h * s * 4));
  DeviceInts cu_good({0, 10, 64}), cu_bad_start({1, 10, 64}), cu_decreasing({0, 40, 30}), cu_too_long({0, 10, 200});
  auto base = [&] {
    hk::AttentionProblem p;
    p.batch = b, p.seqlen_q = p.seqlen_k = s, p.heads_q = p.heads_kv = h, p.head_dim = d;
    p.q = q, p.k = k, p.v = v, p.o = o, p.lse = lse;
    return p;
  };
  auto expect_error = [&](hk::AttentionProblem p, const char* fragment) {
    hk::Status st = hk::attention_forward(p);
    EXPECT_FALSE(st) << fragment;
    EXPECT_NE(st.message.find(fragment), std::string::npos) << "message: " << st.message;
  };
  ASSERT_TRUE(hk::attention_forward(base()));
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  { auto p = base(); p.batch = 0; expect_error(p, "batch must be positive"); }
  { auto p = base(); p.seqlen_q = 0; expect_error(p, "seqlen_q and seqlen_k must be positive"); }
  { auto p = base(); p.seqlen_k = -3; expect_error(p, "seqlen_q and seqlen_k must be positive"); }
  { auto p = base(); p.seqlen_k = 1 << 29; expect_error(p, "2^28"); }
  { auto p = base(); p.heads_kv = 0; expect_error(p, "must be positive"); }
  { auto p = base(); p.heads_q = 3; expect_error(p, "must be a multiple of heads_kv"); }
  { auto p = base(); p.head_dim = 96; expect_error(p, "must both be 64, 128, 192 or 256, or 192 and 128"); }
  { auto p = base(); p.head_dim_v = 128; expect_error(p, "must both be 64, 128, 192 or 256, or 192 and 128"); }
  { auto p = base(); p.type = dtype::fp32; expect_error(p, "must be bf16 or f16"); }
  { auto p = base(); p.type = dtype::fp8_e5m2; expect_error(p, "must be bf16 or f16"); }
  { auto p = base(); p.k = nullptr; expect_error(p, "null pointer for K"); }
  { auto p = base(); p.o = nullptr; expect_error(p, "null pointer for O"); }
  { auto p = base(); p.softmax_scale = -1.f; expect_error(p, "softmax_scale"); }
  { auto p = base(); p.softmax_scale = INFINITY; expect_error(p, "softmax_scale"); }
  { auto p = base(); p.softcap = -1.f; expect_error(p, "softcap must be positive"); }
  { auto p = base(); p.softcap = NAN; expect_error(p, "softcap must be positive"); }
  { auto p = base(); p.sinks = lse + b * h * s - 1; expect_error(p, "sinks must be heads_q"); }  // runs past LSE's end
  { auto p = base(); p.alibi_slopes = lse, p.alibi_batch_stride = 1; expect_error(p, "alibi_batch_stride"); }
  { auto p = base(); p.alibi_slopes = lse + b * h * s - 1; expect_error(p, "alibi_slopes must be"); }
  { auto p = base(); p.dropout_p = 1.f; expect_error(p, "dropout_p must be in [0, 1)"); }
  { auto p = base(); p.dropout_p = NAN; expect_error(p, "dropout_p must be in [0, 1)"); }
  { auto p = base(); p.dropout_p = 0.999f; expect_error(p, "dropout_p must be at most 1 - 2^-8"); }
  { auto p = base(); p.window_left = -2; expect_error(p, "window sizes"); }
  { auto p = base(); p.causal = true, p.window_right = 4; expect_error(p, "window_right must be -1 or 0"); }
  { auto p = base(); p.cu_seqlens_q = cu_good.dev; expect_error(p, "both cu_seqlens_q and cu_seqlens_k"); }
  { auto p = base(); p.cu_seqlens_q = p.cu_seqlens_k = cu_bad_start.dev; expect_error(p, "cu_seqlens_q[0] must be 0"); }
  { auto p = base(); p.cu_seqlens_q = cu_good.dev, p.cu_seqlens_k = cu_decreasing.dev; expect_error(p, "cu_seqlens_k must be non-decreasing"); }
  { auto p = base(); p.cu_seqlens_q = p.cu_seqlens_k = cu_good.dev, p.seqlen_q = 20; expect_error(p, "shorter than the longest"); }
  { auto p = base(); p.cu_seqlens_q = p.cu_seqlens_k = cu_good.dev, p.batch = 3; expect_error(p, "batch + 1 int32 entries"); }
  { auto p = base(); p.cu_seqlens_q = cu_too_long.dev, p.cu_seqlens_k = cu_good.dev, p.batch = 2; p.seqlen_q = p.seqlen_k = 0;
    expect_error(p, "Q does not lie inside"); }  // 200 packed rows of a 2 x 64-row buffer
  { auto p = base(); p.q = static_cast<char*>(q) + 8; expect_error(p, "Q must be 16-byte aligned"); }
  { auto p = base(); p.k_strides.row = 2 * d + 4; expect_error(p, "K strides must be multiples of 8"); }
  { auto p = base(); p.v_strides.head = -d; expect_error(p, "V strides must not be negative"); }
  { auto p = base(); p.v_strides.row = 1l << 27; expect_error(p, "V: one head of one sequence must span less than 2 GiB"); }
  { auto p = base(); p.o_strides = {s * h * d, d, d}; expect_error(p, "O strides make elements overlap"); }
  { auto p = base(); p.o_strides.batch = s * h * d + 8; expect_error(p, "O does not lie inside"); }
  { auto p = base(); p.seqlen_q = s + 1; expect_error(p, "Q does not lie inside"); }
  { auto p = base(); p.heads_q = 4; p.heads_kv = 2; expect_error(p, "Q does not lie inside"); }
  { auto p = base(); p.k_strides.batch = s * h * d + 8; expect_error(p, "K does not lie inside"); }
  { auto p = base(); p.lse = reinterpret_cast<float*>(static_cast<char*>(o) + 2); expect_error(p, "LSE must be 4-byte aligned"); }
  { auto p = base(); p.lse = lse + 4; expect_error(p, "LSE does not lie inside"); }
  alignas(16) int on_host[64];
  { auto p = base(); p.v = on_host; expect_error(p, "V does not lie inside"); }
  for (void* x : {q, k, v, o, static_cast<void*>(lse)}) (void)hipFree(x);
}

}  // namespace
