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

// hk::grouped_gemm, the mixture-of-experts GEMM: G problems of different M sharing N and K, in one launch. A (m x K,
// lda) holds every group's rows, group g owning rows offsets[g] .. offsets[g+1] - 1 (tokens sorted by expert; empty
// groups own none); C (m x N, ldc) likewise; each group has its own B, K x N or N x K (b_is_nk) with ldb, the groups'
// B matrices b_group_stride elements apart (0: packed, (b_is_nk ? n : k) * ldb): B is (G, K, N) or (G, N, K).
// Types, alpha / beta (fp8: the per-tensor scale) and the feed are hk::gemm's. The grid is the flat list of every
// group's output tiles, each workgroup finding its group from the offsets (kernels/gemm/gemm_common.h), so the CUs
// stay busy however the rows are spread. The offsets live on the device (int32, or int64 with offsets_int64); the
// validation reads them back (one copy of G + 1 values on p.stream that waits for it) to check that offsets[0] = 0,
// they never decrease and offsets[G] = m, and to size the grid.
struct GroupedGemmProblem : GemmProblem {
  int groups = 0;                 // G >= 1
  const void* offsets = nullptr;  // G + 1 row offsets into A and C, on the device
  bool offsets_int64 = false;
  long b_group_stride = 0;        // elements between consecutive groups' B (0: packed)
};
Status grouped_gemm(const GroupedGemmProblem& p);

// The tiles of C each kernel computes per workgroup.
inline constexpr int gemm_staged_tile = 128, gemm_pingpong_tile = 256, gemm_fp8_tile = 128;

}  // namespace hk
