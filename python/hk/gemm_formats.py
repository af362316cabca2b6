"""The quantized and grouped GEMMs as torch ops (forward only): hk.gemm_mx (OCP MX block scales), hk.gemm_int8,
hk.gemm_blockwise (DeepSeek-V3's fp8 block scales) and hk.grouped_gemm (mixture-of-experts).

gemm_mx, gemm_int8 and gemm_blockwise take the weight as torch.nn.functional.linear does, B (N, K), and return
A @ B^T (M, N).
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


# fp8 in the device's format: FNUZ on gfx942, OCP on gfx950 (hk::gemm's convention).
_FP8_FORMATS = {"gfx942": {torch.float8_e4m3fnuz: "fp8_e4m3", torch.float8_e5m2fnuz: "fp8_e5m2"},
                "gfx950": {torch.float8_e4m3fn: "fp8_e4m3", torch.float8_e5m2: "fp8_e5m2"}}
_GEMM_TYPES = {torch.bfloat16: "bf16", torch.float16: "f16"}


def _ab_type(entry, name, dtype, fp8_only=False):
    """hk's scalar_type for an A/B operand of `dtype`: bf16 / f16, or fp8 in this device's format."""
    fp8 = _FP8_FORMATS.get(rt.device_arch(), {})
    allowed = dict(fp8) if fp8_only else {**_GEMM_TYPES, **fp8}
    if dtype not in allowed:
        names = ", ".join(_dtype_name(d) for d in allowed)
        raise ValueError(f"hk.{entry}: {name} is {_dtype_name(dtype)}; on {rt.device_arch()} expected {names}")
    return getattr(_C.scalar_type, allowed[dtype])


@torch.library.custom_op("hk::grouped_gemm", mutates_args=())
def _grouped_gemm(a: torch.Tensor, b: torch.Tensor, offsets: torch.Tensor, b_transposed: bool,
                  out_dtype: torch.dtype, alpha: float, beta: float, c: Optional[torch.Tensor]) -> torch.Tensor:
    rows, k = a.shape
    groups = b.shape[0]
    n = b.shape[1] if b_transposed else b.shape[2]
    out = torch.empty((rows, n), dtype=out_dtype, device=a.device)
    if c is not None and beta != 0:
        out.copy_(c)
    if b.stride(-1) != 1 or b.stride(1) < b.shape[2]:
        b = b.contiguous()
    a_mem, lda = rt.row_major(a)
    p = _C.GroupedGemmProblem()
    p.m, p.n, p.k = rows, n, k
    p.lda, p.ldb, p.b_is_nk, p.ldc = lda, b.stride(1), b_transposed, max(n, 1)
    p.b_group_stride = b.stride(0)
    p.ab_type = _ab_type("grouped_gemm", "a", a.dtype)
    p.c_type = rt.SCALAR_TYPES[out_dtype]
    p.alpha, p.beta = alpha, (beta if c is not None else 0.0)
    p.groups = groups
    p.offsets_int64 = offsets.dtype == torch.int64
    offsets = offsets.contiguous()
    rt.launch(_C.grouped_gemm, p, rt.bind(p, a=a_mem, b=b, c=out, offsets=offsets))
    return out


@_grouped_gemm.register_fake
def _(a, b, offsets, b_transposed, out_dtype, alpha, beta, c):
    return a.new_empty((a.shape[0], b.shape[1] if b_transposed else b.shape[2]), dtype=out_dtype)


def grouped_gemm(a, b, offsets, *, b_transposed=False, out_dtype=None, alpha=1.0, beta=0.0, c=None):
    """The mixture-of-experts GEMM in one launch: rows offsets[g] .. offsets[g+1] - 1 of a (tokens sorted by expert)
    times expert g's weight, for every g.

    a: (M, K) bf16, f16 or fp8 (the device's format: float8_e4m3fnuz / float8_e5m2fnuz on gfx942, float8_e4m3fn /
    float8_e5m2 on gfx950); b: (G, K, N), or (G, N, K) with b_transposed=True (torch.nn.functional.linear's weights),
    of a's type; offsets: (G + 1,) int32 or int64, offsets[0] = 0, never decreasing, offsets[G] = M (empty groups
    allowed). alpha (fp8: the per-tensor scale) and beta as hk.gemm; out_dtype float32 or bfloat16 (default bfloat16
    for bf16 and fp8, float32 for f16). Returns (M, N). Forward only.
    """
    for name, t, dim in (("a", a, 2), ("b", b, 3), ("offsets", offsets, 1)):
        rt.check_tensor("grouped_gemm", name, t, dim=dim)
    _ab_type("grouped_gemm", "a", a.dtype)
    if b.dtype != a.dtype:
        raise ValueError(f"hk.grouped_gemm: a is {_dtype_name(a.dtype)} and b is {_dtype_name(b.dtype)}; they must agree")
    if offsets.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"hk.grouped_gemm: offsets is {_dtype_name(offsets.dtype)}; expected int32 or int64")
    groups = b.shape[0]
    if offsets.shape[0] != groups + 1:
        raise ValueError(f"hk.grouped_gemm: offsets has {offsets.shape[0]} entries; b holds {groups} groups, so "
                         f"{groups + 1} are needed")
    k_b = b.shape[2] if b_transposed else b.shape[1]
    if k_b != a.shape[1]:
        raise ValueError(f"hk.grouped_gemm: a is {tuple(a.shape)} and b is {tuple(b.shape)} (b_transposed="
                         f"{b_transposed}): K differs")
    if out_dtype is None:
        out_dtype = torch.float32 if a.dtype == torch.float16 else torch.bfloat16
    rt.scalar_type("grouped_gemm", "out_dtype", out_dtype, (torch.float32, torch.bfloat16))
    n = b.shape[1] if b_transposed else b.shape[2]
    c2 = None
    if c is not None and beta != 0:
        rt.check_tensor("grouped_gemm", "c", c, dim=2)
        if tuple(c.shape) != (a.shape[0], n):
            raise ValueError(f"hk.grouped_gemm: c is {tuple(c.shape)}; expected {(a.shape[0], n)}")
        c2 = c
    return _grouped_gemm(a, b, offsets, bool(b_transposed), out_dtype, float(alpha), float(beta), c2)


@torch.library.custom_op("hk::gemm_blockwise", mutates_args=())
def _gemm_blockwise(a: torch.Tensor, a_scale: torch.Tensor, b: torch.Tensor, b_scale: torch.Tensor,
                    out_dtype: torch.dtype, pow2_scales: bool) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[0]
    out = torch.empty((m, n), dtype=out_dtype, device=a.device)
    a_mem, lda = rt.row_major(a)
    b_mem, ldb = rt.row_major(b)
    sa_mem, ld_sa = rt.row_major(a_scale)
    sb_mem, ld_sb = rt.row_major(b_scale)
    p = _C.GemmBlockwiseProblem()
    p.m, p.n, p.k = m, n, k
    p.lda, p.ldb, p.ld_scale_a, p.ld_scale_b, p.ldc = lda, ldb, ld_sa, ld_sb, max(n, 1)
    p.c_type = rt.SCALAR_TYPES[out_dtype]
    p.pow2_scales = pow2_scales
    rt.launch(_C.gemm_blockwise, p, rt.bind(p, a=a_mem, b=b_mem, scale_a=sa_mem, scale_b=sb_mem, c=out))
    return out


@_gemm_blockwise.register_fake
def _(a, a_scale, b, b_scale, out_dtype, pow2_scales):
    return a.new_empty((a.shape[0], b.shape[0]), dtype=out_dtype)


def gemm_blockwise(a, a_scale, b, b_scale, *, out_dtype=torch.bfloat16, pow2_scales=False):
    """DeepSeek-V3's block-scaled fp8 GEMM: C[m, n] = sum over 128-k blocks kb of a_scale[m, kb] * b_scale[n // 128,
    kb] * (A[m, kb block] . B[n, kb block]).

    a: (M, K) and b: (N, K) e4m3 in the device's format (float8_e4m3fnuz on gfx942, float8_e4m3fn on gfx950), K a
    multiple of 128; a_scale (M, K/128) float32 (activations, per 1 x 128); b_scale (ceil(N/128), K/128) float32
    (weights, per 128 x 128). out_dtype bfloat16 or float32. pow2_scales states the scales are powers of two (the same
    results either way). Forward only.
    """
    for name, t in (("a", a), ("a_scale", a_scale), ("b", b), ("b_scale", b_scale)):
        rt.check_tensor("gemm_blockwise", name, t, dim=2)
    for name, t in (("a", a), ("b", b)):
        _ab_type("gemm_blockwise", name, t.dtype, fp8_only=True)
        if "e5m2" in str(t.dtype):
            raise ValueError(f"hk.gemm_blockwise: {name} is {_dtype_name(t.dtype)}; the blockwise GEMM takes e4m3")
    m, k = a.shape
    n = b.shape[0]
    if b.shape[1] != k:
        raise ValueError(f"hk.gemm_blockwise: a is {tuple(a.shape)} and b is {tuple(b.shape)}: K differs")
    if k % 128:
        raise ValueError(f"hk.gemm_blockwise: K = {k} must be a multiple of 128, the scales' block")
    for name, s, shape in (("a_scale", a_scale, (m, k // 128)), ("b_scale", b_scale, (-(-n // 128), k // 128))):
        if s.dtype != torch.float32 or tuple(s.shape) != shape:
            raise ValueError(f"hk.gemm_blockwise: {name} must be float32 of shape {shape}, got "
                             f"{_dtype_name(s.dtype)} {tuple(s.shape)}")
    rt.scalar_type("gemm_blockwise", "out_dtype", out_dtype, (torch.bfloat16, torch.float32))
    return _gemm_blockwise(a, a_scale, b, b_scale, out_dtype, bool(pow2_scales))
