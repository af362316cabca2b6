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
#include <cstring>
#include <initializer_list>
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
  int descale = -1;  // fp8 caches: 0 no descales, 1 per tensor, 2 per KV head, 3 per (sequence, KV head) (-1: Q's type)
  int append = 0;    // keys appended at each sequence's end (k_new / v_new); seqlens are the lengths before
  int rotary = 0;    // rotary_dim of Q and the new keys (0: none)
  bool interleaved = false, table_fp32 = true;
};

std::string describe(const DecodeCase& c) {
  std::string s = "seqlens";
  for (int n : c.seqlens) s += " " + std::to_string(n);
  return s + " Sq " + std::to_string(c.sq) + " Hq " + std::to_string(c.hq) + " Hkv " + std::to_string(c.hkv) + " D " +
         std::to_string(c.d) + " page " + std::to_string(c.page) + " " + hk::to_string(c.type) + (c.causal ? " causal" : "") +
         " window " + std::to_string(c.left) + "," + std::to_string(c.right) +
         (c.descale < 0 ? "" : " fp8 descale " + std::to_string(c.descale)) +
         (c.append ? " append " + std::to_string(c.append) : "") +
         (c.rotary ? " rotary " + std::to_string(c.rotary) + (c.interleaved ? " interleaved" : "") + (c.table_fp32 ? "" : " tables of Q's type") : "");
}

// One case's tensors: host values packed for the reference, device caches laid out (and paged) as the case says.
struct DecodeRun {
  DecodeCase c;
  int rows = 0, pages = 0, per_seq = 0;
  std::vector<float> q, k, v;  // packed: Q (B, Sq, Hq, D), K and V by sequence (sum seqlens + append, Hkv, D), rotated
  std::vector<float> q_in, kn, vn;  // appending: Q as given (before rotary), k_new / v_new (B, append, Hkv, D) as given
  std::vector<uint8_t> kn8, vn8;    // fp8: k_new / v_new codes
  std::vector<double> k_tol, q_tol;  // per element of k, q: how far the device's rotation may be from k, q
  std::vector<float> cos_t, sin_t;  // rotary tables (rows x rotary / 2)
  int table_rows = 0;
  std::vector<uint16_t> kc_init, vc_init, kc_out, vc_out;  // the caches before and after the call
  std::vector<uint8_t> kc8_init, vc8_init, kc8_out, vc8_out;
  std::vector<uint8_t> k8, v8;  // fp8: the codes (k, v: their values times the descales)
  std::vector<float> kd, vd;    // fp8: the descales (1 or Hkv entries; empty: none)
  hk_host::Format f8 = hk_host::device_format(hk::scalar_type::fp8_e4m3);
  std::vector<int> table;
  std::vector<uint16_t> o_bits;
  std::vector<float> lse;

  explicit DecodeRun(const DecodeCase& c_) : c(c_) {
    const int longest = *std::max_element(c.seqlens.begin(), c.seqlens.end()) + c.append;
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
    for (int n : c.seqlens) total += n + c.append;
    fill(q, size_t(b) * c.sq * c.hq * c.d), fill(k, size_t(total) * c.hkv * c.d), fill(v, size_t(total) * c.hkv * c.d);
    k_tol.assign(k.size(), 0.0), q_tol.assign(q.size(), 0.0);
    if (c.descale >= 0) fp8_codes(rng, u);
    if (c.append) split_new();
  }

  // Row r of the packed K / V: its sequence.
  int sequence_of(long r) const {
    int s = 0;
    for (long end = c.seqlens[0] + c.append; r >= end; end += c.seqlens[++s] + c.append) {}
    return s;
  }
  long start_of(int s) const {
    long start = 0;
    for (int i = 0; i < s; ++i) start += c.seqlens[i] + c.append;
    return start;
  }

  // The new keys and values (the last `append` rows of each sequence) as k_new / v_new; with rotary, the tables, and
  // Q and the new keys of the reference rotated (float64, rounded once to Q's type) at flash-attention's positions.
  void split_new() {
    const int b = int(c.seqlens.size()), row = c.hkv * c.d;
    for (int s = 0; s < b; ++s) {
      const size_t from = size_t(start_of(s) + c.seqlens[s]) * row, n = size_t(c.append) * row;
      kn.insert(kn.end(), k.begin() + long(from), k.begin() + long(from + n));
      vn.insert(vn.end(), v.begin() + long(from), v.begin() + long(from + n));
      if (c.descale >= 0) {
        kn8.insert(kn8.end(), k8.begin() + long(from), k8.begin() + long(from + n));
        vn8.insert(vn8.end(), v8.begin() + long(from), v8.begin() + long(from + n));
      }
    }
    q_in = q;
    if (!c.rotary) return;
    const int half = c.rotary / 2;
    const bool q_each_row = c.causal || c.left >= 0 || c.right >= 0;
    table_rows = *std::max_element(c.seqlens.begin(), c.seqlens.end()) + std::max(c.append, q_each_row ? c.sq : 1);
    cos_t.resize(size_t(table_rows) * half), sin_t.resize(cos_t.size());
    for (int r = 0; r < table_rows; ++r)
      for (int i = 0; i < half; ++i) {
        const double theta = r * std::pow(10000.0, -2.0 * i / c.rotary);
        float cv = float(std::cos(theta)), sv = float(std::sin(theta));
        if (!c.table_fp32) cv = c.type == dtype::f16 ? hk_host::round_f16(cv) : hk_host::round_bf16(cv),
                           sv = c.type == dtype::f16 ? hk_host::round_f16(sv) : hk_host::round_bf16(sv);
        cos_t[size_t(r) * half + i] = cv, sin_t[size_t(r) * half + i] = sv;
      }
    // Rotates the D values at x by the angles of `pos`: the rounded values, and their tolerances into tol (if any).
    auto rotate = [&](float* x, long pos, double* tol) {
      for (int i = 0; i < half; ++i) {
        const int e0 = c.interleaved ? 2 * i : i, e1 = c.interleaved ? 2 * i + 1 : i + half;
        const double cv = cos_t[size_t(pos) * half + i], sv = sin_t[size_t(pos) * half + i];
        const double x0 = x[e0], x1 = x[e1], y0 = x0 * cv - x1 * sv, y1 = x0 * sv + x1 * cv;
        const double u = hk_host::unit_roundoff(hk_host::type_of(c.type)), arith = (std::fabs(x0) + std::fabs(x1)) * 0x1p-20;
        // Both the device's and this rounding are within u |y| + arith of y.
        if (tol) tol[e0] = 2.02 * u * std::fabs(y0) + arith, tol[e1] = 2.02 * u * std::fabs(y1) + arith;
        x[e0] = c.type == dtype::f16 ? hk_host::round_f16(float(y0)) : hk_host::round_bf16(float(y0));
        x[e1] = c.type == dtype::f16 ? hk_host::round_f16(float(y1)) : hk_host::round_bf16(float(y1));
      }
    };
    for (int s = 0; s < b; ++s) {
      for (int i = 0; i < c.sq; ++i)
        for (int h = 0; h < c.hq; ++h)
          rotate(&q[((size_t(s) * c.sq + i) * c.hq + h) * c.d], c.seqlens[s] + (q_each_row ? i : 0),
                 &q_tol[((size_t(s) * c.sq + i) * c.hq + h) * c.d]);
      for (int i = 0; i < c.append; ++i)
        for (int h = 0; h < c.hkv; ++h) {
          const size_t at = (size_t(start_of(s) + c.seqlens[s] + i) * c.hkv + h) * c.d;
          rotate(&k[at], c.seqlens[s] + i, &k_tol[at]);
        }
    }
  }

  void fp8_codes(std::mt19937& rng, std::uniform_real_distribution<float>& u) {
    // Codes of values up to 200 (within both formats), descales of 3 significant bits (the products exact in fp32).
    const int b = int(c.seqlens.size());
    if (c.descale) {
      const int n = c.descale == 1 ? 1 : c.descale == 2 ? c.hkv : b * c.hkv;
      for (int h = 0; h < n; ++h) kd.push_back((1.f + float(h % 4) / 4.f) / 256.f), vd.push_back((1.f + float(h % 3) / 4.f) / 128.f);
    }
    k8.resize(k.size()), v8.resize(v.size());
    for (size_t i = 0; i < k.size(); ++i) {
      const int hh = int(i / c.d % c.hkv);
      const int h = c.descale == 2 ? hh : c.descale == 3 ? sequence_of(long(i / c.d / c.hkv)) * c.hkv + hh : 0;
      // Without descales the codes are the values themselves (up to 1).
      f8.store(kd.empty() ? u(rng) : 200.f * u(rng), &k8[i]), f8.store(vd.empty() ? u(rng) : 200.f * u(rng), &v8[i]);
      k[i] = f8.load(&k8[i]) * (kd.empty() ? 1.f : kd[h]), v[i] = f8.load(&v8[i]) * (vd.empty() ? 1.f : vd[h]);
    }
  }

  // Calls f(at, from, h, x) for each element (head h, column x) of key j of sequence s: `at` its index in the cache
  // (through the page table), `from` its index in the keys k / v. A page outside the cache (the validation cases'
  // bad tables) has nothing to visit.
  template <class F> void for_each_element(int s, long j, F&& f) const {
    const long page = c.page ? table[size_t(s) * per_seq + j / rows] : s, row = c.page ? j % rows : j;
    if (page < 0 || page >= pages) return;
    for (int h = 0; h < c.hkv; ++h)
      for (int x = 0; x < c.d; ++x)
        f(((size_t(page) * rows + row) * c.hkv + h) * c.d + x, ((size_t(start_of(s)) + j) * c.hkv + h) * c.d + x, h, x);
  }

  // Runs hk::attention_decode (the caches' unused slots NaN); the error status, or success with o_bits and lse set.
  hk::Status run(void (*tweak)(hk::AttentionDecodeProblem&) = nullptr) {
    const int b = int(c.seqlens.size());
    const size_t cache_elems = size_t(pages) * rows * c.hkv * c.d;
    std::vector<uint16_t> kc(c.descale < 0 ? cache_elems : 0, attn_test::canary(c.type)), vc(kc);
    uint8_t nan8 = 0;
    f8.store(std::numeric_limits<float>::quiet_NaN(), &nan8);
    std::vector<uint8_t> kc8(c.descale < 0 ? 0 : cache_elems, nan8), vc8(kc8);
    for (int s = 0; s < b; ++s) {
      for (long j = 0; j < c.seqlens[s]; ++j)
        for_each_element(s, j, [&](size_t at, size_t from, int, int) {
          if (c.descale >= 0) kc8[at] = k8[from], vc8[at] = v8[from];
          else kc[at] = attn_test::to_bits(k[from], c.type), vc[at] = attn_test::to_bits(v[from], c.type);
        });
    }
    kc_init = kc, vc_init = vc, kc8_init = kc8, vc8_init = vc8;
    auto bits = [&](const std::vector<float>& x) {
      std::vector<uint16_t> out(x.size());
      for (size_t i = 0; i < x.size(); ++i) out[i] = attn_test::to_bits(x[i], c.type);
      return out;
    };
    const std::vector<uint16_t> qb = bits(c.append ? q_in : q);
    const std::vector<uint16_t> o_init(q.size() + 64, attn_test::canary(c.type));
    const std::vector<float> lse_init(size_t(b) * c.hq * c.sq + 16, std::numeric_limits<float>::quiet_NaN());
    DeviceArray<uint16_t> dq(qb), dk(kc), dv(vc), dout(o_init), dkn(bits(kn)), dvn(bits(vn));
    DeviceArray<uint8_t> dk8(kc8), dv8(vc8), dkn8(kn8), dvn8(vn8);
    DeviceArray<float> dkd(kd), dvd(vd), dcos(c.table_fp32 ? cos_t : std::vector<float>{}), dsin(c.table_fp32 ? sin_t : std::vector<float>{});
    DeviceArray<uint16_t> dcos16(c.table_fp32 ? std::vector<uint16_t>{} : bits(cos_t)), dsin16(c.table_fp32 ? std::vector<uint16_t>{} : bits(sin_t));
    DeviceArray<int> dtable(table), dseq(c.seqlens);
    DeviceArray<float> dlse(lse_init);
    hk::AttentionDecodeProblem p;
    p.batch = b, p.seqlen_q = c.sq, p.heads_q = c.hq, p.heads_kv = c.hkv, p.head_dim = c.d;
    p.q = dq.dev, p.k_cache = dk.dev, p.v_cache = dv.dev, p.o = dout.dev, p.lse = dlse.dev;
    p.cache_rows = rows, p.cache_seqlens = dseq.dev;
    if (c.page) p.block_table = dtable.dev, p.max_blocks = per_seq, p.num_blocks = pages;
    p.type = p.kv_type = c.type, p.causal = c.causal, p.window_left = c.left, p.window_right = c.right;
    if (c.append) p.k_new = dkn.dev, p.v_new = dvn.dev, p.seqlen_new = c.append;
    if (c.descale >= 0) {
      p.kv_type = hk::scalar_type::fp8_e4m3, p.k_cache = dk8.dev, p.v_cache = dv8.dev;
      if (c.append) p.k_new = dkn8.dev, p.v_new = dvn8.dev;
      if (!kd.empty())
        p.k_descale = dkd.dev, p.v_descale = dvd.dev, p.k_descale_per_head = p.v_descale_per_head = c.descale >= 2,
        p.k_descale_per_batch = p.v_descale_per_batch = c.descale == 3;
    }
    if (c.rotary) {
      p.rotary_cos = c.table_fp32 ? static_cast<const void*>(dcos.dev) : dcos16.dev;
      p.rotary_sin = c.table_fp32 ? static_cast<const void*>(dsin.dev) : dsin16.dev;
      p.rotary_type = c.table_fp32 ? hk::scalar_type::fp32 : c.type;
      p.rotary_dim = c.rotary, p.rotary_rows = table_rows, p.rotary_interleaved = c.interleaved;
    }
    p.softmax_scale = c.scale;
    if (tweak) tweak(p);
    // With rotary, a workspace of our own: the rotated Q is read back from its start (decode.h).
    DeviceArray<uint8_t> dws(std::vector<uint8_t>(c.rotary ? std::max<size_t>(1, hk::attention_decode_workspace_bytes(p)) : 0));
    if (c.rotary) p.workspace = dws.dev, p.workspace_bytes = hk::attention_decode_workspace_bytes(p);
    hk::Status s = hk::attention_decode(p);
    if (!s) return s;
    EXPECT_EQ(hipDeviceSynchronize(), hipSuccess);
    o_bits = dout.download(o_init.size()), lse = dlse.download(lse_init.size());
    if (!kc.empty()) kc_out = dk.download(kc.size()), vc_out = dv.download(vc.size());
    if (!kc8.empty()) kc8_out = dk8.download(kc8.size()), vc8_out = dv8.download(vc8.size());
    if (c.rotary && !tweak) adopt_rotated(dws.download(q.size() * 2));
    return s;
  }

  // O and LSE against the float64 reference, and the canaries past them.
  void check() const {
    attn_ref::Shape shape;
    shape.len_q.assign(c.seqlens.size(), c.sq), shape.len_k = c.seqlens;
    for (int& n : shape.len_k) n += c.append;
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

  // The device's rotations of Q (from the workspace) and of the new keys (from the caches), checked against the
  // float64 rotation (one rounding each side), then given to the reference in place of the host's roundings, so that
  // a rounding that went the other way does not move the attention's result by more than its tolerance.
  void adopt_rotated(const std::vector<uint8_t>& ws) {
    int bad = 0;
    for (size_t i = 0; i < q.size(); ++i) {
      uint16_t bits;
      std::memcpy(&bits, &ws[2 * i], 2);
      const double got = attn_test::from_bits(bits, c.type);
      if (!(std::fabs(got - q[i]) <= q_tol[i]) && bad++ < 5) ADD_FAILURE() << "rotated Q[" << i << "] = " << got << ", want " << q[i];
      q[i] = float(got);
    }
    for (int s = 0; s < int(c.seqlens.size()); ++s)
      for (int i = 0; i < c.append; ++i) {
        const long j = c.seqlens[s] + i;
        for_each_element(s, j, [&](size_t at, size_t from, int h, int x) {
          const double got = attn_test::from_bits(kc_out[at], c.type);
          if (!(std::fabs(got - k[from]) <= k_tol[from]) && bad++ < 5)
            ADD_FAILURE() << "rotated key " << j << " of sequence " << s << "[" << h << "][" << x << "] = " << got << ", want " << k[from];
          k[from] = float(got);
        });
      }
    EXPECT_EQ(bad, 0) << "rotations";
  }

  // The caches after the call: the appended rows hold k_new / v_new (V and unrotated K bit for bit, rotated K within
  // one rounding of the float64 rotation), every other row its old bits.
  void check_cache() const {
    const bool f8c = c.descale >= 0;
    std::vector<char> appended(f8c ? kc8_init.size() : kc_init.size(), 0);
    int bad = 0;
    for (int s = 0; s < int(c.seqlens.size()); ++s)
      for (int i = 0; i < c.append; ++i) {
        const long j = c.seqlens[s] + i;
        for_each_element(s, j, [&](size_t at, size_t from, int h, int x) {
          const size_t nw = ((size_t(s) * c.append + i) * c.hkv + h) * c.d + x;
          appended[at] = 1;
          // K: the new key, or its rotation (checked in adopt_rotated)
          const bool ok = f8c ? kc8_out[at] == kn8[nw] && vc8_out[at] == vn8[nw]
                              : vc_out[at] == attn_test::to_bits(vn[nw], c.type) && kc_out[at] == attn_test::to_bits(k[from], c.type);
          if (!ok && bad++ < 5) ADD_FAILURE() << "appended row " << j << " of sequence " << s << ", head " << h << ", element " << x;
        });
      }
    for (size_t at = 0; at < appended.size(); ++at)
      if (!appended[at] && (f8c ? kc8_out[at] != kc8_init[at] || vc8_out[at] != vc8_init[at]
                                : kc_out[at] != kc_init[at] || vc_out[at] != vc_init[at]) && bad++ < 5)
        ADD_FAILURE() << "cache element " << at << " was written";
    EXPECT_EQ(bad, 0);
  }
};

void check_case(const DecodeCase& c) {
  SCOPED_TRACE(describe(c));
  DecodeRun r(c);
  hk::Status s = r.run();
  ASSERT_TRUE(s) << s.message;
  r.check();
  r.check_cache();
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
  check_case({.seqlens = {0, 1, 15, 16, 17, 200}, .hq = 8, .hkv = 2, .page = 16, .descale = 0});
  check_case({.seqlens = {100, 3}, .sq = 3, .hq = 12, .hkv = 4, .d = 64, .type = dtype::f16, .causal = true, .descale = 1});
  check_case({.seqlens = {40, 7, 130}, .sq = 2, .hq = 8, .hkv = 2, .d = 64, .page = 16, .descale = 3});  // (B, Hkv)
  check_case({.seqlens = {3000}, .hq = 16, .hkv = 4, .d = 128, .page = 64, .descale = 2});  // split
  check_case({.seqlens = {300, 31}, .sq = 16, .hq = 8, .hkv = 1, .d = 128, .capacity = 400, .left = 100, .right = 5, .descale = 1});
}

// The case on a contiguous cache (checked against the reference) and on caches of each page size: the same bits of
// O and LSE; with `repeat`, a second paged run the same bits again.
void expect_paged_equals_contiguous(DecodeCase c, std::initializer_list<int> pages, bool repeat) {
  c.page = 0;
  DecodeRun flat(c);
  ASSERT_TRUE(flat.run());
  flat.check();
  for (int page : pages) {
    c.page = page;
    SCOPED_TRACE(describe(c) + " vs contiguous");
    DecodeRun paged(c);
    ASSERT_TRUE(paged.run());
    EXPECT_EQ(flat.o_bits, paged.o_bits);
    EXPECT_EQ(0, std::memcmp(flat.lse.data(), paged.lse.data(), flat.lse.size() * 4));
    if (!repeat) continue;
    const std::vector<uint16_t> first = paged.o_bits;
    ASSERT_TRUE(paged.run());
    EXPECT_EQ(first, paged.o_bits) << "a second run";
  }
}

TEST(AttentionDecode, Fp8PagedEqualsContiguous) {
  expect_paged_equals_contiguous({.seqlens = {0, 1, 63, 64, 65, 700}, .sq = 2, .hq = 16, .hkv = 2, .d = 128,
                                  .capacity = 800, .causal = true, .descale = 2}, {1, 64}, false);
}

TEST(AttentionDecode, LongContextSplits) {
  check_case({.seqlens = {65536}, .hq = 8, .hkv = 1, .d = 128, .page = 256});
}

TEST(AttentionDecode, PagedEqualsContiguousAndRepeats) {
  expect_paged_equals_contiguous({.seqlens = {0, 1, 63, 64, 65, 2500}, .sq = 2, .hq = 16, .hkv = 2, .d = 128,
                                  .capacity = 2600, .causal = true}, {1, 16, 64}, true);
}

TEST(AttentionDecode, Append) {
  // New keys and values into contiguous and paged caches, across page boundaries, without and with rotary (half-split
  // and interleaved, full and partial rotary_dim, fp32 tables and tables of Q's type), causal and not (Q's positions).
  check_case({.seqlens = {0, 5, 30}, .sq = 2, .hq = 8, .hkv = 2, .d = 64, .append = 3});
  check_case({.seqlens = {14, 0, 47}, .sq = 2, .hq = 8, .hkv = 2, .d = 128, .page = 16, .causal = true, .append = 4});
  check_case({.seqlens = {14, 1, 47}, .sq = 3, .hq = 8, .hkv = 2, .d = 128, .page = 16, .causal = true, .append = 3, .rotary = 128});
  check_case({.seqlens = {9, 40}, .sq = 1, .hq = 4, .hkv = 1, .d = 64, .append = 2, .rotary = 32, .interleaved = true});
  check_case({.seqlens = {63, 2}, .sq = 2, .hq = 8, .hkv = 4, .d = 128, .page = 64, .type = dtype::f16, .append = 2,
              .rotary = 40, .interleaved = true, .table_fp32 = false});
  check_case({.seqlens = {20, 33}, .sq = 4, .hq = 8, .hkv = 2, .d = 64, .capacity = 60, .left = 8, .right = 0, .append = 4,
              .rotary = 64, .table_fp32 = false});
  check_case({.seqlens = {15, 2}, .sq = 1, .hq = 8, .hkv = 2, .d = 128, .page = 16, .descale = 2, .append = 2});  // fp8 codes
}

TEST(AttentionDecode, AppendPagedEqualsContiguous) {
  expect_paged_equals_contiguous({.seqlens = {0, 1, 62, 64, 100}, .sq = 2, .hq = 8, .hkv = 2, .d = 128, .capacity = 130,
                                  .causal = true, .append = 2, .rotary = 64}, {1, 16}, false);
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
  expect_refused(f8, [](hk::AttentionDecodeProblem& p) { p.k_descale_per_batch = true; },
                 "k_descale does not hold 2 aligned fp32 entries");
}

TEST(AttentionDecode, AppendValidation) {
  DecodeRun paged({.seqlens = {20, 40}, .hq = 8, .hkv = 2, .page = 16, .append = 3, .rotary = 64});
  ASSERT_TRUE(paged.run());
  // Capacity after the append: 43 keys in 3 pages of 16 fit, not in 2.
  expect_refused(paged, [](hk::AttentionDecodeProblem& p) { p.max_blocks = 2; },
                 "cache_seqlens[1] = 40 plus the 3 appended keys is outside the cache's capacity [0, 32]");
  // A page shared by two sequences that one of them appends to.
  DecodeRun shared = paged;
  shared.table[4] = shared.table[1];  // sequence 1's second page (keys 16..31, read) is sequence 0's second (appended to)
  expect_refused(shared, nullptr, "would land on rows sequence 1 also uses");
  // Rotary tables shorter than the positions rotated (keys up to 42).
  expect_refused(paged, [](hk::AttentionDecodeProblem& p) { p.rotary_rows = 42; }, "the rotary tables have 42 rows, but position 42");
  expect_refused(paged, [](hk::AttentionDecodeProblem& p) { p.rotary_dim = 65; }, "rotary_dim must be even");
  expect_refused(paged, [](hk::AttentionDecodeProblem& p) { p.rotary_type = hk::scalar_type::f16; }, "must be fp32 or Q's type");
  expect_refused(paged, [](hk::AttentionDecodeProblem& p) { p.rotary_sin = nullptr; }, "rotary_sin is null");
  expect_refused(paged, [](hk::AttentionDecodeProblem& p) { p.k_new = p.v_new = nullptr, p.seqlen_new = 0; }, "it needs k_new and v_new");
  expect_refused(paged, [](hk::AttentionDecodeProblem& p) { p.v_new = nullptr; }, "v_new is null");
  expect_refused(paged, [](hk::AttentionDecodeProblem& p) { p.seqlen_new = 0; }, "seqlen_new (0) must be positive");
  // Overlaps: the new keys inside the cache they are written to, the tables inside the cache.
  expect_refused(paged, [](hk::AttentionDecodeProblem& p) { p.k_new = p.k_cache; }, "k_cache overlaps k_new");
  expect_refused(paged, [](hk::AttentionDecodeProblem& p) { p.rotary_cos = p.v_cache; }, "v_cache overlaps rotary_cos");
  expect_refused(paged, [](hk::AttentionDecodeProblem& p) { p.v_cache = p.k_cache; }, "k_cache overlaps v_cache");
  // Types: rotary needs a cache of Q's type.
  DecodeRun f8({.seqlens = {20, 40}, .hq = 8, .hkv = 2, .page = 16, .descale = 1, .append = 2});
  ASSERT_TRUE(f8.run());
  expect_refused(f8, [](hk::AttentionDecodeProblem& p) { p.rotary_cos = p.rotary_sin = p.k_descale, p.rotary_dim = 2, p.rotary_rows = 1; },
                 "rotary needs a cache of Q's type");
}

}  // namespace
