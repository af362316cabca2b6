"""hk.attention and hk.attention_varlen: flash-attention's forward on hk's kernel, as torch ops.

The semantics are flash-attention's (flash_attn_func / flash_attn_varlen_func): (B, S, H, D) tensors, GQA when
Hq is a multiple of Hkv, causal masks aligned bottom-right (query i sees keys j <= i + Sk - Sq), sliding windows
(left, right) with -1 unbounded, the default scale 1 / sqrt(D). flash-attention's keyword names softmax_scale and
window_size are accepted as well as scale and window.

Dropout (dropout_p > 0, for training) is flash-attention's: each element of the softmax's P is dropped with
probability p and the kept ones are scaled by 1 / (1 - p) in P V (the LSE takes the whole P). The mask draws 8 random
bits an element, kept when they are <= floor(255 (1 - p)) (flash-attention's rule: a kept fraction within 1/256 of
1 - p; p at most 1 - 2^-8), from Philox4x32-7 (hk.dropout) keyed by a seed and an offset that each call draws from
torch's default (CPU) generator, as flash-attention draws its Philox seed and offset from torch's: torch.manual_seed
reproduces a run. The backward regenerates the same mask from the seed and offset saved with the forward.

FP8 (forward only, as flash-attention 3's): q, k and v in the device's e4m3 (torch.float8_e4m3fnuz on gfx942,
torch.float8_e4m3fn on gfx950), head dims 64 and 128, with q_descale, k_descale, v_descale (fp32, one element or
(B, Hkv), None for 1): each value is its code's times the descale of its sequence and KV head. The output is bf16 and
the LSE that of the true scaled scores. Q K^T runs on the fp8 MFMA (descales folded into the softmax's scale), P V in
bf16 (V decoded exactly into a bf16 workspace first; v_descale scales O). With softcap (the descales inside its
tanh, as flash-attention 3's); not with alibi_slopes or dropout.
"""
from typing import Optional

import torch

from . import _C, _runtime as rt

_TYPES = (torch.bfloat16, torch.float16)
# The device's e4m3 (hk's fp8_e4m3): FNUZ on gfx942, OCP on gfx950.
_FP8_TYPES = {"gfx942": torch.float8_e4m3fnuz, "gfx950": torch.float8_e4m3fn}


def _fp8_type():
    return _FP8_TYPES[rt.device_arch()]


def _is_fp8(dtype):
    return dtype in (torch.float8_e4m3fnuz, torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e5m2fnuz)


def _strides(t, varlen):
    """hk's (batch, row, head) strides of a (B, S, H, D) tensor, or of a packed (total, H, D) one."""
    if varlen:
        return _C.Strides(0, t.stride(0), t.stride(1))
    return _C.Strides(t.stride(0), t.stride(1), t.stride(2))


def _forward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, window_left, window_right,
             scale, softcap, sinks, alibi_slopes, dropout_p, seed, offset, descales=None):
    """hk::attention_forward; `descales` (q's, k's, v's, each (B, Hkv) fp32 contiguous): the FP8 forward."""
    varlen = cu_seqlens_q is not None
    entry = "attention_varlen" if varlen else "attention"
    fp8 = descales is not None
    ty = _C.scalar_type.fp8_e4m3 if fp8 else rt.scalar_type(entry, "q", q.dtype, _TYPES)
    q, k, v = (rt.unit_stride_last(t) for t in (q, k, v))
    out = torch.empty(q.shape[:-1] + v.shape[-1:], dtype=torch.bfloat16 if fp8 else q.dtype, device=q.device)
    p = _C.AttentionProblem()
    if varlen:
        p.batch = cu_seqlens_q.shape[0] - 1
        p.seqlen_q, p.seqlen_k = max_seqlen_q, max_seqlen_k
        lse = torch.empty((q.shape[1], q.shape[0]), dtype=torch.float32, device=q.device)
    else:
        p.batch, p.seqlen_q, p.seqlen_k = q.shape[0], q.shape[1], k.shape[1]
        lse = torch.empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32, device=q.device)
    p.heads_q, p.heads_kv, p.head_dim, p.head_dim_v = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    p.q_strides, p.k_strides, p.v_strides = _strides(q, varlen), _strides(k, varlen), _strides(v, varlen)
    p.o_strides = _strides(out, varlen)
    p.type, p.softmax_scale, p.softcap, p.causal = ty, scale, softcap, causal
    p.alibi_batch_stride = _alibi_stride(alibi_slopes)
    p.window_left, p.window_right = window_left, window_right
    _set_dropout(p, dropout_p, seed, offset)
    workspace = None
    if fp8:  # V decoded into bf16 (v's elements as the kernel addresses them: (B, Sk, Hkv, DV) or packed)
        workspace = torch.empty(v.shape, dtype=torch.bfloat16, device=v.device)
        p.workspace_bytes = workspace.numel() * 2
        p.descale_per_batch = p.descale_per_head = True
    q_ds, k_ds, v_ds = descales if fp8 else (None, None, None)
    tensors = rt.bind(p, q=q, k=k, v=v, o=out, lse=lse, cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                      sinks=sinks, alibi_slopes=alibi_slopes, q_descale=q_ds, k_descale=k_ds, v_descale=v_ds,
                      workspace=workspace)
    if q.numel() > 0:
        rt.launch(_C.attention_forward, p, tensors)
    return out, lse


@torch.library.custom_op("hk::attention", mutates_args=())
def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, window_left: int, window_right: int,
               scale: float, softcap: float, sinks: Optional[torch.Tensor],
               alibi_slopes: Optional[torch.Tensor], dropout_p: float, seed: int,
               offset: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _forward(q, k, v, None, None, 0, 0, causal, window_left, window_right, scale, softcap, sinks, alibi_slopes,
                    dropout_p, seed, offset)


@_attention.register_fake
def _(q, k, v, causal, window_left, window_right, scale, softcap, sinks, alibi_slopes, dropout_p, seed, offset):
    return q.new_empty(q.shape[:-1] + v.shape[-1:]), q.new_empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32)


@torch.library.custom_op("hk::attention_varlen", mutates_args=())
def _attention_varlen(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens_q: torch.Tensor,
                      cu_seqlens_k: torch.Tensor, max_seqlen_q: int, max_seqlen_k: int, causal: bool,
                      window_left: int, window_right: int, scale: float,
                      softcap: float, sinks: Optional[torch.Tensor],
                      alibi_slopes: Optional[torch.Tensor], dropout_p: float, seed: int,
                      offset: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _forward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, window_left,
                    window_right, scale, softcap, sinks, alibi_slopes, dropout_p, seed, offset)


@_attention_varlen.register_fake
def _(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, window_left, window_right, scale,
      softcap, sinks, alibi_slopes, dropout_p, seed, offset):
    return q.new_empty(q.shape[:-1] + v.shape[-1:]), q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32)


@torch.library.custom_op("hk::attention_fp8", mutates_args=())
def _attention_fp8(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, q_descale: torch.Tensor, k_descale: torch.Tensor,
                   v_descale: torch.Tensor, cu_seqlens_q: Optional[torch.Tensor], cu_seqlens_k: Optional[torch.Tensor],
                   max_seqlen_q: int, max_seqlen_k: int, causal: bool, window_left: int, window_right: int,
                   scale: float, softcap: float, sinks: Optional[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    return _forward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, window_left, window_right,
                    scale, softcap, sinks, None, 0.0, 0, 0, descales=(q_descale, k_descale, v_descale))


@_attention_fp8.register_fake
def _(q, k, v, q_descale, k_descale, v_descale, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal,
      window_left, window_right, scale, softcap, sinks):
    lse = (q.shape[1], q.shape[0]) if cu_seqlens_q is not None else (q.shape[0], q.shape[2], q.shape[1])
    return (q.new_empty(q.shape[:-1] + v.shape[-1:], dtype=torch.bfloat16), q.new_empty(lse, dtype=torch.float32))


def _fp8_backward(ctx, grad_out, grad_lse):
    raise NotImplementedError("hk.attention: the FP8 attention is forward-only and has no gradient (train in bf16 or "
                              "f16)")


_attention_fp8.register_autograd(_fp8_backward)


def _descales(entry, descales, batch, heads_kv):
    """q_descale, k_descale, v_descale (None: 1; one element, or (B, Hkv)) as the kernel takes them: (B, Hkv) fp32,
    contiguous."""
    out = []
    for name, d in zip(("q_descale", "k_descale", "v_descale"), descales):
        if d is None:
            out.append(torch.ones((batch, heads_kv), dtype=torch.float32, device=rt.DEVICE_TYPE))
            continue
        rt.check_tensor(entry, name, d)
        if not d.is_floating_point() or _is_fp8(d.dtype) or (d.numel() != 1 and tuple(d.shape) != (batch, heads_kv)):
            raise ValueError(f"hk.{entry}: {name} must be a float tensor of one element or of shape ({batch}, "
                             f"{heads_kv}) (batch, KV heads), got {tuple(d.shape)} {d.dtype}")
        out.append(d.to(torch.float32).reshape(-1).expand(batch * heads_kv).reshape(batch, heads_kv).contiguous())
    return out


def _fp8_call(entry, q, k, v, varlen, causal, wl, wr, scale, softcap, sinks, alibi_slopes, dropout_p, descales):
    """The FP8 forward (q, k, v fp8): checks and hk::attention_fp8. `varlen`: (cu_q, cu_k, max_q, max_k) or None."""
    fp8 = _fp8_type()
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dtype != fp8:
            raise ValueError(f"hk.{entry}: {name} is {str(t.dtype).replace('torch.', '')}, but this device's e4m3 is "
                             f"{str(fp8).replace('torch.', '')} (q, k and v all of it)")
    if alibi_slopes is not None or dropout_p:
        raise NotImplementedError(f"hk.{entry}: alibi_slopes and dropout_p are not supported with fp8 inputs yet (the "
                                  f"FP8 forward runs plain, causal, windowed attention, with softcap and sinks)")
    if q.shape[-1] != v.shape[-1] or q.shape[-1] not in (64, 128):
        raise ValueError(f"hk.{entry}: the FP8 forward runs head dims 64 and 128 (q, k and v alike), got "
                         f"{q.shape[-1]} and {v.shape[-1]}")
    batch = q.shape[0] if varlen is None else varlen[0].shape[0] - 1
    ds = _descales(entry, descales, batch, k.shape[-2])
    cu_q, cu_k, max_q, max_k = varlen if varlen is not None else (None, None, 0, 0)
    return _attention_fp8(q, k, v, *ds, cu_q, cu_k, max_q, max_k, causal, wl, wr, scale, softcap, sinks)


def _attention_backward(q, k, v, out, lse, grad_out, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal,
                        window_left, window_right, scale, softcap, sinks, alibi_slopes, dropout_p, seed, offset):
    """dQ, dK, dV and the sinks' gradient (empty without sinks) from hk::attention_backward. The one place the
    attention ops' autograd reaches the kernels."""
    return _attention_bwd(q, k, v, out, lse, grad_out.to(q.dtype), cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                          max_seqlen_k, causal, window_left, window_right, scale, softcap, sinks, alibi_slopes,
                          dropout_p, seed, offset)


@torch.library.custom_op("hk::attention_backward", mutates_args=())
def _attention_bwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, lse: torch.Tensor,
                   grad_out: torch.Tensor, cu_seqlens_q: Optional[torch.Tensor], cu_seqlens_k: Optional[torch.Tensor],
                   max_seqlen_q: int, max_seqlen_k: int, causal: bool, window_left: int, window_right: int,
                   scale: float, softcap: float, sinks: Optional[torch.Tensor],
                   alibi_slopes: Optional[torch.Tensor], dropout_p: float, seed: int,
                   offset: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    varlen = cu_seqlens_q is not None
    q, k, v, out, grad_out = (rt.unit_stride_last(t) for t in (q, k, v, out, grad_out))
    dq, dk, dv = (torch.empty(t.shape, dtype=t.dtype, device=t.device) for t in (q, k, v))
    dsinks = torch.empty((0,) if sinks is None else sinks.shape, dtype=torch.float32, device=q.device)
    workspace = torch.empty(lse.shape, dtype=torch.float32, device=lse.device)  # delta, laid out like the LSE
    p = _C.AttentionBackwardProblem()
    if varlen:
        p.batch, p.seqlen_q, p.seqlen_k = cu_seqlens_q.shape[0] - 1, max_seqlen_q, max_seqlen_k
    else:
        p.batch, p.seqlen_q, p.seqlen_k = q.shape[0], q.shape[1], k.shape[1]
    p.heads_q, p.heads_kv, p.head_dim, p.head_dim_v = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    p.q_strides, p.k_strides, p.v_strides = (_strides(t, varlen) for t in (q, k, v))
    p.o_strides, p.do_strides = _strides(out, varlen), _strides(grad_out, varlen)
    p.dq_strides, p.dk_strides, p.dv_strides = (_strides(t, varlen) for t in (dq, dk, dv))
    p.type = rt.scalar_type("attention", "q", q.dtype, _TYPES)
    p.softmax_scale, p.softcap, p.causal, p.window_left, p.window_right = scale, softcap, causal, window_left, window_right
    p.alibi_batch_stride = _alibi_stride(alibi_slopes)
    _set_dropout(p, dropout_p, seed, offset)
    p.workspace_bytes = workspace.numel() * 4
    tensors = rt.bind(p, q=q, k=k, v=v, o=out, dout=grad_out, lse=lse, dq=dq, dk=dk, dv=dv, workspace=workspace,
                      cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k, sinks=sinks, dsinks=dsinks,
                      alibi_slopes=alibi_slopes)
    if q.numel() > 0:
        rt.launch(_C.attention_backward, p, tensors)
    else:
        dk.zero_()
        dv.zero_()
        dsinks.zero_()
    return dq, dk, dv, dsinks


@_attention_bwd.register_fake
def _(q, k, v, out, lse, grad_out, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, window_left,
      window_right, scale, softcap, sinks, alibi_slopes, dropout_p, seed, offset):
    return (q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape),
            q.new_empty((0,) if sinks is None else sinks.shape, dtype=torch.float32))


_DENSE_INPUTS = 13  # hk::attention's inputs (hk::attention_varlen has four more: the offsets and longest lengths)


def _setup(ctx, inputs, output):
    q, k, v = inputs[:3]
    if len(inputs) == _DENSE_INPUTS:
        cu_q = cu_k = None
        max_q = max_k = 0
        causal, wl, wr, scale, softcap, sinks, alibi, dropout_p, seed, offset = inputs[3:]
    else:
        cu_q, cu_k, max_q, max_k, causal, wl, wr, scale, softcap, sinks, alibi, dropout_p, seed, offset = inputs[3:]
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse, cu_q, cu_k, sinks, alibi)
    ctx.args = (max_q, max_k, causal, wl, wr, scale, softcap, dropout_p, seed, offset)  # the mask's seed and offset too


def _grads(ctx, grad_out, grad_lse):
    q, k, v, out, lse, cu_q, cu_k, sinks, alibi = ctx.saved_tensors
    max_q, max_k, causal, wl, wr, scale, softcap, dropout_p, seed, offset = ctx.args
    if grad_lse is not None:
        # Checked where the gradient lives, without waiting for it on the host (a device assert on a ROCm build).
        torch._assert_async(grad_lse.eq(0).all(), "hk.attention: gradients through the returned LSE are not supported")
    dq, dk, dv, dsinks = _attention_backward(q, k, v, out, lse, grad_out, cu_q, cu_k, max_q, max_k, causal, wl, wr,
                                             scale, softcap, sinks, alibi, dropout_p, seed, offset)
    return dq, dk, dv, None if sinks is None else dsinks


def _backward(ctx, grad_out, grad_lse):
    dq, dk, dv, dsinks = _grads(ctx, grad_out, grad_lse)
    return dq, dk, dv, None, None, None, None, None, dsinks, None, None, None, None


def _backward_varlen(ctx, grad_out, grad_lse):
    dq, dk, dv, dsinks = _grads(ctx, grad_out, grad_lse)
    return dq, dk, dv, None, None, None, None, None, None, None, None, None, dsinks, None, None, None, None


_attention.register_autograd(_backward, setup_context=_setup)
_attention_varlen.register_autograd(_backward_varlen, setup_context=_setup)


def _options(entry, window, scale, softmax_scale, window_size, softcap):
    if softmax_scale is not None:
        if scale is not None:
            raise ValueError(f"hk.{entry}: give scale or softmax_scale, not both")
        scale = softmax_scale
    if window_size is not None:
        window = window_size
    if len(window) != 2:
        raise ValueError(f"hk.{entry}: window must be (left, right), got {window}")
    if scale is not None and not scale > 0:
        raise ValueError(f"hk.{entry}: scale must be positive, got {scale}")
    softcap = float(softcap or 0.0)
    if not (0.0 <= softcap < float("inf")):
        raise ValueError(f"hk.{entry}: softcap must be positive and finite, or 0 for none, got {softcap}")
    return int(window[0]), int(window[1]), float(scale or 0.0), softcap


def _check(entry, q, k, v, dim):
    for name, t in (("q", q), ("k", k), ("v", v)):
        rt.check_tensor(entry, name, t, dim=dim)
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"hk.{entry}: q, k and v must have one type, got {q.dtype}, {k.dtype}, {v.dtype}")
    if k.shape[:-1] != v.shape[:-1]:
        raise ValueError(f"hk.{entry}: k is {tuple(k.shape)} and v is {tuple(v.shape)}; they must match but for the "
                         f"head dim")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"hk.{entry}: q's head dimension {q.shape[-1]} differs from k's {k.shape[-1]}")


def _set_dropout(p, dropout_p, seed, offset):
    """The problem's dropout: p and the mask's (seed, offset) as the unsigned 64-bit values the kernels take."""
    p.dropout_p = dropout_p
    p.dropout_seed, p.dropout_offset = seed % 2**64, offset % 2**64


def draw_dropout_seed(dropout_p):
    """(seed, offset) of a call's dropout mask: two draws from torch's default (CPU) generator when dropout_p > 0
    (torch.manual_seed reproduces them), else (0, 0) and no draw."""
    if not dropout_p:
        return 0, 0
    seed, offset = torch.randint(0, 2**62, (2,), dtype=torch.int64).tolist()
    return seed, offset


def _dropout(entry, dropout_p, dropout_seed):
    dropout_p = float(dropout_p or 0.0)
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"hk.{entry}: dropout_p must be in [0, 1), got {dropout_p}")
    if float(torch.tensor(dropout_p, dtype=torch.float32)) > 1.0 - 2.0**-8:  # as the kernels see it (fp32)
        raise ValueError(f"hk.{entry}: dropout_p must be at most 1 - 2^-8, the mask's resolution: an element is kept "
                         f"when its 8 random bits are <= floor(255 (1 - p)), flash-attention's rule, so at least 1/256 "
                         f"of them are (got {dropout_p})")
    if dropout_seed is None:
        return (dropout_p, *draw_dropout_seed(dropout_p))
    if not isinstance(dropout_seed, (tuple, list)) or len(dropout_seed) != 2 or not all(isinstance(x, int) for x in dropout_seed):
        raise ValueError(f"hk.{entry}: dropout_seed must be (seed, offset), two ints, got {dropout_seed}")
    # the op's schema takes int64; the kernels read the same 64 bits unsigned
    return (dropout_p, *((x + 2**63) % 2**64 - 2**63 for x in dropout_seed))


def _alibi_stride(alibi_slopes):
    """hk's alibi_batch_stride: 0 for (H) slopes, H for (B, H)."""
    return 0 if alibi_slopes is None or alibi_slopes.dim() == 1 else alibi_slopes.shape[1]


def _alibi(entry, alibi_slopes, q, batch):
    """flash-attention's alibi_slopes, (H) or (B, H) fp32, as the kernels take them (contiguous)."""
    if alibi_slopes is None:
        return None
    rt.check_tensor(entry, "alibi_slopes", alibi_slopes)
    h = q.shape[-2]
    if alibi_slopes.dtype != torch.float32 or alibi_slopes.shape not in ((h,), (batch, h)):
        raise ValueError(f"hk.{entry}: alibi_slopes must be fp32 of shape ({h},) or ({batch}, {h}), got "
                         f"{tuple(alibi_slopes.shape)} {alibi_slopes.dtype}")
    return alibi_slopes.contiguous()


def _sinks(entry, sinks, q):
    """The sinks as the kernels take them: (Hq,) fp32, contiguous (a cast autograd carries back to their own type)."""
    if sinks is None:
        return None
    rt.check_tensor(entry, "sinks", sinks, dim=1)
    if sinks.shape[0] != q.shape[-2] or not sinks.is_floating_point():
        raise ValueError(f"hk.{entry}: sinks must be one float per query head ({q.shape[-2]}), got "
                         f"{tuple(sinks.shape)} {sinks.dtype}")
    return sinks.to(torch.float32).contiguous()


def _no_descales(entry, descales):
    if any(d is not None for d in descales):
        raise ValueError(f"hk.{entry}: q_descale, k_descale and v_descale apply to fp8 inputs only")


def attention(q, k, v, *, causal=False, window=(-1, -1), scale=None, return_lse=False, softmax_scale=None,
              window_size=None, softcap=0.0, sinks=None, alibi_slopes=None, dropout_p=0.0, dropout_seed=None,
              q_descale=None, k_descale=None, v_descale=None):
    """Softmax attention of q (B, Sq, Hq, D) over k (B, Sk, Hkv, D) and v (B, Sk, Hkv, DV); bf16 or f16; D = DV =
    64, 128, 192 or 256, or D 192 with DV 128 (DeepSeek-V3); softcap > 0
    caps each scaled score x to softcap * tanh(x / softcap) (Gemma 2); sinks (Hq,) adds one logit per query head to
    every row's softmax denominator, a key with no value (gpt-oss's attention sinks), and alibi_slopes (H) or (B, H)
    fp32 adds flash-attention's ALiBi bias -slope |i + Sk - Sq - j| to the (capped) scaled scores; dropout_p in [0, 1)
    drops P's elements (see the module's text), alone or with softcap and ALiBi (any combination, every D), the mask
    keyed by dropout_seed = (seed, offset) when given, else by two draws from torch's generator (hk.dropout.keep_mask gives a call's mask). Differentiable in q, k, v and sinks.
    FP8 (the module's text): q, k, v in the device's e4m3 with q_descale, k_descale, v_descale; bf16 output; forward only.

    Returns the output (B, Sq, Hq, DV), and with return_lse=True also the fp32 log-sum-exp (B, Hq, Sq) of each row's
    scaled scores. Differentiable in q, k and v once hk's attention backward is built in (see backward_available()).
    """
    _check("attention", q, k, v, 4)
    if q.shape[0] != k.shape[0]:
        raise ValueError(f"hk.attention: q has batch {q.shape[0]} and k has {k.shape[0]}")
    wl, wr, s, cap = _options("attention", window, scale, softmax_scale, window_size, softcap)
    if _is_fp8(q.dtype):
        out, lse = _fp8_call("attention", q, k, v, None, bool(causal), wl, wr, s, cap, _sinks("attention", sinks, q),
                             alibi_slopes, float(dropout_p or 0.0), (q_descale, k_descale, v_descale))
        return (out, lse) if return_lse else out
    _no_descales("attention", (q_descale, k_descale, v_descale))
    out, lse = _attention(q, k, v, bool(causal), wl, wr, s, cap, _sinks("attention", sinks, q),
                          _alibi("attention", alibi_slopes, q, q.shape[0]), *_dropout("attention", dropout_p, dropout_seed))
    return (out, lse) if return_lse else out


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, *, causal=False,
                     window=(-1, -1), scale=None, return_lse=False, softmax_scale=None, window_size=None,
                     softcap=0.0, sinks=None, alibi_slopes=None, dropout_p=0.0, dropout_seed=None, q_descale=None,
                     k_descale=None, v_descale=None):
    """attention over a packed batch: q (total_q, Hq, D), k (total_k, Hkv, D), v (total_k, Hkv, DV); sequence b is rows
    cu_seqlens[b] .. cu_seqlens[b + 1] - 1 (int32, B + 1 offsets). The LSE is (Hq, total_q)."""
    _check("attention_varlen", q, k, v, 3)
    for name, t in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        rt.check_tensor("attention_varlen", name, t, dim=1)
        if t.dtype != torch.int32:
            raise ValueError(f"hk.attention_varlen: {name} must be int32, got {t.dtype}")
    if cu_seqlens_q.shape != cu_seqlens_k.shape or cu_seqlens_q.shape[0] < 2:
        raise ValueError("hk.attention_varlen: cu_seqlens_q and cu_seqlens_k must both hold B + 1 >= 2 offsets")
    wl, wr, s, cap = _options("attention_varlen", window, scale, softmax_scale, window_size, softcap)
    if _is_fp8(q.dtype):
        varlen = (cu_seqlens_q.contiguous(), cu_seqlens_k.contiguous(), int(max_seqlen_q), int(max_seqlen_k))
        out, lse = _fp8_call("attention_varlen", q, k, v, varlen, bool(causal), wl, wr, s, cap,
                             _sinks("attention_varlen", sinks, q), alibi_slopes, float(dropout_p or 0.0),
                             (q_descale, k_descale, v_descale))
        return (out, lse) if return_lse else out
    _no_descales("attention_varlen", (q_descale, k_descale, v_descale))
    out, lse = _attention_varlen(q, k, v, cu_seqlens_q.contiguous(), cu_seqlens_k.contiguous(), int(max_seqlen_q),
                                 int(max_seqlen_k), bool(causal), wl, wr, s, cap, _sinks("attention_varlen", sinks, q),
                                 _alibi("attention_varlen", alibi_slopes, q, cu_seqlens_q.shape[0] - 1),
                                 *_dropout("attention_varlen", dropout_p, dropout_seed))
    return (out, lse) if return_lse else out
