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


def dropout_keep(p, seed, offset, batch, heads, sq, sk):
    """hk's attention dropout mask, (batch, heads, sq, sk) bool, written from the definition with numpy's uint64:
    element (b, h, i, j) takes byte j % 4 of word i % 4 of Philox4x32-7 (flash-attention's rounds) at counter {j / 4, i / 4, stream low, stream
    high}, stream = offset + b heads + h, key {seed low, seed high}, and is kept when that byte is <= floor(255 (1 -
    p)), 1 - p in fp32 (flash-attention's 8-bit rule)."""
    import numpy as np
    u64, lo32 = np.uint64, np.uint64(0xFFFFFFFF)
    m0, m1, w0, w1 = u64(0xD2511F53), u64(0xCD9E8D57), u64(0x9E3779B9), u64(0xBB67AE85)
    ii, jj = np.meshgrid(np.arange(sq, dtype=np.uint64), np.arange(sk, dtype=np.uint64), indexing="ij")
    bb, hh = np.meshgrid(np.arange(batch, dtype=np.uint64), np.arange(heads, dtype=np.uint64), indexing="ij")
    stream = (u64(offset % 2**64) + bb * u64(heads) + hh)[:, :, None, None]  # wraps modulo 2^64
    c0, c1 = np.broadcast_to(jj >> u64(2), (batch, heads, sq, sk)), np.broadcast_to(ii >> u64(2), (batch, heads, sq, sk))
    c2, c3 = np.broadcast_to(stream & lo32, c0.shape), np.broadcast_to(stream >> u64(32), c0.shape)
    k0, k1 = u64(seed % 2**64) & lo32, u64(seed % 2**64) >> u64(32)
    for _ in range(7):
        a, b = m0 * c0, m1 * c2  # 32 x 32 bits: exact in 64
        c0, c1, c2, c3 = (b >> u64(32)) ^ c1 ^ k0, b & lo32, (a >> u64(32)) ^ c3 ^ k1, a & lo32
        k0, k1 = (k0 + w0) & lo32, (k1 + w1) & lo32
    words = np.stack((c0, c1, c2, c3), axis=-1)  # (b, h, i, j, word)
    word = np.take_along_axis(words, (ii % u64(4)).astype(np.int64)[None, None, :, :, None], axis=-1)[..., 0]
    byte = (word >> (u64(8) * (jj % u64(4)))) & u64(0xFF)
    keep_max = math.floor(float(np.float32(1) - np.float32(p)) * 255.0)
    return torch.from_numpy(byte <= u64(keep_max))


def attention_reference(q, k, v, causal=False, window=(-1, -1), scale=None, softcap=0.0, sinks=None,
                        alibi_slopes=None, dropout_p=0.0, dropout_mask=None):
    """(out, lse) in float64 with an explicit mask aligned bottom-right, as flash-attention's (SDPA's is_causal is
    top-left), flash-attention's softcap (scaled scores x -> softcap tanh(x / softcap)) and sinks (one logit per head
    in every row's denominator) and ALiBi (alibi_slopes (H) or (B, H): -slope |i + Sk - Sq - j|). Rows that see no key give 0 and LSE -inf (the sink with sinks). Tensors are
    (B, S, H, D); differentiable. dropout_mask (B, H, Sq, Sk) bool: P's kept elements, scaled by 1 / (1 - dropout_p)
    in P V (the LSE takes the whole P)."""
    def drop(p):
        if dropout_mask is None:
            return p
        return p * dropout_mask.to(torch.float64) / (1.0 - float(np.float32(dropout_p)))
    import numpy as np
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
        return (drop(torch.exp(masked - lse[..., None])) @ v).transpose(1, 2), lse
    seen = allowed.any(dim=1)[:, None]
    lse = torch.logsumexp(masked, dim=-1)
    p = torch.softmax(torch.where(seen, masked, torch.zeros_like(masked)), dim=-1)
    p = torch.where(seen, p, torch.zeros_like(p))
    return (drop(p) @ v).transpose(1, 2), lse


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
