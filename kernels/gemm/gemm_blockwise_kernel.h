// The blockwise form of the fp8 GEMM kernels (hk::gemm_blockwise, DeepSeek-V3's block-scaled fp8, gemm_blockwise.h):
// C = sum over 128-k chunks kb of scale_a[m, kb] * scale_b[n / 128, kb] * (A B^T restricted to kb), A and B e4m3 in
// the arch's format, B given N x K. The 8-wave ping-pong kernel (gemm_pingpong.h) runs it where the LDS DMA feeds A
// and B, the 4-wave fp8 kernel (gemm_fp8.h) through registers where it cannot; only the multiply is this form's.
//
// The fold. Each step's MFMA chain for a 16 x 16 tile of C starts from zero (the MFMA's C operand is the inline
// constant 0, no register zeroed) and ends in a temporary of 4 registers, which one pair of packed FMAs
// (v_pk_fma_f32) folds into the accumulators at once: acc += t * scale_a[row] * scale_b. The temporaries live only
// from their MFMA to their fold, so the accumulators are not doubled, and the matrix core runs a tile's MFMA while
// the vector unit folds an earlier tile's (on gfx950 in a fixed order, four tiles behind: see mma). The ping-pong
// kernel runs its half-height form (128 x 256 tiles, 64 x 64 per wave): with 64 x 128 per wave the gfx950 kernel's
// accumulators and fragments alone fill 224 of its 256 registers and the temporaries and scales spilled. On gfx950 a step is 128 k
// (one v_mfma_f32_16x16x128_f8f6f4), the scale block itself: each 128-k partial sum, in fp32, is scaled and added,
// the format's own semantics. On gfx942 a step is 64 k (the ping-pong kernel's LDS holds no deeper step: two chains
// of two v_mfma_f32_16x16x32_fp8_fp8); each half of a block is scaled and added with the block's scales, which
// differs from scaling the block's sum by one fp32 rounding of the partial sums.
//
// The scales. A wave's 64 x WN block of C (WN <= 128, inside one 128-column block of B's scales) needs per step one
// scale of B, the same for all its lanes (a scalar load), and the scales of its 64 rows of A, of which lane l's
// accumulators hold 16: rows 16 i + 4 g + e (g = l / 16; tile row i, element e, 0..3 each). Lane 16 g + j loads the
// scale of row 16 (j % 4) + 4 g + j / 4, one dword, so that the scale of row (i, e) of every lane of group g sits in
// lane i + 4 e of its own row of 16 lanes: v_mov_b32_dpp row_newbcast:(i + 4 e) hands it to the row's 16 lanes, 16
// DPP moves a step, after one multiply by B's scale. Step kt's multiply uses the scales loaded during step kt - 1 (by
// then both wave groups of the ping-pong kernel and the 4-wave kernel have waited for their loads), and issues step
// kt + 1's: the multiply that consumes the old values precedes the loads that replace them, so they share registers
// without a copy. Rows past M read row M - 1's scales and waves past N the last block's (their products are never
// stored); steps past K read the last block's.
#pragma once
#include <utility>

#include "gemm_common.h"

namespace hk::kernels {

struct GemmBlockwiseForm {
  using Args = GemmArgs;
  template <int WM, int WN>
  struct wave : GemmPlainForm::wave<WM, WN> {
    static_assert(WM == 64, "blockwise form: a lane's 16 rows of A (4 tiles x 4 elements) take one row of 16 lanes' scales");
    static_assert(WN <= 128 && 128 % WN == 0, "blockwise form: a wave's columns share one scale of B");
    const float* scale_a;  // chunk 0's column of scale_a (the wave's rows' scales are lane_offset from it)
    const float* scale_b;  // the wave's row of scale_b
    unsigned lane_offset;  // bytes from a chunk's scale of row 0 to this lane's row's
    int chunks, next = 0;  // K / 128; the step whose scales the next mma loads
    float row_scale = 0, col_scale = 0;  // the scales loaded for the next step
    __device__ __attribute__((always_inline)) wave(const Args& p, int row0, int col0) : GemmPlainForm::wave<WM, WN>(p, row0, col0) {
      const int lane = int(__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u))), j = lane % 16;
      const int r = row0 + 16 * (j % 4) + 4 * (lane / 16) + j / 4;
      lane_offset = unsigned(long(r < p.m ? r : p.m - 1) * p.ld_scale_a * 4);
      const int blocks_n = (p.n + 127) / 128, cb = __builtin_amdgcn_readfirstlane(col0 / 128);
      scale_a = p.scale_a, scale_b = p.scale_b + long(cb < blocks_n ? cb : blocks_n - 1) * p.ld_scale_b;
      chunks = p.k / 128;
    }
    // Step kt's scales are loaded by the mma of step kt - 1 (step 0's here, before the loop).
    __device__ __attribute__((always_inline)) void prefetch(const Args&, int kt) {
      next = kt;
      if (kt == 0) load(0);
    }
    template <class Acc, class A, class B>
    __device__ __attribute__((always_inline)) void mma(Acc& acc, const A& a, const B& b) {
      static_assert(A::lay == layout::row && B::lay == layout::row, "blockwise form: A * B^T");
      static_assert(std::same_as<typename Acc::shape, mfma16> && Acc::E == 4 && Acc::tiles_r == 4, "blockwise form: 64 rows of 16x16 tiles");
      using f32x2 = float __attribute__((ext_vector_type(2)));
      constexpr int tiles = Acc::tiles_r * Acc::tiles_c;
      // On gfx950 tile n's fold follows tile n + lag's MFMA, in this order: the compiler's wait for an MFMA's result
      // counts instructions (12 after an 8-pass MFMA), about three a tile, and its own order put each fold right
      // behind its MFMA, waiting. On gfx942 (two 4-pass MFMAs a tile, 7 to wait) the compiler's order is kept: there
      // the fixed order modelled slower (MI300X 8192^3 945 TFLOP/s, against 1190).
      constexpr int lag = A::tiles_c == 1 ? 4 : 0;
      const float s = row_scale * col_scale;  // this step's (the loads below replace them)
      load(next * A::cols / 128);
      arch::f32x4 t[tiles];
      f32x2 pair[Acc::tiles_r][2];  // tile row i's scales of rows (i, 0), (i, 1) and (i, 2), (i, 3)
      [&]<int... N>(std::integer_sequence<int, N...>) __attribute__((always_inline)) {
        (
            [&] __attribute__((always_inline)) {
              if constexpr (N < tiles) {  // tile N's MFMAs, from zero
                constexpr int i = N / Acc::tiles_c, j = N % Acc::tiles_c;
                t[N] = arch::f32x4{0, 0, 0, 0};
#pragma unroll
                for (int k = 0; k < A::tiles_c; ++k) t[N] = arch::current::mma16(hk::detail::frag(a.data[i][k]), hk::detail::frag(b.data[j][k]), t[N]);
              }
              if constexpr (N >= lag) {  // tile N - lag's fold
                constexpr int f = N - lag, i = f / Acc::tiles_c, j = f % Acc::tiles_c;
                if constexpr (j == 0) pair[i][0] = f32x2{bcast<i>(s), bcast<i + 4>(s)}, pair[i][1] = f32x2{bcast<i + 8>(s), bcast<i + 12>(s)};
                float* c = acc.data[i][j];
                const f32x2 lo = __builtin_elementwise_fma(f32x2{t[f][0], t[f][1]}, pair[i][0], f32x2{c[0], c[1]});
                const f32x2 hi = __builtin_elementwise_fma(f32x2{t[f][2], t[f][3]}, pair[i][1], f32x2{c[2], c[3]});
                c[0] = lo[0], c[1] = lo[1], c[2] = hi[0], c[3] = hi[1];
              }
              // In this order: only loads (the ping-pong kernel's B loads, placed among the MFMAs) and scalar work
              // cross.
              if constexpr (lag > 0) sched_barrier<sched::vmem | sched::salu>();
            }(),
            ...);
      }(std::make_integer_sequence<int, tiles + lag>{});
    }

   private:
    // The scales of chunk kb (the last chunk's past K).
    __device__ __attribute__((always_inline)) void load(int kb) {
      kb = kb < chunks ? kb : chunks - 1;
      row_scale = *reinterpret_cast<const float*>(reinterpret_cast<const char*>(scale_a + kb) + lane_offset);
      col_scale = scale_b[kb];
    }
    // Lane N of each row of 16 lanes, to the row's 16 lanes (v_mov_b32_dpp row_newbcast:N).
    template <int N>
    __device__ __attribute__((always_inline)) static float bcast(float s) {
      return __builtin_bit_cast(float, __builtin_amdgcn_mov_dpp(__builtin_bit_cast(int, s), 0x150 + N, 0xf, 0xf, false));
    }
  };
};

}  // namespace hk::kernels
