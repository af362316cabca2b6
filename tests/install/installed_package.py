"""The installed hk package imports and runs one checked GEMM on vgpu, found through its run path alone."""
import torch

import hk

a = torch.ones(70, 40, dtype=torch.bfloat16)
c = hk.gemm(a, a.t(), out_dtype=torch.float32)  # b read in place as an N x K matrix
assert bool((c == 40).all()), c
print(f"installed hk package ({hk.__file__}): gemm ok")
