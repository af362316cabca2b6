// Instruction-level checks through ordinary HIP code: each device function lowers to a handful of SALU/VALU
// instructions (integer division expands to dozens), runs on vgpu for the arch under test, and is compared with an
// independent host computation over fixed-seed inputs that include edge values.
#include <hip/hip_runtime.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "hip/hip_check.h"

constexpr int kN = 1000;  // not a multiple of the block: the tail lanes run with a partial EXEC

// Each op is a device lambda-like functor applied to (a[i], b[i], c[i]).
template <class Op, class T, class R>
__global__ void apply(const T* a, const T* b, const T* c, R* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = Op{}(a[i], b[i], c[i]);
}

template <class Op, class T, class R>
std::vector<R> run_op(const std::vector<T>& a, const std::vector<T>& b, const std::vector<T>& c) {
  T *da, *db, *dc;
  R* dout;
  size_t bytes = a.size() * sizeof(T);
  EXPECT_EQ(hipMalloc(&da, bytes), hipSuccess);
  EXPECT_EQ(hipMalloc(&db, bytes), hipSuccess);
  EXPECT_EQ(hipMalloc(&dc, bytes), hipSuccess);
  EXPECT_EQ(hipMalloc(&dout, a.size() * sizeof(R)), hipSuccess);
  hipMemcpy(da, a.data(), bytes, hipMemcpyHostToDevice);
  hipMemcpy(db, b.data(), bytes, hipMemcpyHostToDevice);
  hipMemcpy(dc, c.data(), bytes, hipMemcpyHostToDevice);
  std::vector<R> out(a.size());
  hipLaunchKernelGGL((apply<Op, T, R>), dim3((a.size() + 255) / 256), dim3(256), 0, 0, da, db, dc, dout, int(a.size()));
  EXPECT_EQ(hipDeviceSynchronize(), hipSuccess);
  hipMemcpy(out.data(), dout, a.size() * sizeof(R), hipMemcpyDeviceToHost);
  hipFree(da), hipFree(db), hipFree(dc), hipFree(dout);
  return out;
}

std::vector<uint32_t> u32_inputs(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> v = {0, 1, 2, 3, 7, 31, 32, 33, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffffe, 0x10000, 0xffff};
  while (v.size() < kN) v.push_back(rng() >> (rng() % 32));
  return v;
}

std::vector<float> f32_inputs(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-100.f, 100.f);
  std::vector<float> v = {0.f, -0.f, 1.f, -1.f, 0.5f, 3.f, 1e-30f, -1e30f, 1e-40f, INFINITY, -INFINITY, NAN, 2.5f, -2.5f};
  while (v.size() < kN) v.push_back(rng() % 4 == 0 ? std::ldexp(u(rng), int(rng() % 60) - 30) : u(rng));
  return v;
}

std::vector<double> f64_inputs(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1000., 1000.);
  std::vector<double> v = {0., -0., 1., -1., 0.5, 3., 1e-300, -1e300, INFINITY, NAN, 2.5, -2.5};
  while (v.size() < kN) v.push_back(u(rng));
  return v;
}

template <class T>
bool same_bits(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(x) && std::isnan(y)) return true;
  }
  return std::memcmp(&x, &y, sizeof(T)) == 0;
}

// Runs Op on device and compares every element with host(a, b, c), bit for bit.
template <class Op, class T, class R, class Host>
void check_exact(const char* name, const std::vector<T>& a, const std::vector<T>& b, const std::vector<T>& c, Host host) {
  auto got = run_op<Op, T, R>(a, b, c);
  int bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    R want = host(a[i], b[i], c[i]);
    if (!same_bits(got[i], want) && bad++ < 5)
      ADD_FAILURE() << name << " element " << i << ": a=" << a[i] << " b=" << b[i] << " c=" << c[i] << " got "
                    << got[i] << " want " << want;
  }
  EXPECT_EQ(bad, 0) << name;
}

#define OP(Name, T, R, expr) \
  struct Name {              \
    __host__ __device__ R operator()(T a, T b, T c) const { (void)a; (void)b; (void)c; return (expr); } \
  };

// Integer arithmetic and bit operations.
OP(MulLo, uint32_t, uint32_t, a * b)
OP(MulHi, uint32_t, uint32_t, uint32_t((uint64_t(a) * b) >> 32))
OP(MulWide, uint32_t, uint64_t, uint64_t(a) * b + c)
OP(DivU, uint32_t, uint32_t, b ? a / b : 0u)
OP(RemU, uint32_t, uint32_t, b ? a % b : 0u)
OP(DivS, uint32_t, int32_t, (b && !(a == 0x80000000u && b == 0xffffffffu)) ? int32_t(a) / int32_t(b) : 0)
OP(Div64, uint32_t, uint64_t, (uint64_t(a) << 20 | b) / (uint64_t(c) + 1))
OP(Popc, uint32_t, uint32_t, uint32_t(__builtin_popcount(a)))
OP(Clz, uint32_t, uint32_t, a ? uint32_t(__builtin_clz(a)) : 32u)
OP(Ctz, uint32_t, uint32_t, a ? uint32_t(__builtin_ctz(a)) : 32u)
OP(Shifts, uint32_t, uint32_t, (a << (b & 31)) ^ (a >> (c & 31)) ^ uint32_t(int32_t(a) >> (b & 31)))
OP(Rotate, uint32_t, uint32_t, (a << (b & 31)) | (a >> ((32 - (b & 31)) & 31)))
OP(MinMax, uint32_t, uint32_t, uint32_t(std::min(int32_t(a), int32_t(b))) + std::max(a, c))
OP(Select, uint32_t, uint32_t, a > b ? c : (a == c ? b : a ^ b))
OP(Bytes, uint32_t, uint32_t, ((a & 0xff) << 24) | ((b >> 8 & 0xff) << 8) | (c >> 24))
OP(Add64, uint32_t, uint64_t, (uint64_t(a) << 32 | b) + (uint64_t(c) << 16) - uint64_t(b))
OP(Sext, uint32_t, int32_t, int32_t(int8_t(a)) + int32_t(int16_t(b)))

// f32 arithmetic that IEEE specifies exactly (HIP's division and sqrt are correctly rounded by default).
OP(AddF, float, float, a + b)
OP(MulF, float, float, a * b)
OP(FmaF, float, float, std::fma(a, b, c))
OP(DivF, float, float, a / b)
OP(SqrtF, float, float, std::sqrt(std::fabs(a)))
OP(MinMaxF, float, float, std::fmin(a, b) + std::fmax(b, c))
OP(RoundF, float, float, std::floor(a) + std::trunc(b) * 2.f + std::rint(c) * 4.f)
OP(CvtF, float, int32_t, std::isfinite(a) && std::fabs(a) < 2e9f ? int32_t(a) : 0)
OP(CvtUF, uint32_t, float, float(a) + float(int32_t(b)))
OP(HalfRound, float, float, float(_Float16(a)) + float(_Float16(b)))
// f16 division, correctly rounded (clang: an f32 reciprocal, then v_div_fixup_f16 for zeros, infinities and NaNs).
OP(DivH, float, float, float(_Float16(a) / _Float16(b)))

// f64 arithmetic.
OP(AddD, double, double, a + b - c)
OP(DivD, double, double, a / b)
OP(SqrtD, double, double, std::sqrt(std::fabs(a)))
OP(FmaD, double, double, std::fma(a, b, c))
OP(CvtD, double, float, float(a) + float(b))
// An f32 product rounded to f16: gfx942 fuses it into v_fma_mixlo_f16 with f32 sources (op_sel_hi omitted).
OP(ScaleToHalf, float, float, float(_Float16(a * b)))

TEST(AluOps, Integer) {
  auto a = u32_inputs(1), b = u32_inputs(2), c = u32_inputs(3);
  check_exact<MulLo, uint32_t, uint32_t>("mul_lo", a, b, c, MulLo{});
  check_exact<MulHi, uint32_t, uint32_t>("mul_hi", a, b, c, MulHi{});
  check_exact<MulWide, uint32_t, uint64_t>("mul_wide", a, b, c, MulWide{});
  check_exact<DivU, uint32_t, uint32_t>("div_u32", a, b, c, DivU{});
  check_exact<RemU, uint32_t, uint32_t>("rem_u32", a, b, c, RemU{});
  check_exact<DivS, uint32_t, int32_t>("div_i32", a, b, c, DivS{});
  check_exact<Div64, uint32_t, uint64_t>("div_u64", a, b, c, Div64{});
  check_exact<Popc, uint32_t, uint32_t>("popcount", a, b, c, Popc{});
  check_exact<Clz, uint32_t, uint32_t>("clz", a, b, c, Clz{});
  check_exact<Ctz, uint32_t, uint32_t>("ctz", a, b, c, Ctz{});
  check_exact<Shifts, uint32_t, uint32_t>("shifts", a, b, c, Shifts{});
  check_exact<Rotate, uint32_t, uint32_t>("rotate", a, b, c, Rotate{});
  check_exact<MinMax, uint32_t, uint32_t>("minmax", a, b, c, MinMax{});
  check_exact<Select, uint32_t, uint32_t>("select", a, b, c, Select{});
  check_exact<Bytes, uint32_t, uint32_t>("bytes", a, b, c, Bytes{});
  check_exact<Add64, uint32_t, uint64_t>("add64", a, b, c, Add64{});
  check_exact<Sext, uint32_t, int32_t>("sext", a, b, c, Sext{});
  check_exact<CvtUF, uint32_t, float>("cvt_u32_f32", a, b, c, CvtUF{});
}

TEST(AluOps, Float32) {
  auto a = f32_inputs(4), b = f32_inputs(5), c = f32_inputs(6);
  check_exact<AddF, float, float>("add_f32", a, b, c, AddF{});
  check_exact<MulF, float, float>("mul_f32", a, b, c, MulF{});
  check_exact<FmaF, float, float>("fma_f32", a, b, c, FmaF{});
  check_exact<DivF, float, float>("div_f32", a, b, c, DivF{});
  check_exact<SqrtF, float, float>("sqrt_f32", a, b, c, SqrtF{});
  check_exact<MinMaxF, float, float>("minmax_f32", a, b, c, MinMaxF{});
  check_exact<RoundF, float, float>("round_f32", a, b, c, RoundF{});
  check_exact<CvtF, float, int32_t>("cvt_f32_i32", a, b, c, CvtF{});
  check_exact<HalfRound, float, float>("f32_f16_round_trip", a, b, c, HalfRound{});
  check_exact<DivH, float, float>("div_f16", a, b, c, DivH{});
  check_exact<ScaleToHalf, float, float>("f32_mul_to_f16", a, b, c, ScaleToHalf{});
}

TEST(AluOps, Float64) {
  auto a = f64_inputs(7), b = f64_inputs(8), c = f64_inputs(9);
  check_exact<AddD, double, double>("add_sub_f64", a, b, c, AddD{});
  check_exact<DivD, double, double>("div_f64", a, b, c, DivD{});
  check_exact<SqrtD, double, double>("sqrt_f64", a, b, c, SqrtD{});
  check_exact<FmaD, double, double>("fma_f64", a, b, c, FmaD{});
  check_exact<CvtD, double, float>("cvt_f64_f32", a, b, c, CvtD{});
}

// Transcendentals: within a few ULP of the host's correctly rounded result.
OP(Exp2F, float, float, exp2f(a * 0.25f))
OP(Log2F, float, float, log2f(std::fabs(a) + 1e-3f))
OP(RsqrtF, float, float, rsqrtf(std::fabs(a) + 1.f))
OP(ExpF, float, float, expf(a * 0.5f))

TEST(AluOps, Transcendental) {
  auto a = f32_inputs(10);
  auto within = [&](const char* name, std::vector<float> got, auto host, float ulps) {
    int bad = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      float want = float(host(double(a[i])));
      if (std::isnan(want) && std::isnan(got[i])) continue;
      if (std::isinf(want) && got[i] == want) continue;
      float tol = ulps * std::fabs(std::nextafter(want, INFINITY) - want);
      if (!(std::fabs(got[i] - want) <= tol) && bad++ < 5)
        ADD_FAILURE() << name << " a=" << a[i] << " got " << got[i] << " want " << want;
    }
    EXPECT_EQ(bad, 0) << name;
  };
  within("exp2", run_op<Exp2F, float, float>(a, a, a), [](double x) { return std::exp2(float(x * 0.25)); }, 2);
  within("log2", run_op<Log2F, float, float>(a, a, a), [](double x) { return std::log2(double(std::fabs(float(x)) + 1e-3f)); }, 2);
  within("rsqrt", run_op<RsqrtF, float, float>(a, a, a), [](double x) { return 1.0 / std::sqrt(double(std::fabs(float(x)) + 1.f)); }, 2);
  within("exp", run_op<ExpF, float, float>(a, a, a), [](double x) { return std::exp(double(float(x * 0.5))); }, 3);
}

// Cross-lane: warp shuffles (ds_bpermute / DPP), ballots and reductions inside a wave.
__global__ void shuffles(const uint32_t* in, uint32_t* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t x = in[i];
  uint32_t s = x;
  for (int o = 32; o > 0; o >>= 1) s += __shfl_xor(s, o);  // full-wave sum
  uint64_t ballot = __ballot(x & 1);
  out[4 * i + 0] = s;
  out[4 * i + 1] = __shfl(x, (threadIdx.x * 7) & 63);
  out[4 * i + 2] = __shfl_down(x, 3);
  out[4 * i + 3] = uint32_t(__popcll(ballot)) + (uint32_t(ballot >> (threadIdx.x & 63)) & 1) * 1000;
}

TEST(AluOps, CrossLane) {
  const int n = 256;
  auto in = u32_inputs(11);
  in.resize(n);
  uint32_t *din, *dout;
  HIP_ASSERT(hipMalloc(&din, n * 4));
  HIP_ASSERT(hipMalloc(&dout, n * 16));
  HIP_ASSERT(hipMemcpy(din, in.data(), n * 4, hipMemcpyHostToDevice));
  hipLaunchKernelGGL(shuffles, dim3(n / 128), dim3(128), 0, 0, din, dout);
  HIP_ASSERT(hipDeviceSynchronize());
  std::vector<uint32_t> out(4 * n);
  HIP_ASSERT(hipMemcpy(out.data(), dout, n * 16, hipMemcpyDeviceToHost));
  for (int w = 0; w < n / 64; ++w) {
    uint32_t sum = 0;
    uint64_t ballot = 0;
    for (int l = 0; l < 64; ++l) sum += in[64 * w + l], ballot |= uint64_t(in[64 * w + l] & 1) << l;
    for (int l = 0; l < 64; ++l) {
      int i = 64 * w + l;
      EXPECT_EQ(out[4 * i + 0], sum) << "lane " << i;
      EXPECT_EQ(out[4 * i + 1], in[64 * w + ((l * 7) & 63)]) << "lane " << i;
      EXPECT_EQ(out[4 * i + 2], l + 3 < 64 ? in[i + 3] : in[i]) << "lane " << i;
      EXPECT_EQ(out[4 * i + 3], uint32_t(__builtin_popcountll(ballot)) + ((ballot >> l) & 1) * 1000) << "lane " << i;
    }
  }
  hipFree(din), hipFree(dout);
}

// The 16-bit three-operand min/max/median (VOP3, every arch here), by exact inline asm: the low 16 bits of each result
// against the host's (the high half of a 16-bit VOP3 result is not asserted). Signed forms read the halves as int16.
__global__ void min_max3_16(const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint32_t r[6];
  asm volatile("v_min3_u16 %0, %1, %2, %3" : "=v"(r[0]) : "v"(a[i]), "v"(b[i]), "v"(c[i]));
  asm volatile("v_max3_u16 %0, %1, %2, %3" : "=v"(r[1]) : "v"(a[i]), "v"(b[i]), "v"(c[i]));
  asm volatile("v_med3_u16 %0, %1, %2, %3" : "=v"(r[2]) : "v"(a[i]), "v"(b[i]), "v"(c[i]));
  asm volatile("v_min3_i16 %0, %1, %2, %3" : "=v"(r[3]) : "v"(a[i]), "v"(b[i]), "v"(c[i]));
  asm volatile("v_max3_i16 %0, %1, %2, %3" : "=v"(r[4]) : "v"(a[i]), "v"(b[i]), "v"(c[i]));
  asm volatile("v_med3_i16 %0, %1, %2, %3" : "=v"(r[5]) : "v"(a[i]), "v"(b[i]), "v"(c[i]));
  for (int k = 0; k < 6; ++k) out[6 * i + k] = r[k];
}

TEST(AluOps, MinMaxMedian3Of16Bits) {
  const auto a = u32_inputs(21), b = u32_inputs(22), c = u32_inputs(23);
  const int n = int(a.size());
  uint32_t *da, *db, *dc, *dout;
  HIP_ASSERT(hipMalloc(&da, n * 4));
  HIP_ASSERT(hipMalloc(&db, n * 4));
  HIP_ASSERT(hipMalloc(&dc, n * 4));
  HIP_ASSERT(hipMalloc(&dout, n * 24));
  HIP_ASSERT(hipMemcpy(da, a.data(), n * 4, hipMemcpyHostToDevice));
  HIP_ASSERT(hipMemcpy(db, b.data(), n * 4, hipMemcpyHostToDevice));
  HIP_ASSERT(hipMemcpy(dc, c.data(), n * 4, hipMemcpyHostToDevice));
  hipLaunchKernelGGL(min_max3_16, dim3((n + 255) / 256), dim3(256), 0, 0, da, db, dc, dout, n);
  HIP_ASSERT(hipDeviceSynchronize());
  std::vector<uint32_t> out(6 * n);
  HIP_ASSERT(hipMemcpy(out.data(), dout, n * 24, hipMemcpyDeviceToHost));
  auto median = [](int x, int y, int z) { return std::max(std::min(x, y), std::min(std::max(x, y), z)); };
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    const int ua = uint16_t(a[i]), ub = uint16_t(b[i]), uc = uint16_t(c[i]);
    const int sa = int16_t(a[i]), sb = int16_t(b[i]), sc = int16_t(c[i]);
    const int want[6] = {std::min({ua, ub, uc}), std::max({ua, ub, uc}), median(ua, ub, uc),
                         std::min({sa, sb, sc}), std::max({sa, sb, sc}), median(sa, sb, sc)};
    for (int k = 0; k < 6; ++k)
      if (uint16_t(out[6 * i + k]) != uint16_t(want[k]) && bad++ < 5)
        ADD_FAILURE() << "form " << k << " of " << a[i] << ", " << b[i] << ", " << c[i] << ": got "
                      << uint16_t(out[6 * i + k]) << " want " << uint16_t(want[k]);
  }
  EXPECT_EQ(bad, 0);
  hipFree(da), hipFree(db), hipFree(dc), hipFree(dout);
}

// Integer add/sub with the VOP3 clamp bit: saturating instead of wrapping (clang's __builtin_elementwise_sub_sat and
// rocPRIM's merge-path searches compile to `v_sub_u32_e64 ... clamp`).
__global__ void saturating(const uint32_t* a, const uint32_t* b, uint32_t* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint32_t r[7];
  asm volatile("v_add_u32_e64 %0, %1, %2 clamp" : "=v"(r[0]) : "v"(a[i]), "v"(b[i]));
  asm volatile("v_sub_u32_e64 %0, %1, %2 clamp" : "=v"(r[1]) : "v"(a[i]), "v"(b[i]));
  asm volatile("v_subrev_u32_e64 %0, %1, %2 clamp" : "=v"(r[2]) : "v"(a[i]), "v"(b[i]));
  asm volatile("v_add_i32 %0, %1, %2 clamp" : "=v"(r[3]) : "v"(a[i]), "v"(b[i]));
  asm volatile("v_sub_i32 %0, %1, %2 clamp" : "=v"(r[4]) : "v"(a[i]), "v"(b[i]));
  asm volatile("v_sub_u32_e64 %0, %1, %2" : "=v"(r[5]) : "v"(a[i]), "v"(b[i]));  // no clamp: wraps
  asm volatile("v_sub_u16_e64 %0, %1, %2 clamp" : "=v"(r[6]) : "v"(a[i]), "v"(b[i]));
  for (int k = 0; k < 7; ++k) out[7 * i + k] = r[k];
}

TEST(AluOps, IntegerClampSaturates) {
  const auto a = u32_inputs(31), b = u32_inputs(32);
  const int n = int(a.size());
  uint32_t *da, *db, *dout;
  HIP_ASSERT(hipMalloc(&da, n * 4));
  HIP_ASSERT(hipMalloc(&db, n * 4));
  HIP_ASSERT(hipMalloc(&dout, n * 28));
  HIP_ASSERT(hipMemcpy(da, a.data(), n * 4, hipMemcpyHostToDevice));
  HIP_ASSERT(hipMemcpy(db, b.data(), n * 4, hipMemcpyHostToDevice));
  hipLaunchKernelGGL(saturating, dim3((n + 255) / 256), dim3(256), 0, 0, da, db, dout, n);
  HIP_ASSERT(hipDeviceSynchronize());
  std::vector<uint32_t> out(7 * n);
  HIP_ASSERT(hipMemcpy(out.data(), dout, n * 28, hipMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    const uint64_t x = a[i], y = b[i];
    const int64_t sx = int32_t(a[i]), sy = int32_t(b[i]);
    const uint32_t want[7] = {uint32_t(std::min<uint64_t>(x + y, 0xffffffffu)), uint32_t(x >= y ? x - y : 0),
                              uint32_t(y >= x ? y - x : 0),
                              uint32_t(int32_t(std::clamp<int64_t>(sx + sy, INT32_MIN, INT32_MAX))),
                              uint32_t(int32_t(std::clamp<int64_t>(sx - sy, INT32_MIN, INT32_MAX))),
                              a[i] - b[i],
                              uint32_t(uint16_t(a[i]) >= uint16_t(b[i]) ? uint16_t(a[i]) - uint16_t(b[i]) : 0)};
    for (int k = 0; k < 7; ++k) {
      const uint32_t got = k == 6 ? uint16_t(out[7 * i + k]) : out[7 * i + k];  // 16-bit: the low half
      if (got != want[k] && bad++ < 5)
        ADD_FAILURE() << "form " << k << " of " << a[i] << ", " << b[i] << ": got " << got << " want " << want[k];
    }
  }
  EXPECT_EQ(bad, 0);
  hipFree(da), hipFree(db), hipFree(dout);
}

// VGPR indexing (the ISA guide's S_SET_GPR_IDX_ON/OFF): while it is on, the VALU operands the mask selects (SRC0,
// SRC1, SRC2, DST) are offset by M0[7:0], the index s_set_gpr_idx_on writes there (and the mask at M0[15:12]).
// Unoptimized (-O0) code reads and writes a vector's element at a run-time index this way, e.g. `s_set_gpr_idx_on s2,
// gpr_idx(SRC0)`, `v_mov_b32 v0, v0`, `s_set_gpr_idx_off`. v40..v43 stand for the vector.
__global__ void gpr_indexed(const uint32_t* in, uint32_t* out, int idx) {
  const int l = threadIdx.x;
  uint32_t r[8], m0;
  asm volatile(
      "v_mov_b32 v40, %8\n v_mov_b32 v41, %9\n v_mov_b32 v42, %10\n v_mov_b32 v43, %11\n"
      "s_set_gpr_idx_on %12, gpr_idx(SRC0)\n v_mov_b32 %0, v40\n s_set_gpr_idx_off\n"      // read element idx
      "v_mov_b32 %1, v40\n"                                                               // indexing off again
      "s_set_gpr_idx_on %12, gpr_idx(SRC1)\n v_add_u32 %2, %8, v40\n s_set_gpr_idx_off\n"  // in[0] + element idx
      "s_mov_b32 %7, m0\n"
      "s_set_gpr_idx_on %12, gpr_idx(DST)\n v_mov_b32 v40, %13\n s_set_gpr_idx_off\n"      // write element idx
      "v_mov_b32 %3, v40\n v_mov_b32 %4, v41\n v_mov_b32 %5, v42\n v_mov_b32 %6, v43"
      : "=&v"(r[0]), "=&v"(r[1]), "=&v"(r[2]), "=&v"(r[3]), "=&v"(r[4]), "=&v"(r[5]), "=&v"(r[6]), "=&s"(m0)
      : "v"(in[4 * l]), "v"(in[4 * l + 1]), "v"(in[4 * l + 2]), "v"(in[4 * l + 3]), "s"(idx), "v"(~in[4 * l])
      : "v40", "v41", "v42", "v43", "m0");
  r[7] = m0 & 0xf0ff;
  for (int k = 0; k < 8; ++k) out[8 * l + k] = r[k];
}

TEST(AluOps, VgprIndexingMode) {
  const auto in = u32_inputs(41);
  ASSERT_GE(in.size(), 256u);
  uint32_t *din, *dout;
  HIP_ASSERT(hipMalloc(&din, 256 * 4));
  HIP_ASSERT(hipMalloc(&dout, 64 * 32));
  HIP_ASSERT(hipMemcpy(din, in.data(), 256 * 4, hipMemcpyHostToDevice));
  for (int idx = 0; idx < 4; ++idx) {
    hipLaunchKernelGGL(gpr_indexed, dim3(1), dim3(64), 0, 0, din, dout, idx);
    HIP_ASSERT(hipDeviceSynchronize());
    std::vector<uint32_t> out(64 * 8);
    HIP_ASSERT(hipMemcpy(out.data(), dout, 64 * 32, hipMemcpyDeviceToHost));
    int bad = 0;
    for (int l = 0; l < 64; ++l) {
      const uint32_t* v = &in[4 * l];
      uint32_t after[4] = {v[0], v[1], v[2], v[3]};
      after[idx] = ~v[0];
      const uint32_t want[8] = {v[idx], v[0], v[0] + v[idx], after[0], after[1], after[2], after[3],
                                uint32_t(idx) | 2u << 12};
      for (int k = 0; k < 8; ++k)
        if (out[8 * l + k] != want[k] && bad++ < 5)
          ADD_FAILURE() << "index " << idx << " lane " << l << " value " << k << ": got " << out[8 * l + k]
                        << " want " << want[k];
    }
    EXPECT_EQ(bad, 0) << "index " << idx;
  }
  hipFree(din), hipFree(dout);
}
