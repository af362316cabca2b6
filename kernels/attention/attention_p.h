// P^T's conversion to the operand type, for the attention kernels' softmax (copy_acc_order's converter).
//
// P's elements are exp2 of a number <= 8 (attention_common.h's lazy max), 0 where masked or dropped, or NaN (a NaN
// score): never negative. Where the target has no bf16 conversion instruction (gfx942) the compiler rounds fp32 to
// bf16 in five VALU a value plus a wait state (round to nearest even, and a select that keeps a NaN a NaN, whose
// rounding could carry into the sign). For a value that is not negative, an unsigned min with the canonical NaN
// 0x7fc00000 does the NaN's part: finite values and +inf lie below it and stay as they are, a NaN above it becomes it,
// one below it (a signalling NaN) stays a NaN through the rounding (its exponent field is all ones and the carry of
// +0x7fff stops inside its mantissa, which is not zero). So a value takes min, bfe and add3 (the compiler packs two
// with one v_perm), bit for bit what the generic conversion gives every number and a NaN for every NaN. Elsewhere, and
// for fp16, the conversion is the generic one.
#pragma once
#include "hk/hk.h"
#include "hk/ops/acc_order.h"

namespace hk::kernels {

struct AttnProbTo {
  template <class T>
  __device__ __attribute__((always_inline)) T operator()(float x, T* tag) const {
    if constexpr (std::same_as<T, bf16> && !arch::current::bf16_convert) {
      uint32_t u = __builtin_bit_cast(uint32_t, x);
      u = u < 0x7fc00000u ? u : 0x7fc00000u;  // v_min_u32: x >= +0, so only NaNs move
      u += 0x7fffu + ((u >> 16) & 1u);        // round to nearest even
      return __builtin_bit_cast(bf16, uint16_t(u >> 16));
    } else {
      return acc_order_to{}(x, tag);
    }
  }
};

}  // namespace hk::kernels
