"""hk.gemm: C = alpha * A @ op(B) + beta * C as a torch op, with its backward as two more hk GEMMs."""
from typing import Optional

import torch

from . import _C, _runtime as rt

_INPUT_TYPES = (torch.bfloat16, torch.float16)
_OUTPUT_TYPES = (torch.float32, torch.bfloat16)


def _b_operand(b):
    """(memory, ld, b_is_nk) for the logical K x N operand `b`: a row-major K x N or N x K matrix read in place."""
    if b.stride(1) == 1 or b.shape[1] == 1:
        m, ld = rt.row_major(b)
        return m, ld, False
    m, ld = rt.row_major(b.t())  # columns contiguous: the memory is an N x K row-major matrix
    return m, ld, True


@torch.library.custom_op("hk::gemm", mutates_args=())
def _gemm(a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype, alpha: float, beta: float,
          c: Optional[torch.Tensor]) -> torch.Tensor:
    """a (M, K) @ b (K, N), both any strides; c (M, N) is read when beta != 0."""
    ab_type = rt.scalar_type("gemm", "a", a.dtype, _INPUT_TYPES)
    c_type = rt.scalar_type("gemm", "out_dtype", out_dtype, _OUTPUT_TYPES)
    m, k = a.shape
    n = b.shape[1]
    out = torch.empty((m, n), dtype=out_dtype, device=a.device)
    if c is not None and beta != 0:
        out.copy_(c)
    a_mem, lda = rt.row_major(a)
    b_mem, ldb, b_is_nk = _b_operand(b)
    p = _C.GemmProblem()
    p.m, p.n, p.k = m, n, k
    p.lda, p.ldb, p.b_is_nk, p.ldc = lda, ldb, b_is_nk, max(n, 1)
    p.ab_type, p.c_type = ab_type, c_type
    p.alpha, p.beta = alpha, (beta if c is not None else 0.0)
    rt.launch(_C.gemm, p, rt.bind(p, a=a_mem, b=b_mem, c=out))
    return out


@_gemm.register_fake
def _(a, b, out_dtype, alpha, beta, c):
    return a.new_empty((a.shape[0], b.shape[1]), dtype=out_dtype)


def _grad_gemm(x, y, dtype, alpha):
    """alpha * x @ y in `dtype` (an input's type); f16 goes through an fp32 product, hk's GEMM having no f16 output."""
    out = _gemm(x, y, dtype if dtype in _OUTPUT_TYPES else torch.float32, alpha, 0.0, None)
    return out.to(dtype)


def _setup(ctx, inputs, output):
    a, b, out_dtype, alpha, beta, c = inputs
    ctx.save_for_backward(a, b)
    ctx.alpha, ctx.beta, ctx.has_c = alpha, beta, c is not None
    ctx.c_dtype = c.dtype if c is not None else None


def _backward(ctx, grad):
    a, b = ctx.saved_tensors
    g = grad.to(a.dtype)  # hk's GEMMs read bf16 / f16
    grad_a = grad_b = grad_c = None
    if ctx.needs_input_grad[0]:
        grad_a = _grad_gemm(g, b.t(), a.dtype, ctx.alpha)  # dA = alpha dC op(B)^T
    if ctx.needs_input_grad[1]:
        grad_b = _grad_gemm(a.t(), g, b.dtype, ctx.alpha)  # d op(B) = alpha A^T dC
    if ctx.has_c and ctx.needs_input_grad[5]:
        grad_c = (grad * ctx.beta).to(ctx.c_dtype)
    return grad_a, grad_b, None, None, None, grad_c


_gemm.register_autograd(_backward, setup_context=_setup)


def gemm(a, b, *, b_transposed=False, out_dtype=None, alpha=1.0, beta=0.0, c=None):
    """alpha * a @ op(b) + beta * c with hk's GEMM.

    a: (..., K), bf16 or f16 (leading dimensions are flattened into M rows); b: (K, N), or (N, K) with
    b_transposed=True (op(b) = b.T, as torch.nn.functional.linear's weight), of a's type. Any strides: row-major
    operands and their transposes are read in place, others copied. out_dtype: float32 or bfloat16 (default:
    bfloat16 for bfloat16 inputs, float32 for float16). c: (..., N) like the output, read when beta != 0.
    Differentiable in a, b and c.
    """
    rt.check_tensor("gemm", "a", a)
    rt.check_tensor("gemm", "b", b, dim=2)
    if a.dim() < 2:
        raise ValueError(f"hk.gemm: a must have at least 2 dimensions, got shape {tuple(a.shape)}")
    if b.dtype != a.dtype:
        raise ValueError(f"hk.gemm: a is {a.dtype} and b is {b.dtype}; they must have the same type")
    rt.scalar_type("gemm", "a", a.dtype, _INPUT_TYPES)
    if out_dtype is None:
        out_dtype = torch.bfloat16 if a.dtype == torch.bfloat16 else torch.float32
    rt.scalar_type("gemm", "out_dtype", out_dtype, _OUTPUT_TYPES)
    op_b = b.t() if b_transposed else b
    lead = a.shape[:-1]
    a2 = a.reshape(-1, a.shape[-1])
    if op_b.shape[0] != a2.shape[1]:
        raise ValueError(f"hk.gemm: a is {tuple(a.shape)} and op(b) is {tuple(op_b.shape)}: inner dimensions differ")
    c2 = None
    if c is not None and beta != 0:
        rt.check_tensor("gemm", "c", c)
        if tuple(c.shape) != (*lead, op_b.shape[1]):
            raise ValueError(f"hk.gemm: c is {tuple(c.shape)}; expected {(*lead, op_b.shape[1])}")
        c2 = c.reshape(-1, op_b.shape[1])
    out = _gemm(a2, op_b, out_dtype, float(alpha), float(beta), c2)
    return out.reshape(*lead, op_b.shape[1])
