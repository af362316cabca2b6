// Moving tiles that overhang a tensor's edge: the parts outside rows() x cols() read as zero and are not written.
// Kernels with run-time problem sizes use these for their last row and column of tiles.
#pragma once
#include "memory.h"

namespace hk {

// Shared tile from global memory by group G; elements outside the tensor are zero.
template <class G, shared_tile ST, class GL>
__device__ inline void load_bounded(ST& dst, const GL& src, coord at) {
  detail::load_shared<G, true>(dst, src, at);
}

// dst = alpha * acc + beta * dst for the elements inside the tensor (beta == 0 does not read dst).
template <class GL, register_tile RT>
__device__ inline void store_bounded(const GL& dst, const RT& src, coord at, float alpha = 1.f, float beta = 0.f) {
  using T = typename GL::dtype;
  const int lane = lane_id();
  const int r0 = at.r * RT::rows, c0 = at.c * RT::cols;
#pragma unroll
  for (int i = 0; i < RT::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < RT::tiles_c; ++j)
#pragma unroll
      for (int e = 0; e < RT::E; ++e) {
        const int r = r0 + RT::row_of(i, lane, e), c = c0 + RT::col_of(j, lane, e);
        if (!dst.inside(r, c)) continue;
        T* p = dst.at(at.b, at.d, r, c);
        float v = alpha * static_cast<float>(src.data[i][j][e]);
        if (beta != 0.f) v += beta * static_cast<float>(*p);
        *p = static_cast<T>(v);
      }
}

}  // namespace hk
