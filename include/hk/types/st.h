// Shared tiles: R x C elements in LDS, row-major with an XOR swizzle of read-width chunks, so that the register-tile
// loads (16 lanes reading 16 different rows at one column) spread over all banks on both archs.
#pragma once
#include "../arch.h"
#include "dtypes.h"

namespace hk {

template <tile_element T, int R, int C>
struct st {
  using dtype = T;
  static constexpr int rows = R, cols = C;
  static constexpr int chunk_bytes = arch::current::lds_read_bytes;        // swizzle granule
  static constexpr int chunk_elems = chunk_bytes / int(sizeof(T));
  static constexpr int chunks_per_row = C * int(sizeof(T)) / chunk_bytes;
  static_assert(R % 16 == 0, "st: rows must be a multiple of 16");
  static_assert(C * sizeof(T) % 16 == 0, "st: a row must be a whole number of 16-byte chunks");
  // Rows r and r + 16 share a swizzle; 16 distinct chunk slots per row keep 16-row reads conflict free.
  static constexpr int swizzle_mask = chunks_per_row >= 16 ? 15 : chunks_per_row - 1;

  T data[R * C];

  // Element offset of (r, c).
  __host__ __device__ static constexpr int idx(int r, int c) {
    const int chunk = c / chunk_elems, within = c % chunk_elems;
    return r * C + ((chunk ^ (r & swizzle_mask)) * chunk_elems) + within;
  }
  __host__ __device__ T& operator()(int r, int c) { return data[idx(r, c)]; }
  __host__ __device__ const T& operator()(int r, int c) const { return data[idx(r, c)]; }
};

template <class S>
concept shared_tile = requires { typename S::dtype; S::rows; S::cols; S::chunk_elems; };

}  // namespace hk
