"""hk.attention_with_kvcache: flash-attention's flash_attn_with_kvcache (decode attention over a KV cache) on
hk::attention_decode, as a torch op.

q (B, Sq, Hq, D) with Sq from 1 to 16; k_cache / v_cache contiguous (B, S_max, Hkv, D), or paged (num_blocks,
page_size, Hkv, D) with block_table (B, max_blocks) int32 (any page size); cache_seqlens (B) int32 (or an int for
every sequence): the keys each sequence has in the cache. GQA when Hq is a multiple of Hkv; causal aligned
bottom-right (query i sees keys j <= i + seqlen - Sq); window_size (left, right), -1 unbounded; softmax_scale
defaults to 1 / sqrt(D). Returns out, or (out, softmax_lse (B, Hq, Sq) fp32) with return_softmax_lse=True.

k, v (B, Sk_new, Hkv, D), the caches' dtype: written into k_cache / v_cache in place at rows cache_seqlens[b] + i
(through block_table when paged) before the attention, which sees cache_seqlens + Sk_new keys; cache_seqlens is not
changed (the caller advances it), as in flash-attention. rotary_cos / rotary_sin (seqlen_ro, rotary_dim / 2), q's dtype
or float32, rotate the new keys at positions cache_seqlens + i and q at cache_seqlens + i when causal or windowed, else
every query at cache_seqlens (flash-attention's rule); rotary_interleaved pairs (2i, 2i + 1), else (i, i +
rotary_dim / 2). Any even rotary_dim up to D (flash-attention asks for multiples of 16). q itself is not changed.

FP8 caches: k_cache / v_cache in the device's e4m3, torch.float8_e4m3fnuz on gfx942 or torch.float8_e4m3fn on gfx950
(bf16 / f16 q), with flash-attention's k_descale / v_descale: fp32 tensors of 1 entry (per tensor), Hkv entries
(per KV head: (Hkv,) or (1, Hkv)) or (B, Hkv) (flash-attention 3's shape), or None (1); the cached values are the
codes times the descales. k / v appended to an fp8 cache are codes of its dtype (copied); rotary needs a cache of q's
dtype.

Not yet in hk's decode kernel, and refused with a sentence: cache_batch_idx, cache_leftpad, softcap > 0 and
alibi_slopes. num_splits is accepted and ignored: hk picks the split of the keys itself (deterministically).
"""
from typing import Optional

import torch

from . import _C, _runtime as rt

_TYPES = (torch.bfloat16, torch.float16)
_FP8 = (torch.float8_e4m3fnuz, torch.float8_e4m3fn)


def _name(dtype):
    return str(dtype).replace("torch.", "")


def _fp8_type():
    """The torch dtype of the device's e4m3 (FNUZ on gfx942, OCP e4m3fn on gfx950)."""
    return torch.float8_e4m3fnuz if rt.device_arch() == "gfx942" else torch.float8_e4m3fn


def _descale(entry, name, t, batch, heads_kv):
    """(tensor, per_head, per_batch) for a descale: None, or fp32 of 1, (Hkv,) / (1, Hkv) or (B, Hkv) entries."""
    if t is None:
        return None, False, False
    rt.check_tensor(entry, name, t)
    if t.dtype != torch.float32:
        raise ValueError(f"hk.{entry}: {name} must be float32, not {_name(t.dtype)}")
    if t.numel() == 1:
        return t.contiguous().reshape(-1), False, False
    if t.dim() == 1 and t.shape[0] == heads_kv or t.dim() == 2 and tuple(t.shape) == (1, heads_kv):
        return t.contiguous().reshape(-1), True, False
    if t.dim() == 2 and tuple(t.shape) == (batch, heads_kv):
        return t.contiguous().reshape(-1), True, True
    raise ValueError(f"hk.{entry}: {name} must hold 1 (per tensor), {heads_kv} (per KV head) or ({batch}, {heads_kv}) "
                     f"(per sequence and KV head) entries, got shape {tuple(t.shape)}")


def _strides(t):
    return _C.Strides(t.stride(0), t.stride(1), t.stride(2))


@torch.library.custom_op("hk::attention_with_kvcache", mutates_args=("k_cache", "v_cache"))
def _decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, cache_seqlens: torch.Tensor,
            block_table: Optional[torch.Tensor], softmax_scale: float, causal: bool, window_left: int,
            window_right: int, k_descale: Optional[torch.Tensor], v_descale: Optional[torch.Tensor],
            k: Optional[torch.Tensor], v: Optional[torch.Tensor], rotary_cos: Optional[torch.Tensor],
            rotary_sin: Optional[torch.Tensor], rotary_interleaved: bool) -> tuple[torch.Tensor, torch.Tensor]:
    entry = "attention_with_kvcache"
    ty = rt.scalar_type(entry, "q", q.dtype, _TYPES)
    if k_cache.dtype in _FP8:
        fp8 = _fp8_type()
        if k_cache.dtype != fp8:
            raise ValueError(f"hk.{entry}: k_cache is {_name(k_cache.dtype)}, but this device's e4m3 is {_name(fp8)}")
        kv_ty = _C.scalar_type.fp8_e4m3
    else:
        kv_ty = rt.scalar_type(entry, "k_cache", k_cache.dtype, _TYPES)
    if kv_ty != _C.scalar_type.fp8_e4m3 and (k_descale is not None or v_descale is not None):
        raise ValueError(f"hk.{entry}: k_descale / v_descale apply to fp8 caches only")
    if v_cache.dtype != k_cache.dtype:
        raise ValueError(f"hk.{entry}: v_cache is {v_cache.dtype}, k_cache {k_cache.dtype}; they must match")
    for name, t in (("cache_seqlens", cache_seqlens), ("block_table", block_table)):
        if t is not None and t.dtype != torch.int32:
            raise ValueError(f"hk.{entry}: {name} must be int32, not {_name(t.dtype)}")
    append = k is not None
    if append:
        for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
            if t.stride(-1) != 1 and t.shape[-1] != 1:
                raise ValueError(f"hk.{entry}: {name} must have a contiguous last dimension to be appended to in place")
        for name, t in (("k", k), ("v", v)):
            if t.dtype != k_cache.dtype:
                raise ValueError(f"hk.{entry}: {name} is {_name(t.dtype)}; it is appended to a {_name(k_cache.dtype)} "
                                 f"cache and must have its dtype")
        if tuple(k.shape) != tuple(v.shape) or k.dim() != 4 or k.shape[0] != q.shape[0] or \
                tuple(k.shape[2:]) != tuple(k_cache.shape[2:]):
            raise ValueError(f"hk.{entry}: k {tuple(k.shape)} and v {tuple(v.shape)} must both be (batch {q.shape[0]}, "
                             f"seqlen_new, heads_kv {k_cache.shape[2]}, head dim {k_cache.shape[3]})")
        k, v = rt.unit_stride_last(k), rt.unit_stride_last(v)
    q, k_cache, v_cache = (rt.unit_stride_last(t) for t in (q, k_cache, v_cache))
    cache_seqlens = cache_seqlens.contiguous()
    if block_table is not None:
        block_table = block_table.contiguous()
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = torch.empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32, device=q.device)
    p = _C.AttentionDecodeProblem()
    p.batch, p.seqlen_q, p.heads_q, p.head_dim = q.shape[0], q.shape[1], q.shape[2], q.shape[3]
    p.heads_kv = k_cache.shape[2]
    if v_cache.shape != k_cache.shape or k_cache.shape[3] != q.shape[3]:
        raise ValueError(f"hk.{entry}: k_cache {tuple(k_cache.shape)} and v_cache {tuple(v_cache.shape)} must have "
                         f"one shape, with q's head dim {q.shape[3]}")
    p.cache_rows = k_cache.shape[1]
    if block_table is not None:
        if block_table.dim() != 2 or block_table.shape[0] != q.shape[0]:
            raise ValueError(f"hk.{entry}: block_table must be (batch, max_blocks), got {tuple(block_table.shape)}")
        p.num_blocks, p.max_blocks = k_cache.shape[0], block_table.shape[1]
    elif k_cache.shape[0] < q.shape[0]:
        raise ValueError(f"hk.{entry}: a contiguous cache needs one sequence per batch entry ({k_cache.shape[0]} < "
                         f"{q.shape[0]})")
    if cache_seqlens.shape != (q.shape[0],):
        raise ValueError(f"hk.{entry}: cache_seqlens must be ({q.shape[0]},), got {tuple(cache_seqlens.shape)}")
    p.q_strides, p.k_strides, p.v_strides, p.o_strides = (_strides(t) for t in (q, k_cache, v_cache, out))
    p.type, p.kv_type, p.softmax_scale, p.causal = ty, kv_ty, softmax_scale, causal
    p.window_left, p.window_right = window_left, window_right
    k_descale, p.k_descale_per_head, p.k_descale_per_batch = _descale(entry, "k_descale", k_descale, p.batch, p.heads_kv)
    v_descale, p.v_descale_per_head, p.v_descale_per_batch = _descale(entry, "v_descale", v_descale, p.batch, p.heads_kv)
    if append:
        p.seqlen_new, p.k_new_strides, p.v_new_strides = k.shape[1], _strides(k), _strides(v)
    if rotary_cos is not None:
        for name, t in (("rotary_cos", rotary_cos), ("rotary_sin", rotary_sin)):
            if t.dim() != 2 or tuple(t.shape) != tuple(rotary_cos.shape) or t.dtype != rotary_cos.dtype:
                raise ValueError(f"hk.{entry}: rotary_cos {tuple(rotary_cos.shape)} and rotary_sin "
                                 f"{tuple(rotary_sin.shape)} must be (seqlen_ro, rotary_dim / 2) of one dtype")
        if rotary_cos.dtype != torch.float32 and rotary_cos.dtype != q.dtype:
            raise ValueError(f"hk.{entry}: rotary_cos / rotary_sin must be float32 or q's dtype ({_name(q.dtype)}), "
                             f"not {_name(rotary_cos.dtype)}")
        rotary_cos, rotary_sin = rotary_cos.contiguous(), rotary_sin.contiguous()
        p.rotary_type = _C.scalar_type.fp32 if rotary_cos.dtype == torch.float32 else ty
        p.rotary_rows, p.rotary_dim = rotary_cos.shape[0], 2 * rotary_cos.shape[1]
        p.rotary_interleaved = rotary_interleaved
    tensors = rt.bind(p, q=q, k_cache=k_cache, v_cache=v_cache, o=out, lse=lse, cache_seqlens=cache_seqlens,
                      block_table=block_table, k_descale=k_descale, v_descale=v_descale, k_new=k, v_new=v,
                      rotary_cos=rotary_cos, rotary_sin=rotary_sin)
    rt.launch(_C.attention_decode, p, tensors)
    return out, lse


@_decode.register_fake
def _(q, k_cache, v_cache, cache_seqlens, block_table, softmax_scale, causal, window_left, window_right, k_descale,
      v_descale, k, v, rotary_cos, rotary_sin, rotary_interleaved):
    return q.new_empty(q.shape), q.new_empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32)


def attention_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None,
                           cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None, block_table=None,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                           rotary_interleaved=True, alibi_slopes=None, num_splits=0, return_softmax_lse=False,
                           k_descale=None, v_descale=None):
    """flash_attn_with_kvcache's arguments and result (see the module's docstring for what hk refuses)."""
    entry = "attention_with_kvcache"
    for name, value in (("cache_batch_idx", cache_batch_idx), ("cache_leftpad", cache_leftpad),
                        ("alibi_slopes", alibi_slopes)):
        if value is not None:
            raise NotImplementedError(f"hk.{entry}: {name} is not supported by hk's decode kernel yet")
    if softcap != 0.0:
        raise NotImplementedError(f"hk.{entry}: softcap is not supported by hk's decode kernel yet")
    if (k is None) != (v is None):
        raise ValueError(f"hk.{entry}: k and v are appended together; pass both or neither")
    if (rotary_cos is None) != (rotary_sin is None):
        raise ValueError(f"hk.{entry}: rotary_cos and rotary_sin come together; pass both or neither")
    if rotary_cos is not None and k is None:
        raise ValueError(f"hk.{entry}: rotary_cos / rotary_sin rotate q and the appended keys: they need k and v")
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache), ("k", k), ("v", v)):
        if t is not None:
            rt.check_tensor(entry, name, t, 4)
    for name, t in (("rotary_cos", rotary_cos), ("rotary_sin", rotary_sin)):
        if t is not None:
            rt.check_tensor(entry, name, t, 2)
    batch = q.shape[0]
    if cache_seqlens is None:
        cache_seqlens = torch.full((batch,), k_cache.shape[1], dtype=torch.int32, device=q.device)
    elif isinstance(cache_seqlens, int):
        cache_seqlens = torch.full((batch,), cache_seqlens, dtype=torch.int32, device=q.device)
    else:
        rt.check_tensor(entry, "cache_seqlens", cache_seqlens, 1)
    if block_table is not None:
        rt.check_tensor(entry, "block_table", block_table, 2)
    left, right = window_size
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    out, lse = _decode(q, k_cache, v_cache, cache_seqlens, block_table, float(scale), bool(causal), int(left),
                       int(right), k_descale, v_descale, k, v, rotary_cos, rotary_sin, bool(rotary_interleaved))
    return (out, lse) if return_softmax_lse else out
