// hk::rotary: rotary position embedding of Q and K (batch, seqlen, heads, head_dim) on the current HIP device.
// Pair (a, b) of a head's first `rotary_dim` elements is rotated by the angle theta_i of its token's position:
//   a' = a cos(theta_i) - b sin(theta_i),  b' = a sin(theta_i) + b cos(theta_i),
// with the pairs (i, i + rotary_dim/2) (half-split, GPT-NeoX `rotate_half`) or (2i, 2i + 1) (interleaved, GPT-J),
// i < rotary_dim/2; elements past rotary_dim are copied. The angles come from cos/sin tables (rows = positions,
// rotary_dim/2 columns, fp32 or bf16) or are computed in fp32 as theta_i = position * base^(-2i / rotary_dim).
// All arithmetic is fp32 whatever the tensors' type (bf16, f16 or fp32). rotary_backward rotates by -theta_i: the
// gradient of the input from the gradient of the output.
// Every argument is validated first: a problem the kernel cannot run returns an error and launches nothing.
#pragma once
#include "common/api.h"

namespace hk {

// One tensor to rotate: `in` read, `out` written (out == in with the same strides rotates in place). Strides are in
// elements for (batch, seqlen, heads); head_dim is contiguous.
struct RotaryTensor {
  const void* in = nullptr;
  void* out = nullptr;
  int heads = 0;
  long in_stride_b = 0, in_stride_s = 0, in_stride_h = 0;
  long out_stride_b = 0, out_stride_s = 0, out_stride_h = 0;
  // (batch, seqlen, heads, head_dim) packed, in and out alike.
  static RotaryTensor contiguous(const void* in, void* out, int seqlen, int heads, int head_dim) {
    const long h = head_dim, s = long(heads) * head_dim, b = long(seqlen) * s;
    return {in, out, heads, b, s, h, b, s, h};
  }
};

struct RotaryProblem {
  int batch = 0, seqlen = 0, head_dim = 0;
  int rotary_dim = 0;            // even, 2 .. head_dim (at most rotary_max_dim); 0 means head_dim
  scalar_type type = scalar_type::bf16;      // of q and k: bf16, f16 or fp32
  RotaryTensor q;
  RotaryTensor k;                // optional: k.in == nullptr rotates q alone
  bool interleaved = false;      // pairs (2i, 2i+1) instead of (i, i + rotary_dim/2)
  // Angles, either from tables (cos and sin: table_rows x rotary_dim/2, row stride table_stride, fp32 or bf16) indexed
  // by position = position_offset + s ...
  const void* cos = nullptr;
  const void* sin = nullptr;
  scalar_type table_type = scalar_type::fp32;
  int table_rows = 0;
  long table_stride = 0;         // elements between table rows (>= rotary_dim / 2)
  // ... or computed in fp32 from base > 0 and the positions: positions[b * seqlen + s] (int32, >= 0) when given (packed
  // varlen batches), else position_offset + s (decoding).
  float base = 0.f;
  const int* positions = nullptr;
  long position_offset = 0;
  hipStream_t stream = nullptr;
};

inline constexpr int rotary_max_dim = 1024;

// Validates `p` and launches the rotation on p.stream. Asynchronous like any kernel launch.
Status rotary(const RotaryProblem& p);
// The same with every angle negated: p.q.in / p.k.in hold the gradients of the outputs, out receives those of the inputs.
Status rotary_backward(const RotaryProblem& p);

}  // namespace hk
