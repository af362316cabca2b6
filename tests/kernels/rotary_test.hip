// hk::rotary and rotary_backward on each virtual device against the float64 host reference (rotary_norm_ref.h):
// half-split and interleaved pairs, full and partial rotary_dim, odd head_dim, bf16 / f16 / fp32 tensors, fp32 and
// bf16 tables, angles computed from a base with position offsets (decoding) and per-token positions (packed varlen),
// Q and K with different head counts, padded and (batch, heads, seqlen) strides, in place and not, and every
// validation error.
#include <hip/hip_runtime.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/rotary_norm_ref.h"
#include "rotary/rotary.h"

namespace {

using dtype = hk::scalar_type;
using rnref::DeviceArray;

enum class Angles { table_fp32, table_bf16, base_offset, base_positions };

struct Case {
  int batch, seqlen, q_heads, k_heads, head_dim, rotary_dim;  // k_heads 0: q alone
  bool interleaved;
  dtype type;
  Angles angles;
  bool in_place = false, padded = false, heads_outer = false, backward = false;
  long position_offset = 0;
};

// One rotated tensor: its input buffer (strided as the case says) and output buffer (packed, or the input in place).
struct Tensor {
  int heads;
  long in_b, in_s, in_h;
  DeviceArray in;
  DeviceArray packed_out;
  Tensor(const Case& c, int h, uint32_t seed)
      : heads(h), in(c.type, footprint(c, h)), packed_out(c.type, c.in_place ? 1 : size_t(c.batch) * c.seqlen * h * c.head_dim) {
    const long d = c.head_dim + (c.padded ? 5 : 0);  // padding between heads (and tokens) that nothing may touch
    if (c.heads_outer) in_s = d, in_h = c.seqlen * d + (c.padded ? 3 : 0), in_b = h * in_h;
    else in_h = d, in_s = h * d + (c.padded ? 3 : 0), in_b = c.seqlen * in_s;
    in.random(seed);
    packed_out.fill(0.f);
  }
  static size_t footprint(const Case& c, int h) {
    const long d = c.head_dim + (c.padded ? 5 : 0);
    return size_t(c.batch) * (size_t(h) * c.seqlen * d + (c.padded ? 3 * (c.heads_outer ? h : c.seqlen) : 0));
  }
  hk::RotaryTensor api(const Case& c) {
    if (c.in_place) return {in.dev, in.dev, heads, in_b, in_s, in_h, in_b, in_s, in_h};
    const long h = c.head_dim, s = long(heads) * h;
    return {in.dev, packed_out.dev, heads, in_b, in_s, in_h, c.seqlen * s, s, h};
  }
  // Compares the device's output with the reference; in place, everything outside the rotated heads must be unchanged.
  void check(const Case& c, const rnref::RotaryAngles& ang, const char* name) {
    const rnref::RotaryShape sh{c.batch, c.seqlen, heads, c.head_dim, c.rotary_dim, c.interleaved, in_b, in_s, in_h};
    const std::vector<rnref::Expect> want = rnref::rotary_reference(sh, in.host, ang, c.type);
    const std::vector<float> got = c.in_place ? in.download() : packed_out.download();
    std::vector<bool> covered(in.size(), false);
    int bad = 0;
    for (int b = 0; b < c.batch; ++b)
      for (int s = 0; s < c.seqlen; ++s)
        for (int h = 0; h < heads; ++h)
          for (int d = 0; d < c.head_dim; ++d) {
            const size_t ref = ((size_t(b) * c.seqlen + s) * heads + h) * c.head_dim + d;
            const size_t at = c.in_place ? size_t(b * in_b + s * in_s + h * in_h + d) : ref;
            if (c.in_place) covered[at] = true;
            if (!want[ref].accepts(got[at]) && bad++ < 5)
              ADD_FAILURE() << name << "[" << b << "][" << s << "][" << h << "][" << d << "] = " << got[at] << ", want "
                            << want[ref].value << " (tol " << want[ref].tol << ")";
          }
    if (c.in_place)
      for (size_t i = 0; i < got.size(); ++i)
        if (!covered[i] && got[i] != in.host[i] && bad++ < 5) ADD_FAILURE() << name << " padding at " << i << " was written";
    EXPECT_EQ(bad, 0) << name;
  }
};

std::string name(const Case& c) {
  static const char* angles[] = {"fp32 tables", "bf16 tables", "base + offset", "base + positions"};
  return std::to_string(c.batch) + "x" + std::to_string(c.seqlen) + " q" + std::to_string(c.q_heads) + " k" +
         std::to_string(c.k_heads) + " d" + std::to_string(c.head_dim) + "/" + std::to_string(c.rotary_dim) +
         (c.interleaved ? " interleaved " : " half-split ") + hk::to_string(c.type) + " " + angles[int(c.angles)] +
         (c.in_place ? " in place" : "") + (c.padded ? " padded" : "") + (c.heads_outer ? " (b,h,s,d)" : "") +
         (c.backward ? " backward" : "");
}

void run(const Case& c) {
  SCOPED_TRACE(name(c));
  Tensor q(c, c.q_heads, 11);
  std::unique_ptr<Tensor> k = c.k_heads ? std::make_unique<Tensor>(c, c.k_heads, 12) : nullptr;
  hk::RotaryProblem p;
  p.batch = c.batch, p.seqlen = c.seqlen, p.head_dim = c.head_dim, p.rotary_dim = c.rotary_dim, p.type = c.type;
  p.interleaved = c.interleaved, p.position_offset = c.position_offset;
  p.q = q.api(c);
  if (k) p.k = k->api(c);
  rnref::RotaryAngles ang;
  ang.sign = c.backward ? -1 : 1, ang.position_offset = c.position_offset;
  const bool tables = c.angles == Angles::table_fp32 || c.angles == Angles::table_bf16;
  const dtype table_type = c.angles == Angles::table_bf16 ? dtype::bf16 : dtype::fp32;
  const int rows = int(c.position_offset) + c.seqlen + 2, half = c.rotary_dim / 2, table_stride = half + 3;
  DeviceArray cos_t(table_type, tables ? size_t(rows) * table_stride : 1), sin_t(table_type, cos_t.size());
  DeviceArray positions(dtype::fp32, size_t(c.batch) * c.seqlen);  // int32 bits
  std::vector<int> pos_host(positions.size());
  if (tables) {
    // Real angles, so the reference's cos^2 + sin^2 = 1 holds to the tables' rounding.
    for (int r = 0; r < rows; ++r)
      for (int i = 0; i < half; ++i) {
        const double theta = r * std::pow(500.0, -2.0 * i / c.rotary_dim);
        cos_t.host[r * table_stride + i] = rnref::quantize(float(std::cos(theta)), table_type);
        sin_t.host[r * table_stride + i] = rnref::quantize(float(std::sin(theta)), table_type);
      }
    cos_t.upload(), sin_t.upload();
    p.cos = cos_t.dev, p.sin = sin_t.dev, p.table_type = table_type, p.table_rows = rows, p.table_stride = table_stride;
    ang.cos = &cos_t.host, ang.sin = &sin_t.host, ang.table_stride = table_stride;
  } else {
    p.base = 10000.f, ang.base = 10000.0;
    if (c.angles == Angles::base_positions) {
      // Packed varlen: each batch row holds sequences restarting at 0 every 7 tokens, shifted by a decode offset.
      for (int b = 0; b < c.batch; ++b)
        for (int s = 0; s < c.seqlen; ++s) pos_host[b * c.seqlen + s] = s % 7 + 3000 * b;
      ASSERT_EQ(hipMemcpy(positions.dev, pos_host.data(), pos_host.size() * 4, hipMemcpyHostToDevice), hipSuccess);
      p.positions = static_cast<const int*>(positions.dev), ang.positions = &pos_host;
    }
  }
  const hk::Status s = c.backward ? hk::rotary_backward(p) : hk::rotary(p);
  ASSERT_TRUE(s) << s.message;
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  q.check(c, ang, "q");
  if (k) k->check(c, ang, "k");
}

TEST(Rotary, HalfSplitTables) {
  run({2, 17, 4, 2, 64, 64, false, dtype::bf16, Angles::table_fp32});
  run({1, 9, 3, 0, 128, 128, false, dtype::f16, Angles::table_bf16});
  run({2, 5, 2, 1, 32, 32, false, dtype::fp32, Angles::table_fp32, false, false, false, false, 40});
}

TEST(Rotary, Interleaved) {
  run({2, 11, 3, 3, 64, 64, true, dtype::bf16, Angles::table_fp32});
  run({1, 7, 2, 1, 48, 48, true, dtype::fp32, Angles::base_offset});
}

TEST(Rotary, PartialRotaryDim) {
  run({2, 13, 4, 2, 128, 64, false, dtype::bf16, Angles::base_offset});
  run({1, 6, 2, 2, 37, 20, true, dtype::f16, Angles::table_bf16});  // odd head_dim: 17 elements copied
  run({2, 5, 3, 0, 64, 2, false, dtype::fp32, Angles::table_fp32});
}

TEST(Rotary, ComputedAnglesWithPositions) {
  run({3, 20, 2, 1, 64, 64, false, dtype::fp32, Angles::base_positions});
  run({2, 14, 2, 2, 64, 32, true, dtype::bf16, Angles::base_positions});
  run({4, 1, 8, 2, 128, 128, false, dtype::bf16, Angles::base_offset, false, false, false, false, 4093});  // decoding
}

TEST(Rotary, StridesAndInPlace) {
  run({2, 9, 3, 2, 64, 64, false, dtype::bf16, Angles::table_fp32, true, true});         // padded, in place
  run({2, 9, 3, 2, 64, 48, true, dtype::f16, Angles::base_offset, false, true, true});   // (b, h, s, d), padded
  run({1, 8, 2, 1, 40, 40, false, dtype::fp32, Angles::base_positions, true, false, true});
}

TEST(Rotary, Backward) {
  run({2, 10, 3, 2, 64, 64, false, dtype::bf16, Angles::table_fp32, false, false, false, true});
  run({2, 10, 2, 1, 64, 32, true, dtype::fp32, Angles::base_positions, true, true, false, true});
  run({1, 6, 2, 2, 96, 64, false, dtype::f16, Angles::base_offset, false, false, true, true, 100});
}

// rotary_backward undoes rotary (fp32 tensors: to the fp32 arithmetic's rounding).
TEST(Rotary, BackwardInvertsForward) {
  const int b = 2, s = 12, h = 3, d = 64;
  DeviceArray x(dtype::fp32, size_t(b) * s * h * d), y(dtype::fp32, x.size()), back(dtype::fp32, x.size());
  x.random(5);
  hk::RotaryProblem p;
  p.batch = b, p.seqlen = s, p.head_dim = d, p.type = dtype::fp32, p.base = 10000.f, p.position_offset = 77;
  p.q = hk::RotaryTensor::contiguous(x.dev, y.dev, s, h, d);
  ASSERT_TRUE(hk::rotary(p));
  p.q = hk::RotaryTensor::contiguous(y.dev, back.dev, s, h, d);
  ASSERT_TRUE(hk::rotary_backward(p));
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  const std::vector<float> got = back.download();
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], x.host[i], 1e-5) << i;
}

TEST(Rotary, ValidationErrors) {
  const int b = 2, s = 8, h = 2, d = 64;
  DeviceArray q(dtype::bf16, size_t(b) * s * h * d), k(dtype::bf16, q.size()), out(dtype::bf16, q.size());
  DeviceArray cos_t(dtype::fp32, size_t(s) * d / 2), sin_t(dtype::fp32, cos_t.size());
  DeviceArray positions(dtype::fp32, size_t(b) * s);
  auto base = [&] {
    hk::RotaryProblem p;
    p.batch = b, p.seqlen = s, p.head_dim = d, p.type = dtype::bf16, p.base = 10000.f;
    p.q = hk::RotaryTensor::contiguous(q.dev, out.dev, s, h, d);
    return p;
  };
  auto tables = [&] {
    hk::RotaryProblem p = base();
    p.base = 0.f, p.cos = cos_t.dev, p.sin = sin_t.dev, p.table_rows = s, p.table_stride = d / 2;
    return p;
  };
  auto expect_error = [](const hk::RotaryProblem& p, const char* fragment) {
    const hk::Status st = hk::rotary(p);
    EXPECT_FALSE(st) << fragment;
    EXPECT_NE(st.message.find(fragment), std::string::npos) << "message: " << st.message;
    const hk::Status bw = hk::rotary_backward(p);
    EXPECT_NE(bw.message.find(fragment), std::string::npos) << "backward message: " << bw.message;
  };
  ASSERT_TRUE(hk::rotary(base()));
  ASSERT_TRUE(hk::rotary(tables()));
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  { auto p = base(); p.batch = 0; expect_error(p, "must be positive"); }
  { auto p = base(); p.head_dim = -1; expect_error(p, "must be positive"); }
  { auto p = base(); p.batch = 1 << 16, p.seqlen = 1 << 15; expect_error(p, "batch * seqlen must be below 2^31"); }
  { auto p = base(); p.rotary_dim = 33; expect_error(p, "rotary_dim must be even"); }
  { auto p = base(); p.rotary_dim = 128; expect_error(p, "rotary_dim must be even"); }
  { auto p = base(); p.type = dtype::fp8_e4m3; expect_error(p, "must be bf16, f16 or fp32"); }
  { auto p = base(); p.q.in = nullptr; expect_error(p, "null pointer for q.in"); }
  { auto p = base(); p.k = hk::RotaryTensor::contiguous(k.dev, nullptr, s, h, d); expect_error(p, "null pointer for k.out"); }
  { auto p = base(); p.q.heads = 0; expect_error(p, "q.heads must be positive"); }
  { auto p = base(); p.q.in_stride_s = -1; expect_error(p, "must not be negative"); }
  { auto p = base(); p.q.in = static_cast<char*>(q.dev) + 1; expect_error(p, "not aligned"); }
  { auto p = base(); p.q.out_stride_h = d / 2; expect_error(p, "rows overlap"); }
  { auto p = base(); p.q.out = q.dev; p.q.out_stride_h = s * d; p.q.out_stride_s = d; expect_error(p, "same strides"); }
  { auto p = base(); p.batch = 1; p.q.out = static_cast<char*>(q.dev) + 4 * d; expect_error(p, "overlap without being the same"); }
  { auto p = base(); p.batch = 3; expect_error(p, "q.in does not lie inside"); }
  { auto p = base(); p.q.out_stride_b *= 2; expect_error(p, "q.out does not lie inside"); }
  { auto p = base(); p.k = hk::RotaryTensor::contiguous(k.dev, out.dev, s, h, d); expect_error(p, "q.out and k.out overlap"); }
  { auto p = base(); p.position_offset = -1; expect_error(p, "position_offset must not be negative"); }
  { auto p = tables(); p.base = 10000.f; expect_error(p, "either cos and sin tables or a base"); }
  { auto p = base(); p.base = 0.f; expect_error(p, "either cos and sin tables or a base"); }
  { auto p = tables(); p.sin = nullptr; expect_error(p, "null pointer for sin"); }
  { auto p = tables(); p.table_type = dtype::f16; expect_error(p, "tables must be fp32 or bf16"); }
  { auto p = tables(); p.positions = static_cast<const int*>(positions.dev); expect_error(p, "positions need computed angles"); }
  { auto p = tables(); p.table_stride = d / 2 - 1; expect_error(p, "table_stride"); }
  { auto p = tables(); p.position_offset = 1; expect_error(p, "fewer than position_offset + seqlen"); }
  { auto p = tables(); p.table_type = dtype::bf16; p.cos = static_cast<char*>(cos_t.dev) + 1; expect_error(p, "aligned to their element size"); }
  { auto p = tables(); p.table_rows = s + 1; p.table_type = dtype::fp32; expect_error(p, "do not lie inside"); }
  { auto p = base(); p.base = -2.f; expect_error(p, "base must be positive and finite"); }
  { auto p = base(); p.base = INFINITY; expect_error(p, "base must be positive and finite"); }
  { auto p = base(); p.positions = reinterpret_cast<const int*>(static_cast<char*>(positions.dev) + 2); expect_error(p, "4-byte aligned"); }
  { auto p = base(); p.batch = 3; p.q.in_stride_b = 0; p.q.out_stride_b = 0; expect_error(p, "rows overlap"); }
  { auto p = base(); p.position_offset = 1l << 24; expect_error(p, "below 2^24"); }
  { auto p = base(); int host[4]; p.positions = host; expect_error(p, "positions (batch x seqlen int32) do not lie inside"); }
}

}  // namespace
