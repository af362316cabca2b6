// fp8 e4m3 tiles: saturating conversion from fp32 tiles, and mma with fp32 accumulation, against a host model of
// each arch's format written from the format definitions: FNUZ e4m3 on gfx942 (bias 8, max 240, 0x80 the only NaN,
// no -0, no inf), OCP e4m3fn on gfx950 (bias 7, max 448, S.1111.111 NaN, no inf).
#include <cstdio>

#include "hk/hk.h"
#include "hk_test_util.h"

using namespace hk;

namespace {

struct Format {
  bool fnuz;
  int bias;
  float max;
};

Format device_format() { return hktest::is_gfx950() ? Format{false, 7, 448.f} : Format{true, 8, 240.f}; }

bool is_nan_code(uint8_t b, Format f) { return f.fnuz ? b == 0x80 : (b & 0x7f) == 0x7f; }

float decode(uint8_t b, Format f) {
  if (is_nan_code(b, f)) return NAN;
  const int e = b >> 3 & 15, m = b & 7;
  const float mag = e == 0 ? std::ldexp(float(m), 1 - f.bias - 3) : std::ldexp(1.f + m / 8.f, e - f.bias);
  return b & 0x80 ? -mag : mag;
}

// Round to nearest (ties to the even code), saturating to +-max; NaN to the format's NaN. +-inf saturate too.
uint8_t encode_sat(float x, Format f) {
  if (std::isnan(x)) return f.fnuz ? 0x80 : 0x7f;
  const bool neg = std::signbit(x);
  const double a = std::min(std::fabs(double(x)), double(f.max));
  int best = 0;
  double best_d = INFINITY;
  for (int c = 0; c < 0x80; ++c) {  // positive codes in increasing magnitude
    if (is_nan_code(uint8_t(c), f)) continue;
    const double d = std::fabs(double(decode(uint8_t(c), f)) - a);
    if (d < best_d || (d == best_d && (c & 1) == 0)) best = c, best_d = d;
  }
  if (!neg) return uint8_t(best);
  return f.fnuz && best == 0 ? 0x00 : uint8_t(best | 0x80);  // FNUZ has no -0
}

// Random finite codes of magnitude at most 2^max_exp.
std::vector<uint8_t> random_codes(size_t n, uint32_t seed, Format f, int max_exp) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) {
    do b = uint8_t(rng());
    while (is_nan_code(b, f) || std::fabs(decode(b, f)) > std::ldexp(1.f, max_exp));
  }
  return v;
}

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

template <int R, int C>
using gl8 = gl<fp8e4m3, 1, 1, R, C>;
template <int R, int C>
using glf = gl<float, 1, 1, R, C>;

__device__ fp8e4m3* f8(uint8_t* p) { return reinterpret_cast<fp8e4m3*>(p); }

}  // namespace

// ---- conversion ----------------------------------------------------------------------------------------------------

constexpr int CM = 32, CN = 128;  // a multiple of both archs' fp8 row base tiles (16 x 32, 16 x 128)

// fp32 accumulator -> fp8: elementwise on store, and in registers to the row-layout operand (paired conversions).
__global__ void convert(const float* in, uint8_t* stored, uint8_t* operand, float* decoded) {
  rt_acc<CM, CN> acc;
  load(acc, glf<CM, CN>(const_cast<float*>(in), 1, 1, CM, CN), {});
  store(gl8<CM, CN>(f8(stored), 1, 1, CM, CN), acc, {});
  rt<fp8e4m3, CM, CN, layout::row> op;
  acc_to_operand(op, acc);
  store(gl8<CM, CN>(f8(operand), 1, 1, CM, CN), op, {});
  store(glf<CM, CN>(decoded, 1, 1, CM, CN), op, {});  // fp8 -> fp32 on the device
}

TEST(Fp8, ConvertSaturatingRoundToNearestEven) {
  const Format f = device_format();
  // Random values over the whole range and past it, every code's exact value, the midpoints between neighbouring
  // codes (ties), values just off the midpoints, subnormals, zeros, infinities and NaN.
  std::vector<float> in;
  std::mt19937 rng(71);
  for (int c = 0; c < 256; ++c)
    if (!is_nan_code(uint8_t(c), f)) in.push_back(decode(uint8_t(c), f));
  for (int c = 0; c < 0x7e; ++c) {
    const float lo = decode(uint8_t(c), f), hi = decode(uint8_t(c + 1), f);
    if (std::isnan(hi)) continue;
    const float mid = (lo + hi) / 2;
    in.push_back(mid), in.push_back(-mid);
    in.push_back(std::nextafter(mid, 0.f)), in.push_back(-std::nextafter(mid, INFINITY));
  }
  for (float x : {0.f, -0.f, INFINITY, -INFINITY, NAN, -NAN, 1e-30f, -1e-30f, 1e30f, -1e30f, 240.f, 241.f, 247.9f, 248.f,
                  448.f, 449.f, 463.9f, 464.f, 480.f, -500.f, 1e4f})
    in.push_back(x);
  std::uniform_real_distribution<float> wide(-700.f, 700.f), narrow(-0.05f, 0.05f);
  while (in.size() < size_t(CM * CN)) in.push_back(in.size() % 2 ? wide(rng) : narrow(rng));
  ASSERT_EQ(in.size(), size_t(CM * CN)) << "too many fixed cases for one tile";

  Dev<float> din(in), decoded(CM * CN);
  Dev<uint8_t> stored(CM * CN), operand(CM * CN);
  hipLaunchKernelGGL(convert, dim3(1), dim3(64), 0, 0, din.p, stored.p, operand.p, decoded.p);
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
  EXPECT_EQ(bad, 0) << bad << " of " << CM * CN << " conversions differ from the " << (f.fnuz ? "FNUZ" : "OCP") << " model";
}

// The largest finite value and the arch's format, as the device sees them.
__global__ void format_probe(float* out) {
  out[0] = arch::current::fp8_max;
  out[1] = static_cast<float>(fp8e4m3(1e9f));
  out[2] = static_cast<float>(fp8e4m3::from_bits(0x80));  // NaN in FNUZ, -0 in OCP
  out[3] = static_cast<float>(fp8e4m3::from_bits(0x7f));  // 240 in FNUZ, NaN in OCP
  out[4] = static_cast<float>(fp8e4m3::from_bits(0x01));  // the smallest subnormal: 2^-10 (FNUZ), 2^-9 (OCP)
}

TEST(Fp8, ArchFormat) {
  Dev<float> out(5);
  hipLaunchKernelGGL(format_probe, dim3(1), dim3(1), 0, 0, out.p);
  HIP_OK(hipDeviceSynchronize());
  const auto o = out.read();
  if (hktest::is_gfx950()) {
    EXPECT_EQ(o[0], 448.f);
    EXPECT_EQ(o[1], 448.f);
    EXPECT_TRUE(o[2] == 0.f && std::signbit(o[2])) << o[2];
    EXPECT_TRUE(std::isnan(o[3])) << o[3];
    EXPECT_EQ(o[4], std::ldexp(1.f, -9));
  } else {
    EXPECT_EQ(o[0], 240.f);
    EXPECT_EQ(o[1], 240.f);
    EXPECT_TRUE(std::isnan(o[2])) << o[2];
    EXPECT_EQ(o[3], 240.f);
    EXPECT_EQ(o[4], std::ldexp(1.f, -10));
  }
}

// ---- mma -------------------------------------------------------------------------------------------------------------

// D = A B^T + C with A (M x K) and B (N x K) read from global (Variant 0) or through shared tiles (1); D = A B with B
// (K x N) read in the col layout from global (2) or from a row-major shared tile (3: ds_read_b64_tr_b8 on gfx950).
template <int M, int N, int K, int Variant>
__global__ void mma_fp8(const uint8_t* a, const uint8_t* b, const float* c, float* d) {
  rt<fp8e4m3, M, K, layout::row> ra;
  rt_acc<M, N> acc;
  load(acc, glf<M, N>(const_cast<float*>(c), 1, 1, M, N), {});
  const gl8<M, K> ga(f8(const_cast<uint8_t*>(a)), 1, 1, M, K);
  if constexpr (Variant == 0) {
    rt<fp8e4m3, N, K, layout::row> rb;
    load(ra, ga, {});
    load(rb, gl8<N, K>(f8(const_cast<uint8_t*>(b)), 1, 1, N, K), {});
    mma_ABt(acc, ra, rb, acc);
  } else if constexpr (Variant == 1) {
    __shared__ st<fp8e4m3, M, K> sa;
    __shared__ st<fp8e4m3, N, K> sb;
    load<wave>(sa, ga, {});
    load<wave>(sb, gl8<N, K>(f8(const_cast<uint8_t*>(b)), 1, 1, N, K), {});
    barrier();
    rt<fp8e4m3, N, K, layout::row> rb;
    load(ra, sa);
    load(rb, sb);
    mma_ABt(acc, ra, rb, acc);
  } else if constexpr (Variant == 2) {
    rt<fp8e4m3, K, N, layout::col> rb;
    load(ra, ga, {});
    load(rb, gl8<K, N>(f8(const_cast<uint8_t*>(b)), 1, 1, K, N), {});
    mma_AB(acc, ra, rb, acc);
  } else {
    __shared__ st<fp8e4m3, K, N> sb;
    load<wave>(sb, gl8<K, N>(f8(const_cast<uint8_t*>(b)), 1, 1, K, N), {});
    barrier();
    rt<fp8e4m3, K, N, layout::col> rb;
    load(ra, ga, {});
    load(rb, sb);
    mma_AB(acc, ra, rb, acc);
  }
  store(glf<M, N>(d, 1, 1, M, N), acc, {});
}

template <int M, int N, int K, int Variant>
void check_mma(int max_exp) {
  const Format f = device_format();
  const auto a = random_codes(M * K, 81, f, max_exp), b = random_codes(N * K, 82, f, max_exp);
  hktest::Buffer<float> c(M * N, 83, 4.f), d(M * N);
  Dev<uint8_t> da(a), db(b);
  const bool profiled = Variant == 3 && hktest::set_profiling(true);
  hipLaunchKernelGGL((mma_fp8<M, N, K, Variant>), dim3(1), dim3(64), 0, 0, da.p, db.p, c.dev, d.dev);
  HIP_OK(hipDeviceSynchronize());
  if (profiled) hktest::set_profiling(false);
  // B's element (k, j): row-major N x K for the A B^T variants, K x N for A B.
  auto bkj = [&](int k, int j) { return decode(Variant < 2 ? b[j * K + k] : b[k * N + j], f); };
  std::vector<float> want(M * N), tol(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = c.host[i * N + j], mag = std::fabs(s);
      for (int k = 0; k < K; ++k) {
        const double t = double(decode(a[i * K + k], f)) * bkj(k, j);
        s += t, mag += std::fabs(t);
      }
      want[i * N + j] = float(s);
      tol[i * N + j] = float((K + 8) * std::ldexp(1.0, -23) * mag);
    }
  const auto got = d.read();
  int bad = 0;
  for (int i = 0; i < M * N; ++i)
    if (!(std::fabs(got[i] - want[i]) <= tol[i]) && bad++ < 5)
      ADD_FAILURE() << "D[" << i / N << "][" << i % N << "]: got " << got[i] << " want " << want[i] << " (tol " << tol[i] << ")";
  EXPECT_EQ(bad, 0) << bad << " of " << M * N << " differ (" << (f.fnuz ? "FNUZ" : "OCP") << " e4m3)";
  if (profiled) {
    const hktest::LdsStats s = hktest::last_lds("ds_read");
    std::string reads;
    for (auto& [m, cyc] : s.mnemonics) reads += (reads.empty() ? "" : ", ") + m + " (" + std::to_string(cyc) + " conflict cycles)";
    std::printf("[fp8 col load] %s: %s\n", hktest::is_gfx950() ? "gfx950" : "gfx942", reads.c_str());
    if (hktest::is_gfx950()) {
      EXPECT_TRUE(s.has("ds_read_b64_tr_b8")) << reads;
    }
  }
}

// K = 256 is a multiple of both archs' fp8 K (32, 128).
TEST(Fp8, MmaABtFromGlobal) { check_mma<32, 32, 256, 0>(4); }
TEST(Fp8, MmaABtFromGlobalFullRange) { check_mma<16, 48, 128, 0>(8); }
TEST(Fp8, MmaABtThroughShared) { check_mma<32, 16, 256, 1>(4); }
TEST(Fp8, MmaABColFromGlobal) { check_mma<16, 32, 128, 2>(4); }
TEST(Fp8, MmaABColFromShared) { check_mma<32, 32, 128, 3>(4); }

// Attention in fp8: P (an fp32 accumulator) quantised to fp8 in registers as the A operand, V fp8 in shared memory.
constexpr int PM = 32, PN = 128, PD = 32;
__global__ void attention_pv_fp8(const float* p, const uint8_t* v, float* o) {
  __shared__ st<fp8e4m3, PN, PD> sv;
  load<wave>(sv, gl8<PN, PD>(f8(const_cast<uint8_t*>(v)), 1, 1, PN, PD), {});
  barrier();
  rt_acc<PM, PN> pacc;
  load(pacc, glf<PM, PN>(const_cast<float*>(p), 1, 1, PM, PN), {});
  rt<fp8e4m3, PM, PN, layout::row> pa;
  acc_to_operand(pa, pacc);
  rt<fp8e4m3, PN, PD, layout::col> vb;
  load(vb, sv);
  rt_acc<PM, PD> out;
  zero(out);
  mma_AB(out, pa, vb, out);
  store(glf<PM, PD>(o, 1, 1, PM, PD), out, {});
}

TEST(Fp8, AttentionPV) {
  const Format f = device_format();
  hktest::Buffer<float> p(PM * PN, 91, 1.f), o(PM * PD);
  const auto v = random_codes(PN * PD, 92, f, 3);
  Dev<uint8_t> dv(v);
  hipLaunchKernelGGL(attention_pv_fp8, dim3(1), dim3(64), 0, 0, p.dev, dv.p, o.dev);
  HIP_OK(hipDeviceSynchronize());
  std::vector<float> want(PM * PD);
  for (int i = 0; i < PM; ++i)
    for (int j = 0; j < PD; ++j) {
      double s = 0;
      for (int k = 0; k < PN; ++k) s += double(decode(encode_sat(p.host[i * PN + k], f), f)) * decode(v[k * PD + j], f);
      want[i * PD + j] = float(s);
    }
  hktest::expect_close(o.read(), want, 1e-4f, 1e-5f, "fp8 P V");
}
