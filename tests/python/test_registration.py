"""Each hk op is a well-formed torch custom op: schema, fake (meta) implementation and autograd registration agree
with what the op does (torch.library.opcheck; the slow torch.compile check is left out)."""
import pytest
import torch

import hk  # noqa: F401 (registers the ops)
from conftest import rand

CHECKS = ("test_schema", "test_autograd_registration", "test_faketensor")


def _cases():
    bf = torch.bfloat16
    yield "gemm", (rand(16, 32, dtype=bf).requires_grad_(), rand(32, 24, dtype=bf).requires_grad_(), bf, 1.0, 0.0,
                   None)
    yield "rotary", (rand(1, 8, 2, 16, dtype=torch.float32).requires_grad_(), None, None, None, 10000.0, 16, 0, False,
                     False)
    yield "norm", (rand(4, 32, dtype=torch.float32).requires_grad_(), rand(32, dtype=torch.float32).requires_grad_(),
                   rand(32, dtype=torch.float32).requires_grad_(), rand(4, 32, dtype=torch.float32).requires_grad_(),
                   False, 1e-5, 0.1, 7, 0)
    r, mean, rstd = rand(4, 32, dtype=torch.float32), rand(4, dtype=torch.float32), rand(4, dtype=torch.float32).abs()
    yield "norm_backward", (rand(4, 32, dtype=torch.float32), rand(4, 32, dtype=torch.float32), r, mean, rstd,
                            rand(32, dtype=torch.float32), False, True, True, 0.1, 7, 0)
    q = rand(1, 16, 2, 64, dtype=bf)
    yield "attention", (q, q, q, True, -1, -1, 0.0, 0.0, rand(2, dtype=torch.float32).requires_grad_(), None, 0.0, 0, 0)
    qg = rand(1, 16, 2, 64, dtype=bf).requires_grad_()
    yield "attention", (qg, qg, qg, False, -1, -1, 0.0, 0.0, None, None, 0.25, 2**62 + 5, 2**40)  # dropout
    packed = rand(20, 2, 64, dtype=bf)
    cu = torch.tensor([0, 7, 20], dtype=torch.int32)
    yield "attention_varlen", (packed, packed, packed, cu, cu, 13, 13, True, -1, -1, 0.0, 0.0, None,
                              rand(2, 2, dtype=torch.float32).abs(), 0.0, 0, 0)
    sinks = rand(2, dtype=torch.float32)
    out, lse = torch.ops.hk.attention(q, q, q, True, -1, -1, 0.0, 0.0, sinks, None, 0.0, 0, 0)
    yield "attention_backward", (q, q, q, out, lse, rand(1, 16, 2, 64, dtype=bf), None, None, 0, 0, True, -1, -1, 0.0, 0.0,
                                 sinks, None, 0.0, 0, 0)


@pytest.mark.parametrize("name,args", list(_cases()), ids=lambda v: v if isinstance(v, str) else "")
def test_opcheck(name, args):
    result = torch.library.opcheck(getattr(torch.ops.hk, name).default, args, test_utils=CHECKS)
    assert all(v == "SUCCESS" for v in result.values()), result
