// Vector types for the fused MFMA arithmetic (mfma_fused_simd.inc), one per x86 instruction set: W int32 lanes (I),
// W floats (F), lane masks (M), and W doubles as two halves (D); Ih holds the exponents of Wh columns in 16-bit lanes
// (twice W where the set has room, so that one operation serves twice the columns). Each set's functions are compiled for that set only
// (target attributes), so the binary runs anywhere x86-64-v2 does and the wider ones are used where the CPU has them.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace vgpu::simd {

#pragma GCC push_options
#pragma GCC target("sse4.1")
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("sse4.1"))), apply_to = function)
#endif
struct Sse41 {
  static constexpr int W = 4;
  static constexpr const char* name = "sse4.1";
  using I = __m128i;
  using F = __m128;
  using D = __m128d;
  using M = __m128i;
  static I set1(int x) { return _mm_set1_epi32(x); }
  static I load(const int32_t* p) { return _mm_loadu_si128((const __m128i*)p); }
  static void store(int32_t* p, I x) { _mm_storeu_si128((__m128i*)p, x); }
  static I add(I a, I b) { return _mm_add_epi32(a, b); }
  static I sub(I a, I b) { return _mm_sub_epi32(a, b); }
  static I max(I a, I b) { return _mm_max_epi32(a, b); }
  static I min_u(I a, I b) { return _mm_min_epu32(a, b); }  // unsigned
  // -1 << n per lane, n in [0, 30]: -(2^n), 2^n built as a float (SSE4.1 has no per-lane shifts).
  static I ones_from(I n) {
    return _mm_sub_epi32(_mm_setzero_si128(), _mm_cvttps_epi32(_mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(n, _mm_set1_epi32(127)), 23))));
  }
  static I and_i(I a, I b) { return _mm_and_si128(a, b); }
  static I xor_i(I a, I b) { return _mm_xor_si128(a, b); }
  static I or_i(I a, I b) { return _mm_or_si128(a, b); }
  static I sra(I a, int n) { return _mm_srai_epi32(a, n); }
  static M sign_clear(I a) { return _mm_cmpgt_epi32(a, _mm_set1_epi32(-1)); }  // lanes whose sign bit is 0
  static M sign_set(I a) { return a; }  // lanes whose sign bit is 1 (a mask here is read by its sign bits)
  static I srl(I a, int n) { return _mm_srli_epi32(a, n); }
  static I sll(I a, int n) { return _mm_slli_epi32(a, n); }
  static M eq(I a, I b) { return _mm_cmpeq_epi32(a, b); }
  static M lt(I a, I b) { return _mm_cmplt_epi32(a, b); }
  static M gt(I a, I b) { return _mm_cmpgt_epi32(a, b); }
  static I select(M m, I if_clear, I if_set) { return _mm_blendv_epi8(if_clear, if_set, m); }
  static M all_lanes() { return _mm_set1_epi32(-1); }
  static M m_and(M a, M b) { return _mm_and_si128(a, b); }
  static M m_or(M a, M b) { return _mm_or_si128(a, b); }
  static M m_andnot(M a, M b) { return _mm_andnot_si128(a, b); }  // ~a & b
  static M m_not(M a) { return _mm_xor_si128(a, _mm_set1_epi32(-1)); }
  static unsigned lane_bits(M m) { return unsigned(_mm_movemask_ps(_mm_castsi128_ps(m))); }
  static bool all(M m) { return lane_bits(m) == 15; }
  static F set1f(float x) { return _mm_set1_ps(x); }
  static F loadf(const float* p) { return _mm_loadu_ps(p); }
  static void storef(float* p, F x) { _mm_storeu_ps(p, x); }
  static F mulf(F a, F b) { return _mm_mul_ps(a, b); }
  static I trunc_i(F a) { return _mm_cvttps_epi32(a); }
  static I bits_of(F a) { return _mm_castps_si128(a); }
  static F select_f(M m, F if_clear, F if_set) { return _mm_blendv_ps(if_clear, if_set, _mm_castsi128_ps(m)); }
  // 2^x, x clamped to float's normal range.
  static F pow2f(I x) {
    x = _mm_min_epi32(_mm_max_epi32(x, _mm_set1_epi32(-126)), _mm_set1_epi32(127));
    return _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(x, _mm_set1_epi32(127)), 23));
  }
  // 2^x as doubles, x clamped to double's normal range.
  static void pow2d(I x, D& lo, D& hi) {
    x = _mm_add_epi32(_mm_min_epi32(_mm_max_epi32(x, _mm_set1_epi32(-1022)), _mm_set1_epi32(1023)), _mm_set1_epi32(1023));
    lo = _mm_castsi128_pd(_mm_slli_epi64(_mm_cvtepi32_epi64(x), 52));
    hi = _mm_castsi128_pd(_mm_slli_epi64(_mm_cvtepi32_epi64(_mm_unpackhi_epi64(x, x)), 52));
  }
  static void to_pd(I x, D& lo, D& hi) { lo = _mm_cvtepi32_pd(x), hi = _mm_cvtepi32_pd(_mm_unpackhi_epi64(x, x)); }
  static void to_pd(F x, D& lo, D& hi) { lo = _mm_cvtps_pd(x), hi = _mm_cvtps_pd(_mm_movehl_ps(x, x)); }
  static F to_ps(D lo, D hi) { return _mm_movelh_ps(_mm_cvtpd_ps(lo), _mm_cvtpd_ps(hi)); }
  static D zero_d() { return _mm_setzero_pd(); }
  static D set1d(double x) { return _mm_set1_pd(x); }
  static D load_d(const double* p) { return _mm_loadu_pd(p); }
  static void store_d(double* p, D x) { _mm_storeu_pd(p, x); }
  static D add_d(D a, D b) { return _mm_add_pd(a, b); }
  static D mul_d(D a, D b) { return _mm_mul_pd(a, b); }
  static D trunc_d(D a) { return _mm_round_pd(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); }
  static D floor_d(D a) { return _mm_floor_pd(a); }
  // 2^-x for a power of two 2^x, x in [-1023, 1022] (2^1023 gives 0): the exponent field negated.
  static D inv_pow2(D a) { return _mm_castsi128_pd(_mm_sub_epi64(_mm_set1_epi64x(0x7fe0000000000000), _mm_castpd_si128(a))); }
  static F as_f(I a) { return _mm_castsi128_ps(a); }
  static F to_f(I a) { return _mm_cvtepi32_ps(a); }
  static F floor_f(F a) { return _mm_floor_ps(a); }
  static M eq_f(F a, F b) { return _mm_castps_si128(_mm_cmpeq_ps(a, b)); }
  // 16-bit lanes: Wh = 2W columns.
  static constexpr int Wh = 8;
  using Ih = __m128i;
  static Ih h_load(const int16_t* p) { return _mm_loadu_si128((const __m128i*)p); }
  static Ih h_set1(int x) { return _mm_set1_epi16(short(x)); }
  static Ih h_pair(const int32_t* p) { return _mm_set1_epi32(*p); }  // a 32-bit word holding the same value twice
  static Ih h_adds(Ih a, Ih b) { return _mm_adds_epi16(a, b); }
  static Ih h_sub(Ih a, Ih b) { return _mm_sub_epi16(a, b); }
  static Ih h_max(Ih a, Ih b) { return _mm_max_epi16(a, b); }
  static Ih h_sll(Ih a, int n) { return _mm_slli_epi16(a, n); }
  static Ih h_lt(Ih a, Ih b) { return _mm_cmplt_epi16(a, b); }
  static Ih h_gt(Ih a, Ih b) { return _mm_cmpgt_epi16(a, b); }
  static Ih h_and(Ih a, Ih b) { return _mm_and_si128(a, b); }
  static Ih h_or(Ih a, Ih b) { return _mm_or_si128(a, b); }
  static Ih h_andnot(Ih a, Ih b) { return _mm_andnot_si128(a, b); }
  static bool h_all(Ih m) { return _mm_movemask_epi8(m) == 0xffff; }
  // The Wh / W vectors of 32-bit lanes holding x << 16 (a float whose high half is x), in column order.
  static void widen_hi(Ih x, I* out) {
    out[0] = _mm_unpacklo_epi16(_mm_setzero_si128(), x), out[1] = _mm_unpackhi_epi16(_mm_setzero_si128(), x);
  }
  // Columns v * W .. v * W + W - 1 of x, sign-extended.
  static I widen_s(Ih x, int v) { return _mm_cvtepi16_epi32(v ? _mm_unpackhi_epi64(x, x) : x); }
};
#ifdef __clang__
#pragma clang attribute pop
#endif
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2")
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#endif
// The exponent maximum's 16-bit lanes in a 256-bit vector (16 columns), for AVX2 and AVX-512 alike: AVX-512F has no
// 16-bit operations on 512 bits. Compiled for AVX2, which AVX-512F includes.
struct Lanes16x16 {
  static constexpr int Wh = 16;
  using Ih = __m256i;
  static Ih h_load(const int16_t* p) { return _mm256_loadu_si256((const __m256i*)p); }
  static Ih h_set1(int x) { return _mm256_set1_epi16(short(x)); }
  static Ih h_pair(const int32_t* p) { return _mm256_set1_epi32(*p); }
  static Ih h_adds(Ih a, Ih b) { return _mm256_adds_epi16(a, b); }
  static Ih h_sub(Ih a, Ih b) { return _mm256_sub_epi16(a, b); }
  static Ih h_max(Ih a, Ih b) { return _mm256_max_epi16(a, b); }
  static Ih h_sll(Ih a, int n) { return _mm256_slli_epi16(a, n); }
  static Ih h_lt(Ih a, Ih b) { return _mm256_cmpgt_epi16(b, a); }
  static Ih h_gt(Ih a, Ih b) { return _mm256_cmpgt_epi16(a, b); }
  static Ih h_and(Ih a, Ih b) { return _mm256_and_si256(a, b); }
  static Ih h_or(Ih a, Ih b) { return _mm256_or_si256(a, b); }
  static Ih h_andnot(Ih a, Ih b) { return _mm256_andnot_si256(a, b); }
  static bool h_all(Ih m) { return _mm256_movemask_epi8(m) == -1; }
};

struct Avx2 : Lanes16x16 {
  static constexpr int W = 8;
  static constexpr const char* name = "avx2";
  using I = __m256i;
  using F = __m256;
  using D = __m256d;
  using M = __m256i;
  static I set1(int x) { return _mm256_set1_epi32(x); }
  static I load(const int32_t* p) { return _mm256_loadu_si256((const __m256i*)p); }
  static void store(int32_t* p, I x) { _mm256_storeu_si256((__m256i*)p, x); }
  static I add(I a, I b) { return _mm256_add_epi32(a, b); }
  static I sub(I a, I b) { return _mm256_sub_epi32(a, b); }
  static I max(I a, I b) { return _mm256_max_epi32(a, b); }
  static I min_u(I a, I b) { return _mm256_min_epu32(a, b); }
  static I ones_from(I n) { return _mm256_sllv_epi32(_mm256_set1_epi32(-1), n); }
  static I and_i(I a, I b) { return _mm256_and_si256(a, b); }
  static I xor_i(I a, I b) { return _mm256_xor_si256(a, b); }
  static I or_i(I a, I b) { return _mm256_or_si256(a, b); }
  static I sra(I a, int n) { return _mm256_srai_epi32(a, n); }
  static M sign_clear(I a) { return _mm256_cmpgt_epi32(a, _mm256_set1_epi32(-1)); }
  static M sign_set(I a) { return a; }
  static I srl(I a, int n) { return _mm256_srli_epi32(a, n); }
  static I sll(I a, int n) { return _mm256_slli_epi32(a, n); }
  static M eq(I a, I b) { return _mm256_cmpeq_epi32(a, b); }
  static M lt(I a, I b) { return _mm256_cmpgt_epi32(b, a); }
  static M gt(I a, I b) { return _mm256_cmpgt_epi32(a, b); }
  static I select(M m, I if_clear, I if_set) { return _mm256_blendv_epi8(if_clear, if_set, m); }
  static M all_lanes() { return _mm256_set1_epi32(-1); }
  static M m_and(M a, M b) { return _mm256_and_si256(a, b); }
  static M m_or(M a, M b) { return _mm256_or_si256(a, b); }
  static M m_andnot(M a, M b) { return _mm256_andnot_si256(a, b); }
  static M m_not(M a) { return _mm256_xor_si256(a, _mm256_set1_epi32(-1)); }
  static unsigned lane_bits(M m) { return unsigned(_mm256_movemask_ps(_mm256_castsi256_ps(m))); }
  static bool all(M m) { return lane_bits(m) == 255; }
  static F set1f(float x) { return _mm256_set1_ps(x); }
  static F loadf(const float* p) { return _mm256_loadu_ps(p); }
  static void storef(float* p, F x) { _mm256_storeu_ps(p, x); }
  static F mulf(F a, F b) { return _mm256_mul_ps(a, b); }
  static I trunc_i(F a) { return _mm256_cvttps_epi32(a); }
  static I bits_of(F a) { return _mm256_castps_si256(a); }
  static F select_f(M m, F if_clear, F if_set) { return _mm256_blendv_ps(if_clear, if_set, _mm256_castsi256_ps(m)); }
  static F pow2f(I x) {
    x = _mm256_min_epi32(_mm256_max_epi32(x, _mm256_set1_epi32(-126)), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(127)), 23));
  }
  static void pow2d(I x, D& lo, D& hi) {
    x = _mm256_add_epi32(_mm256_min_epi32(_mm256_max_epi32(x, _mm256_set1_epi32(-1022)), _mm256_set1_epi32(1023)),
                         _mm256_set1_epi32(1023));
    lo = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(x)), 52));
    hi = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_cvtepi32_epi64(_mm256_extracti128_si256(x, 1)), 52));
  }
  static void to_pd(I x, D& lo, D& hi) {
    lo = _mm256_cvtepi32_pd(_mm256_castsi256_si128(x)), hi = _mm256_cvtepi32_pd(_mm256_extracti128_si256(x, 1));
  }
  static void to_pd(F x, D& lo, D& hi) {
    lo = _mm256_cvtps_pd(_mm256_castps256_ps128(x)), hi = _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1));
  }
  static F to_ps(D lo, D hi) { return _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo)); }
  static D zero_d() { return _mm256_setzero_pd(); }
  static D set1d(double x) { return _mm256_set1_pd(x); }
  static D load_d(const double* p) { return _mm256_loadu_pd(p); }
  static void store_d(double* p, D x) { _mm256_storeu_pd(p, x); }
  static D add_d(D a, D b) { return _mm256_add_pd(a, b); }
  static D mul_d(D a, D b) { return _mm256_mul_pd(a, b); }
  static D trunc_d(D a) { return _mm256_round_pd(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); }
  static D floor_d(D a) { return _mm256_floor_pd(a); }
  static D inv_pow2(D a) {
    return _mm256_castsi256_pd(_mm256_sub_epi64(_mm256_set1_epi64x(0x7fe0000000000000), _mm256_castpd_si256(a)));
  }
  static F as_f(I a) { return _mm256_castsi256_ps(a); }
  static F to_f(I a) { return _mm256_cvtepi32_ps(a); }
  static F floor_f(F a) { return _mm256_floor_ps(a); }
  static M eq_f(F a, F b) { return _mm256_castps_si256(_mm256_cmp_ps(a, b, _CMP_EQ_OQ)); }
  // The unpacks work within 128-bit halves: the quadwords are put in order 0, 2, 1, 3 first.
  static void widen_hi(Ih x, I* out) {
    const __m256i q = _mm256_permute4x64_epi64(x, 0xd8);
    out[0] = _mm256_unpacklo_epi16(_mm256_setzero_si256(), q), out[1] = _mm256_unpackhi_epi16(_mm256_setzero_si256(), q);
  }
  static I widen_s(Ih x, int v) {
    return _mm256_cvtepi16_epi32(v ? _mm256_extracti128_si256(x, 1) : _mm256_castsi256_si128(x));
  }
};
#ifdef __clang__
#pragma clang attribute pop
#endif
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f")
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx512f"))), apply_to = function)
#endif
struct Avx512 : Lanes16x16 {  // Wh = W: the 16-column forms fit
  static constexpr int W = 16;
  static constexpr const char* name = "avx512";
  using I = __m512i;
  using F = __m512;
  using D = __m512d;
  using M = __mmask16;
  static I set1(int x) { return _mm512_set1_epi32(x); }
  static I load(const int32_t* p) { return _mm512_loadu_si512(p); }
  static void store(int32_t* p, I x) { _mm512_storeu_si512(p, x); }
  static I add(I a, I b) { return _mm512_add_epi32(a, b); }
  static I sub(I a, I b) { return _mm512_sub_epi32(a, b); }
  static I max(I a, I b) { return _mm512_max_epi32(a, b); }
  static I min_u(I a, I b) { return _mm512_min_epu32(a, b); }
  static I ones_from(I n) { return _mm512_sllv_epi32(_mm512_set1_epi32(-1), n); }
  static I and_i(I a, I b) { return _mm512_and_si512(a, b); }
  static I xor_i(I a, I b) { return _mm512_xor_si512(a, b); }
  static I or_i(I a, I b) { return _mm512_or_si512(a, b); }
  static I sra(I a, int n) { return _mm512_srai_epi32(a, unsigned(n)); }
  static M sign_clear(I a) { return _mm512_cmpgt_epi32_mask(a, _mm512_set1_epi32(-1)); }
  static M sign_set(I a) { return _mm512_cmplt_epi32_mask(a, _mm512_setzero_si512()); }
  static I srl(I a, int n) { return _mm512_srli_epi32(a, unsigned(n)); }
  static I sll(I a, int n) { return _mm512_slli_epi32(a, unsigned(n)); }
  static M eq(I a, I b) { return _mm512_cmpeq_epi32_mask(a, b); }
  static M lt(I a, I b) { return _mm512_cmplt_epi32_mask(a, b); }
  static M gt(I a, I b) { return _mm512_cmpgt_epi32_mask(a, b); }
  static I select(M m, I if_clear, I if_set) { return _mm512_mask_blend_epi32(m, if_clear, if_set); }
  static M all_lanes() { return M(0xffff); }
  static M m_and(M a, M b) { return M(a & b); }
  static M m_or(M a, M b) { return M(a | b); }
  static M m_andnot(M a, M b) { return M(~a & b); }
  static M m_not(M a) { return M(~a); }
  static unsigned lane_bits(M m) { return m; }
  static bool all(M m) { return m == 0xffff; }
  static F set1f(float x) { return _mm512_set1_ps(x); }
  static F loadf(const float* p) { return _mm512_loadu_ps(p); }
  static void storef(float* p, F x) { _mm512_storeu_ps(p, x); }
  static F mulf(F a, F b) { return _mm512_mul_ps(a, b); }
  static I trunc_i(F a) { return _mm512_cvttps_epi32(a); }
  static I bits_of(F a) { return _mm512_castps_si512(a); }
  static F select_f(M m, F if_clear, F if_set) { return _mm512_mask_blend_ps(m, if_clear, if_set); }
  static F pow2f(I x) {
    x = _mm512_min_epi32(_mm512_max_epi32(x, _mm512_set1_epi32(-126)), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(127)), 23));
  }
  static void pow2d(I x, D& lo, D& hi) {
    x = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(x, _mm512_set1_epi32(-1022)), _mm512_set1_epi32(1023)),
                         _mm512_set1_epi32(1023));
    lo = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_cvtepi32_epi64(_mm512_castsi512_si256(x)), 52));
    hi = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(x, 1)), 52));
  }
  static void to_pd(I x, D& lo, D& hi) {
    lo = _mm512_cvtepi32_pd(_mm512_castsi512_si256(x)), hi = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(x, 1));
  }
  static void to_pd(F x, D& lo, D& hi) {
    lo = _mm512_cvtps_pd(_mm512_castps512_ps256(x));
    hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
  }
  static F to_ps(D lo, D hi) {
    const __m512d both = _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(_mm512_cvtpd_ps(lo))),
                                            _mm256_castps_pd(_mm512_cvtpd_ps(hi)), 1);
    return _mm512_castpd_ps(both);
  }
  static D zero_d() { return _mm512_setzero_pd(); }
  static D set1d(double x) { return _mm512_set1_pd(x); }
  static D load_d(const double* p) { return _mm512_loadu_pd(p); }
  static void store_d(double* p, D x) { _mm512_storeu_pd(p, x); }
  static D add_d(D a, D b) { return _mm512_add_pd(a, b); }
  static D mul_d(D a, D b) { return _mm512_mul_pd(a, b); }
  static D trunc_d(D a) { return _mm512_roundscale_pd(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); }
  static D floor_d(D a) { return _mm512_roundscale_pd(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  static D inv_pow2(D a) {
    return _mm512_castsi512_pd(_mm512_sub_epi64(_mm512_set1_epi64(0x7fe0000000000000), _mm512_castpd_si512(a)));
  }
  static F as_f(I a) { return _mm512_castsi512_ps(a); }
  static F to_f(I a) { return _mm512_cvtepi32_ps(a); }
  static F floor_f(F a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  static M eq_f(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
  static void widen_hi(Ih x, I* out) { out[0] = _mm512_slli_epi32(_mm512_cvtepu16_epi32(x), 16); }
  static I widen_s(Ih x, int) { return _mm512_cvtepi16_epi32(x); }
};
#ifdef __clang__
#pragma clang attribute pop
#endif
#pragma GCC pop_options

}  // namespace vgpu::simd
