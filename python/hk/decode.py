"""hk.attention_with_kvcache: flash-attention's flash_attn_with_kvcache (decode attention over a KV cache) on
hk::attention_decode, as a torch op.

q (B, Sq, Hq, D) with Sq from 1 to 16; k_cache / v_cache contiguous (B, S_max, Hkv, D), or paged (num_blocks,
page_size, Hkv, D) with block_table (B, max_blocks) int32 (any page size); cache_seqlens (B) int32 (or an int for
every sequence): the keys each sequence has in the cache. GQA when Hq is a multiple of Hkv; causal aligned
bottom-right (query i sees keys j <= i + seqlen - Sq); window_size (left, right), -1 unbounded; softmax_scale
defaults to 1 / sqrt(D). Returns out, or (out, softmax_lse (B, Hq, Sq) fp32) with return_softmax_lse=True.

FP8 caches: k_cache / v_cache in the device's e4m3, torch.float8_e4m3fnuz on gfx942 or torch.float8_e4m3fn on gfx950
(bf16 / f16 q), with flash-attention's k_descale / v_descale: fp32 tensors of 1 entry (per tensor) or Hkv entries
(per KV head: (Hkv,) or (1, Hkv)), or None (1); the cached values are the codes times the descales.

Not yet in hk's decode kernel, and refused with a sentence: appending new k / v into the cache (k, v), rotary
(rotary_cos / rotary_sin), cache_batch_idx, cache_leftpad, softcap > 0 and alibi_slopes. num_splits is accepted and
ignored: hk picks the split of the keys itself (deterministically).
"""
from typing import Optional

import torch

from . import _C, _runtime as rt

_TYPES = (torch.bfloat16, torch.float16)


def _fp8_type():
    """The torch dtype of the device's e4m3 (FNUZ on gfx942, OCP e4m3fn on gfx950)."""
    return torch.float8_e4m3fnuz if _C.device_arch().startswith("gfx942") else torch.float8_e4m3fn


def _descale(entry, name, t, heads_kv):
    """(tensor, per_head) for a descale: None, or fp32 with 1 or heads_kv entries."""
    if t is None:
        return None, False
    rt.check_tensor(entry, name, t)
    if t.dtype != torch.float32:
        raise ValueError(f"hk.{entry}: {name} must be float32, not {str(t.dtype).replace('torch.', '')}")
    if t.numel() not in (1, heads_kv) or t.dim() > 2 or (t.dim() == 2 and t.shape[0] != 1):
        raise ValueError(f"hk.{entry}: {name} must hold 1 (per tensor) or {heads_kv} (per KV head) entries, "
                         f"got shape {tuple(t.shape)}")
    return t.contiguous().reshape(-1), t.numel() > 1


def _strides(t):
    return _C.Strides(t.stride(0), t.stride(1), t.stride(2))


@torch.library.custom_op("hk::attention_with_kvcache", mutates_args=())
def _decode(q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, cache_seqlens: torch.Tensor,
            block_table: Optional[torch.Tensor], softmax_scale: float, causal: bool, window_left: int,
            window_right: int, k_descale: Optional[torch.Tensor],
            v_descale: Optional[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    entry = "attention_with_kvcache"
    ty = rt.scalar_type(entry, "q", q.dtype, _TYPES)
    if k_cache.dtype in (torch.float8_e4m3fnuz, torch.float8_e4m3fn):
        fp8 = _fp8_type()
        if k_cache.dtype != fp8:
            raise ValueError(f"hk.{entry}: k_cache is {str(k_cache.dtype).replace('torch.', '')}, but this device's "
                             f"e4m3 is {str(fp8).replace('torch.', '')}")
        kv_ty = _C.scalar_type.fp8_e4m3
    else:
        kv_ty = rt.scalar_type(entry, "k_cache", k_cache.dtype, _TYPES)
    if kv_ty != _C.scalar_type.fp8_e4m3 and (k_descale is not None or v_descale is not None):
        raise ValueError(f"hk.{entry}: k_descale / v_descale apply to fp8 caches only")
    if v_cache.dtype != k_cache.dtype:
        raise ValueError(f"hk.{entry}: v_cache is {v_cache.dtype}, k_cache {k_cache.dtype}; they must match")
    for name, t in (("cache_seqlens", cache_seqlens), ("block_table", block_table)):
        if t is not None and t.dtype != torch.int32:
            raise ValueError(f"hk.{entry}: {name} must be int32, not {str(t.dtype).replace('torch.', '')}")
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
    k_descale, p.k_descale_per_head = _descale(entry, "k_descale", k_descale, p.heads_kv)
    v_descale, p.v_descale_per_head = _descale(entry, "v_descale", v_descale, p.heads_kv)
    tensors = rt.bind(p, q=q, k_cache=k_cache, v_cache=v_cache, o=out, lse=lse, cache_seqlens=cache_seqlens,
                      block_table=block_table, k_descale=k_descale, v_descale=v_descale)
    rt.launch(_C.attention_decode, p, tensors)
    return out, lse


@_decode.register_fake
def _(q, k_cache, v_cache, cache_seqlens, block_table, softmax_scale, causal, window_left, window_right, k_descale,
      v_descale):
    return q.new_empty(q.shape), q.new_empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32)


def attention_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None,
                           cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None, block_table=None,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                           rotary_interleaved=True, alibi_slopes=None, num_splits=0, return_softmax_lse=False,
                           k_descale=None, v_descale=None):
    """flash_attn_with_kvcache's arguments and result (see the module's docstring for what hk refuses)."""
    entry = "attention_with_kvcache"
    for name, value in (("k", k), ("v", v), ("rotary_cos", rotary_cos), ("rotary_sin", rotary_sin),
                        ("cache_batch_idx", cache_batch_idx), ("cache_leftpad", cache_leftpad),
                        ("alibi_slopes", alibi_slopes)):
        if value is not None:
            raise NotImplementedError(f"hk.{entry}: {name} is not supported by hk's decode kernel yet")
    if softcap != 0.0:
        raise NotImplementedError(f"hk.{entry}: softcap is not supported by hk's decode kernel yet")
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        rt.check_tensor(entry, name, t, 4)
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
                       int(right), k_descale, v_descale)
    return (out, lse) if return_softmax_lse else out
