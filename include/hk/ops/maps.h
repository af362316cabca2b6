// Elementwise operations: every op is one line over one shared map loop.
#pragma once
#include <cmath>

#include "../types/rt.h"
#include "scope.h"

namespace hk {

// Applies f to every element this lane holds (f takes the element, returns the new one).
template <register_tile D, class F>
__device__ inline void map(D& d, F f) {
#pragma unroll
  for (int i = 0; i < D::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < D::tiles_c; ++j)
#pragma unroll
      for (int e = 0; e < D::E; ++e) d.data[i][j][e] = f(d.data[i][j][e]);
}

// Applies f(x, row, col) to every element this lane holds, with the element's row and column within the tile.
template <register_tile D, class F>
__device__ inline void map_at(D& d, F f) {
  const int lane = lane_id();
#pragma unroll
  for (int i = 0; i < D::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < D::tiles_c; ++j)
#pragma unroll
      for (int e = 0; e < D::E; ++e) d.data[i][j][e] = f(d.data[i][j][e], D::row_of(i, lane, e), D::col_of(j, lane, e));
}

// d = f(a, b) elementwise over two tiles of the same shape and layout.
template <register_tile D, register_tile A, register_tile B, class F>
__device__ inline void map(D& d, const A& a, const B& b, F f) {
  static_assert(D::rows == A::rows && D::cols == A::cols && A::rows == B::rows && A::cols == B::cols,
                "map: tiles must have the same shape");
  static_assert(D::lay == A::lay && A::lay == B::lay, "map: tiles must have the same layout");
  static_assert(std::same_as<typename D::shape, typename A::shape> && std::same_as<typename A::shape, typename B::shape>,
                "map: tiles must be of the same MFMA family (mfma16 or mfma32)");
#pragma unroll
  for (int i = 0; i < D::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < D::tiles_c; ++j)
#pragma unroll
      for (int e = 0; e < D::E; ++e) d.data[i][j][e] = f(a.data[i][j][e], b.data[i][j][e]);
}

// Broadcast of a vector along the rows (vector aligned with rows: element per row) of a float col-layout tile.
template <register_tile D, class V, class F>
__device__ inline void map_rows(D& d, const V& v, F f) {
  static_assert(D::lay == layout::col && D::E == elems_per_lane<float, typename D::shape>,
                "map_rows: needs an accumulator-layout tile");
  static_assert(V::align == vec_align::rows && V::length == D::rows, "map_rows: vector must match the tile's rows");
  static_assert(std::same_as<typename V::shape, typename D::shape>, "map_rows: vector and tile of different MFMA families");
#pragma unroll
  for (int i = 0; i < D::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < D::tiles_c; ++j)
#pragma unroll
      for (int e = 0; e < D::E; ++e) d.data[i][j][e] = f(d.data[i][j][e], v.data[i][e]);
}

// Broadcast of a vector along the columns (one element per column).
template <register_tile D, class V, class F>
__device__ inline void map_cols(D& d, const V& v, F f) {
  static_assert(D::lay == layout::col && D::E == elems_per_lane<float, typename D::shape>,
                "map_cols: needs an accumulator-layout tile");
  static_assert(V::align == vec_align::cols && V::length == D::cols, "map_cols: vector must match the tile's columns");
  static_assert(std::same_as<typename V::shape, typename D::shape>, "map_cols: vector and tile of different MFMA families");
#pragma unroll
  for (int i = 0; i < D::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < D::tiles_c; ++j)
#pragma unroll
      for (int e = 0; e < D::E; ++e) d.data[i][j][e] = f(d.data[i][j][e], v.data[j][0]);
}

template <class T>
__device__ inline T to(float x) { return static_cast<T>(x); }
template <class T>
__device__ inline float fl(T x) { return static_cast<float>(x); }

// Unary maps.
template <register_tile D> __device__ inline void zero(D& d) { map(d, [](auto) { return to<typename D::dtype>(0.f); }); }
template <register_tile D> __device__ inline void one(D& d) { map(d, [](auto) { return to<typename D::dtype>(1.f); }); }
template <register_tile D> __device__ inline void neg_infty(D& d) { map(d, [](auto) { return to<typename D::dtype>(-INFINITY); }); }
template <register_tile D> __device__ inline void exp(D& d) { map(d, [](auto x) { return to<typename D::dtype>(__expf(fl(x))); }); }
template <register_tile D> __device__ inline void exp2(D& d) { map(d, [](auto x) { return to<typename D::dtype>(exp2f(fl(x))); }); }
template <register_tile D> __device__ inline void log(D& d) { map(d, [](auto x) { return to<typename D::dtype>(__logf(fl(x))); }); }
template <register_tile D> __device__ inline void abs(D& d) { map(d, [](auto x) { return to<typename D::dtype>(fabsf(fl(x))); }); }
template <register_tile D> __device__ inline void relu(D& d) { map(d, [](auto x) { return to<typename D::dtype>(fmaxf(fl(x), 0.f)); }); }

// Binary maps: d = a op b for tiles, or d = a op s for a scalar s.
#define HK_BINARY(name, expr)                                                                       \
  template <register_tile D, register_tile A, register_tile B>                                      \
  __device__ inline void name(D& d, const A& a, const B& b) {                                       \
    map(d, a, b, [](auto x, auto y) { float u = fl(x), v = fl(y); return to<typename D::dtype>(expr); }); \
  }                                                                                                 \
  template <register_tile D, register_tile A>                                                      \
  __device__ inline void name(D& d, const A& a, float s) {                                          \
    map(d, a, a, [s](auto x, auto) { float u = fl(x), v = s; return to<typename D::dtype>(expr); }); \
  }
HK_BINARY(add, u + v)
HK_BINARY(sub, u - v)
HK_BINARY(mul, u * v)
HK_BINARY(div, u / v)
HK_BINARY(max, fmaxf(u, v))
HK_BINARY(min, fminf(u, v))
#undef HK_BINARY

// Row and column broadcasts: d[i][j] = d[i][j] op v[i] (name_row) or v[j] (name_col).
#define HK_BROADCAST(name, expr)                                                                                       \
  template <register_tile D, class V>                                                                                 \
  __device__ inline void name##_row(D& d, const V& v) { map_rows(d, v, [](float u, float w) { return expr; }); }      \
  template <register_tile D, class V>                                                                                 \
  __device__ inline void name##_col(D& d, const V& v) { map_cols(d, v, [](float u, float w) { return expr; }); }
HK_BROADCAST(add, u + w)
HK_BROADCAST(sub, u - w)
HK_BROADCAST(mul, u * w)
HK_BROADCAST(div, u / w)
HK_BROADCAST(max, fmaxf(u, w))
HK_BROADCAST(min, fminf(u, w))
#undef HK_BROADCAST

// Elementwise conversion between element types of the same layout and shape (e.g. the fp32 accumulator to bf16).
template <register_tile D, register_tile S>
__device__ inline void copy(D& d, const S& s) {
  static_assert(D::rows == S::rows && D::cols == S::cols && D::lay == S::lay && D::E == S::E && D::run == S::run &&
                    std::same_as<typename D::shape, typename S::shape>,
                "copy: tiles must have the same shape, layout, MFMA family and elements per lane");
#pragma unroll
  for (int i = 0; i < D::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < D::tiles_c; ++j)
#pragma unroll
      for (int e = 0; e < D::E; ++e) d.data[i][j][e] = to<typename D::dtype>(fl(s.data[i][j][e]));
}

}  // namespace hk
