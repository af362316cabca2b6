// What the attention tests share: a case (shape, masks, element type, layout) and its device tensors, laid out as
// the case says, with their host values packed by sequence as attention_ref.h expects.
#pragma once
#include <hip/hip_runtime.h>

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "attention/attention.h"
#include "hk/hk_test_util.h"
#include "kernels/attention_ref.h"

namespace attn_test {

using dtype = hk::scalar_type;

// How the test lays out the device tensors: contiguous (B, S, H, D) given as explicit strides or as zeros (the
// default), (B, H, S, D), or with padding after every head and row.
enum class Layout { bshd, bshd_default, bhsd, padded };

struct Case {
  std::vector<int> lq, lk;  // per sequence
  bool varlen = false;
  int hq = 1, hkv = 1, d = 64;
  dtype type = dtype::bf16;
  bool causal = false;
  int left = -1, right = -1;
  float scale = 0.f;
  float magnitude = 1.f;  // inputs uniform in [-magnitude, magnitude]
  Layout layout = Layout::bshd;
  float softcap = 0.f;
  bool sinks = false;  // attention sinks: one logit per query head (sink_values)
  int alibi = 0;       // ALiBi slopes (alibi_values): 0 none, 1 one per head, 2 one per (sequence, head)
  float dropout = 0.f;  // dropout_p, with the mask's seed and offset
  uint64_t seed = 0, offset = 0;
  int dv = 0;  // V's and O's head dim; 0 = d
  int descale = 0;  // fp8: 0 no descales (1), 1 one per tensor, 2 per (sequence, KV head)
  int vd() const { return dv ? dv : d; }
};

// The ALiBi slopes of a case (none without ALiBi).
inline std::vector<float> alibi_values(const Case& c) {
  return c.alibi ? attn_ref::sample_alibi(c.hq, c.alibi == 2 ? int(c.lq.size()) : 1) : std::vector<float>{};
}

// The sinks' logits of a case (none without sinks).
inline std::vector<float> sink_values(const Case& c) { return c.sinks ? attn_ref::sample_sinks(c.hq) : std::vector<float>{}; }

// The case as the float64 reference sees it.
inline attn_ref::Shape shape_of(const Case& c) {
  attn_ref::Shape s{c.lq, c.lk, c.hq, c.hkv, c.d, c.causal, c.left, c.right, c.scale, c.softcap};
  for (float z : sink_values(c)) s.sinks.push_back(z);
  for (float m : alibi_values(c)) s.alibi.push_back(m);
  s.alibi_batched = c.alibi == 2;
  s.dropout = c.dropout, s.seed = c.seed, s.offset = c.offset;
  s.dv = c.dv;
  return s;
}



inline std::string describe(const Case& c) {
  auto lens = [](const std::vector<int>& v) {
    std::string s;
    for (int n : v) s += (s.empty() ? "" : ",") + std::to_string(n);
    return s;
  };
  return std::string(c.varlen ? "varlen " : "") + "Sq " + lens(c.lq) + " Sk " + lens(c.lk) + " Hq " +
         std::to_string(c.hq) + " Hkv " + std::to_string(c.hkv) + " D " + std::to_string(c.d) + (c.dv ? "/" + std::to_string(c.dv) : "") + " " +
         hk::to_string(c.type) + (c.causal ? " causal" : "") + " window " + std::to_string(c.left) + "," +
         std::to_string(c.right) + " magnitude " + std::to_string(c.magnitude) + " layout " +
         std::to_string(int(c.layout)) + (c.softcap > 0 ? " softcap " + std::to_string(c.softcap) : "") + (c.sinks ? " sinks" : "") + (c.alibi ? " alibi " + std::to_string(c.alibi) : "") +
         (c.dropout > 0 ? " dropout " + std::to_string(c.dropout) + " seed " + std::to_string(c.seed) + " offset " +
                              std::to_string(c.offset) : "") + (c.descale ? " descale " + std::to_string(c.descale) : "");
}

// A 16-bit element's bits and value as the device stores them (the host toolkit's bf16 / f16).
inline uint16_t to_bits(float f, dtype t) { return t == dtype::f16 ? hk_host::f16_bits(f) : hk_host::bf16_bits(f); }
inline float from_bits(uint16_t b, dtype t) { return t == dtype::f16 ? hk_host::f16_value(b) : hk_host::bf16_value(b); }
inline uint16_t canary(dtype t) { return t == dtype::f16 ? 0x7e01 : 0x7fc1; }  // NaNs

// One (B, S, H, D) tensor (varlen: packed (total, H, D)) on the device, in the case's layout, with its host values
// packed by sequence as attention_ref.h expects; D is the case's d, or `dim_` where given (V, O and their gradients:
// the case's vd()).
struct Tensor {
  const Case& c;
  int heads;
  const std::vector<int>& lens;
  int dim;
  long rows = 0;  // per sequence (padded) or in total (varlen)
  hk::AttentionProblem::Strides s;
  std::vector<float> host;
  std::vector<uint16_t> image;  // the device buffer's contents
  void* dev = nullptr;

  Tensor(const Case& c_, int heads_, const std::vector<int>& lens_, uint32_t seed, float magnitude, int dim_ = 0)
      : c(c_), heads(heads_), lens(lens_), dim(dim_ ? dim_ : c_.d) {
    long total = 0;
    for (int n : lens) total += n, rows = std::max<long>(rows, n);
    if (c.varlen) rows = total;
    const long d = dim, batches = c.varlen ? 1 : long(lens.size());
    switch (c.layout) {
      case Layout::bshd: case Layout::bshd_default: s = {rows * heads * d, heads * d, d}; break;
      case Layout::bhsd: s = {heads * rows * d, d, rows * d}; break;
      case Layout::padded: s = {rows * (heads * (d + 8) + 16) + 64, heads * (d + 8) + 16, d + 8}; break;
    }
    const long span = (batches - 1) * s.batch + std::max<long>(rows - 1, 0) * s.row + (heads - 1) * s.head + d;
    image.assign(span + 64, canary(c.type));  // 64 more: nothing past the tensor is read or written
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-magnitude, magnitude);
    host.resize(total * heads * d);
    for (auto& x : host) x = c.type == dtype::f16 ? hk_host::round_f16(u(rng)) : hk_host::round_bf16(u(rng));
    for_each([&](long at, long packed) { image[at] = to_bits(host[packed], c.type); });
    EXPECT_EQ(hipMalloc(&dev, image.size() * 2), hipSuccess);
    EXPECT_EQ(hipMemcpy(dev, image.data(), image.size() * 2, hipMemcpyHostToDevice), hipSuccess);
  }
  ~Tensor() { (void)hipFree(dev); }
  // f(device index, packed host index) for every element.
  template <class F>
  void for_each(F f) const {
    long start = 0;
    for (size_t b = 0; b < lens.size(); ++b) {
      for (long i = 0; i < lens[b]; ++i)
        for (int h = 0; h < heads; ++h)
          for (int x = 0; x < dim; ++x) {
            const long at = c.varlen ? (start + i) * s.row + h * s.head + x : long(b) * s.batch + i * s.row + h * s.head + x;
            f(at, ((start + i) * heads + h) * dim + x);
          }
      start += lens[b];
    }
  }
  std::vector<uint16_t> download() const {
    std::vector<uint16_t> out(image.size());
    EXPECT_EQ(hipMemcpy(out.data(), dev, out.size() * 2, hipMemcpyDeviceToHost), hipSuccess);
    return out;
  }
  hk::AttentionProblem::Strides given() const { return c.layout == Layout::bshd_default ? hk::AttentionProblem::Strides{} : s; }
};

// A device copy of a host array (null when it is empty).
template <class E>
struct DeviceArray {
  E* dev = nullptr;
  explicit DeviceArray(const std::vector<E>& v) {
    if (v.empty()) return;
    EXPECT_EQ(hipMalloc(&dev, v.size() * sizeof(E)), hipSuccess);
    EXPECT_EQ(hipMemcpy(dev, v.data(), v.size() * sizeof(E), hipMemcpyHostToDevice), hipSuccess);
  }
  std::vector<E> download(size_t n) const {
    std::vector<E> out(n);
    EXPECT_EQ(hipMemcpy(out.data(), dev, n * sizeof(E), hipMemcpyDeviceToHost), hipSuccess);
    return out;
  }
  ~DeviceArray() { (void)hipFree(dev); }
};
using DeviceInts = DeviceArray<int>;

// The device copies of a case's per-head arrays (null where the case has none).
struct DeviceVariants {
  DeviceArray<float> sinks, alibi;
  explicit DeviceVariants(const Case& c) : sinks(sink_values(c)), alibi(alibi_values(c)) {}
};

// The case's type, scale, masks and variants in a problem's shared part; shapes, tensors and strides are the caller's.
inline void set_options(const Case& c, hk::AttentionInputs& p, const DeviceVariants& v) {
  p.type = c.type, p.softmax_scale = c.scale, p.softcap = c.softcap, p.causal = c.causal;
  p.window_left = c.left, p.window_right = c.right, p.sinks = v.sinks.dev;
  p.alibi_slopes = v.alibi.dev, p.alibi_batch_stride = c.alibi == 2 ? c.hq : 0;
  p.dropout_p = c.dropout, p.dropout_seed = c.seed, p.dropout_offset = c.offset;
}

inline std::vector<int> offsets(const std::vector<int>& lens) {
  std::vector<int> cu{0};
  for (int n : lens) cu.push_back(cu.back() + n);
  return cu;
}

inline std::vector<int> same(int n, int batch) { return std::vector<int>(batch, n); }

// `c` with dropout p under the stream of (seed, offset).
inline Case dropped(Case c, float p, uint64_t seed, uint64_t offset) {
  c.dropout = p, c.seed = seed, c.offset = offset;
  return c;
}

// Two or three features together at D = 64 and 128 (their dynamic instance of each kernel; D = 128 on gfx950: the
// backward's kernel 2 in pairs of waves): ALiBi on the capped score, dropout with either or both; both types, causal,
// windows, varlen, sinks. Forward and backward run the same cases.
inline std::vector<Case> feature_combinations() {
  const Layout bshd = Layout::bshd;
  return {
      {same(100, 1), same(257, 1), false, 4, 2, 64, dtype::bf16, true, -1, -1, 0.f, 4.f, bshd, 5.f, false, 1},
      {same(130, 2), same(90, 2), false, 2, 1, 128, dtype::f16, false, 30, 8, 0.f, 3.f, bshd, 8.f, false, 2},
      dropped({{0, 1, 70, 200}, {3, 1, 100, 130}, true, 4, 2, 64, dtype::f16, true, -1, -1, 0.f, 1.f, bshd, 0.f, false,
               1}, 0.2f, 3, 1ull << 33),                                                        // dropout, ALiBi
      dropped({same(255, 1), same(255, 1), false, 8, 2, 128, dtype::bf16, true, -1, -1, 0.f, 4.f, bshd, 5.f}, 0.3f, 11,
              2),                                                                               // dropout, softcap
      dropped({{0, 1, 70, 200}, {3, 1, 100, 130}, true, 2, 2, 128, dtype::f16, false, 30, 10, 0.f, 4.f, bshd, 5.f, true,
               2}, 0.25f, 5, 0),                                                                // all three, sinks
      dropped({same(257, 1), same(257, 1), false, 2, 1, 64, dtype::bf16, false, 64, 0, 0.f, 4.f, bshd, 3.f, false, 1},
              0.1f, 7, 100),                                                                    // all three, window
  };
}

}  // namespace attn_test
