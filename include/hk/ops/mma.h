// Matrix multiply-accumulate on register tiles: D = op(A) * op(B) + C with fp32 accumulation. The operand layouts
// make the fragments the MFMA's own, so each 16x16xK (mfma16 tiles) or 32x32xK (mfma32 tiles) block is one
// instruction on either arch. Operands are bf16, half (mfma16: K = 16 on gfx942, 32 on gfx950; mfma32: K = 8, 16) or
// fp8 in the arch's format (mfma16: K = 32, 128; mfma32: K = 16, 64): fp8e4m3 or fp8e5m2, and A and B may mix them.
#pragma once
#include "../types/rt.h"

namespace hk {

namespace detail {

// The E 16-bit elements of a lane as the MFMA's operand vector (16x16 family: arch::mfma_elems, 32x32 family:
// arch::mfma32_elems).
template <class T, int N>
  requires mma_input<T>
__device__ inline auto frag(const T (&e)[N]) {
  static_assert(N == arch::mfma_elems || N == arch::mfma32_elems, "mma: a lane's fragment has the MFMA's K/4 or K/2 elements");
  using V16 = std::conditional_t<std::same_as<T, bf16>, arch::bf16_frag, arch::f16_frag>;
  using V32 = std::conditional_t<std::same_as<T, bf16>, arch::bf16_frag32, arch::f16_frag32>;
  std::conditional_t<N == arch::mfma_elems, V16, V32> f;
#pragma unroll
  for (int i = 0; i < N; ++i) f[i] = e[i];
  return f;
}

// The E bytes of an fp8 lane as the MFMA's operand, tagged with the format (which picks the instruction).
template <class T, int N>
  requires fp8_input<T>
__device__ inline auto frag(const T (&e)[N]) {
  static_assert(N == arch::fp8_elems || N == arch::fp8_elems32, "mma: a lane's fp8 fragment has the MFMA's K/4 or K/2 bytes");
  using F = arch::fp8_frag_of<T::format, N>;
  return __builtin_bit_cast(F, e);
}

// Fragment (i, k) of an operand tile that runs M (or N) along `m` and K along `k`.
template <class X>
__device__ inline auto& op_frag(const X& x, int m, int k) {
  if constexpr (X::lay == layout::row) return x.data[m][k];
  else return x.data[k][m];
}

template <class D, class A, class B, class C>
__device__ inline void mma(D& d, const A& a, const B& b, const C& c, int M, int N, int K) {
  using T = typename A::dtype;
  using S = typename A::shape;
  static_assert(std::same_as<T, typename B::dtype> || (fp8_input<T> && fp8_input<typename B::dtype>),
                "mma: A and B must have the same element type (or both be fp8: e4m3 and e5m2 mix)");
  static_assert(mma_input<T> || fp8_input<T>, "mma: operands must be bf16, half, fp8e4m3 or fp8e5m2");
  static_assert(std::same_as<typename D::dtype, float> && D::lay == layout::col,
                "mma: D must be an fp32 accumulator tile (rt_acc)");
  static_assert(std::same_as<typename C::dtype, float> && C::lay == layout::col, "mma: C must be an rt_acc");
  static_assert(std::same_as<S, typename B::shape> && std::same_as<S, typename C::shape> &&
                    std::same_as<S, typename D::shape>,
                "mma: A, B, C and D must be tiles of the same MFMA family (all mfma16 or all mfma32: rt_acc<M, N, "
                "mfma32> takes rt<T, R, C, layout, mfma32> operands)");
  if constexpr (std::same_as<S, mfma16>) {
#pragma unroll
    for (int i = 0; i < M; ++i)
#pragma unroll
      for (int j = 0; j < N; ++j) {
        arch::f32x4 acc = {c.data[i][j][0], c.data[i][j][1], c.data[i][j][2], c.data[i][j][3]};
#pragma unroll
        for (int k = 0; k < K; ++k) acc = arch::current::mma16(frag(op_frag(a, i, k)), frag(op_frag(b, j, k)), acc);
#pragma unroll
        for (int e = 0; e < 4; ++e) d.data[i][j][e] = acc[e];
      }
  } else {
#pragma unroll
    for (int i = 0; i < M; ++i)
#pragma unroll
      for (int j = 0; j < N; ++j) {
        arch::f32x16 acc;
#pragma unroll
        for (int e = 0; e < 16; ++e) acc[e] = c.data[i][j][e];
#pragma unroll
        for (int k = 0; k < K; ++k) acc = arch::current::mma32(frag(op_frag(a, i, k)), frag(op_frag(b, j, k)), acc);
#pragma unroll
        for (int e = 0; e < 16; ++e) d.data[i][j][e] = acc[e];
      }
  }
}

}  // namespace detail

// D = A * B^T + C: A is M x K (row layout), B is N x K (row layout).
template <register_tile D, register_tile A, register_tile B, register_tile C>
  requires(A::lay == layout::row && B::lay == layout::row)
__device__ inline void mma_ABt(D& d, const A& a, const B& b, const C& c) {
  static_assert(D::rows == A::rows && D::cols == B::rows && A::cols == B::cols, "mma_ABt: shapes do not agree");
  detail::mma(d, a, b, c, A::rows / A::dim, B::rows / B::dim, A::tiles_c);
}

// D = A * B + C: A is M x K (row layout), B is K x N (col layout).
template <register_tile D, register_tile A, register_tile B, register_tile C>
  requires(A::lay == layout::row && B::lay == layout::col)
__device__ inline void mma_AB(D& d, const A& a, const B& b, const C& c) {
  static_assert(D::rows == A::rows && D::cols == B::cols && A::cols == B::rows, "mma_AB: shapes do not agree");
  detail::mma(d, a, b, c, A::rows / A::dim, B::cols / B::dim, A::tiles_c);
}

// D = A^T * B + C: A is K x M (col layout), B is K x N (col layout).
template <register_tile D, register_tile A, register_tile B, register_tile C>
  requires(A::lay == layout::col && B::lay == layout::col)
__device__ inline void mma_AtB(D& d, const A& a, const B& b, const C& c) {
  static_assert(D::rows == A::cols && D::cols == B::cols && A::rows == B::rows, "mma_AtB: shapes do not agree");
  detail::mma(d, a, b, c, A::cols / A::dim, B::cols / B::dim, A::tiles_r);
}

// D = A^T * B^T + C: A is K x M (col layout), B is N x K (row layout).
template <register_tile D, register_tile A, register_tile B, register_tile C>
  requires(A::lay == layout::col && B::lay == layout::row)
__device__ inline void mma_AtBt(D& d, const A& a, const B& b, const C& c) {
  static_assert(D::rows == A::cols && D::cols == B::rows && A::rows == B::cols, "mma_AtBt: shapes do not agree");
  detail::mma(d, a, b, c, A::cols / A::dim, B::rows / B::dim, A::tiles_r);
}

}  // namespace hk
