"""What every test of the hk package shares: quantized random inputs, per-type tolerances, torch references."""
import math
import os
import sys

import pytest
import torch

import hk

# The examples (python/examples) are importable by the tests that run them.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "examples"))

# Unit roundoff of each type hk computes in; results are compared with a few ulps of slack per accumulated term.
UNIT_ROUNDOFF = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11, torch.float32: 2.0**-24}


def rand(*shape, dtype, scale=1.0, generator=None):
    """Normal values already in `dtype` (the reference then sees exactly the inputs hk sees)."""
    return (torch.randn(*shape, dtype=torch.float64, generator=generator) * scale).to(dtype)


def assert_close(actual, expected, dtype, ulps=4.0, what=""):
    """actual (hk, in `dtype`) against a float64 reference: within `ulps` units of roundoff of the reference's
    largest magnitude, plus the output's own rounding."""
    expected = expected.to(torch.float64)
    actual = actual.to(torch.float64)
    assert actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    scale = expected.abs().max().item() if expected.numel() else 0.0
    tol = ulps * UNIT_ROUNDOFF[dtype] * max(scale, 1e-30)
    err = (actual - expected).abs()
    worst = err.max().item() if err.numel() else 0.0
    assert worst <= tol, f"{what}: max error {worst:.3g} > {tol:.3g} (reference scale {scale:.3g})"


@pytest.fixture(autouse=True)
def seeded():
    torch.manual_seed(1234)


def attention_reference(q, k, v, causal=False, window=(-1, -1), scale=None, softcap=0.0, sinks=None,
                        alibi_slopes=None):
    """(out, lse) in float64 with an explicit mask aligned bottom-right, as flash-attention's (SDPA's is_causal is
    top-left), flash-attention's softcap (scaled scores x -> softcap tanh(x / softcap)) and sinks (one logit per head
    in every row's denominator) and ALiBi (alibi_slopes (H) or (B, H): -slope |i + Sk - Sq - j|). Rows that see no key give 0 and LSE -inf (the sink with sinks). Tensors are
    (B, S, H, D); differentiable."""
    q, k, v = (t.to(torch.float64).transpose(1, 2) for t in (q, k, v))  # (B, H, S, D)
    sq, sk, d = q.shape[2], k.shape[2], q.shape[3]
    scale = scale or 1.0 / math.sqrt(d)
    i = torch.arange(sq)[:, None] + (sk - sq)
    j = torch.arange(sk)[None, :]
    left, right = window
    if causal:
        right = 0
    allowed = torch.ones(sq, sk, dtype=torch.bool)
    if left >= 0:
        allowed &= j >= i - left
    if right >= 0:
        allowed &= j <= i + right
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    scores = (q @ k.transpose(-1, -2)) * scale
    if softcap:
        scores = softcap * torch.tanh(scores / softcap)
    if alibi_slopes is not None:
        slopes = alibi_slopes.to(torch.float64).reshape(-1, alibi_slopes.shape[-1])[:, :, None, None]  # (B or 1, H)
        scores = scores - slopes * (i - j).abs()
    masked = scores.masked_fill(~allowed, -math.inf)
    if sinks is not None:
        z = sinks.to(torch.float64)[None, :, None, None].expand(*masked.shape[:3], 1)
        lse = torch.logsumexp(torch.cat((masked, z), dim=-1), dim=-1)
        return (torch.exp(masked - lse[..., None]) @ v).transpose(1, 2), lse
    seen = allowed.any(dim=1)[:, None]
    lse = torch.logsumexp(masked, dim=-1)
    p = torch.softmax(torch.where(seen, masked, torch.zeros_like(masked)), dim=-1)
    p = torch.where(seen, p, torch.zeros_like(p))
    return (p @ v).transpose(1, 2), lse


def rotary_reference(x, cos, sin, interleaved, offset=0):
    """x (B, S, H, D) rotated by the tables' rows offset .. offset + S - 1, in float64."""
    x = x.to(torch.float64)
    half = cos.shape[1]
    c = cos[offset:offset + x.shape[1]].to(torch.float64)[None, :, None, :]
    s = sin[offset:offset + x.shape[1]].to(torch.float64)[None, :, None, :]
    rot, rest = x[..., :2 * half], x[..., 2 * half:]
    if interleaved:
        a, b = rot[..., 0::2], rot[..., 1::2]
        out = torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)
    else:
        a, b = rot[..., :half], rot[..., half:]
        out = torch.cat((a * c - b * s, a * s + b * c), dim=-1)
    return torch.cat((out, rest), dim=-1)


def rotary_tables(rows, rotary_dim, base=10000.0, dtype=torch.float32):
    inv = base ** (-torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim)
    angles = torch.arange(rows, dtype=torch.float64)[:, None] * inv[None, :]
    return angles.cos().to(dtype), angles.sin().to(dtype)
