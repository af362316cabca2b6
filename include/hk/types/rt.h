// Register tiles: each lane holds its fragment exactly as the MFMA wants it, so mma needs no shuffles.
//
// A tile is a grid of base tiles of one MFMA family (Shape: mfma16, the default, or mfma32). With D = Shape::dim (16
// or 32) and G = 64 / D lane groups: in the row layout a base tile is D rows x G*E columns and lane l holds row l % D,
// columns v(l, e) for e < E; in the col layout it is G*E rows x D columns and lane l holds column l % D, rows v(l, e).
// v(l, e) = (e / run) * G*run + (l / D) * run + e % run: the lane holds runs of `run` consecutive elements, one per
// lane group in turn. For operand types run = E, so v = (l / D) * E + e.
//   mfma16: E is K/4 of the arch's 16x16 MFMA for 16-bit types (4 on gfx942, 8 on gfx950), K/4 of the arch's 16x16
//           fp8 MFMA for fp8e4m3 / fp8e5m2 (8 on gfx942, 32 on gfx950) and 4 for float (run 4), so a float col tile
//           of 16x16 blocks is exactly the 16x16 MFMA accumulator.
//   mfma32: E is K/2 of the arch's 32x32 MFMA for 16-bit types (4 on gfx942: 32x32x8, 8 on gfx950: 32x32x16) and
//           for fp8 (8 on gfx942: 32x32x16_fp8, 32 on gfx950: 32x32x64_f8f6f4), base tile 32 x 2E; float has E = 16
//           in runs of 4, so a float col tile of 32x32 blocks is exactly the 32x32 accumulator (lane l, element e:
//           row 8 (e / 4) + 4 (l / 32) + e % 4, column l % 32).
#pragma once
#include "../arch.h"
#include "dtypes.h"

namespace hk {

enum class layout { row, col };

// The MFMA family a register tile is laid out for.
struct mfma16 {
  static constexpr int dim = 16;
};
struct mfma32 {
  static constexpr int dim = 32;
};
template <class S>
concept mfma_shape = std::same_as<S, mfma16> || std::same_as<S, mfma32>;

template <tile_element T, class S = mfma16>
inline constexpr int elems_per_lane = std::same_as<S, mfma16>
    ? (std::same_as<T, float> ? 4 : fp8_input<T> ? arch::fp8_elems : arch::mfma_elems)
    : (std::same_as<T, float> ? 16 : fp8_input<T> ? arch::fp8_elems32 : arch::mfma32_elems);

// Consecutive elements (along the varying coordinate) a lane holds in one run.
template <tile_element T, class S = mfma16>
inline constexpr int run_per_lane = std::same_as<T, float> ? 4 : elems_per_lane<T, S>;

template <tile_element T, int R, int C, layout L = layout::row, mfma_shape Shape = mfma16>
struct rt {
  using dtype = T;
  using shape = Shape;
  static constexpr int rows = R, cols = C;
  static constexpr layout lay = L;
  static constexpr int dim = Shape::dim, groups = 64 / dim;
  static constexpr int E = elems_per_lane<T, Shape>;
  static constexpr int run = run_per_lane<T, Shape>;
  static constexpr int base_rows = L == layout::row ? dim : groups * E;
  static constexpr int base_cols = L == layout::row ? groups * E : dim;
  static_assert(R % base_rows == 0,
                "rt: rows must be a multiple of the base tile's rows (16 or 32 for row layout, (64/16 or 64/32)*E for col)");
  static_assert(C % base_cols == 0,
                "rt: cols must be a multiple of the base tile's cols ((64/16 or 64/32)*E for row layout, 16 or 32 for col)");
  static constexpr int tiles_r = R / base_rows, tiles_c = C / base_cols;

  T data[tiles_r][tiles_c][E];

  // The varying coordinate (column in the row layout, row in the col layout) of element e held by `lane`.
  __host__ __device__ static constexpr int vary_of(int lane, int e) {
    return (e / run) * (groups * run) + (lane / dim) * run + e % run;
  }
  // The (row, col) within the tile of element e of base tile (tr, tc) held by `lane`.
  __host__ __device__ static constexpr int row_of(int tr, int lane, int e) {
    return tr * base_rows + (L == layout::row ? lane % dim : vary_of(lane, e));
  }
  __host__ __device__ static constexpr int col_of(int tc, int lane, int e) {
    return tc * base_cols + (L == layout::row ? vary_of(lane, e) : lane % dim);
  }
  // row_of as the sum of a part the wave shares (base tile and element) and the lane's own, which share no set bit:
  // shared tiles swizzle the two apart (st::idx).
  __host__ __device__ static constexpr int row_tile_part(int tr, int e) {
    return tr * base_rows + (L == layout::row ? 0 : (e / run) * (groups * run) + e % run);
  }
  __host__ __device__ static constexpr int row_lane_part(int lane) { return L == layout::row ? lane % dim : (lane / dim) * run; }
  // The same split of col_of.
  __host__ __device__ static constexpr int col_tile_part(int tc, int e) {
    return tc * base_cols + (L == layout::col ? 0 : (e / run) * (groups * run) + e % run);
  }
  __host__ __device__ static constexpr int col_lane_part(int lane) { return L == layout::col ? lane % dim : (lane / dim) * run; }
};

template <class X>
concept register_tile = requires { typename X::dtype; typename X::shape; X::rows; X::cols; X::lay; X::tiles_r; X::tiles_c; };

// The MFMA accumulator for an M x N output: of 16x16 blocks (default) or 32x32 blocks (rt_acc<M, N, mfma32>).
template <int M, int N, mfma_shape S = mfma16>
using rt_acc = rt<float, M, N, layout::col, S>;
template <int M, int N>
using rt_acc32 = rt<float, M, N, layout::col, mfma32>;

// Register vectors aligned with an accumulator tile's rows or columns. mfma16: rows: lane group l / 16 holds rows
// 4g..4g+3 of each 16-row block; cols: lane l % 16 holds column l % 16 of each 16-column block. mfma32: rows: lane
// half l / 32 holds the 16 rows 8 (e / 4) + 4 h + e % 4 of each 32-row block; cols: lane l % 32 holds column l % 32 of
// each 32-column block.
enum class vec_align { rows, cols };

template <tile_element T, int N, vec_align A, mfma_shape S = mfma16>
struct rv {
  using dtype = T;
  using shape = S;
  static constexpr int length = N;
  static constexpr vec_align align = A;
  static_assert(N % S::dim == 0, "rv: length must be a multiple of the MFMA block (16, or 32 for mfma32)");
  static constexpr int per_block = A == vec_align::rows ? elems_per_lane<float, S> : 1;
  T data[N / S::dim][per_block];
};
template <tile_element T, int N, vec_align A>
using rv32 = rv<T, N, A, mfma32>;

}  // namespace hk
