// Texture objects over linear memory. Where the device has image support (hipDeviceAttributeImageSupport), objects
// of several channel formats are read the way the gfx9 family's tex1Dfetch is compiled (the object's first four
// dwords loaded into SGPRs as a buffer resource, then buffer_load_format_* idxen: the instructions clang emits for
// rocprim::texture_cache_iterator on gfx90a), and each element is compared with a host conversion; out-of-range
// indices read 0. Where it has none (gfx942, gfx950, as HIP's __HIP_NO_IMAGE_SUPPORT), creating one fails with
// hipErrorNotSupported, as HIP does.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "hip_check.h"

namespace {

using u32 = uint32_t;
typedef int v4i __attribute__((ext_vector_type(4)));
typedef u32 v2u __attribute__((ext_vector_type(2)));
typedef u32 v4u __attribute__((ext_vector_type(4)));

__device__ inline v4i texture_resource(hipTextureObject_t t) {
  v4i r;
  asm volatile("s_load_dwordx4 %0, %1, 0x0\n\ts_waitcnt lgkmcnt(0)" : "=s"(r) : "s"(t) : "memory");
  return r;
}

__global__ void fetch_xyzw(hipTextureObject_t t, const u32* index, u32* out, u32 n) {
  const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
  const v4i r = texture_resource(t);
  if (i >= n) return;
  v4u d;
  asm volatile("buffer_load_format_xyzw %0, %1, %2, 0 idxen\n\ts_waitcnt vmcnt(0)"
               : "=v"(d) : "v"(index[i]), "s"(r) : "memory");
  for (int c = 0; c < 4; ++c) out[4 * i + c] = d[c];
}

constexpr u32 kCount = 200;

float to_float(u32 bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
u32 from_float(float f) {
  u32 b;
  std::memcpy(&b, &f, 4);
  return b;
}

struct Layout {
  const char* name;
  hipChannelFormatDesc desc;
  hipTextureReadMode mode;
};

// The component a fetch returns for channel raw bits, as HIP documents the read modes.
u32 expected(const Layout& l, u32 raw, int bits) {
  const u32 mask = bits == 32 ? ~0u : (1u << bits) - 1, u = raw & mask;
  const int32_t s = bits == 32 ? int32_t(u) : int32_t(u << (32 - bits)) >> (32 - bits);
  switch (l.desc.f) {
    case hipChannelFormatKindFloat: return u;  // 32-bit floats only below
    case hipChannelFormatKindSigned:
      return l.mode == hipReadModeNormalizedFloat ? from_float(std::max(float(s) / float(mask >> 1), -1.0f))
                                                  : u32(s);
    default: return l.mode == hipReadModeNormalizedFloat ? from_float(float(u) / float(mask)) : u;
  }
}

void check_layout(const Layout& l) {
  SCOPED_TRACE(l.name);
  const int channels = (l.desc.x > 0) + (l.desc.y > 0) + (l.desc.z > 0) + (l.desc.w > 0);
  const int bits = l.desc.x;
  const size_t element = size_t(channels) * bits / 8;
  std::mt19937 rng(channels * 100 + bits);
  std::vector<uint8_t> data(kCount * element);
  for (auto& b : data) b = uint8_t(rng());
  if (l.desc.f == hipChannelFormatKindFloat)
    for (size_t i = 0; i < kCount * channels; ++i) {
      const float f = float(int(rng() % 2001) - 1000) / 8.0f;
      std::memcpy(data.data() + 4 * i, &f, 4);
    }
  DeviceBuffer<uint8_t> memory(data.size());
  HIP_ASSERT(hipMemcpy(memory.ptr, data.data(), data.size(), hipMemcpyHostToDevice));

  hipResourceDesc res{};
  res.resType = hipResourceTypeLinear;
  res.res.linear.devPtr = memory.ptr;
  res.res.linear.desc = l.desc;
  res.res.linear.sizeInBytes = data.size();
  hipTextureDesc tex{};
  tex.readMode = l.mode;
  tex.filterMode = hipFilterModePoint;
  hipTextureObject_t object = 0;
  HIP_ASSERT(hipCreateTextureObject(&object, &res, &tex, nullptr));
  hipResourceDesc back{};
  HIP_ASSERT(hipGetTextureObjectResourceDesc(&back, object));
  EXPECT_EQ(back.res.linear.devPtr, memory.ptr);
  EXPECT_EQ(back.res.linear.sizeInBytes, data.size());

  const u32 n = kCount + 10;  // the last ten are out of range
  std::vector<u32> index(n);
  for (u32 i = 0; i < n; ++i) index[i] = i < kCount ? (i * 37) % kCount : kCount + i;
  DeviceBuffer<u32> dindex(n), dout(4 * n);
  HIP_ASSERT(hipMemcpy(dindex.ptr, index.data(), n * 4, hipMemcpyHostToDevice));
  hipLaunchKernelGGL(fetch_xyzw, dim3((n + 63) / 64), dim3(64), 0, 0, object, dindex.ptr, dout.ptr, n);
  HIP_ASSERT(hipGetLastError());
  std::vector<u32> out(4 * n);
  HIP_ASSERT(hipMemcpy(out.data(), dout.ptr, out.size() * 4, hipMemcpyDeviceToHost));

  const bool float_result = l.desc.f == hipChannelFormatKindFloat || l.mode == hipReadModeNormalizedFloat;
  for (u32 i = 0; i < n; ++i)
    for (int c = 0; c < 4; ++c) {
      u32 want = 0;
      if (index[i] < kCount) {
        if (c < channels) {
          u32 raw = 0;
          std::memcpy(&raw, data.data() + index[i] * element + c * bits / 8, bits / 8);
          want = expected(l, raw, bits);
        } else if (c == 3) {
          want = float_result ? from_float(1.0f) : 1u;  // a missing w reads one
        }
      }
      ASSERT_EQ(out[4 * i + c], want) << "element " << index[i] << " component " << c << " (as float "
                                      << to_float(out[4 * i + c]) << ")";
    }
  HIP_ASSERT(hipDestroyTextureObject(object));
}

}  // namespace

TEST(Texture, LinearObjectsFollowImageSupport) {
  int image_support = -1;
  HIP_ASSERT(hipDeviceGetAttribute(&image_support, hipDeviceAttributeImageSupport, 0));
  ASSERT_TRUE(image_support == 0 || image_support == 1);
  DeviceBuffer<float> memory(16);
  hipResourceDesc res{};
  res.resType = hipResourceTypeLinear;
  res.res.linear.devPtr = memory.ptr;
  res.res.linear.desc = hipCreateChannelDesc<float>();
  res.res.linear.sizeInBytes = 16 * sizeof(float);
  hipTextureDesc tex{};
  hipTextureObject_t object = 0;
  const hipError_t created = hipCreateTextureObject(&object, &res, &tex, nullptr);
  if (!image_support) {
    EXPECT_EQ(created, hipErrorNotSupported);
    EXPECT_EQ(hipGetLastError(), hipErrorNotSupported);
    return;
  }
  HIP_ASSERT(created);
  HIP_ASSERT(hipDestroyTextureObject(object));

  const Layout layouts[] = {
      {"float", hipCreateChannelDesc<float>(), hipReadModeElementType},
      {"float4", hipCreateChannelDesc<float4>(), hipReadModeElementType},
      {"int2", hipCreateChannelDesc<int2>(), hipReadModeElementType},
      {"uint", hipCreateChannelDesc<unsigned>(), hipReadModeElementType},
      {"short", hipCreateChannelDesc<short>(), hipReadModeElementType},
      {"uchar4", hipCreateChannelDesc<uchar4>(), hipReadModeElementType},
      {"uchar4 normalized", hipCreateChannelDesc<uchar4>(), hipReadModeNormalizedFloat},
      {"short2 normalized", hipCreateChannelDesc<short2>(), hipReadModeNormalizedFloat},
      {"char", hipCreateChannelDesc<signed char>(), hipReadModeElementType},
  };
  for (const Layout& l : layouts) {
    check_layout(l);
    if (HasFatalFailure()) return;
  }

  // Refused: no memory, a 3-channel 8-bit format, resource kinds other than linear.
  res.res.linear.devPtr = nullptr;
  EXPECT_EQ(hipCreateTextureObject(&object, &res, &tex, nullptr), hipErrorInvalidValue);
  res.res.linear.devPtr = memory.ptr;
  res.res.linear.desc = hipCreateChannelDesc(8, 8, 8, 0, hipChannelFormatKindUnsigned);
  EXPECT_EQ(hipCreateTextureObject(&object, &res, &tex, nullptr), hipErrorInvalidValue);
  res.resType = hipResourceTypeArray;
  EXPECT_EQ(hipCreateTextureObject(&object, &res, &tex, nullptr), hipErrorNotSupported);
  (void)hipGetLastError();
}
