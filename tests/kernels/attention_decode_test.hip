// hk::attention_decode on each virtual device against the float64 reference (attention_ref.h): contiguous and paged
// caches (pages of 1, 16, 64, 128 and 256 keys, shuffled), seqlens 0, 1, page - 1, page, page + 1 and 65536, GQA
// ratios 1, 4, 8 and 16, Sq 1 to 16, D 64 and 128, bf16 and f16, causal and windows; fp8 caches (the arch's e4m3:
// FNUZ on gfx942, OCP e4m3fn on gfx950, codes from tests/host) with per-tensor and per-KV-head descales, the reference
// fed the decoded codes times the descales; a paged cache gives the same bits as a contiguous one, and a second run
// the same bits as the first; and the validation errors. Unused cache rows and
// pages hold NaN, so a read outside a sequence's keys poisons the result; O's tail keeps its canary bits.
#include <hip/hip_runtime.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "attention/decode.h"
#include "kernels/attention_ref.h"
#include "kernels/attention_test_util.h"
#include "host/scalar_type.h"

namespace {

using attn_test::DeviceArray;
using attn_test::dtype;

struct DecodeCase {
  std::vector<int> seqlens;
  int sq = 1, hq = 8, hkv = 1, d = 128;
  int page = 0;      // 0: contiguous
  int capacity = 0;  // keys per sequence the cache holds (0: the longest seqlen, at least 1)
  dtype type = dtype::bf16;
  bool causal = false;
  int left = -1, right = -1;
  float scale = 0.f;
  int descale = -1;  // fp8 caches: 0 no descales, 1 per tensor, 2 per KV head (-1: the cache has Q's type)
};

std::string describe(const DecodeCase& c) {
  std::string s = "seqlens";
  for (int n : c.seqlens) s += " " + std::to_string(n);
  return s + " Sq " + std::to_string(c.sq) + " Hq " + std::to_string(c.hq) + " Hkv " + std::to_string(c.hkv) + " D " +
         std::to_string(c.d) + " page " + std::to_string(c.page) + " " + hk::to_string(c.type) + (c.causal ? " causal" : "") +
         " window " + std::to_string(c.left) + "," + std::to_string(c.right) +
         (c.descale < 0 ? "" : " fp8 descale " + std::to_string(c.descale));
}

// One case's tensors: host values packed for the reference, device caches laid out (and paged) as the case says.
struct DecodeRun {
  DecodeCase c;
  int rows = 0, pages = 0, per_seq = 0;
  std::vector<float> q, k, v;  // packed: Q (B, Sq, Hq, D), K and V by sequence (sum seqlens, Hkv, D)
  std::vector<uint8_t> k8, v8;  // fp8: the codes (k, v: their values times the descales)
  std::vector<float> kd, vd;    // fp8: the descales (1 or Hkv entries; empty: none)
  hk_host::Format f8 = hk_host::device_format(hk::scalar_type::fp8_e4m3);
  std::vector<int> table;
  std::vector<uint16_t> o_bits;
  std::vector<float> lse;

  explicit DecodeRun(const DecodeCase& c_) : c(c_) {
    const int longest = *std::max_element(c.seqlens.begin(), c.seqlens.end());
    const int cap = std::max(1, c.capacity ? c.capacity : longest);
    const int b = int(c.seqlens.size());
    if (c.page) {
      rows = c.page, per_seq = (cap + c.page - 1) / c.page, pages = b * per_seq + 3;  // 3 pages no one uses
      std::vector<int> perm(static_cast<size_t>(pages));
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), std::mt19937(11));
      table.assign(perm.begin(), perm.begin() + long(b) * per_seq);
    } else {
      rows = cap, pages = b;
    }
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    auto fill = [&](std::vector<float>& t, size_t n) {
      t.resize(n);
      for (float& x : t) x = c.type == dtype::f16 ? hk_host::round_f16(u(rng)) : hk_host::round_bf16(u(rng));
    };
    long total = 0;
    for (int n : c.seqlens) total += n;
    fill(q, size_t(b) * c.sq * c.hq * c.d), fill(k, size_t(total) * c.hkv * c.d), fill(v, size_t(total) * c.hkv * c.d);
    if (c.descale < 0) return;
    // Codes of values up to 200 (within both formats), descales of 3 significant bits (the products exact in fp32).
    if (c.descale) {
      const int n = c.descale == 2 ? c.hkv : 1;
      for (int h = 0; h < n; ++h) kd.push_back((1.f + float(h % 4) / 4.f) / 256.f), vd.push_back((1.f + float(h % 3) / 4.f) / 128.f);
    }
    k8.resize(k.size()), v8.resize(v.size());
    for (size_t i = 0; i < k.size(); ++i) {
      const int h = c.descale == 2 ? int(i / c.d % c.hkv) : 0;
      // Without descales the codes are the values themselves (up to 1).
      f8.store(kd.empty() ? u(rng) : 200.f * u(rng), &k8[i]), f8.store(vd.empty() ? u(rng) : 200.f * u(rng), &v8[i]);
      k[i] = f8.load(&k8[i]) * (kd.empty() ? 1.f : kd[h]), v[i] = f8.load(&v8[i]) * (vd.empty() ? 1.f : vd[h]);
    }
  }

  // Runs hk::attention_decode (the caches' unused slots NaN); the error status, or success with o_bits and lse set.
  hk::Status run(void (*tweak)(hk::AttentionDecodeProblem&) = nullptr) {
    const int b = int(c.seqlens.size());
    const size_t cache_elems = size_t(pages) * rows * c.hkv * c.d;
    std::vector<uint16_t> kc(c.descale < 0 ? cache_elems : 0, attn_test::canary(c.type)), vc(kc);
    uint8_t nan8 = 0;
    f8.store(std::numeric_limits<float>::quiet_NaN(), &nan8);
    std::vector<uint8_t> kc8(c.descale < 0 ? 0 : cache_elems, nan8), vc8(kc8);
    long start = 0;
    for (int s = 0; s < b; ++s) {
      for (long j = 0; j < c.seqlens[s]; ++j) {
        const long page = c.page ? table[size_t(s) * per_seq + j / rows] : s, row = c.page ? j % rows : j;
        if (page < 0 || page >= pages) continue;  // a bad table (the validation cases): nothing to place
        for (int h = 0; h < c.hkv; ++h)
          for (int x = 0; x < c.d; ++x) {
            const size_t at = ((size_t(page) * rows + row) * c.hkv + h) * c.d + x;
            const size_t from = ((size_t(start) + j) * c.hkv + h) * c.d + x;
            if (c.descale >= 0) kc8[at] = k8[from], vc8[at] = v8[from];
            else kc[at] = attn_test::to_bits(k[from], c.type), vc[at] = attn_test::to_bits(v[from], c.type);
          }
      }
      start += c.seqlens[s];
    }
    std::vector<uint16_t> qb(q.size());
    for (size_t i = 0; i < q.size(); ++i) qb[i] = attn_test::to_bits(q[i], c.type);
    const std::vector<uint16_t> o_init(q.size() + 64, attn_test::canary(c.type));
    const std::vector<float> lse_init(size_t(b) * c.hq * c.sq + 16, std::numeric_limits<float>::quiet_NaN());
    DeviceArray<uint16_t> dq(qb), dk(kc), dv(vc), dout(o_init);
    DeviceArray<uint8_t> dk8(kc8), dv8(vc8);
    DeviceArray<float> dkd(kd), dvd(vd);
    DeviceArray<int> dtable(table), dseq(c.seqlens);
    DeviceArray<float> dlse(lse_init);
    hk::AttentionDecodeProblem p;
    p.batch = b, p.seqlen_q = c.sq, p.heads_q = c.hq, p.heads_kv = c.hkv, p.head_dim = c.d;
    p.q = dq.dev, p.k_cache = dk.dev, p.v_cache = dv.dev, p.o = dout.dev, p.lse = dlse.dev;
    p.cache_rows = rows, p.cache_seqlens = dseq.dev;
    if (c.page) p.block_table = dtable.dev, p.max_blocks = per_seq, p.num_blocks = pages;
    p.type = p.kv_type = c.type, p.causal = c.causal, p.window_left = c.left, p.window_right = c.right;
    if (c.descale >= 0) {
      p.kv_type = hk::scalar_type::fp8_e4m3, p.k_cache = dk8.dev, p.v_cache = dv8.dev;
      if (!kd.empty()) p.k_descale = dkd.dev, p.v_descale = dvd.dev, p.k_descale_per_head = p.v_descale_per_head = c.descale == 2;
    }
    p.softmax_scale = c.scale;
    if (tweak) tweak(p);
    hk::Status s = hk::attention_decode(p);
    if (!s) return s;
    EXPECT_EQ(hipDeviceSynchronize(), hipSuccess);
    o_bits = dout.download(o_init.size()), lse = dlse.download(lse_init.size());
    return s;
  }

  // O and LSE against the float64 reference, and the canaries past them.
  void check() const {
    attn_ref::Shape shape;
    shape.len_q.assign(c.seqlens.size(), c.sq), shape.len_k = c.seqlens;
    shape.hq = c.hq, shape.hkv = c.hkv, shape.d = c.d, shape.causal = c.causal, shape.left = c.left, shape.right = c.right;
    shape.scale = c.scale;
    const attn_ref::Result want = attn_ref::forward(shape, q, k, v, c.type == dtype::bf16);
    int bad = 0;
    for (size_t i = 0; i < q.size() && bad < 8; ++i) {
      const double got = attn_test::from_bits(o_bits[i], c.type), err = std::fabs(got - want.o[i]);
      if (!(err <= want.o_tol[i])) ++bad, ADD_FAILURE() << "O[" << i << "] = " << got << ", want " << want.o[i];
    }
    for (size_t i = q.size(); i < o_bits.size(); ++i) EXPECT_EQ(o_bits[i], attn_test::canary(c.type)) << "O's tail";
    const int b = int(c.seqlens.size());
    for (int s = 0; s < b; ++s)
      for (int i = 0; i < c.sq; ++i)
        for (int h = 0; h < c.hq; ++h) {
          const double got = lse[(size_t(s) * c.hq + h) * c.sq + i], w = want.lse[(size_t(s) * c.sq + i) * c.hq + h];
          const double tol = want.lse_tol[(size_t(s) * c.sq + i) * c.hq + h];
          if (std::isinf(w)) EXPECT_EQ(got, w) << "LSE of sequence " << s << " row " << i << " head " << h;
          else EXPECT_NEAR(got, w, tol) << "LSE of sequence " << s << " row " << i << " head " << h;
        }
    for (size_t i = size_t(b) * c.hq * c.sq; i < lse.size(); ++i) EXPECT_TRUE(std::isnan(lse[i])) << "LSE's tail";
  }
};

void check_case(const DecodeCase& c) {
  SCOPED_TRACE(describe(c));
  DecodeRun r(c);
  hk::Status s = r.run();
  ASSERT_TRUE(s) << s.message;
  r.check();
}

TEST(AttentionDecode, PageEdgesAndGqaRatios) {
  // seqlens 0, 1, page - 1, page, page + 1 and longer, at each GQA ratio.
  for (int ratio : {1, 4, 8, 16})
    check_case({.seqlens = {0, 1, 15, 16, 17, 200}, .hq = 2 * ratio, .hkv = 2, .page = 16});
}

TEST(AttentionDecode, PageSizes) {
  for (int page : {1, 64, 128, 256}) check_case({.seqlens = {page - 1 > 0 ? page - 1 : 2, page + 1, 300}, .hq = 8, .hkv = 2, .page = page});
}

TEST(AttentionDecode, ContiguousShapes) {
  check_case({.seqlens = {5, 0, 333}, .hq = 4, .hkv = 4, .d = 64});
  check_case({.seqlens = {700, 31}, .sq = 16, .hq = 8, .hkv = 1, .d = 128, .capacity = 800, .type = dtype::f16});
  check_case({.seqlens = {100, 1}, .sq = 3, .hq = 12, .hkv = 2, .d = 64, .scale = 0.3f});
}

TEST(AttentionDecode, CausalAndWindows) {
  check_case({.seqlens = {40, 2, 130}, .sq = 4, .hq = 8, .hkv = 2, .page = 16, .causal = true});
  check_case({.seqlens = {40, 3, 130}, .sq = 5, .hq = 4, .hkv = 1, .d = 64, .causal = true, .left = 20, .right = 0});
  check_case({.seqlens = {300, 7}, .sq = 2, .hq = 8, .hkv = 8, .page = 64, .left = 50, .right = -1});
}

TEST(AttentionDecode, Fp8Cache) {
  // The tolerance is the reference's for Q's type: the codes reach the MFMAs exactly, the descales in fp32.
  for (int descale : {0, 1, 2}) {
    check_case({.seqlens = {0, 1, 15, 16, 17, 200}, .hq = 8, .hkv = 2, .page = 16, .descale = descale});
    check_case({.seqlens = {100, 3}, .sq = 3, .hq = 12, .hkv = 4, .d = 64, .type = dtype::f16, .causal = true, .descale = descale});
  }
  check_case({.seqlens = {9000}, .hq = 16, .hkv = 4, .d = 128, .page = 64, .descale = 2});  // split
  check_case({.seqlens = {700, 31}, .sq = 16, .hq = 8, .hkv = 1, .d = 128, .capacity = 800, .left = 100, .right = 5, .descale = 1});
}

TEST(AttentionDecode, Fp8PagedEqualsContiguous) {
  for (int page : {1, 64}) {
    DecodeCase c{.seqlens = {0, 1, 63, 64, 65, 2500}, .sq = 2, .hq = 16, .hkv = 2, .d = 128, .capacity = 2600,
                 .causal = true, .descale = 2};
    SCOPED_TRACE(describe(c) + " vs page " + std::to_string(page));
    DecodeRun flat(c);
    ASSERT_TRUE(flat.run());
    flat.check();
    c.page = page;
    DecodeRun paged(c);
    ASSERT_TRUE(paged.run());
    EXPECT_EQ(flat.o_bits, paged.o_bits);
    EXPECT_EQ(0, std::memcmp(flat.lse.data(), paged.lse.data(), flat.lse.size() * 4));
  }
}

TEST(AttentionDecode, LongContextSplits) {
  check_case({.seqlens = {65536}, .hq = 8, .hkv = 1, .d = 128, .page = 256});
}

TEST(AttentionDecode, PagedEqualsContiguousAndRepeats) {
  for (int page : {1, 16, 64}) {
    DecodeCase c{.seqlens = {0, 1, 63, 64, 65, 2500}, .sq = 2, .hq = 16, .hkv = 2, .d = 128, .capacity = 2600, .causal = true};
    SCOPED_TRACE(describe(c) + " vs page " + std::to_string(page));
    DecodeRun flat(c);
    ASSERT_TRUE(flat.run());
    flat.check();
    c.page = page;
    DecodeRun paged(c);
    ASSERT_TRUE(paged.run());
    EXPECT_EQ(flat.o_bits, paged.o_bits);
    EXPECT_EQ(0, std::memcmp(flat.lse.data(), paged.lse.data(), flat.lse.size() * 4));
    const std::vector<uint16_t> first = paged.o_bits;
    ASSERT_TRUE(paged.run());
    EXPECT_EQ(first, paged.o_bits) << "a second run";
  }
}

void expect_refused(DecodeRun& r, void (*tweak)(hk::AttentionDecodeProblem&), const std::string& phrase) {
  hk::Status s = r.run(tweak);
  ASSERT_FALSE(s) << "accepted: " << phrase;
  EXPECT_EQ(s.code, hipErrorInvalidValue);
  EXPECT_NE(s.message.find("hk::attention_decode: "), std::string::npos) << s.message;
  EXPECT_NE(s.message.find(phrase), std::string::npos) << s.message;
}

TEST(AttentionDecode, Validation) {
  DecodeRun paged({.seqlens = {20, 40}, .hq = 8, .hkv = 2, .page = 16});
  ASSERT_TRUE(paged.run());
  // A block table entry past the cache's pages, then a negative one.
  DecodeRun bad_page = paged;
  bad_page.table[1] = bad_page.pages;
  expect_refused(bad_page, nullptr, "is not a page of the cache");
  bad_page.table[1] = -1;
  expect_refused(bad_page, nullptr, "block_table[0][1] = -1");
  // seqlens past the capacity (max_blocks * page_size).
  expect_refused(paged, [](hk::AttentionDecodeProblem& p) { p.max_blocks = 2; }, "outside the cache's capacity");
  DecodeRun flat({.seqlens = {20, 40}, .hq = 8, .hkv = 2});
  expect_refused(flat, [](hk::AttentionDecodeProblem& p) { p.cache_rows = 30; }, "cache_seqlens[1] = 40 is outside");
  // Types.
  expect_refused(flat, [](hk::AttentionDecodeProblem& p) { p.type = p.kv_type = hk::scalar_type::fp32; }, "must be bf16 or f16");
  expect_refused(flat, [](hk::AttentionDecodeProblem& p) { p.kv_type = hk::scalar_type::f16; }, "the caches must have Q's type");
  // Shapes and pointers.
  expect_refused(flat, [](hk::AttentionDecodeProblem& p) { p.seqlen_q = 17; }, "seqlen_q must be 1 to 16");
  expect_refused(flat, [](hk::AttentionDecodeProblem& p) { p.head_dim = 96; }, "head_dim must be 64 or 128");
  expect_refused(flat, [](hk::AttentionDecodeProblem& p) { p.heads_q = 7; }, "must be a positive multiple of heads_kv");
  expect_refused(flat, [](hk::AttentionDecodeProblem& p) { p.cache_seqlens = nullptr; }, "null pointer for cache_seqlens");
  expect_refused(flat, [](hk::AttentionDecodeProblem& p) { p.o = const_cast<void*>(p.q); }, "O overlaps Q");
  expect_refused(flat, [](hk::AttentionDecodeProblem& p) { p.causal = true, p.window_right = 3; }, "window_right must be -1 or 0");
  expect_refused(paged, [](hk::AttentionDecodeProblem& p) { p.num_blocks = 0; }, "num_blocks positive");
  // Descales: only with fp8 caches, positive and finite, inside their allocation.
  expect_refused(flat, [](hk::AttentionDecodeProblem& p) { p.k_descale = static_cast<const float*>(p.q); },
                 "apply to fp8 caches only");
  DecodeRun f8({.seqlens = {20, 40}, .hq = 8, .hkv = 2, .page = 16, .descale = 1});
  ASSERT_TRUE(f8.run());
  f8.check();
  DecodeRun bad = f8;
  bad.vd[0] = -0.5f;
  expect_refused(bad, nullptr, "v_descale[0] = -0.500000 is not a positive finite descale");
  bad.vd[0] = std::numeric_limits<float>::infinity();
  expect_refused(bad, nullptr, "is not a positive finite descale");
  bad = f8;
  bad.kd[0] = std::numeric_limits<float>::quiet_NaN();
  expect_refused(bad, nullptr, "k_descale[0] = nan");
  // Per head with a one-entry array: past its allocation.
  expect_refused(f8, [](hk::AttentionDecodeProblem& p) { p.k_descale_per_head = true; },
                 "k_descale does not hold 2 aligned fp32 entries inside one device allocation");
  expect_refused(f8, [](hk::AttentionDecodeProblem& p) { p.v_descale = reinterpret_cast<float*>(p.o); }, "overlaps v_descale");
}

}  // namespace
