// Moving tiles: global <-> register (wave), global -> shared (group), shared <-> register (wave).
// Tile coordinates count tiles of the moved shape: coord{b, d, r, c} is rows r*R.. and columns c*C.. of (b, d).
#pragma once
#include "../types/gl.h"
#include "../types/rt.h"
#include "../types/st.h"
#include "scope.h"

namespace hk {

namespace detail {

// E contiguous elements as one vector access (8 or 16 bytes: one dwordx2/x4 or ds_read_b64/b128).
template <class T, int E>
struct alignas(E * sizeof(T)) chunk {
  T v[E];
};

}  // namespace detail

// Register tile from global memory.
template <register_tile RT, class GL>
__device__ inline void load(RT& dst, const GL& src, coord at) {
  using T = typename RT::dtype;
  const int lane = lane_id();
  const int r0 = at.r * RT::rows, c0 = at.c * RT::cols;
#pragma unroll
  for (int i = 0; i < RT::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < RT::tiles_c; ++j) {
      if constexpr (RT::lay == layout::row) {
        const T* p = src.at(at.b, at.d, r0 + RT::row_of(i, lane, 0), c0 + RT::col_of(j, lane, 0));
        auto c = *reinterpret_cast<const detail::chunk<T, RT::E>*>(p);
#pragma unroll
        for (int e = 0; e < RT::E; ++e) dst.data[i][j][e] = c.v[e];
      } else {
#pragma unroll
        for (int e = 0; e < RT::E; ++e)
          dst.data[i][j][e] = *src.at(at.b, at.d, r0 + RT::row_of(i, lane, e), c0 + RT::col_of(j, lane, e));
      }
    }
}

// Register tile to global memory (with conversion to the layout's element type).
template <class GL, register_tile RT>
__device__ inline void store(const GL& dst, const RT& src, coord at) {
  using T = typename GL::dtype;
  const int lane = lane_id();
  const int r0 = at.r * RT::rows, c0 = at.c * RT::cols;
#pragma unroll
  for (int i = 0; i < RT::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < RT::tiles_c; ++j)
#pragma unroll
      for (int e = 0; e < RT::E; ++e)
        *dst.at(at.b, at.d, r0 + RT::row_of(i, lane, e), c0 + RT::col_of(j, lane, e)) =
            static_cast<T>(static_cast<float>(src.data[i][j][e]));
}

// Shared tile from global memory, by all threads of group G: 16-byte loads, written in swizzle-granule pieces.
template <class G, shared_tile ST, class GL>
__device__ inline void load(ST& dst, const GL& src, coord at) {
  using T = typename ST::dtype;
  constexpr int per16 = 16 / int(sizeof(T));
  constexpr int chunks_per_row = ST::cols / per16, chunks = ST::rows * chunks_per_row;
  const int r0 = at.r * ST::rows, c0 = at.c * ST::cols;
  for (int q = G::thread(); q < chunks; q += G::threads) {
    const int r = q / chunks_per_row, c = (q % chunks_per_row) * per16;
    const auto v = *reinterpret_cast<const detail::chunk<T, per16>*>(src.at(at.b, at.d, r0 + r, c0 + c));
#pragma unroll
    for (int piece = 0; piece < per16 / ST::chunk_elems; ++piece) {
      auto* d = reinterpret_cast<detail::chunk<T, ST::chunk_elems>*>(&dst(r, c + piece * ST::chunk_elems));
#pragma unroll
      for (int e = 0; e < ST::chunk_elems; ++e) d->v[e] = v.v[piece * ST::chunk_elems + e];
    }
  }
}

// Register tile from a shared tile (rows and columns of the tile at `at` within the shared tile, in tile units).
// Row layout: each lane reads one swizzle granule, the LDS's widest read on the arch (conflict free by construction).
template <register_tile RT, shared_tile ST>
__device__ inline void load(RT& dst, const ST& src, coord at = {}) {
  using T = typename RT::dtype;
  static_assert(std::same_as<T, typename ST::dtype>, "load: shared and register tiles must have the same element type");
  const int lane = lane_id();
  const int r0 = at.r * RT::rows, c0 = at.c * RT::cols;
#pragma unroll
  for (int i = 0; i < RT::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < RT::tiles_c; ++j) {
      if constexpr (RT::lay == layout::row && RT::E == ST::chunk_elems) {
        auto c = *reinterpret_cast<const detail::chunk<T, RT::E>*>(&src(r0 + RT::row_of(i, lane, 0), c0 + RT::col_of(j, lane, 0)));
#pragma unroll
        for (int e = 0; e < RT::E; ++e) dst.data[i][j][e] = c.v[e];
      } else {
#pragma unroll
        for (int e = 0; e < RT::E; ++e) dst.data[i][j][e] = src(r0 + RT::row_of(i, lane, e), c0 + RT::col_of(j, lane, e));
      }
    }
}

// Shared tile from a register tile.
template <shared_tile ST, register_tile RT>
__device__ inline void store(ST& dst, const RT& src, coord at = {}) {
  const int lane = lane_id();
  const int r0 = at.r * RT::rows, c0 = at.c * RT::cols;
#pragma unroll
  for (int i = 0; i < RT::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < RT::tiles_c; ++j)
#pragma unroll
      for (int e = 0; e < RT::E; ++e)
        dst(r0 + RT::row_of(i, lane, e), c0 + RT::col_of(j, lane, e)) =
            static_cast<typename ST::dtype>(static_cast<float>(src.data[i][j][e]));
}

}  // namespace hk
