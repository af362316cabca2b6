// Masks and fills of register tiles by position: the causal mask of attention, triangular fills, and the bounds mask
// of edge tiles. Positions are global: a tile's element (r, c) sits at (row0 + r, col0 + c), so a kernel passes the
// tile's origin in the full matrix. Any element type and layout; each op is one line over map_at.
#pragma once
#include <cmath>

#include "maps.h"

namespace hk {

// Elements above the diagonal `diagonal` (col - row > diagonal) become `value`: keeps the lower triangle.
template <register_tile D>
__device__ inline void tril(D& d, float value, int diagonal = 0, int row0 = 0, int col0 = 0) {
  map_at(d, [=](auto x, int r, int c) { return (col0 + c) - (row0 + r) > diagonal ? to<typename D::dtype>(value) : x; });
}

// Elements below the diagonal `diagonal` (col - row < diagonal) become `value`: keeps the upper triangle.
template <register_tile D>
__device__ inline void triu(D& d, float value, int diagonal = 0, int row0 = 0, int col0 = 0) {
  map_at(d, [=](auto x, int r, int c) { return (col0 + c) - (row0 + r) < diagonal ? to<typename D::dtype>(value) : x; });
}

// The causal mask of an attention score tile whose element (0, 0) is query row0, key col0: keys after the query
// (col > row + offset) become `value` (-inf by default). offset = Nk - Nq aligns the last query with the last key
// when the query block is the tail of a longer key sequence.
template <register_tile D>
__device__ inline void make_causal(D& d, int row0, int col0, int offset = 0, float value = -INFINITY) {
  tril(d, value, offset, row0, col0);
}

// Elements outside the matrix of `rows` x `cols` (global row >= rows or col >= cols) become `value`: the tail of an
// edge tile (0 for a GEMM operand, -inf for attention scores past the sequence).
template <register_tile D>
__device__ inline void mask_bounds(D& d, int row0, int col0, int rows, int cols, float value) {
  map_at(d, [=](auto x, int r, int c) { return row0 + r >= rows || col0 + c >= cols ? to<typename D::dtype>(value) : x; });
}

}  // namespace hk
