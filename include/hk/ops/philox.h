// Philox4x32, the counter-based generator of Salmon, Moraes, Dror and Shaw ("Parallel random numbers: as easy as
// 1, 2, 3", SC 2011): four 32-bit output words are a pure function of a 128-bit counter and a 64-bit key, so any
// thread can produce any element's random bits with no state and no dependence on the launch configuration.
// Each round multiplies words 0 and 2 by the two round multipliers into 64-bit products and mixes their high halves
// with words 1 and 3 and the key; the key is bumped by the two Weyl constants between rounds. Ten rounds is Random123's
// default (the norms' dropout); attention's dropout runs seven, as flash-attention's (csrc/flash_attn/src/philox.cuh:
// six rounds and a last one; ck_tile's philox is a copy of it): 30% less of the VALU work its mask costs.
#pragma once
#include <hip/hip_runtime.h>

#include <cmath>
#include <cstdint>

#include "hk/arch.h"

namespace hk {

struct philox4x32 {
  uint32_t v[4];
};

namespace detail {
inline constexpr uint32_t philox_m0 = 0xD2511F53u, philox_m1 = 0xCD9E8D57u;  // round multipliers
inline constexpr uint32_t philox_w0 = 0x9E3779B9u, philox_w1 = 0xBB67AE85u;  // key bumps (golden ratio, sqrt(3) - 1)
}  // namespace detail

// a ^ b ^ c, as the target's xor3 in device code (gfx950: one v_bitop3_b32, where LLVM leaves two v_xor_b32: 20 VALU
// a call fewer).
// (A template, so that the host pass, which compiles this for the host's callers, never instantiates the device call.)
template <class Target = arch::current>
__host__ __device__ __attribute__((always_inline)) inline uint32_t philox_xor3(uint32_t a, uint32_t b, uint32_t c) {
  if constexpr (arch::device_pass) return Target::xor3(a, b, c);
  else return a ^ b ^ c;
}

// The 4 words for `counter` under `key` (key[0] = low 32 bits of the seed, key[1] = high 32 bits) after Rounds rounds.
template <int Rounds = 10>
__host__ __device__ inline philox4x32 philox4x32_r(philox4x32 counter, uint32_t key0, uint32_t key1) {
  uint32_t c0 = counter.v[0], c1 = counter.v[1], c2 = counter.v[2], c3 = counter.v[3];
#pragma unroll
  for (int round = 0; round < Rounds; ++round) {
    const uint64_t p0 = uint64_t(detail::philox_m0) * c0, p1 = uint64_t(detail::philox_m1) * c2;
    const uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0), hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    c0 = philox_xor3(hi1, c1, key0);
    c1 = lo1;
    c2 = philox_xor3(hi0, c3, key1);
    c3 = lo0;
    key0 += detail::philox_w0;
    key1 += detail::philox_w1;
  }
  return {{c0, c1, c2, c3}};
}

// A uniform number in [0, 1) from the top 24 bits of a word: exactly representable in fp32, so a comparison with a
// float threshold decides the same way on the host and the device.
__host__ __device__ inline float philox_uniform(uint32_t word) { return float(word >> 8) * 0x1p-24f; }

// The norms' dropout stream, 16 random bits an element: element (row, col) of stream `stream` (the norms: the
// activations' row and column, stream = offset) under `seed` takes the low (col % 8 < 4) or high (col % 8 >= 4) half
// h of word col % 4 of philox4x32_r<10>({col / 8, row, stream low, stream high}, {seed low, seed high}), and is kept when
// h >= threshold = ceil(p 2^16) (dropout_threshold: h / 2^16 >= p, both sides exact). One call serves 8 columns of a
// row. (Attention draws 8 bits an element, flash-attention's convention: kernels/attention/attention_common.h.)
__host__ __device__ inline uint32_t dropout_threshold(float p) { return uint32_t(ceilf(p * 0x1p16f)); }

// Bit v: whether column 8 q + v of the block `bits` (the call for chunk q) is kept.
__host__ __device__ __attribute__((always_inline)) inline uint32_t dropout_keep8(const philox4x32& bits,
                                                                                 uint32_t threshold) {
  uint32_t keep = 0;
#pragma unroll
  for (int v = 0; v < 4; ++v)
    keep |= uint32_t((bits.v[v] & 0xffffu) >= threshold) << v | uint32_t((bits.v[v] >> 16) >= threshold) << (4 + v);
  return keep;
}

// Flash-attention's 8-bit dropout decisions (attention): an element is kept when its random byte r is <= keep_max =
// floor(255 (1 - p)), 1 - p in fp32, so it is kept with probability (keep_max + 1) / 256, within 1/256 of 1 - p; every p
// in [0, 1) keeps some.
__host__ __device__ inline uint32_t dropout_keep_max8(float p) { return uint32_t(floor(double(1.f - p) * 255.0)); }

}  // namespace hk
