"""hk.flash_attn: flash-attention 2.x's Python interface (flash_attn.flash_attn_interface, 2.8) on hk's kernels.

Code written against flash-attention runs after changing its import only:

    from hk.flash_attn import flash_attn_func          # was: from flash_attn import flash_attn_func

Every function keeps flash-attention's argument names, order and defaults, and its return convention: the output
alone, or with return_attn_probs=True the triple (out, softmax_lse, S_dmask), softmax_lse (B, H, Sq) fp32
((H, total_q) for varlen) and S_dmask an empty tensor, as flash-attention returns it when dropout_p is 0 (it fills
S_dmask only to show a dropout pattern). Gradients flow to every input through torch's autograd.

The semantics are flash-attention's: GQA/MQA when Q has a multiple of K's heads; causal aligned bottom-right; a
window (left, right) keeps keys in [i + Sk - Sq - left, i + Sk - Sq + right], -1 unbounded, and causal sets right to
0; the default scale 1 / sqrt(head dim); softcap > 0 caps each scaled score x to softcap tanh(x / softcap),
gradients included; alibi_slopes (H) or (B, H) fp32 adds -slope |i + Sk - Sq - j| to the scaled scores (not
together with softcap yet). `deterministic` is accepted in both settings: hk's backward is always
deterministic (dQ, dK, dV summed in a fixed order, bit-identical run after run), so False costs nothing and loses
nothing.

Head dims: hk's kernels run D = 64 and 128; any other D up to 128 is zero-padded to the next of the two (padding
adds nothing to Q K^T and the padded output columns are dropped), the scale taken from the real D, as
flash-attention pads to a multiple of 8. Not yet in hk's kernels, and refused with a sentence rather than computed
another way: head dims above 128, Q/K's head dim different from V's, dropout_p > 0, softcap with alibi_slopes, and a
paged KV cache (block_table) in flash_attn_varlen_func. flash_attn_with_kvcache (decode over a contiguous or paged KV cache,
appending k / v in place with optional rotary, FP8 caches with k_descale / v_descale) runs on hk::attention_decode
(hk/decode.py).
"""
import torch

from . import attention as _attn
from . import decode as _decode

_KERNEL_DIMS = (64, 128)


def _refuse(entry, what):
    raise NotImplementedError(f"hk.flash_attn.{entry}: {what} is not supported by hk's attention kernels yet")


def _features(entry, dropout_p):
    """Refuses what hk's kernels do not compute yet; flash-attention's 'off' values pass."""
    if dropout_p is None or dropout_p != 0.0:
        if dropout_p is None or not 0.0 <= dropout_p < 1.0:
            raise ValueError(f"hk.flash_attn.{entry}: dropout_p must be in [0, 1), got {dropout_p}")
        _refuse(entry, f"dropout (dropout_p={dropout_p}; pass 0.0, as flash-attention advises for evaluation)")


def _window(entry, causal, window_size):
    if window_size is None or len(window_size) != 2:
        raise ValueError(f"hk.flash_attn.{entry}: window_size must be (left, right), got {window_size}")
    left, right = (int(w) for w in window_size)
    if left < -1 or right < -1:
        raise ValueError(f"hk.flash_attn.{entry}: window_size entries must be -1 (unbounded) or >= 0, got "
                         f"{window_size}")
    return left, 0 if causal else right


def _padded_dim(entry, q, k, v):
    d = q.shape[-1]
    if d < 1:
        raise ValueError(f"hk.flash_attn.{entry}: q's head dim must be at least 1, got shape {tuple(q.shape)}")
    if k.shape[-1] != d or v.shape[-1] != d:
        _refuse(entry, f"a head dim of V ({v.shape[-1]}) or K ({k.shape[-1]}) different from Q's ({d})")
    for dim in _KERNEL_DIMS:
        if d <= dim:
            return dim
    _refuse(entry, f"head dim {d} (up to {_KERNEL_DIMS[-1]} runs today)")


def _pad(t, dim):
    return t if t.shape[-1] == dim else torch.nn.functional.pad(t, (0, dim - t.shape[-1]))


def _run(entry, q, k, v, varlen, dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
         return_attn_probs, block_table=None):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"hk.flash_attn.{entry}: {name} must be a torch.Tensor, not {type(t).__name__}")
    _features(entry, dropout_p)
    if block_table is not None:
        _refuse(entry, "a paged KV cache (block_table)")
    left, right = _window(entry, causal, window_size)
    dim = _padded_dim(entry, q, k, v)
    d = q.shape[-1]
    scale = d ** -0.5 if softmax_scale is None else float(softmax_scale)
    qp, kp, vp = (_pad(t, dim) for t in (q, k, v))
    if varlen is None:
        out, lse = _attn.attention(qp, kp, vp, causal=bool(causal), window=(left, right), scale=scale,
                                   softcap=softcap, alibi_slopes=alibi_slopes, return_lse=True)
    else:
        out, lse = _attn.attention_varlen(qp, kp, vp, *varlen, causal=bool(causal), window=(left, right),
                                          scale=scale, softcap=softcap, alibi_slopes=alibi_slopes,
                                          return_lse=True)
    out = out[..., :d] if dim != d else out
    if not return_attn_probs:
        return out
    return out, lse, q.new_empty((0,))


def _unpack(entry, packed, n, dim):
    """The n tensors stacked on dimension `dim` of `packed` (views, so gradients reach the packed tensor)."""
    if not isinstance(packed, torch.Tensor):
        raise TypeError(f"hk.flash_attn.{entry}: expected a torch.Tensor, not {type(packed).__name__}")
    if packed.dim() <= dim or packed.shape[dim] != n:
        raise ValueError(f"hk.flash_attn.{entry}: the packed tensor must have {n} at dimension {dim}, got shape "
                         f"{tuple(packed.shape)}")
    return packed.unbind(dim)


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                    alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """q (B, Sq, H, D), k and v (B, Sk, Hk, D), H a multiple of Hk; returns out (B, Sq, H, D)."""
    return _run("flash_attn_func", q, k, v, None, dropout_p, softmax_scale, causal, window_size, softcap,
                alibi_slopes, return_attn_probs)


def flash_attn_kvpacked_func(q, kv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                             softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """q (B, Sq, H, D), kv (B, Sk, 2, Hk, D)."""
    k, v = _unpack("flash_attn_kvpacked_func", kv, 2, 2)
    return _run("flash_attn_kvpacked_func", q, k, v, None, dropout_p, softmax_scale, causal, window_size, softcap,
                alibi_slopes, return_attn_probs)


def flash_attn_qkvpacked_func(qkv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                              softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """qkv (B, S, 3, H, D)."""
    q, k, v = _unpack("flash_attn_qkvpacked_func", qkv, 3, 2)
    return _run("flash_attn_qkvpacked_func", q, k, v, None, dropout_p, softmax_scale, causal, window_size, softcap,
                alibi_slopes, return_attn_probs)


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                           deterministic=False, return_attn_probs=False, block_table=None):
    """q (total_q, H, D), k and v (total_k, Hk, D), sequence b at rows cu_seqlens[b] .. cu_seqlens[b + 1] - 1
    (int32, B + 1 offsets); returns out (total_q, H, D), softmax_lse (H, total_q)."""
    return _run("flash_attn_varlen_func", q, k, v, (cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k),
                dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes, return_attn_probs,
                block_table)


def flash_attn_varlen_kvpacked_func(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                                    softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                                    alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """q (total_q, H, D), kv (total_k, 2, Hk, D)."""
    k, v = _unpack("flash_attn_varlen_kvpacked_func", kv, 2, 1)
    return _run("flash_attn_varlen_kvpacked_func", q, k, v, (cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                max_seqlen_k), dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes,
                return_attn_probs)


def flash_attn_varlen_qkvpacked_func(qkv, cu_seqlens, max_seqlen, dropout_p=0.0, softmax_scale=None, causal=False,
                                     window_size=(-1, -1), softcap=0.0, alibi_slopes=None, deterministic=False,
                                     return_attn_probs=False):
    """qkv (total, 3, H, D), one cu_seqlens and max_seqlen for queries and keys."""
    q, k, v = _unpack("flash_attn_varlen_qkvpacked_func", qkv, 3, 1)
    return _run("flash_attn_varlen_qkvpacked_func", q, k, v, (cu_seqlens, cu_seqlens, max_seqlen, max_seqlen),
                dropout_p, softmax_scale, causal, window_size, softcap, alibi_slopes, return_attn_probs)


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None,
                            cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None, block_table=None,
                            softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                            rotary_interleaved=True, alibi_slopes=None, num_splits=0, return_softmax_lse=False,
                            k_descale=None, v_descale=None):
    """flash-attention's decode entry: hk.attention_with_kvcache (hk/decode.py), the same arguments and result."""
    return _decode.attention_with_kvcache(
        q, k_cache, v_cache, k=k, v=v, rotary_cos=rotary_cos, rotary_sin=rotary_sin, cache_seqlens=cache_seqlens,
        cache_batch_idx=cache_batch_idx, cache_leftpad=cache_leftpad, block_table=block_table,
        softmax_scale=softmax_scale, causal=causal, window_size=window_size, softcap=softcap,
        rotary_interleaved=rotary_interleaved, alibi_slopes=alibi_slopes, num_splits=num_splits,
        return_softmax_lse=return_softmax_lse, k_descale=k_descale, v_descale=v_descale)


__all__ = ["flash_attn_with_kvcache", "flash_attn_func", "flash_attn_kvpacked_func", "flash_attn_qkvpacked_func", "flash_attn_varlen_func",
           "flash_attn_varlen_kvpacked_func", "flash_attn_varlen_qkvpacked_func"]
