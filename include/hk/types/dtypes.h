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

// 8-bit float e4m3 in the format of the arch the code runs on: FNUZ e4m3 (bias 8, max 240, 0x80 NaN, no -0) on
// gfx942, OCP e4m3fn (bias 7, max 448, S.1111.111 NaN) on gfx950 (arch::current::fp8_max, fp8_fnuz). A 1-byte storage
// type: the host sees only `bits` (the host pass cannot know the device's format); on the device, conversion from
// float rounds to nearest even and saturates to +-fp8_max, and NaN stays NaN.
struct fp8e4m3 {
  uint8_t bits;
  fp8e4m3() = default;
  __host__ __device__ static constexpr fp8e4m3 from_bits(uint8_t b) {
    fp8e4m3 x{};
    x.bits = b;
    return x;
  }
  __device__ explicit fp8e4m3(float f) : bits(uint8_t(arch::fp8_encode2<false>(f, 0.f, 0u))) {}
  __device__ explicit operator float() const { return arch::fp8_decode<0>(bits); }
};
static_assert(sizeof(fp8e4m3) == 1 && std::is_trivially_copyable_v<fp8e4m3>, "fp8e4m3 must be one plain byte");

template <class T>
concept mma_input = std::same_as<T, bf16> || std::same_as<T, half>;

template <class T>
concept fp8_input = std::same_as<T, fp8e4m3>;

template <class T>
concept tile_element = mma_input<T> || fp8_input<T> || std::same_as<T, float>;

// Conversions that round to nearest even on every path (host and device).
template <class To, class From>
__host__ __device__ inline To convert(From x) {
  if constexpr (std::is_same_v<To, From>) return x;
  else return static_cast<To>(static_cast<float>(x));
}

}  // namespace hk
