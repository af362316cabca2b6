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
#pragma unroll
        for (int p0 = 0; p0 < RT::E; p0 += RT::run) {  // one vector load per run of the lane's elements
          const T* p = src.at(at.b, at.d, r0 + RT::row_of(i, lane, p0), c0 + RT::col_of(j, lane, p0));
          auto c = *reinterpret_cast<const detail::chunk<T, RT::run>*>(p);
#pragma unroll
          for (int e = 0; e < RT::run; ++e) dst.data[i][j][p0 + e] = c.v[e];
        }
      } else {
#pragma unroll
        for (int e = 0; e < RT::E; ++e)
          dst.data[i][j][e] = *src.at(at.b, at.d, r0 + RT::row_of(i, lane, e), c0 + RT::col_of(j, lane, e));
      }
    }
}

namespace detail {

// *address(i, j, e) = alpha * element (+ beta * *address when beta != 0) for every element of the lane; with Checked, a
// null address (outside the tensor) is skipped. The beta test is made once, not per element.
template <bool Checked, register_tile RT, class Address>
__device__ inline void store_elements(const RT& src, float alpha, float beta, Address address) {
  auto each = [&]<bool ReadDst>() __attribute__((always_inline)) {
#pragma unroll
    for (int i = 0; i < RT::tiles_r; ++i)
#pragma unroll
      for (int j = 0; j < RT::tiles_c; ++j)
#pragma unroll
        for (int e = 0; e < RT::E; ++e) {
          auto* p = address(i, j, e);
          if (Checked && p == nullptr) continue;
          float v = alpha * static_cast<float>(src.data[i][j][e]);
          if constexpr (ReadDst) v += beta * static_cast<float>(*p);
          *p = static_cast<std::remove_reference_t<decltype(*p)>>(v);
        }
  };
  if (beta != 0.f) each.template operator()<true>();
  else each.template operator()<false>();
}

// Register tile to global memory: dst = alpha * src (+ beta * dst when beta != 0), converted to the tensor's type.
// When `bounded`, elements outside the tensor are skipped.
template <bool bounded, class Lane = lane_of_thread, class GL, register_tile RT>
__device__ inline void store_global(const GL& dst, const RT& src, coord at, float alpha, float beta) {
  using T = typename GL::dtype;
  const int lane = Lane{}();
  const int r0 = at.r * RT::rows, c0 = at.c * RT::cols;
  const long ld = dst.row_stride();
  // A tile inside the tensor (the common case) needs no per-element test. Each element's address is then a part the
  // wave shares (the tile's origin, the element's row and column within the tile) plus the lane's own 32-bit offset:
  // one store with a scalar base (saddr) and no vector address arithmetic. The tile's origin is the same for the
  // whole wave (a register tile is the wave's); reading it from the first lane tells the compiler so.
  const int r0_uniform = __builtin_amdgcn_readfirstlane(r0), c0_uniform = __builtin_amdgcn_readfirstlane(c0);
  if ((!bounded || (r0_uniform + RT::rows <= dst.rows() && c0_uniform + RT::cols <= dst.cols())) &&
      ld * RT::rows < (1l << 31) / long(sizeof(T))) {
    char* tile = reinterpret_cast<char*>(dst.at(__builtin_amdgcn_readfirstlane(at.b), __builtin_amdgcn_readfirstlane(at.d),
                                                r0_uniform, c0_uniform));
    const unsigned lane_offset = unsigned((RT::row_lane_part(lane) * ld + RT::col_lane_part(lane)) * long(sizeof(T)));
    store_elements<false>(src, alpha, beta, [&](int i, int j, int e) __attribute__((always_inline)) {
      return reinterpret_cast<T*>(tile + (RT::row_tile_part(i, e) * ld + RT::col_tile_part(j, e)) * long(sizeof(T)) +
                                  lane_offset);
    });
    return;
  }
  store_elements<bounded>(src, alpha, beta, [&](int i, int j, int e) __attribute__((always_inline)) -> T* {
    const int r = r0 + RT::row_of(i, lane, e), c = c0 + RT::col_of(j, lane, e);
    return !bounded || dst.inside(r, c) ? dst.at(at.b, at.d, r, c) : nullptr;
  });
}

}  // namespace detail

// Register tile to global memory (with conversion to the tensor's element type).
template <class GL, register_tile RT>
__device__ inline void store(const GL& dst, const RT& src, coord at) {
  detail::store_global<false>(dst, src, at, 1.f, 0.f);
}

namespace detail {

// A shared tile to or from global memory (ToShared), by all threads of group G: 16-byte global accesses where the
// tensor's rows start on 16-byte boundaries, element accesses otherwise (any leading dimension, any element-aligned
// pointer); LDS in swizzle-granule pieces. When `bounded`, elements outside the tensor read as zero (loads) or are not
// written (stores): a 16-byte chunk that crosses its edge moves element by element. ST may be const for stores.
template <class G, bool bounded, bool ToShared, class ST, class GL>
__device__ inline void move_shared(ST& sh, const GL& g, coord at) {
  using T = typename GL::dtype;
  static_assert(std::same_as<std::remove_const_t<typename ST::dtype>, T>, "shared <-> global: one element type");
  constexpr int per16 = 16 / int(sizeof(T)), piece = ST::chunk_elems;
  constexpr int chunks_per_row = ST::cols / per16, chunks = ST::rows * chunks_per_row;
  const int r0 = at.r * ST::rows, c0 = at.c * ST::cols;
  const bool vector = (reinterpret_cast<uintptr_t>(g.at(at.b, at.d, 0, 0)) | uintptr_t(g.row_stride() * sizeof(T))) % 16 == 0;
  for (int q = G::thread(); q < chunks; q += G::threads) {
    const int r = q / chunks_per_row, c = (q % chunks_per_row) * per16;
    const int gr = r0 + r, gc = c0 + c;
    T* gp = g.at(at.b, at.d, gr, gc);
    const bool whole = vector && (!bounded || (gr < g.rows() && gc + per16 <= g.cols()));
    chunk<T, per16> v;
    if constexpr (ToShared) {
      if (whole) {
        v = *reinterpret_cast<const chunk<T, per16>*>(gp);
      } else {
#pragma unroll
        for (int e = 0; e < per16; ++e) v.v[e] = !bounded || g.inside(gr, gc + e) ? gp[e] : T(0);
      }
#pragma unroll
      for (int p = 0; p < per16 / piece; ++p)
        *reinterpret_cast<chunk<T, piece>*>(&sh(r, c + p * piece)) = *reinterpret_cast<const chunk<T, piece>*>(&v.v[p * piece]);
    } else {
#pragma unroll
      for (int p = 0; p < per16 / piece; ++p)
        *reinterpret_cast<chunk<T, piece>*>(&v.v[p * piece]) = *reinterpret_cast<const chunk<T, piece>*>(&sh(r, c + p * piece));
      if (whole) {
        *reinterpret_cast<chunk<T, per16>*>(gp) = v;
      } else {
#pragma unroll
        for (int e = 0; e < per16; ++e)
          if (!bounded || g.inside(gr, gc + e)) gp[e] = v.v[e];
      }
    }
  }
}

}  // namespace detail

// Shared tile from global memory, by all threads of group G (the tile lies inside the tensor).
template <class G, shared_tile ST, class GL>
__device__ inline void load(ST& dst, const GL& src, coord at) {
  detail::move_shared<G, false, true>(dst, src, at);
}

// Shared tile to global memory, by all threads of group G (the tile lies inside the tensor).
template <class G, class GL, shared_tile ST>
__device__ inline void store(const GL& dst, const ST& src, coord at) {
  detail::move_shared<G, false, false>(src, dst, at);
}

// Register tile from a shared tile (rows and columns of the tile at `at` within the shared tile, in tile units).
// Row layout: each lane reads its E contiguous elements in swizzle granules, the LDS's widest read on the arch
// (conflict free by construction for 16-bit tiles, whose E is one granule).
// Col layout (the B operand of mma_AB from a row-major K x N shared tile): on archs with transposing LDS reads
// (gfx950) 16-bit tiles take ds_read_b64_tr_b16 and fp8 tiles ds_read_b64_tr_b8, one read per 4 (8) elements;
// elsewhere each element is its own read (see tests/hk/layout_test.hip for the bank conflicts of each path).
template <register_tile RT, shared_tile ST>
__device__ inline void load(RT& dst, const ST& src, coord at = {}) {
  using T = typename RT::dtype;
  static_assert(std::same_as<T, typename ST::dtype>, "load: shared and register tiles must have the same element type");
  const int lane = lane_id();
  const int r0 = at.r * RT::rows, c0 = at.c * RT::cols;
  // Elements per read in the row layout: the lane's run, cut at swizzle granules.
  constexpr int piece = RT::run < ST::chunk_elems ? RT::run : ST::chunk_elems;
  // Elements per transposing read in the col layout (0: none on this arch for this type).
  constexpr int tr = !arch::current::lds_read_transpose ? 0 : sizeof(T) == 2 ? 4 : sizeof(T) == 1 ? 8 : 0;
#pragma unroll
  for (int i = 0; i < RT::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < RT::tiles_c; ++j) {
      if constexpr (RT::lay == layout::row && RT::run % piece == 0 && ST::chunk_elems % piece == 0) {
#pragma unroll
        for (int p = 0; p < RT::E; p += piece) {
          auto c = *reinterpret_cast<const detail::chunk<T, piece>*>(&src(r0 + RT::row_tile_part(i, p), RT::row_lane_part(lane), c0 + RT::col_of(j, lane, p)));
#pragma unroll
          for (int e = 0; e < piece; ++e) dst.data[i][j][p + e] = c.v[e];
        }
      } else if constexpr (RT::lay == layout::col && tr != 0 && RT::E % tr == 0 && RT::run == RT::E) {
        // Read h fills elements h*tr .. h*tr + tr-1 of each lane: rows (lane / D) * E + h*tr + k of the base tile,
        // column lane % D (D = 16 or 32). Within each group of 16 lanes (columns s..s+15, s = 16 * ((lane % D) / 16)),
        // lanes k * lanes_per_row .. name row k (tr elements each: 8 bytes) and lane i receives column s + i.
        constexpr int per = tr, lanes_per_row = 16 / tr;
        static_assert(ST::chunk_elems % per == 0, "load: a transposing read must stay within one swizzle granule");
        const int g = lane / RT::dim, s16 = (lane % RT::dim) / 16 * 16, k = (lane % 16) / lanes_per_row,
                  q = lane % lanes_per_row;
#pragma unroll
        for (int h = 0; h < RT::E / tr; ++h) {
          const T* p = &src(r0 + i * RT::base_rows + h * tr, g * RT::E + k, c0 + j * RT::base_cols + s16 + q * per);
          if constexpr (sizeof(T) == 2) {
            const auto v = __builtin_bit_cast(detail::chunk<T, 4>, arch::current::lds_read_tr16_b64(p));
#pragma unroll
            for (int e = 0; e < tr; ++e) dst.data[i][j][h * tr + e] = v.v[e];
          } else {
            const auto v = __builtin_bit_cast(detail::chunk<T, 8>, arch::current::lds_read_tr8_b64(p));
#pragma unroll
            for (int e = 0; e < tr; ++e) dst.data[i][j][h * tr + e] = v.v[e];
          }
        }
      } else {
#pragma unroll
        for (int e = 0; e < RT::E; ++e) dst.data[i][j][e] = src(r0 + RT::row_tile_part(i, e), RT::row_lane_part(lane), c0 + RT::col_of(j, lane, e));
      }
    }
}

// Shared tile from a register tile (with conversion to the shared tile's element type). Row layout: one write per
// swizzle granule of the lane's run; col layout: one write per element.
template <shared_tile ST, register_tile RT>
__device__ inline void store(ST& dst, const RT& src, coord at = {}) {
  using T = typename ST::dtype;
  const int lane = lane_id();
  const int r0 = at.r * RT::rows, c0 = at.c * RT::cols;
  constexpr int piece = RT::run < ST::chunk_elems ? RT::run : ST::chunk_elems;
#pragma unroll
  for (int i = 0; i < RT::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < RT::tiles_c; ++j) {
      if constexpr (RT::lay == layout::row && RT::run % piece == 0 && ST::chunk_elems % piece == 0) {
#pragma unroll
        for (int p = 0; p < RT::E; p += piece) {
          detail::chunk<T, piece> c;
#pragma unroll
          for (int e = 0; e < piece; ++e) c.v[e] = static_cast<T>(static_cast<float>(src.data[i][j][p + e]));
          *reinterpret_cast<detail::chunk<T, piece>*>(&dst(r0 + RT::row_tile_part(i, p), RT::row_lane_part(lane), c0 + RT::col_of(j, lane, p))) = c;
        }
      } else {
#pragma unroll
        for (int e = 0; e < RT::E; ++e)
          dst(r0 + RT::row_tile_part(i, e), RT::row_lane_part(lane), c0 + RT::col_of(j, lane, e)) = static_cast<T>(static_cast<float>(src.data[i][j][e]));
      }
    }
}

}  // namespace hk
