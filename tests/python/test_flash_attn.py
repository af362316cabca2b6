"""hk.flash_attn as flash-attention tests itself: flash-attention 2.8's signatures, and each function's forward and
gradients against a float64 reference, hk's error at most twice that of the same computation done by torch in the
input's own precision."""
import inspect
import math

import pytest
import torch

import hk
import hk.flash_attn as fa
from conftest import assert_close, attention_reference, dropout_keep, rand

# flash-attention 2.8's public functions (flash_attn/flash_attn_interface.py): argument names, order, defaults (and
# flash-attention 3's FP8 descales after them).
_COMMON = [("dropout_p", 0.0), ("softmax_scale", None), ("causal", False), ("window_size", (-1, -1)),
           ("softcap", 0.0), ("alibi_slopes", None), ("deterministic", False), ("return_attn_probs", False)]
_NONE = inspect.Parameter.empty
_VARLEN = [("cu_seqlens_q", _NONE), ("cu_seqlens_k", _NONE), ("max_seqlen_q", _NONE), ("max_seqlen_k", _NONE)]
_FP8 = [("q_descale", None), ("k_descale", None), ("v_descale", None)]  # flash-attention 3's, trailing
SIGNATURES = {
    "flash_attn_func": [("q", _NONE), ("k", _NONE), ("v", _NONE)] + _COMMON + _FP8,
    "flash_attn_kvpacked_func": [("q", _NONE), ("kv", _NONE)] + _COMMON,
    "flash_attn_qkvpacked_func": [("qkv", _NONE)] + _COMMON,
    "flash_attn_varlen_func": [("q", _NONE), ("k", _NONE), ("v", _NONE)] + _VARLEN + _COMMON
    + [("block_table", None)] + _FP8,
    "flash_attn_varlen_kvpacked_func": [("q", _NONE), ("kv", _NONE)] + _VARLEN + _COMMON,
    "flash_attn_varlen_qkvpacked_func": [("qkv", _NONE), ("cu_seqlens", _NONE), ("max_seqlen", _NONE)] + _COMMON,
    "flash_attn_with_kvcache": [("q", _NONE), ("k_cache", _NONE), ("v_cache", _NONE), ("k", None), ("v", None),
                                ("rotary_cos", None), ("rotary_sin", None), ("cache_seqlens", None),
                                ("cache_batch_idx", None), ("cache_leftpad", None), ("block_table", None),
                                ("softmax_scale", None), ("causal", False), ("window_size", (-1, -1)),
                                ("softcap", 0.0), ("rotary_interleaved", True), ("alibi_slopes", None),
                                ("num_splits", 0), ("return_softmax_lse", False),
                                # flash-attention 3's FP8 descales, after every 2.x argument (keywords there too)
                                ("k_descale", None), ("v_descale", None)],
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_signature_is_flash_attentions(name):
    params = inspect.signature(getattr(fa, name)).parameters.values()
    assert [(p.name, p.default) for p in params] == SIGNATURES[name]
    assert all(p.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params)


def _low_precision_reference(q, k, v, causal, window, scale, softcap=0.0, alibi=None, dropout=None):
    """The same attention done by torch in the inputs' own type (flash-attention's attention_ref, upcast=False);
    dropout = (p, keep mask) drops P's elements where the mask is False and scales the rest by 1 / (1 - p)."""
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    sq, sk = q.shape[2], k.shape[2]
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    i = torch.arange(sq)[:, None] + (sk - sq)
    j = torch.arange(sk)[None, :]
    left, right = window[0], 0 if causal else window[1]
    allowed = torch.ones(sq, sk, dtype=torch.bool)
    if left >= 0:
        allowed &= j >= i - left
    if right >= 0:
        allowed &= j <= i + right
    scores = (q * scale) @ k.transpose(-1, -2)
    if softcap:
        scores = softcap * torch.tanh(scores / softcap)
    if alibi is not None:
        scores = scores - (alibi.reshape(-1, alibi.shape[-1])[:, :, None, None] * (i - j).abs()).to(scores.dtype)
    p = torch.softmax(scores.masked_fill(~allowed, -math.inf), dim=-1)
    p = torch.where(allowed.any(dim=1)[:, None], p, torch.zeros_like(p))
    if dropout is not None:
        p = p.masked_fill(~dropout[1], 0.0) / (1 - dropout[0])
    return (p @ v).transpose(1, 2)


def _inputs(b, sq, sk, hq, hkv, d, dtype):
    return (rand(b, sq, hq, d, dtype=dtype).requires_grad_(), rand(b, sk, hkv, d, dtype=dtype).requires_grad_(),
            rand(b, sk, hkv, d, dtype=dtype).requires_grad_())


def _grads(out, grad, tensors):
    return torch.autograd.grad(out, tensors, grad)


def _worst(a, b):
    return (a.double() - b.double()).abs().max().item()


# Head dims 32 and 96 are padded to the kernels' 64 and 128; 40 is not a multiple of 8 (flash-attention pads those).
# Softcaps of 0.5 and 1 bite on these inputs (scaled scores of magnitude ~0.5 to 1.5); alibi: "head" (H) or
# "batch" (B, H) slopes.
@pytest.mark.parametrize("dtype,b,sq,sk,hq,hkv,d,causal,window,softcap,alibi", [
    (torch.bfloat16, 2, 70, 90, 4, 2, 64, True, (-1, -1), 0.0, None),     # GQA, bottom-right causal, Sk > Sq
    (torch.float16, 1, 50, 50, 2, 2, 128, False, (-1, -1), 0.0, None),
    (torch.bfloat16, 1, 64, 80, 2, 1, 96, False, (16, 8), 0.0, None),     # sliding window, head dim 96
    (torch.bfloat16, 1, 60, 40, 4, 1, 32, True, (8, -1), 0.0, None),      # MQA, Sq > Sk, causal with a left window
    (torch.float16, 1, 33, 33, 2, 2, 40, True, (-1, -1), 0.0, None),
    (torch.bfloat16, 1, 70, 90, 4, 2, 64, True, (-1, -1), 0.5, None),     # softcap (Gemma 2)
    (torch.float16, 1, 50, 60, 2, 1, 96, False, (20, 4), 1.0, None),
    (torch.bfloat16, 2, 60, 80, 4, 2, 64, False, (-1, -1), 0.0, "head"),  # ALiBi
    (torch.float16, 2, 70, 50, 2, 1, 128, True, (-1, -1), 0.0, "batch"),
])
def test_forward_and_gradients(dtype, b, sq, sk, hq, hkv, d, causal, window, softcap, alibi):
    q, k, v = _inputs(b, sq, sk, hq, hkv, d, dtype)
    scale = 0.8 / math.sqrt(d)
    slopes = None
    if alibi:
        slopes = torch.exp2(-8 * torch.arange(1, hq + 1, dtype=torch.float32) / hq) * 4
        slopes = slopes if alibi == "head" else slopes[None, :] * torch.tensor([[1.0], [0.5]])
    # Positional, as flash-attention's callers write it.
    out, lse, s_dmask = fa.flash_attn_func(q, k, v, 0.0, scale, causal, window, softcap, slopes, True, True)
    assert out.shape == q.shape and out.dtype == dtype and lse.shape == (b, hq, sq) and lse.dtype == torch.float32
    assert s_dmask.numel() == 0, "S_dmask is empty without dropout, as flash-attention returns it"
    grad = rand(b, sq, hq, d, dtype=dtype)

    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref, ref_lse = attention_reference(q64, k64, v64, causal=causal, window=window, scale=scale, softcap=softcap,
                                       alibi_slopes=slopes)
    low = _low_precision_reference(q, k, v, causal, window, scale, softcap, slopes)
    atol = 2 * _worst(ref + 0.3 - 0.3, ref)  # flash-attention's slack for the output's own rounding
    assert _worst(out, ref) <= 2 * _worst(low, ref) + atol, "O"
    seen = torch.isfinite(ref_lse)
    assert torch.equal(torch.isfinite(lse), seen)
    assert_close(lse[seen], ref_lse[seen], torch.float32, ulps=2**13, what="LSE")

    ref_grads = _grads(ref, grad.double(), (q64, k64, v64))
    low_grads = _grads(low, grad, (q, k, v))
    hk_grads = _grads(out, grad, (q, k, v))
    for name, g, r, lo in zip(("dQ", "dK", "dV"), hk_grads, ref_grads, low_grads):
        assert g.shape == r.shape and g.dtype == dtype, name
        assert _worst(g, r) <= 2 * _worst(lo, r) + atol, f"{name}: {_worst(g, r):.3g} vs torch's {_worst(lo, r):.3g}"


# Head dims above 128 (Gemma, Qwen3-Next: 256) and Q/K's different from V's (DeepSeek-V3: 192 / 128), run by the
# kernels as they are (no padding), and 160 / 96 padded to 192 / 128; dQ and dK come in Q's head dim, dV in V's.
@pytest.mark.parametrize("dtype,b,sq,sk,hq,hkv,d,dv,causal,window", [
    (torch.bfloat16, 1, 70, 90, 4, 2, 256, 256, True, (-1, -1)),    # GQA, bottom-right causal
    (torch.float16, 2, 50, 40, 2, 2, 192, 192, False, (16, 8)),     # sliding window, Sq > Sk
    (torch.bfloat16, 1, 60, 80, 4, 1, 192, 128, True, (-1, -1)),    # DeepSeek-V3's MLA shape, MQA
    (torch.float16, 1, 40, 40, 2, 1, 160, 96, False, (-1, -1)),     # padded to 192 / 128
])
def test_wide_head_dims(dtype, b, sq, sk, hq, hkv, d, dv, causal, window):
    q, k = rand(b, sq, hq, d, dtype=dtype).requires_grad_(), rand(b, sk, hkv, d, dtype=dtype).requires_grad_()
    v = rand(b, sk, hkv, dv, dtype=dtype).requires_grad_()
    scale = 0.8 / math.sqrt(d)
    out, lse, _ = fa.flash_attn_func(q, k, v, 0.0, scale, causal, window, return_attn_probs=True)
    assert out.shape == (b, sq, hq, dv) and out.dtype == dtype and lse.shape == (b, hq, sq)
    grad = rand(b, sq, hq, dv, dtype=dtype)
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref, ref_lse = attention_reference(q64, k64, v64, causal=causal, window=window, scale=scale)
    low = _low_precision_reference(q, k, v, causal, window, scale)
    atol = 2 * _worst(ref + 0.3 - 0.3, ref)
    assert _worst(out, ref) <= 2 * _worst(low, ref) + atol, "O"
    seen = torch.isfinite(ref_lse)
    assert torch.equal(torch.isfinite(lse), seen)
    assert_close(lse[seen], ref_lse[seen], torch.float32, ulps=2**13, what="LSE")
    ref_grads = _grads(ref, grad.double(), (q64, k64, v64))
    low_grads = _grads(low, grad, (q, k, v))
    for name, g, r, lo in zip(("dQ", "dK", "dV"), _grads(out, grad, (q, k, v)), ref_grads, low_grads):
        assert g.shape == r.shape and g.dtype == dtype, name
        assert _worst(g, r) <= 2 * _worst(lo, r) + atol, f"{name}: {_worst(g, r):.3g} vs torch's {_worst(lo, r):.3g}"


# The features at the wide head dims (each kernel's one featured instance): Gemma 2's softcap at 256, ALiBi, dropout
# and their combinations (ALiBi on the capped scores, as flash-attention adds it), forward and gradients.
@pytest.mark.parametrize("dtype,sq,sk,hq,hkv,d,dv,causal,softcap,alibi,p", [
    (torch.bfloat16, 40, 70, 4, 2, 256, 256, True, 0.5, False, 0.0),    # Gemma 2
    (torch.float16, 50, 40, 2, 1, 192, 128, False, 0.0, True, 0.2),     # ALiBi and dropout, MLA's shape
    (torch.bfloat16, 40, 40, 2, 2, 160, 160, True, 1.0, True, 0.1),     # every feature, padded to 192
])
def test_wide_head_features(dtype, sq, sk, hq, hkv, d, dv, causal, softcap, alibi, p):
    _check_features(dtype, sq, sk, hq, hkv, d, dv, causal, (-1, -1), softcap, alibi, p)


# Two or three features together at head dims 64 and 128 (the kernels' instance of several features): ALiBi on the
# capped scores, dropout with either or both, causal and windowed, forward and gradients.
@pytest.mark.parametrize("dtype,sq,sk,hq,hkv,d,causal,window,softcap,alibi,p", [
    (torch.bfloat16, 40, 70, 4, 2, 64, True, (-1, -1), 0.5, True, 0.0),     # softcap, ALiBi
    (torch.float16, 50, 40, 2, 1, 128, False, (-1, -1), 0.0, True, 0.2),    # ALiBi, dropout
    (torch.bfloat16, 40, 40, 2, 2, 128, True, (-1, -1), 1.0, False, 0.1),   # softcap, dropout
    (torch.float16, 33, 60, 4, 2, 64, False, (20, 5), 1.0, True, 0.15),     # all three, a window
    (torch.bfloat16, 45, 45, 2, 1, 96, True, (-1, -1), 0.8, True, 0.1),     # all three, padded to 128
])
def test_feature_combinations(dtype, sq, sk, hq, hkv, d, causal, window, softcap, alibi, p):
    _check_features(dtype, sq, sk, hq, hkv, d, d, causal, window, softcap, alibi, p)


def _check_features(dtype, sq, sk, hq, hkv, d, dv, causal, window, softcap, alibi, p):
    """flash_attn_func with the features, forward and gradients, against the float64 reference (with the call's
    dropout mask), hk's error at most twice torch's in the inputs' precision."""
    b = 1
    q, k = rand(b, sq, hq, d, dtype=dtype).requires_grad_(), rand(b, sk, hkv, d, dtype=dtype).requires_grad_()
    v = rand(b, sk, hkv, dv, dtype=dtype).requires_grad_()
    scale = 0.8 / math.sqrt(d)
    slopes = torch.exp2(-8 * torch.arange(1, hq + 1, dtype=torch.float32) / hq) * 4 if alibi else None
    seed, offset = _dropout_reference_inputs(p, 7)
    torch.manual_seed(7)
    out = fa.flash_attn_func(q, k, v, p, scale, causal, window, softcap, slopes)
    mask = dropout_keep(p, seed, offset, b, hq, sq, sk) if p else None
    grad = rand(b, sq, hq, dv, dtype=dtype)
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref, _ = attention_reference(q64, k64, v64, causal=causal, window=window, scale=scale, softcap=softcap,
                                 alibi_slopes=slopes, dropout_p=p, dropout_mask=mask)
    low = _low_precision_reference(q, k, v, causal, window, scale, softcap, slopes, (p, mask) if p else None)
    atol = 2 * _worst(ref + 0.3 - 0.3, ref)
    assert _worst(out, ref) <= 2 * _worst(low, ref) + atol, "O"
    ref_grads = _grads(ref, grad.double(), (q64, k64, v64))
    low_grads = _grads(low, grad, (q, k, v))
    for name, g, r, lo in zip(("dQ", "dK", "dV"), _grads(out, grad, (q, k, v)), ref_grads, low_grads):
        assert _worst(g, r) <= 2 * _worst(lo, r) + atol, f"{name}: {_worst(g, r):.3g} vs torch's {_worst(lo, r):.3g}"


def _check_causal_varlen(out, grads, inputs, grad, lens_q, lens_k, dtype):
    """A causal varlen call's output and gradients (dQ, dK, dV) against the float64 reference, sequence by sequence."""
    cu_q, cu_k = _cu(lens_q), _cu(lens_k)
    q, k, v = inputs
    for i in range(len(lens_q)):
        qs, ks = slice(cu_q[i], cu_q[i + 1]), slice(cu_k[i], cu_k[i + 1])
        sub = [t.detach()[s][None].double().requires_grad_() for t, s in ((q, qs), (k, ks), (v, ks))]
        ref, _ = attention_reference(*sub, causal=True)
        assert_close(out[qs][None], ref, dtype, what=f"O of sequence {i}")
        if lens_q[i]:
            refs = torch.autograd.grad(ref, sub, grad[qs][None].double())
            for name, g, r, rows in zip(("dQ", "dK", "dV"), grads, refs, (qs, ks, ks)):
                assert_close(g[rows][None], r, dtype, ulps=8 * math.sqrt(lens_k[i]), what=f"{name} of sequence {i}")


def test_wide_head_dims_varlen():
    dtype, h, hk_, d, dv = torch.bfloat16, 4, 2, 192, 128
    lens_q, lens_k = [30, 1, 0, 45], [40, 9, 12, 45]
    q, k = rand(sum(lens_q), h, d, dtype=dtype).requires_grad_(), rand(sum(lens_k), hk_, d, dtype=dtype).requires_grad_()
    v = rand(sum(lens_k), hk_, dv, dtype=dtype).requires_grad_()
    cu_q, cu_k = _cu(lens_q), _cu(lens_k)
    out = fa.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(lens_q), max(lens_k), causal=True)
    assert out.shape == (sum(lens_q), h, dv)
    grad = rand(*out.shape, dtype=dtype)
    dq, dk, dv_ = torch.autograd.grad(out, (q, k, v), grad)
    _check_causal_varlen(out, (dq, dk, dv_), (q, k, v), grad, lens_q, lens_k, dtype)


def _dropout_reference_inputs(p, seed_state):
    """The (seed, offset) a call draws after torch.manual_seed(seed_state): the same two draws from torch's generator."""
    from hk.attention import draw_dropout_seed
    torch.manual_seed(seed_state)
    return draw_dropout_seed(p)



# Dropout as flash-attention tests it: forward and gradients against float64 with the same mask (hk's dropout stream
# written again in numpy), hk's error at most twice torch's in the inputs' type; every mask kind, GQA, both types.
@pytest.mark.parametrize("dtype,b,sq,sk,hq,hkv,d,causal,window,p", [
    (torch.bfloat16, 2, 70, 90, 4, 2, 64, True, (-1, -1), 0.17),     # GQA, bottom-right causal
    (torch.float16, 1, 50, 50, 2, 2, 128, False, (-1, -1), 0.5),
    (torch.bfloat16, 1, 64, 80, 2, 1, 96, False, (16, 8), 0.1),      # sliding window, head dim 96 (padded)
])
def test_dropout_forward_and_gradients(dtype, b, sq, sk, hq, hkv, d, causal, window, p):
    q, k, v = _inputs(b, sq, sk, hq, hkv, d, dtype)
    scale = 0.8 / math.sqrt(d)
    seed, offset = _dropout_reference_inputs(p, 99)
    torch.manual_seed(99)
    out = fa.flash_attn_func(q, k, v, p, scale, causal, window)
    mask = dropout_keep(p, seed, offset, b, hq, sq, sk)
    grad = rand(b, sq, hq, d, dtype=dtype)
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref, _ = attention_reference(q64, k64, v64, causal=causal, window=window, scale=scale, dropout_p=p,
                                 dropout_mask=mask)
    low = _low_precision_reference(q, k, v, causal, window, scale, dropout=(p, mask))
    atol = 2 * _worst(ref + 0.3 - 0.3, ref)
    assert _worst(out, ref) <= 2 * _worst(low, ref) + atol, "O"
    ref_grads = _grads(ref, grad.double(), (q64, k64, v64))
    low_grads = _grads(low, grad, (q, k, v))
    hk_grads = _grads(out, grad, (q, k, v))
    for name, g, r, lo in zip(("dQ", "dK", "dV"), hk_grads, ref_grads, low_grads):
        assert _worst(g, r) <= 2 * _worst(lo, r) + atol, f"{name}: {_worst(g, r):.3g} vs torch's {_worst(lo, r):.3g}"


def test_dropout_varlen():
    """flash_attn_varlen_func with dropout: sequence b's mask is stream offset + b H + h, queries and keys counted
    within the sequence."""
    p, dtype, hq, hkv, d = 0.3, torch.bfloat16, 4, 2, 64
    lens_q, lens_k = [17, 0, 70], [30, 5, 64]
    cu_q = torch.tensor([0, 17, 17, 87], dtype=torch.int32)
    cu_k = torch.tensor([0, 30, 35, 99], dtype=torch.int32)
    q = rand(87, hq, d, dtype=dtype).requires_grad_()
    k, v = rand(99, hkv, d, dtype=dtype).requires_grad_(), rand(99, hkv, d, dtype=dtype).requires_grad_()
    seed, offset = _dropout_reference_inputs(p, 5)
    torch.manual_seed(5)
    out = fa.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 70, 64, p, causal=True)
    grad = rand(87, hq, d, dtype=dtype)
    (dq,) = torch.autograd.grad(out, (q,), grad)
    mask = dropout_keep(p, seed, offset, 3, hq, 70, 64)
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    refs = []
    for b in range(3):
        qs, ks = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
        ref, _ = attention_reference(q64[None, qs], k64[None, ks], v64[None, ks], causal=True, dropout_p=p,
                                     dropout_mask=mask[b:b + 1, :, :lens_q[b], :lens_k[b]])
        refs.append(ref[0])
    ref = torch.cat(refs)
    (dq_ref,) = torch.autograd.grad(ref, (q64,), grad.double())
    assert_close(out, ref, dtype, ulps=8, what="O")
    assert_close(dq, dq_ref, dtype, ulps=16, what="dQ")


def _probabilities(q, k, causal, window=(-1, -1), scale=None):
    """The float64 softmax P (B, H, Sq, Sk) of the reference: its output for V the identity (no dropout)."""
    b, sk, hkv = k.shape[:3]
    eye = torch.eye(sk, dtype=torch.float64)[None, :, None, :].expand(b, sk, hkv, sk)
    out, _ = attention_reference(q.double(), k.double(), eye, causal=causal, window=window, scale=scale)
    return out.transpose(1, 2)


def _check_pattern(pattern, probs, mask, dtype):
    """S_dmask's sign is the keep mask where P > 0, its magnitude P to the type's rounding, 0 outside the mask."""
    sq, sk = probs.shape[-2:]
    assert torch.all(pattern[..., sq:, :] == 0) and torch.all(pattern[..., :, sk:] == 0)
    s = pattern[..., :sq, :sk].double()
    seen = probs > 0
    assert torch.equal(s[seen] > 0, mask[seen]), "S_dmask >= 0 is not the keep mask"
    assert torch.all(s[~seen] == 0)
    rel = 2 * (2.0 ** -8 if dtype == torch.bfloat16 else 2.0 ** -11)
    assert torch.all((s.abs() - probs).abs() <= rel * probs + 1e-30), "|S_dmask| is not P"


def test_return_attn_probs_shows_the_dropout_pattern():
    """flash-attention's tests take the dropout mask as S_dmask >= 0 and the probabilities from |S_dmask|, then check
    the output against a reference with that mask: S_dmask's shape rounds up to 128, its sign is hk's stream (numpy)
    and its magnitude the float64 softmax; dense GQA causal and varlen."""
    p, dtype, b, sq, sk, hq, hkv, d = 0.2, torch.bfloat16, 2, 70, 90, 4, 2, 64
    q, k, v = _inputs(b, sq, sk, hq, hkv, d, dtype)
    seed, offset = _dropout_reference_inputs(p, 3)
    torch.manual_seed(3)
    out, lse, pattern = fa.flash_attn_func(q, k, v, p, causal=True, return_attn_probs=True)
    assert pattern.shape == (b, hq, 128, 128) and pattern.dtype == dtype and lse.shape == (b, hq, sq)
    mask = dropout_keep(p, seed, offset, b, hq, sq, sk)
    _check_pattern(pattern, _probabilities(q.detach(), k.detach(), True), mask, dtype)
    ref, _ = attention_reference(*(t.detach().double() for t in (q, k, v)), causal=True, dropout_p=p,
                                 dropout_mask=pattern[..., :sq, :sk] >= 0)
    assert_close(out, ref, dtype, ulps=8, what="O with S_dmask's mask")
    assert torch.equal(hk.attention(q, k, v, causal=True, dropout_p=p, dropout_seed=(seed, offset)), out)
    for s, o in ((seed, offset), (2**64 - 1, 2**64 - 3)):  # hk.dropout.keep_mask: the same bits as numpy's stream
        assert torch.equal(hk.dropout.keep_mask(p, s, o, b, hq, sq, sk), dropout_keep(p, s, o, b, hq, sq, sk))

    cu_q, cu_k = torch.tensor([0, 17, 17, 87], dtype=torch.int32), torch.tensor([0, 30, 35, 99], dtype=torch.int32)
    qv, kv, vv = rand(87, hq, d, dtype=dtype), rand(99, hkv, d, dtype=dtype), rand(99, hkv, d, dtype=dtype)
    seed, offset = _dropout_reference_inputs(p, 4)
    torch.manual_seed(4)
    _, _, pattern = fa.flash_attn_varlen_func(qv, kv, vv, cu_q, cu_k, 70, 64, p, window_size=(20, 3),
                                              return_attn_probs=True)
    assert pattern.shape == (3, hq, 128, 128)
    mask = dropout_keep(p, seed, offset, 3, hq, 70, 64)
    for i in range(3):
        qs, ks = slice(cu_q[i], cu_q[i + 1]), slice(cu_k[i], cu_k[i + 1])
        lq, lk = qs.stop - qs.start, ks.stop - ks.start
        probs = _probabilities(qv[None, qs], kv[None, ks], False, window=(20, 3))[0]
        _check_pattern(pattern[i], probs, mask[i, :, :lq, :lk], dtype)

    _, _, empty = fa.flash_attn_func(q, k, v, 0.0, return_attn_probs=True)
    assert empty.numel() == 0  # no dropout: an empty S_dmask, as flash-attention returns


def test_dropout_mask_is_the_stream_and_the_seed_reproduces_it():
    """Q = 0 gives every key p = 1 / 128 and V the identity shows the mask: O[i][j] = keep / (128 (1 - p)). The kept
    fraction is within 0.01 of 1 - p, the mask is the numpy stream's, torch.manual_seed gives the same bits again and
    another seed another mask; the gradients repeat too."""
    p, b, sq, hq = 0.25, 2, 256, 4
    q = torch.zeros(b, sq, hq, 128, dtype=torch.bfloat16)
    k = rand(b, 128, 1, 128, dtype=torch.bfloat16)
    v = torch.eye(128, dtype=torch.bfloat16)[None, :, None, :].expand(b, 128, 1, 128).contiguous()
    seed, offset = _dropout_reference_inputs(p, 21)
    torch.manual_seed(21)
    out = hk.attention(q, k, v, dropout_p=p)
    kept = (out != 0).permute(0, 2, 1, 3)  # (B, H, Sq, Sk)
    assert torch.equal(kept, dropout_keep(p, seed, offset, b, hq, sq, 128))
    assert abs(kept.double().mean().item() - (1 - p)) <= 0.01
    assert torch.all(out.permute(0, 2, 1, 3)[kept].double() == torch.tensor(1 / (128 * (1 - p))).to(torch.bfloat16).double())
    torch.manual_seed(21)
    assert torch.equal(hk.attention(q, k, v, dropout_p=p), out)
    assert not torch.equal(hk.attention(q, k, v, dropout_p=p), out)  # the generator moved on: another mask

    qg, kg, vg = _inputs(1, 64, 64, 4, 2, 128, torch.bfloat16)
    grad = rand(1, 64, 4, 128, dtype=torch.bfloat16)
    runs = []
    for state in (3, 3, 4):
        torch.manual_seed(state)
        o = fa.flash_attn_func(qg, kg, vg, 0.2, causal=True)
        runs.append((o, *_grads(o, grad, (qg, kg, vg))))
    assert all(torch.equal(x, y) for x, y in zip(runs[0], runs[1]))
    assert not any(torch.equal(x, y) for x, y in zip(runs[0], runs[2]))


def test_output_alone_by_default_and_keyword_call():
    q, k, v = _inputs(1, 16, 16, 2, 2, 64, torch.bfloat16)
    out = fa.flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=True)
    assert isinstance(out, torch.Tensor) and out.shape == q.shape
    ref, _ = attention_reference(q.detach(), k.detach(), v.detach(), causal=True)
    assert_close(out, ref, torch.bfloat16, what="O")


def test_packed_forms_equal_separate_tensors():
    dtype, b, s, h, d = torch.bfloat16, 2, 40, 2, 64
    qkv = rand(b, s, 3, h, d, dtype=dtype).requires_grad_()
    grad = rand(b, s, h, d, dtype=dtype)
    out = fa.flash_attn_qkvpacked_func(qkv, causal=True)
    (dqkv,) = torch.autograd.grad(out, qkv, grad)
    q, k, v = (qkv.detach()[:, :, i].clone().requires_grad_() for i in range(3))
    out_sep = fa.flash_attn_func(q, k, v, causal=True)
    assert torch.equal(out, out_sep)
    assert torch.equal(dqkv, torch.stack(torch.autograd.grad(out_sep, (q, k, v), grad), dim=2))

    kv = torch.stack((k.detach(), v.detach()), dim=2).requires_grad_()
    qq = q.detach().requires_grad_()
    out_kv = fa.flash_attn_kvpacked_func(qq, kv, causal=True)
    assert torch.equal(out_kv, out_sep)
    dq, dkv = torch.autograd.grad(out_kv, (qq, kv), grad)
    assert torch.equal(dq, dqkv[:, :, 0]) and torch.equal(dkv, dqkv[:, :, 1:])


def _cu(lens):
    return torch.tensor([0, *torch.tensor(lens).cumsum(0).tolist()], dtype=torch.int32)


def test_varlen_forms():
    dtype, h, hk_, d = torch.bfloat16, 4, 2, 96
    lens_q, lens_k = [30, 1, 0, 45], [40, 9, 12, 45]
    q = rand(sum(lens_q), h, d, dtype=dtype).requires_grad_()
    k, v = (rand(sum(lens_k), hk_, d, dtype=dtype).requires_grad_() for _ in range(2))
    cu_q, cu_k = _cu(lens_q), _cu(lens_k)
    out, lse, s_dmask = fa.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(lens_q), max(lens_k), causal=True,
                                                  return_attn_probs=True)
    assert out.shape == q.shape and lse.shape == (h, sum(lens_q)) and s_dmask.numel() == 0
    grad = rand(*q.shape, dtype=dtype)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), grad)
    _check_causal_varlen(out, (dq, dk, dv), (q, k, v), grad, lens_q, lens_k, dtype)

    kv = torch.stack((k.detach(), v.detach()), dim=1)
    out_kv = fa.flash_attn_varlen_kvpacked_func(q.detach(), kv, cu_q, cu_k, max(lens_q), max(lens_k), causal=True)
    assert torch.equal(out_kv, out.detach())

    qkv = rand(sum(lens_k), 3, h, d, dtype=dtype)
    out_qkv = fa.flash_attn_varlen_qkvpacked_func(qkv, cu_k, max(lens_k), 0.0, None, False, (4, 4))
    out_sep = fa.flash_attn_varlen_func(qkv[:, 0], qkv[:, 1], qkv[:, 2], cu_k, cu_k, max(lens_k), max(lens_k),
                                        window_size=(4, 4))
    assert torch.equal(out_qkv, out_sep)


def test_backward_is_deterministic_in_both_modes():
    q, k, v = _inputs(1, 64, 64, 4, 2, 128, torch.bfloat16)
    grad = rand(1, 64, 4, 128, dtype=torch.bfloat16)
    runs = [_grads(fa.flash_attn_func(q, k, v, causal=True, deterministic=det), grad, (q, k, v))
            for det in (True, False, True)]
    for other in runs[1:]:
        assert all(torch.equal(a, b) for a, b in zip(runs[0], other))


def test_varlen_paged_keys_are_the_packed_keys():
    """flash_attn_varlen_func with block_table (pages of 24 keys in shuffled order, an empty sequence, a partial last
    page) gives the packed call's output and gradients bit for bit; a page outside the cache is refused."""
    hq, hkv, d, page, dtype = 4, 2, 64, 24, torch.bfloat16
    lens_q, lens_k = [9, 0, 40], [50, 7, 72]
    cu_q = torch.tensor([0, 9, 9, 49], dtype=torch.int32)
    cu_k = torch.tensor([0, 50, 57, 129], dtype=torch.int32)
    pages_per_seq = [(n + page - 1) // page for n in lens_k]
    order = torch.randperm(sum(pages_per_seq) + 2)  # two spare pages nobody names
    table = torch.zeros(3, max(pages_per_seq), dtype=torch.int32)
    k_pages, v_pages = (rand(len(order), page, hkv, d, dtype=dtype) for _ in range(2))
    packed_k, packed_v, used = [], [], 0
    for b, n in enumerate(pages_per_seq):
        table[b, :n] = order[used:used + n].to(torch.int32)
        packed_k.append(k_pages[table[b, :n].long()].flatten(0, 1)[:lens_k[b]])
        packed_v.append(v_pages[table[b, :n].long()].flatten(0, 1)[:lens_k[b]])
        used += n
    q = rand(49, hq, d, dtype=dtype).requires_grad_()
    k_pages.requires_grad_()
    k, v = torch.cat(packed_k).detach().requires_grad_(), torch.cat(packed_v)
    grad = rand(49, hq, d, dtype=dtype)
    paged = fa.flash_attn_varlen_func(q, k_pages, v_pages, cu_q, cu_k, 40, 72, causal=True, block_table=table)
    dq_paged, dk_pages = torch.autograd.grad(paged, (q, k_pages), grad)
    packed = fa.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 40, 72, causal=True)
    dq, dk = torch.autograd.grad(packed, (q, k), grad)
    assert torch.equal(paged, packed) and torch.equal(dq_paged, dq)
    for b, n in enumerate(pages_per_seq):  # each page's gradient is its keys' rows of the packed dK
        got = dk_pages[table[b, :n].long()].flatten(0, 1)[:lens_k[b]]
        assert torch.equal(got, dk[cu_k[b]:cu_k[b + 1]])
    assert torch.all(dk_pages[order[used:]] == 0)  # the spare pages
    bad = table.clone()
    bad[2, 0] = len(order)
    with pytest.raises(ValueError, match="names a page outside"):
        fa.flash_attn_varlen_func(q, k_pages, v_pages, cu_q, cu_k, 40, 72, block_table=bad)


def test_refusals_name_the_feature():
    q = rand(1, 16, 2, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="dropout_seed must be"):
        hk.attention(q, q, q, dropout_p=0.1, dropout_seed=5)
    with pytest.raises(ValueError, match="dropout_p must be in"):
        fa.flash_attn_func(q, q, q, 1.5)
    with pytest.raises(ValueError, match="dropout_p must be at most 1 - 2\\^-8"):
        hk.attention(q, q, q, dropout_p=0.999)
    with pytest.raises(ValueError, match="softcap"):
        fa.flash_attn_func(q, q, q, softcap=-1.0)
    with pytest.raises(ValueError, match="alibi_slopes must be fp32"):
        fa.flash_attn_func(q, q, q, alibi_slopes=torch.ones(3))
    q264 = rand(1, 16, 2, 264, dtype=torch.bfloat16)
    with pytest.raises(NotImplementedError, match="head dims 264"):
        fa.flash_attn_func(q264, q264, q264)
    q256 = rand(1, 16, 2, 256, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="k's head dim"):
        fa.flash_attn_func(q256, q, q)
    with pytest.raises(ValueError, match="window_size"):
        fa.flash_attn_func(q, q, q, window_size=(4,))
    with pytest.raises(ValueError, match="the packed tensor"):
        fa.flash_attn_qkvpacked_func(rand(1, 16, 2, 2, 64, dtype=torch.bfloat16))
    cu = torch.tensor([0, 16], dtype=torch.int32)
    with pytest.raises(ValueError, match="block_table must be an int32"):
        fa.flash_attn_varlen_func(q[0], q[0], q[0], cu, cu, 16, 16, block_table=cu)
    with pytest.raises(ValueError, match="float32"):
        fa.flash_attn_func(q.float(), q.float(), q.float())


class _Block(torch.nn.Module):
    """Self-attention as a flash-attention user writes it: one qkv projection, the packed call, an output one."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim, bias=False, dtype=torch.bfloat16)
        self.out = torch.nn.Linear(dim, dim, bias=False, dtype=torch.bfloat16)

    def forward(self, x):
        b, s, dim = x.shape
        qkv = self.qkv(x).view(b, s, 3, self.heads, dim // self.heads)
        return self.out(fa.flash_attn_qkvpacked_func(qkv, causal=True).reshape(b, s, dim))


def test_torch_compile_fullgraph():
    block = _Block(192, 2)  # head dim 96: the padding is traced too
    x = rand(2, 24, 192, dtype=torch.bfloat16, scale=0.5).requires_grad_()
    eager = block(x)
    (dx_eager,) = torch.autograd.grad(eager.sum(), x)
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    out = compiled(x)
    (dx,) = torch.autograd.grad(out.sum(), x)
    assert torch.equal(out, eager) and torch.equal(dx, dx_eager)


def test_fp8_forward_with_flash_attention_3s_descales():
    # flash-attention 3's FP8 call: e4m3 q, k, v (the device's format) and (B, Hk) fp32 descales; bf16 out.
    from hk.attention import _fp8_type
    b, sq, sk, hq, hkv, d = 2, 80, 100, 4, 2, 128
    q, k, v = (rand(b, s, h, d, dtype=torch.float32, scale=4.0).to(_fp8_type()) for s, h in ((sq, hq), (sk, hkv), (sk, hkv)))
    ds = [torch.rand(b, hkv) * 0.5 + 0.05 for _ in range(3)]
    out, lse, probs = fa.flash_attn_func(q, k, v, causal=True, return_attn_probs=True, q_descale=ds[0],
                                         k_descale=ds[1], v_descale=ds[2])
    assert out.dtype == torch.bfloat16 and lse.shape == (b, hq, sq) and probs.numel() == 0

    def real(x, dd):
        return x.to(torch.float64) * dd.to(torch.float64).repeat_interleave(x.shape[2] // hkv, dim=1)[:, None, :, None]
    ref, ref_lse = attention_reference(real(q, ds[0]), real(k, ds[1]), real(v, ds[2]), causal=True)
    assert_close(out, ref, torch.bfloat16, ulps=4, what="O")
    assert_close(lse, ref_lse, torch.float32, ulps=2**13, what="LSE")
    cu_q = torch.tensor([0, sq, 2 * sq], dtype=torch.int32)
    cu_k = torch.tensor([0, sk, 2 * sk], dtype=torch.int32)
    packed = fa.flash_attn_varlen_func(q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1), cu_q, cu_k, sq, sk,
                                       causal=True, q_descale=ds[0], k_descale=ds[1], v_descale=ds[2])
    assert torch.equal(packed.view(torch.int16), out.flatten(0, 1).view(torch.int16))
    with pytest.raises(NotImplementedError, match="not supported"):
        fa.flash_attn_func(q[..., :96].contiguous(), k[..., :96].contiguous(), v[..., :96].contiguous())
