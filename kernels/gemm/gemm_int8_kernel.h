// The int8 GEMM kernel of hk::gemm_int8: C = A * B^T, int8 operands (A M x K, B N x K), int32 accumulators, on
// v_mfma_i32_32x32x16_i8 (gfx942: 8 k per lane) or v_mfma_i32_32x32x32_i8 (gfx950: 16 k per lane).
//
// The schedule, the MX kernel's (gemm_mx_kernel.h; a first correct version, no LDS): 128x128 tiles of C per workgroup
// of 4 waves, each 64 x 64 as 2 x 2 MFMA tiles of 32 x 32, workgroups in chiplet order. Each K step of the
// instruction's K every lane loads its operand registers straight from memory in the MFMA's layout: lane l serves
// row l mod 32 and the k-group g = l / 32, the E = K / 2 consecutive bytes k0 + E g .. +E - 1 of that row (whole
// dwords from row pointers computed once; the step at the K edge through a masked loader, byte by byte at the edge,
// zeros past K; rows past M / N read the last row, zeroed, never stored). The epilogue
// writes int32, or acc * row_scale * col_scale as fp32 or bf16 (nearest even).
#pragma once
#include "hk/hk.h"

namespace hk::kernels {

struct GemmInt8Args {
  int m, n, k;
  const int8_t* a;
  long lda;
  const int8_t* b;
  long ldb;
  void* c;
  long ldc;
  int c_type;  // 0 int32, 1 bf16, 2 fp32
  const float* row_scale;
  const float* col_scale;
};

namespace i8 {

using i32x4 = int __attribute__((ext_vector_type(4)));
using i32x16 = int __attribute__((ext_vector_type(16)));

// E bytes (E / 4 dwords) of row `row` from k0 + E g; zeros past `rows` and past K.
template <int E>
__device__ inline void fragment(int* out, const int8_t* base, long ld, int row, int rows, int k0, int K, int g) {
  for (int i = 0; i < E / 4; ++i) out[i] = 0;
  const int kk = k0 + E * g;
  if (row >= rows || kk >= K) return;
  const int8_t* r = base + long(row) * ld + kk;
  if (kk + E <= K) {
    for (int i = 0; i < E / 4; ++i) out[i] = reinterpret_cast<const int*>(r)[i];
  } else {
    for (int x = 0; kk + x < K; ++x) out[x / 4] |= int(uint8_t(r[x])) << (8 * (x % 4));
  }
}

// The MFMA of the target: each specialization's builtin exists only on its target, and an inline function is only
// compiled where it is called.
template <bool Cdna4>
struct mma;
template <>
struct mma<true> {  // gfx950: v_mfma_i32_32x32x32_i8, 16 bytes per lane
  __device__ static i32x16 run(const int* a, const int* b, i32x16 c) {
    const i32x4 x = {a[0], a[1], a[2], a[3]}, y = {b[0], b[1], b[2], b[3]};
    return __builtin_amdgcn_mfma_i32_32x32x32_i8(x, y, c, 0, 0, 0);
  }
};
template <>
struct mma<false> {  // gfx942: v_mfma_i32_32x32x16_i8, 8 bytes per lane
  __device__ static i32x16 run(const int* a, const int* b, i32x16 c) {
    const long x = long(uint32_t(a[0])) | long(a[1]) << 32, y = long(uint32_t(b[0])) | long(b[1]) << 32;
    return __builtin_amdgcn_mfma_i32_32x32x16_i8(x, y, c, 0, 0, 0);
  }
};

}  // namespace i8

__global__ __launch_bounds__(256) void gemm_int8(GemmInt8Args p) {
  constexpr bool cdna4 = arch::current::id == arch::target_id::gfx950;
  constexpr int KS = cdna4 ? 32 : 16, E = KS / 2;  // k per MFMA, bytes per lane
  const int tiles_n = (p.n + 127) / 128, tiles_m = (p.m + 127) / 128;
  const int id = xcd_remap(int(blockIdx.x), tiles_m * tiles_n);
  const int tm = id / tiles_n, tn = id % tiles_n;
  const int w = int(threadIdx.x) / 64, l = int(threadIdx.x) % 64, g = l / 32, lr = l % 32;
  const int row0 = tm * 128 + (w / 2) * 64, col0 = tn * 128 + (w % 2) * 64;
  i8::i32x16 acc[2][2] = {};
  // Steps whose every chunk lies inside K: each lane's row pointers (rows past M / N clamped to the last row, their
  // values zeroed) computed once, plain dword loads; then the edge step, if any, through the masked loader.
  const int8_t* pa[2];
  const int8_t* pb[2];
  bool va[2], vb[2];
  for (int i = 0; i < 2; ++i) {
    const int ra = row0 + 32 * i + lr, rb = col0 + 32 * i + lr;
    va[i] = ra < p.m, vb[i] = rb < p.n;
    pa[i] = p.a + long(va[i] ? ra : p.m - 1) * p.lda + E * g;
    pb[i] = p.b + long(vb[i] ? rb : p.n - 1) * p.ldb + E * g;
  }
  const int full = p.k / KS * KS;
  // The step's fragments were loaded one step ahead (the next step's, clamped to the last whole step, are issued
  // before this step's MFMAs), so the loads fly under the MFMAs.
  int a[2][E / 4], b[2][E / 4];
  auto load = [&](int k0) __attribute__((always_inline)) {
    for (int i = 0; i < 2; ++i)
      for (int x = 0; x < E / 4; ++x) {
        const int ax = reinterpret_cast<const int*>(pa[i] + k0)[x], bx = reinterpret_cast<const int*>(pb[i] + k0)[x];
        a[i][x] = va[i] ? ax : 0, b[i][x] = vb[i] ? bx : 0;
      }
  };
  if (full > 0) load(0);
  for (int k0 = 0; k0 < full; k0 += KS) {
    int ca[2][E / 4], cb[2][E / 4];
    for (int i = 0; i < 2; ++i)
      for (int x = 0; x < E / 4; ++x) ca[i][x] = a[i][x], cb[i][x] = b[i][x];
    load(k0 + KS < full ? k0 + KS : k0);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) acc[i][j] = i8::mma<cdna4>::run(ca[i], cb[j], acc[i][j]);
  }
  if (full < p.k) {
    for (int i = 0; i < 2; ++i) {
      i8::fragment<E>(a[i], p.a, p.lda, row0 + 32 * i + lr, p.m, full, p.k, g);
      i8::fragment<E>(b[i], p.b, p.ldb, col0 + 32 * i + lr, p.n, full, p.k, g);
    }
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) acc[i][j] = i8::mma<cdna4>::run(a[i], b[j], acc[i][j]);
  }
  // D[i][j] of a 32x32 tile: lane j + 32 * ((i / 4) mod 2), register 4 * (i / 8) + i mod 4.
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int r = 0; r < 16; ++r) {
        const int row = row0 + 32 * i + 8 * (r / 4) + 4 * g + r % 4, col = col0 + 32 * j + lr;
        if (row >= p.m || col >= p.n) continue;
        const long at = long(row) * p.ldc + col;
        if (p.c_type == 0) {
          static_cast<int*>(p.c)[at] = acc[i][j][r];
          continue;
        }
        float v = float(acc[i][j][r]);
        if (p.row_scale) v *= p.row_scale[row];
        if (p.col_scale) v *= p.col_scale[col];
        if (p.c_type == 2) {
          static_cast<float*>(p.c)[at] = v;
        } else {
          const uint32_t u = __builtin_bit_cast(uint32_t, v);
          static_cast<uint16_t*>(p.c)[at] = v != v ? uint16_t(u >> 16 | 0x40) : uint16_t((u + 0x7fff + (u >> 16 & 1)) >> 16);
        }
      }
}

}  // namespace hk::kernels
