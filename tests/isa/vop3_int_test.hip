// Integer VOP3 forms that AMD's own library code relies on (found by ./hk suites): the clamp bit of integer add and
// subtract, which saturates instead of wrapping (rocPRIM's merge-path search subtracts with clamp to stop at 0), and the
// three-operand 16-bit min/max/median. One inline-asm instruction per case, checked against a host model over
// fixed-seed inputs with the edge values.
#include <hip/hip_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace {

constexpr int kBlock = 256;
constexpr int kN = 1300;  // a partial last block

#define HK_CASE(NAME, ASM)                                                                                 \
  __global__ void NAME(const unsigned* a, const unsigned* b, const unsigned* c, unsigned* out, int n) {    \
    const int i = blockIdx.x * blockDim.x + threadIdx.x;                                                   \
    if (i >= n) return;                                                                                    \
    unsigned r;                                                                                            \
    asm volatile(ASM : "=v"(r) : "v"(a[i]), "v"(b[i]), "v"(c[i]));                                        \
    out[i] = r;                                                                                            \
  }

HK_CASE(add_u32_clamp, "v_add_u32_e64 %0, %1, %2 clamp")
HK_CASE(sub_u32_clamp, "v_sub_u32_e64 %0, %1, %2 clamp")
HK_CASE(subrev_u32_clamp, "v_subrev_u32_e64 %0, %1, %2 clamp")
HK_CASE(sub_u32_wrap, "v_sub_u32_e64 %0, %1, %2")
HK_CASE(add_i32_clamp, "v_add_i32 %0, %1, %2 clamp")
HK_CASE(sub_i32_clamp, "v_sub_i32 %0, %1, %2 clamp")
HK_CASE(add_u16_clamp, "v_add_u16_e64 %0, %1, %2 clamp")
HK_CASE(sub_u16_clamp, "v_sub_u16_e64 %0, %1, %2 clamp")
HK_CASE(add_i16_clamp, "v_add_i16 %0, %1, %2 clamp")
HK_CASE(sub_i16_clamp, "v_sub_i16 %0, %1, %2 clamp")
HK_CASE(max3_u16, "v_max3_u16 %0, %1, %2, %3")
HK_CASE(min3_u16, "v_min3_u16 %0, %1, %2, %3")
HK_CASE(med3_u16, "v_med3_u16 %0, %1, %2, %3")
HK_CASE(max3_i16, "v_max3_i16 %0, %1, %2, %3")
HK_CASE(min3_i16, "v_min3_i16 %0, %1, %2, %3")
HK_CASE(med3_i16, "v_med3_i16 %0, %1, %2, %3")
HK_CASE(max3_f16, "v_max3_f16 %0, %1, %2, %3")
HK_CASE(min3_f16, "v_min3_f16 %0, %1, %2, %3")
HK_CASE(med3_f16, "v_med3_f16 %0, %1, %2, %3")

using Kernel = void (*)(const unsigned*, const unsigned*, const unsigned*, unsigned*, int);

std::vector<unsigned> inputs(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned> v = {0, 1, 2, 0x7fff, 0x8000, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xffffffff,
                             0xfffffffe, 0x80000001, 0x7ffe, 0x8001};
  while (v.size() < kN) v.push_back(rng() >> (rng() % 32));
  return v;
}

// f16 bit patterns of finite values only: the NaN rules of the three-operand forms are not what these cases check.
std::vector<unsigned> f16_inputs(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned> v = {0x0000, 0x8000, 0x3c00, 0xbc00, 0x7bff, 0xfbff, 0x0001, 0x8001, 0x7c00, 0xfc00};
  while (v.size() < kN) {
    const unsigned h = rng() & 0xffff;
    if ((h & 0x7c00) != 0x7c00) v.push_back(h | (rng() & 0xffff0000));  // random high halves must be ignored
  }
  return v;
}

std::vector<unsigned> run(Kernel k, const std::vector<unsigned>& a, const std::vector<unsigned>& b,
                          const std::vector<unsigned>& c) {
  unsigned *da, *db, *dc, *dout;
  const size_t bytes = a.size() * sizeof(unsigned);
  EXPECT_EQ(hipMalloc(&da, bytes), hipSuccess);
  EXPECT_EQ(hipMalloc(&db, bytes), hipSuccess);
  EXPECT_EQ(hipMalloc(&dc, bytes), hipSuccess);
  EXPECT_EQ(hipMalloc(&dout, bytes), hipSuccess);
  EXPECT_EQ(hipMemcpy(da, a.data(), bytes, hipMemcpyHostToDevice), hipSuccess);
  EXPECT_EQ(hipMemcpy(db, b.data(), bytes, hipMemcpyHostToDevice), hipSuccess);
  EXPECT_EQ(hipMemcpy(dc, c.data(), bytes, hipMemcpyHostToDevice), hipSuccess);
  hipLaunchKernelGGL(k, dim3((a.size() + kBlock - 1) / kBlock), dim3(kBlock), 0, 0, da, db, dc, dout, int(a.size()));
  EXPECT_EQ(hipDeviceSynchronize(), hipSuccess);
  std::vector<unsigned> out(a.size());
  EXPECT_EQ(hipMemcpy(out.data(), dout, bytes, hipMemcpyDeviceToHost), hipSuccess);
  hipFree(da), hipFree(db), hipFree(dc), hipFree(dout);
  return out;
}

// Compares the low `bits` of every result with the model (16-bit results: what the high half holds is not checked).
void check(const char* name, Kernel k, int bits, const std::function<unsigned(unsigned, unsigned, unsigned)>& model,
           bool f16 = false) {
  const auto a = f16 ? f16_inputs(1) : inputs(1), b = f16 ? f16_inputs(2) : inputs(2);
  const auto c = f16 ? f16_inputs(3) : inputs(3);
  const auto got = run(k, a, b, c);
  const unsigned mask = bits == 32 ? ~0u : (1u << bits) - 1;
  int bad = 0;
  for (size_t i = 0; i < a.size() && bad < 5; ++i) {
    const unsigned want = model(a[i], b[i], c[i]) & mask;
    if ((got[i] & mask) != want) {
      ++bad;
      ADD_FAILURE() << name << " element " << i << ": a=0x" << std::hex << a[i] << " b=0x" << b[i] << " c=0x" << c[i]
                    << " got 0x" << (got[i] & mask) << ", expected 0x" << want;
    }
  }
}

template <class T>
unsigned saturate(int64_t x) {
  return unsigned(T(std::clamp<int64_t>(x, std::numeric_limits<T>::min(), std::numeric_limits<T>::max())));
}
int64_t s32(unsigned x) { return int32_t(x); }
int64_t s16(unsigned x) { return int16_t(uint16_t(x)); }
int64_t u16(unsigned x) { return uint16_t(x); }
float h(unsigned x) {
  _Float16 v;
  const uint16_t bits = uint16_t(x);
  std::memcpy(&v, &bits, 2);
  return float(v);
}
// The f16 operand whose value is the result (min/max/median of finite values are exact); -0 orders below +0.
unsigned pick_f16(unsigned a, unsigned b, unsigned c, int rank) {
  unsigned v[3] = {a & 0xffff, b & 0xffff, c & 0xffff};
  std::stable_sort(v, v + 3, [](unsigned x, unsigned y) {
    return h(x) < h(y) || (h(x) == h(y) && (x & 0x8000) && !(y & 0x8000));
  });
  return v[rank];
}

}  // namespace

TEST(Vop3Int, ClampSaturatesAddAndSub32) {
  check("v_add_u32 clamp", add_u32_clamp, 32, [](unsigned a, unsigned b, unsigned) { return saturate<uint32_t>(int64_t(a) + b); });
  check("v_sub_u32 clamp", sub_u32_clamp, 32, [](unsigned a, unsigned b, unsigned) { return saturate<uint32_t>(int64_t(a) - b); });
  check("v_subrev_u32 clamp", subrev_u32_clamp, 32, [](unsigned a, unsigned b, unsigned) { return saturate<uint32_t>(int64_t(b) - a); });
  check("v_sub_u32", sub_u32_wrap, 32, [](unsigned a, unsigned b, unsigned) { return a - b; });
  check("v_add_i32 clamp", add_i32_clamp, 32, [](unsigned a, unsigned b, unsigned) { return saturate<int32_t>(s32(a) + s32(b)); });
  check("v_sub_i32 clamp", sub_i32_clamp, 32, [](unsigned a, unsigned b, unsigned) { return saturate<int32_t>(s32(a) - s32(b)); });
}

TEST(Vop3Int, ClampSaturatesAddAndSub16) {
  check("v_add_u16 clamp", add_u16_clamp, 16, [](unsigned a, unsigned b, unsigned) { return saturate<uint16_t>(u16(a) + u16(b)); });
  check("v_sub_u16 clamp", sub_u16_clamp, 16, [](unsigned a, unsigned b, unsigned) { return saturate<uint16_t>(u16(a) - u16(b)); });
  check("v_add_i16 clamp", add_i16_clamp, 16, [](unsigned a, unsigned b, unsigned) { return saturate<int16_t>(s16(a) + s16(b)); });
  check("v_sub_i16 clamp", sub_i16_clamp, 16, [](unsigned a, unsigned b, unsigned) { return saturate<int16_t>(s16(a) - s16(b)); });
}

TEST(Vop3Int, ThreeOperandMinMaxMedian16) {
  auto med = [](int64_t a, int64_t b, int64_t c) { return std::max(std::min(a, b), std::min(std::max(a, b), c)); };
  check("v_max3_u16", max3_u16, 16, [](unsigned a, unsigned b, unsigned c) { return unsigned(std::max({u16(a), u16(b), u16(c)})); });
  check("v_min3_u16", min3_u16, 16, [](unsigned a, unsigned b, unsigned c) { return unsigned(std::min({u16(a), u16(b), u16(c)})); });
  check("v_med3_u16", med3_u16, 16, [&](unsigned a, unsigned b, unsigned c) { return unsigned(med(u16(a), u16(b), u16(c))); });
  check("v_max3_i16", max3_i16, 16, [](unsigned a, unsigned b, unsigned c) { return unsigned(std::max({s16(a), s16(b), s16(c)})); });
  check("v_min3_i16", min3_i16, 16, [](unsigned a, unsigned b, unsigned c) { return unsigned(std::min({s16(a), s16(b), s16(c)})); });
  check("v_med3_i16", med3_i16, 16, [&](unsigned a, unsigned b, unsigned c) { return unsigned(med(s16(a), s16(b), s16(c))); });
  check("v_max3_f16", max3_f16, 16, [](unsigned a, unsigned b, unsigned c) { return pick_f16(a, b, c, 2); }, true);
  check("v_min3_f16", min3_f16, 16, [](unsigned a, unsigned b, unsigned c) { return pick_f16(a, b, c, 0); }, true);
  check("v_med3_f16", med3_f16, 16, [](unsigned a, unsigned b, unsigned c) { return pick_f16(a, b, c, 1); }, true);
}
