// hk::gemm_mx: block-scaled ("MX", OCP Microscaling) GEMM on gfx950: C = alpha * (A . 2^sa) * (B . 2^sb)^T + beta * C.
// A is M x K and B is N x K (the orientation of MX weights), each row of 32-element blocks of one OCP MX element
// format: e4m3, e5m2 (one byte per element), e2m3, e3m2 (fp6: 32 elements packed in 24 bytes, element e in bits
// 6e..6e+5 of the block's little-endian bit string) or e2m1 (fp4: two per byte, low nibble first, as torch's
// float4_e2m1fn_x2); A's and B's formats may differ. Every 32 consecutive k of a row of A (of B) share one E8M0 scale
// (byte s: 2^(s-127), 255 NaN), scale_a M x K/32 and scale_b N x K/32 bytes, row-major. fp32 accumulation; C is fp32,
// bf16 or f16, M x N row-major. K must be a multiple of 32; any M and N.
#pragma once
#include "common/api.h"

namespace hk {

enum class mx_format { e4m3 = 0, e5m2 = 1, e2m3 = 2, e3m2 = 3, e2m1 = 4 };  // the f8f6f4 MFMA's cbsz / blgp codes
const char* to_string(mx_format f);
int bits_of(mx_format f);  // 8, 6 or 4

struct GemmMxProblem {
  int m = 0, n = 0, k = 0;
  const void* a = nullptr;
  long lda = 0;  // elements between rows of A (>= k, a multiple of 32)
  mx_format a_format = mx_format::e4m3;
  const void* b = nullptr;
  long ldb = 0;  // elements between rows of B, N x K (>= k, a multiple of 32)
  mx_format b_format = mx_format::e4m3;
  const uint8_t* scale_a = nullptr;
  long ld_scale_a = 0;  // scales between rows of scale_a (>= k / 32)
  const uint8_t* scale_b = nullptr;
  long ld_scale_b = 0;  // scales between rows of scale_b (>= k / 32)
  void* c = nullptr;
  long ldc = 0;  // elements between rows of C (>= n)
  scalar_type c_type = scalar_type::fp32;  // fp32, bf16 or f16
  float alpha = 1.f, beta = 0.f;           // beta != 0 reads C
  hipStream_t stream = nullptr;
};

// Validates `p` and launches the GEMM on p.stream (gfx950 only: other devices are refused with a sentence).
Status gemm_mx(const GemmMxProblem& p);

inline constexpr int gemm_mx_tile = 128;  // C per workgroup: 128 x 128

}  // namespace hk
