// Maps across the matrix of element types (bf16, half, float) x layouts (row, col) x tile shapes: every elementwise
// op on tiles loaded from and stored to global memory, against a host model that rounds to the tile's type after each
// op, as the device does; and the maps the chain leaves out (log, one, neg_infty, and the other tile and scalar forms).
#include "hk/hk.h"
#include "hk_test_util.h"

using namespace hk;

template <class T, int R, int C, layout L>
__global__ void map_chain(const T* a, const T* b, T* out) {
  gl<T, 1, 1, R, C> ga(const_cast<T*>(a), 1, 1, R, C), gb(const_cast<T*>(b), 1, 1, R, C), go(out, 1, 1, R, C);
  rt<T, R, C, L> x, y, r;
  load(x, ga, {});
  load(y, gb, {});
  add(r, x, y);       // a + b
  mul(r, r, 0.5f);    // (a + b) / 2
  max(r, r, x);       // max(., a)
  sub(r, r, y);       // . - b
  abs(r);             // |.|
  min(r, r, 1.5f);    // min(., 1.5)
  exp2(r);            // 2^.
  div(r, r, 2.f);     // / 2
  relu(y);            // relu(b)
  add(r, r, y);       // + relu(b)
  store(go, r, {});
}

template <class T>
float host_chain(float a, float b) {
  auto q = [](float v) { return hktest::quantize<T>(v); };
  float r = q(a + b);
  r = q(r * 0.5f);
  r = q(std::max(r, a));
  r = q(r - b);
  r = q(std::fabs(r));
  r = q(std::min(r, 1.5f));
  r = q(std::exp2(r));
  r = q(r / 2.f);
  return q(r + q(std::max(b, 0.f)));
}

template <class T, int R, int C, layout L>
void check() {
  hktest::Buffer<T> a(R * C, 21, 2.f), b(R * C, 22, 2.f), out(R * C);
  hipLaunchKernelGGL((map_chain<T, R, C, L>), dim3(1), dim3(64), 0, 0, a.dev, b.dev, out.dev);
  HIP_ASSERT(hipDeviceSynchronize());
  std::vector<float> want(R * C);
  for (int i = 0; i < R * C; ++i) want[i] = host_chain<T>(a.host[i], b.host[i]);
  // exp2 on the device is within a couple of ulps of the host's: one step of the type's precision.
  const float rtol = std::is_same_v<T, float> ? 1e-6f : std::is_same_v<T, bf16> ? 1.f / 128 : 1.f / 1024;
  hktest::expect_close(out.read(), want, 0, rtol, "map chain");
}

// Shapes: one base tile, and a multi-tile rectangle in each layout (multiples of every arch's base tile).
TEST(MapsMatrix, Bf16Row) { check<bf16, 16, 32, layout::row>(); check<bf16, 48, 64, layout::row>(); }
TEST(MapsMatrix, Bf16Col) { check<bf16, 32, 16, layout::col>(); check<bf16, 64, 48, layout::col>(); }
TEST(MapsMatrix, HalfRow) { check<half, 16, 32, layout::row>(); check<half, 32, 96, layout::row>(); }
TEST(MapsMatrix, HalfCol) { check<half, 32, 16, layout::col>(); check<half, 96, 32, layout::col>(); }
TEST(MapsMatrix, FloatRow) { check<float, 16, 16, layout::row>(); check<float, 32, 48, layout::row>(); }
TEST(MapsMatrix, FloatCol) { check<float, 16, 16, layout::col>(); check<float, 48, 32, layout::col>(); }

// The maps the chain leaves out: log, one, neg_infty, tile / tile, tile - scalar and max(tile, scalar), in both MFMA
// families' layouts.
template <class T, int R, int C, layout L, class S>
__global__ void more_maps(const T* a, const T* b, T* logs, T* quotients, T* ones, T* neg_infinities) {
  using G = gl<T, 1, 1, R, C>;
  rt<T, R, C, L, S> x, y, r;
  load(x, G(const_cast<T*>(a), 1, 1, R, C), {});
  load(y, G(const_cast<T*>(b), 1, 1, R, C), {});
  copy(r, x);
  log(r);
  store(G(logs, 1, 1, R, C), r, {});
  div(r, x, y);        // a / b (half: clang divides in f16, ending in v_div_fixup_f16)
  sub(r, r, 0.75f);   // - 0.75
  max(r, r, -0.5f);   // max(., -0.5)
  store(G(quotients, 1, 1, R, C), r, {});
  one(r);
  store(G(ones, 1, 1, R, C), r, {});
  neg_infty(r);
  store(G(neg_infinities, 1, 1, R, C), r, {});
}

template <class T, int R, int C, layout L, class S = mfma16>
void check_more() {
  hktest::Buffer<T> a(R * C, 23, 2.f), b(R * C, 24, 2.f), logs(R * C), quotients(R * C), ones(R * C), neg_inf(R * C);
  for (auto* in : {&a, &b}) {  // positive: log's domain, and divisors away from zero
    for (auto& v : in->host) v = hktest::quantize<T>(std::fabs(v) + 0.25f);
    in->upload();
  }
  hipLaunchKernelGGL((more_maps<T, R, C, L, S>), dim3(1), dim3(64), 0, 0, a.dev, b.dev, logs.dev, quotients.dev, ones.dev,
                     neg_inf.dev);
  HIP_ASSERT(hipDeviceSynchronize());
  auto q = [](float v) { return hktest::quantize<T>(v); };
  std::vector<float> want_log(R * C), want_quotient(R * C);
  for (int i = 0; i < R * C; ++i) {
    want_log[i] = q(std::log(a.host[i]));
    // f32 has more than twice half's and bf16's precision plus 2 bits: rounding the f32 quotient again is exact.
    const float quotient = q(a.host[i] / b.host[i]);
    want_quotient[i] = q(std::max(q(quotient - 0.75f), -0.5f));
  }
  // log on the device is within a few ulps of the host's: one step of the type's precision (and 2^-20 near log 1 = 0).
  const float rtol = std::is_same_v<T, float> ? 1e-6f : std::is_same_v<T, bf16> ? 1.f / 128 : 1.f / 1024;
  hk_host::expect_close(logs.read(), want_log, 1e-6, rtol, "log");
  hk_host::expect_close(quotients.read(), want_quotient, 0, 0, "a / b - 0.75, max -0.5");
  hk_host::expect_close(ones.read(), std::vector<float>(R * C, 1.f), 0, 0, "one");
  hk_host::expect_close(neg_inf.read(), std::vector<float>(R * C, -INFINITY), 0, 0, "neg_infty");
}

TEST(MapsMatrix, MoreBf16Row) { check_more<bf16, 48, 64, layout::row>(); }
TEST(MapsMatrix, MoreBf16Col) { check_more<bf16, 64, 48, layout::col>(); }
TEST(MapsMatrix, MoreHalfRow) { check_more<half, 16, 32, layout::row>(); }
TEST(MapsMatrix, MoreHalfCol) { check_more<half, 96, 32, layout::col>(); }
TEST(MapsMatrix, MoreFloatRow) { check_more<float, 32, 48, layout::row>(); }
TEST(MapsMatrix, MoreFloatCol) { check_more<float, 16, 16, layout::col>(); }
TEST(MapsMatrix, MoreBf16Row32) { check_more<bf16, 64, 64, layout::row, mfma32>(); }
TEST(MapsMatrix, MoreFloatCol32) { check_more<float, 64, 32, layout::col, mfma32>(); }
