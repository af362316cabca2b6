// Element types of tiles and what hk knows about them.
#pragma once
#include <hip/hip_runtime.h>

#include <concepts>
#include <cstdint>
#include <type_traits>

#include "../arch.h"

namespace hk {

using bf16 = __bf16;
using half = _Float16;

// 8-bit floats in the format of the arch the code runs on (arch::fp8_format; max arch::fp8_format_max):
//   fp8e4m3: FNUZ e4m3 (bias 8, max 240, 0x80 the only NaN, no inf, no -0) on gfx942, OCP e4m3fn (bias 7, max 448,
//            S.1111.111 NaN, no inf) on gfx950;
//   fp8e5m2 ("bf8"): FNUZ e5m2 (bias 16, max 57344, 0x80 the only NaN, no inf, no -0) on gfx942, OCP e5m2 (bias 15,
//            max 57344, IEEE-like: S.11111.00 inf, S.11111.xx NaN) on gfx950.
// 1-byte storage types: the host sees only `bits` (the host pass cannot know the device's format); on the device,
// conversion from float rounds to nearest even and saturates to +-max (infinities included), and NaN stays NaN.
template <arch::fp8_format F>
struct fp8_t {
  static constexpr arch::fp8_format format = F;
  uint8_t bits;
  fp8_t() = default;
  __host__ __device__ static constexpr fp8_t from_bits(uint8_t b) {
    fp8_t x{};
    x.bits = b;
    return x;
  }
  __device__ explicit fp8_t(float f) : bits(uint8_t(arch::current::fp8_encode2<F, false>(f, 0.f, 0u))) {}
  __device__ explicit operator float() const { return arch::current::fp8_decode<F, 0>(bits); }
};
using fp8e4m3 = fp8_t<arch::fp8_format::e4m3>;
using fp8e5m2 = fp8_t<arch::fp8_format::e5m2>;
static_assert(sizeof(fp8e4m3) == 1 && std::is_trivially_copyable_v<fp8e4m3>, "fp8e4m3 must be one plain byte");
static_assert(sizeof(fp8e5m2) == 1 && std::is_trivially_copyable_v<fp8e5m2>, "fp8e5m2 must be one plain byte");

template <class T>
concept mma_input = std::same_as<T, bf16> || std::same_as<T, half>;

template <class T>
concept fp8_input = std::same_as<T, fp8e4m3> || std::same_as<T, fp8e5m2>;

template <class T>
concept tile_element = mma_input<T> || fp8_input<T> || std::same_as<T, float>;

}  // namespace hk
