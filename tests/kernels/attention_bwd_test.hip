// hk::attention_backward on each virtual device: dQ, dK and dV against the float64 host reference (attention_ref.h)
// within per-dtype tolerances, once per shape class of the forward's test (MHA and GQA, D 64 and 128 (and 192, 256,
// 192 / 128 in a few cases), bf16 and f16,
// causal and windows with rows that see no key, ragged lengths that are not multiples of the tiles, varlen batches
// with empty sequences, BHSD and padded strides); a finite-difference check of the reference itself; bit-identical
// gradients across runs and across HK_VGPU_THREADS=1 and 2; and the validation errors. Inputs sit in buffers whose
// unused elements are NaN and the gradients' unused elements must keep their canary bits.
#include <hip/hip_runtime.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "attention/attention.h"
#include "kernels/attention_ref.h"
#include "kernels/attention_test_util.h"

namespace {

using namespace attn_test;

struct Grads {
  std::vector<uint16_t> dq, dk, dv;  // the device buffers' bits
  std::vector<float> dsinks;         // with sinks
  bool operator==(const Grads&) const = default;
};

// The forward, then the backward of loss sum(O * dO) for random dO; with `check`, every gradient element against the
// reference and the padding of every gradient buffer against its canary. `workspace`: pass one (else the call
// allocates its own).
Grads run(const Case& c, bool check = true, bool workspace = true) {
  SCOPED_TRACE(describe(c));
  const attn_ref::Shape shape = shape_of(c);
  Tensor q(c, c.hq, c.lq, 1, c.magnitude), k(c, c.hkv, c.lk, 2, c.magnitude), v(c, c.hkv, c.lk, 3, 1.f, c.vd()),
      o(c, c.hq, c.lq, 4, 0.f, c.vd()), dout(c, c.hq, c.lq, 5, 1.f, c.vd()), dq(c, c.hq, c.lq, 6, 0.f),
      dk(c, c.hkv, c.lk, 7, 0.f), dv(c, c.hkv, c.lk, 8, 0.f, c.vd());
  for (Tensor* t : {&dq, &dk, &dv}) {
    const std::vector<uint16_t> fill(t->image.size(), canary(c.type));
    EXPECT_EQ(hipMemcpy(t->dev, fill.data(), fill.size() * 2, hipMemcpyHostToDevice), hipSuccess);
  }
  const long tq = shape.total_q();
  float *lse = nullptr, *delta = nullptr;
  EXPECT_EQ(hipMalloc(&lse, (tq * c.hq + 16) * 4), hipSuccess);
  DeviceInts cu_q(offsets(c.lq)), cu_k(offsets(c.lk));
  const DeviceVariants variants(c);
  DeviceArray<float> dsinks(std::vector<float>(c.sinks ? c.hq : 0, NAN));

  hk::AttentionProblem f;
  f.batch = int(c.lq.size()), f.heads_q = c.hq, f.heads_kv = c.hkv, f.head_dim = c.d, f.head_dim_v = c.dv;
  if (!c.varlen) f.seqlen_q = c.lq[0], f.seqlen_k = c.lk[0];
  else f.cu_seqlens_q = cu_q.dev, f.cu_seqlens_k = cu_k.dev;
  f.q = q.dev, f.k = k.dev, f.v = v.dev, f.o = o.dev, f.lse = lse;
  f.q_strides = q.given(), f.k_strides = k.given(), f.v_strides = v.given(), f.o_strides = o.given();
  set_options(c, f, variants);
  hk::Status s = hk::attention_forward(f);
  EXPECT_TRUE(s) << s.message;

  hk::AttentionBackwardProblem p;
  p.batch = f.batch, p.seqlen_q = f.seqlen_q, p.seqlen_k = f.seqlen_k, p.heads_q = c.hq, p.heads_kv = c.hkv;
  p.head_dim = c.d, p.head_dim_v = c.dv, p.cu_seqlens_q = f.cu_seqlens_q, p.cu_seqlens_k = f.cu_seqlens_k;
  p.q = q.dev, p.k = k.dev, p.v = v.dev, p.o = o.dev, p.dout = dout.dev, p.lse = lse;
  p.dq = dq.dev, p.dk = dk.dev, p.dv = dv.dev;
  p.q_strides = q.given(), p.k_strides = k.given(), p.v_strides = v.given(), p.o_strides = o.given();
  p.do_strides = dout.given(), p.dq_strides = dq.given(), p.dk_strides = dk.given(), p.dv_strides = dv.given();
  set_options(c, p, variants);
  p.dsinks = dsinks.dev;
  if (workspace) {
    p.workspace_bytes = hk::attention_backward_workspace_bytes(p);
    EXPECT_EQ(p.workspace_bytes, size_t(tq * c.hq * 4));
    EXPECT_EQ(hipMalloc(&delta, std::max<size_t>(p.workspace_bytes, 4)), hipSuccess);
    p.workspace = delta;
  }
  s = hk::attention_backward(p);
  EXPECT_TRUE(s) << s.message;
  EXPECT_EQ(hipDeviceSynchronize(), hipSuccess);
  Grads got{dq.download(), dk.download(), dv.download(), dsinks.download(sink_values(c).size())};
  (void)hipFree(lse), (void)hipFree(delta);
  if (!check) return got;

  const attn_ref::Gradients want = attn_ref::backward(shape, q.host, k.host, v.host, dout.host, c.type == dtype::bf16);
  auto compare = [&](const char* name, const Tensor& t, const std::vector<uint16_t>& bits, const std::vector<double>& val,
                     const std::vector<double>& tol) {
    std::vector<bool> is_output(bits.size(), false);
    int bad = 0;
    t.for_each([&](long at, long packed) {
      is_output[at] = true;
      const float g = from_bits(bits[at], c.type);
      if (!(std::fabs(g - val[packed]) <= tol[packed]) && bad++ < 5)
        ADD_FAILURE() << name << "[" << packed << "] = " << g << ", want " << val[packed] << " (tol " << tol[packed] << ")";
    });
    for (size_t at = 0; at < bits.size(); ++at)
      if (!is_output[at] && bits[at] != canary(c.type) && bad++ < 5) ADD_FAILURE() << name << "'s padding at " << at << " was written";
    EXPECT_EQ(bad, 0) << name;
  };
  compare("dQ", dq, got.dq, want.dq, want.dq_tol);
  compare("dK", dk, got.dk, want.dk, want.dk_tol);
  compare("dV", dv, got.dv, want.dv, want.dv_tol);
  for (size_t h = 0; h < got.dsinks.size(); ++h)
    EXPECT_NEAR(got.dsinks[h], want.dsinks[h], want.dsinks_tol[h]) << "dsinks[" << h << "]";
  return got;
}

// n values uniform in [-1, 1] rounded to bf16, from a generator seeded with `seed`: the reference checks' inputs.
std::vector<float> bf16_values(long n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> x(n);
  for (auto& e : x) e = hk_host::round_bf16(u(rng));
  return x;
}

// The reference's gradients are those of its own forward: central differences of sum(O * dO) on a tiny case (every
// mask kind, GQA, a row that sees no key), with steps exact in float.
TEST(AttentionBackwardReference, FiniteDifferences) {
  for (const auto& [causal, left, right, cap, sinks, alibi] :
       {std::tuple{false, -1, -1, 0.0, false, false}, {true, -1, -1, 0.0, false, false}, {false, 1, 0, 0.0, false, false},
        {true, -1, -1, 0.5, false, false}, {true, -1, -1, 0.0, true, false}, {false, -1, -1, 0.0, true, true}}) {
    attn_ref::Shape s{{3, 2}, {4, 1}, 2, 1, 4, causal, left, right, 0.7, cap};
    if (sinks) s.sinks = {0.25, -0.5};
    if (alibi) s.alibi = {0.5, 0.25, 1.0, 0.125}, s.alibi_batched = true;  // per sequence and head
    SCOPED_TRACE("causal " + std::to_string(causal) + " window " + std::to_string(left) + "," + std::to_string(right) +
                 " softcap " + std::to_string(cap) + " sinks " + std::to_string(sinks) + " alibi " + std::to_string(alibi));
    const long nq = s.total_q() * s.hq * s.d, nk = s.total_k() * s.hkv * s.d;
    std::vector<float> q = bf16_values(nq, 1), k = bf16_values(nk, 2), v = bf16_values(nk, 3), dout = bf16_values(nq, 4);
    const attn_ref::Gradients g = attn_ref::backward(s, q, k, v, dout, true);
    auto loss = [&] {
      const attn_ref::Result r = attn_ref::forward(s, q, k, v, true);
      double l = 0;
      for (long n = 0; n < nq; ++n) l += r.o[n] * dout[n];
      return l;
    };
    const float h = 0x1p-10f;  // bf16 values in [-1, 1] plus or minus h are exact floats
    int checked = 0;
    for (auto [x, grad, name] : {std::tuple{&q, &g.dq, "dQ"}, {&k, &g.dk, "dK"}, {&v, &g.dv, "dV"}})
      for (size_t n = 0; n < x->size(); ++n) {
        const float keep = (*x)[n];
        (*x)[n] = keep + h;
        const double up = loss();
        (*x)[n] = keep - h;
        const double down = loss();
        (*x)[n] = keep;
        const double fd = (up - down) / (2.0 * h);
        EXPECT_NEAR((*grad)[n], fd, 1e-5 + 1e-4 * std::fabs(fd)) << name << "[" << n << "]";
        checked += (*grad)[n] != 0;
      }
    for (size_t n = 0; n < s.sinks.size(); ++n) {  // the sinks' gradient (the sinks are doubles: any step)
      const double keep = s.sinks[n];
      s.sinks[n] = keep + h;
      const double up = loss();
      s.sinks[n] = keep - h;
      const double down = loss();
      s.sinks[n] = keep;
      const double fd = (up - down) / (2.0 * h);
      EXPECT_NEAR(g.dsinks[n], fd, 1e-5 + 1e-4 * std::fabs(fd)) << "dsinks[" << n << "]";
      EXPECT_NE(g.dsinks[n], 0.0);
    }
    EXPECT_GT(checked, 20);  // most gradients are non-zero: the check compares something
  }
}

// With dropout the mask is a constant of the loss: the reference's gradients against central differences again.
TEST(AttentionBackwardReference, FiniteDifferencesDropout) {
  attn_ref::Shape s{{5, 3}, {6, 4}, 2, 1, 4, true, -1, -1, 0.7};
  s.dropout = 0.4, s.seed = 11, s.offset = 3;
  const long nq = s.total_q() * s.hq * s.d, nk = s.total_k() * s.hkv * s.d;
  std::vector<float> q = bf16_values(nq, 1), k = bf16_values(nk, 2), v = bf16_values(nk, 3), dout = bf16_values(nq, 4);
  const attn_ref::Gradients g = attn_ref::backward(s, q, k, v, dout, true);
  int dropped = 0;
  for (long i = 0; i < 5; ++i)
    for (long j = 0; j < 6; ++j) dropped += s.dropped(0, 0, i, j) == 0;
  EXPECT_GT(dropped, 0);  // the mask drops something here
  const float h = 0x1p-10f;
  int checked = 0;
  for (auto [x, grad, name] : {std::tuple{&q, &g.dq, "dQ"}, {&k, &g.dk, "dK"}, {&v, &g.dv, "dV"}})
    for (size_t n = 0; n < x->size(); ++n) {
      const float keep = (*x)[n];
      double l[2];
      for (int side = 0; side < 2; ++side) {
        (*x)[n] = keep + (side ? -h : h);
        const attn_ref::Result r = attn_ref::forward(s, q, k, v, true);
        l[side] = 0;
        for (long m = 0; m < nq; ++m) l[side] += r.o[m] * dout[m];
      }
      (*x)[n] = keep;
      const double fd = (l[0] - l[1]) / (2.0 * h);
      EXPECT_NEAR((*grad)[n], fd, 1e-5 + 1e-4 * std::fabs(fd)) << name << "[" << n << "]";
      checked += (*grad)[n] != 0;
    }
  EXPECT_GT(checked, 20);
}

TEST(AttentionBackward, HeadsAndLengths) {
  run({same(100, 2), same(100, 2), false, 2, 2, 64, dtype::bf16});              // MHA
  run({same(17, 1), same(255, 1), false, 6, 2, 128, dtype::f16});               // GQA 3, fewer queries than keys
  run({same(257, 1), same(17, 1), false, 8, 2, 64, dtype::bf16});               // GQA 4, more queries than keys
}

TEST(AttentionBackward, Masks) {
  run({same(130, 1), same(200, 1), false, 6, 2, 64, dtype::f16, true});                  // causal, GQA
  run({same(255, 1), same(100, 1), false, 4, 2, 128, dtype::bf16, true});                // rows that see no key
  run({same(257, 1), same(257, 1), false, 2, 1, 64, dtype::bf16, false, 32, 0});         // sliding window
  run({same(100, 1), same(255, 1), false, 2, 2, 128, dtype::f16, false, 10, 5});         // keys no query sees
}

// Scores far beyond exp's range: P recomputed from the forward's LSE must stay within its tolerance.
TEST(AttentionBackward, LargeScores) {
  run({same(100, 1), same(100, 1), false, 2, 1, 128, dtype::bf16, true, -1, -1, 0.f, 16.f});
}

// Softcapped logits, where the cap bites (scaled scores ~5 against caps 2 to 8): dS through tanh's slope.
TEST(AttentionBackward, Softcap) {
  const Layout bshd = Layout::bshd;
  run({same(130, 1), same(200, 1), false, 4, 2, 64, dtype::bf16, true, -1, -1, 0.f, 4.f, bshd, 2.f});
  run({same(100, 1), same(90, 1), false, 2, 1, 128, dtype::f16, false, 30, 8, 0.f, 3.f, bshd, 8.f});
  run({{0, 1, 70, 130}, {3, 1, 100, 130}, true, 2, 2, 128, dtype::bf16, true, -1, -1, 0.f, 4.f, bshd, 5.f});
  // Key blocks and query tiles whole at 256 keys (queries) and past it (D = 128 on gfx950: keys64's and dq64's capping
  // in their schedules' tasks), next to masked ones; and causal.
  run({same(300, 1), same(520, 1), false, 4, 2, 128, dtype::bf16, false, -1, -1, 0.f, 4.f, bshd, 5.f});
  run({same(520, 1), same(300, 1), false, 4, 2, 128, dtype::bf16, true, -1, -1, 0.f, 4.f, bshd, 5.f});
}

// Attention sinks: dS unchanged, the sinks' gradient summed over every row of the head (rows without keys included).
TEST(AttentionBackward, Sinks) {
  const Layout bshd = Layout::bshd;
  run({same(130, 1), same(200, 1), false, 5, 1, 64, dtype::bf16, true, -1, -1, 0.f, 1.f, bshd, 0.f, true});
  run({same(255, 2), same(100, 2), false, 4, 2, 128, dtype::f16, true, -1, -1, 0.f, 2.f, bshd, 0.f, true});
  run({{0, 1, 70, 130}, {3, 1, 100, 130}, true, 2, 2, 64, dtype::bf16, false, 30, 0, 0.f, 2.f, bshd, 3.f, true});
}

// ALiBi: the bias recomputed with the scores in both kernels (no gradient to the slopes).
TEST(AttentionBackward, Alibi) {
  const Layout bshd = Layout::bshd;
  run({same(130, 1), same(200, 1), false, 4, 2, 64, dtype::bf16, true, -1, -1, 0.f, 1.f, bshd, 0.f, false, 1});
  run({same(100, 2), same(90, 2), false, 2, 1, 128, dtype::f16, false, 30, 8, 0.f, 1.f, bshd, 0.f, false, 2});
  run({{0, 1, 70, 130}, {3, 1, 100, 130}, true, 2, 2, 128, dtype::bf16, false, -1, -1, 0.f, 1.f, bshd, 0.f, true, 1});
  // Key blocks and query tiles wholly on one side of the diagonal (D = 128 on gfx950: the bias split into the starts
  // and exp2's multiply-add of keys64 and dq64, both sides), next to tiles it crosses; and causal.
  run({same(300, 1), same(520, 1), false, 4, 2, 128, dtype::bf16, false, -1, -1, 0.f, 1.f, bshd, 0.f, false, 1});
  run({same(520, 1), same(300, 1), false, 4, 2, 128, dtype::bf16, true, -1, -1, 0.f, 1.f, bshd, 0.f, false, 1});
}

// Dropout: P and dP dropped by the forward's mask (regenerated), every mask kind, GQA, varlen, both D and types.
TEST(AttentionBackward, Dropout) {
  const Layout bshd = Layout::bshd;
  run(dropped({same(100, 2), same(130, 2), false, 4, 2, 64, dtype::bf16}, 0.17f, 42, 0));
  run(dropped({same(130, 1), same(200, 1), false, 6, 2, 128, dtype::f16, true}, 0.5f, 1ull << 40 | 7, 3ull << 32 | 5));
  run(dropped({same(257, 1), same(257, 1), false, 2, 1, 64, dtype::f16, false, 32, 0}, 0.1f, 7, 100));
  run(dropped({{0, 1, 70, 130}, {3, 1, 100, 130}, true, 4, 2, 128, dtype::bf16, false, 30, 10}, 0.3f, 9, 1));
  run(dropped({same(100, 1), same(90, 1), false, 4, 2, 64, dtype::bf16, true, -1, -1, 0.f, 2.f, bshd, 0.f, true}, 0.25f,
              5, 0));  // with sinks
  // Key blocks and query tiles whole at 256 keys (queries) and past it (D = 128 on gfx950: keys64's and dq64's keep
  // words in their schedules' tasks, a step's head from the stream), next to masked ones; causal, GQA, a window; f16.
  run(dropped({same(300, 1), same(520, 1), false, 4, 2, 128, dtype::bf16}, 0.1f, 3, 17));
  run(dropped({same(520, 1), same(300, 1), false, 4, 2, 128, dtype::bf16, true}, 0.3f, 1ull << 36 | 5, 1ull << 33 | 2));
  run(dropped({same(520, 1), same(520, 1), false, 4, 1, 128, dtype::f16, false, 200, 40}, 0.2f, 8, 4));
}

// The feature combinations (attention_test_util.h's feature_combinations) against the float64 reference.
TEST(AttentionBackward, Combinations) {
  for (const Case& c : feature_combinations()) run(c);
}

// The mask is the seed's: the same seed gives the same bits, another seed other gradients.
TEST(AttentionBackwardDeterminism, DropoutSeed) {
  const Case c = dropped({same(100, 1), same(130, 1), false, 4, 2, 128, dtype::bf16, true}, 0.2f, 1234, 0);
  const Grads first = run(c, false);
  EXPECT_TRUE(run(c, false) == first);
  Case other = c;
  other.seed = 1235;
  EXPECT_FALSE(run(other, false) == first);
}

TEST(AttentionBackward, VarlenAndLayouts) {
  run({{0, 1, 100, 17, 130}, {5, 1, 200, 0, 140}, true, 6, 3, 64, dtype::bf16, true});
  run({{0, 1, 100, 17, 130}, {5, 1, 200, 0, 140}, true, 4, 2, 128, dtype::f16, false, 30, 10});
  run({{1, 1, 1}, {1, 17, 0}, true, 4, 1, 64, dtype::f16});  // MQA, a sequence without keys
  run({same(100, 2), same(150, 2), false, 4, 2, 128, dtype::bf16, true, -1, -1, 0.f, 1.f, Layout::bhsd});
  run({same(70, 2), same(70, 2), false, 3, 1, 64, dtype::f16, false, -1, -1, 0.3f, 1.f, Layout::padded});
}

// Wide heads (their own tile shapes): D 256 and 192, and 192 for Q and K with 128 for V (dQ and dK in Q's head dim,
// dV in V's), with GQA, causal and window masks, a ragged varlen batch and sinks.
TEST(AttentionBackward, WideHeads) {
  const Layout bshd = Layout::bshd;
  run({same(100, 1), same(130, 1), false, 4, 2, 256, dtype::bf16, true});
  run({same(100, 1), same(90, 1), false, 2, 1, 192, dtype::f16, false, 30, 8});
  Case mla{{0, 1, 70, 130}, {3, 1, 100, 130}, true, 4, 2, 192, dtype::bf16, true, -1, -1, 0.f, 1.f, bshd, 0.f, true};
  mla.dv = 128;
  run(mla);
}

// The features at the wide heads (the one featured instance of each kernel): softcap (Gemma 2's D 256), ALiBi,
// dropout and their combinations, dP dropped and capped before the masks.
TEST(AttentionBackward, WideHeadFeatures) {
  const Layout bshd = Layout::bshd;
  run({same(100, 1), same(130, 1), false, 4, 2, 256, dtype::bf16, true, -1, -1, 0.f, 4.f, bshd, 5.f});
  run(dropped({same(90, 1), same(100, 1), false, 2, 1, 256, dtype::f16, false, 30, 8, 0.f, 4.f, bshd, 3.f, false, 2},
              0.2f, 7, 3));  // every feature
  Case mla = dropped({{0, 1, 70, 100}, {3, 1, 100, 130}, true, 4, 2, 192, dtype::bf16, true, -1, -1, 0.f, 1.f, bshd,
                      0.f, false, 1}, 0.3f, 9, 1);
  mla.dv = 128;
  run(mla);
  run({same(70, 1), same(90, 1), false, 2, 2, 192, dtype::f16, false, -1, -1, 0.f, 4.f, bshd, 4.f, false, 1});
}

TEST(AttentionBackward, OwnWorkspace) {
  run({same(40, 1), same(90, 1), false, 2, 1, 64, dtype::bf16, true}, true, false);
}

// The deterministic mode's promise: the same bits run after run and whatever the number of host threads vgpu runs
// workgroups on (a child process per thread count: vgpu reads HK_VGPU_THREADS when it starts).
const Case determinism_case{same(150, 1), same(200, 1), false, 4, 2, 64, dtype::bf16, true, -1, -1, 0.f, 1.f,
                             Layout::bshd, 0.f, true};
// and a wide head's (192 / 128: its own kernel shapes), whose bits follow the first case's
const Case determinism_wide = [] {
  Case c{same(100, 1), same(130, 1), false, 4, 2, 192, dtype::f16, true};
  c.dv = 128;
  return c;
}();

// and dropout's (its mask regenerated by both kernels; D = 128: gfx950's pairs of waves)
const Case determinism_dropout = [] {
  Case c{same(130, 1), same(170, 1), false, 4, 2, 128, dtype::bf16, true};
  c.dropout = 0.2f, c.seed = 7, c.offset = 5;
  return c;
}();

// and the feature combinations' (the dynamic instance: softcap, ALiBi and dropout together; D = 128: gfx950's pairs
// of waves, D = 64: its single waves)
Case determinism_combo(int d) {
  Case c{same(130, 1), same(170, 1), false, 4, 2, d, dtype::bf16, true};
  c.softcap = 30.f, c.alibi = 2, c.dropout = 0.2f, c.seed = 7, c.offset = 5;
  return c;
}

std::vector<char> bytes_of(const Grads& g, std::vector<char> out = {}) {
  for (const auto* v : {&g.dq, &g.dk, &g.dv})
    out.insert(out.end(), reinterpret_cast<const char*>(v->data()), reinterpret_cast<const char*>(v->data() + v->size()));
  out.insert(out.end(), reinterpret_cast<const char*>(g.dsinks.data()),
             reinterpret_cast<const char*>(g.dsinks.data() + g.dsinks.size()));
  return out;
}

// The determinism cases' bits, one after the other.
std::vector<char> determinism_bits() {
  std::vector<char> bits =
      bytes_of(run(determinism_dropout, false), bytes_of(run(determinism_wide, false), bytes_of(run(determinism_case, false))));
  for (int d : {64, 128}) bits = bytes_of(run(determinism_combo(d), false), std::move(bits));
  return bits;
}

TEST(AttentionBackwardDeterminism, RunToRun) {
  for (const Case& c :
       {determinism_case, determinism_wide, determinism_dropout, determinism_combo(64), determinism_combo(128)}) {
    const Grads first = run(c, false);
    EXPECT_TRUE(run(c, false) == first) << describe(c);
  }
}

// Run by AcrossThreadCounts in a child process: writes the gradients' bits to $HK_ATTN_BWD_BITS.
TEST(AttentionBackwardDeterminism, WriteBits) {
  const char* path = std::getenv("HK_ATTN_BWD_BITS");
  if (!path) GTEST_SKIP() << "run by AcrossThreadCounts";
  const std::vector<char> bits = determinism_bits();
  std::ofstream(path, std::ios::binary).write(bits.data(), std::streamsize(bits.size()));
}

TEST(AttentionBackwardDeterminism, AcrossThreadCounts) {
  if (std::getenv("HK_ATTN_BWD_BITS")) GTEST_SKIP() << "in the child";
  const std::vector<char> here = determinism_bits();
  char self[4096] = {};
  ASSERT_GT(readlink("/proc/self/exe", self, sizeof(self) - 1), 0);  // this program (the shell's /proc/self is the shell)
  for (int threads : {1, 2}) {
    const std::string path = testing::TempDir() + "attn_bwd_bits_" + std::to_string(getpid()) + "_" + std::to_string(threads);
    const std::string cmd = "HK_VGPU_THREADS=" + std::to_string(threads) + " HK_ATTN_BWD_BITS=" + path +
                            " '" + self + "' --gtest_filter=AttentionBackwardDeterminism.WriteBits > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> there((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(there.size(), here.size()) << threads << " threads";
    EXPECT_TRUE(there == here) << "gradients differ with HK_VGPU_THREADS=" << threads;
    std::remove(path.c_str());
  }
}

TEST(AttentionBackwardValidation, Errors) {
  const int b = 2, s = 64, h = 2, d = 64;
  const size_t bytes = size_t(b) * s * h * d * 2;
  auto alloc = [](size_t n) {
    void* p = nullptr;
    EXPECT_EQ(hipMalloc(&p, n), hipSuccess);
    return p;
  };
  void *q = alloc(bytes), *k = alloc(bytes), *v = alloc(bytes), *o = alloc(bytes), *dout = alloc(bytes),
       *dq = alloc(bytes), *dk = alloc(bytes), *dv = alloc(bytes), *ws = alloc(b * h * s * 4);
  float* lse = static_cast<float*>(alloc(b * h * s * 4));
  auto base = [&] {
    hk::AttentionBackwardProblem p;
    p.batch = b, p.seqlen_q = p.seqlen_k = s, p.heads_q = p.heads_kv = h, p.head_dim = d;
    p.q = q, p.k = k, p.v = v, p.o = o, p.dout = dout, p.lse = lse, p.dq = dq, p.dk = dk, p.dv = dv;
    p.workspace = ws, p.workspace_bytes = b * h * s * 4;
    return p;
  };
  auto expect_error = [&](hk::AttentionBackwardProblem p, const char* fragment) {
    hk::Status st = hk::attention_backward(p);
    EXPECT_FALSE(st) << fragment;
    EXPECT_NE(st.message.find(fragment), std::string::npos) << "message: " << st.message;
    EXPECT_EQ(st.message.rfind("hk::attention_backward: ", 0), 0u) << "message: " << st.message;
  };
  ASSERT_TRUE(hk::attention_backward(base()));
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  { auto p = base(); p.head_dim = 96; expect_error(p, "must both be 64, 128, 192 or 256, or 192 and 128"); }
  { auto p = base(); p.head_dim = 256, p.head_dim_v = 192; expect_error(p, "must both be 64, 128, 192 or 256"); }
  { auto p = base(); p.heads_q = 3; expect_error(p, "must be a multiple of heads_kv"); }
  { auto p = base(); p.type = hk::scalar_type::fp32; expect_error(p, "must be bf16 or f16"); }
  { auto p = base(); p.lse = nullptr; expect_error(p, "LSE (the forward's log-sum-exp) must be given"); }
  { auto p = base(); p.dout = nullptr; expect_error(p, "null pointer for dO"); }
  { auto p = base(); p.dk = nullptr; expect_error(p, "null pointer for dK"); }
  { auto p = base(); p.dq = static_cast<char*>(dq) + 8; expect_error(p, "dQ must be 16-byte aligned"); }
  { auto p = base(); p.dv_strides = {s * h * d, d, d}; expect_error(p, "dV strides make elements overlap"); }
  { auto p = base(); p.do_strides.batch = s * h * d + 8; expect_error(p, "dO does not lie inside"); }
  { auto p = base(); p.dq = q; expect_error(p, "dQ overlaps Q"); }
  { auto p = base(); p.dv = dk; expect_error(p, "dK overlaps dV"); }
  { auto p = base(); p.workspace = lse; expect_error(p, "the workspace overlaps LSE"); }
  { auto p = base(); p.workspace_bytes = 16; expect_error(p, "the workspace holds 16 bytes"); }
  { auto p = base(); p.causal = true, p.window_right = 3; expect_error(p, "window_right must be -1 or 0"); }
  { auto p = base(); p.dsinks = static_cast<float*>(ws); expect_error(p, "it needs sinks"); }
  { auto p = base(); p.sinks = lse, p.dsinks = lse + 1; expect_error(p, "dsinks overlaps"); }
  for (void* x : {q, k, v, o, dout, dq, dk, dv, ws, static_cast<void*>(lse)}) (void)hipFree(x);
}

}  // namespace
