// The head dims the attention kernels run (host and device): D for Q and K, DV for V and O, and what a wide head (D +
// DV > 256: 192, 256, and DeepSeek-V3's 192 for Q and K with 128 for V) changes in the kernels' shapes. A wide head's
// O^T (DV x 16 fp32) and dQ^T, dK^T, dV^T accumulators take 48 to 64 VGPRs each, so the kernels that hold them take
// 32 keys a step where they take 64 (a step's K or V in registers: 64 VGPRs at D = 256) and stages of the MFMA's K
// (16 or 32) queries where they take 32 or 64, and the backward runs one wave per SIMD (512 registers with the AGPRs).
#pragma once

namespace hk::kernels {

// A head shape as one compile-time value (the host's dispatch).
struct AttnDims {
  int d, dv;
};

// Whether (D, DV) is a head shape the kernels are built for: 64, 128, 192 or 256 for all of Q, K and V, or 192 / 128.
__host__ __device__ constexpr bool attn_head_dims(int d, int dv) {
  return (d == dv && (d == 64 || d == 128 || d == 192 || d == 256)) || (d == 192 && dv == 128);
}

__host__ __device__ constexpr bool attn_wide(int d, int dv) { return d + dv > 256; }

// Keys of a KV tile of the forward (attention_fwd.h) and of the backward's dQ kernel: 64, or 32 for wide heads.
__host__ __device__ constexpr int attn_tile_keys(int d, int dv) { return attn_wide(d, dv) ? 32 : 64; }

}  // namespace hk::kernels
