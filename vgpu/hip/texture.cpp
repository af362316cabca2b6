// Texture objects over linear memory. A hipTextureObject_t points at device memory holding the image descriptor
// (12 dwords) and the sampler (8 dwords), the layout HIP's device headers read. For a linear resource the device code
// of the gfx9 family (tex1Dfetch -> __ockl_image_load_1Db) loads the first four dwords as a buffer resource (V#) and
// reads with buffer_load_format_* idxen: the V# carries the element stride, the element count and the data and number
// formats that convert an element to the 32-bit components the instruction returns (vgpu/src/isa/exec_mubuf.cpp).
// Archs whose HIP has no image support (gfx94x, gfx950: __HIP_NO_IMAGE_SUPPORT) refuse texture objects, as HIP does.
#include <algorithm>
#include <cstring>
#include <map>

#include "runtime.h"

namespace vgpu::hiprt {
namespace {

// V# dword 3 fields (gfx9 family).
constexpr uint32_t kSelZero = 0, kSelOne = 1, kSelX = 4;
enum DataFormat : uint32_t {
  kData8 = 1, kData16 = 2, kData8_8 = 3, kData32 = 4, kData16_16 = 5, kData8_8_8_8 = 10, kData32_32 = 11,
  kData16_16_16_16 = 12, kData32_32_32 = 13, kData32_32_32_32 = 14
};
enum NumFormat : uint32_t { kUnorm = 0, kSnorm = 1, kUint = 4, kSint = 5, kFloat = 7 };

constexpr size_t kObjectBytes = HIP_TEXTURE_OBJECT_SIZE_DWORD * 4;

struct TextureRecord {
  hipResourceDesc resource;
  hipTextureDesc texture;
};
std::mutex g_textures_mu;
std::map<hipTextureObject_t, TextureRecord>& textures() {
  static auto* m = new std::map<hipTextureObject_t, TextureRecord>;
  return *m;
}

// The data format of a channel description: 1, 2 or 4 channels of 8 or 16 bits, or 1 to 4 of 32 bits.
bool data_format(const hipChannelFormatDesc& d, uint32_t& format, uint32_t& channels, uint32_t& bits) {
  const int sizes[4] = {d.x, d.y, d.z, d.w};
  channels = 0;
  while (channels < 4 && sizes[channels]) ++channels;
  for (uint32_t c = channels; c < 4; ++c)
    if (sizes[c]) return false;  // a gap
  if (!channels) return false;
  bits = uint32_t(sizes[0]);
  for (uint32_t c = 1; c < channels; ++c)
    if (uint32_t(sizes[c]) != bits) return false;
  static constexpr uint32_t k8[] = {0, kData8, kData8_8, 0, kData8_8_8_8};
  static constexpr uint32_t k16[] = {0, kData16, kData16_16, 0, kData16_16_16_16};
  static constexpr uint32_t k32[] = {0, kData32, kData32_32, kData32_32_32, kData32_32_32_32};
  format = bits == 8 ? k8[channels] : bits == 16 ? k16[channels] : bits == 32 ? k32[channels] : 0;
  return format != 0;
}

hipError_t create(hipTextureObject_t* out, const hipResourceDesc* res, const hipTextureDesc* tex,
                  const hipResourceViewDesc* view) {
  if (!out || !res || !tex) return done(hipErrorInvalidValue);
  Runtime& rt = Runtime::get();
  if (!arch_info(rt.arch()).image_support)
    return fail(hipErrorNotSupported, "texture objects: the device (" + std::string(arch_info(rt.arch()).name) +
                                          ") has no image support, as HIP reports for it");
  if (view) return fail(hipErrorNotSupported, "texture objects: resource views are not modelled");
  if (res->resType != hipResourceTypeLinear)
    return fail(hipErrorNotSupported, "texture objects: only hipResourceTypeLinear resources are modelled");
  const auto& lin = res->res.linear;
  uint32_t format = 0, channels = 0, bits = 0;
  if (!lin.devPtr || !data_format(lin.desc, format, channels, bits))
    return fail(hipErrorInvalidValue, "texture object: null memory or an unsupported channel format");
  const uint32_t element = channels * bits / 8;
  const uintptr_t base = reinterpret_cast<uintptr_t>(lin.devPtr);
  if (base % std::min<uint32_t>(element, 4) || lin.sizeInBytes < element)
    return fail(hipErrorInvalidValue, "texture object: misaligned memory or less than one element");
  if (base >> 48) return fail(hipErrorInvalidValue, "texture object: address beyond 48 bits");

  uint32_t num;
  switch (lin.desc.f) {
    case hipChannelFormatKindFloat:
      if (bits == 8 || (tex->readMode == hipReadModeNormalizedFloat && bits == 32))
        return fail(hipErrorInvalidValue, "texture object: no such float format");
      num = kFloat;
      break;
    case hipChannelFormatKindSigned: num = tex->readMode == hipReadModeNormalizedFloat && bits < 32 ? kSnorm : kSint; break;
    case hipChannelFormatKindUnsigned: num = tex->readMode == hipReadModeNormalizedFloat && bits < 32 ? kUnorm : kUint; break;
    default: return fail(hipErrorInvalidValue, "texture object: unknown channel kind");
  }
  // Fetching by element index reads no sampler state; point sampling is what tex1Dfetch does on any sampler.

  uint32_t dwords[HIP_TEXTURE_OBJECT_SIZE_DWORD] = {};
  dwords[0] = uint32_t(base);
  dwords[1] = uint32_t(base >> 32) | element << 16;            // BASE_ADDRESS_HI, STRIDE
  dwords[2] = uint32_t(std::min<size_t>(lin.sizeInBytes / element, 0xffffffffu));  // NUM_RECORDS, in elements
  uint32_t sel = 0;
  for (uint32_t c = 0; c < 4; ++c)
    sel |= (c < channels ? kSelX + c : c == 3 ? kSelOne : kSelZero) << (3 * c);
  dwords[3] = sel | num << 12 | format << 15;

  void* object = rt.allocate(kObjectBytes, hipMemoryTypeDevice, 0);
  if (!object) return fail(hipErrorOutOfMemory, "cannot allocate a texture object");
  std::memcpy(object, dwords, sizeof dwords);
  *out = static_cast<hipTextureObject_t>(object);
  std::lock_guard lock(g_textures_mu);
  textures()[*out] = TextureRecord{*res, *tex};
  return hipSuccess;
}

}  // namespace
}  // namespace vgpu::hiprt

using namespace vgpu;
using namespace vgpu::hiprt;

HK_HIP_API hipError_t hipCreateTextureObject(hipTextureObject_t* out, const hipResourceDesc* res,
                                             const hipTextureDesc* tex, const hipResourceViewDesc* view) {
  return create(out, res, tex, view);
}

HK_HIP_API hipError_t hipDestroyTextureObject(hipTextureObject_t object) {
  if (!object) return hipSuccess;  // as HIP
  {
    std::lock_guard lock(g_textures_mu);
    if (!textures().erase(object)) return done(hipErrorInvalidValue);
  }
  return done(Runtime::get().release(object));
}

HK_HIP_API hipError_t hipGetTextureObjectResourceDesc(hipResourceDesc* res, hipTextureObject_t object) {
  if (!res) return done(hipErrorInvalidValue);
  std::lock_guard lock(g_textures_mu);
  auto it = textures().find(object);
  if (it == textures().end()) return done(hipErrorInvalidValue);
  *res = it->second.resource;
  return hipSuccess;
}

HK_HIP_API hipError_t hipGetTextureObjectTextureDesc(hipTextureDesc* tex, hipTextureObject_t object) {
  if (!tex) return done(hipErrorInvalidValue);
  std::lock_guard lock(g_textures_mu);
  auto it = textures().find(object);
  if (it == textures().end()) return done(hipErrorInvalidValue);
  *tex = it->second.texture;
  return hipSuccess;
}
