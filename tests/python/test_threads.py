"""Every op from many threads at once, on tensors the threads share and on tensors of their own, forward and backward:
each thread's results are bit-identical to a single-threaded run (vgpu runs each launch in its calling thread, and
each call registers the host memory it uses; a shared tensor stays registered until the last call using it ends)."""
import threading

import torch

import hk
from conftest import rand, rotary_tables

THREADS = 8


def _inputs(seed):
    g = torch.Generator().manual_seed(seed)
    cos, sin = rotary_tables(40, 32)
    return {
        "a": rand(48, 40, dtype=torch.bfloat16, generator=g),
        "b": rand(56, 40, dtype=torch.bfloat16, generator=g),
        "q": rand(1, 40, 4, 64, dtype=torch.bfloat16, generator=g),
        "k": rand(1, 40, 2, 64, dtype=torch.bfloat16, generator=g),
        "v": rand(1, 40, 2, 64, dtype=torch.bfloat16, generator=g),
        "x": rand(2, 24, 96, dtype=torch.bfloat16, generator=g),
        "w": 1 + 0.1 * rand(96, dtype=torch.float32, generator=g),
        "cos": cos, "sin": sin,
    }


def _every_op(t):
    """Runs each op forward and backward on the tensors of `t` (read, never written); returns every result."""
    out = {}
    a, b = t["a"].clone().requires_grad_(), t["b"]
    c = hk.gemm(a, b, b_transposed=True)
    c.sum().backward()
    out["gemm"], out["gemm.da"] = c.detach(), a.grad
    q = t["q"].clone().requires_grad_()
    o = hk.attention(q, t["k"], t["v"], causal=True)
    o.float().square().sum().backward()
    out["attention"], out["attention.dq"] = o.detach(), q.grad
    # Views of the shared tensors, overlapping within one call: q and a slice of q's own storage.
    out["attention.views"] = hk.attention(t["q"][:, :32], t["q"][:, 8:, :2], t["q"][:, 8:, 2:])
    x = t["x"].clone().requires_grad_()
    y = hk.layer_norm(x, t["w"], residual=t["x"])
    y.float().sum().backward()
    out["layer_norm"], out["layer_norm.dx"] = y.detach(), x.grad
    out["rms_norm"] = hk.rms_norm(t["x"], t["w"])
    out["rotary"] = hk.rotary(t["q"], t["cos"], t["sin"])
    return out


def _run_threads(work):
    results, errors = [None] * THREADS, []

    def body(i):
        try:
            results[i] = work(i)
        except Exception as e:  # reported by the main thread
            errors.append(f"thread {i}: {e!r}")

    threads = [threading.Thread(target=body, args=(i,)) for i in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, "\n".join(errors)
    return results


def _assert_identical(got, want, who):
    for name, w in want.items():
        assert torch.equal(got[name], w), f"{who}: {name} differs from the single-threaded run"


def test_shared_and_private_tensors_from_many_threads():
    shared = _inputs(1)
    private = [_inputs(100 + i) for i in range(THREADS)]
    want_shared = _every_op(shared)
    want_private = [_every_op(p) for p in private]

    # Each thread runs every op twice: once on the shared tensors, once on its own.
    results = _run_threads(lambda i: (_every_op(shared), _every_op(private[i])))
    for i, (on_shared, on_private) in enumerate(results):
        _assert_identical(on_shared, want_shared, f"thread {i}, shared tensors")
        _assert_identical(on_private, want_private[i], f"thread {i}, private tensors")
