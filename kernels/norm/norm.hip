// hk::layer_norm / rms_norm and their backwards: argument validation, the row shape for the hidden size, dispatch.
#include "norm.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <tuple>

#include "common/checks.h"
#include "norm_kernel.h"

namespace hk {

namespace {

using checks::size_of;

struct Check {
  const char* api;
  Status error(const std::string& message) const { return {hipErrorInvalidValue, std::string(api) + ": " + message}; }
  // A rows x cols matrix at `p` with row stride `ld` (elements of `elem` bytes).
  Status matrix(const void* p, const char* name, int rows, int cols, long ld, size_t elem) const {
    if (ld < cols) return error(std::string(name) + "'s row stride (" + std::to_string(ld) + ") is less than cols");
    if (!checks::aligned(p, elem)) return error(std::string(name) + " is not aligned to its element size");
    if (!checks::inside_allocation(p, (size_t(rows - 1) * ld + cols) * elem))
      return error(std::string(name) + " does not lie inside one device allocation");
    return {};
  }
  Status common(int rows, int cols, scalar_type type, scalar_type weight_type, float p) const {
    if (rows <= 0) return error("rows must be positive (got " + std::to_string(rows) + ")");
    if (cols <= 0 || cols > norm_max_cols)
      return error("cols must be 1 .. " + std::to_string(norm_max_cols) + " (got " + std::to_string(cols) + ")");
    if (!checks::is_float_type(type)) return error(std::string("activations must be bf16, f16 or fp32, not ") + to_string(type));
    if (weight_type != type && weight_type != scalar_type::fp32)
      return error(std::string("weight_type must be the activations' type or fp32, not ") + to_string(weight_type));
    if (!(p >= 0.f && p < 1.f)) return error("dropout p must be in [0, 1)");
    return {};
  }
};

Status validate(const NormProblem& p, bool rms, const Check& c) {
  if (Status s = c.common(p.rows, p.cols, p.type, p.weight_type, p.p); !s) return s;
  if (!p.x || !p.weight || !p.y) return c.error(std::string("null pointer for ") + (!p.x ? "x" : !p.weight ? "weight" : "y"));
  if (rms && p.bias) return c.error("RMSNorm has no bias");
  if (rms && p.mean) return c.error("RMSNorm has no mean to save");
  if (!(p.eps >= 0.f) || !std::isfinite(p.eps)) return c.error("eps must be finite and not negative");
  const size_t e = size_of(p.type), w = size_of(p.weight_type);
  if (Status s = c.matrix(p.x, "x", p.rows, p.cols, p.ldx, e); !s) return s;
  if (p.residual) if (Status s = c.matrix(p.residual, "residual", p.rows, p.cols, p.ld_residual, e); !s) return s;
  if (Status s = c.matrix(p.y, "y", p.rows, p.cols, p.ldy, e); !s) return s;
  if (p.residual_out)
    if (Status s = c.matrix(p.residual_out, "residual_out", p.rows, p.cols, p.ld_residual_out, e); !s) return s;
  if (p.mask) if (Status s = c.matrix(p.mask, "mask", p.rows, p.cols, p.ld_mask, 1); !s) return s;
  if (p.mask_bits)
    if (Status s = c.matrix(p.mask_bits, "mask_bits", p.rows, (p.cols + 7) / 8, p.ld_mask_bits, 1); !s) return s;
  if (Status s = c.matrix(p.weight, "weight", 1, p.cols, p.cols, w); !s) return s;
  if (p.bias) if (Status s = c.matrix(p.bias, "bias", 1, p.cols, p.cols, w); !s) return s;
  if (p.mean) if (Status s = c.matrix(p.mean, "mean", 1, p.rows, p.rows, 4); !s) return s;
  if (p.rstd) if (Status s = c.matrix(p.rstd, "rstd", 1, p.rows, p.rows, 4); !s) return s;
  // Rows are read and written by one team in any order: an output must not share memory with an input or another output.
  const size_t rows_bytes = size_t(p.rows - 1), cols = size_t(p.cols);
  auto bytes = [&](long ld, size_t elem) { return (rows_bytes * ld + cols) * elem; };
  const checks::Span outs[] = {
      {p.y, bytes(p.ldy, e), "y"}, {p.residual_out, bytes(p.ld_residual_out, e), "residual_out"},
      {p.mask, bytes(p.ld_mask, 1), "mask"},
      {p.mask_bits, (rows_bytes * p.ld_mask_bits + (cols + 7) / 8), "mask_bits"}, {p.mean, size_t(p.rows) * 4, "mean"}, {p.rstd, size_t(p.rows) * 4, "rstd"}};
  const checks::Span ins[] = {{p.x, bytes(p.ldx, e), "x"}, {p.residual, bytes(p.ld_residual, e), "residual"},
                        {p.weight, cols * w, "weight"}, {p.bias, cols * w, "bias"}};
  if (std::string o = checks::first_overlap(outs, ins); !o.empty()) return c.error(o);
  return {};
}

Status validate(const NormBackwardProblem& p, bool rms, const Check& c) {
  if (Status s = c.common(p.rows, p.cols, p.type, p.weight_type, p.p); !s) return s;
  if (!p.dy || !p.r || !p.rstd || !p.weight || !p.dx || !p.dweight)
    return c.error(std::string("null pointer for ") +
                   (!p.dy ? "dy" : !p.r ? "r" : !p.rstd ? "rstd" : !p.weight ? "weight" : !p.dx ? "dx" : "dweight"));
  if (!rms && !p.mean) return c.error("null pointer for mean (LayerNorm's backward needs it)");
  if (rms && (p.mean || p.dbias)) return c.error("RMSNorm has no mean and no bias");
  const size_t e = size_of(p.type), w = size_of(p.weight_type);
  if (Status s = c.matrix(p.dy, "dy", p.rows, p.cols, p.ldy, e); !s) return s;
  if (Status s = c.matrix(p.r, "r", p.rows, p.cols, p.ldr, e); !s) return s;
  if (p.dresidual_in)
    if (Status s = c.matrix(p.dresidual_in, "dresidual_in", p.rows, p.cols, p.ld_dresidual_in, e); !s) return s;
  if (Status s = c.matrix(p.dx, "dx", p.rows, p.cols, p.ldx, e); !s) return s;
  if (p.dresidual) if (Status s = c.matrix(p.dresidual, "dresidual", p.rows, p.cols, p.ld_dresidual, e); !s) return s;
  if (Status s = c.matrix(p.rstd, "rstd", 1, p.rows, p.rows, 4); !s) return s;
  if (p.mean) if (Status s = c.matrix(p.mean, "mean", 1, p.rows, p.rows, 4); !s) return s;
  if (Status s = c.matrix(p.weight, "weight", 1, p.cols, p.cols, w); !s) return s;
  if (Status s = c.matrix(p.dweight, "dweight", 1, p.cols, p.cols, w); !s) return s;
  if (p.dbias) if (Status s = c.matrix(p.dbias, "dbias", 1, p.cols, p.cols, w); !s) return s;
  const size_t need = norm_backward_workspace_bytes(p.rows, p.cols);
  if (!p.workspace || p.workspace_bytes < need)
    return c.error("the workspace must hold norm_backward_workspace_bytes(rows, cols) = " + std::to_string(need) + " bytes");
  if (!checks::aligned(p.workspace, 16) || !checks::inside_allocation(p.workspace, need))
    return c.error("the workspace must be 16-byte aligned device memory of workspace_bytes");
  const size_t rows_m1 = size_t(p.rows - 1), cols = size_t(p.cols);
  auto bytes = [&](long ld, size_t elem) { return (rows_m1 * ld + cols) * elem; };
  const checks::Span outs[] = {
      {p.dx, bytes(p.ldx, e), "dx"}, {p.dresidual, bytes(p.ld_dresidual, e), "dresidual"},
      {p.dweight, cols * w, "dweight"}, {p.dbias, cols * w, "dbias"}, {p.workspace, need, "workspace"}};
  const checks::Span ins[] = {{p.dy, bytes(p.ldy, e), "dy"}, {p.r, bytes(p.ldr, e), "r"},
                        {p.dresidual_in, bytes(p.ld_dresidual_in, e), "dresidual_in"},
                        {p.weight, cols * w, "weight"}, {p.rstd, size_t(p.rows) * 4, "rstd"},
                        {p.mean, size_t(p.rows) * 4, "mean"}};
  if (std::string o = checks::first_overlap(outs, ins); !o.empty()) return c.error(o);
  return {};
}

// Calls f(shape) with the narrowest NormShape of `Shapes` whose capacity holds `cols`.
template <class Shapes = kernels::norm_shapes, class F, size_t I = 0>
void with_shape(int cols, F&& f) {
  using S = std::tuple_element_t<I, Shapes>;
  if constexpr (I + 1 < std::tuple_size_v<Shapes>) {
    if (cols > S::capacity) return with_shape<Shapes, F, I + 1>(cols, std::forward<F>(f));
  }
  f(S{});
}

// Teams (partials) of the backward for a problem, and its grid.
template <class S>
int backward_blocks(int rows) {
  return int(std::min<long>((long(rows) + S::rows_per_block - 1) / S::rows_per_block,
                                kernels::norm_backward_max_waves / S::block_waves));
}

// Whether every given (non-null) row tensor allows 8-column chunks as 16-byte (a byte mask: 8-byte) vector
// accesses: rows start on 8-element boundaries, the pointer aligned to 16 bytes or the chunk's size if smaller.
struct Rows {
  const void* ptr;
  long ld;
  size_t elem;
};
bool vector_rows(std::initializer_list<Rows> tensors) {
  for (const Rows& t : tensors)
    if (t.ptr && (t.ld % kernels::norm_chunk || !checks::aligned(t.ptr, std::min<size_t>(16, kernels::norm_chunk * t.elem))))
      return false;
  return true;
}

kernels::Dropout dropout_of(float p, uint64_t seed, uint64_t offset) {
  // p < 1, so ceil(p * 2^16) <= 2^16 (the product is exact in float); 2^16 keeps nothing.
  const uint32_t threshold = dropout_threshold(p);
  return {p, 1.f / (1.f - p), uint32_t(seed), uint32_t(seed >> 32), uint32_t(offset), uint32_t(offset >> 32), threshold};
}

// Calls f.template operator()<T>() for the activations' type (the kernels take the weights' at run time).
template <class F>
void with_type(scalar_type type, F&& f) {
  if (type == scalar_type::bf16) f.template operator()<bf16>();
  else if (type == scalar_type::f16) f.template operator()<half>();
  else f.template operator()<float>();
}

Status launched(const Check& c) {
  if (hipError_t e = hipGetLastError(); e != hipSuccess)
    return {e, std::string(c.api) + ": launch failed: " + hipGetErrorString(e)};
  return {};
}

Status forward(const NormProblem& p, bool rms) {
  const Check c{rms ? "hk::rms_norm" : "hk::layer_norm"};
  if (Status s = validate(p, rms, c); !s) return s;
  const kernels::NormForwardArgs a{p.rows, p.cols, p.x, p.ldx, p.residual, p.ld_residual, p.weight, p.bias, p.y,
                                   p.ldy, p.residual_out, p.ld_residual_out, p.mean, p.rstd, p.mask, p.ld_mask,
                                   p.mask_bits, p.ld_mask_bits, p.eps,
                                   dropout_of(p.p, p.seed, p.offset), rms,
                                   vector_rows({{p.x, p.ldx, size_of(p.type)}, {p.residual, p.ld_residual, size_of(p.type)},
                                                {p.y, p.ldy, size_of(p.type)}, {p.residual_out, p.ld_residual_out, size_of(p.type)},
                                                {p.mask, p.ld_mask, 1}, {p.weight, 0, size_of(p.weight_type)},
                                                {p.bias, 0, size_of(p.weight_type)}}),
                                   p.weight_type == scalar_type::fp32};
  (void)hipGetLastError();  // launch errors below are ours alone
  with_type(p.type, [&]<class T>() {
    with_shape(p.cols, [&]<class S>(S) {
      const dim3 grid{unsigned((p.rows + S::rows_per_block - 1) / S::rows_per_block)};
      if (a.vector && p.cols % kernels::norm_chunk == 0)  // whole chunks only: the branch-free kernel
        hipLaunchKernelGGL((kernels::norm_forward<T, S, true>), grid, dim3(S::block_threads), 0, p.stream, a);
      else
        hipLaunchKernelGGL((kernels::norm_forward<T, S, false>), grid, dim3(S::block_threads), 0, p.stream, a);
    });
  });
  return launched(c);
}

Status backward(const NormBackwardProblem& p, bool rms) {
  const Check c{rms ? "hk::rms_norm_backward" : "hk::layer_norm_backward"};
  if (Status s = validate(p, rms, c); !s) return s;
  float* partial_dw = static_cast<float*>(p.workspace);
  const size_t e = size_of(p.type);
  (void)hipGetLastError();
  const bool weight_fp32 = p.weight_type == scalar_type::fp32;
  with_type(p.type, [&]<class T>() {
    with_shape<kernels::norm_backward_shapes>(p.cols, [&]<class S>(S) {
      const int blocks = backward_blocks<S>(p.rows), teams = blocks * S::rows_per_block;
      float* partial_db = p.dbias ? partial_dw + size_t(teams) * p.cols : nullptr;
      const kernels::NormBackwardArgs a{p.rows, p.cols, p.dy, p.ldy, p.r, p.ldr, p.dresidual_in, p.ld_dresidual_in,
                                        p.mean, p.rstd, p.weight, p.dx, p.ldx, p.dresidual, p.ld_dresidual,
                                        partial_dw, partial_db, dropout_of(p.p, p.seed, p.offset), rms,
                                        vector_rows({{p.dy, p.ldy, e}, {p.r, p.ldr, e}, {p.dresidual_in, p.ld_dresidual_in, e},
                                                     {p.dx, p.ldx, e}, {p.dresidual, p.ld_dresidual, e},
                                                     {p.weight, 0, size_of(p.weight_type)}}),
                                        weight_fp32};
      // Whole chunks only (every row a multiple of 8 columns, vector accesses allowed): the branch-free row loop. The
      // weight's type at run time (TW void), except in the shapes that reload the weight in their row loop.
      auto rows = [&]<class TW>(TW*) {
        if (a.vector && p.cols % kernels::norm_chunk == 0)
          hipLaunchKernelGGL((kernels::norm_backward<T, TW, S, true>), dim3(blocks), dim3(S::block_threads), 0, p.stream, a);
        else
          hipLaunchKernelGGL((kernels::norm_backward<T, TW, S, false>), dim3(blocks), dim3(S::block_threads), 0, p.stream, a);
      };
      if constexpr (S::chunks == 1) rows((void*)nullptr);
      else if (weight_fp32) rows((float*)nullptr);
      else rows((T*)nullptr);
      const dim3 grid{unsigned((p.cols + kernels::norm_reduce_columns_per_block - 1) / kernels::norm_reduce_columns_per_block)};
      auto reduce = weight_fp32 ? kernels::norm_reduce_columns<float> : kernels::norm_reduce_columns<T>;
      hipLaunchKernelGGL(reduce, grid, dim3(kernels::norm_reduce_threads), 0, p.stream, partial_dw, partial_db, teams,
                         p.cols, p.dweight, p.dbias);
    });
  });
  return launched(c);
}

}  // namespace

size_t norm_backward_workspace_bytes(int rows, int cols) {
  if (rows <= 0 || cols <= 0 || cols > norm_max_cols) return 0;
  size_t teams = 0;
  with_shape<kernels::norm_backward_shapes>(cols, [&]<class S>(S) { teams = size_t(backward_blocks<S>(rows)) * S::rows_per_block; });
  return 2 * teams * size_t(cols) * sizeof(float);  // dweight and dbias partials
}

Status layer_norm(const NormProblem& p) { return forward(p, false); }
Status rms_norm(const NormProblem& p) { return forward(p, true); }
Status layer_norm_backward(const NormBackwardProblem& p) { return backward(p, false); }
Status rms_norm_backward(const NormBackwardProblem& p) { return backward(p, true); }

}  // namespace hk
