"""hk.attention and hk.attention_varlen against torch's SDPA (float64, explicit bottom-right masks)."""
import math

import pytest
import torch

import hk
from hk.attention import _fp8_type
from conftest import assert_close, attention_reference, rand


def _check(out, lse, q, k, v, dtype, **mask):
    ref, ref_lse = attention_reference(q, k, v, **mask)
    assert_close(out, ref, dtype, ulps=4, what="O")
    seen = torch.isfinite(ref_lse)
    assert torch.equal(torch.isfinite(lse), seen), "rows that see no key have LSE -inf, and only those"
    assert_close(lse[seen], ref_lse[seen], torch.float32, ulps=2**13, what="LSE")


@pytest.mark.parametrize("dtype,b,sq,sk,hq,hkv,d,causal,window", [
    (torch.bfloat16, 2, 100, 130, 4, 2, 64, True, (-1, -1)),   # GQA, causal with Sk > Sq (bottom-right)
    (torch.float16, 1, 70, 70, 2, 2, 128, False, (-1, -1)),
    (torch.bfloat16, 1, 90, 40, 2, 1, 64, True, (-1, -1)),     # Sq > Sk: the first rows see no key
    (torch.bfloat16, 1, 64, 96, 2, 2, 64, False, (16, 8)),     # sliding window
])
def test_forward(dtype, b, sq, sk, hq, hkv, d, causal, window):
    q, k, v = rand(b, sq, hq, d, dtype=dtype), rand(b, sk, hkv, d, dtype=dtype), rand(b, sk, hkv, d, dtype=dtype)
    out, lse = hk.attention(q, k, v, causal=causal, window=window, return_lse=True)
    assert out.shape == q.shape and out.dtype == dtype and lse.shape == (b, hq, sq)
    _check(out, lse, q, k, v, dtype, causal=causal, window=window)


def test_strided_layout_and_flash_attention_names():
    # (B, H, S, D) memory seen as (B, S, H, D): read in place through its strides.
    q = rand(1, 2, 80, 64, dtype=torch.bfloat16).transpose(1, 2)
    k = rand(1, 2, 80, 64, dtype=torch.bfloat16).transpose(1, 2)
    out, lse = hk.attention(q, k, k, softmax_scale=0.1, window_size=(-1, 0), return_lse=True)
    _check(out, lse, q, k, k, torch.bfloat16, causal=True, scale=0.1)


def test_varlen_matches_per_sequence_attention():
    lens_q, lens_k = [37, 1, 64], [50, 17, 64]
    hq, hkv, d = 4, 2, 64
    q = rand(sum(lens_q), hq, d, dtype=torch.bfloat16)
    k, v = rand(sum(lens_k), hkv, d, dtype=torch.bfloat16), rand(sum(lens_k), hkv, d, dtype=torch.bfloat16)
    cu_q = torch.tensor([0, *torch.tensor(lens_q).cumsum(0).tolist()], dtype=torch.int32)
    cu_k = torch.tensor([0, *torch.tensor(lens_k).cumsum(0).tolist()], dtype=torch.int32)
    out, lse = hk.attention_varlen(q, k, v, cu_q, cu_k, max(lens_q), max(lens_k), causal=True, return_lse=True)
    assert lse.shape == (hq, sum(lens_q))
    for i in range(len(lens_q)):
        qs, ks = slice(cu_q[i], cu_q[i + 1]), slice(cu_k[i], cu_k[i + 1])
        _check(out[qs][None], lse[:, qs][None], q[qs][None], k[ks][None], v[ks][None], torch.bfloat16, causal=True)


def test_acceptance_example_shape():
    q = torch.randn(1, 100, 4, 64, dtype=torch.bfloat16)
    assert hk.attention(q, q, q, causal=True).shape == torch.Size([1, 100, 4, 64])


@pytest.mark.parametrize("causal,sq,sk,hkv", [(True, 48, 80, 1), (False, 64, 64, 2)])
def test_gradients(causal, sq, sk, hkv):
    dtype = torch.bfloat16
    q = rand(2, sq, 2, 64, dtype=dtype).requires_grad_()
    k = rand(2, sk, hkv, 64, dtype=dtype).requires_grad_()
    v = rand(2, sk, hkv, 64, dtype=dtype).requires_grad_()
    grad = rand(2, sq, 2, 64, dtype=dtype)
    hk.attention(q, k, v, causal=causal).backward(grad)
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    attention_reference(q64, k64, v64, causal=causal)[0].backward(grad.double())
    for name, t, ref in (("dQ", q, q64), ("dK", k, k64), ("dV", v, v64)):
        assert_close(t.grad, ref.grad, dtype, ulps=8 * math.sqrt(sk), what=name)


@pytest.mark.parametrize("causal,sq,sk,hq,hkv,d", [(True, 90, 40, 4, 1, 64), (False, 64, 100, 2, 2, 128)])
def test_sinks_forward_and_gradients(causal, sq, sk, hq, hkv, d):
    """gpt-oss's attention sinks: one learnable logit per head in every row's denominator (rows that see no key keep
    O = 0 and take LSE = the sink), and their gradient."""
    dtype = torch.bfloat16
    q = rand(1, sq, hq, d, dtype=dtype).requires_grad_()
    k, v = (rand(1, sk, hkv, d, dtype=dtype).requires_grad_() for _ in range(2))
    sinks = torch.linspace(-1.0, 2.0, hq, dtype=torch.float32).requires_grad_()
    grad = rand(1, sq, hq, d, dtype=dtype)
    out, lse = hk.attention(q, k, v, causal=causal, sinks=sinks, return_lse=True)
    out.backward(grad)
    q64, k64, v64, s64 = (t.detach().double().requires_grad_() for t in (q, k, v, sinks))
    ref, ref_lse = attention_reference(q64, k64, v64, causal=causal, sinks=s64)
    ref.backward(grad.double())
    assert_close(out, ref, dtype, ulps=4, what="O")
    assert_close(lse, ref_lse, torch.float32, ulps=2**13, what="LSE")
    for name, t, r in (("dQ", q, q64), ("dK", k, k64), ("dV", v, v64)):
        assert_close(t.grad, r.grad, dtype, ulps=8 * math.sqrt(sk), what=name)
    assert sinks.grad.dtype == torch.float32 and sinks.grad.abs().min() > 0
    assert_close(sinks.grad, s64.grad, dtype, ulps=2, what="dsinks")  # through O and dO in bf16


def test_varlen_gradients():
    lens_q, lens_k, hq, hkv, d = [20, 0, 33], [30, 5, 33], 2, 1, 64
    dtype = torch.bfloat16
    q = rand(sum(lens_q), hq, d, dtype=dtype).requires_grad_()
    k = rand(sum(lens_k), hkv, d, dtype=dtype).requires_grad_()
    v = rand(sum(lens_k), hkv, d, dtype=dtype).requires_grad_()
    cu_q = torch.tensor([0, *torch.tensor(lens_q).cumsum(0).tolist()], dtype=torch.int32)
    cu_k = torch.tensor([0, *torch.tensor(lens_k).cumsum(0).tolist()], dtype=torch.int32)
    grad = rand(sum(lens_q), hq, d, dtype=dtype)
    hk.attention_varlen(q, k, v, cu_q, cu_k, max(lens_q), max(lens_k), causal=True).backward(grad)
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    for i in range(len(lens_q)):
        qs, ks = slice(cu_q[i], cu_q[i + 1]), slice(cu_k[i], cu_k[i + 1])
        if lens_q[i]:
            out = attention_reference(q64[qs][None], k64[ks][None], v64[ks][None], causal=True)[0]
            out.backward(grad[qs][None].double())
    for name, t, ref in (("dQ", q, q64), ("dK", k, k64), ("dV", v, v64)):
        assert_close(t.grad, ref.grad if ref.grad is not None else torch.zeros_like(ref), dtype,
                     ulps=8 * math.sqrt(max(lens_k)), what=name)


def test_bad_inputs():
    q = rand(1, 16, 2, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="4 dimensions"):
        hk.attention(q[0], q[0], q[0])
    with pytest.raises(ValueError, match="one type"):
        hk.attention(q, q.half(), q)
    with pytest.raises(ValueError, match="float32"):
        hk.attention(q.float(), q.float(), q.float())
    with pytest.raises(ValueError, match="head dimension"):
        hk.attention(q, q[..., :32], q[..., :32])
    with pytest.raises(ValueError, match="scale"):
        hk.attention(q, q, q, scale=-1.0)
    # hk's own validation: head_dim 96 and Hq not a multiple of Hkv.
    q96 = rand(1, 16, 2, 96, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="hk::attention"):
        hk.attention(q96, q96, q96)
    q3 = rand(1, 16, 3, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="hk::attention"):
        hk.attention(q3, q, q)
    cu = torch.tensor([0, 16], dtype=torch.int64)
    with pytest.raises(ValueError, match="int32"):
        hk.attention_varlen(q[0], q[0], q[0], cu, cu, 16, 16)


# FP8 (forward only): q, k, v in the device's e4m3 with descales, against the float64 reference of the codes' values
# times the descales; hk's only roundings are P's and O's (bf16), so bf16's tolerance holds.
def _fp8(*shape, scale=4.0):
    return rand(*shape, dtype=torch.float32, scale=scale).to(_fp8_type())


def _dequantized(x, descale, heads):
    """x's values times its descale ((B, Hkv) or one element) of each sequence and KV head, (B, S, H, D) float64."""
    d = descale.to(torch.float64).reshape(-1).expand(x.shape[0] * heads).reshape(x.shape[0], heads)
    return x.to(torch.float64) * d.repeat_interleave(x.shape[2] // heads, dim=1)[:, None, :, None]


@pytest.mark.parametrize("b,sq,sk,hq,hkv,d,causal,window,per_head,softcap", [
    (2, 100, 130, 4, 2, 128, True, (-1, -1), True, 0.0),    # GQA, causal bottom-right, (B, Hkv) descales
    (1, 70, 70, 2, 2, 64, False, (-1, -1), False, 0.0),     # one descale per tensor
    (1, 90, 40, 3, 1, 64, True, (-1, -1), True, 0.0),       # Sq > Sk: rows that see no key
    (2, 64, 96, 2, 1, 128, False, (16, 8), None, 0.0),      # a window, no descales
    (2, 80, 100, 4, 2, 128, True, (-1, -1), True, 2.0),     # softcap (flash-attention 3's), (B, Hkv) descales
    (1, 70, 90, 2, 1, 64, False, (20, 5), False, 1.0),      # softcap, a window
])
def test_fp8_forward(b, sq, sk, hq, hkv, d, causal, window, per_head, softcap):
    q, k, v = _fp8(b, sq, hq, d), _fp8(b, sk, hkv, d), _fp8(b, sk, hkv, d)
    if per_head is None:
        ds = [None] * 3
    elif per_head:
        ds = [torch.rand(b, hkv, dtype=torch.float32) * 0.5 + 0.05 for _ in range(3)]
    else:
        ds = [torch.tensor([0.3 + 0.1 * i]) for i in range(3)]
    out, lse = hk.attention(q, k, v, causal=causal, window=window, return_lse=True, q_descale=ds[0], k_descale=ds[1],
                            v_descale=ds[2], softcap=softcap)
    assert out.dtype == torch.bfloat16 and out.shape == (b, sq, hq, d) and lse.shape == (b, hq, sq)
    one = torch.ones(1)
    qr = _dequantized(q, ds[0] if ds[0] is not None else one, hkv)
    kr = _dequantized(k, ds[1] if ds[1] is not None else one, hkv)
    vr = _dequantized(v, ds[2] if ds[2] is not None else one, hkv)
    _check(out, lse, qr, kr, vr, torch.bfloat16, causal=causal, window=window, softcap=softcap)
    again = hk.attention(q, k, v, causal=causal, window=window, q_descale=ds[0], k_descale=ds[1], v_descale=ds[2],
                         softcap=softcap)
    assert torch.equal(again.view(torch.int16), out.view(torch.int16)), "bit-identical run to run"


def test_fp8_varlen_and_sinks():
    lens_q, lens_k = [37, 1, 64], [50, 17, 64]
    hq, hkv, d = 4, 2, 64
    q, k, v = _fp8(sum(lens_q), hq, d), _fp8(sum(lens_k), hkv, d), _fp8(sum(lens_k), hkv, d)
    ds = [torch.rand(3, hkv) * 0.5 + 0.05 for _ in range(3)]
    sinks = torch.randn(hq)
    cu_q = torch.tensor([0, *torch.tensor(lens_q).cumsum(0).tolist()], dtype=torch.int32)
    cu_k = torch.tensor([0, *torch.tensor(lens_k).cumsum(0).tolist()], dtype=torch.int32)
    out, lse = hk.attention_varlen(q, k, v, cu_q, cu_k, max(lens_q), max(lens_k), causal=True, return_lse=True,
                                   sinks=sinks, q_descale=ds[0], k_descale=ds[1], v_descale=ds[2])
    assert out.dtype == torch.bfloat16 and lse.shape == (hq, sum(lens_q))
    for i in range(len(lens_q)):
        qs, ks = slice(cu_q[i], cu_q[i + 1]), slice(cu_k[i], cu_k[i + 1])
        qr, kr, vr = (_dequantized(x[None], dd[i], hkv) for x, dd in ((q[qs], ds[0]), (k[ks], ds[1]), (v[ks], ds[2])))
        ref, ref_lse = attention_reference(qr, kr, vr, causal=True, sinks=sinks)
        assert_close(out[qs][None], ref, torch.bfloat16, ulps=4, what="O")
        assert_close(lse[:, qs][None], ref_lse, torch.float32, ulps=2**13, what="LSE")


def test_fp8_refusals():
    q = _fp8(1, 32, 2, 64)
    other = torch.float8_e4m3fn if _fp8_type() == torch.float8_e4m3fnuz else torch.float8_e4m3fnuz
    with pytest.raises(ValueError, match="this device's e4m3"):
        x = q.to(torch.float32).to(other)
        hk.attention(x, x, x)
    with pytest.raises(NotImplementedError, match="not supported with fp8 inputs"):
        hk.attention(q, q, q, alibi_slopes=torch.ones(2))
    with pytest.raises(NotImplementedError, match="not supported with fp8 inputs"):
        hk.attention(q, q, q, dropout_p=0.1)
    with pytest.raises(ValueError, match="head dims 64 and 128"):
        hk.attention(_fp8(1, 32, 2, 256), _fp8(1, 32, 2, 256), _fp8(1, 32, 2, 256))
    with pytest.raises(ValueError, match="q_descale must be"):
        hk.attention(q, q, q, q_descale=torch.ones(3))
    with pytest.raises(ValueError, match="apply to fp8 inputs only"):
        x = rand(1, 32, 2, 64, dtype=torch.bfloat16)
        hk.attention(x, x, x, v_descale=torch.ones(1))
    qg = q.clone().requires_grad_()
    with pytest.raises(NotImplementedError, match="forward-only"):
        hk.attention(qg, q, q).float().sum().backward()
