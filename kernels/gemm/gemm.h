// hk::gemm: C = alpha * A * op(B) + beta * C on the current HIP device, for gfx942 and gfx950.
// A is M x K row-major; B is K x N row-major, or N x K row-major when `b_is_nk` (C = A * B^T); C is M x N row-major.
// Any leading dimensions not smaller than the rows and any pointers aligned to their element type are accepted.
// Every argument is validated first: a problem the kernels cannot run returns an error and launches nothing.
#pragma once
#include "common/api.h"

namespace hk {

struct GemmProblem {
  int m = 0, n = 0, k = 0;
  const void* a = nullptr;
  long lda = 0;                       // elements between rows of A (>= k)
  const void* b = nullptr;
  long ldb = 0;                       // elements between rows of B (>= n, or >= k when b_is_nk)
  bool b_is_nk = false;               // B is given as N x K (C = A * B^T)
  void* c = nullptr;
  long ldc = 0;                       // elements between rows of C (>= n)
  scalar_type ab_type = scalar_type::bf16;  // A and B: bf16, f16, fp8_e4m3 or fp8_e5m2 (fp8 in the device's format:
                                            // FNUZ e4m3 / e5m2 on gfx942, OCP e4m3fn / e5m2 on gfx950)
  scalar_type c_type = scalar_type::fp32;   // C: fp32 or bf16
  float alpha = 1.f, beta = 0.f;      // beta != 0 reads C
  hipStream_t stream = nullptr;
  // How A and B reach LDS. `lds_dma`: straight from memory (buffer loads into LDS), which needs A's and B's rows to
  // start on the target's DMA unit (16 bytes on gfx950, 4 on gfx942) and whole units of columns; bf16/f16 then run
  // the 8-wave ping-pong kernel (256x256 tiles; a last round of them that would fill under half the CUs runs as
  // 128x256 halves), and so does fp8 with B given N x K. `registers`: through registers,
  // 16-byte loads where rows allow and element loads elsewhere, any layout; bf16/f16 then run the staged kernel
  // (128x128 tiles). fp8 otherwise runs its 4-wave interleaved kernel (128x128 tiles), with either feed.
  // `automatic` takes lds_dma wherever A and B allow it, except for skinny problems: M <= 256 with A's and B's rows
  // starting on 16-byte boundaries run the skinny kernel (gemm_skinny.h: bound by reading B once from memory; 16-byte
  // loads straight into registers, 16 to 64 rows of C per workgroup, K split where the blocks of C are few).
  enum class Feed { automatic, registers, lds_dma } feed = Feed::automatic;
};

// Validates `p` and launches the GEMM on p.stream. Asynchronous like any kernel launch.
Status gemm(const GemmProblem& p);

// The tiles of C each kernel computes per workgroup.
inline constexpr int gemm_staged_tile = 128, gemm_pingpong_tile = 256, gemm_fp8_tile = 128;

}  // namespace hk
