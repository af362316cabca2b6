// Matrix core instructions (v_mfma_*) through __builtin_amdgcn_mfma_*: every case runs one MFMA per wave on register
// images prepared on the host, and the host reads the result back through the layouts documented in
// shared/reference/cdna.md (written out independently below, in the reference's own terms).
//
// For each instruction:
//   Random*   random A, B and C (values exact in the input type) against a host matmul in double, with a tolerance
//             for the f32 accumulation (integer forms: exact);
//   LayoutA/B one wave per register slot of A (B): that slot holds 1, the other operand holds a value that names k,
//             and D must light up exactly the documented row (column) with the value of the documented k, so a
//             transposed or permuted layout cannot pass;
//   ScaleLayoutA/B (scaled f8f6f4) one wave per scale lane: that lane's scale doubles, and exactly the documented
//             row (column) and k-block of D must double; the unselected scale bytes hold NaN.
// What D = A x B + C can reveal: rows, columns and which slot of A meets which slot of B are pinned exactly, but a
// renumbering of k applied alike to A and B leaves every product sum unchanged, so the absolute k of a slot is only
// observable through the 32-k scale blocks of the scaled forms (the Scale* and random scaled tests pin it there).
// Cases an arch lacks are skipped on it (isa_arch.h, vgpu's lookup of the device, decides: these tests also run on
// gfx90a, which hk does not target). The f64 forms have their own tests at the end (one f64 per register pair).
#include <hip/hip_runtime.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "host/device.h"
#include "isa_arch.h"
#include "hip/hip_check.h"

// --- Device side -------------------------------------------------------------------------------------------------

typedef float f32x2 __attribute__((ext_vector_type(2)));
typedef float f32x4 __attribute__((ext_vector_type(4)));
typedef float f32x16 __attribute__((ext_vector_type(16)));
typedef float f32x32 __attribute__((ext_vector_type(32)));
typedef double f64x4 __attribute__((ext_vector_type(4)));
typedef int i32x4 __attribute__((ext_vector_type(4)));
typedef int i32x8 __attribute__((ext_vector_type(8)));
typedef int i32x16 __attribute__((ext_vector_type(16)));
typedef int i32x32 __attribute__((ext_vector_type(32)));
typedef _Float16 f16x4 __attribute__((ext_vector_type(4)));
typedef _Float16 f16x8 __attribute__((ext_vector_type(8)));
typedef short i16x2 __attribute__((ext_vector_type(2)));
typedef short i16x4 __attribute__((ext_vector_type(4)));
typedef __bf16 bf16x8 __attribute__((ext_vector_type(8)));

template <class T>
__device__ T ld(const uint32_t* p) {
  T x;
  __builtin_memcpy(&x, p, sizeof(T));
  return x;
}
template <class T>
__device__ void st(uint32_t* p, T x) {
  __builtin_memcpy(p, &x, sizeof(T));
}

// The builtins exist only in the device compilation for the arch that has them.
#if defined(__gfx90a__) || defined(__gfx942__) || defined(__gfx950__)
#define ON_ALL(...) __VA_ARGS__
#else
#define ON_ALL(...)
#endif
#if defined(__gfx90a__)
#define ON_GFX90A(...) __VA_ARGS__
#else
#define ON_GFX90A(...)
#endif
#if defined(__gfx942__) || defined(__gfx950__)
#define ON_BOTH(...) __VA_ARGS__
#else
#define ON_BOTH(...)
#endif
#if defined(__gfx942__)
#define ON_GFX942(...) __VA_ARGS__
#else
#define ON_GFX942(...)
#endif
#if defined(__gfx950__)
#define ON_GFX950(...) __VA_ARGS__
#else
#define ON_GFX950(...)
#endif

// One MFMA: na/nb/nc registers per lane of A, B and C/D; sa/sb are the lane's scale registers (scaled forms).
#define OP(NAME, GUARD, NA, NB, NC, ...)                                                               \
  struct NAME {                                                                                        \
    static constexpr int na = NA, nb = NB, nc = NC;                                                   \
    __device__ static void run(const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t sa,   \
                               uint32_t sb, uint32_t* d) {                                             \
      (void)a, (void)b, (void)c, (void)sa, (void)sb, (void)d;                                          \
      GUARD(st(d, __VA_ARGS__);)                                                                       \
    }                                                                                                  \
  };

#define A(T) ld<T>(a)
#define B(T) ld<T>(b)
#define C(T) ld<T>(c)
// clang-format off
OP(F16_16x16x16, ON_ALL, 2, 2, 4, __builtin_amdgcn_mfma_f32_16x16x16f16(A(f16x4), B(f16x4), C(f32x4), 0, 0, 0))
OP(BF16_16x16x16, ON_ALL, 2, 2, 4, __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(A(i16x4), B(i16x4), C(f32x4), 0, 0, 0))
OP(F16_32x32x8, ON_ALL, 2, 2, 16, __builtin_amdgcn_mfma_f32_32x32x8f16(A(f16x4), B(f16x4), C(f32x16), 0, 0, 0))
OP(BF16_32x32x8, ON_ALL, 2, 2, 16, __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(A(i16x4), B(i16x4), C(f32x16), 0, 0, 0))
OP(F16_4x4x4_16B, ON_ALL, 2, 2, 4, __builtin_amdgcn_mfma_f32_4x4x4f16(A(f16x4), B(f16x4), C(f32x4), 0, 0, 0))
OP(BF16_4x4x4_16B, ON_ALL, 2, 2, 4, __builtin_amdgcn_mfma_f32_4x4x4bf16_1k(A(i16x4), B(i16x4), C(f32x4), 0, 0, 0))
OP(F16_16x16x4_4B, ON_ALL, 2, 2, 16, __builtin_amdgcn_mfma_f32_16x16x4f16(A(f16x4), B(f16x4), C(f32x16), 0, 0, 0))
OP(BF16_32x32x4_2B, ON_ALL, 2, 2, 32, __builtin_amdgcn_mfma_f32_32x32x4bf16_1k(A(i16x4), B(i16x4), C(f32x32), 0, 0, 0))
OP(F32_16x16x4, ON_ALL, 1, 1, 4, __builtin_amdgcn_mfma_f32_16x16x4f32(A(float), B(float), C(f32x4), 0, 0, 0))
OP(F32_32x32x2, ON_ALL, 1, 1, 16, __builtin_amdgcn_mfma_f32_32x32x2f32(A(float), B(float), C(f32x16), 0, 0, 0))
OP(F32_4x4x1_16B, ON_ALL, 1, 1, 4, __builtin_amdgcn_mfma_f32_4x4x1f32(A(float), B(float), C(f32x4), 0, 0, 0))
OP(F32_16x16x1_4B, ON_ALL, 1, 1, 16, __builtin_amdgcn_mfma_f32_16x16x1f32(A(float), B(float), C(f32x16), 0, 0, 0))
OP(F32_32x32x1_2B, ON_ALL, 1, 1, 32, __builtin_amdgcn_mfma_f32_32x32x1f32(A(float), B(float), C(f32x32), 0, 0, 0))
OP(I8_16x16x32, ON_BOTH, 2, 2, 4, __builtin_amdgcn_mfma_i32_16x16x32_i8(A(long), B(long), C(i32x4), 0, 0, 0))
OP(I8_32x32x16, ON_BOTH, 2, 2, 16, __builtin_amdgcn_mfma_i32_32x32x16_i8(A(long), B(long), C(i32x16), 0, 0, 0))
OP(I8_4x4x4_16B, ON_ALL, 1, 1, 4, __builtin_amdgcn_mfma_i32_4x4x4i8(A(int), B(int), C(i32x4), 0, 0, 0))
OP(I8_32x32x4_2B, ON_ALL, 1, 1, 32, __builtin_amdgcn_mfma_i32_32x32x4i8(A(int), B(int), C(i32x32), 0, 0, 0))
OP(FP8_FP8_16x16x32, ON_BOTH, 2, 2, 4, __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(A(long), B(long), C(f32x4), 0, 0, 0))
OP(FP8_BF8_16x16x32, ON_BOTH, 2, 2, 4, __builtin_amdgcn_mfma_f32_16x16x32_fp8_bf8(A(long), B(long), C(f32x4), 0, 0, 0))
OP(BF8_FP8_16x16x32, ON_BOTH, 2, 2, 4, __builtin_amdgcn_mfma_f32_16x16x32_bf8_fp8(A(long), B(long), C(f32x4), 0, 0, 0))
OP(BF8_BF8_16x16x32, ON_BOTH, 2, 2, 4, __builtin_amdgcn_mfma_f32_16x16x32_bf8_bf8(A(long), B(long), C(f32x4), 0, 0, 0))
OP(FP8_FP8_32x32x16, ON_BOTH, 2, 2, 16, __builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8(A(long), B(long), C(f32x16), 0, 0, 0))
OP(FP8_BF8_32x32x16, ON_BOTH, 2, 2, 16, __builtin_amdgcn_mfma_f32_32x32x16_fp8_bf8(A(long), B(long), C(f32x16), 0, 0, 0))
OP(BF8_FP8_32x32x16, ON_BOTH, 2, 2, 16, __builtin_amdgcn_mfma_f32_32x32x16_bf8_fp8(A(long), B(long), C(f32x16), 0, 0, 0))
OP(BF8_BF8_32x32x16, ON_BOTH, 2, 2, 16, __builtin_amdgcn_mfma_f32_32x32x16_bf8_bf8(A(long), B(long), C(f32x16), 0, 0, 0))
// Broadcast modifiers: cbsz/abid on A, blgp on B.
OP(F16_16x16x16_BLGP3, ON_ALL, 2, 2, 4, __builtin_amdgcn_mfma_f32_16x16x16f16(A(f16x4), B(f16x4), C(f32x4), 0, 0, 3))
OP(BF16_32x32x8_CBSZ1_ABID1_BLGP2, ON_ALL, 2, 2, 16, __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(A(i16x4), B(i16x4), C(f32x16), 1, 1, 2))
OP(F16_4x4x4_16B_CBSZ4_ABID5_BLGP5, ON_ALL, 2, 2, 4, __builtin_amdgcn_mfma_f32_4x4x4f16(A(f16x4), B(f16x4), C(f32x4), 4, 5, 5))
OP(F32_16x16x1_4B_CBSZ2_ABID3_BLGP6, ON_ALL, 1, 1, 16, __builtin_amdgcn_mfma_f32_16x16x1f32(A(float), B(float), C(f32x16), 2, 3, 6))
// gfx90a only: bf16 with two elements per register, i8 with k = 8 / 16.
OP(BF16_32x32x2_2B, ON_GFX90A, 1, 1, 32, __builtin_amdgcn_mfma_f32_32x32x2bf16(A(i16x2), B(i16x2), C(f32x32), 0, 0, 0))
OP(BF16_16x16x2_4B, ON_GFX90A, 1, 1, 16, __builtin_amdgcn_mfma_f32_16x16x2bf16(A(i16x2), B(i16x2), C(f32x16), 0, 0, 0))
OP(BF16_4x4x2_16B, ON_GFX90A, 1, 1, 4, __builtin_amdgcn_mfma_f32_4x4x2bf16(A(i16x2), B(i16x2), C(f32x4), 0, 0, 0))
OP(BF16_32x32x4, ON_GFX90A, 1, 1, 16, __builtin_amdgcn_mfma_f32_32x32x4bf16(A(i16x2), B(i16x2), C(f32x16), 0, 0, 0))
OP(BF16_16x16x8, ON_GFX90A, 1, 1, 4, __builtin_amdgcn_mfma_f32_16x16x8bf16(A(i16x2), B(i16x2), C(f32x4), 0, 0, 0))
OP(I8_32x32x8, ON_GFX90A, 1, 1, 16, __builtin_amdgcn_mfma_i32_32x32x8i8(A(int), B(int), C(i32x16), 0, 0, 0))
OP(I8_16x16x16, ON_GFX90A, 1, 1, 4, __builtin_amdgcn_mfma_i32_16x16x16i8(A(int), B(int), C(i32x4), 0, 0, 0))
// f64 (all three archs): one element per register pair; C as registers or the inline constant 0.
OP(F64_16x16x4, ON_ALL, 2, 2, 8, __builtin_amdgcn_mfma_f64_16x16x4f64(A(double), B(double), C(f64x4), 0, 0, 0))
OP(F64_4x4x4_4B, ON_ALL, 2, 2, 2, __builtin_amdgcn_mfma_f64_4x4x4f64(A(double), B(double), C(double), 0, 0, 0))
OP(F64_16x16x4_C0, ON_ALL, 2, 2, 8, __builtin_amdgcn_mfma_f64_16x16x4f64(A(double), B(double), f64x4{}, 0, 0, 0))
// gfx942 only.
OP(XF32_16x16x8, ON_GFX942, 2, 2, 4, __builtin_amdgcn_mfma_f32_16x16x8_xf32(A(f32x2), B(f32x2), C(f32x4), 0, 0, 0))
OP(XF32_32x32x4, ON_GFX942, 2, 2, 16, __builtin_amdgcn_mfma_f32_32x32x4_xf32(A(f32x2), B(f32x2), C(f32x16), 0, 0, 0))
// gfx950 only.
OP(F16_16x16x32, ON_GFX950, 4, 4, 4, __builtin_amdgcn_mfma_f32_16x16x32_f16(A(f16x8), B(f16x8), C(f32x4), 0, 0, 0))
OP(BF16_16x16x32, ON_GFX950, 4, 4, 4, __builtin_amdgcn_mfma_f32_16x16x32_bf16(A(bf16x8), B(bf16x8), C(f32x4), 0, 0, 0))
OP(F16_32x32x16, ON_GFX950, 4, 4, 16, __builtin_amdgcn_mfma_f32_32x32x16_f16(A(f16x8), B(f16x8), C(f32x16), 0, 0, 0))
OP(BF16_32x32x16, ON_GFX950, 4, 4, 16, __builtin_amdgcn_mfma_f32_32x32x16_bf16(A(bf16x8), B(bf16x8), C(f32x16), 0, 0, 0))
OP(I8_16x16x64, ON_GFX950, 4, 4, 4, __builtin_amdgcn_mfma_i32_16x16x64_i8(A(i32x4), B(i32x4), C(i32x4), 0, 0, 0))
OP(I8_32x32x32, ON_GFX950, 4, 4, 16, __builtin_amdgcn_mfma_i32_32x32x32_i8(A(i32x4), B(i32x4), C(i32x16), 0, 0, 0))
// Scaled f8f6f4: (A, B, C, A format, B format, A scale byte, A scale, B scale byte, B scale).
OP(SCALE_FP8_FP8_16x16x128, ON_GFX950, 8, 8, 4, __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(A(i32x8), B(i32x8), C(f32x4), 0, 0, 0, int(sa), 0, int(sb)))
OP(SCALE_FP8_BF8_16x16x128, ON_GFX950, 8, 8, 4, __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(A(i32x8), B(i32x8), C(f32x4), 0, 1, 1, int(sa), 2, int(sb)))
OP(SCALE_BF8_FP8_16x16x128, ON_GFX950, 8, 8, 4, __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(A(i32x8), B(i32x8), C(f32x4), 1, 0, 3, int(sa), 0, int(sb)))
OP(SCALE_BF8_BF8_16x16x128, ON_GFX950, 8, 8, 4, __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(A(i32x8), B(i32x8), C(f32x4), 1, 1, 2, int(sa), 3, int(sb)))
OP(SCALE_FP8_FP8_32x32x64, ON_GFX950, 8, 8, 16, __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(A(i32x8), B(i32x8), C(f32x16), 0, 0, 0, int(sa), 0, int(sb)))
OP(SCALE_FP8_BF8_32x32x64, ON_GFX950, 8, 8, 16, __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(A(i32x8), B(i32x8), C(f32x16), 0, 1, 3, int(sa), 1, int(sb)))
OP(SCALE_BF8_FP8_32x32x64, ON_GFX950, 8, 8, 16, __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(A(i32x8), B(i32x8), C(f32x16), 1, 0, 2, int(sa), 2, int(sb)))
OP(SCALE_BF8_BF8_32x32x64, ON_GFX950, 8, 8, 16, __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(A(i32x8), B(i32x8), C(f32x16), 1, 1, 1, int(sa), 0, int(sb)))
// fp6 (cbsz/blgp 2 e2m3, 3 e3m2) and fp4 (4 e2m1) operands: 32 elements per lane in six / four registers.
OP(SCALE_FP6_FP8_16x16x128, ON_GFX950, 8, 8, 4, __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(A(i32x8), B(i32x8), C(f32x4), 2, 0, 1, int(sa), 0, int(sb)))
OP(SCALE_FP8_BF6_16x16x128, ON_GFX950, 8, 8, 4, __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(A(i32x8), B(i32x8), C(f32x4), 0, 3, 0, int(sa), 2, int(sb)))
OP(SCALE_FP4_BF8_16x16x128, ON_GFX950, 8, 8, 4, __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(A(i32x8), B(i32x8), C(f32x4), 4, 1, 2, int(sa), 1, int(sb)))
OP(SCALE_FP8_FP4_16x16x128, ON_GFX950, 8, 8, 4, __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(A(i32x8), B(i32x8), C(f32x4), 0, 4, 3, int(sa), 3, int(sb)))
OP(SCALE_BF6_FP4_16x16x128, ON_GFX950, 8, 8, 4, __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(A(i32x8), B(i32x8), C(f32x4), 3, 4, 0, int(sa), 1, int(sb)))
OP(SCALE_FP4_FP4_16x16x128, ON_GFX950, 8, 8, 4, __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(A(i32x8), B(i32x8), C(f32x4), 4, 4, 1, int(sa), 0, int(sb)))
OP(SCALE_BF6_FP8_32x32x64, ON_GFX950, 8, 8, 16, __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(A(i32x8), B(i32x8), C(f32x16), 3, 0, 0, int(sa), 0, int(sb)))
OP(SCALE_FP8_FP6_32x32x64, ON_GFX950, 8, 8, 16, __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(A(i32x8), B(i32x8), C(f32x16), 0, 2, 2, int(sa), 3, int(sb)))
OP(SCALE_FP4_FP8_32x32x64, ON_GFX950, 8, 8, 16, __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(A(i32x8), B(i32x8), C(f32x16), 4, 0, 1, int(sa), 1, int(sb)))
OP(SCALE_BF8_FP4_32x32x64, ON_GFX950, 8, 8, 16, __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(A(i32x8), B(i32x8), C(f32x16), 1, 4, 3, int(sa), 0, int(sb)))
OP(SCALE_FP6_FP6_32x32x64, ON_GFX950, 8, 8, 16, __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(A(i32x8), B(i32x8), C(f32x16), 2, 2, 0, int(sa), 2, int(sb)))
OP(SCALE_FP4_BF6_32x32x64, ON_GFX950, 8, 8, 16, __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(A(i32x8), B(i32x8), C(f32x16), 4, 3, 2, int(sa), 1, int(sb)))
OP(F8F6F4_FP4_FP6_16x16x128, ON_GFX950, 8, 8, 4, __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(A(i32x8), B(i32x8), C(f32x4), 4, 2, 0, 0, 0, 0))
// Constant scales 0 make LLVM emit the unscaled v_mfma_f32_*_f8f6f4, whose scale is 1.0.
OP(F8F6F4_FP8_BF8_16x16x128, ON_GFX950, 8, 8, 4, __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(A(i32x8), B(i32x8), C(f32x4), 0, 1, 0, 0, 0, 0))
OP(F8F6F4_BF8_FP8_32x32x64, ON_GFX950, 8, 8, 16, __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(A(i32x8), B(i32x8), C(f32x16), 1, 0, 0, 0, 0, 0))
// Uniform scales: LLVM 21 puts them in an SGPR (127) or an inline constant (2.0, 1.0).
OP(SCALE_SGPR_127, ON_GFX950, 8, 8, 4, __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(A(i32x8), B(i32x8), C(f32x4), 0, 0, 0, 127, 0, 127))
OP(SCALE_INLINE_2F_1F, ON_GFX950, 8, 8, 4, __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(A(i32x8), B(i32x8), C(f32x4), 0, 0, 0, 0x40000000, 0, 0x3f800000))
// Accumulator as an inline constant (C ignored): 0 and 1.0.
OP(F16_16x16x16_C0, ON_ALL, 2, 2, 4, __builtin_amdgcn_mfma_f32_16x16x16f16(A(f16x4), B(f16x4), f32x4{}, 0, 0, 0))
OP(I8_32x32x16_C0, ON_BOTH, 2, 2, 16, __builtin_amdgcn_mfma_i32_32x32x16_i8(A(long), B(long), i32x16{}, 0, 0, 0))
OP(BF16_32x32x8_C1, ON_ALL, 2, 2, 16, __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(A(i16x4), B(i16x4), f32x16(1.0f), 0, 0, 0))
// clang-format on
// A, B and C/D in AGPRs (inline asm with the "a" constraint).
struct F16_16x16x16_AGPR {
  static constexpr int na = 2, nb = 2, nc = 4;
  __device__ static void run(const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t, uint32_t, uint32_t* d) {
    (void)a, (void)b, (void)c, (void)d;
    ON_BOTH(f32x4 acc = ld<f32x4>(c); f16x4 x = ld<f16x4>(a), y = ld<f16x4>(b);
            asm volatile("v_mfma_f32_16x16x16_f16 %0, %1, %2, %0" : "+a"(acc) : "a"(x), "a"(y));
            st(d, acc);)
    // gfx90a spells it without the '_' before the type.
    ON_GFX90A(f32x4 acc = ld<f32x4>(c); f16x4 x = ld<f16x4>(a), y = ld<f16x4>(b);
              asm volatile("v_mfma_f32_16x16x16f16 %0, %1, %2, %0" : "+a"(acc) : "a"(x), "a"(y));
              st(d, acc);)
  }
};
#undef A
#undef B
#undef C

template <class Op>
__global__ void __launch_bounds__(64) run_op(const uint32_t* a, const uint32_t* b, const uint32_t* c, const uint32_t* sa,
                                             const uint32_t* sb, uint32_t* d) {
  const int t = blockIdx.x * 64 + threadIdx.x;
  Op::run(a + t * Op::na, b + t * Op::nb, c + t * Op::nc, sa[t], sb[t], d + t * Op::nc);
}

// --- Host side: formats ------------------------------------------------------------------------------------------

// e2m3, e3m2 (fp6) and e2m1 (fp4): the OCP MX element formats of the f8f6f4 forms (gfx950).
enum class El { f32, xf32, f16, bf16, fp8, bf8, i8, e2m3, e3m2, e2m1 };

int bits_of(El e) {
  switch (e) {
    case El::f32:
    case El::xf32: return 32;
    case El::f16:
    case El::bf16: return 16;
    case El::e2m3:
    case El::e3m2: return 6;
    case El::e2m1: return 4;
    default: return 8;
  }
}
bool sub_byte(El e) { return bits_of(e) < 8; }

// An OCP MX element (OCP Microscaling Formats spec, 5.3): sign, `eb` exponent bits with bias 2^(eb-1) - 1, `mb`
// mantissa bits, subnormals at exponent 0, no inf or NaN codes.
double decode_mx(uint32_t x, int eb, int mb) {
  const int bias = (1 << (eb - 1)) - 1, e = int(x >> mb) & ((1 << eb) - 1), m = int(x) & ((1 << mb) - 1);
  const double mag = e == 0 ? std::ldexp(double(m), 1 - bias - mb) : std::ldexp(double(m + (1 << mb)), e - bias - mb);
  return x >> (eb + mb) & 1 ? -mag : mag;
}

bool is_gfx950() { return isa_arch::gfx950(); }

// 8-bit floats: e4m3 / e5m2, FNUZ on gfx942, OCP on gfx950 (the host toolkit's model, tests/fp8_ref.h).
double decode8(uint8_t x, bool e5m2, bool ocp) {
  using hk_host::Type, hk_host::Arch;
  return hk_host::fp8_format(e5m2 ? Type::fp8_e5m2 : Type::fp8_e4m3, ocp ? Arch::gfx950 : Arch::gfx942).value(x);
}

// The exact value the MFMA reads from an element's bits (xf32: the f32 truncated to 10 mantissa bits).
double value_of(El e, uint32_t x, bool gfx950) {
  switch (e) {
    case El::f32: return std::bit_cast<float>(x);
    case El::xf32: return std::bit_cast<float>(x & ~0x1fffu);
    case El::f16: return double(std::bit_cast<_Float16>(uint16_t(x)));
    case El::bf16: return std::bit_cast<float>(x << 16);
    case El::fp8: return decode8(uint8_t(x), false, gfx950);
    case El::bf8: return decode8(uint8_t(x), true, gfx950);
    case El::i8: return int8_t(x);
    case El::e2m3: return decode_mx(x & 63, 2, 3);
    case El::e3m2: return decode_mx(x & 63, 3, 2);
    case El::e2m1: return decode_mx(x & 15, 2, 1);
  }
  return 0;
}

// Random element bits with an exact, moderate value.
uint32_t random_bits(El e, bool gfx950, std::mt19937& rng) {
  const int q = int(rng() % 129) - 64;  // q / 16 in [-4, 4]: exact in bf16 and f16
  switch (e) {
    case El::f32:
    case El::xf32: return std::bit_cast<uint32_t>(std::uniform_real_distribution<float>(-2.f, 2.f)(rng));
    case El::f16: return std::bit_cast<uint16_t>(_Float16(q / 16.f));
    case El::bf16: return std::bit_cast<uint32_t>(q / 16.f) >> 16;
    case El::i8: return rng() & 0xff;
    case El::e2m3:
    case El::e3m2:
    case El::e2m1: return rng() & ((1u << bits_of(e)) - 1);  // every code is finite, at most 28 in magnitude
    case El::fp8:
    case El::bf8:
      for (;;) {
        const uint32_t x = rng() & 0xff;
        const double v = value_of(e, x, gfx950);
        if (std::isfinite(v) && std::fabs(v) <= 16) return x;
      }
  }
  return 0;
}

// Bits of a value that is exact in the type (used with small integers and powers of two).
uint32_t bits_for(El e, double v, bool gfx950) {
  switch (e) {
    case El::f32:
    case El::xf32: return std::bit_cast<uint32_t>(float(v));
    case El::f16: return std::bit_cast<uint16_t>(_Float16(float(v)));
    case El::bf16: return std::bit_cast<uint32_t>(float(v)) >> 16;
    case El::i8: return uint32_t(int(v)) & 0xff;
    default:
      for (uint32_t x = 0; x < (1u << bits_of(e)); ++x)
        if (value_of(e, x, gfx950) == v) return x;
  }
  ADD_FAILURE() << "value " << v << " not representable";
  return 0;
}

// A distinct nonzero value for each k (names k in the layout probes); the fp6 / fp4 formats have too few for a whole
// K, and their layouts are probed with an fp8 partner naming k.
uint32_t k_name_bits(El e, int k, bool gfx950) {
  if (e != El::fp8 && e != El::bf8) return bits_for(e, k + 1, gfx950);
  int n = 0;
  for (uint32_t x = 1; x < 256; ++x) {
    const double v = value_of(e, x, gfx950);
    if (!std::isfinite(v) || v == 0) continue;
    if (n++ == k) return x;
  }
  ADD_FAILURE() << "no code for k " << k;
  return 0;
}

// --- Host side: the documented layouts (shared/reference/cdna.md) -------------------------------------------------

struct Case {
  std::string name;
  int M, N, K, blocks;
  El ea, eb;
  bool on942, on950, on90a;
  int na, nb, nc;
  void (*launch)(int waves, const uint32_t*, const uint32_t*, const uint32_t*, const uint32_t*, const uint32_t*,
                 uint32_t*);
  int cbsz = 0, abid = 0, blgp = 0;
  bool scaled = false;
  int sel_a = 0, sel_b = 0;
  bool integer() const { return ea == El::i8; }
  bool exists_here() const { return isa_arch::gfx90a() ? on90a : isa_arch::gfx950() ? on950 : on942; }
  bool permuted() const { return cbsz || blgp; }
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

struct Slot {
  int lane, elem;  // lane and element index within the lane's registers (element e of b bits: bits e*b.. of the
                   // lane's registers taken as one little-endian bit string; a 6-bit element may straddle two)
};

// A[i][k] of block b (dim = M), or B[k][j] (dim = N, i = j), elements of `bits` bits. The f8f6f4 forms' 8-bit
// elements come in 16-k chunks dealt to the lane groups; their fp6 / fp4 elements take 32 consecutive k per lane
// group (AMD's CDNA4 matrix-core blog: the 32x32x64 fp4 kernel loads 16 bytes of row l%32 at k byte offset
// (l/32)*16, low nibble first; Modular's MXFP4 kernel docs for 16x16x128: lane row + 16 * k-group, 16 contiguous
// bytes), i.e. the plain formula below.
Slot doc_in(const Case& c, int dim, int i, int k, int b, int bits) {
  if (c.blocks > 1) return {b * dim + i, k};  // block forms: block b in lanes b*dim.., all k in one lane
  if (c.K == 64 && c.M == 32 && bits == 8) return {i + 32 * ((k % 32) / 16), k % 16 + 16 * (k / 32)};   // 32x32x64 f8f6f4
  if (c.K == 128 && c.M == 16 && bits == 8) return {i + 16 * ((k % 64) / 16), k % 16 + 16 * (k / 64)};  // 16x16x128 f8f6f4
  const int per_lane = c.K * dim / 64;  // 16x16: lane i + 16*floor(k/per_lane); 32x32: lane i + 32*floor(k/per_lane)
  return {i + dim * (k / per_lane), k % per_lane};
}

struct Out {
  int lane, reg;
};

// D[i][j] of block b.
Out doc_out(const Case& c, int i, int j, int b) {
  if (c.M == 32) return {j + 32 * ((i / 4) % 2), 16 * b + 4 * (i / 8) + i % 4};
  if (c.M == 16) return {j + 16 * (i / 4), 4 * b + i % 4};
  return {4 * b + j, i};  // 4x4 blocks: block b in lanes 4b..4b+3, row i in register i
}

uint32_t get(const std::vector<uint32_t>& img, int regs, int wave, int lane, int elem, int bits) {
  const size_t at = (size_t(wave) * 64 + lane) * regs + elem * bits / 32;
  if (bits == 32) return img[at];
  const int sh = elem * bits % 32;
  uint64_t w = img[at];
  if (sh + bits > 32) w |= uint64_t(img[at + 1]) << 32;
  return uint32_t(w >> sh) & ((1u << bits) - 1);
}
void put(std::vector<uint32_t>& img, int regs, int wave, int lane, int elem, int bits, uint32_t v) {
  const size_t at = (size_t(wave) * 64 + lane) * regs + elem * bits / 32;
  if (bits == 32) {
    img[at] = v;
    return;
  }
  const int sh = elem * bits % 32;
  const uint64_t mask = uint64_t((1u << bits) - 1) << sh, x = uint64_t(v) << sh & mask;
  img[at] = uint32_t((img[at] & ~mask) | x);
  if (sh + bits > 32) img[at + 1] = uint32_t((img[at + 1] & ~(mask >> 32)) | x >> 32);
}

// Lane a lane's A / B registers come from under cbsz/abid and blgp (ISA broadcast table).
int src_a(const Case& c, int l) {
  const int s = 64 >> c.cbsz;
  return c.cbsz ? l % s + s * c.abid : l;
}
int src_b(const Case& c, int l) {
  switch (c.blgp) {
    case 1: return l % 32;
    case 2: return l % 32 + 32;
    case 3: return (l + 16) % 64;
    case 4: case 5: case 6: case 7: return l % 16 + 16 * (c.blgp - 4);
    default: return l;
  }
}

// --- Host side: running ----------------------------------------------------------------------------------------

struct Images {
  std::vector<uint32_t> a, b, c, sa, sb;
  Images(const Case& cs, int waves)
      : a(size_t(waves) * 64 * cs.na), b(size_t(waves) * 64 * cs.nb), c(size_t(waves) * 64 * cs.nc),
        sa(size_t(waves) * 64, 0x7f7f7f7f), sb(size_t(waves) * 64, 0x7f7f7f7f) {}
};

std::vector<uint32_t> run(const Case& cs, int waves, const Images& im) {
  uint32_t *a, *b, *c, *sa, *sb, *d;
  const size_t nd = size_t(waves) * 64 * cs.nc;
  auto up = [](uint32_t** p, const std::vector<uint32_t>& v) {
    EXPECT_EQ(hipMalloc(p, v.size() * 4), hipSuccess);
    EXPECT_EQ(hipMemcpy(*p, v.data(), v.size() * 4, hipMemcpyHostToDevice), hipSuccess);
  };
  up(&a, im.a), up(&b, im.b), up(&c, im.c), up(&sa, im.sa), up(&sb, im.sb);
  EXPECT_EQ(hipMalloc(&d, nd * 4), hipSuccess);
  cs.launch(waves, a, b, c, sa, sb, d);
  EXPECT_EQ(hipDeviceSynchronize(), hipSuccess);
  std::vector<uint32_t> out(nd);
  EXPECT_EQ(hipMemcpy(out.data(), d, nd * 4, hipMemcpyDeviceToHost), hipSuccess);
  for (uint32_t* p : {a, b, c, sa, sb, d}) (void)hipFree(p);
  return out;
}

template <class Op>
void launch(int waves, const uint32_t* a, const uint32_t* b, const uint32_t* c, const uint32_t* sa, const uint32_t* sb,
            uint32_t* d) {
  hipLaunchKernelGGL(run_op<Op>, dim3(waves), dim3(64), 0, 0, a, b, c, sa, sb, d);
}

template <class Op>
Case mk(std::string name, int M, int N, int K, int blocks, El ea, El eb, bool on942, bool on950, bool on90a = false) {
  Case c{name, M, N, K, blocks, ea, eb, on942, on950, on90a, Op::na, Op::nb, Op::nc, launch<Op>};
  return c;
}

std::vector<Case> all_cases() {
  using enum El;
  std::vector<Case> v = {
      mk<F16_16x16x16>("f16_16x16x16", 16, 16, 16, 1, f16, f16, true, true, true),
      mk<BF16_16x16x16>("bf16_16x16x16", 16, 16, 16, 1, bf16, bf16, true, true, true),
      mk<F16_32x32x8>("f16_32x32x8", 32, 32, 8, 1, f16, f16, true, true, true),
      mk<BF16_32x32x8>("bf16_32x32x8", 32, 32, 8, 1, bf16, bf16, true, true, true),
      mk<F16_4x4x4_16B>("f16_4x4x4_16b", 4, 4, 4, 16, f16, f16, true, true, true),
      mk<BF16_4x4x4_16B>("bf16_4x4x4_16b", 4, 4, 4, 16, bf16, bf16, true, true, true),
      mk<F16_16x16x4_4B>("f16_16x16x4_4b", 16, 16, 4, 4, f16, f16, true, true, true),
      mk<BF16_32x32x4_2B>("bf16_32x32x4_2b", 32, 32, 4, 2, bf16, bf16, true, true, true),
      mk<F32_16x16x4>("f32_16x16x4", 16, 16, 4, 1, f32, f32, true, true, true),
      mk<F32_32x32x2>("f32_32x32x2", 32, 32, 2, 1, f32, f32, true, true, true),
      mk<F32_4x4x1_16B>("f32_4x4x1_16b", 4, 4, 1, 16, f32, f32, true, true, true),
      mk<F32_16x16x1_4B>("f32_16x16x1_4b", 16, 16, 1, 4, f32, f32, true, true, true),
      mk<F32_32x32x1_2B>("f32_32x32x1_2b", 32, 32, 1, 2, f32, f32, true, true, true),
      mk<I8_16x16x32>("i8_16x16x32", 16, 16, 32, 1, i8, i8, true, true),
      mk<I8_32x32x16>("i8_32x32x16", 32, 32, 16, 1, i8, i8, true, true),
      mk<I8_4x4x4_16B>("i8_4x4x4_16b", 4, 4, 4, 16, i8, i8, true, true, true),
      mk<I8_32x32x4_2B>("i8_32x32x4_2b", 32, 32, 4, 2, i8, i8, true, true, true),
      mk<FP8_FP8_16x16x32>("fp8_fp8_16x16x32", 16, 16, 32, 1, fp8, fp8, true, true),
      mk<FP8_BF8_16x16x32>("fp8_bf8_16x16x32", 16, 16, 32, 1, fp8, bf8, true, true),
      mk<BF8_FP8_16x16x32>("bf8_fp8_16x16x32", 16, 16, 32, 1, bf8, fp8, true, true),
      mk<BF8_BF8_16x16x32>("bf8_bf8_16x16x32", 16, 16, 32, 1, bf8, bf8, true, true),
      mk<FP8_FP8_32x32x16>("fp8_fp8_32x32x16", 32, 32, 16, 1, fp8, fp8, true, true),
      mk<FP8_BF8_32x32x16>("fp8_bf8_32x32x16", 32, 32, 16, 1, fp8, bf8, true, true),
      mk<BF8_FP8_32x32x16>("bf8_fp8_32x32x16", 32, 32, 16, 1, bf8, fp8, true, true),
      mk<BF8_BF8_32x32x16>("bf8_bf8_32x32x16", 32, 32, 16, 1, bf8, bf8, true, true),
      mk<XF32_16x16x8>("xf32_16x16x8", 16, 16, 8, 1, xf32, xf32, true, false),
      mk<XF32_32x32x4>("xf32_32x32x4", 32, 32, 4, 1, xf32, xf32, true, false),
      mk<F16_16x16x32>("f16_16x16x32", 16, 16, 32, 1, f16, f16, false, true),
      mk<BF16_16x16x32>("bf16_16x16x32", 16, 16, 32, 1, bf16, bf16, false, true),
      mk<F16_32x32x16>("f16_32x32x16", 32, 32, 16, 1, f16, f16, false, true),
      mk<BF16_32x32x16>("bf16_32x32x16", 32, 32, 16, 1, bf16, bf16, false, true),
      mk<I8_16x16x64>("i8_16x16x64", 16, 16, 64, 1, i8, i8, false, true),
      mk<I8_32x32x32>("i8_32x32x32", 32, 32, 32, 1, i8, i8, false, true),
      mk<F8F6F4_FP8_BF8_16x16x128>("f8f6f4_fp8_bf8_16x16x128", 16, 16, 128, 1, fp8, bf8, false, true),
      mk<F8F6F4_BF8_FP8_32x32x64>("f8f6f4_bf8_fp8_32x32x64", 32, 32, 64, 1, bf8, fp8, false, true),
      mk<BF16_32x32x2_2B>("bf16_32x32x2_2b", 32, 32, 2, 2, bf16, bf16, false, false, true),
      mk<BF16_16x16x2_4B>("bf16_16x16x2_4b", 16, 16, 2, 4, bf16, bf16, false, false, true),
      mk<BF16_4x4x2_16B>("bf16_4x4x2_16b", 4, 4, 2, 16, bf16, bf16, false, false, true),
      mk<BF16_32x32x4>("bf16_32x32x4", 32, 32, 4, 1, bf16, bf16, false, false, true),
      mk<BF16_16x16x8>("bf16_16x16x8", 16, 16, 8, 1, bf16, bf16, false, false, true),
      mk<I8_32x32x8>("i8_32x32x8", 32, 32, 8, 1, i8, i8, false, false, true),
      mk<I8_16x16x16>("i8_16x16x16", 16, 16, 16, 1, i8, i8, false, false, true),
  };
  auto perm = [](Case c, int cbsz, int abid, int blgp) {
    c.cbsz = cbsz, c.abid = abid, c.blgp = blgp;
    return c;
  };
  v.push_back(mk<F16_16x16x16_AGPR>("f16_16x16x16_agpr", 16, 16, 16, 1, f16, f16, true, true, true));
  v.push_back(perm(mk<F16_16x16x16_BLGP3>("f16_16x16x16_blgp3", 16, 16, 16, 1, f16, f16, true, true, true), 0, 0, 3));
  v.push_back(perm(mk<BF16_32x32x8_CBSZ1_ABID1_BLGP2>("bf16_32x32x8_cbsz1_abid1_blgp2", 32, 32, 8, 1, bf16, bf16, true,
                                                      true, true),
                   1, 1, 2));
  v.push_back(perm(mk<F16_4x4x4_16B_CBSZ4_ABID5_BLGP5>("f16_4x4x4_16b_cbsz4_abid5_blgp5", 4, 4, 4, 16, f16, f16, true,
                                                       true, true),
                   4, 5, 5));
  v.push_back(perm(mk<F32_16x16x1_4B_CBSZ2_ABID3_BLGP6>("f32_16x16x1_4b_cbsz2_abid3_blgp6", 16, 16, 1, 4, f32, f32,
                                                        true, true, true),
                   2, 3, 6));
  auto scaled = [](Case c, int sel_a, int sel_b) {
    c.scaled = true, c.sel_a = sel_a, c.sel_b = sel_b;
    return c;
  };
  v.push_back(scaled(mk<SCALE_FP8_FP8_16x16x128>("scale_fp8_fp8_16x16x128", 16, 16, 128, 1, fp8, fp8, false, true), 0, 0));
  v.push_back(scaled(mk<SCALE_FP8_BF8_16x16x128>("scale_fp8_bf8_16x16x128", 16, 16, 128, 1, fp8, bf8, false, true), 1, 2));
  v.push_back(scaled(mk<SCALE_BF8_FP8_16x16x128>("scale_bf8_fp8_16x16x128", 16, 16, 128, 1, bf8, fp8, false, true), 3, 0));
  v.push_back(scaled(mk<SCALE_BF8_BF8_16x16x128>("scale_bf8_bf8_16x16x128", 16, 16, 128, 1, bf8, bf8, false, true), 2, 3));
  v.push_back(scaled(mk<SCALE_FP8_FP8_32x32x64>("scale_fp8_fp8_32x32x64", 32, 32, 64, 1, fp8, fp8, false, true), 0, 0));
  v.push_back(scaled(mk<SCALE_FP8_BF8_32x32x64>("scale_fp8_bf8_32x32x64", 32, 32, 64, 1, fp8, bf8, false, true), 3, 1));
  v.push_back(scaled(mk<SCALE_BF8_FP8_32x32x64>("scale_bf8_fp8_32x32x64", 32, 32, 64, 1, bf8, fp8, false, true), 2, 2));
  v.push_back(scaled(mk<SCALE_BF8_BF8_32x32x64>("scale_bf8_bf8_32x32x64", 32, 32, 64, 1, bf8, bf8, false, true), 1, 0));
  // fp6 / fp4: each format as A and as B of both shapes, against an fp8 partner (which names k in the layout probes)
  // and against each other.
  v.push_back(scaled(mk<SCALE_FP6_FP8_16x16x128>("scale_fp6_fp8_16x16x128", 16, 16, 128, 1, e2m3, fp8, false, true), 1, 0));
  v.push_back(scaled(mk<SCALE_FP8_BF6_16x16x128>("scale_fp8_bf6_16x16x128", 16, 16, 128, 1, fp8, e3m2, false, true), 0, 2));
  v.push_back(scaled(mk<SCALE_FP4_BF8_16x16x128>("scale_fp4_bf8_16x16x128", 16, 16, 128, 1, e2m1, bf8, false, true), 2, 1));
  v.push_back(scaled(mk<SCALE_FP8_FP4_16x16x128>("scale_fp8_fp4_16x16x128", 16, 16, 128, 1, fp8, e2m1, false, true), 3, 3));
  v.push_back(scaled(mk<SCALE_BF6_FP4_16x16x128>("scale_bf6_fp4_16x16x128", 16, 16, 128, 1, e3m2, e2m1, false, true), 0, 1));
  v.push_back(scaled(mk<SCALE_FP4_FP4_16x16x128>("scale_fp4_fp4_16x16x128", 16, 16, 128, 1, e2m1, e2m1, false, true), 1, 0));
  v.push_back(scaled(mk<SCALE_BF6_FP8_32x32x64>("scale_bf6_fp8_32x32x64", 32, 32, 64, 1, e3m2, fp8, false, true), 0, 0));
  v.push_back(scaled(mk<SCALE_FP8_FP6_32x32x64>("scale_fp8_fp6_32x32x64", 32, 32, 64, 1, fp8, e2m3, false, true), 2, 3));
  v.push_back(scaled(mk<SCALE_FP4_FP8_32x32x64>("scale_fp4_fp8_32x32x64", 32, 32, 64, 1, e2m1, fp8, false, true), 1, 1));
  v.push_back(scaled(mk<SCALE_BF8_FP4_32x32x64>("scale_bf8_fp4_32x32x64", 32, 32, 64, 1, bf8, e2m1, false, true), 3, 0));
  v.push_back(scaled(mk<SCALE_FP6_FP6_32x32x64>("scale_fp6_fp6_32x32x64", 32, 32, 64, 1, e2m3, e2m3, false, true), 0, 2));
  v.push_back(scaled(mk<SCALE_FP4_BF6_32x32x64>("scale_fp4_bf6_32x32x64", 32, 32, 64, 1, e2m1, e3m2, false, true), 2, 1));
  v.push_back(mk<F8F6F4_FP4_FP6_16x16x128>("f8f6f4_fp4_fp6_16x16x128", 16, 16, 128, 1, e2m1, e2m3, false, true));
  return v;
}

// Scale register of a lane: byte `sel` holds `s`, the other bytes hold 0xff (NaN) so that a wrong byte shows.
uint32_t scale_word(int sel, int s) { return (0xffffffffu & ~(0xffu << (8 * sel))) | uint32_t(s) << (8 * sel); }

class Mfma : public testing::TestWithParam<Case> {
 protected:
  bool gfx950 = false;
  void SetUp() override {
    gfx950 = is_gfx950();
    const Case& c = GetParam();
    if (!c.exists_here()) GTEST_SKIP() << c.name << " does not exist on this arch";
  }
};

TEST_P(Mfma, RandomMatchesHostMatmul) {
  const Case& c = GetParam();
  const int waves = 3, ba = bits_of(c.ea), bb = bits_of(c.eb);
  const int ea = c.K * c.M * c.blocks / 64, eb = c.K * c.N * c.blocks / 64;  // elements per lane
  std::mt19937 rng(std::hash<std::string>{}(c.name));
  Images im(c, waves);
  for (int w = 0; w < waves; ++w)
    for (int l = 0; l < 64; ++l) {
      for (int e = 0; e < ea; ++e) put(im.a, c.na, w, l, e, ba, random_bits(c.ea, gfx950, rng));
      for (int e = 0; e < eb; ++e) put(im.b, c.nb, w, l, e, bb, random_bits(c.eb, gfx950, rng));
      for (int r = 0; r < c.nc; ++r)
        im.c[(size_t(w) * 64 + l) * c.nc + r] =
            c.integer() ? uint32_t(int(rng() % 2001) - 1000)
                        : std::bit_cast<uint32_t>(std::uniform_real_distribution<float>(-4.f, 4.f)(rng));
    }
  // Scales: 2^(s - 127) with s in [120, 134] per row of A / column of B and block of 32 k.
  const int kblocks = c.scaled ? c.K / 32 : 1;
  std::vector<int> sa(size_t(waves) * c.M * kblocks, 127), sb(size_t(waves) * c.N * kblocks, 127);
  if (c.scaled)
    for (int w = 0; w < waves; ++w)
      for (int kb = 0; kb < kblocks; ++kb) {
        for (int i = 0; i < c.M; ++i) {
          int& s = sa[(size_t(w) * c.M + i) * kblocks + kb];
          s = 120 + int(rng() % 15);
          im.sa[size_t(w) * 64 + i + c.M * kb] = scale_word(c.sel_a, s);
        }
        for (int j = 0; j < c.N; ++j) {
          int& s = sb[(size_t(w) * c.N + j) * kblocks + kb];
          s = 120 + int(rng() % 15);
          im.sb[size_t(w) * 64 + j + c.N * kb] = scale_word(c.sel_b, s);
        }
      }
  const std::vector<uint32_t> d = run(c, waves, im);

  int bad = 0;
  for (int w = 0; w < waves; ++w)
    for (int b = 0; b < c.blocks; ++b)
      for (int i = 0; i < c.M; ++i)
        for (int j = 0; j < c.N; ++j) {
          const Out o = doc_out(c, i, j, b);
          const uint32_t cbits = im.c[(size_t(w) * 64 + o.lane) * c.nc + o.reg];
          const uint32_t got = d[(size_t(w) * 64 + o.lane) * c.nc + o.reg];
          double want = c.integer() ? double(int32_t(cbits)) : double(std::bit_cast<float>(cbits));
          double mag = std::fabs(want);
          int64_t iwant = int32_t(cbits);
          for (int k = 0; k < c.K; ++k) {
            const Slot s1 = doc_in(c, c.M, i, k, b, ba), s2 = doc_in(c, c.N, j, k, b, bb);
            const double x = value_of(c.ea, get(im.a, c.na, w, src_a(c, s1.lane), s1.elem, ba), gfx950);
            const double y = value_of(c.eb, get(im.b, c.nb, w, src_b(c, s2.lane), s2.elem, bb), gfx950);
            const int kb = k / 32;
            const double scale = c.scaled ? std::ldexp(1.0, sa[(size_t(w) * c.M + i) * kblocks + kb] +
                                                                sb[(size_t(w) * c.N + j) * kblocks + kb] - 254)
                                          : 1.0;
            want += x * y * scale;
            mag += std::fabs(x * y * scale);
            iwant += int64_t(x) * int64_t(y);
          }
          if (c.integer()) {
            if (int32_t(got) != int32_t(uint32_t(iwant)) && bad++ < 5)
              ADD_FAILURE() << c.name << " wave " << w << " block " << b << " D[" << i << "][" << j << "] = "
                            << int32_t(got) << ", want " << int32_t(uint32_t(iwant));
          } else {
            const double g = std::bit_cast<float>(got);
            if (!(std::fabs(g - want) <= (c.K + 8) * std::ldexp(mag, -23) + 1e-30) && bad++ < 5)
              ADD_FAILURE() << c.name << " wave " << w << " block " << b << " D[" << i << "][" << j << "] = " << g
                            << ", want " << want << " (sum of |terms| " << mag << ")";
          }
        }
  EXPECT_EQ(bad, 0);
}

// One wave per register slot of A (IsA) or B: that slot holds 1, the other operand names k by value, C = 0.
void layout_probe(const Case& c, bool gfx950, bool is_a) {
  if (c.permuted()) GTEST_SKIP() << "broadcast cases are covered by the random test";
  const int dim = is_a ? c.M : c.N, other = is_a ? c.N : c.M;
  const El probe_el = is_a ? c.ea : c.eb, name_el = is_a ? c.eb : c.ea;
  if (sub_byte(name_el)) GTEST_SKIP() << "fp6/fp4 cannot name every k; the fp8-partner cases probe this layout";
  const int bits = bits_of(probe_el), per_lane = c.K * dim * c.blocks / 64, waves = 64 * per_lane;
  Images im(c, waves);
  const uint32_t one = bits_for(probe_el, 1.0, gfx950);
  std::vector<uint32_t> names(c.K);
  for (int k = 0; k < c.K; ++k) names[k] = k_name_bits(name_el, k, gfx950);
  std::vector<uint32_t>& named = is_a ? im.b : im.a;
  const int named_regs = is_a ? c.nb : c.na;
  for (int b = 0; b < c.blocks; ++b)
    for (int r = 0; r < other; ++r)
      for (int k = 0; k < c.K; ++k) {
        const Slot s = doc_in(c, other, r, k, b, bits_of(name_el));
        put(named, named_regs, 0, s.lane, s.elem, bits_of(name_el), names[k]);
      }
  for (int w = 0; w < waves; ++w) {
    put(is_a ? im.a : im.b, is_a ? c.na : c.nb, w, w / per_lane, w % per_lane, bits, one);
    std::copy_n(named.begin(), 64 * named_regs, named.begin() + size_t(w) * 64 * named_regs);
  }
  if (c.scaled)
    for (int l = 0; l < 64 * waves; ++l) im.sa[l] = scale_word(c.sel_a, 127), im.sb[l] = scale_word(c.sel_b, 127);
  const std::vector<uint32_t> d = run(c, waves, im);

  // The documented (row or column, k, block) of every slot.
  std::vector<int> at_r(64 * per_lane, -1), at_k(64 * per_lane), at_b(64 * per_lane);
  for (int b = 0; b < c.blocks; ++b)
    for (int r = 0; r < dim; ++r)
      for (int k = 0; k < c.K; ++k) {
        const Slot s = doc_in(c, dim, r, k, b, bits);
        at_r[s.lane * per_lane + s.elem] = r, at_k[s.lane * per_lane + s.elem] = k, at_b[s.lane * per_lane + s.elem] = b;
      }
  int bad = 0;
  for (int w = 0; w < waves; ++w) {
    ASSERT_GE(at_r[w], 0) << "the documented layout leaves slot " << w << " unused";
    const double want_v = value_of(name_el, names[at_k[w]], gfx950);
    std::ostringstream seen;
    bool ok = true;
    for (int b = 0; b < c.blocks; ++b)
      for (int i = 0; i < c.M; ++i)
        for (int j = 0; j < c.N; ++j) {
          const Out o = doc_out(c, i, j, b);
          const uint32_t x = d[(size_t(w) * 64 + o.lane) * c.nc + o.reg];
          const double got = c.integer() ? double(int32_t(x)) : double(std::bit_cast<float>(x));
          const bool lit = b == at_b[w] && (is_a ? i : j) == at_r[w];
          if (got != (lit ? want_v : 0.0)) {
            ok = false;
            if (got != 0 && seen.tellp() < 200) seen << " D[" << i << "][" << j << "]b" << b << "=" << got;
          }
        }
    if (!ok && bad++ < 5)
      ADD_FAILURE() << c.name << ": " << (is_a ? "A" : "B") << " slot lane " << w / per_lane << " element "
                    << w % per_lane << " should be " << (is_a ? "A[" : "B[k][") << at_r[w]
                    << (is_a ? "][k]" : "]") << " with k = " << at_k[w] << " (block " << at_b[w]
                    << "), lighting that " << (is_a ? "row" : "column") << " with " << want_v << "; nonzero D:" << seen.str();
  }
  EXPECT_EQ(bad, 0);
}

TEST_P(Mfma, LayoutA) { layout_probe(GetParam(), gfx950, true); }
TEST_P(Mfma, LayoutB) { layout_probe(GetParam(), gfx950, false); }

// One wave per scale lane: that lane's selected byte holds 128 (2.0), every other scale 127 (1.0). A[i][k] * B[k][j] =
// 2^kb (kb = k/32; A = 2^floor(kb/2), B the rest, so that fp4 holds both), so D[i][j] = sum over k-blocks of 32 * 2^kb,
// with the documented row i = lane mod M and block kb = lane / M (for B: column and block) doubled.
void scale_probe(const Case& c, bool gfx950, bool is_a) {
  if (!c.scaled) GTEST_SKIP() << "not a scaled instruction";
  const int waves = 64, dim = is_a ? c.M : c.N;
  Images im(c, waves);
  const int ba = bits_of(c.ea), bb = bits_of(c.eb);
  for (int w = 0; w < waves; ++w) {
    for (int l = 0; l < 64; ++l) {
      im.sa[size_t(w) * 64 + l] = scale_word(c.sel_a, is_a && l == w ? 128 : 127);
      im.sb[size_t(w) * 64 + l] = scale_word(c.sel_b, !is_a && l == w ? 128 : 127);
    }
    for (int i = 0; i < c.M; ++i)
      for (int k = 0; k < c.K; ++k) {
        const Slot s = doc_in(c, c.M, i, k, 0, ba);
        put(im.a, c.na, w, s.lane, s.elem, ba, bits_for(c.ea, std::ldexp(1.0, k / 32 / 2), gfx950));
      }
    for (int j = 0; j < c.N; ++j)
      for (int k = 0; k < c.K; ++k) {
        const Slot s = doc_in(c, c.N, j, k, 0, bb);
        put(im.b, c.nb, w, s.lane, s.elem, bb, bits_for(c.eb, std::ldexp(1.0, k / 32 - k / 32 / 2), gfx950));
      }
  }
  const std::vector<uint32_t> d = run(c, waves, im);
  int bad = 0;
  for (int w = 0; w < waves; ++w)
    for (int i = 0; i < c.M; ++i)
      for (int j = 0; j < c.N; ++j) {
        double want = 0;
        for (int kb = 0; kb < c.K / 32; ++kb)
          want += 32 * std::ldexp(1.0, kb) * ((is_a ? i : j) == w % dim && kb == w / dim ? 2 : 1);
        const Out o = doc_out(c, i, j, 0);
        const float got = std::bit_cast<float>(d[(size_t(w) * 64 + o.lane) * c.nc + o.reg]);
        if (got != want && bad++ < 5)
          ADD_FAILURE() << c.name << ": scale of " << (is_a ? "A" : "B") << " in lane " << w << " byte "
                        << (is_a ? c.sel_a : c.sel_b) << " should scale " << (is_a ? "row " : "column ") << w % dim
                        << ", k-block " << w / dim << "; D[" << i << "][" << j << "] = " << got << ", want " << want;
      }
  EXPECT_EQ(bad, 0);
}

TEST_P(Mfma, ScaleLayoutA) { scale_probe(GetParam(), gfx950, true); }
TEST_P(Mfma, ScaleLayoutB) { scale_probe(GetParam(), gfx950, false); }

INSTANTIATE_TEST_SUITE_P(All, Mfma, testing::ValuesIn(all_cases()),
                         [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

// --- Arithmetic model and scale sources -----------------------------------------------------------------------------

// vgpu's MFMA arithmetic is the fused dot-product model MMA-Sim measured on CDNA3: products aligned to the largest one
// and truncated to 24 fraction bits, summed exactly, then rounded once to f32. With 1*1 + (1.5*2^-12)*(2^-12) the
// small product truncates to 2^-24 and 1 + 2^-24 rounds (tie to even) to 1; a chain of f32 fmas would give 1 + 2^-23.
TEST(MfmaModel, FusedDotProductTruncatesThenRoundsOnce) {
  const bool gfx950 = is_gfx950();
  const Case c = mk<BF16_16x16x16>("bf16", 16, 16, 16, 1, El::bf16, El::bf16, true, true, true);
  Images im(c, 1);
  auto set_a = [&](int i, int k, double v) {
    const Slot s = doc_in(c, 16, i, k, 0, 16);
    put(im.a, c.na, 0, s.lane, s.elem, 16, bits_for(El::bf16, v, gfx950));
  };
  auto set_b = [&](int k, int j, double v) {
    const Slot s = doc_in(c, 16, j, k, 0, 16);
    put(im.b, c.nb, 0, s.lane, s.elem, 16, bits_for(El::bf16, v, gfx950));
  };
  set_a(0, 0, 1), set_b(0, 0, 1);
  set_a(0, 1, 1.5 * std::ldexp(1.0, -12)), set_b(1, 0, std::ldexp(1.0, -12));
  const std::vector<uint32_t> d = run(c, 1, im);
  const Out o = doc_out(c, 0, 0, 0);
  EXPECT_EQ(std::bit_cast<float>(d[o.lane * c.nc + o.reg]), 1.0f);
}

// A uniform scale that LLVM places in an SGPR or an inline constant: the hardware takes bits 30:23 of the 32-bit
// value as the E8M0 scale (LLVM PR 158117), so the integer 127 scales by 2^-127 each (the products vanish) while
// the float constants 2.0 and 1.0 scale by 2 and 1.
TEST(MfmaModel, ScaleFromSgprOrInlineConstantUsesBits30To23) {
  if (!is_gfx950()) GTEST_SKIP() << "scaled MFMA is gfx950 only";
  for (int variant = 0; variant < 2; ++variant) {
    Case c = variant == 0 ? mk<SCALE_SGPR_127>("sgpr127", 16, 16, 128, 1, El::fp8, El::fp8, false, true)
                          : mk<SCALE_INLINE_2F_1F>("inline2", 16, 16, 128, 1, El::fp8, El::fp8, false, true);
    Images im(c, 1);
    const uint32_t one = bits_for(El::fp8, 1.0, true);
    for (int l = 0; l < 64; ++l)
      for (int e = 0; e < 32; ++e) put(im.a, 8, 0, l, e, 8, one), put(im.b, 8, 0, l, e, 8, one);
    for (int x = 0; x < 64 * 4; ++x) im.c[x] = std::bit_cast<uint32_t>(0.5f);
    // The defect is reported once per kernel, however often it runs: two launches, one warning.
    testing::internal::CaptureStderr();
    const std::vector<uint32_t> d = run(c, 1, im);
    (void)run(c, 1, im);
    const std::string warned = testing::internal::GetCapturedStderr();
    const float want = variant == 0 ? 0.5f : 0.5f + 2 * 128;
    for (int x = 0; x < 64 * 4; ++x) ASSERT_EQ(std::bit_cast<float>(d[x]), want) << c.name << " element " << x;
    const std::string line = "vgpu: warning: hardware defect in kernel ";
    const size_t at = warned.find(line);
    ASSERT_NE(at, std::string::npos) << warned;
    EXPECT_EQ(warned.find(line, at + 1), std::string::npos) << "reported twice: " << warned;
    for (const char* part : {"v_mfma_scale_f32_16x16x128_f8f6f4", "bits 30:23", "2^-127", " pc 0x"})
      EXPECT_NE(warned.find(part), std::string::npos) << part << " not in: " << warned;
  }
}

// C as an inline constant: the builtins with a zero or splat-1.0 accumulator compile to "..., 0" / "..., 1.0".
TEST(MfmaModel, InlineConstantAccumulator) {
  const bool gfx950 = is_gfx950();
  struct Variant {
    Case c;
    double c_value;
  };
  const Variant variants[] = {
      {mk<F16_16x16x16_C0>("f16_c0", 16, 16, 16, 1, El::f16, El::f16, true, true, true), 0.0},
      {mk<I8_32x32x16_C0>("i8_c0", 32, 32, 16, 1, El::i8, El::i8, true, true), 0.0},
      {mk<BF16_32x32x8_C1>("bf16_c1", 32, 32, 8, 1, El::bf16, El::bf16, true, true, true), 1.0},
  };
  for (const Variant& v : variants) {
    const Case& c = v.c;
    if (!c.exists_here()) continue;
    std::mt19937 rng(5);
    Images im(c, 1);
    const int ba = bits_of(c.ea);
    for (int l = 0; l < 64; ++l)
      for (int e = 0; e < c.K * c.M / 64; ++e)
        put(im.a, c.na, 0, l, e, ba, random_bits(c.ea, gfx950, rng)), put(im.b, c.nb, 0, l, e, ba, random_bits(c.eb, gfx950, rng));
    for (auto& x : im.c) x = 0x7fc00000;  // NaN: must not be read
    const std::vector<uint32_t> d = run(c, 1, im);
    for (int i = 0; i < c.M; ++i)
      for (int j = 0; j < c.N; ++j) {
        double want = v.c_value;
        for (int k = 0; k < c.K; ++k) {
          const Slot s1 = doc_in(c, c.M, i, k, 0, ba), s2 = doc_in(c, c.N, j, k, 0, ba);
          want += value_of(c.ea, get(im.a, c.na, 0, s1.lane, s1.elem, ba), gfx950) *
                  value_of(c.eb, get(im.b, c.nb, 0, s2.lane, s2.elem, ba), gfx950);
        }
        const Out o = doc_out(c, i, j, 0);
        const uint32_t x = d[o.lane * c.nc + o.reg];
        const double got = c.integer() ? double(int32_t(x)) : double(std::bit_cast<float>(x));
        ASSERT_NEAR(got, want, 1e-5 * (1 + std::fabs(want))) << c.name << " D[" << i << "][" << j << "]";
      }
  }
}

// --- f64 ----------------------------------------------------------------------------------------------------------
// The layouts of AMD's matrix instruction calculator (CDNA2 and CDNA3 tables), in its terms: A[i][k] of block b in
// lane M*b + 16k + i (B[k][j] likewise with j), one f64 per lane in the operand's register pair; C/D[i][j] of block b
// in register pair floor(i/4), lane 16 (i mod 4) + N b + j.
namespace f64 {

struct Form {
  Case c;
  bool c_zero;  // C is the inline constant 0
};
int in_lane(const Case& c, int i, int k, int b) { return c.M * b + 16 * k + i; }
Out out_at(const Case& c, int i, int j, int b) { return {16 * (i % 4) + c.N * b + j, 2 * (i / 4)}; }

double get(const std::vector<uint32_t>& img, int regs, int wave, int lane, int reg) {
  const size_t at = (size_t(wave) * 64 + lane) * regs + reg;
  return std::bit_cast<double>(uint64_t(img[at + 1]) << 32 | img[at]);
}
void put(std::vector<uint32_t>& img, int regs, int wave, int lane, int reg, double v) {
  const size_t at = (size_t(wave) * 64 + lane) * regs + reg;
  const uint64_t u = std::bit_cast<uint64_t>(v);
  img[at] = uint32_t(u), img[at + 1] = uint32_t(u >> 32);
}

std::vector<Form> forms() {
  using enum El;
  return {{mk<F64_16x16x4>("f64_16x16x4", 16, 16, 4, 1, f32, f32, true, true, true), false},
          {mk<F64_4x4x4_4B>("f64_4x4x4_4b", 4, 4, 4, 4, f32, f32, true, true, true), false},
          {mk<F64_16x16x4_C0>("f64_16x16x4_c0", 16, 16, 4, 1, f32, f32, true, true, true), true}};
}

// Random A, B and C against a host sum in long double: within (K + 2) units of 2^-52 of the sum of |terms|.
TEST(MfmaF64, RandomMatchesHostMatmul) {
  for (const Form& f : forms()) {
    const Case& c = f.c;
    const int waves = 3;
    std::mt19937 rng(std::hash<std::string>{}(c.name));
    std::uniform_real_distribution<double> u(-2, 2);
    Images im(c, waves);
    for (int w = 0; w < waves; ++w)
      for (int l = 0; l < 64; ++l) {
        put(im.a, c.na, w, l, 0, u(rng)), put(im.b, c.nb, w, l, 0, u(rng));
        for (int r = 0; r < c.nc; r += 2) put(im.c, c.nc, w, l, r, 4 * u(rng));
      }
    const std::vector<uint32_t> d = run(c, waves, im);
    int bad = 0;
    for (int w = 0; w < waves; ++w)
      for (int b = 0; b < c.blocks; ++b)
        for (int i = 0; i < c.M; ++i)
          for (int j = 0; j < c.N; ++j) {
            const Out o = out_at(c, i, j, b);
            long double want = f.c_zero ? 0 : get(im.c, c.nc, w, o.lane, o.reg), mag = std::fabs(want);
            for (int k = 0; k < c.K; ++k) {
              const long double t = (long double)get(im.a, c.na, w, in_lane(c, i, k, b), 0) *
                                    get(im.b, c.nb, w, in_lane(c, j, k, b), 0);
              want += t, mag += std::fabs(t);
            }
            const double got = get(d, c.nc, w, o.lane, o.reg);
            if (!(std::fabs(got - double(want)) <= (c.K + 2) * std::ldexp(double(mag), -52)) && bad++ < 5)
              ADD_FAILURE() << c.name << " wave " << w << " block " << b << " D[" << i << "][" << j << "] = " << got
                            << ", want " << double(want);
          }
    EXPECT_EQ(bad, 0) << c.name;
  }
}

// One wave per lane of A (B): that lane holds 1, the other operand holds k + 1 at every documented A[.][k] (B[k][.]),
// C = 0: D must be k + 1 on exactly the documented row (column) and block of the lane, 0 elsewhere.
TEST(MfmaF64, LayoutProbes) {
  for (const Form& f : forms()) {
    const Case& c = f.c;
    for (bool is_a : {true, false}) {
      Images im(c, 64);
      for (int w = 0; w < 64; ++w) {
        for (int b = 0; b < c.blocks; ++b)
          for (int r = 0; r < (is_a ? c.N : c.M); ++r)
            for (int k = 0; k < c.K; ++k)
              put(is_a ? im.b : im.a, 2, w, in_lane(c, r, k, b), 0, k + 1);
        put(is_a ? im.a : im.b, 2, w, w, 0, 1.0);
      }
      const std::vector<uint32_t> d = run(c, 64, im);
      int bad = 0;
      for (int w = 0; w < 64; ++w) {
        const int dim = is_a ? c.M : c.N, b_of = (w % 16) / dim, r_of = w % 16 % dim, k_of = w / 16;
        ASSERT_EQ(in_lane(c, r_of, k_of, b_of), w);
        for (int b = 0; b < c.blocks; ++b)
          for (int i = 0; i < c.M; ++i)
            for (int j = 0; j < c.N; ++j) {
              const Out o = out_at(c, i, j, b);
              const bool lit = b == b_of && (is_a ? i : j) == r_of;
              const double got = get(d, c.nc, w, o.lane, o.reg);
              if (got != (lit ? k_of + 1 : 0.0) && bad++ < 5)
                ADD_FAILURE() << c.name << ": " << (is_a ? "A" : "B") << " lane " << w << " (row/column " << r_of
                              << ", k " << k_of << ", block " << b_of << "): D[" << i << "][" << j << "] of block "
                              << b << " = " << got;
            }
      }
      EXPECT_EQ(bad, 0) << c.name << (is_a ? " A" : " B");
    }
  }
}

}  // namespace f64
