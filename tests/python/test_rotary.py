"""hk.rotary against a float64 torch rotation, forward and gradients (gradcheck on fp32), and its argument checks."""
import pytest
import torch

import hk
from conftest import assert_close, rand, rotary_reference, rotary_tables


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("interleaved", [False, True])
def test_forward_and_gradient(dtype, interleaved):
    b, s, h, d, rotary_dim, offset = 2, 33, 3, 64, 32, 5
    cos, sin = rotary_tables(s + offset, rotary_dim)
    x = rand(b, s, h, d, dtype=dtype).requires_grad_()
    out = hk.rotary(x, cos, sin, interleaved=interleaved, seqlen_offset=offset)
    assert_close(out, rotary_reference(x.detach(), cos, sin, interleaved, offset), dtype, ulps=2, what="rotary")
    grad = rand(b, s, h, d, dtype=dtype)
    out.backward(grad)
    x64 = x.detach().double().requires_grad_()
    rotary_reference(x64, cos, sin, interleaved, offset).backward(grad.double())
    assert_close(x.grad, x64.grad, dtype, ulps=2, what="dx")


def test_base_angles_match_tables():
    x = rand(1, 20, 2, 64, dtype=torch.float32)
    cos, sin = rotary_tables(20, 64, base=10000.0)
    assert_close(hk.rotary(x, base=10000.0), rotary_reference(x, cos, sin, False), torch.float32, ulps=2**8,
                 what="computed angles")


# gradcheck warns that the inputs are not float64: hk has no float64 kernels; fp32 with a wide eps suffices.
@pytest.mark.filterwarnings("ignore:Input #")
def test_gradcheck():
    cos, sin = rotary_tables(8, 16)
    x = rand(1, 8, 2, 16, dtype=torch.float32).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: hk.rotary(t, cos, sin), (x,), eps=1e-2, atol=1e-3, rtol=1e-3,
                                    fast_mode=True)


def test_bad_inputs():
    x = rand(1, 8, 2, 16, dtype=torch.bfloat16)
    cos, sin = rotary_tables(8, 16)
    with pytest.raises(ValueError, match="4 dimensions"):
        hk.rotary(x[0], cos, sin)
    with pytest.raises(ValueError, match="cos and sin"):
        hk.rotary(x, cos)
    with pytest.raises(ValueError, match="either"):
        hk.rotary(x, cos, sin, base=10000.0)
    with pytest.raises(ValueError, match="float64"):
        hk.rotary(x.double(), cos, sin)
    # hk's own validation: tables wider than the head, too few table rows.
    wide_cos, wide_sin = rotary_tables(8, 64)
    with pytest.raises(ValueError, match="hk::rotary"):
        hk.rotary(x, wide_cos, wide_sin)
    with pytest.raises(ValueError, match="hk::rotary"):
        hk.rotary(x, cos, sin, seqlen_offset=4)
