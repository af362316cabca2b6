// The block-scaled (MX) GEMM kernel of hk::gemm_mx (gfx950): C = alpha * A_s * B_s^T + beta * C with A (M x K) and
// B (N x K) in OCP MX element formats and one E8M0 scale per 32 k of each row, on v_mfma_scale_f32_32x32x64_f8f6f4.
//
// The schedule, a first correct version (not yet the fp8 ping-pong one): 128x128 tiles of C per workgroup of 4 waves
// (2 x 2, each 64 x 64 as 2 x 2 MFMA tiles of 32 x 32, 64 fp32 accumulators per lane), workgroups in chiplet (XCD)
// order. Each K step of 64 every lane loads its own operand registers straight from memory, in exactly the MFMA's
// register layout, so no LDS and no barriers: lane l serves row (l mod 32) and k-group g = l / 32 of each 32-row
// fragment; an 8-bit format fills registers 0-3 with k0 + 16g .. +15 and 4-7 with k0 + 32 + 16g .. +15 (the
// instruction's 16-k chunks), a 6- or 4-bit one registers 0-5 / 0-3 with the 32 consecutive k0 + 32g .. +31, which are
// exactly the 24 / 16 bytes of that block in memory. The lane's scale is the block's: row l mod 32, block k0/32 + g
// (the instruction reads the scale of row r, block b from lane r + 32 b). Rows past M, columns past N and the k-block
// past K (K a multiple of 32, not of 64) load zeros and scale 127 and are never stored. Each A fragment feeds two
// MFMAs and each B fragment two: the kernel is bound by its loads (4 fragments of 16-32 bytes and 4 scale bytes per
// 4 MFMAs); staging the tiles through LDS with the fp8 kernels' DMA feed is the next step.
#pragma once
#include "hk/hk.h"

namespace hk::kernels {

struct GemmMxArgs {
  int m, n, k;
  const uint8_t* a;
  long lda_bytes;
  const uint8_t* b;
  long ldb_bytes;
  const uint8_t* scale_a;
  long ld_scale_a;
  const uint8_t* scale_b;
  long ld_scale_b;
  void* c;
  long ldc;
  int c_type;  // 0 fp32, 1 bf16, 2 f16
  float alpha, beta;
};

constexpr int mx_bits(int format) { return format <= 1 ? 8 : format <= 3 ? 6 : 4; }

namespace mx {

using i32x8 = arch::i32x8;

// One lane's operand registers for row `row` (zeros past `rows`) and k0 .. k0 + 63, k-group g; see the schedule.
template <int Bits>
__device__ inline i32x8 fragment(const uint8_t* base, long ld_bytes, int row, int rows, int k0, int K, int g) {
  i32x8 v = {};
  if (row >= rows) return v;
  const uint8_t* r = base + long(row) * ld_bytes;
  if constexpr (Bits == 8) {
    const uint32_t* lo = reinterpret_cast<const uint32_t*>(r + k0 + 16 * g);
    for (int i = 0; i < 4; ++i) v[i] = int(lo[i]);
    if (k0 + 32 < K) {
      const uint32_t* hi = reinterpret_cast<const uint32_t*>(r + k0 + 32 + 16 * g);
      for (int i = 0; i < 4; ++i) v[4 + i] = int(hi[i]);
    }
  } else if (k0 + 32 * g < K) {
    const uint32_t* p = reinterpret_cast<const uint32_t*>(r + (k0 + 32 * g) * Bits / 8);
    for (int i = 0; i < Bits; ++i) v[i] = int(p[i]);  // 32 elements of Bits bits: Bits dwords
  }
  return v;
}

__device__ inline int scale(const uint8_t* s, long ld, int row, int rows, int block, int blocks) {
  return row < rows && block < blocks ? int(s[long(row) * ld + block]) : 127;
}

__device__ inline void store(const GemmMxArgs& p, int row, int col, float acc) {
  if (row >= p.m || col >= p.n) return;
  const long at = long(row) * p.ldc + col;
  float v = p.alpha * acc;
  if (p.c_type == 0) {
    float* c = static_cast<float*>(p.c) + at;
    if (p.beta != 0.f) v += p.beta * *c;
    *c = v;
  } else if (p.c_type == 1) {
    uint16_t* c = static_cast<uint16_t*>(p.c) + at;
    if (p.beta != 0.f) v += p.beta * __builtin_bit_cast(float, uint32_t(*c) << 16);
    uint32_t u = __builtin_bit_cast(uint32_t, v);
    *c = v != v ? uint16_t(u >> 16 | 0x40) : uint16_t((u + 0x7fff + (u >> 16 & 1)) >> 16);  // nearest even
  } else {
    _Float16* c = static_cast<_Float16*>(p.c) + at;
    if (p.beta != 0.f) v += p.beta * float(*c);
    *c = _Float16(v);
  }
}

}  // namespace mx

// The body exists for gfx950 only, the one target with the instruction (elsewhere an empty kernel hk::gemm_mx never
// launches).
template <int FA, int FB>
__global__ __launch_bounds__(256) void gemm_mx(GemmMxArgs p) {
  if constexpr (arch::current::id == arch::target_id::gfx950) {
    constexpr int BA = mx_bits(FA), BB = mx_bits(FB);
    const int tiles_n = (p.n + 127) / 128, tiles_m = (p.m + 127) / 128;
    const int id = xcd_remap(int(blockIdx.x), tiles_m * tiles_n);
    const int tm = id / tiles_n, tn = id % tiles_n;
    const int w = int(threadIdx.x) / 64, l = int(threadIdx.x) % 64, g = l / 32, lr = l % 32;
    const int row0 = tm * 128 + (w / 2) * 64, col0 = tn * 128 + (w % 2) * 64, blocks = p.k / 32;
    arch::f32x16 acc[2][2] = {};
    for (int k0 = 0; k0 < p.k; k0 += 64) {
      mx::i32x8 a[2], b[2];
      int sa[2], sb[2];
      for (int i = 0; i < 2; ++i) {
        a[i] = mx::fragment<BA>(p.a, p.lda_bytes, row0 + 32 * i + lr, p.m, k0, p.k, g);
        sa[i] = mx::scale(p.scale_a, p.ld_scale_a, row0 + 32 * i + lr, p.m, k0 / 32 + g, blocks);
        b[i] = mx::fragment<BB>(p.b, p.ldb_bytes, col0 + 32 * i + lr, p.n, k0, p.k, g);
        sb[i] = mx::scale(p.scale_b, p.ld_scale_b, col0 + 32 * i + lr, p.n, k0 / 32 + g, blocks);
      }
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) acc[i][j] = arch::cdna4::mma_scale32<FA, FB>(a[i], b[j], acc[i][j], sa[i], sb[j]);
    }
    // D[i][j] of a 32x32 tile: lane j + 32 * ((i / 4) mod 2), register 4 * (i / 8) + i mod 4.
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        for (int r = 0; r < 16; ++r)
          mx::store(p, row0 + 32 * i + 8 * (r / 4) + 4 * g + r % 4, col0 + 32 * j + lr, acc[i][j][r]);
  }
}

}  // namespace hk::kernels
