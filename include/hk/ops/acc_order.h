// Operands in the accumulator's row order: an fp32 accumulator used as the col-layout (B) operand of the next mma
// with no cross-lane moves — attention's P^T straight from the S^T = K Q^T accumulator.
//
// An MFMA sums over k, so A and B only have to agree on which k each fragment element stands for. The accumulator of
// a K x N product (rt_acc, 16x16 blocks) holds in lane l, block i, register r the row 16 i + 4 (l / 16) + r; a
// col-layout operand holds in element e the row (l / 16) E + e of its 4E-row base tile. With E = 4 (16-bit on gfx942)
// the two are the same; with E = 8 (gfx950) they are a fixed permutation apart within every 32 rows. A col-layout
// tile whose k follows the accumulator's order — element e of base tile t is row 4E t + 16 (e / 4) + 4 (l / 16) +
// e % 4 ("acc order") — is therefore a register copy of the accumulator (copy_acc_order), and the operand it meets
// in the mma reads its rows in the same order (load_acc_order), which costs nothing more: on gfx950 each transposing
// read names other rows, elsewhere each element is its own read as in load.
#pragma once
#include "../types/rt.h"
#include "../types/st.h"
#include "maps.h"
#include "memory.h"
#include "scope.h"

namespace hk {

namespace detail {
template <class RT>
inline constexpr bool acc_order_tile = RT::lay == layout::col && std::same_as<typename RT::shape, mfma16> &&
                                       RT::run == RT::E && RT::E % 4 == 0;
}  // namespace detail

// d (col layout, acc order) = the accumulator s converted to d's element type: a copy, register by register.
template <register_tile D, int R, int C>
__device__ inline void copy_acc_order(D& d, const rt_acc<R, C>& s) {
  static_assert(detail::acc_order_tile<D>, "copy_acc_order: the destination is a col-layout mfma16 operand tile");
  static_assert(D::rows == R && D::cols == C, "copy_acc_order: the tiles must have the same shape");
  constexpr int blocks = D::E / 4;  // accumulator blocks per base tile of d
#pragma unroll
  for (int i = 0; i < D::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < D::tiles_c; ++j)
#pragma unroll
      for (int e = 0; e < D::E; ++e) d.data[i][j][e] = to<typename D::dtype>(s.data[i * blocks + e / 4][j][e % 4]);
}

// A col-layout register tile (acc order) from a shared tile: the partner of copy_acc_order's tile in an mma over k
// (on its own, or as the row-layout A operand of its transpose, which holds the same registers).
template <register_tile RT, shared_tile ST>
__device__ inline void load_acc_order(RT& dst, const ST& src, coord at = {}) {
  using T = typename RT::dtype;
  static_assert(detail::acc_order_tile<RT>, "load_acc_order: the destination is a col-layout mfma16 operand tile");
  static_assert(std::same_as<T, typename ST::dtype>, "load_acc_order: shared and register tiles must have the same element type");
  constexpr bool transposing = arch::current::lds_read_transpose && sizeof(T) == 2;
  const int lane = lane_id(), g = lane / 16;
  const int r0 = at.r * RT::rows, c0 = at.c * RT::cols;
#pragma unroll
  for (int i = 0; i < RT::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < RT::tiles_c; ++j) {
      if constexpr (transposing) {
        // Read h fills elements 4h .. 4h+3: rows 16 h + 4 g .. + 3 of the base tile. Lanes 4k .. 4k+3 of each group
        // of 16 name row 16 h + 4 g + k, four columns each; lane i receives column i.
        static_assert(ST::chunk_elems % 4 == 0, "load_acc_order: a transposing read must stay within one swizzle granule");
        const int k = (lane % 16) / 4, q = lane % 4;
#pragma unroll
        for (int h = 0; h < RT::E / 4; ++h) {
          const T* p = &src(r0 + i * RT::base_rows + 16 * h, 4 * g + k, c0 + j * RT::base_cols + q * 4);
          const auto v = __builtin_bit_cast(detail::chunk<T, 4>, arch::current::lds_read_tr16_b64(p));
#pragma unroll
          for (int e = 0; e < 4; ++e) dst.data[i][j][4 * h + e] = v.v[e];
        }
      } else {
#pragma unroll
        for (int e = 0; e < RT::E; ++e)
          dst.data[i][j][e] = src(r0 + i * RT::base_rows + 16 * (e / 4), 4 * g + e % 4, c0 + j * RT::base_cols + lane % 16);
      }
    }
}

}  // namespace hk
