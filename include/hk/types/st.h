// Shared tiles: R x C elements in LDS, row-major with an XOR swizzle of read-width chunks, so that the register-tile
// loads (lanes reading many rows at one column, or a few rows at once through gfx950's transposing reads) spread over
// all banks on both archs.
#pragma once
#include <utility>

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
  // Chunk q of row r lives at slot q ^ swizzle(r): an XOR of the arch's masks (arch.h) over the set bits of r, cut to
  // the largest power-of-two run of chunks the row holds. The masks are searched (tools/swizzle_search) against the
  // arch's LDS phases so that every register-tile read from a shared tile, row or col layout, 16x16 or 32x32 family,
  // spreads over all banks; tests/hk/banks_test.hip and layout_test.hip assert it on vgpu. Swizzling whole granules
  // keeps each lane's read contiguous.
  static constexpr int slot_mask = (chunks_per_row & -chunks_per_row) - 1;
  __host__ __device__ static constexpr int mask(int bit) {
    return (sizeof(T) == 1 ? arch::current::swizzle_8bit : arch::current::swizzle_16bit)[bit];
  }

  T data[R * C];

  // The chunk XOR of row r. Each mask is a constant of the instruction stream (never a table in memory).
  __host__ __device__ static constexpr int swizzle(int r) {
    return [r]<int... B>(std::integer_sequence<int, B...>) {
      return ((std::integral_constant<int, mask(B)>::value * (r >> B & 1)) ^ ...);
    }(std::make_integer_sequence<int, 7>{}) & slot_mask;
  }
  // Element offset of (r, c).
  __host__ __device__ static constexpr int idx(int r, int c) {
    const int chunk = c / chunk_elems, within = c % chunk_elems;
    return r * C + ((chunk ^ swizzle(r)) * chunk_elems) + within;
  }
  // The same for row r_tile + r_lane, where the two share no set bit (a tile's first row, a multiple of a power of two,
  // and a lane's row within it): the swizzle is linear in the row's bits, so the parts are swizzled apart and only
  // the lane's costs vector work — once per lane, not once per address. The tile's rows are added last, so that the
  // compiler folds them into the reads' offsets more often (as (r_tile + r_lane) C, the gfx950 ping-pong forward's
  // prologue held address registers of its own for a stage's K reads: the dropout instance spilled 4 VGPRs so, reloaded
  // in the loop behind the tile loads; MI355X GQA D128 N8192 p 0.1 998.1 -> 1059.0 TFLOP/s).
  __host__ __device__ static constexpr int idx(int r_tile, int r_lane, int c) {
    const int chunk = c / chunk_elems, within = c % chunk_elems;
    return r_tile * C + (r_lane * C + ((chunk ^ swizzle(r_tile) ^ swizzle(r_lane)) * chunk_elems) + within);
  }
  __host__ __device__ T& operator()(int r, int c) { return data[idx(r, c)]; }
  __host__ __device__ const T& operator()(int r, int c) const { return data[idx(r, c)]; }
  __host__ __device__ T& operator()(int r_tile, int r_lane, int c) { return data[idx(r_tile, r_lane, c)]; }
  __host__ __device__ const T& operator()(int r_tile, int r_lane, int c) const { return data[idx(r_tile, r_lane, c)]; }
};

template <class S>
concept shared_tile = requires { typename S::dtype; S::rows; S::cols; S::chunk_elems; };

}  // namespace hk
