// fp8 tiles (fp8e4m3 and fp8e5m2, both MFMA families): saturating conversion from fp32 tiles, and mma with fp32
// accumulation (both operands of one format, and mixed), against a host model of each arch's formats written from the
// format definitions: on gfx942 FNUZ e4m3 (bias 8, max 240) and FNUZ e5m2 (bias 16, max 57344), 0x80 the only NaN,
// no -0, no inf; on gfx950 OCP e4m3fn (bias 7, max 448, S.1111.111 NaN, no inf) and OCP e5m2 (bias 15, max 57344,
// S.11111.00 inf, S.11111.xx NaN).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "fp8_ref.h"
#include "hk/hk.h"
#include "hk_test_util.h"

using namespace hk;

namespace {

// The device's formats from the host model of the fp8 formats (fp8_ref.h), independent of hk's conversions.
using Format = fp8_ref::F8;

template <class T>
Format device_format() {
  const bool g950 = hktest::is_gfx950();
  return T::format == arch::fp8_format::e5m2 ? fp8_ref::bf8_of(g950) : fp8_ref::fp8_of(g950);
}

bool is_nan_code(uint8_t b, const Format& f) { return fp8_ref::is_nan(b, f); }
bool is_inf_code(uint8_t b, const Format& f) { return std::isinf(fp8_ref::value(b, f)); }
float decode(uint8_t b, const Format& f) { return float(fp8_ref::value(b, f)); }

// hk's conversion: round to nearest (ties to the even code), saturating to +-max (infinities too); NaN to the
// format's positive NaN.
uint8_t encode_sat(float x, const Format& f) {
  if (std::isnan(x)) return f.fnuz ? 0x80 : 0x7f;
  const double max = fp8_ref::value(fp8_ref::max_code(f), f);
  return fp8_ref::encode_rne(std::clamp(double(x), -max, max), f, true);
}

// Random finite codes of magnitude at most 2^max_exp.
std::vector<uint8_t> random_codes(size_t n, uint32_t seed, Format f, int max_exp) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) {
    do b = uint8_t(rng());
    while (is_nan_code(b, f) || !(std::fabs(decode(b, f)) <= std::ldexp(1.f, max_exp)));
  }
  return v;
}

const char* name_of(const Format& f) { return f.name; }

template <class T>
struct Dev {
  T* p = nullptr;
  size_t n;
  explicit Dev(size_t n_) : n(n_) { EXPECT_EQ(hipMalloc(&p, n * sizeof(T)), hipSuccess); }
  Dev(const std::vector<T>& h) : Dev(h.size()) { EXPECT_EQ(hipMemcpy(p, h.data(), n * sizeof(T), hipMemcpyHostToDevice), hipSuccess); }
  ~Dev() { (void)hipFree(p); }
  std::vector<T> read() const {
    std::vector<T> h(n);
    EXPECT_EQ(hipMemcpy(h.data(), p, n * sizeof(T), hipMemcpyDeviceToHost), hipSuccess);
    return h;
  }
};

template <class T, int R, int C>
using gl8 = gl<T, 1, 1, R, C>;
template <int R, int C>
using glf = gl<float, 1, 1, R, C>;

template <class T = fp8e4m3>
__device__ T* f8(const uint8_t* p) { return reinterpret_cast<T*>(const_cast<uint8_t*>(p)); }

}  // namespace

// ---- conversion ----------------------------------------------------------------------------------------------------

constexpr int CM = 32, CN = 128;  // a multiple of both archs' fp8 row base tiles (16 x 32, 16 x 128)

// fp32 accumulator -> fp8: elementwise on store, and in registers to the row-layout operand (paired conversions).
template <class T>
__global__ void convert(const float* in, uint8_t* stored, uint8_t* operand, float* decoded) {
  rt_acc<CM, CN> acc;
  load(acc, glf<CM, CN>(const_cast<float*>(in), 1, 1, CM, CN), {});
  store(gl8<T, CM, CN>(f8<T>(stored), 1, 1, CM, CN), acc, {});
  rt<T, CM, CN, layout::row> op;
  acc_to_operand(op, acc);
  store(gl8<T, CM, CN>(f8<T>(operand), 1, 1, CM, CN), op, {});
  store(glf<CM, CN>(decoded, 1, 1, CM, CN), op, {});  // fp8 -> fp32 on the device
}

template <class T>
void check_convert() {
  const Format f = device_format<T>();
  // Random values over the whole range and past it, every code's exact value, the midpoints between neighbouring
  // codes (ties), values just off the midpoints, subnormals, zeros, infinities and NaN.
  std::vector<float> in;
  std::mt19937 rng(71);
  for (int c = 0; c < 256; ++c)
    if (!is_nan_code(uint8_t(c), f) && !is_inf_code(uint8_t(c), f)) in.push_back(decode(uint8_t(c), f));
  for (int c = 0; c < 0x7e; ++c) {
    const float lo = decode(uint8_t(c), f), hi = decode(uint8_t(c + 1), f);
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

  Dev<float> din(in), decoded(CM * CN);
  Dev<uint8_t> stored(CM * CN), operand(CM * CN);
  hipLaunchKernelGGL(convert<T>, dim3(1), dim3(64), 0, 0, din.p, stored.p, operand.p, decoded.p);
  HIP_OK(hipDeviceSynchronize());
  const auto s = stored.read(), o = operand.read();
  const auto d = decoded.read();
  int bad = 0;
  for (int i = 0; i < CM * CN; ++i) {
    const uint8_t want = encode_sat(in[i], f);
    const bool nan = is_nan_code(want, f);
    const bool ok_s = nan ? is_nan_code(s[i], f) : s[i] == want;
    const bool ok_o = nan ? is_nan_code(o[i], f) : o[i] == want;
    const float wd = decode(want, f);
    const bool ok_d = nan ? std::isnan(d[i]) : d[i] == wd && std::signbit(d[i]) == std::signbit(wd);
    if ((!ok_s || !ok_o || !ok_d) && bad++ < 8)
      ADD_FAILURE() << "x = " << in[i] << " (" << std::hexfloat << in[i] << std::defaultfloat << "): want code 0x" << std::hex
                    << int(want) << ", store gave 0x" << int(s[i]) << ", acc_to_operand 0x" << int(o[i]) << std::dec
                    << ", decoded " << d[i] << " want " << wd;
  }
  EXPECT_EQ(bad, 0) << bad << " of " << CM * CN << " conversions differ from the " << name_of(f) << " model";
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
  Dev<float> out(12);
  hipLaunchKernelGGL(format_probe, dim3(1), dim3(1), 0, 0, out.p);
  HIP_OK(hipDeviceSynchronize());
  const auto o = out.read();
  EXPECT_EQ(o[5], 57344.f);
  EXPECT_EQ(o[6], 57344.f);
  EXPECT_EQ(o[7], -57344.f);
  if (hktest::is_gfx950()) {
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

// ---- mma -------------------------------------------------------------------------------------------------------------

// An operand tile from global memory, or through a shared tile (Slot tells two shared operands of one type apart).
template <class RT, bool Shared, int Slot>
__device__ void load_operand(RT& r, const uint8_t* p) {
  using T = typename RT::dtype;
  const gl8<T, RT::rows, RT::cols> g(f8<T>(p), 1, 1, RT::rows, RT::cols);
  if constexpr (Shared) {
    __shared__ st<T, RT::rows, RT::cols> s;
    load<wave>(s, g, {});
    barrier();
    load(r, s);
  } else {
    load(r, g, {});
  }
}

// D = op(A) op(B) + C in the MFMA family S. A is stored M x K (row layout) or, when ColA, K x M (col layout: A^T);
// B is stored N x K (row layout: B^T) or, when ColB, K x N (col layout). Each comes from global or through shared
// (col layout from shared: ds_read_b64_tr_b8 on gfx950).
template <class TA, class TB, class S, int M, int N, int K, bool ColA, bool ColB, bool ShA, bool ShB>
__global__ void mma_fp8(const uint8_t* a, const uint8_t* b, const float* c, float* d) {
  rt<TA, ColA ? K : M, ColA ? M : K, ColA ? layout::col : layout::row, S> ra;
  rt<TB, ColB ? K : N, ColB ? N : K, ColB ? layout::col : layout::row, S> rb;
  load_operand<decltype(ra), ShA, 0>(ra, a);
  load_operand<decltype(rb), ShB, 1>(rb, b);
  rt_acc<M, N, S> acc;
  load(acc, glf<M, N>(const_cast<float*>(c), 1, 1, M, N), {});
  if constexpr (!ColA && !ColB) mma_ABt(acc, ra, rb, acc);
  else if constexpr (!ColA) mma_AB(acc, ra, rb, acc);
  else if constexpr (ColB) mma_AtB(acc, ra, rb, acc);
  else mma_AtBt(acc, ra, rb, acc);
  store(glf<M, N>(d, 1, 1, M, N), acc, {});
}

// Which operand path a case takes: (A col, B col, A shared, B shared).
struct Path {
  bool col_a, col_b, sh_a, sh_b;
};
constexpr Path ABt_global{false, false, false, false}, ABt_shared{false, false, true, true},
    AB_col_global{false, true, false, false}, AB_col_shared{false, true, false, true},
    AtB_global{true, true, false, false}, AtBt_shared{true, false, true, true};

template <class TA, class TB, class S, int M, int N, int K, Path P>
void check_mma(int max_exp) {
  const Format fa = device_format<TA>(), fb = device_format<TB>();
  const auto a = random_codes(M * K, 81, fa, max_exp), b = random_codes(N * K, 82, fb, max_exp);
  hktest::Buffer<float> c(M * N, 83, 4.f), d(M * N);
  Dev<uint8_t> da(a), db(b);
  const bool profiled = hktest::set_profiling(true);
  hipLaunchKernelGGL((mma_fp8<TA, TB, S, M, N, K, P.col_a, P.col_b, P.sh_a, P.sh_b>), dim3(1), dim3(64), 0, 0, da.p, db.p,
                     c.dev, d.dev);
  HIP_OK(hipDeviceSynchronize());
  if (profiled) hktest::set_profiling(false);
  // A's element (i, k): row-major M x K, or K x M when col_a; B's (k, j): row-major N x K, or K x N when col_b.
  auto aik = [&](int i, int k) { return decode(P.col_a ? a[k * M + i] : a[i * K + k], fa); };
  auto bkj = [&](int k, int j) { return decode(P.col_b ? b[k * N + j] : b[j * K + k], fb); };
  std::vector<float> want(M * N), tol(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = c.host[i * N + j], mag = std::fabs(s);
      for (int k = 0; k < K; ++k) {
        const double t = double(aik(i, k)) * bkj(k, j);  // exact: fp8 products fit fp32's mantissa
        s += t, mag += std::fabs(t);
      }
      want[i * N + j] = float(s);
      tol[i * N + j] = float((K + 8) * std::ldexp(1.0, -23) * mag);  // fp32 sums in the hardware's order
    }
  const auto got = d.read();
  int bad = 0;
  for (int i = 0; i < M * N; ++i)
    if (!(std::fabs(got[i] - want[i]) <= tol[i]) && bad++ < 5)
      ADD_FAILURE() << "D[" << i / N << "][" << i % N << "]: got " << got[i] << " want " << want[i] << " (tol " << tol[i] << ")";
  EXPECT_EQ(bad, 0) << bad << " of " << M * N << " differ (A " << name_of(fa) << ", B " << name_of(fb) << ", mfma"
                    << S::dim << ")";
  if (!profiled) return;
  // The family's own MFMA for this pair of formats, and no other; col-layout reads from shared transposing on gfx950.
  const bool g950 = hktest::is_gfx950();
  const bool a5 = TA::format == arch::fp8_format::e5m2, b5 = TB::format == arch::fp8_format::e5m2;
  const std::string want_mfma =
      g950 ? (S::dim == 16 ? "v_mfma_f32_16x16x128_f8f6f4" : "v_mfma_f32_32x32x64_f8f6f4")
           : std::string(S::dim == 16 ? "v_mfma_f32_16x16x32_" : "v_mfma_f32_32x32x16_") + (a5 ? "bf8_" : "fp8_") + (b5 ? "bf8" : "fp8");
  int ours = 0, other = 0;
  for (const auto& t : hktest::last_instructions())
    if (t.starts_with("v_mfma")) (t.starts_with(want_mfma) ? ours : other)++;
  EXPECT_GT(ours, 0) << "no " << want_mfma;
  EXPECT_EQ(other, 0) << "other MFMAs than " << want_mfma;
  if (P.col_b && P.sh_b) {
    const hktest::LdsStats s = hktest::last_lds("ds_read");
    std::string reads;
    for (auto& [m, cyc] : s.mnemonics) reads += (reads.empty() ? "" : ", ") + m + " (" + std::to_string(cyc) + " conflict cycles)";
    std::printf("[fp8 col load] %s mfma%d: %s\n", g950 ? "gfx950" : "gfx942", S::dim, reads.c_str());
    if (g950) EXPECT_TRUE(s.has("ds_read_b64_tr_b8")) << reads;
  }
}

using e4 = fp8e4m3;
using e5 = fp8e5m2;

// mfma16: K = 256 and 128 are multiples of both archs' fp8 K (32, 128).
TEST(Fp8, MmaABtFromGlobal) { check_mma<e4, e4, mfma16, 32, 32, 256, ABt_global>(4); }
TEST(Fp8, MmaABtFromGlobalFullRange) { check_mma<e4, e4, mfma16, 16, 48, 128, ABt_global>(8); }
TEST(Fp8, MmaABtThroughShared) { check_mma<e4, e4, mfma16, 32, 16, 256, ABt_shared>(4); }
TEST(Fp8, MmaABColFromGlobal) { check_mma<e4, e4, mfma16, 16, 32, 128, AB_col_global>(4); }
TEST(Fp8, MmaABColFromShared) { check_mma<e4, e4, mfma16, 32, 32, 128, AB_col_shared>(4); }
TEST(Fp8, MmaAtBFromGlobal) { check_mma<e4, e4, mfma16, 32, 16, 128, AtB_global>(4); }
TEST(Fp8, MmaAtBtThroughShared) { check_mma<e4, e4, mfma16, 16, 32, 128, AtBt_shared>(4); }

// mfma32 (v_mfma_f32_32x32x16_fp8_fp8 on gfx942, 32x32x64_f8f6f4 on gfx950): K multiples of 64.
TEST(Fp8Mma32, ABtFromGlobal) { check_mma<e4, e4, mfma32, 32, 64, 128, ABt_global>(4); }
TEST(Fp8Mma32, ABtFromGlobalFullRange) { check_mma<e4, e4, mfma32, 32, 32, 64, ABt_global>(8); }
TEST(Fp8Mma32, ABtThroughShared) { check_mma<e4, e4, mfma32, 64, 32, 128, ABt_shared>(4); }
TEST(Fp8Mma32, ABColFromGlobal) { check_mma<e4, e4, mfma32, 32, 32, 192, AB_col_global>(4); }
TEST(Fp8Mma32, ABColFromShared) { check_mma<e4, e4, mfma32, 32, 64, 128, AB_col_shared>(4); }
TEST(Fp8Mma32, AtBFromGlobal) { check_mma<e4, e4, mfma32, 32, 32, 128, AtB_global>(4); }
TEST(Fp8Mma32, AtBtThroughShared) { check_mma<e4, e4, mfma32, 64, 32, 64, AtBt_shared>(4); }

// Attention in fp8: P (an fp32 accumulator) quantised to fp8 as the A operand — in registers, or through a shared
// scratch tile — and V fp8 in shared memory, read in the col layout.
constexpr int PM = 32, PN = 128, PD = 32;
template <class TP, class TV, class S, bool Scratch>
__global__ void attention_pv_fp8(const float* p, const uint8_t* v, float* o) {
  __shared__ st<TV, PN, PD> sv;
  load<wave>(sv, gl8<TV, PN, PD>(f8<TV>(v), 1, 1, PN, PD), {});
  barrier();
  rt_acc<PM, PN, S> pacc;
  load(pacc, glf<PM, PN>(const_cast<float*>(p), 1, 1, PM, PN), {});
  rt<TP, PM, PN, layout::row, S> pa;
  if constexpr (!Scratch) {
    acc_to_operand(pa, pacc);
  } else {
    __shared__ st<TP, PM, PN> scratch;
    acc_to_operand(pa, pacc, scratch);
  }
  rt<TV, PN, PD, layout::col, S> vb;
  load(vb, sv);
  rt_acc<PM, PD, S> out;
  zero(out);
  mma_AB(out, pa, vb, out);
  store(glf<PM, PD>(o, 1, 1, PM, PD), out, {});
}

template <class TP, class TV, class S, bool Scratch = false>
void check_pv() {
  const Format fp = device_format<TP>(), fv = device_format<TV>();
  hktest::Buffer<float> p(PM * PN, 91, 1.f), o(PM * PD);
  const auto v = random_codes(PN * PD, 92, fv, 3);
  Dev<uint8_t> dv(v);
  hipLaunchKernelGGL((attention_pv_fp8<TP, TV, S, Scratch>), dim3(1), dim3(64), 0, 0, p.dev, dv.p, o.dev);
  HIP_OK(hipDeviceSynchronize());
  std::vector<float> want(PM * PD);
  for (int i = 0; i < PM; ++i)
    for (int j = 0; j < PD; ++j) {
      double s = 0;
      for (int k = 0; k < PN; ++k) s += double(decode(encode_sat(p.host[i * PN + k], fp), fp)) * decode(v[k * PD + j], fv);
      want[i * PD + j] = float(s);
    }
  hktest::expect_close(o.read(), want, 1e-4f, 1e-5f, "fp8 P V");
}

TEST(Fp8, AttentionPV) { check_pv<e4, e4, mfma16>(); }
TEST(Fp8Mma32, AttentionPVThroughScratch) { check_pv<e4, e4, mfma32, true>(); }
TEST(Fp8Mma32, AttentionPVInRegisters) { check_pv<e4, e4, mfma32>(); }

// e5m2 ("bf8": FNUZ e5m2 on gfx942, OCP e5m2 on gfx950) operands, alone and mixed with e4m3 (gfx942: the fp8_bf8 /
// bf8_fp8 opcodes; gfx950: cbsz / blgp of f8f6f4), both families.
TEST(Fp8E5m2, MmaABtFromGlobal) { check_mma<e5, e5, mfma16, 32, 32, 256, ABt_global>(4); }
TEST(Fp8E5m2, MmaABtFromGlobalFullRange) { check_mma<e5, e5, mfma16, 16, 48, 128, ABt_global>(15); }
TEST(Fp8E5m2, MmaABColFromShared) { check_mma<e5, e5, mfma16, 32, 32, 128, AB_col_shared>(4); }
TEST(Fp8E5m2, MmaAtBtThroughShared) { check_mma<e5, e5, mfma16, 16, 32, 128, AtBt_shared>(4); }
TEST(Fp8E5m2, Mma32ABtThroughShared) { check_mma<e5, e5, mfma32, 64, 32, 128, ABt_shared>(4); }
TEST(Fp8E5m2, Mma32ABColFromShared) { check_mma<e5, e5, mfma32, 32, 64, 128, AB_col_shared>(4); }
TEST(Fp8E5m2, Mma32AtBFromGlobal) { check_mma<e5, e5, mfma32, 32, 32, 128, AtB_global>(15); }
TEST(Fp8Mixed, E4m3TimesE5m2) { check_mma<e4, e5, mfma16, 32, 32, 256, ABt_global>(4); }
TEST(Fp8Mixed, E5m2TimesE4m3ColFromShared) { check_mma<e5, e4, mfma16, 32, 32, 128, AB_col_shared>(4); }
TEST(Fp8Mixed, Mma32E4m3TimesE5m2ThroughShared) { check_mma<e4, e5, mfma32, 64, 32, 128, ABt_shared>(4); }
TEST(Fp8Mixed, Mma32E5m2TimesE4m3) { check_mma<e5, e4, mfma32, 32, 32, 192, AB_col_global>(4); }
TEST(Fp8E5m2, AttentionPV) { check_pv<e5, e5, mfma16>(); }
TEST(Fp8E5m2, AttentionPVThroughScratch) { check_pv<e5, e5, mfma32, true>(); }
TEST(Fp8E5m2, AttentionPVInRegisters32) { check_pv<e5, e5, mfma32>(); }
TEST(Fp8Mixed, AttentionPVE4m3PTimesE5m2V) { check_pv<e4, e5, mfma16>(); }
