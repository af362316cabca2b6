// hk::gemm: C = alpha * A * op(B) + beta * C on the current HIP device, for gfx942 and gfx950.
// A is M x K row-major; B is K x N row-major, or N x K row-major when `b_is_nk` (C = A * B^T); C is M x N row-major.
// Every argument is validated first: a problem the kernel cannot run returns an error and launches nothing.
#pragma once
#include "../api.h"

namespace hk {

struct GemmProblem {
  int m = 0, n = 0, k = 0;
  const void* a = nullptr;
  long lda = 0;                  // elements between rows of A (>= k)
  const void* b = nullptr;
  long ldb = 0;                  // elements between rows of B (>= n, or >= k when b_is_nk)
  bool b_is_nk = false;          // B is given as N x K (C = A * B^T)
  void* c = nullptr;
  long ldc = 0;                  // elements between rows of C (>= n)
  dtype ab_type = dtype::bf16;   // element type of A and B: bf16, f16, fp8_e4m3 or fp8_e5m2 (the device arch's fp8:
                                 // FNUZ e4m3 / e5m2 on gfx942, OCP e4m3fn / e5m2 on gfx950; lda, ldb multiples of 16)
  dtype c_type = dtype::fp32;    // element type of C: fp32 or bf16
  float alpha = 1.f, beta = 0.f; // beta != 0 reads C
  hipStream_t stream = nullptr;
  // Which kernel: the pipelined one (256x256 tiles, LDS fed by loads straight into LDS) wherever A and B allow it
  // (k, lda and ldb whole DMA units: multiples of 8 elements on gfx950, 2 on gfx942), else the simple one.
  // fp8 has its own kernel (128x128 tiles, 4 waves, two LDS stages): `pipelined` feeds its stages straight into LDS
  // (same conditions), `simple` through registers.
  enum class kernel { automatic, simple, pipelined } variant = kernel::automatic;
};

// Validates `p` and launches the GEMM on p.stream. Asynchronous like any kernel launch.
Status gemm(const GemmProblem& p);

// The tiles of C each kernel computes per workgroup.
inline constexpr int gemm_simple_tile = 128, gemm_pipelined_tile = 256, gemm_fp8_tile = 128;

}  // namespace hk
