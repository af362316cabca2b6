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
  // A register-tile load has 16 lanes read one chunk column of 16 consecutive rows in a phase. The rows that share a
  // bank window (all banks once: 128 bytes on gfx942, 256 on gfx950) are told apart by their place in the window;
  // rows of different windows get different chunk slots: slot = chunk ^ ((row / rows_per_window) & swizzle_mask).
  static constexpr int window_bytes = arch::current::lds_banks * 4;
  static constexpr int rows_per_window = C * int(sizeof(T)) >= window_bytes ? 1 : window_bytes / (C * int(sizeof(T)));
  static constexpr int swizzle_mask = chunks_per_row >= 16 ? 15 : chunks_per_row - 1;

  T data[R * C];

  // Element offset of (r, c).
  __host__ __device__ static constexpr int swizzle(int r) { return (r / rows_per_window) & swizzle_mask; }
  __host__ __device__ static constexpr int idx(int r, int c) {
    const int chunk = c / chunk_elems, within = c % chunk_elems;
    return r * C + ((chunk ^ swizzle(r)) * chunk_elems) + within;
  }
  __host__ __device__ T& operator()(int r, int c) { return data[idx(r, c)]; }
  __host__ __device__ const T& operator()(int r, int c) const { return data[idx(r, c)]; }
};

template <class S>
concept shared_tile = requires { typename S::dtype; S::rows; S::cols; S::chunk_elems; };

}  // namespace hk
