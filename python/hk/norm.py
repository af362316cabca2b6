"""hk.layer_norm and hk.rms_norm: dropout + residual add + norm fused, as torch ops with hk's backward kernels.

r = residual + dropout(x, p) / (1 - p), y = norm(r) * weight (+ bias), over the last dimension. The dropout mask
comes from (seed, offset) through Philox, so the backward regenerates it instead of storing it.
"""
from typing import Optional

import torch

from . import _C, _runtime as rt

_TYPES = (torch.bfloat16, torch.float16, torch.float32)


def _rows(t, cols):
    """(rows x cols view, leading dimension) of a (..., cols) tensor."""
    m, ld = rt.row_major(t.reshape(-1, cols))
    return m, ld


@torch.library.custom_op("hk::norm", mutates_args=())
def _norm(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], residual: Optional[torch.Tensor],
          rms: bool, eps: float, dropout_p: float, seed: int, offset: int
          ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(y, r, mean, rstd, mask): mean is empty for RMSNorm, mask (rows, cols) uint8 only when dropout_p > 0."""
    cols = x.shape[-1]
    x2, ldx = _rows(x, cols)
    rows = x2.shape[0]
    dev = x.device
    y = torch.empty(x.shape, dtype=x.dtype, device=dev)
    r = torch.empty(x.shape, dtype=x.dtype, device=dev)
    mean = torch.empty((0 if rms else rows,), dtype=torch.float32, device=dev)
    rstd = torch.empty((rows,), dtype=torch.float32, device=dev)
    mask = torch.empty((rows, cols) if dropout_p > 0 else (0,), dtype=torch.uint8, device=dev)
    p = _C.NormProblem()
    p.rows, p.cols = rows, cols
    p.type = rt.scalar_type("norm", "x", x.dtype, _TYPES)
    p.weight_type = rt.scalar_type("norm", "weight", weight.dtype, _TYPES)
    weight = weight.contiguous()
    bias = bias.contiguous() if bias is not None else None
    if residual is not None:
        residual, p.ld_residual = _rows(residual, cols)
    p.ldx, p.ldy, p.ld_residual_out, p.ld_mask = ldx, cols, cols, cols
    p.eps, p.p, p.seed, p.offset = eps, dropout_p, seed, offset
    tensors = rt.bind(p, x=x2, residual=residual, weight=weight, bias=bias, y=y, residual_out=r, mean=mean, rstd=rstd,
                      mask=mask)
    if rows > 0:
        rt.launch(_C.rms_norm if rms else _C.layer_norm, p, tensors)
    return y, r, mean, rstd, mask


@_norm.register_fake
def _(x, weight, bias, residual, rms, eps, dropout_p, seed, offset):
    rows = x.numel() // x.shape[-1] if x.shape[-1] else 0
    f32 = dict(dtype=torch.float32)
    return (x.new_empty(x.shape), x.new_empty(x.shape), x.new_empty((0 if rms else rows,), **f32),
            x.new_empty((rows,), **f32),
            x.new_empty((rows, x.shape[-1]) if dropout_p > 0 else (0,), dtype=torch.uint8))


@torch.library.custom_op("hk::norm_backward", mutates_args=())
def _norm_backward(dy: torch.Tensor, dr: Optional[torch.Tensor], r: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor,
                   weight: torch.Tensor, rms: bool, has_bias: bool, has_residual: bool, dropout_p: float, seed: int,
                   offset: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dx, dresidual, dweight, dbias) from dy and dr (the gradient reaching r from past the norm); dresidual is
    empty without a residual, dbias without a bias."""
    cols = r.shape[-1]
    dev = r.device
    dy2, ldy = _rows(dy.to(r.dtype), cols)
    dr2, ld_dr = _rows(dr.to(r.dtype), cols) if dr is not None else (None, 0)
    r2, ldr = _rows(r, cols)
    rows = r2.shape[0]
    dx = torch.empty(r.shape, dtype=r.dtype, device=dev)
    dres = torch.empty(r.shape if has_residual else (0,), dtype=r.dtype, device=dev)
    weight = weight.contiguous()
    dweight = torch.empty_like(weight)
    dbias = torch.empty_like(weight) if has_bias else weight.new_empty((0,))
    workspace = torch.empty((_C.norm_backward_workspace_bytes(rows, cols),), dtype=torch.uint8, device=dev)
    p = _C.NormBackwardProblem()
    p.rows, p.cols = rows, cols
    p.type = rt.scalar_type("norm", "x", r.dtype, _TYPES)
    p.weight_type = rt.scalar_type("norm", "weight", weight.dtype, _TYPES)
    p.ldy, p.ldr, p.ld_dresidual_in, p.ldx, p.ld_dresidual = ldy, ldr, ld_dr, cols, cols
    p.workspace_bytes = workspace.numel()
    p.p, p.seed, p.offset = dropout_p, seed, offset
    tensors = rt.bind(p, dy=dy2, dresidual_in=dr2, r=r2, mean=mean, rstd=rstd, weight=weight, dx=dx, dresidual=dres,
                      dweight=dweight, dbias=dbias, workspace=workspace)
    if rows > 0:
        rt.launch(_C.rms_norm_backward if rms else _C.layer_norm_backward, p, tensors)
    else:
        dweight.zero_()
        dbias.zero_()
    return dx, dres, dweight, dbias


@_norm_backward.register_fake
def _(dy, dr, r, mean, rstd, weight, rms, has_bias, has_residual, dropout_p, seed, offset):
    return (r.new_empty(r.shape), r.new_empty(r.shape if has_residual else (0,)), weight.new_empty(weight.shape),
            weight.new_empty(weight.shape if has_bias else (0,)))


def _setup(ctx, inputs, output):
    x, weight, bias, residual, rms, eps, dropout_p, seed, offset = inputs
    y, r, mean, rstd, mask = output
    ctx.save_for_backward(r, mean, rstd, weight)
    ctx.args = (rms, bias is not None, residual is not None, dropout_p, seed, offset)
    ctx.bias_dtype = bias.dtype if bias is not None else None


def _backward(ctx, dy, dr, dmean, drstd, dmask):
    r, mean, rstd, weight = ctx.saved_tensors
    if dy is None:
        dy = torch.zeros_like(r)
    rms, has_bias, has_residual, dropout_p, seed, offset = ctx.args
    dx, dres, dweight, dbias = _norm_backward(dy, dr, r, mean, rstd, weight, rms, has_bias, has_residual, dropout_p,
                                              seed, offset)
    return (dx, dweight, dbias if has_bias else None, dres if has_residual else None, None, None, None, None, None)


_norm.register_autograd(_backward, setup_context=_setup)


def _fused(entry, rms, x, weight, bias, residual, dropout_p, eps, prenorm, return_dropout_mask, seed, offset):
    rt.check_tensor(entry, "x", x)
    rt.check_tensor(entry, "weight", weight, dim=1)
    if x.dim() < 1 or weight.shape[0] != x.shape[-1]:
        raise ValueError(f"hk.{entry}: weight is {tuple(weight.shape)}; expected ({x.shape[-1] if x.dim() else 0},)")
    if bias is not None:
        rt.check_tensor(entry, "bias", bias, dim=1)
        if bias.shape != weight.shape or bias.dtype != weight.dtype:
            raise ValueError(f"hk.{entry}: bias must have weight's shape and type")
    if residual is not None:
        rt.check_tensor(entry, "residual", residual)
        if residual.shape != x.shape or residual.dtype != x.dtype:
            raise ValueError(f"hk.{entry}: residual is {tuple(residual.shape)} {residual.dtype}; expected x's "
                             f"{tuple(x.shape)} {x.dtype}")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"hk.{entry}: dropout_p must be in [0, 1), got {dropout_p}")
    if seed is None:
        # From torch's generator, so torch.manual_seed makes the dropout reproducible.
        seed = int(torch.randint(0, 2**62, (1,)).item()) if dropout_p > 0 else 0
    y, r, _, _, mask = _norm(x, weight, bias, residual, rms, float(eps), float(dropout_p), int(seed), int(offset))
    out = (y, r) if prenorm else (y,)
    if return_dropout_mask:
        out += (mask.reshape(x.shape).bool() if dropout_p > 0 else torch.ones(x.shape, dtype=torch.bool),)
    return out if len(out) > 1 else y


def layer_norm(x, weight, bias=None, *, residual=None, dropout_p=0.0, eps=1e-5, prenorm=False,
               return_dropout_mask=False, seed=None, offset=0):
    """LayerNorm over x's last dimension of r = residual + dropout(x, dropout_p) (flash-attention's
    dropout_add_layer_norm). x and residual: bf16, f16 or fp32; weight and bias: (cols,), x's type or fp32.

    Returns y; with prenorm=True (y, r), r being the residual stream's next value; with return_dropout_mask=True
    also the kept-elements mask. seed (default: drawn from torch's generator) and offset choose the dropout mask.
    Differentiable in x, weight, bias and residual.
    """
    return _fused("layer_norm", False, x, weight, bias, residual, dropout_p, eps, prenorm, return_dropout_mask,
                  seed, offset)


def rms_norm(x, weight, *, residual=None, dropout_p=0.0, eps=1e-5, prenorm=False, return_dropout_mask=False,
             seed=None, offset=0):
    """RMSNorm, y = r / sqrt(mean(r^2) + eps) * weight, with the same fused dropout and residual as layer_norm."""
    return _fused("rms_norm", True, x, weight, None, residual, dropout_p, eps, prenorm, return_dropout_mask, seed,
                  offset)
