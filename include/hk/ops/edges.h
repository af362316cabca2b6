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

// dst = alpha * acc + beta * dst for the elements inside the tensor (beta == 0 does not read dst).
template <class GL, register_tile RT>
__device__ inline void store_bounded(const GL& dst, const RT& src, coord at, float alpha = 1.f, float beta = 0.f) {
  detail::store_global<true>(dst, src, at, alpha, beta);
}

}  // namespace hk
