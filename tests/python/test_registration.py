"""Each hk op is a well-formed torch custom op: schema, fake (meta) implementation and autograd registration agree
with what the op does (torch.library.opcheck; the slow torch.compile check is left out), for every op the package
registers: the forward, varlen and backward attention ops (dropout included), and the GEMM formats' and decode's
ops with the arguments their public entries pass."""
import sys

import pytest
import torch

import hk  # registers the ops
from hk import _runtime as rt
from conftest import rand

CHECKS = ("test_schema", "test_autograd_registration", "test_faketensor")


def _cases():
    bf = torch.bfloat16
    yield "gemm", (rand(16, 32, dtype=bf).requires_grad_(), rand(32, 24, dtype=bf).requires_grad_(), bf, 1.0, 0.0,
                   None)
    yield "rotary", (rand(1, 8, 2, 16, dtype=torch.float32).requires_grad_(), None, None, None, 10000.0, 16, 0, False,
                     False)
    yield "norm", (rand(4, 32, dtype=torch.float32).requires_grad_(), rand(32, dtype=torch.float32).requires_grad_(),
                   rand(32, dtype=torch.float32).requires_grad_(), rand(4, 32, dtype=torch.float32).requires_grad_(),
                   False, 1e-5, 0.1, 7, 0)
    r, mean, rstd = rand(4, 32, dtype=torch.float32), rand(4, dtype=torch.float32), rand(4, dtype=torch.float32).abs()
    yield "norm_backward", (rand(4, 32, dtype=torch.float32), rand(4, 32, dtype=torch.float32), r, mean, rstd,
                            rand(32, dtype=torch.float32), False, True, True, 0.1, 7, 0)
    q = rand(1, 16, 2, 64, dtype=bf)
    yield "attention", (q, q, q, True, -1, -1, 0.0, 0.0, rand(2, dtype=torch.float32).requires_grad_(), None, 0.0, 0, 0)
    qg = rand(1, 16, 2, 64, dtype=bf).requires_grad_()
    yield "attention", (qg, qg, qg, False, -1, -1, 0.0, 0.0, None, None, 0.25, 2**62 + 5, 2**40)  # dropout
    packed = rand(20, 2, 64, dtype=bf)
    cu = torch.tensor([0, 7, 20], dtype=torch.int32)
    yield "attention_varlen", (packed, packed, packed, cu, cu, 13, 13, True, -1, -1, 0.0, 0.0, None,
                              rand(2, 2, dtype=torch.float32).abs(), 0.0, 0, 0)
    sinks = rand(2, dtype=torch.float32)
    out, lse = torch.ops.hk.attention(q, q, q, True, -1, -1, 0.0, 0.0, sinks, None, 0.0, 0, 0)
    yield "attention_backward", (q, q, q, out, lse, rand(1, 16, 2, 64, dtype=bf), None, None, 0, 0, True, -1, -1, 0.0, 0.0,
                                 sinks, None, 0.0, 0, 0)


@pytest.mark.parametrize("name,args", list(_cases()), ids=lambda v: v if isinstance(v, str) else "")
def test_opcheck(name, args):
    result = torch.library.opcheck(getattr(torch.ops.hk, name).default, args, test_utils=CHECKS)
    assert all(v == "SUCCESS" for v in result.values()), result


def _captured(module, op_name, call):
    """The arguments a public entry hands its op (`module`'s global `op_name`), recorded while `call` runs: the ops
    whose arguments are encoded bytes and flags are checked as the package really calls them."""
    op, seen = getattr(module, op_name), []

    def record(*args):
        seen.append(args)
        return op(*args)

    setattr(module, op_name, record)
    try:
        call()
    finally:
        setattr(module, op_name, op)
    assert len(seen) == 1, f"{op_name} was called {len(seen)} times"
    return seen[0]


def _fp8(kind):
    fnuz = rt.device_arch() == "gfx942"
    return {("e4m3", True): torch.float8_e4m3fnuz, ("e4m3", False): torch.float8_e4m3fn,
            ("e5m2", True): torch.float8_e5m2fnuz, ("e5m2", False): torch.float8_e5m2}[kind, fnuz]


def _public_cases():
    """(op, module, global name, call) for the ops the cases above do not build by hand."""
    formats, decode = sys.modules["hk.gemm_formats"], sys.modules["hk.decode"]
    g = torch.Generator().manual_seed(1)
    a8 = torch.randint(-128, 128, (40, 64), generator=g).to(torch.int8)
    yield "gemm_int8", formats, "_gemm_int8", lambda: hk.gemm_int8(a8, a8[:24], out_dtype=torch.bfloat16,
                                                                  row_scale=torch.rand(40) + 0.5, col_scale=None)
    counts = torch.tensor([0, 17, 3, 0])
    offsets = torch.cat((torch.zeros(1, dtype=torch.int64), counts.cumsum(0))).to(torch.int32)
    a, b = rand(20, 64, dtype=torch.bfloat16), rand(4, 48, 64, dtype=torch.bfloat16)
    yield "grouped_gemm", formats, "_grouped_gemm", lambda: hk.grouped_gemm(a, b, offsets, b_transposed=True)
    e4m3 = _fp8("e4m3")
    af, bf = rand(70, 256, dtype=torch.float32).to(e4m3), rand(130, 256, dtype=torch.float32).to(e4m3)
    sa, sb = torch.rand(70, 2) + 0.5, torch.rand(2, 2) + 0.5
    yield "gemm_blockwise", formats, "_gemm_blockwise", lambda: hk.gemm_blockwise(af, sa, bf, sb)
    if rt.device_arch() == "gfx950":  # hk.gemm_mx runs there alone
        am, bm = rand(64, 64, dtype=torch.float32).to(torch.float8_e4m3fn), rand(32, 64, dtype=torch.float32).to(
            torch.float8_e4m3fn)
        s_a = torch.randint(120, 130, (64, 2), generator=g).to(torch.uint8).view(torch.float8_e8m0fnu)
        s_b = torch.randint(120, 130, (32, 2), generator=g).to(torch.uint8).view(torch.float8_e8m0fnu)
        yield "gemm_mx", formats, "_gemm_mx", lambda: hk.gemm_mx(am, s_a, bm, s_b)
    qf, kf = rand(1, 40, 2, 64, dtype=torch.float32, scale=4.0).to(e4m3), rand(1, 40, 1, 64, dtype=torch.float32).to(e4m3)
    yield "attention_fp8", sys.modules["hk.attention"], "_attention_fp8", lambda: hk.attention(
        qf, kf, kf, causal=True, q_descale=torch.rand(1, 1) + 0.5, k_descale=torch.tensor(0.5), v_descale=None)
    q = rand(2, 1, 4, 64, dtype=torch.bfloat16)
    k_cache, v_cache = rand(2, 32, 2, 64, dtype=torch.bfloat16), rand(2, 32, 2, 64, dtype=torch.bfloat16)
    k_new, v_new = rand(2, 1, 2, 64, dtype=torch.bfloat16), rand(2, 1, 2, 64, dtype=torch.bfloat16)
    seqlens = torch.tensor([5, 20], dtype=torch.int32)
    yield "attention_with_kvcache", decode, "_decode", lambda: hk.attention_with_kvcache(
        q, k_cache.clone(), v_cache.clone(), k=k_new, v=v_new, cache_seqlens=seqlens, causal=True)


@pytest.mark.parametrize("name,module,op_name,call", list(_public_cases()),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_opcheck_as_called(name, module, op_name, call):
    args = _captured(module, op_name, call)
    checks = CHECKS
    if any(isinstance(a, torch.Tensor) and a.dtype.itemsize == 1 and a.is_floating_point() for a in args):
        # torch's schema check compares each input before and after with torch.allclose, which fp8 tensors do not
        # support ("mul_cpu_reduced_float" not implemented): the fake and autograd checks still run.
        checks = tuple(c for c in CHECKS if c != "test_schema")
    result = torch.library.opcheck(getattr(torch.ops.hk, name).default, args, test_utils=checks)
    assert all(v == "SUCCESS" for v in result.values()), result


def test_every_op_is_checked():
    """Every hk op registered with torch is opchecked above (a new op must join a list)."""
    checked = {name for name, _ in _cases()} | {case[0] for case in _public_cases()}
    if rt.device_arch() != "gfx950":
        checked.add("gemm_mx")  # checked on gfx950, the arch that runs it
    registered = {name for name in dir(torch.ops.hk) if isinstance(getattr(torch.ops.hk, name), torch._ops.OpOverloadPacket)}
    assert registered == checked, f"unchecked: {sorted(registered - checked)}, unknown: {sorted(checked - registered)}"
