// Moving tiles that overhang a tensor's edge: the parts outside rows() x cols() read as zero and are not written.
// Kernels with run-time problem sizes use these for their last row and column of tiles.
#pragma once
#include "memory.h"

namespace hk {

// Shared tile from global memory by group G; elements outside the tensor are zero.
template <class G, shared_tile ST, class GL>
__device__ inline void load_bounded(ST& dst, const GL& src, coord at) {
  detail::move_shared<G, true, true>(dst, src, at);
}

// Shared tile to global memory by group G; elements outside the tensor are not written.
template <class G, class GL, shared_tile ST>
__device__ inline void store_bounded(const GL& dst, const ST& src, coord at) {
  detail::move_shared<G, true, false>(src, dst, at);
}

// Register tile (row layout) from global memory; rows outside the tensor read as zero. The tile's columns must lie
// inside the tensor, each lane's run on a run-sized boundary (one vector load per run).
template <register_tile RT, class GL>
  requires(RT::lay == layout::row)
__device__ inline void load_bounded(RT& dst, const GL& src, coord at) {
  using T = typename RT::dtype;
  const int lane = lane_id(), r0 = at.r * RT::rows, c0 = at.c * RT::cols;
#pragma unroll
  for (int i = 0; i < RT::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < RT::tiles_c; ++j)
#pragma unroll
      for (int p0 = 0; p0 < RT::E; p0 += RT::run) {
        const int r = r0 + RT::row_of(i, lane, p0), c = c0 + RT::col_of(j, lane, p0);
        detail::chunk<T, RT::run> v{};
        if (r < src.rows()) v = *reinterpret_cast<const detail::chunk<T, RT::run>*>(src.at(at.b, at.d, r, c));
#pragma unroll
        for (int e = 0; e < RT::run; ++e) dst.data[i][j][p0 + e] = v.v[e];
      }
}

// dst = alpha * acc + beta * dst for the elements inside the tensor (beta == 0 does not read dst). (Lane: scope.h.)
template <class Lane = lane_of_thread, class GL, register_tile RT>
__device__ inline void store_bounded(const GL& dst, const RT& src, coord at, float alpha = 1.f, float beta = 0.f) {
  detail::store_global<true, Lane>(dst, src, at, alpha, beta);
}

}  // namespace hk
