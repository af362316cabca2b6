// Element types of tiles and what hk knows about them.
#pragma once
#include <hip/hip_runtime.h>

#include <concepts>
#include <type_traits>

namespace hk {

using bf16 = __bf16;
using half = _Float16;

template <class T>
concept mma_input = std::same_as<T, bf16> || std::same_as<T, half>;

template <class T>
concept tile_element = mma_input<T> || std::same_as<T, float>;

// Conversions that round to nearest even on every path (host and device).
template <class To, class From>
__host__ __device__ inline To convert(From x) {
  if constexpr (std::is_same_v<To, From>) return x;
  else return static_cast<To>(static_cast<float>(x));
}

}  // namespace hk
