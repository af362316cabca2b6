"""hk.gemm against torch's matmul in float64, forward and gradients, and its argument checks."""
import pytest
import torch

import hk
from conftest import assert_close, rand


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("m,n,k,b_transposed", [(96, 80, 64, False), (33, 130, 40, True)])
def test_forward_and_gradients(dtype, m, n, k, b_transposed):
    a = rand(m, k, dtype=dtype).requires_grad_()
    b = rand(*((n, k) if b_transposed else (k, n)), dtype=dtype).requires_grad_()
    out = hk.gemm(a, b, b_transposed=b_transposed, alpha=0.5)
    assert out.dtype == (torch.bfloat16 if dtype == torch.bfloat16 else torch.float32)
    a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    ref = 0.5 * (a64 @ (b64.t() if b_transposed else b64))
    assert_close(out, ref, out.dtype if out.dtype != torch.float32 else dtype, ulps=k ** 0.5, what="C")

    grad = rand(m, n, dtype=out.dtype)
    out.backward(grad)
    # hk's backward reads dC in the inputs' type: the reference sees the same quantized dC.
    ref.backward(grad.to(dtype).double())
    assert a.grad.dtype == dtype and b.grad.dtype == dtype
    assert_close(a.grad, a64.grad, dtype, ulps=2 * n ** 0.5, what="dA")
    assert_close(b.grad, b64.grad, dtype, ulps=2 * m ** 0.5, what="dB")


def test_strided_operands_beta_and_batched_rows():
    # a is a transposed view and b a column slice: both reach the kernel without the caller copying.
    a = rand(64, 48, dtype=torch.bfloat16).t()  # (48, 64), columns strided
    b = rand(64, 100, dtype=torch.bfloat16)[:, 10:90]
    c = rand(48, 80, dtype=torch.float32)
    out = hk.gemm(a, b, out_dtype=torch.float32, beta=-1.0, c=c)
    assert_close(out, a.double() @ b.double() - c.double(), torch.bfloat16, ulps=8, what="C")
    x = rand(2, 3, 64, dtype=torch.bfloat16)
    w = rand(32, 64, dtype=torch.bfloat16)
    y = hk.gemm(x, w, b_transposed=True, out_dtype=torch.float32)
    assert y.shape == (2, 3, 32)
    assert_close(y, torch.nn.functional.linear(x.double(), w.double()), torch.bfloat16, ulps=8, what="linear")


def test_beta_gradient():
    a = rand(16, 32, dtype=torch.bfloat16)
    b = rand(32, 24, dtype=torch.bfloat16)
    c = rand(16, 24, dtype=torch.float32).requires_grad_()
    hk.gemm(a, b, out_dtype=torch.float32, beta=3.0, c=c).sum().backward()
    assert torch.equal(c.grad, torch.full_like(c, 3.0))


def test_bad_inputs():
    a = rand(16, 32, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="inner dimensions"):
        hk.gemm(a, rand(16, 8, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="same type"):
        hk.gemm(a, rand(32, 8, dtype=torch.float16))
    with pytest.raises(ValueError, match="float32"):
        hk.gemm(a.float(), rand(32, 8, dtype=torch.float32))
    with pytest.raises(ValueError, match="out_dtype"):
        hk.gemm(a, rand(32, 8, dtype=torch.bfloat16), out_dtype=torch.float16)
    with pytest.raises(ValueError, match="on meta"):
        hk.gemm(a.to("meta"), rand(32, 8, dtype=torch.bfloat16).to("meta"))
    # hk's own validation: its message reaches Python.
    with pytest.raises(ValueError, match="hk::gemm"):
        hk.gemm(rand(0, 32, dtype=torch.bfloat16), rand(32, 8, dtype=torch.bfloat16))
