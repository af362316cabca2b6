"""hk.rotary: rotary position embedding of a (B, S, H, D) tensor, as a torch op whose backward rotates back."""
from typing import Optional

import torch

from . import _C, _runtime as rt

_TYPES = (torch.bfloat16, torch.float16, torch.float32)
_TABLE_TYPES = (torch.float32, torch.bfloat16)


@torch.library.custom_op("hk::rotary", mutates_args=())
def _rotary(x: torch.Tensor, cos: Optional[torch.Tensor], sin: Optional[torch.Tensor],
            positions: Optional[torch.Tensor], base: float, rotary_dim: int, seqlen_offset: int, interleaved: bool,
            inverse: bool) -> torch.Tensor:
    """x rotated by +theta (inverse: -theta, the backward), angles from the cos/sin tables or from base."""
    x = rt.unit_stride_last(x)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    b, s, h, d = x.shape
    p = _C.RotaryProblem()
    p.batch, p.seqlen, p.head_dim, p.rotary_dim = b, s, d, rotary_dim
    p.type = rt.scalar_type("rotary", "x", x.dtype, _TYPES)
    t = _C.RotaryTensor()
    tensors = rt.bind(t, input=x, output=out)
    t.heads = h
    t.in_stride_b, t.in_stride_s, t.in_stride_h = x.stride(0), x.stride(1), x.stride(2)
    t.out_stride_b, t.out_stride_s, t.out_stride_h = out.stride(0), out.stride(1), out.stride(2)
    p.q = t
    p.interleaved = interleaved
    if cos is not None:
        if cos.stride() != sin.stride() or cos.stride(-1) != 1:
            cos, sin = cos.contiguous(), sin.contiguous()
        p.table_type = rt.scalar_type("rotary", "cos", cos.dtype, _TABLE_TYPES)
        p.table_rows, p.table_stride = cos.shape[0], cos.stride(0)
    else:
        p.base = base
    tensors += rt.bind(p, cos=cos, sin=sin, positions=positions)
    p.position_offset = seqlen_offset
    if x.numel() > 0:
        rt.launch(_C.rotary_backward if inverse else _C.rotary, p, tensors)
    return out


@_rotary.register_fake
def _(x, cos, sin, positions, base, rotary_dim, seqlen_offset, interleaved, inverse):
    return x.new_empty(x.shape)


def _setup(ctx, inputs, output):
    x, cos, sin, positions, *rest = inputs
    ctx.save_for_backward(cos, sin, positions)
    ctx.rest = rest


def _backward(ctx, grad):
    cos, sin, positions = ctx.saved_tensors
    base, rotary_dim, offset, interleaved, inverse = ctx.rest
    # The rotation is orthogonal: its gradient is the rotation the other way. The tables are constants.
    grad_x = _rotary(grad, cos, sin, positions, base, rotary_dim, offset, interleaved, not inverse)
    return grad_x, None, None, None, None, None, None, None, None


_rotary.register_autograd(_backward, setup_context=_setup)


def rotary(x, cos=None, sin=None, *, interleaved=False, seqlen_offset=0, base=None, rotary_dim=None, positions=None):
    """x (B, S, H, D), bf16, f16 or fp32, with the first rotary_dim elements of each head rotated (the rest copied).

    Angles from tables, as flash-attention's apply_rotary_emb: cos and sin (rows, rotary_dim / 2), fp32 or bf16,
    row seqlen_offset + s for token s. Or computed as theta_i = position * base ** (-2i / rotary_dim) with
    base > 0 (rotary_dim defaults to D), positions being seqlen_offset + s, or positions[b, s] (int32, (B, S)) when
    given. interleaved=False rotates the pairs (i, i + rotary_dim / 2) (GPT-NeoX), True the pairs (2i, 2i + 1) (GPT-J).
    Differentiable in x; the tables are treated as constants.
    """
    rt.check_tensor("rotary", "x", x, dim=4)
    rt.scalar_type("rotary", "x", x.dtype, _TYPES)
    if (cos is None) != (sin is None):
        raise ValueError("hk.rotary: give both cos and sin, or neither")
    if (cos is None) == (base is None):
        raise ValueError("hk.rotary: give the angles either as cos and sin tables or as base")
    if cos is not None:
        rt.check_tensor("rotary", "cos", cos, dim=2)
        rt.check_tensor("rotary", "sin", sin, dim=2)
        if cos.shape != sin.shape or cos.dtype != sin.dtype:
            raise ValueError(f"hk.rotary: cos {tuple(cos.shape)} {cos.dtype} and sin {tuple(sin.shape)} {sin.dtype} "
                             "must have one shape and type")
        if rotary_dim is not None and rotary_dim != 2 * cos.shape[1]:
            raise ValueError(f"hk.rotary: rotary_dim {rotary_dim} disagrees with the tables' {cos.shape[1]} columns")
        rotary_dim = 2 * cos.shape[1]
        base = 0.0
    if positions is not None:
        rt.check_tensor("rotary", "positions", positions, dim=2)
        if positions.dtype != torch.int32 or tuple(positions.shape) != tuple(x.shape[:2]):
            raise ValueError(f"hk.rotary: positions must be int32 of shape {tuple(x.shape[:2])}")
        positions = positions.contiguous()
    return _rotary(x, cos, sin, positions, float(base), int(rotary_dim or 0), int(seqlen_offset), bool(interleaved),
                   False)
