// Operands in the accumulator's row order: an fp32 accumulator used as the col-layout (B) operand of the next mma
// with no cross-lane moves — attention's P^T straight from the S^T = K Q^T accumulator.
//
// An MFMA sums over k, so A and B only have to agree on which k each fragment element stands for. With G = 64 / dim
// lane groups (4 for 16x16 blocks, 2 for 32x32), the accumulator holds in lane l, register r of a block the row
// 4 G (r / 4) + 4 (l / dim) + r % 4; a col-layout operand holds in element e the row (l / dim) E + e of its base tile
// of G E rows. Where E = 4 (16-bit on gfx942) the two are the same; where E = 8 (gfx950) they are a fixed permutation
// apart. A col-layout tile whose k follows the accumulator's order — element e of base tile t is row G E t +
// 4 G (e / 4) + 4 (l / dim) + e % 4 ("acc order") — is therefore a register copy of the accumulator (copy_acc_order),
// and the operand it meets in the mma reads its rows in the same order (load_acc_order), which costs nothing more: on
// gfx950 each transposing read names other rows, elsewhere each element is its own read as in load.
#pragma once
#include "../types/rt.h"
#include "../types/st.h"
#include "maps.h"
#include "memory.h"
#include "scope.h"

namespace hk {

namespace detail {
template <class RT>
inline constexpr bool acc_order_tile = RT::lay == layout::col && RT::run == RT::E && RT::E % 4 == 0;

// The row within an acc-order tile of element e of base tile t, less the lane's part 4 (l / dim).
template <class RT>
__host__ __device__ constexpr int acc_order_row(int t, int e) {
  return RT::groups * RT::E * t + 4 * RT::groups * (e / 4) + e % 4;
}
}  // namespace detail

// d (col layout, acc order) = the accumulator s converted to d's element type (by `cvt`, to<> unless given): a copy,
// register by register.
struct acc_order_to {
  template <class T>
  __device__ T operator()(float x, T*) const { return to<T>(x); }
};
template <register_tile D, int R, int C, mfma_shape S, class Cvt = acc_order_to>
__device__ inline void copy_acc_order(D& d, const rt_acc<R, C, S>& s, Cvt cvt = {}) {
  static_assert(detail::acc_order_tile<D>, "copy_acc_order: the destination is a col-layout operand tile");
  static_assert(std::same_as<typename D::shape, S>, "copy_acc_order: operand and accumulator of one MFMA family");
  static_assert(D::rows == R && D::cols == C, "copy_acc_order: the tiles must have the same shape");
  constexpr int dim = S::dim, G = D::groups;
#pragma unroll
  for (int i = 0; i < D::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < D::tiles_c; ++j)
#pragma unroll
      for (int e = 0; e < D::E; ++e) {
        // The accumulator's block and register holding this row (the lane parts agree).
        const int row = detail::acc_order_row<D>(i, e), block = row / dim, reg = (row % dim) / (4 * G) * 4 + row % 4;
        d.data[i][j][e] = cvt(s.data[block][j][reg], static_cast<typename D::dtype*>(nullptr));
      }
}

// A col-layout register tile (acc order) from a shared tile: the partner of copy_acc_order's tile in an mma over k
// (on its own, or as the row-layout A operand of its transpose, which holds the same registers).
template <register_tile RT, shared_tile ST>
__device__ inline void load_acc_order(RT& dst, const ST& src, coord at = {}) {
  using T = typename RT::dtype;
  static_assert(detail::acc_order_tile<RT>, "load_acc_order: the destination is a col-layout operand tile");
  static_assert(std::same_as<T, typename ST::dtype>, "load_acc_order: shared and register tiles must have the same element type");
  constexpr bool transposing = arch::current::lds_read_transpose && sizeof(T) == 2;
  const int lane = lane_id(), g = lane / RT::dim;
  const int r0 = at.r * RT::rows, c0 = at.c * RT::cols;
#pragma unroll
  for (int i = 0; i < RT::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < RT::tiles_c; ++j) {
      if constexpr (transposing) {
        // Read h fills elements 4h .. 4h+3: rows 4 G h + 4 g .. + 3 of the base tile. Lanes 4k .. 4k+3 of each group
        // of 16 (columns s .. s+15) name row 4 G h + 4 g + k, four columns each; lane i receives column s + i.
        static_assert(ST::chunk_elems % 4 == 0, "load_acc_order: a transposing read must stay within one swizzle granule");
        const int k = (lane % 16) / 4, q = lane % 4, s16 = (lane % RT::dim) / 16 * 16;
#pragma unroll
        for (int h = 0; h < RT::E / 4; ++h) {
          const T* p = &src(r0 + i * RT::base_rows + 4 * RT::groups * h, 4 * g + k, c0 + j * RT::base_cols + s16 + q * 4);
          const auto v = __builtin_bit_cast(detail::chunk<T, 4>, arch::current::lds_read_tr16_b64(p));
#pragma unroll
          for (int e = 0; e < 4; ++e) dst.data[i][j][4 * h + e] = v.v[e];
        }
      } else {
#pragma unroll
        for (int e = 0; e < RT::E; ++e)
          dst.data[i][j][e] = src(r0 + detail::acc_order_row<RT>(i, e) - e % 4, 4 * g + e % 4, c0 + j * RT::base_cols + lane % RT::dim);
      }
    }
}

}  // namespace hk
