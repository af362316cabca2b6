// Register tiles: each lane holds its fragment exactly as the 16x16 MFMA wants it, so mma needs no shuffles.
//
// A tile is a grid of base tiles. In the row layout a base tile is 16 rows x 4E columns and lane l holds row l % 16,
// columns (l / 16) * E + e for e < E; in the col layout it is 4E rows x 16 columns and lane l holds column l % 16,
// rows (l / 16) * E + e. E is K/4 of the arch's 16x16 MFMA for 16-bit types (4 on gfx942, 8 on gfx950), K/4 of the
// arch's 16x16 fp8 MFMA for fp8e4m3 (8 on gfx942, 32 on gfx950) and 4 for float, so a float col tile of 16x16 blocks
// is exactly the MFMA accumulator.
#pragma once
#include "../arch.h"
#include "dtypes.h"

namespace hk {

enum class layout { row, col };

template <tile_element T>
inline constexpr int elems_per_lane = std::same_as<T, float> ? 4 : fp8_input<T> ? arch::fp8_elems : arch::mfma_elems;

template <tile_element T, int R, int C, layout L = layout::row>
struct rt {
  using dtype = T;
  static constexpr int rows = R, cols = C;
  static constexpr layout lay = L;
  static constexpr int E = elems_per_lane<T>;
  static constexpr int base_rows = L == layout::row ? 16 : 4 * E;
  static constexpr int base_cols = L == layout::row ? 4 * E : 16;
  static_assert(R % base_rows == 0, "rt: rows must be a multiple of the base tile's rows (16 for row layout, 4*E for col)");
  static_assert(C % base_cols == 0, "rt: cols must be a multiple of the base tile's cols (4*E for row layout, 16 for col)");
  static constexpr int tiles_r = R / base_rows, tiles_c = C / base_cols;

  T data[tiles_r][tiles_c][E];

  // The (row, col) within the tile of element e of base tile (tr, tc) held by `lane`.
  __host__ __device__ static constexpr int row_of(int tr, int lane, int e) {
    return tr * base_rows + (L == layout::row ? lane % 16 : (lane / 16) * E + e);
  }
  __host__ __device__ static constexpr int col_of(int tc, int lane, int e) {
    return tc * base_cols + (L == layout::row ? (lane / 16) * E + e : lane % 16);
  }
};

template <class X>
concept register_tile = requires { typename X::dtype; X::rows; X::cols; X::lay; X::tiles_r; X::tiles_c; };

// The MFMA accumulator for an M x N output.
template <int M, int N>
using rt_acc = rt<float, M, N, layout::col>;

// Register vectors aligned with a col-layout tile's rows (lane group l / 16 holds rows 4g..4g+3 of each 16-row block)
// or columns (lane l % 16 holds column l % 16 of each 16-column block).
enum class vec_align { rows, cols };

template <tile_element T, int N, vec_align A>
struct rv {
  using dtype = T;
  static constexpr int length = N;
  static constexpr vec_align align = A;
  static_assert(N % 16 == 0, "rv: length must be a multiple of 16");
  static constexpr int per_block = A == vec_align::rows ? 4 : 1;
  T data[N / 16][per_block];
};

}  // namespace hk
