// hk::layer_norm / hk::rms_norm: the fused dropout + residual add + norm of a transformer block, row by row,
//   r = residual + dropout(x, p) / (1 - p),   y = norm(r) * weight (+ bias),
// LayerNorm: norm(r) = (r - mean) * rstd, rstd = 1 / sqrt(var + eps) (var the biased variance); RMSNorm: norm(r) =
// r * rstd, rstd = 1 / sqrt(mean(r^2) + eps). Statistics and arithmetic are fp32 whatever the tensors' type.
// Dropout keeps element (row, col) when h / 2^16 >= p, h the low (col % 8 < 4) or high half of word col % 4 of
// Philox4x32-10(counter = {col / 8, row, offset low, offset high}, key = {seed low, seed high}): the same bits on the
// host and the device for any launch configuration; `offset` moves a later call onto fresh counters.
// The backward regenerates the mask from the same (p, seed, offset) and reduces dweight / dbias over rows in a fixed
// order (per-workgroup partials in a workspace, then one column sum each), so every run gives the same bits.
// Every argument is validated first: a problem the kernels cannot run returns an error and launches nothing.
#pragma once
#include <cstdint>

#include "common/api.h"

namespace hk {

inline constexpr int norm_max_cols = 16384;

struct NormProblem {
  int rows = 0, cols = 0;        // cols: the hidden size, 1 .. norm_max_cols
  scalar_type type = scalar_type::bf16;      // x, residual, residual_out, y: bf16, f16 or fp32
  scalar_type weight_type = scalar_type::bf16;  // weight and bias: `type` or fp32
  const void* x = nullptr;
  long ldx = 0;                  // elements between rows (>= cols)
  const void* residual = nullptr;  // optional: r = dropout(x) alone when null
  long ld_residual = 0;
  const void* weight = nullptr;  // cols
  const void* bias = nullptr;    // cols, optional (LayerNorm only)
  void* y = nullptr;
  long ldy = 0;
  void* residual_out = nullptr;  // r, optional (the residual stream's next value and the backward's input)
  long ld_residual_out = 0;
  float* mean = nullptr;         // rows, optional (LayerNorm only): saved for the backward
  float* rstd = nullptr;         // rows, optional: saved for the backward
  // The dropout mask is optional (the backward regenerates it from p, seed and offset): a byte per element, 1 where
  // x was kept (rows x cols, row stride ld_mask bytes), and/or a bit per element, bit c % 8 of byte c / 8 of a row
  // (rows x ceil(cols / 8) bytes, row stride ld_mask_bits bytes).
  uint8_t* mask = nullptr;
  long ld_mask = 0;
  uint8_t* mask_bits = nullptr;
  long ld_mask_bits = 0;
  float eps = 1e-5f;
  float p = 0.f;                 // dropout probability, 0 <= p < 1
  uint64_t seed = 0, offset = 0;
  hipStream_t stream = nullptr;
};

struct NormBackwardProblem {
  int rows = 0, cols = 0;
  scalar_type type = scalar_type::bf16;         // dy, r, dresidual_in, dx, dresidual
  scalar_type weight_type = scalar_type::bf16;  // weight, dweight, dbias: `type` or fp32
  const void* dy = nullptr;         // gradient of y
  long ldy = 0;
  const void* r = nullptr;          // the forward's residual_out
  long ldr = 0;
  const void* dresidual_in = nullptr;  // optional: gradient reaching r from the residual stream past the norm
  long ld_dresidual_in = 0;
  const float* mean = nullptr;      // the forward's (LayerNorm only)
  const float* rstd = nullptr;
  const void* weight = nullptr;
  void* dx = nullptr;               // gradient of x (through the dropout mask and 1 / (1 - p))
  long ldx = 0;
  void* dresidual = nullptr;        // optional: gradient of residual (= of r)
  long ld_dresidual = 0;
  void* dweight = nullptr;          // cols
  void* dbias = nullptr;            // cols, optional (LayerNorm only)
  void* workspace = nullptr;        // norm_backward_workspace_bytes(rows, cols) of device memory, 16-byte aligned
  size_t workspace_bytes = 0;
  float p = 0.f;                    // the forward's dropout
  uint64_t seed = 0, offset = 0;
  hipStream_t stream = nullptr;
};

Status layer_norm(const NormProblem& p);
Status rms_norm(const NormProblem& p);
Status layer_norm_backward(const NormBackwardProblem& p);
Status rms_norm_backward(const NormBackwardProblem& p);

// Device memory the backward needs for its per-workgroup dweight / dbias partials.
size_t norm_backward_workspace_bytes(int rows, int cols);

}  // namespace hk
