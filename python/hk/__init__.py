"""hk: AMD Instinct kernels (GEMM, attention, rotary embedding, fused norms) as torch ops with autograd.

Built with vgpu (the default) the ops take CPU tensors and run hk's gfx942 / gfx950 machine code on the virtual GPU
(HK_VGPU_ARCH picks the arch); built with -DHK_USE_ROCM=ON they take HIP tensors of a ROCm torch.
"""
from . import dropout, flash_attn
from .attention import attention, attention_varlen
from .decode import attention_with_kvcache
from .gemm import gemm
from .gemm_formats import gemm_blockwise, gemm_int8, gemm_mx, grouped_gemm
from .norm import layer_norm, rms_norm
from .rotary import rotary
from ._runtime import USE_ROCM

__all__ = ["gemm", "gemm_mx", "gemm_int8", "gemm_blockwise", "grouped_gemm", "attention", "attention_varlen", "attention_with_kvcache", "rotary", "layer_norm", "rms_norm",
           "USE_ROCM", "flash_attn", "dropout"]
