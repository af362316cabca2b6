"""hk.gemm_mx and hk.gemm_int8: the quantized GEMM formats as torch ops (forward only).

Both take the weight as torch.nn.functional.linear does, B (N, K), and return A @ B^T (M, N).
"""
from typing import Optional

import torch

from . import _C, _runtime as rt

# The MX element formats: torch's dtype for each, and bits per element. fp6 has no torch dtype: it travels as uint8
# bytes (32 elements in 24 bytes, element e in bits 6e..6e+5 of the block's little-endian bit string) with a format
# named explicitly.
_MX_DTYPES = {
    torch.float8_e4m3fn: "e4m3",
    torch.float8_e5m2: "e5m2",
    torch.float4_e2m1fn_x2: "e2m1",
}
_MX_BITS = {"e4m3": 8, "e5m2": 8, "e2m3": 6, "e3m2": 6, "e2m1": 4}
_MX_OUTPUT_TYPES = (torch.float32, torch.bfloat16, torch.float16)
_INT8_OUTPUT_TYPES = (torch.int32, torch.bfloat16, torch.float32)


def _dtype_name(d):
    return str(d).replace("torch.", "")


def _byte_rows(t, row_bytes, multiple):
    """`t` (2-D, one byte per element) as (bytes, row stride in bytes): in place when its rows are contiguous, start on
    4 bytes and lie `multiple` bytes apart; else copied into rows padded to `multiple` bytes."""
    t = t.view(torch.uint8)
    rows = t.shape[0]
    if (t.stride(1) == 1 or t.shape[1] == 1) and t.data_ptr() % 4 == 0 and (rows == 1 or t.stride(0) % multiple == 0):
        return t, (t.stride(0) if rows > 1 else -(-row_bytes // multiple) * multiple)
    padded = -(-row_bytes // multiple) * multiple
    copy = torch.zeros((rows, padded), dtype=torch.uint8, device=t.device)
    copy[:, :row_bytes] = t
    return copy, padded


def _mx_operand(name, t, fmt):
    """(format, K) of an MX operand: its format from its dtype, or `fmt` for uint8 (fp6, or any format's bytes)."""
    rt.check_tensor("gemm_mx", name, t, dim=2)
    if t.dtype == torch.uint8:
        if fmt not in _MX_BITS:
            raise ValueError(f"hk.gemm_mx: {name} is uint8 bytes; say its format ({name}_format = one of "
                             f"{', '.join(_MX_BITS)})")
    elif t.dtype in _MX_DTYPES:
        if fmt is not None and fmt != _MX_DTYPES[t.dtype]:
            raise ValueError(f"hk.gemm_mx: {name} is {_dtype_name(t.dtype)} but {name}_format says {fmt}")
        fmt = _MX_DTYPES[t.dtype]
    else:
        names = ", ".join(_dtype_name(d) for d in _MX_DTYPES)
        raise ValueError(f"hk.gemm_mx: {name} is {_dtype_name(t.dtype)}; expected {names} or uint8 bytes (fp6)")
    bits = _MX_BITS[fmt]
    if (t.shape[1] * 8) % bits:
        raise ValueError(f"hk.gemm_mx: {name}'s rows of {t.shape[1]} bytes do not hold whole {fmt} elements")
    return fmt, t.shape[1] * 8 // bits


@torch.library.custom_op("hk::gemm_mx", mutates_args=())
def _gemm_mx(a: torch.Tensor, a_scale: torch.Tensor, b: torch.Tensor, b_scale: torch.Tensor, a_format: str,
             b_format: str, k: int, out_dtype: torch.dtype, alpha: float, beta: float,
             c: Optional[torch.Tensor]) -> torch.Tensor:
    """a (M, K bytes-worth), b (N, ...) and the scales as uint8; C = alpha (A 2^sa)(B 2^sb)^T + beta c."""
    m, n = a.shape[0], b.shape[0]
    out = torch.empty((m, n), dtype=out_dtype, device=a.device)
    if c is not None and beta != 0:
        out.copy_(c)
    p = _C.GemmMxProblem()
    p.m, p.n, p.k = m, n, k
    p.a_format, p.b_format = getattr(_C.mx_format, a_format), getattr(_C.mx_format, b_format)
    a_mem, lda = _byte_rows(a, k * _MX_BITS[a_format] // 8, 4 * _MX_BITS[a_format])
    b_mem, ldb = _byte_rows(b, k * _MX_BITS[b_format] // 8, 4 * _MX_BITS[b_format])
    sa_mem, ld_sa = rt.row_major(a_scale)
    sb_mem, ld_sb = rt.row_major(b_scale)
    p.lda, p.ldb = lda * 8 // _MX_BITS[a_format], ldb * 8 // _MX_BITS[b_format]
    p.ld_scale_a, p.ld_scale_b, p.ldc = ld_sa, ld_sb, max(n, 1)
    p.c_type = rt.SCALAR_TYPES[out_dtype]
    p.alpha, p.beta = alpha, (beta if c is not None else 0.0)
    rt.launch(_C.gemm_mx, p, rt.bind(p, a=a_mem, b=b_mem, scale_a=sa_mem, scale_b=sb_mem, c=out))
    return out


@_gemm_mx.register_fake
def _(a, a_scale, b, b_scale, a_format, b_format, k, out_dtype, alpha, beta, c):
    return a.new_empty((a.shape[0], b.shape[0]), dtype=out_dtype)


def gemm_mx(a, a_scale, b, b_scale, *, a_format=None, b_format=None, out_dtype=torch.bfloat16, alpha=1.0, beta=0.0,
            c=None):
    """alpha * (A . 2^a_scale) @ (B . 2^b_scale)^T + beta * c with hk's block-scaled (OCP MX) GEMM (gfx950).

    a: (M, K) float8_e4m3fn or float8_e5m2, (M, K/2) float4_e2m1fn_x2 (two elements per byte, low nibble first), or
    uint8 bytes with a_format "e2m3" / "e3m2" (fp6: (M, 3K/4), 32 elements in 24 bytes, little-endian bits) or any
    other format's name. b: (N, K) in the same conventions (the weight of torch.nn.functional.linear); A's and B's
    formats may differ. a_scale (M, K/32), b_scale (N, K/32): float8_e8m0fnu (or its uint8 bits), one scale per 32
    consecutive k. K a multiple of 32. out_dtype float32, bfloat16 or float16; c (M, N) read when beta != 0.
    """
    a_format, k = _mx_operand("a", a, a_format)
    b_format, kb = _mx_operand("b", b, b_format)
    if k != kb:
        raise ValueError(f"hk.gemm_mx: a holds K = {k} per row and b holds K = {kb}; they must agree")
    if k % 32:
        raise ValueError(f"hk.gemm_mx: K = {k} must be a multiple of 32, the MX block size")
    for name, s, rows in (("a_scale", a_scale, a.shape[0]), ("b_scale", b_scale, b.shape[0])):
        rt.check_tensor("gemm_mx", name, s, dim=2)
        if s.dtype not in (torch.float8_e8m0fnu, torch.uint8):
            raise ValueError(f"hk.gemm_mx: {name} is {_dtype_name(s.dtype)}; expected float8_e8m0fnu or uint8")
        if tuple(s.shape) != (rows, k // 32):
            raise ValueError(f"hk.gemm_mx: {name} is {tuple(s.shape)}; expected {(rows, k // 32)} (one per 32 k)")
    rt.scalar_type("gemm_mx", "out_dtype", out_dtype, _MX_OUTPUT_TYPES)
    c2 = None
    if c is not None and beta != 0:
        rt.check_tensor("gemm_mx", "c", c, dim=2)
        if tuple(c.shape) != (a.shape[0], b.shape[0]):
            raise ValueError(f"hk.gemm_mx: c is {tuple(c.shape)}; expected {(a.shape[0], b.shape[0])}")
        c2 = c
    as_bytes = lambda t: t.view(torch.uint8)  # noqa: E731 (the op takes every operand as its bytes)
    return _gemm_mx(as_bytes(a), as_bytes(a_scale), as_bytes(b), as_bytes(b_scale), a_format, b_format, k,
                    out_dtype, float(alpha), float(beta), c2)


@torch.library.custom_op("hk::gemm_int8", mutates_args=())
def _gemm_int8(a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype, row_scale: Optional[torch.Tensor],
               col_scale: Optional[torch.Tensor]) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[0]
    out = torch.empty((m, n), dtype=out_dtype, device=a.device)
    a_mem, lda = _byte_rows(a, k, 4)
    b_mem, ldb = _byte_rows(b, k, 4)
    p = _C.GemmInt8Problem()
    p.m, p.n, p.k = m, n, k
    p.lda, p.ldb, p.ldc = lda, ldb, max(n, 1)
    p.c_type = {torch.int32: _C.GemmInt8Problem.Output.int32, torch.bfloat16: _C.GemmInt8Problem.Output.bf16,
                torch.float32: _C.GemmInt8Problem.Output.fp32}[out_dtype]
    scales = {name: (None if s is None else s.contiguous()) for name, s in (("row_scale", row_scale),
                                                                           ("col_scale", col_scale))}
    rt.launch(_C.gemm_int8, p, rt.bind(p, a=a_mem.view(torch.int8), b=b_mem.view(torch.int8), c=out, **scales))
    return out


@_gemm_int8.register_fake
def _(a, b, out_dtype, row_scale, col_scale):
    return a.new_empty((a.shape[0], b.shape[0]), dtype=out_dtype)


def gemm_int8(a, b, *, out_dtype=torch.int32, row_scale=None, col_scale=None):
    """a @ b^T with hk's int8 GEMM: a (M, K) and b (N, K) int8, exact int32 accumulation (wrapping modulo 2^32).

    out_dtype int32 (the sums), or bfloat16 / float32 as sum * row_scale[i] * col_scale[j] with row_scale (M) and
    col_scale (N) float32 (either may be None: 1).
    """
    rt.check_tensor("gemm_int8", "a", a, dim=2)
    rt.check_tensor("gemm_int8", "b", b, dim=2)
    for name, t in (("a", a), ("b", b)):
        if t.dtype != torch.int8:
            raise ValueError(f"hk.gemm_int8: {name} is {_dtype_name(t.dtype)}; expected int8")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"hk.gemm_int8: a is {tuple(a.shape)} and b is {tuple(b.shape)}: K differs")
    if out_dtype not in _INT8_OUTPUT_TYPES:
        names = ", ".join(_dtype_name(d) for d in _INT8_OUTPUT_TYPES)
        raise ValueError(f"hk.gemm_int8: out_dtype is {_dtype_name(out_dtype)}; expected {names}")
    for name, s, count in (("row_scale", row_scale, a.shape[0]), ("col_scale", col_scale, b.shape[0])):
        if s is None:
            continue
        rt.check_tensor("gemm_int8", name, s, dim=1)
        if out_dtype == torch.int32:
            raise ValueError(f"hk.gemm_int8: {name} scales a bfloat16 or float32 output, not int32 sums")
        if s.dtype != torch.float32 or s.shape[0] != count:
            raise ValueError(f"hk.gemm_int8: {name} must be float32 of shape ({count},), got "
                             f"{_dtype_name(s.dtype)} {tuple(s.shape)}")
    return _gemm_int8(a, b, out_dtype, row_scale, col_scale)
