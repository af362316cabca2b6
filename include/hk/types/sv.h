// Shared vectors: N elements in LDS, the staging form of register vectors (rv) — a row statistic shared between
// waves, a bias or a norm's scale read by every wave. Plain and unswizzled: vector reads are one element per lane at
// consecutive or broadcast addresses, which no bank model penalises.
#pragma once
#include "dtypes.h"

namespace hk {

template <tile_element T, int N>
struct sv {
  using dtype = T;
  static constexpr int length = N;
  static_assert(N > 0, "sv: a vector needs at least one element");
  T data[N];
  __host__ __device__ T& operator[](int i) { return data[i]; }
  __host__ __device__ const T& operator[](int i) const { return data[i]; }
};

template <class S>
concept shared_vector = requires { typename S::dtype; S::length; } && !requires { S::align; };

}  // namespace hk
