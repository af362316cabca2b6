// An independent host Philox4x32 (10 rounds: the norms'; 7: attention's) and hk's dropout masks (the norms': include/hk/ops/philox.h; attention's), for
// the references of every kernel that drops: written from the definition, checked against the published known-answer
// vectors in norm_test.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>

namespace philox_ref {

// Written from the definition (Salmon et al., SC 2011): the round keys are laid out first, then each round maps
// (c0, c1, c2, c3) to (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0)).
template <int Rounds>
inline std::array<uint32_t, 4> philox4x32_r(std::array<uint32_t, 4> c, std::array<uint32_t, 2> key) {
  constexpr uint64_t M0 = 0xD2511F53, M1 = 0xCD9E8D57;
  constexpr uint32_t W0 = 0x9E3779B9, W1 = 0xBB67AE85;
  std::array<std::array<uint32_t, 2>, Rounds> keys;
  for (uint32_t r = 0; r < Rounds; ++r) keys[r] = {key[0] + r * W0, key[1] + r * W1};
  for (const auto& k : keys) {
    const uint64_t a = M0 * c[0], b = M1 * c[2];
    c = {uint32_t(b >> 32) ^ c[1] ^ k[0], uint32_t(b & 0xffffffffu), uint32_t(a >> 32) ^ c[3] ^ k[1],
         uint32_t(a & 0xffffffffu)};
  }
  return c;
}

// hk's dropout stream (include/hk/ops/philox.h; the norms' stream is their offset, attention's offset + b Hq + h):
// element (row, col) uses the low (col % 8 < 4) or high 16 bits of word col % 4 of the block at counter {col / 8, row,
// stream low, stream high}, key {seed low, seed high}; kept when those bits / 2^16 >= p.
inline uint32_t dropout_bits(uint64_t seed, uint64_t offset, long row, long col) {
  const uint32_t word = philox4x32_r<10>({uint32_t(col / 8), uint32_t(row), uint32_t(offset), uint32_t(offset >> 32)},
                                      {uint32_t(seed), uint32_t(seed >> 32)})[col % 4];
  return col % 8 < 4 ? word & 0xffffu : word >> 16;
}
inline bool dropout_keep(float p, uint64_t seed, uint64_t offset, long row, long col) {
  return double(dropout_bits(seed, offset, row, col)) / 65536.0 >= double(p);
}

// hk's attention dropout (kernels/attention/attention_common.h; the stream is offset + b Hq + h), flash-attention's
// generator (7 rounds) and 8-bit decisions: element (query i, key j) takes byte j % 4 of word i % 4 of the block at
// counter {j / 4, i / 4, stream low, stream high}, key {seed low, seed high}; kept when that byte is <= floor(255 (1 -
// p)), 1 - p in fp32.
inline uint32_t attn_dropout_byte(uint64_t seed, uint64_t stream, long i, long j) {
  const uint32_t word = philox4x32_r<7>({uint32_t(j / 4), uint32_t(i / 4), uint32_t(stream), uint32_t(stream >> 32)},
                                      {uint32_t(seed), uint32_t(seed >> 32)})[i % 4];
  return word >> (8 * (j % 4)) & 0xffu;
}
inline bool attn_dropout_keep(float p, uint64_t seed, uint64_t stream, long i, long j) {
  return attn_dropout_byte(seed, stream, i, j) <= uint32_t(std::floor(double(1.f - p) * 255.0));
}

}  // namespace philox_ref
