// hk::gemm_int8: C = A * B^T with A (M x K) and B (N x K) int8, row-major, exact int32 accumulation (wrapping modulo
// 2^32 as the hardware does), on gfx942 and gfx950. C is int32, or bf16 / fp32 as acc * row_scale[i] * col_scale[j]
// (either scale array may be null: 1.0). Any M, N and K.
#pragma once
#include "common/api.h"

namespace hk {

struct GemmInt8Problem {
  enum class Output { int32, bf16, fp32 };
  int m = 0, n = 0, k = 0;
  const int8_t* a = nullptr;
  long lda = 0;  // elements between rows of A (>= k, a multiple of 4)
  const int8_t* b = nullptr;
  long ldb = 0;  // elements between rows of B, N x K (>= k, a multiple of 4)
  void* c = nullptr;
  long ldc = 0;  // elements between rows of C (>= n)
  Output c_type = Output::int32;
  const float* row_scale = nullptr;  // M values (bf16 / fp32 C only), or null
  const float* col_scale = nullptr;  // N values (bf16 / fp32 C only), or null
  hipStream_t stream = nullptr;
};

// Validates `p` and launches the GEMM on p.stream.
Status gemm_int8(const GemmInt8Problem& p);


}  // namespace hk
