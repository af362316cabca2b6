// Row and column reductions of accumulator-layout tiles. A row of a 16x16 block lives in the 16 lanes of one lane
// group (element i % 4), a column in lanes j, j+16, j+32, j+48: reduce in registers first, then across lanes.
#pragma once
#include <cmath>

#include "../types/rt.h"

namespace hk {

namespace detail {

template <class Op>
__device__ inline float lanes_reduce(float x, int width_first, int width_last) {
  for (int o = width_first; o <= width_last; o <<= 1) x = Op{}(x, __shfl_xor(x, o));
  return x;
}

struct max_op { __device__ float operator()(float a, float b) const { return fmaxf(a, b); } };
struct min_op { __device__ float operator()(float a, float b) const { return fminf(a, b); } };
struct sum_op { __device__ float operator()(float a, float b) const { return a + b; } };

template <class Op, register_tile T, class V>
__device__ inline void row_reduce(V& out, const T& t) {
  static_assert(T::lay == layout::col && std::same_as<typename T::dtype, float>, "row reductions take rt_acc tiles");
  static_assert(V::align == vec_align::rows && V::length == T::rows, "row reduction: vector length must be the tile's rows");
#pragma unroll
  for (int i = 0; i < T::tiles_r; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float x = t.data[i][0][e];
#pragma unroll
      for (int j = 1; j < T::tiles_c; ++j) x = Op{}(x, t.data[i][j][e]);
      out.data[i][e] = lanes_reduce<Op>(x, 1, 8);  // across the 16 columns of the lane group
    }
}

template <class Op, register_tile T, class V>
__device__ inline void col_reduce(V& out, const T& t) {
  static_assert(T::lay == layout::col && std::same_as<typename T::dtype, float>, "column reductions take rt_acc tiles");
  static_assert(V::align == vec_align::cols && V::length == T::cols, "column reduction: vector length must be the tile's columns");
#pragma unroll
  for (int j = 0; j < T::tiles_c; ++j) {
    float x = t.data[0][j][0];
#pragma unroll
    for (int i = 0; i < T::tiles_r; ++i)
#pragma unroll
      for (int e = (i == 0 ? 1 : 0); e < 4; ++e) x = Op{}(x, t.data[i][j][e]);
    out.data[j][0] = lanes_reduce<Op>(x, 16, 32);  // across the four lane groups
  }
}

}  // namespace detail

template <register_tile T, class V> __device__ inline void row_max(V& v, const T& t) { detail::row_reduce<detail::max_op>(v, t); }
template <register_tile T, class V> __device__ inline void row_min(V& v, const T& t) { detail::row_reduce<detail::min_op>(v, t); }
template <register_tile T, class V> __device__ inline void row_sum(V& v, const T& t) { detail::row_reduce<detail::sum_op>(v, t); }
template <register_tile T, class V> __device__ inline void col_max(V& v, const T& t) { detail::col_reduce<detail::max_op>(v, t); }
template <register_tile T, class V> __device__ inline void col_min(V& v, const T& t) { detail::col_reduce<detail::min_op>(v, t); }
template <register_tile T, class V> __device__ inline void col_sum(V& v, const T& t) { detail::col_reduce<detail::sum_op>(v, t); }

}  // namespace hk
