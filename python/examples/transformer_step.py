"""One training step of a small pre-norm transformer block on hk's kernels, checked against the same block in torch.

    x -> rms_norm -> Q, K, V (hk.gemm) -> rotary(Q, K) -> causal attention -> output projection (hk.gemm)
      -> dropout-free residual add + layer_norm (fused, prenorm) -> MLP (hk.gemm, GELU, hk.gemm) + residual -> loss

Run with `./hk python python/examples/transformer_step.py`; it prints the loss of both blocks and the largest gradient
error, and exits non-zero if they disagree. On vgpu (the default build) every hk op runs the gfx942 or gfx950 machine
code of HK_VGPU_ARCH.
"""
import math
import sys

import torch
import torch.nn.functional as F

import hk

BATCH, SEQ, HEADS, HEAD_DIM, MLP = 2, 64, 2, 64, 256
MODEL = HEADS * HEAD_DIM
DTYPE = torch.bfloat16


def parameters(seed=0):
    g = torch.Generator().manual_seed(seed)

    def w(*shape, scale):
        return (torch.randn(*shape, generator=g) * scale).to(DTYPE).requires_grad_()

    return {
        "norm1": (1 + 0.1 * torch.randn(MODEL, generator=g)).requires_grad_(),  # fp32 norm weights
        "wqkv": w(3 * MODEL, MODEL, scale=MODEL ** -0.5),  # (out, in) as nn.Linear: hk.gemm with b_transposed
        "wo": w(MODEL, MODEL, scale=MODEL ** -0.5),
        "norm2": (1 + 0.1 * torch.randn(MODEL, generator=g)).requires_grad_(),
        "norm2_bias": (0.1 * torch.randn(MODEL, generator=g)).requires_grad_(),
        "w1": w(MLP, MODEL, scale=MODEL ** -0.5),
        "w2": w(MODEL, MLP, scale=MLP ** -0.5),
    }


def tables():
    inv = 10000.0 ** (-torch.arange(0, HEAD_DIM, 2, dtype=torch.float64) / HEAD_DIM)
    angles = torch.arange(SEQ, dtype=torch.float64)[:, None] * inv[None, :]
    return angles.cos().float(), angles.sin().float()


def hk_block(x, p, cos, sin):
    h = hk.rms_norm(x, p["norm1"])
    qkv = hk.gemm(h, p["wqkv"], b_transposed=True).view(BATCH, SEQ, 3, HEADS, HEAD_DIM)
    q, k, v = qkv.unbind(dim=2)
    q, k = hk.rotary(q, cos, sin), hk.rotary(k, cos, sin)
    a = hk.attention(q, k, v, causal=True).reshape(BATCH, SEQ, MODEL)
    o = hk.gemm(a, p["wo"], b_transposed=True)
    h2, r = hk.layer_norm(o, p["norm2"], p["norm2_bias"], residual=x, prenorm=True)
    m = F.gelu(hk.gemm(h2, p["w1"], b_transposed=True))
    return hk.gemm(m, p["w2"], b_transposed=True, out_dtype=torch.float32) + r


def torch_block(x, p, cos, sin):
    """The same block in plain torch, in float32 from the same bf16 values, rounding where hk's ops round."""
    bf = lambda t: t.to(DTYPE).float()  # noqa: E731 (hk's bf16 outputs)
    f = {k: v.float() for k, v in p.items()}
    h = bf(F.rms_norm(x.float(), (MODEL,), f["norm1"], 1e-5))
    qkv = bf(h @ f["wqkv"].t()).view(BATCH, SEQ, 3, HEADS, HEAD_DIM)
    q, k, v = qkv.unbind(dim=2)

    def rot(t):
        c, s = cos[None, :, None, :], sin[None, :, None, :]
        a, b = t[..., :HEAD_DIM // 2], t[..., HEAD_DIM // 2:]
        return bf(torch.cat((a * c - b * s, a * s + b * c), dim=-1))

    q, k = rot(q), rot(k)
    mask = torch.ones(SEQ, SEQ, dtype=torch.bool).tril()  # Sq == Sk: top-left and bottom-right agree
    a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=mask)
    a = bf(a.transpose(1, 2).reshape(BATCH, SEQ, MODEL))
    o = bf(a @ f["wo"].t())
    r = bf(o + x.float())
    h2 = bf(F.layer_norm(r, (MODEL,), f["norm2"], f["norm2_bias"], 1e-5))
    m = bf(F.gelu(bf(h2 @ f["w1"].t())))
    return m @ f["w2"].t() + r


def loss_of(y, target):
    return (y.float() - target).pow(2).mean()


def step(block, params, x, target, cos, sin, lr):
    loss = loss_of(block(x, params, cos, sin), target)
    loss.backward()
    grads = {k: v.grad.detach().float().clone() for k, v in params.items()}
    with torch.no_grad():
        updated = {k: (v.float() - lr * v.grad.float()).to(v.dtype) for k, v in params.items()}
    return loss.detach(), grads, updated


def run(lr=0.1):
    """(loss_hk, loss_torch, worst relative gradient error). Raises AssertionError if they disagree."""
    torch.manual_seed(0)
    x = torch.randn(BATCH, SEQ, MODEL).to(DTYPE)
    target = torch.randn(BATCH, SEQ, MODEL)
    cos, sin = tables()
    loss_hk, grads_hk, new_hk = step(hk_block, parameters(), x, target, cos, sin, lr)
    loss_ref, grads_ref, new_ref = step(torch_block, parameters(), x, target, cos, sin, lr)
    assert math.isclose(loss_hk.item(), loss_ref.item(), rel_tol=1e-2), f"loss {loss_hk.item()} vs {loss_ref.item()}"
    worst = 0.0
    for name in grads_ref:
        g, ref = grads_hk[name], grads_ref[name]
        err = ((g - ref).norm() / ref.norm()).item()
        worst = max(worst, err)
        assert err < 5e-2, f"gradient of {name}: relative error {err:.3g}"
        # The updated weights differ by the step's gradient difference, plus one rounding to their type.
        change = (new_hk[name].float() - new_ref[name].float()).abs().max().item()
        bound = lr * (g - ref).abs().max().item() + 2 ** -7 * new_ref[name].float().abs().max().item()
        assert change <= bound, f"updated {name} differs by {change} > {bound}"
    return loss_hk.item(), loss_ref.item(), worst


if __name__ == "__main__":
    loss_hk, loss_ref, worst = run()
    print(f"loss: hk {loss_hk:.6f}, torch {loss_ref:.6f}")
    print(f"gradients: largest relative error {worst:.3g}; SGD step applied to both blocks")
    sys.exit(0)
