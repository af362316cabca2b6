"""hk.layer_norm and hk.rms_norm with fused dropout and residual against torch's norms in float64."""
import pytest
import torch
import torch.nn.functional as F

import hk
from conftest import assert_close, rand


def _reference(rms, x, weight, bias, residual, mask, p, eps):
    r = x * mask / (1 - p) if p > 0 else x
    if residual is not None:
        r = r + residual
    if rms:
        y = F.rms_norm(r, (r.shape[-1],), weight, eps)
    else:
        y = F.layer_norm(r, (r.shape[-1],), weight, bias, eps)
    return y, r


@pytest.mark.parametrize("rms", [False, True])
@pytest.mark.parametrize("dtype,weight_dtype,p", [
    (torch.bfloat16, torch.float32, 0.0), (torch.float16, torch.float16, 0.2), (torch.float32, torch.float32, 0.1)])
def test_forward_and_gradients(rms, dtype, weight_dtype, p):
    shape, cols = (3, 7, 96), 96
    x = rand(*shape, dtype=dtype).requires_grad_()
    residual = rand(*shape, dtype=dtype).requires_grad_()
    weight = (1 + 0.1 * rand(cols, dtype=torch.float64)).to(weight_dtype).requires_grad_()
    bias = None if rms else rand(cols, dtype=weight_dtype).requires_grad_()
    norm = hk.rms_norm if rms else hk.layer_norm
    extra = {} if rms else {"bias": bias}
    y, r, mask = norm(x, weight, residual=residual, dropout_p=p, prenorm=True, return_dropout_mask=True, **extra)
    if p > 0:
        kept = mask.double().mean().item()
        assert abs(kept - (1 - p)) < 0.05, f"kept fraction {kept} for p = {p}"
        again = norm(x.detach(), weight.detach(), residual=residual.detach(), dropout_p=p, return_dropout_mask=True,
                     seed=123, **extra)[1]
        assert torch.equal(again, norm(x.detach(), weight.detach(), residual=residual.detach(), dropout_p=p,
                                       return_dropout_mask=True, seed=123, **extra)[1]), "same seed, same mask"
    leaves = [t.detach().double().requires_grad_() for t in (x, weight, residual)]
    b64 = None if rms else bias.detach().double().requires_grad_()
    y_ref, r_ref = _reference(rms, leaves[0], leaves[1], b64, leaves[2], mask.double(), p, 1e-5)
    assert_close(r, r_ref, dtype, ulps=2, what="residual_out")
    assert_close(y, y_ref, dtype, ulps=8, what="y")

    dy, dr = rand(*shape, dtype=dtype), rand(*shape, dtype=dtype)
    torch.autograd.backward((y, r), (dy, dr))
    torch.autograd.backward((y_ref, r_ref), (dy.double(), dr.double()))
    # Gradients are as exact as the activations: the backward reads r rounded to their type.
    assert_close(x.grad, leaves[0].grad, dtype, ulps=16, what="dx")
    assert_close(residual.grad, leaves[2].grad, dtype, ulps=16, what="dresidual")
    assert_close(weight.grad, leaves[1].grad, dtype, ulps=16 * 21 ** 0.5, what="dweight")
    if not rms:
        assert_close(bias.grad, b64.grad, dtype, ulps=16 * 21 ** 0.5, what="dbias")


# gradcheck warns that the inputs are not float64: hk has no float64 kernels; fp32 with a wide eps suffices.
@pytest.mark.filterwarnings("ignore:Input #")
@pytest.mark.parametrize("rms", [False, True])
def test_gradcheck(rms):
    x = rand(4, 32, dtype=torch.float32).requires_grad_()
    residual = rand(4, 32, dtype=torch.float32).requires_grad_()
    weight = rand(32, dtype=torch.float32).requires_grad_()
    bias = rand(32, dtype=torch.float32).requires_grad_()
    if rms:
        fn, inputs = (lambda a, w, res: hk.rms_norm(a, w, residual=res)), (x, weight, residual)
    else:
        fn, inputs = (lambda a, w, bb, res: hk.layer_norm(a, w, bb, residual=res)), (x, weight, bias, residual)
    assert torch.autograd.gradcheck(fn, inputs, eps=1e-2, atol=2e-2, rtol=2e-2, fast_mode=True)


def test_without_residual_or_dropout():
    x = rand(5, 40, dtype=torch.bfloat16).requires_grad_()
    w = rand(40, dtype=torch.bfloat16)
    y = hk.rms_norm(x, w)
    y_ref = F.rms_norm(x.detach().double(), (40,), w.double(), 1e-5)
    assert_close(y, y_ref, torch.bfloat16, ulps=8, what="y")
    y.sum().backward()
    assert x.grad.shape == x.shape


def test_bad_inputs():
    x = rand(4, 32, dtype=torch.bfloat16)
    w = rand(32, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="weight"):
        hk.layer_norm(x, w[:16])
    with pytest.raises(ValueError, match="dropout_p"):
        hk.layer_norm(x, w, dropout_p=1.0)
    with pytest.raises(ValueError, match="residual"):
        hk.rms_norm(x, w, residual=x.float())
    with pytest.raises(ValueError, match="float64"):
        hk.rms_norm(x.double(), w.double())
    # hk's own validation: more columns than the kernel takes; a weight of a third type.
    wide = rand(1, 20000, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="hk::"):
        hk.layer_norm(wide, rand(20000, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="hk::"):
        hk.layer_norm(x, w.half())
