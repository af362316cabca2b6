// Layout swaps and transposes of register tiles, and the accumulator -> operand conversion of attention.
//
// swap_layout(dst, src): the same matrix in another layout (and element type). transpose(dst, src): dst = src^T.
// Each has a register path (cross-lane, no LDS) where the lane mapping allows one, and an overload that goes through a
// caller-provided shared tile for every other pair:
//
//   register path (no scratch): src has E = 4 (fp32 tiles, 16-bit tiles on gfx942) and either
//     - dst has E = 4 and the other layout (row <-> col), or
//     - src is col layout and dst row layout with any E: rt_acc<M, N> -> rt<bf16/half/fp8, M, N, row>, the P of
//       attention as the A operand of the next mma (E = 4 or 8 for 16-bit, 8 or 32 for fp8, on gfx942 / gfx950);
//   or, in the 32x32 family, src is the accumulator (rt_acc32) and dst a row-layout operand (16-bit or fp8);
//   through shared memory (scratch: st<dst dtype, rows, cols> owned by this wave): any pair.
//
// The register path is a gather done in E rounds of ds_bpermute (E = the larger of the two, at most 16 per round
// set): in round k every lane sends the element its readers need (a lane-dependent rotation of its registers) and
// receives one of its own (a lane-dependent rotation back), so each round moves one 32-bit value per lane.
#pragma once
#include "../types/rt.h"
#include "../types/st.h"
#include "maps.h"
#include "memory.h"
#include "scope.h"
#include "sync.h"

namespace hk {

namespace detail {

// x[m] <- x[(m + k) % N] for a lane-dependent k in [0, N): log2(N) conditional rotations by powers of two.
template <int N>
__device__ inline void rotate_left(float (&x)[N], int k) {
  static_assert((N & (N - 1)) == 0, "rotate_left: N must be a power of two");
#pragma unroll
  for (int b = 1; b < N; b <<= 1) {
    float y[N];
#pragma unroll
    for (int m = 0; m < N; ++m) y[m] = x[(m + b) % N];
    const bool on = k & b;
#pragma unroll
    for (int m = 0; m < N; ++m) x[m] = on ? y[m] : x[m];
  }
}

__device__ inline float bpermute(int src_lane, float v) {
  return __builtin_bit_cast(float, __builtin_amdgcn_ds_bpermute(src_lane * 4, __builtin_bit_cast(int, v)));
}

// W rounds of ds_bpermute, the gather both register paths below are built on. The sender rotates its registers by
// `send` so that round k sends in[k]; in round k the lane reads lane from[k] and receives its slot (want - k) mod W;
// a reflection and a rotation by want file slot m at out[m] with no dynamic register indexing.
template <int W>
__device__ inline void bpermute_rounds(float (&in)[W], const int (&from)[W], int send, int want, float (&out)[W]) {
  rotate_left(in, send);
  float got[W];
#pragma unroll
  for (int k = 0; k < W; ++k) got[k] = bpermute(from[k], in[k]);
#pragma unroll
  for (int m = 0; m < W; ++m) out[m] = got[(W - m) % W];
  rotate_left(out, (W - want % W) % W);
}

// N converted elements into d[0..N): fp8 two at a time (one v_cvt_pk_fp8_f32 per pair), others one by one.
template <class T, int N>
__device__ inline void put(T* d, const float (&v)[N]) {
  if constexpr (fp8_input<T> && N % 2 == 0) {
#pragma unroll
    for (int m = 0; m < N; m += 2) {
      const uint32_t w = arch::current::fp8_encode2<T::format, false>(v[m], v[m + 1], 0u);
      d[m] = T::from_bits(uint8_t(w));
      d[m + 1] = T::from_bits(uint8_t(w >> 8));
    }
  } else {
#pragma unroll
    for (int m = 0; m < N; ++m) d[m] = to<T>(v[m]);
  }
}

template <class X>
inline constexpr layout other_layout = X::lay == layout::row ? layout::col : layout::row;

// The register path's condition (see the header comment).
template <class D, class S>
inline constexpr bool register_swappable =
    std::same_as<typename D::shape, mfma16> && std::same_as<typename S::shape, mfma16> && S::E == 4 && D::lay != S::lay && (D::E == 4 || (S::lay == layout::col && D::lay == layout::row && D::E % 4 == 0 &&
                                                      (D::E <= 16 || D::E % 16 == 0)));

template <class Lane = lane_of_thread, class D, class S>
__device__ inline void swap_layout_registers(D& d, const S& s) {
  // dst base tile (i, j): lane l holds "fixed" coordinate f = l % 16 (its row in the row layout, its column in the
  // col layout) and varying coordinate v = E*(l/16) + e. The source element at (f, v) lives in src tile (i, j*E/4 +
  // v/16), lane v%16 + 16*(f/4), register f%4 (the E = 4 layouts of both kinds are each other's transposes).
  // Elements are gathered in H sets of W <= 16: set h takes v = E*g + W*h + e' from the Q = W/4 src tiles
  // j*E/4 + q*H + h, whose 4Q registers a lane lays out as in[4q + m].
  constexpr int E = D::E, W = E < 16 ? E : 16, H = E / W, Q = W / 4;
  const int lane = Lane{}(), f = lane % 16, g = lane / 16;
  int from[H][W];  // round k of set h: the lane this lane reads
  int need[H];     // the index into the sender's in[] this lane needs
#pragma unroll
  for (int h = 0; h < H; ++h) {
    need[h] = 4 * (((E * g + W * h) / 16) / H) + f % 4;
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const int e = ((need[h] - k) % W + W) % W;  // the element filled in round k
      from[h][k] = (E * g + W * h + e) % 16 + 16 * (f / 4);
    }
  }
#pragma unroll
  for (int i = 0; i < D::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < D::tiles_c; ++j)
#pragma unroll
      for (int h = 0; h < H; ++h) {
        float in[W], out[W];
#pragma unroll
        for (int q = 0; q < Q; ++q)
#pragma unroll
          for (int m = 0; m < 4; ++m) in[4 * q + m] = fl(s.data[i][j * (E / 4) + q * H + h][m]);
        // Round k sends in[(lane + k) % W], what the lanes reading this one need, and receives element need - k.
        bpermute_rounds(in, from[h], lane % W, need[h], out);
        put(&d.data[i][j][W * h], out);
      }
}

// The 32x32 accumulator (lane l, register x: row 8 (x / 4) + 4 (l / 32) + x % 4, column l % 32) as a row-layout
// mfma32 tile (lane L: row r = L % 32, columns (L / 32) E + e of each 2E-wide base tile). A lane needs register
// x(r) = 4 (r / 8) + r % 4 of the lanes of its row's accumulator half (r / 4) % 2 whose columns it holds, and each of
// those senders' registers goes to a different lane. Senders are numbered by sigma(column) so that a receiver's
// senders are sigma = 0..W-1; then W rounds of ds_bpermute move everything: in round k a sender sends slot
// (sigma + k) % W of its registers and a receiver reads the sender with sigma = want - k. E <= 16: W = 16 over one
// accumulator block (a lane's 16 senders fill 16 / E destination tiles). E = 32 (fp8 on gfx950): a destination tile
// spans two accumulator blocks, one per lane half, so W = 32 over pairs of blocks and every column is a sender.
template <class Lane = lane_of_thread, class D, class S>
__device__ inline void acc32_to_row_registers(D& d, const S& s) {
  constexpr int E = D::E, W = E <= 16 ? 16 : 32, blocks = W / 16;  // accumulator blocks per round set
  const int lane = Lane{}(), r = lane % 32, h = lane / 32, c = lane % 32;
  const int half = (r / 4) % 2, want = (W == 32 ? 16 * h : 0) + 4 * (r / 8) + r % 4;
  const int sigma = W == 32 ? c : (c / (2 * E)) * E + c % E;
  int from[W];
#pragma unroll
  for (int k = 0; k < W; ++k) {
    const int slot = ((want - k) % W + W) % W, t = slot / E, e = slot % E;  // destination tile t, element e
    from[k] = (t * 2 * E + h * E + e) % 32 + 32 * half;
  }
#pragma unroll
  for (int i = 0; i < D::tiles_r; ++i)
#pragma unroll
    for (int jj = 0; jj < S::tiles_c; jj += blocks) {
      float in[W], out[W];
#pragma unroll
      for (int b = 0; b < blocks; ++b)
#pragma unroll
        for (int x = 0; x < 16; ++x) in[16 * b + x] = s.data[i][jj + b][x];
      bpermute_rounds(in, from, sigma, want, out);
#pragma unroll
      for (int t = 0; t < W / E; ++t) {
        float v[E];
#pragma unroll
        for (int e = 0; e < E; ++e) v[e] = out[t * E + e];
        put(&d.data[i][jj * 16 / E + t][0], v);
      }
    }
}

template <class D, class S>
inline constexpr bool acc32_swappable = std::same_as<typename D::shape, mfma32> && std::same_as<typename S::shape, mfma32> &&
                                        std::same_as<typename S::dtype, float> && S::lay == layout::col &&
                                        D::lay == layout::row && !std::same_as<typename D::dtype, float> && (D::E <= 16 || D::E == 32);

// A register tile of the same matrix as X transposed, in the other layout: the same registers, tiles reindexed.
template <class X>
using transposed_view = rt<typename X::dtype, X::cols, X::rows, other_layout<X>, typename X::shape>;

template <class V, class X>
__device__ inline void transpose_view(V& v, const X& x) {
#pragma unroll
  for (int i = 0; i < X::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < X::tiles_c; ++j)
#pragma unroll
      for (int e = 0; e < X::E; ++e) v.data[j][i][e] = x.data[i][j][e];
}

}  // namespace detail

// Whether swap_layout(d, s) has a register path for these tile types (otherwise pass a shared scratch tile).
template <class D, class S>
inline constexpr bool swappable_in_registers =
    (D::lay == S::lay && D::E == S::E && std::same_as<typename D::shape, typename S::shape>) || detail::register_swappable<D, S> ||
    detail::acc32_swappable<D, S>;

// dst = src as a tile of another layout and/or element type, through registers only (see the header comment for
// the pairs this covers; the scratch overload takes every pair). (Lane: scope.h.)
template <class Lane = lane_of_thread, register_tile D, register_tile S>
__device__ inline void swap_layout(D& d, const S& s) {
  static_assert(D::rows == S::rows && D::cols == S::cols, "swap_layout: tiles must have the same shape");
  if constexpr (D::lay == S::lay && D::E == S::E && std::same_as<typename D::shape, typename S::shape>) {
    copy(d, s);
  } else if constexpr (detail::acc32_swappable<D, S>) {
    detail::acc32_to_row_registers<Lane>(d, s);
  } else {
    static_assert(detail::register_swappable<D, S>,
                  "swap_layout: no register path between these layouts (mfma16: the source needs E = 4, and a col -> "
                  "row swap or E = 4 on both sides; mfma32: the accumulator to a row-layout operand); pass a shared "
                  "scratch tile: swap_layout(dst, src, scratch)");
    detail::swap_layout_registers<Lane>(d, s);
  }
}

// The same through a shared tile owned by this wave (st<D::dtype, rows, cols>): any layouts and element types.
template <register_tile D, register_tile S, shared_tile ST>
__device__ inline void swap_layout(D& d, const S& s, ST& scratch) {
  static_assert(D::rows == S::rows && D::cols == S::cols, "swap_layout: tiles must have the same shape");
  static_assert(std::same_as<typename ST::dtype, typename D::dtype> && ST::rows == D::rows && ST::cols == D::cols,
                "swap_layout: the scratch must be an st of the destination's element type and shape");
  store(scratch, s);
  wave_barrier();
  load(d, scratch);
  wave_barrier();  // the next use of the scratch writes after these reads
}

// The attention conversion: the fp32 accumulator (of either MFMA family) as the A operand (row layout, 16-bit or fp8,
// the same family) of the next mma, in registers.
template <register_tile D, int M, int N, mfma_shape Shape>
__device__ inline void acc_to_operand(D& d, const rt_acc<M, N, Shape>& acc) {
  static_assert(D::lay == layout::row && !std::same_as<typename D::dtype, float>,
                "acc_to_operand: the destination is a row-layout bf16, half, fp8e4m3 or fp8e5m2 tile");
  static_assert(std::same_as<typename D::shape, Shape>, "acc_to_operand: the operand is of the accumulator's MFMA family");
  swap_layout(d, acc);
}

// The same through a shared tile owned by this wave (st<D::dtype, M, N>), for either MFMA family.
template <register_tile D, int M, int N, mfma_shape S, shared_tile ST>
__device__ inline void acc_to_operand(D& d, const rt_acc<M, N, S>& acc, ST& scratch) {
  static_assert(D::lay == layout::row && !std::same_as<typename D::dtype, float>,
                "acc_to_operand: the destination is a row-layout bf16, half, fp8e4m3 or fp8e5m2 tile");
  static_assert(std::same_as<typename D::shape, S>, "acc_to_operand: accumulator and operand of different MFMA families");
  swap_layout(d, acc, scratch);
}

// dst = src^T (dst is src's cols x rows), in any layout and element type. The transpose that also flips the layout
// (row <-> col with the same E) is free: the registers stay, only tile indices change. Otherwise it is that plus a
// swap_layout in registers (where the register path covers it: see above).
template <class Lane = lane_of_thread, register_tile D, register_tile S>
__device__ inline void transpose(D& d, const S& s) {
  static_assert(D::rows == S::cols && D::cols == S::rows, "transpose: the destination must be the source's cols x rows");
  detail::transposed_view<S> v;
  detail::transpose_view(v, s);
  swap_layout<Lane>(d, v);
}

// The same through a shared tile owned by this wave (st<D::dtype, D::rows, D::cols>): any layouts and element types.
template <register_tile D, register_tile S, shared_tile ST>
__device__ inline void transpose(D& d, const S& s, ST& scratch) {
  static_assert(D::rows == S::cols && D::cols == S::rows, "transpose: the destination must be the source's cols x rows");
  detail::transposed_view<S> v;
  detail::transpose_view(v, s);
  using V = decltype(v);
  if constexpr (D::lay == V::lay && D::E == V::E && std::same_as<typename D::shape, typename V::shape>) copy(d, v);
  else swap_layout(d, v, scratch);
}

}  // namespace hk
