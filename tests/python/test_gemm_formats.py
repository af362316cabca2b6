"""hk.gemm_mx, hk.gemm_int8, hk.grouped_gemm and hk.gemm_blockwise against float64 / exact integer references built
from the operands' bits."""
import pytest
import torch

import hk
from hk import _runtime as rt
from conftest import assert_close

# (exponent bits, mantissa bits, bias) of the sub-byte OCP MX formats (no infinities or NaNs).
_MINIFLOATS = {"e2m3": (2, 3, 1), "e3m2": (3, 2, 3), "e2m1": (2, 1, 1)}
_FP8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
_BITS = {"e4m3": 8, "e5m2": 8, "e2m3": 6, "e3m2": 6, "e2m1": 4}


def decode_minifloat(codes, fmt):
    ebits, mbits, bias = _MINIFLOATS[fmt]
    codes = codes.long()
    e = (codes >> mbits) & ((1 << ebits) - 1)
    m = (codes & ((1 << mbits) - 1)).double()
    value = torch.where(e == 0, m / 2**mbits * 2.0 ** (1 - bias), (1 + m / 2**mbits) * torch.pow(2.0, (e - bias).double()))
    return torch.where((codes >> (ebits + mbits)) & 1 == 1, -value, value)


def random_operand(rows, k, fmt, generator):
    """(the operand as gemm_mx takes it, its values in float64)."""
    if fmt in _FP8:
        x = (torch.randn(rows, k, dtype=torch.float64, generator=generator) * 2).to(_FP8[fmt])
        return x, x.double()
    bits = _BITS[fmt]
    codes = torch.randint(0, 1 << bits, (rows, k), generator=generator)
    # Little-endian bit string of each row: element e in bits bits*e .. bits*e + bits - 1.
    bit = (codes[:, :, None] >> torch.arange(bits)) & 1
    bit = bit.reshape(rows, k * bits // 8, 8)
    packed = (bit << torch.arange(8)).sum(-1).to(torch.uint8)
    if fmt == "e2m1":
        packed = packed.view(torch.float4_e2m1fn_x2)
    return packed, decode_minifloat(codes, fmt)


def scaled(values, scale_bits):
    return values * torch.pow(2.0, scale_bits.double() - 127).repeat_interleave(32, dim=1)


@pytest.mark.parametrize("a_format,b_format,out_dtype", [
    ("e4m3", "e4m3", torch.bfloat16), ("e5m2", "e2m1", torch.float32), ("e2m3", "e3m2", torch.float16),
    ("e2m1", "e2m1", torch.bfloat16)])
def test_gemm_mx(a_format, b_format, out_dtype):
    g = torch.Generator().manual_seed(7)
    m, n, k = 70, 40, 96
    a, a64 = random_operand(m, k, a_format, g)
    b, b64 = random_operand(n, k, b_format, g)
    sa = torch.randint(119, 129, (m, k // 32), generator=g).to(torch.uint8)
    sb = torch.randint(119, 129, (n, k // 32), generator=g).to(torch.uint8)
    c = torch.randn(m, n, dtype=torch.float64, generator=g).to(out_dtype)
    fmt = lambda f: f if f in ("e2m3", "e3m2") else None  # noqa: E731 (fp6 travels as bytes, named)
    call = lambda: hk.gemm_mx(a, sa.view(torch.float8_e8m0fnu), b, sb, a_format=fmt(a_format),  # noqa: E731
                              b_format=fmt(b_format), out_dtype=out_dtype, alpha=0.5, beta=-1.0, c=c)
    if rt.device_arch() != "gfx950":
        with pytest.raises(RuntimeError, match="gfx950"):
            call()
        return
    out = call()
    assert out.dtype == out_dtype and out.shape == (m, n)
    ref = 0.5 * scaled(a64, sa) @ scaled(b64, sb).t() - c.double()
    assert_close(out, ref, out_dtype, ulps=k if out_dtype == torch.float32 else 2, what=f"{a_format} x {b_format}")


def test_gemm_mx_bad_inputs():
    a = torch.zeros(16, 64, dtype=torch.float8_e4m3fn)
    s = torch.zeros(16, 2, dtype=torch.uint8)
    with pytest.raises(ValueError, match="say its format"):
        hk.gemm_mx(a.view(torch.uint8), s, a, s)
    with pytest.raises(ValueError, match="but a_format says e5m2"):
        hk.gemm_mx(a, s, a, s, a_format="e5m2")
    with pytest.raises(ValueError, match="multiple of 32"):
        hk.gemm_mx(a[:, :48], s[:, :1], a[:, :48], s[:, :1])
    with pytest.raises(ValueError, match="K = 64 per row and b holds K = 128"):
        hk.gemm_mx(a, s, a.view(torch.uint8).view(torch.float4_e2m1fn_x2), s)
    with pytest.raises(ValueError, match="one per 32 k"):
        hk.gemm_mx(a, s[:, :1], a, s)
    with pytest.raises(ValueError, match="float8_e8m0fnu or uint8"):
        hk.gemm_mx(a, s.float(), a, s)
    with pytest.raises(ValueError, match="bfloat16"):
        hk.gemm_mx(a.to(torch.bfloat16), s, a, s)


@pytest.mark.parametrize("out_dtype,scales", [(torch.int32, False), (torch.bfloat16, True), (torch.float32, True)])
def test_gemm_int8(out_dtype, scales):
    g = torch.Generator().manual_seed(3)
    m, n, k = 45, 70, 37  # K not a multiple of 4: the rows are copied to padded ones
    a = torch.randint(-128, 128, (m, k), generator=g).to(torch.int8)
    b = torch.randint(-128, 128, (n, k + 3), generator=g).to(torch.int8)[:, 3:]  # unaligned view
    rs = torch.rand(m, generator=g) + 0.5 if scales else None
    cs = torch.rand(n, generator=g) + 0.5 if scales else None
    out = hk.gemm_int8(a, b, out_dtype=out_dtype, row_scale=rs, col_scale=cs)
    exact = a.long() @ b.long().t()
    if out_dtype == torch.int32:
        assert out.dtype == torch.int32 and torch.equal(out.long(), exact)
        return
    ref = exact.double() * rs.double()[:, None] * cs.double()[None, :]
    assert_close(out, ref, out_dtype, ulps=2 if out_dtype == torch.bfloat16 else 4, what="scaled int8")


def test_gemm_int8_wraps_like_the_hardware():
    k = 140000  # 127 * 127 * 140000 > 2^31: the int32 sum wraps
    a = torch.full((1, k), 127, dtype=torch.int8)
    out = hk.gemm_int8(a, a)
    expected = (127 * 127 * k + 2**31) % 2**32 - 2**31
    assert out.item() == expected


def test_gemm_int8_bad_inputs():
    a = torch.zeros(8, 16, dtype=torch.int8)
    with pytest.raises(ValueError, match="expected int8"):
        hk.gemm_int8(a.to(torch.uint8), a)
    with pytest.raises(ValueError, match="K differs"):
        hk.gemm_int8(a, a[:, :8])
    with pytest.raises(ValueError, match="not int32 sums"):
        hk.gemm_int8(a, a, row_scale=torch.ones(8))
    with pytest.raises(ValueError, match=r"float32 of shape \(8,\)"):
        hk.gemm_int8(a, a, out_dtype=torch.float32, col_scale=torch.ones(9))
    with pytest.raises(ValueError, match="out_dtype"):
        hk.gemm_int8(a, a, out_dtype=torch.float16)


def _fp8(kind):
    """This device's fp8 dtype of `kind` ("e4m3" / "e5m2"): FNUZ on gfx942, OCP on gfx950."""
    fnuz = rt.device_arch() == "gfx942"
    return {("e4m3", True): torch.float8_e4m3fnuz, ("e4m3", False): torch.float8_e4m3fn,
            ("e5m2", True): torch.float8_e5m2fnuz, ("e5m2", False): torch.float8_e5m2}[kind, fnuz]


@pytest.mark.parametrize("dtype,b_transposed,offsets_dtype", [
    (torch.bfloat16, False, torch.int32), (torch.bfloat16, True, torch.int64), ("e4m3", True, torch.int32),
    ("e5m2", False, torch.int64)])
def test_grouped_gemm(dtype, b_transposed, offsets_dtype):
    g = torch.Generator().manual_seed(11)
    dtype = _fp8(dtype) if isinstance(dtype, str) else dtype
    counts = [0, 17, 40, 1, 0]  # empty groups first and last, ragged ones between
    rows, n, k = sum(counts), 48, 64
    offsets = torch.tensor([0] + list(torch.tensor(counts).cumsum(0)), dtype=offsets_dtype)
    a = torch.randn(rows, k, dtype=torch.float64, generator=g).to(dtype)
    b = torch.randn(len(counts), *((n, k) if b_transposed else (k, n)), dtype=torch.float64, generator=g).to(dtype)
    alpha = 0.75
    out = hk.grouped_gemm(a, b, offsets, b_transposed=b_transposed, alpha=alpha)
    assert out.shape == (rows, n) and out.dtype == torch.bfloat16
    ref = torch.empty(rows, n, dtype=torch.float64)
    for e in range(len(counts)):
        s, t = int(offsets[e]), int(offsets[e + 1])
        w = b[e].double()
        ref[s:t] = alpha * a[s:t].double() @ (w.t() if b_transposed else w)
    assert_close(out, ref, torch.bfloat16, ulps=2, what=f"grouped {dtype}")


def test_grouped_gemm_bad_inputs():
    a = torch.zeros(10, 32, dtype=torch.bfloat16)
    b = torch.zeros(2, 32, 16, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="3 are needed"):
        hk.grouped_gemm(a, b, torch.tensor([0, 10], dtype=torch.int32))
    with pytest.raises(ValueError, match="int32 or int64"):
        hk.grouped_gemm(a, b, torch.tensor([0, 5, 10], dtype=torch.float32))
    with pytest.raises(ValueError, match="K differs"):
        hk.grouped_gemm(a, b, torch.tensor([0, 5, 10], dtype=torch.int32), b_transposed=True)
    with pytest.raises(ValueError, match="must agree"):
        hk.grouped_gemm(a, b.half(), torch.tensor([0, 5, 10], dtype=torch.int32))
    # hk's own check of the offsets on the device: they must end at the rows of a.
    with pytest.raises(ValueError, match="offsets"):
        hk.grouped_gemm(a, b, torch.tensor([0, 5, 9], dtype=torch.int32))


@pytest.mark.parametrize("out_dtype,pow2", [(torch.bfloat16, False), (torch.float32, True)])
def test_gemm_blockwise(out_dtype, pow2):
    g = torch.Generator().manual_seed(5)
    e4m3 = _fp8("e4m3")
    m, n, k = 70, 200, 256  # N not a multiple of 128: a partial block of B's scales
    a = torch.randn(m, k, dtype=torch.float64, generator=g).to(e4m3)
    b = torch.randn(n, k, dtype=torch.float64, generator=g).to(e4m3)
    exponent = lambda *s: torch.rand(*s, generator=g, dtype=torch.float64) * 6 - 3  # noqa: E731
    sa = torch.pow(2.0, exponent(m, k // 128).round() if pow2 else exponent(m, k // 128)).float()
    sb = torch.pow(2.0, exponent(2, k // 128).round() if pow2 else exponent(2, k // 128)).float()
    out = hk.gemm_blockwise(a, sa, b, sb, out_dtype=out_dtype, pow2_scales=pow2)
    ref = torch.zeros(m, n, dtype=torch.float64)
    for kb in range(k // 128):
        blk = slice(128 * kb, 128 * (kb + 1))
        part = a[:, blk].double() @ b[:, blk].double().t()
        ref += part * sa[:, kb].double()[:, None] * sb[torch.arange(n) // 128, kb].double()[None, :]
    assert_close(out, ref, out_dtype, ulps=2 if out_dtype == torch.bfloat16 else 4 * k, what="blockwise")


def test_gemm_blockwise_bad_inputs():
    e4m3 = _fp8("e4m3")
    a = torch.zeros(8, 256, dtype=e4m3)
    sa = torch.ones(8, 2)
    sb = torch.ones(1, 2)
    with pytest.raises(ValueError, match="multiple of 128"):
        hk.gemm_blockwise(a[:, :192], sa[:, :1], a[:, :192], sb[:, :1])
    with pytest.raises(ValueError, match=r"float32 of shape \(1, 2\)"):
        hk.gemm_blockwise(a, sa, a, torch.ones(2, 2))
    with pytest.raises(ValueError, match="expected"):
        hk.gemm_blockwise(a.to(torch.bfloat16), sa, a, sb)
