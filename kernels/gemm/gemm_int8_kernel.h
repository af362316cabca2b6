// The int8 form of the fp8 GEMM kernels (hk::gemm_int8): C = A * B^T, int8 operands (A M x K, B N x K), int32
// accumulators, on gfx950's v_mfma_i32_16x16x64_i8 or gfx942's v_mfma_i32_16x16x32_i8.
//
// int8 has fp8's byte layout, so the fp8 kernels feed it unchanged: the 8-wave ping-pong kernel (gemm_pingpong.h)
// where the LDS DMA can feed A and B, the 4-wave kernel (gemm_fp8.h) through registers with zero-filled edges where
// it cannot; only the MFMA and the epilogue are this form's. A lane's fp8 fragment
// is K/4 of the fp8 MFMA's K in consecutive bytes: 8 on gfx942, exactly the i8 MFMA's 8 bytes (one instruction per
// fragment), and 32 on gfx950, the operands of two i8 MFMAs of 16 bytes each (registers 0-3, then 4-7). Both operands
// take the same bytes into the same instruction slots, so every k meets its partner once and the dot products are the
// exact int32 sums (wrapping modulo 2^32, as the hardware's). The accumulators are the fp32 tile's registers holding
// int32 bits; the epilogue writes them as int32, or converts them and applies the row and column scales for an fp32 or
// bf16 C (nearest even).
#pragma once
#include <utility>

#include "gemm_common.h"

namespace hk::kernels {

namespace i8 {

using i32x4 = int __attribute__((ext_vector_type(4)));
using i32x8 = int __attribute__((ext_vector_type(8)));

// acc += a * b over one pair of lane fragments (the arch's fp8 fragment bytes, as int8).
template <class F>
__device__ __attribute__((always_inline)) inline i32x4 mma16(const F& a, const F& b, i32x4 c) {
  if constexpr (sizeof(F) == 32) {  // gfx950: two v_mfma_i32_16x16x64_i8
    if constexpr (arch::device_pass) {
      const i32x8 x = __builtin_bit_cast(i32x8, a), y = __builtin_bit_cast(i32x8, b);
      c = __builtin_amdgcn_mfma_i32_16x16x64_i8(i32x4{x[0], x[1], x[2], x[3]}, i32x4{y[0], y[1], y[2], y[3]}, c, 0, 0, 0);
      c = __builtin_amdgcn_mfma_i32_16x16x64_i8(i32x4{x[4], x[5], x[6], x[7]}, i32x4{y[4], y[5], y[6], y[7]}, c, 0, 0, 0);
    }
  } else {  // gfx942: one v_mfma_i32_16x16x32_i8
    static_assert(sizeof(F) == 8, "int8 form: a lane's fragment is 8 or 32 bytes");
    if constexpr (arch::device_pass) c = __builtin_amdgcn_mfma_i32_16x16x32_i8(__builtin_bit_cast(long, a), __builtin_bit_cast(long, b), c, 0, 0, 0);
  }
  return c;
}

// f(integral_constant<int, 0>) .. f(integral_constant<int, N - 1>), unrolled whatever the compiler's thresholds (and
// inlined: a call left here takes the accumulators and the view through scratch memory).
template <int N, class F>
__device__ __attribute__((always_inline)) inline void unrolled(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) __attribute__((always_inline)) {
    (f(std::integral_constant<int, I>{}), ...);
  }(std::make_integer_sequence<int, N>{});
}

}  // namespace i8

// TOut: int (int32 C, which the kernel's view holds as fp32 words: the bits are stored unchanged), bf16 or float
// (acc * row_scale * col_scale).
template <class TOut>
struct GemmInt8Form {
  struct Args : GemmArgs {
    const float* row_scale = nullptr;  // M values, or null (1.0)
    const float* col_scale = nullptr;  // N values, or null
  };
  template <int WM, int WN>
  struct wave {
    __device__ __attribute__((always_inline)) wave(const Args&, int, int) {}
    __device__ __attribute__((always_inline)) void prefetch(const Args&, int) {}
    template <class R, class S>
    __device__ __attribute__((always_inline)) void read(R& r, const S& s, coord at) { load(r, s, at); }
    template <class Acc, class A, class B>
    __device__ __attribute__((always_inline)) void mma(Acc& acc, const A& a, const B& b) {
      static_assert(A::lay == layout::row && B::lay == layout::row, "int8 form: A * B^T");
#pragma unroll
      for (int i = 0; i < A::tiles_r; ++i)
#pragma unroll
        for (int j = 0; j < B::tiles_r; ++j) {
          const float* f = acc.data[i][j];
          i8::i32x4 c = {__builtin_bit_cast(int, f[0]), __builtin_bit_cast(int, f[1]), __builtin_bit_cast(int, f[2]), __builtin_bit_cast(int, f[3])};
#pragma unroll
          for (int k = 0; k < A::tiles_c; ++k) c = i8::mma16(a.data[i][k], b.data[j][k], c);
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int x = c[e];  // (not bit_cast(c[e]): clang 21 reads element 0 for a vector element's bit_cast)
            acc.data[i][j][e] = __builtin_bit_cast(float, x);
          }
        }
    }
    // Lane l holds rows r0 + 16 i + 4 (l / 16) + e and columns c0 + 16 j + l % 16 of the block (the accumulator's
    // layout). The addresses are a part the wave shares (the block's origin, in scalars) and the lane's 32-bit offset,
    // as store_bounded's; the loops are unrolled by construction (a loop left rolled would index the accumulators and
    // put them in memory). The lane's index is computed afresh here (mbcnt, which nothing before the loop computes):
    // the ping-pong kernel's loop uses every register, and a lane-dependent value the compiler shared with the code
    // before the loop (lane % 16 out of threadIdx.x) stayed live across it and spilled. (An empty asm on a copy of
    // threadIdx.x put the accumulators in scratch memory and waterfall loops around the loads.)
    template <class View, class Acc>
    __device__ __attribute__((always_inline)) void store(const Args& p, const View& v, Acc& acc, coord at) {
      static_assert(Acc::shape::dim == 16 && Acc::E == 4, "int8 form: 16x16 accumulator blocks");
      using T = typename std::remove_cvref_t<decltype(v.c)>::dtype;  // float holds an int32 C's words
      const int lane = int(__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u))), lr = 4 * (lane / 16), lc = lane % 16;
      const int r0 = __builtin_amdgcn_readfirstlane(at.r * Acc::rows), c0 = __builtin_amdgcn_readfirstlane(at.c * Acc::cols);
      if constexpr (!std::same_as<TOut, int>) {
        // acc * row_scale * col_scale, the rows past M and columns past N reading the last one's (never stored).
        i8::unrolled<Acc::tiles_r * 4>([&](auto x) __attribute__((always_inline)) {
          constexpr int i = x / 4, e = x % 4;
          const int ri = r0 + lr + 16 * i + e;
          const float rs = p.row_scale ? p.row_scale[unsigned(ri < p.m ? ri : p.m - 1)] : 1.f;
          i8::unrolled<Acc::tiles_c>([&](auto j) __attribute__((always_inline)) {
            acc.data[i][j][e] = float(__builtin_bit_cast(int, acc.data[i][j][e])) * rs;
          });
        });
        i8::unrolled<Acc::tiles_c>([&](auto j) __attribute__((always_inline)) {
          const int cj = c0 + lc + 16 * j;
          const float cs = p.col_scale ? p.col_scale[unsigned(cj < p.n ? cj : p.n - 1)] : 1.f;
          i8::unrolled<Acc::tiles_r * 4>([&](auto x) __attribute__((always_inline)) { acc.data[x / 4][j][x % 4] *= cs; });
        });
      }
      // Each element converted to C's type (an int32 C's words stored unchanged: no arithmetic touches the bits).
      const long ld = v.c.row_stride();
      char* const tile = reinterpret_cast<char*>(v.c.at(0, 0, r0, c0));
      const unsigned lane_offset = unsigned((lr * ld + lc) * long(sizeof(T)));
      auto each = [&](auto inside) __attribute__((always_inline)) {
        i8::unrolled<Acc::tiles_r * 4 * Acc::tiles_c>([&](auto x) __attribute__((always_inline)) {
          constexpr int i = x / (4 * Acc::tiles_c), e = x / Acc::tiles_c % 4, j = x % Acc::tiles_c;
          const int r = r0 + lr + 16 * i + e, c = c0 + lc + 16 * j;
          if constexpr (inside) *reinterpret_cast<T*>(tile + ((16 * i + e) * ld + 16 * j) * long(sizeof(T)) + lane_offset) = T(acc.data[i][j][e]);
          else if (v.c.inside(r, c)) *v.c.at(0, 0, r, c) = T(acc.data[i][j][e]);
        });
      };
      // A block inside C with 32-bit offsets (the common case): no per-element test, a scalar base and the lane's
      // offset; elsewhere each element's own address and test.
      if (r0 + Acc::rows <= v.c.rows() && c0 + Acc::cols <= v.c.cols() && ld * Acc::rows < (1l << 31) / long(sizeof(T)))
        each(std::true_type{});
      else
        each(std::false_type{});
    }
  };
};

}  // namespace hk::kernels
