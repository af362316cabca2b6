"""Where hk's tensors live and how a call reaches the kernels.

On vgpu (the default build) hk works on CPU tensors in place: each call registers the storages it reads and writes
with vgpu's HIP runtime for its duration and waits for the kernels. With a ROCm build (-DHK_USE_ROCM=ON) the tensors
are HIP tensors of a ROCm torch ("cuda" in torch) and the kernels run on torch's current stream.
"""
import torch

from . import _C, _config

USE_ROCM = _config.USE_ROCM
DEVICE_TYPE = "cuda" if USE_ROCM else "cpu"

SCALAR_TYPES = {
    torch.bfloat16: _C.scalar_type.bf16,
    torch.float16: _C.scalar_type.f16,
    torch.float32: _C.scalar_type.fp32,
}


def device_arch():
    """The architecture hk's kernels run on: "gfx942" or "gfx950" (the virtual device's, HK_VGPU_ARCH, on vgpu)."""
    return _C.device_arch()


def scalar_type(entry, name, dtype, allowed):
    """hk's element type for `dtype`, which must be one of `allowed`."""
    if dtype not in allowed:
        names = ", ".join(str(d).replace("torch.", "") for d in allowed)
        raise ValueError(f"hk.{entry}: {name} is {str(dtype).replace('torch.', '')}; expected {names}")
    return SCALAR_TYPES[dtype]


def check_tensor(entry, name, t, dim=None):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"hk.{entry}: {name} must be a torch.Tensor, not {type(t).__name__}")
    if t.device.type != DEVICE_TYPE:
        where = "HIP tensors (a ROCm torch)" if USE_ROCM else "CPU tensors (vgpu runs on host memory)"
        raise ValueError(f"hk.{entry}: {name} is on {t.device}; this build of hk takes {where}")
    if dim is not None and t.dim() != dim:
        raise ValueError(f"hk.{entry}: {name} must have {dim} dimensions, got shape {tuple(t.shape)}")


def unit_stride_last(t):
    """`t` itself when its last dimension is contiguous (hk takes any other strides), else a contiguous copy."""
    return t if t.stride(-1) == 1 or t.shape[-1] == 1 else t.contiguous()


def row_major(t):
    """(matrix, leading dimension) for a 2-D tensor hk reads as rows: in place when its columns are contiguous."""
    rows, cols = t.shape
    if t.stride(1) == 1 or cols == 1:
        if rows == 1:
            return t, max(cols, 1)
        if t.stride(0) >= cols:
            return t, t.stride(0)
    t = t.contiguous()
    return t, max(cols, 1)


def ptr(t):
    return 0 if t is None or t.numel() == 0 else t.data_ptr()


def bind(struct, **tensors):
    """Sets each pointer field of `struct` named in `tensors` to its tensor's address (0 for None or empty) and
    returns the tensors: a call's pointer fields and the memory it registers (launch) come from one list."""
    for name, t in tensors.items():
        setattr(struct, name, ptr(t))
    return list(tensors.values())


def launch(call, problem, tensors):
    """Runs `call(problem, ranges)` with every tensor in `tensors` (None skipped; the list bind returns) reachable
    by the kernels."""
    if USE_ROCM:
        problem.stream = torch.cuda.current_stream().cuda_stream
        ranges = []
    else:
        ranges = []
        for t in tensors:
            if t is None or t.numel() == 0:
                continue
            storage = t.untyped_storage()
            ranges.append((storage.data_ptr(), storage.nbytes()))
    call(problem, ranges)
