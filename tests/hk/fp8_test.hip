// fp8 tiles (fp8e4m3 and fp8e5m2, both MFMA families): saturating conversion from fp32 tiles, and mma with fp32
// accumulation (both operands of one format, and mixed; the generic cases of mma_cases.h) and attention's P V, against
// the host toolkit's model of each arch's formats (tests/fp8_ref.h), written from the format definitions: on gfx942
// FNUZ e4m3 (bias 8, max 240) and FNUZ e5m2 (bias 16, max 57344), 0x80 the only NaN, no -0, no inf; on gfx950 OCP
// e4m3fn (bias 7, max 448, S.1111.111 NaN, no inf) and OCP e5m2 (bias 15, max 57344, S.11111.00 inf, S.11111.xx NaN).
#include <cmath>
#include <cstdio>

#include "mma_cases.h"

using namespace hk;

namespace {

template <class T, int R, int C>
using gl8 = gl<T, 1, 1, R, C>;
template <int R, int C>
using glf = gl<float, 1, 1, R, C>;

}  // namespace

// ---- conversion ----------------------------------------------------------------------------------------------------

constexpr int CM = 32, CN = 128;  // a multiple of both archs' fp8 row base tiles (16 x 32, 16 x 128)

// fp32 accumulator -> fp8: elementwise on store, and in registers to the row-layout operand (paired conversions).
template <class T>
__global__ void convert(const float* in, T* stored, T* operand, float* decoded) {
  rt_acc<CM, CN> acc;
  load(acc, glf<CM, CN>(const_cast<float*>(in), 1, 1, CM, CN), {});
  store(gl8<T, CM, CN>(stored, 1, 1, CM, CN), acc, {});
  rt<T, CM, CN, layout::row> op;
  acc_to_operand(op, acc);
  store(gl8<T, CM, CN>(operand, 1, 1, CM, CN), op, {});
  store(glf<CM, CN>(decoded, 1, 1, CM, CN), op, {});  // fp8 -> fp32 on the device
}

template <class T>
void check_convert() {
  const hk_host::Fp8& f = hktest::format_of<T>().fp8();
  // Random values over the whole range and past it, every code's exact value, the midpoints between neighbouring
  // codes (ties), values just off the midpoints, subnormals, zeros, infinities and NaN.
  std::vector<float> in;
  std::mt19937 rng(71);
  for (int c = 0; c < 256; ++c)
    if (f.finite(uint8_t(c))) in.push_back(f.value(uint8_t(c)));
  for (int c = 0; c < 0x7e; ++c) {
    const float lo = f.value(uint8_t(c)), hi = f.value(uint8_t(c + 1));
    if (!std::isfinite(hi)) continue;
    const float mid = (lo + hi) / 2;
    in.push_back(mid), in.push_back(-mid);
    in.push_back(std::nextafter(mid, 0.f)), in.push_back(-std::nextafter(mid, INFINITY));
  }
  for (float x : {0.f, -0.f, INFINITY, -INFINITY, NAN, -NAN, 1e-30f, -1e-30f, 1e30f, -1e30f, 240.f, 241.f, 247.9f, 248.f,
                  448.f, 449.f, 463.9f, 464.f, 480.f, -500.f, 1e4f, 57344.f, -57345.f, 61439.f, 61440.f, -65536.f, 1e5f})
    in.push_back(x);
  // e4m3 keeps its original range; e5m2 reaches past its max (57344) as well.
  const float wide_max = T::format == arch::fp8_format::e4m3 ? 700.f : 1e5f;
  std::uniform_real_distribution<float> wide(-wide_max, wide_max), narrow(-0.05f, 0.05f);
  while (in.size() < size_t(CM * CN)) in.push_back(in.size() % 2 ? wide(rng) : narrow(rng));
  ASSERT_EQ(in.size(), size_t(CM * CN)) << "too many fixed cases for one tile";

  hktest::Buffer<float> din(CM * CN), decoded(CM * CN);
  din.host = in;
  din.upload();
  hktest::Buffer<T> stored(CM * CN), operand(CM * CN);
  hipLaunchKernelGGL(convert<T>, dim3(1), dim3(64), 0, 0, din.dev, stored.dev, operand.dev, decoded.dev);
  HIP_ASSERT(hipDeviceSynchronize());
  const auto s = stored.read(), o = operand.read(), d = decoded.read();  // values of the stored codes
  int bad = 0;
  for (int i = 0; i < CM * CN; ++i) {
    // hk's conversion: round to nearest (ties to the even code), saturating to +-max (infinities too), NaN to NaN.
    const float want = f.round(in[i], /*saturate=*/true);
    auto same = [&](float got) { return std::isnan(want) ? std::isnan(got) : got == want && std::signbit(got) == std::signbit(want); };
    if ((!same(s[i]) || !same(o[i]) || !same(d[i])) && bad++ < 8)
      ADD_FAILURE() << "x = " << in[i] << " (" << std::hexfloat << in[i] << std::defaultfloat << "): want " << want
                    << ", store gave " << s[i] << ", acc_to_operand " << o[i] << ", decoded on the device " << d[i];
  }
  EXPECT_EQ(bad, 0) << bad << " of " << CM * CN << " conversions differ from the " << f.format().name << " model";
}

TEST(Fp8, ConvertSaturatingRoundToNearestEven) { check_convert<fp8e4m3>(); }
TEST(Fp8, ConvertE5m2SaturatingRoundToNearestEven) { check_convert<fp8e5m2>(); }

// The largest finite value and the arch's format, as the device sees them.
__global__ void format_probe(float* out) {
  out[0] = arch::current::fp8_max;
  out[1] = static_cast<float>(fp8e4m3(1e9f));
  out[2] = static_cast<float>(fp8e4m3::from_bits(0x80));  // NaN in FNUZ, -0 in OCP
  out[3] = static_cast<float>(fp8e4m3::from_bits(0x7f));  // 240 in FNUZ, NaN in OCP
  out[4] = static_cast<float>(fp8e4m3::from_bits(0x01));  // the smallest subnormal: 2^-10 (FNUZ), 2^-9 (OCP)
  out[5] = arch::current::bf8_max;
  out[6] = static_cast<float>(fp8e5m2(1e9f));
  out[7] = static_cast<float>(fp8e5m2(-INFINITY));
  out[8] = static_cast<float>(fp8e5m2::from_bits(0x80));  // NaN in FNUZ, -0 in OCP
  out[9] = static_cast<float>(fp8e5m2::from_bits(0x7c));  // 2^15 in FNUZ, inf in OCP
  out[10] = static_cast<float>(fp8e5m2::from_bits(0x7f)); // 57344 in FNUZ, NaN in OCP
  out[11] = static_cast<float>(fp8e5m2::from_bits(0x01)); // the smallest subnormal: 2^-17 (FNUZ), 2^-16 (OCP)
}

TEST(Fp8, ArchFormat) {
  hktest::Buffer<float> out(12);
  hipLaunchKernelGGL(format_probe, dim3(1), dim3(1), 0, 0, out.dev);
  HIP_ASSERT(hipDeviceSynchronize());
  const auto o = out.read();
  EXPECT_EQ(o[5], 57344.f);
  EXPECT_EQ(o[6], 57344.f);
  EXPECT_EQ(o[7], -57344.f);
  if (hk_host::device_arch() == hk_host::Arch::gfx950) {
    EXPECT_EQ(o[0], 448.f);
    EXPECT_EQ(o[1], 448.f);
    EXPECT_TRUE(o[2] == 0.f && std::signbit(o[2])) << o[2];
    EXPECT_TRUE(std::isnan(o[3])) << o[3];
    EXPECT_EQ(o[4], std::ldexp(1.f, -9));
    EXPECT_TRUE(o[8] == 0.f && std::signbit(o[8])) << o[8];
    EXPECT_EQ(o[9], INFINITY);
    EXPECT_TRUE(std::isnan(o[10])) << o[10];
    EXPECT_EQ(o[11], std::ldexp(1.f, -16));
  } else {
    EXPECT_EQ(o[0], 240.f);
    EXPECT_EQ(o[1], 240.f);
    EXPECT_TRUE(std::isnan(o[2])) << o[2];
    EXPECT_EQ(o[3], 240.f);
    EXPECT_EQ(o[4], std::ldexp(1.f, -10));
    EXPECT_TRUE(std::isnan(o[8])) << o[8];
    EXPECT_EQ(o[9], 32768.f);
    EXPECT_EQ(o[10], 57344.f);
    EXPECT_EQ(o[11], std::ldexp(1.f, -17));
  }
}

// ---- mma and attention's P V: the generic cases (mma_cases.h) ------------------------------------------------------

using e4 = fp8e4m3;
using e5 = fp8e5m2;

namespace {
const bool registered = [] {
  using hkmma::Op, hkmma::Src;
  // Every orientation and source in both families, operands up to 16 in magnitude, and the full range of each format
  // (every finite code) in ABt.
  hkmma::add_mma_cases<e4, e4>(16.f);
  hkmma::add_mma_cases<e5, e5>(16.f);
  hkmma::add_mma_case<e4, e4, mfma16, Op::ABt, Src::global>(INFINITY, "FullRange");
  hkmma::add_mma_case<e4, e4, mfma32, Op::ABt, Src::global>(INFINITY, "FullRange");
  hkmma::add_mma_case<e5, e5, mfma16, Op::ABt, Src::global>(INFINITY, "FullRange");
  hkmma::add_mma_case<e5, e5, mfma32, Op::ABt, Src::global>(INFINITY, "FullRange");
  // Mixed formats (gfx942: the fp8_bf8 / bf8_fp8 opcodes; gfx950: cbsz / blgp of f8f6f4), a col-layout operand of each
  // format and each source.
  hkmma::add_mma_case<e4, e5, mfma16, Op::ABt, Src::global>(16.f);
  hkmma::add_mma_case<e4, e5, mfma32, Op::AB, Src::shared>(16.f);
  hkmma::add_mma_case<e4, e5, mfma16, Op::AtBt, Src::shared>(16.f);
  hkmma::add_mma_case<e4, e5, mfma32, Op::AtB, Src::global>(16.f);
  hkmma::add_mma_case<e5, e4, mfma16, Op::AB, Src::shared>(16.f);
  hkmma::add_mma_case<e5, e4, mfma32, Op::ABt, Src::global>(16.f);
  hkmma::add_mma_case<e5, e4, mfma16, Op::AtB, Src::global>(16.f);
  hkmma::add_mma_case<e5, e4, mfma32, Op::AtBt, Src::shared>(16.f);
  hkmma::add_pv_cases<e4, e4>();
  hkmma::add_pv_cases<e5, e5>();
  hkmma::add_pv_cases<e4, e5>();
  return true;
}();
}  // namespace
