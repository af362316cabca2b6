"""hk's attention dropout in torch: which elements of attention's P a call with a given (seed, offset) keeps.

The kernels draw 8 random bits per element from Philox4x32 with 7 rounds (include/hk/ops/philox.h), flash-attention's
generator and convention: element (b, h, i, j) of attention's P (query i, key j, counted within the sequence for
varlen) takes byte j % 4 of word i % 4 of philox4x32_r<7>({j / 4, i / 4, stream low, stream high}, {seed low, seed high}), stream = offset +
b Hq + h (mod 2^64) (one call per block of 4 queries by 4 keys), and is kept when that byte is <= floor(255 (1 - p)),
1 - p in fp32 (flash-attention's rule). This module computes the same bits with torch's int64 arithmetic (32 x 32-bit
products split so that no intermediate leaves int64), for flash-attention's S_dmask and for users who want a call's
mask.
"""
import math

import torch

_M32 = 0xFFFFFFFF
_ROUND_MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
_KEY_BUMPS = (0x9E3779B9, 0xBB67AE85)


def _mul_hi_lo(m, c):
    """(high, low) 32-bit halves of the 64-bit product m * c, m a 32-bit constant, c an int64 tensor of 32-bit values:
    m times each 16-bit half of c stays below 2^48."""
    low_part, high_part = m * (c & 0xFFFF), m * (c >> 16)
    t = low_part + ((high_part & 0xFFFF) << 16)
    return ((high_part >> 16) + (t >> 32)) & _M32, t & _M32


def _philox4x32(c0, c1, c2, c3, seed, rounds=7):
    k0, k1 = seed & _M32, seed >> 32
    for _ in range(rounds):
        hi0, lo0 = _mul_hi_lo(_ROUND_MULTIPLIERS[0], c0)
        hi1, lo1 = _mul_hi_lo(_ROUND_MULTIPLIERS[1], c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0, k1 = (k0 + _KEY_BUMPS[0]) & _M32, (k1 + _KEY_BUMPS[1]) & _M32
    return c0, c1, c2, c3


def keep_mask(dropout_p, seed, offset, batch, heads, seqlen_q, seqlen_k, device=None):
    """(batch, heads, seqlen_q, seqlen_k) bool: the elements of P that attention with dropout_p, seed and offset
    keeps (the same bits as the kernels; see the module's text)."""
    seed, offset = int(seed) % 2**64, int(offset) % 2**64
    streams = [[(offset + b * heads + h) % 2**64 for h in range(heads)] for b in range(batch)]
    lo, hi = (torch.tensor([[f(s) for s in row] for row in streams], dtype=torch.int64, device=device)
              .view(batch, heads, 1, 1) for f in (lambda s: s & _M32, lambda s: s >> 32))
    qb = torch.arange((seqlen_q + 3) // 4, dtype=torch.int64, device=device).view(1, 1, -1, 1)
    kb = torch.arange((seqlen_k + 3) // 4, dtype=torch.int64, device=device).view(1, 1, 1, -1)
    shape = (batch, heads, qb.shape[2], kb.shape[3])
    words = _philox4x32(kb.expand(shape), qb.expand(shape), lo.expand(shape), hi.expand(shape), seed)
    w = torch.stack(words, dim=-1)  # (..., query block, key block, word = query % 4)
    shifts = torch.arange(0, 32, 8, dtype=torch.int64, device=device)
    bits = (w.unsqueeze(-1) >> shifts) & 0xFF  # (..., query block, key block, query % 4, key % 4)
    bits = bits.permute(0, 1, 2, 4, 3, 5).reshape(batch, heads, 4 * shape[2], 4 * shape[3])[..., :seqlen_q, :seqlen_k]
    keep_max = math.floor(float(1.0 - torch.tensor(dropout_p, dtype=torch.float32)) * 255.0)
    return bits <= keep_max
