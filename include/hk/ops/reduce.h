// Row and column reductions of accumulator-layout tiles: reduce in registers first, then across lanes.
// 16x16 blocks (mfma16): a row lives in the 16 lanes of one lane group (element i % 4), a column in lanes j, j+16,
// j+32, j+48. 32x32 blocks (mfma32): a row lives in the 32 lanes of one half (lane / 32 = (i / 4) % 2, element
// 4 (i / 8) + i % 4), so a row reduction is 5 xor-shuffles (1..16) per register; a column lives in lanes j, j+32 (all
// 16 registers of each), so a column reduction is 16 register steps per block and one xor-32 shuffle.
#pragma once
#include <cmath>

#include "../types/rt.h"

namespace hk {

namespace detail {

// x combined by Op over the lanes l ^ o, o = width_first, 2 width_first, ..., width_last (powers of two). The step
// between the wave's halves (o = 32) is v_permlane32_swap where the target has it: on the VALU, where ds_bpermute's
// LDS latency lay in the critical path of the attention softmax, queued behind other waves' tile reads.
template <class Op>
__device__ inline float lanes_reduce(float x, int width_first, int width_last) {
  for (int o = width_first; o <= width_last; o <<= 1) {
    if constexpr (arch::current::permlane32_swap)
      if (o == 32) {
        x = arch::current::halves_combine(x, Op{});
        continue;
      }
    x = Op{}(x, __shfl_xor(x, o));
  }
  return x;
}

struct max_op { __device__ float operator()(float a, float b) const { return fmaxf(a, b); } };
struct min_op { __device__ float operator()(float a, float b) const { return fminf(a, b); } };
struct sum_op { __device__ float operator()(float a, float b) const { return a + b; } };

template <class Op, register_tile T, class V>
__device__ inline void row_reduce(V& out, const T& t) {
  static_assert(T::lay == layout::col && std::same_as<typename T::dtype, float>, "row reductions take rt_acc tiles");
  static_assert(V::align == vec_align::rows && V::length == T::rows, "row reduction: vector length must be the tile's rows");
  static_assert(std::same_as<typename V::shape, typename T::shape>,
                "row reduction: the vector and the tile must be of the same MFMA family (rv<float, N, align, mfma32> "
                "for rt_acc<M, N, mfma32>)");
#pragma unroll
  for (int i = 0; i < T::tiles_r; ++i)
#pragma unroll
    for (int e = 0; e < T::E; ++e) {
      float x = t.data[i][0][e];
#pragma unroll
      for (int j = 1; j < T::tiles_c; ++j) x = Op{}(x, t.data[i][j][e]);
      out.data[i][e] = lanes_reduce<Op>(x, 1, T::dim / 2);  // across the 16 (32) columns of the lane group (half)
    }
}

template <class Op, register_tile T, class V>
__device__ inline void col_reduce(V& out, const T& t) {
  static_assert(T::lay == layout::col && std::same_as<typename T::dtype, float>, "column reductions take rt_acc tiles");
  static_assert(V::align == vec_align::cols && V::length == T::cols, "column reduction: vector length must be the tile's columns");
  static_assert(std::same_as<typename V::shape, typename T::shape>,
                "column reduction: the vector and the tile must be of the same MFMA family (rv<float, N, align, mfma32> "
                "for rt_acc<M, N, mfma32>)");
#pragma unroll
  for (int j = 0; j < T::tiles_c; ++j) {
    float x = t.data[0][j][0];
#pragma unroll
    for (int i = 0; i < T::tiles_r; ++i)
#pragma unroll
      for (int e = (i == 0 ? 1 : 0); e < T::E; ++e) x = Op{}(x, t.data[i][j][e]);
    out.data[j][0] = lanes_reduce<Op>(x, T::dim, 32);  // across the four lane groups (two halves)
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
