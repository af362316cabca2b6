// hk::gemm_blockwise: block-scaled fp8 GEMM in DeepSeek-V3's convention, on gfx942 and gfx950:
//   C[m, n] = sum over 128-k blocks kb of scale_a[m, kb] * scale_b[n / 128, kb] * sum_{k in kb} A[m, k] * B[n, k]
// with A (M x K) and B (N x K) e4m3 in the arch's format (FNUZ on gfx942, OCP e4m3fn on gfx950), one fp32 scale per
// row of A and 128 k (scale_a, M x K/128: activations quantized per 1 x 128) and one per 128 x 128 block of B
// (scale_b, ceil(N/128) x K/128: weights), fp32 accumulation in which each 128-k partial sum is scaled and added (on
// gfx942's ping-pong feed each 64-k half of it, with the block's scales: gemm_blockwise_kernel.h), and a bf16 (or
// fp32) C. Any M and N; K a multiple of 128. `pow2_scales` states that every scale is a power of two (the
// products of two scales are then exact); the kernel takes the same path (a multiply by a power of two is an exponent
// add), so the flag documents the inputs and changes no result.
#pragma once
#include "common/api.h"
#include "gemm.h"

namespace hk {

struct GemmBlockwiseProblem {
  int m = 0, n = 0, k = 0;
  const void* a = nullptr;
  long lda = 0;  // elements between rows of A (>= k)
  const void* b = nullptr;
  long ldb = 0;  // elements between rows of B, N x K (>= k)
  const float* scale_a = nullptr;
  long ld_scale_a = 0;  // elements between rows of scale_a (>= k / 128)
  const float* scale_b = nullptr;
  long ld_scale_b = 0;  // elements between rows of scale_b (>= k / 128)
  void* c = nullptr;
  long ldc = 0;                             // elements between rows of C (>= n)
  scalar_type c_type = scalar_type::bf16;   // bf16 or fp32
  bool pow2_scales = false;
  hipStream_t stream = nullptr;
  // As hk::gemm's: the 8-wave ping-pong kernel where the LDS DMA feeds A and B, the 4-wave fp8 kernel through
  // registers elsewhere.
  GemmProblem::Feed feed = GemmProblem::Feed::automatic;
};

// Validates `p` and launches the GEMM on p.stream.
Status gemm_blockwise(const GemmBlockwiseProblem& p);

inline constexpr int gemm_blockwise_block = 128;  // k per scale, and rows of B per scale

}  // namespace hk
