// buffer_load_format_{x,xy,xyz,xyzw} with idxen, the instruction HIP's texture fetches on linear memory compile to on
// the gfx9 family: every plain data format (1-4 channels of 8, 16 or 32 bits) under every number format it allows,
// dst_sel choices, and out-of-range elements. Each lane's result is compared with a host model of the conversion
// written from the ISA guides' format tables.
#include <hip/hip_runtime.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hip/hip_check.h"

using u32 = uint32_t;
typedef int v4i __attribute__((ext_vector_type(4)));
typedef u32 v2u __attribute__((ext_vector_type(2)));
typedef u32 v3u __attribute__((ext_vector_type(3)));
typedef u32 v4u __attribute__((ext_vector_type(4)));

constexpr int kLanes = 64;

struct Args {
  u32 rsrc[4];
  const u32* index;
  u32* out;  // 4 dwords per lane
};

__device__ inline v4i rsrc(const Args& a) {
  return v4i{int(a.rsrc[0]), int(a.rsrc[1]), int(a.rsrc[2]), int(a.rsrc[3])};
}

// The destination starts as a canary so that components the instruction does not write are seen unchanged.
#define FORMAT_KERNEL(NAME, INSN, VT, STORE)                                                                  \
  __global__ void NAME(const Args a) {                                                                       \
    const int l = threadIdx.x;                                                                               \
    VT d;                                                                                                    \
    for (int i = 0; i < int(sizeof(VT) / 4); ++i) d[i] = 0xCAFE0000u + i;                                   \
    asm volatile(INSN " %0, %1, %2, 0 idxen\n\ts_waitcnt vmcnt(0)" : "+v"(d) : "v"(a.index[l]), "s"(rsrc(a)) \
                 : "memory");                                                                                \
    STORE                                                                                                    \
  }
__global__ void load_x(const Args a) {
  const int l = threadIdx.x;
  u32 d = 0xCAFE0000u;
  asm volatile("buffer_load_format_x %0, %1, %2, 0 idxen\n\ts_waitcnt vmcnt(0)"
               : "+v"(d) : "v"(a.index[l]), "s"(rsrc(a)) : "memory");
  a.out[4 * l] = d;
}
FORMAT_KERNEL(load_xy, "buffer_load_format_xy", v2u, for (int i = 0; i < 2; ++i) a.out[4 * l + i] = d[i];)
FORMAT_KERNEL(load_xyz, "buffer_load_format_xyz", v3u, for (int i = 0; i < 3; ++i) a.out[4 * l + i] = d[i];)
FORMAT_KERNEL(load_xyzw, "buffer_load_format_xyzw", v4u, for (int i = 0; i < 4; ++i) a.out[4 * l + i] = d[i];)

namespace {

struct Format {
  const char* name;
  u32 data_format, channels, bits;
};
constexpr Format kFormats[] = {
    {"8", 1, 1, 8},        {"16", 2, 1, 16},          {"8_8", 3, 2, 8},          {"32", 4, 1, 32},
    {"16_16", 5, 2, 16},   {"8_8_8_8", 10, 4, 8},     {"32_32", 11, 2, 32},      {"16_16_16_16", 12, 4, 16},
    {"32_32_32", 13, 3, 32}, {"32_32_32_32", 14, 4, 32},
};
enum Num : u32 { unorm = 0, snorm = 1, uscaled = 2, sscaled = 3, uint_ = 4, sint_ = 5, float_ = 7 };
constexpr u32 kNums[] = {unorm, snorm, uscaled, sscaled, uint_, sint_, float_};

// 8-bit channels have no float form; 32-bit channels only the uint, sint and float ones.
bool allowed(const Format& f, u32 num) {
  if (f.bits == 8) return num != float_;
  if (f.bits == 32) return num == uint_ || num == sint_ || num == float_;
  return true;
}

float half_to_float(uint16_t h) {
  const u32 sign = h >> 15, exp = h >> 10 & 31, man = h & 1023;
  float v = exp == 0 ? std::ldexp(float(man), -24) : exp == 31 ? (man ? NAN : INFINITY)
                                                             : std::ldexp(float(man | 1024), int(exp) - 25);
  return sign ? -v : v;
}

u32 bits_of(float f) { return std::bit_cast<u32>(f); }

// The ISA's conversion of one channel.
u32 convert(u32 raw, u32 bits, u32 num) {
  const u32 mask = bits == 32 ? ~0u : (1u << bits) - 1, u = raw & mask;
  const int64_t s = bits == 32 ? int64_t(int32_t(u)) : (u >> (bits - 1) ? int64_t(u) - (int64_t(1) << bits) : int64_t(u));
  switch (num) {
    case unorm: return bits_of(float(u) / float(mask));
    case snorm: return bits_of(std::max(float(s) / float(mask >> 1), -1.0f));
    case uscaled: return bits_of(float(u));
    case sscaled: return bits_of(float(s));
    case uint_: return u;
    case sint_: return u32(int32_t(s));
    default: return bits == 16 ? bits_of(half_to_float(uint16_t(u))) : u;
  }
}

struct Case {
  Format f;
  u32 num;
  u32 dst_sel;  // 12 bits
  u32 records;
};

void run_case(const Case& c, int components) {
  SCOPED_TRACE(std::string("format ") + c.f.name + " num " + std::to_string(c.num) + " dst_sel " +
               std::to_string(c.dst_sel) + " components " + std::to_string(components));
  const u32 element = c.f.channels * c.f.bits / 8;
  const u32 count = 80;  // elements in memory; num_records may be smaller
  std::mt19937 rng(c.f.data_format * 131 + c.num * 7 + components);
  std::vector<uint8_t> mem(count * element);
  for (auto& b : mem) b = uint8_t(rng());
  if (c.num == float_ && c.f.bits == 16)  // keep halves finite: NaN payloads are not what this checks
    for (size_t i = 1; i < mem.size(); i += 2) mem[i] &= 0x7b;
  std::vector<u32> index(kLanes);
  for (int l = 0; l < kLanes; ++l) index[l] = l % 7 == 3 ? c.records + u32(l) : u32(rng() % count);

  uint8_t* dmem;
  u32 *dindex, *dout;
  HIP_ASSERT(hipMalloc(&dmem, mem.size()));
  HIP_ASSERT(hipMalloc(&dindex, kLanes * 4));
  HIP_ASSERT(hipMalloc(&dout, kLanes * 16));
  HIP_ASSERT(hipMemcpy(dmem, mem.data(), mem.size(), hipMemcpyHostToDevice));
  HIP_ASSERT(hipMemcpy(dindex, index.data(), kLanes * 4, hipMemcpyHostToDevice));
  HIP_ASSERT(hipMemset(dout, 0, kLanes * 16));

  Args a{};
  const uint64_t base = reinterpret_cast<uint64_t>(dmem);
  a.rsrc[0] = u32(base);
  a.rsrc[1] = u32(base >> 32) | element << 16;
  a.rsrc[2] = c.records;
  a.rsrc[3] = c.dst_sel | c.num << 12 | c.f.data_format << 15;
  a.index = dindex;
  a.out = dout;
  void (*kernels[])(const Args) = {load_x, load_xy, load_xyz, load_xyzw};
  hipLaunchKernelGGL(kernels[components - 1], dim3(1), dim3(kLanes), 0, 0, a);
  HIP_ASSERT(hipGetLastError());
  HIP_ASSERT(hipDeviceSynchronize());
  std::vector<u32> out(kLanes * 4);
  HIP_ASSERT(hipMemcpy(out.data(), dout, out.size() * 4, hipMemcpyDeviceToHost));

  const bool float_one = c.num != uint_ && c.num != sint_;
  for (int l = 0; l < kLanes; ++l) {
    const bool in_range = index[l] < c.records;
    u32 channel[4] = {0, 0, 0, in_range ? (float_one ? 0x3f800000u : 1u) : 0u};
    if (in_range)
      for (u32 k = 0; k < c.f.channels; ++k) {
        u32 raw = 0;
        std::memcpy(&raw, mem.data() + index[l] * element + k * c.f.bits / 8, c.f.bits / 8);
        channel[k] = convert(raw, c.f.bits, c.num);
      }
    for (int i = 0; i < 4; ++i) {
      const u32 sel = c.dst_sel >> (3 * i) & 7;
      const u32 want = i >= components ? 0u
                       : sel >= 4      ? channel[sel - 4]
                       : sel == 1 && in_range ? (float_one ? 0x3f800000u : 1u)
                                              : 0u;
      ASSERT_EQ(out[4 * l + i], want) << "lane " << l << " component " << i << " index " << index[l];
    }
  }
  HIP_ASSERT(hipFree(dmem));
  HIP_ASSERT(hipFree(dindex));
  HIP_ASSERT(hipFree(dout));
}

constexpr u32 sel(u32 x, u32 y, u32 z, u32 w) { return x | y << 3 | z << 6 | w << 9; }

}  // namespace

TEST(BufferLoadFormat, EveryPlainFormatAndNumberFormat) {
  for (const Format& f : kFormats)
    for (u32 num : kNums) {
      if (!allowed(f, num)) continue;
      // Identity selection with the defaults HIP's texture objects use for missing channels (0, and 1 for w).
      u32 s = 0;
      for (u32 i = 0; i < 4; ++i) s |= (i < f.channels ? 4 + i : i == 3 ? 1u : 0u) << (3 * i);
      run_case({f, num, s, 61}, 4);
      if (testing::Test::HasFatalFailure()) return;
    }
}

TEST(BufferLoadFormat, NarrowFormsAndSwizzles) {
  const Format rgba8 = kFormats[5], rg32 = kFormats[6];
  for (int components = 1; components <= 4; ++components) {
    run_case({rgba8, unorm, sel(7, 6, 5, 4), 50}, components);  // reversed
    run_case({rg32, sint_, sel(5, 1, 0, 4), 79}, components);     // y, one, zero, x
    run_case({rgba8, uint_, sel(4, 4, 4, 4), 80}, components);    // broadcast
  }
}

TEST(BufferLoadFormat, UnmodelledFormatsFault) {
  u32* dindex;
  u32* dout;
  HIP_ASSERT(hipMalloc(&dindex, kLanes * 4));
  HIP_ASSERT(hipMalloc(&dout, kLanes * 16));
  HIP_ASSERT(hipMemset(dindex, 0, kLanes * 4));
  Args a{};
  const uint64_t base = reinterpret_cast<uint64_t>(dout);
  a.rsrc[0] = u32(base);
  a.rsrc[1] = u32(base >> 32) | 4 << 16;
  a.rsrc[2] = 4;
  a.rsrc[3] = sel(4, 5, 6, 7) | 7 << 12 | 6 << 15;  // 10_11_11 float: packed, not modelled
  a.index = dindex;
  a.out = dout;
  hipLaunchKernelGGL(load_x, dim3(1), dim3(kLanes), 0, 0, a);
  EXPECT_EQ(hipGetLastError(), hipErrorLaunchFailure);
  (void)hipDeviceSynchronize();
  (void)hipGetLastError();
  HIP_ASSERT(hipFree(dindex));
  HIP_ASSERT(hipFree(dout));
}
