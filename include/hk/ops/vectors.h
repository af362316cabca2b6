// Moving vectors: global <-> register (rv), global <-> shared (sv, by a group), shared <-> register. A vector lives
// in one row of a global layout: coord{b, d, r, c} is row r of (b, d), elements c*N .. c*N + N-1; elements past the
// tensor's columns read as zero and are not written.
#pragma once
#include "../types/gl.h"
#include "../types/rt.h"
#include "../types/sv.h"
#include "scope.h"

namespace hk {

template <class V>
concept register_vector = requires { typename V::dtype; typename V::shape; V::length; V::align; V::per_block; };

namespace detail {

// The vector index of register element (block, e) of a lane: the accumulator row (rows-aligned) or column
// (cols-aligned) that element stands for.
template <register_vector V>
__device__ inline int rv_index(int block, int e, int lane) {
  constexpr int D = V::shape::dim;
  if constexpr (V::align == vec_align::rows) return rt_acc<D, D, typename V::shape>::row_of(block, lane, e);
  else return rt_acc<D, D, typename V::shape>::col_of(block, lane, 0);
}

// Whether this lane is the first of those holding element (block, e): the one that writes it.
template <register_vector V>
__device__ inline bool rv_writer(int lane) {
  constexpr int D = V::shape::dim;
  // rows: a row lives in every lane of its group (16 or 32 consecutive lanes); cols: in lanes l, l + D, ...
  return V::align == vec_align::rows ? lane % D == 0 : lane < D;
}

}  // namespace detail

// Register vector from global memory.
template <register_vector V, class GL>
__device__ inline void load(V& dst, const GL& src, coord at) {
  const int lane = lane_id(), c0 = at.c * V::length;
#pragma unroll
  for (int i = 0; i < V::length / V::shape::dim; ++i)
#pragma unroll
    for (int e = 0; e < V::per_block; ++e) {
      const int c = c0 + detail::rv_index<V>(i, e, lane);
      dst.data[i][e] = c < src.cols() ? static_cast<typename V::dtype>(static_cast<float>(*src.at(at.b, at.d, at.r, c)))
                                      : typename V::dtype(0);
    }
}

// Register vector to global memory (each element written once, converted to the tensor's type).
template <class GL, register_vector V>
__device__ inline void store(const GL& dst, const V& src, coord at) {
  using T = typename GL::dtype;
  const int lane = lane_id(), c0 = at.c * V::length;
  if (!detail::rv_writer<V>(lane)) return;
#pragma unroll
  for (int i = 0; i < V::length / V::shape::dim; ++i)
#pragma unroll
    for (int e = 0; e < V::per_block; ++e) {
      const int c = c0 + detail::rv_index<V>(i, e, lane);
      if (c < dst.cols()) *dst.at(at.b, at.d, at.r, c) = static_cast<T>(static_cast<float>(src.data[i][e]));
    }
}

// Shared vector from global memory, by the threads of group G.
template <class G, shared_vector S, class GL>
__device__ inline void load(S& dst, const GL& src, coord at) {
  const int c0 = at.c * S::length;
  for (int i = G::thread(); i < S::length; i += G::threads)
    dst[i] = c0 + i < src.cols() ? static_cast<typename S::dtype>(static_cast<float>(*src.at(at.b, at.d, at.r, c0 + i)))
                                 : typename S::dtype(0);
}

// Shared vector to global memory, by the threads of group G.
template <class G, class GL, shared_vector S>
__device__ inline void store(const GL& dst, const S& src, coord at) {
  const int c0 = at.c * S::length;
  for (int i = G::thread(); i < S::length; i += G::threads)
    if (c0 + i < dst.cols()) *dst.at(at.b, at.d, at.r, c0 + i) = static_cast<typename GL::dtype>(static_cast<float>(src[i]));
}

// Register vector from a shared vector of the same length (element `offset` onwards).
template <register_vector V, shared_vector S>
__device__ inline void load(V& dst, const S& src, int offset = 0) {
  const int lane = lane_id();
#pragma unroll
  for (int i = 0; i < V::length / V::shape::dim; ++i)
#pragma unroll
    for (int e = 0; e < V::per_block; ++e)
      dst.data[i][e] = static_cast<typename V::dtype>(static_cast<float>(src[offset + detail::rv_index<V>(i, e, lane)]));
}

// Shared vector from a register vector (each element written by one lane).
template <shared_vector S, register_vector V>
__device__ inline void store(S& dst, const V& src, int offset = 0) {
  const int lane = lane_id();
  if (!detail::rv_writer<V>(lane)) return;
#pragma unroll
  for (int i = 0; i < V::length / V::shape::dim; ++i)
#pragma unroll
    for (int e = 0; e < V::per_block; ++e)
      dst[offset + detail::rv_index<V>(i, e, lane)] = static_cast<typename S::dtype>(static_cast<float>(src.data[i][e]));
}

}  // namespace hk
