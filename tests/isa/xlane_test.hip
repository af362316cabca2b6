// Cross-lane operations against host models written from the ISA's descriptions: every DPP control (quad_perm,
// row_shl/shr/ror, wave_shl/rol/shr/ror, row_mirror, row_half_mirror, row_bcast:15/31, row_newbcast) with row and bank
// masks, bound_ctrl and partial EXEC; SDWA selects; ds_swizzle (quad and bit modes); ds_bpermute / ds_permute;
// v_readlane / v_writelane / v_readfirstlane; and gfx950's v_permlane16/32_swap and transposing LDS reads.
#include <hip/hip_runtime.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <utility>

#include "cvt_ref.h"

using namespace cvt_ref;

namespace {

constexpr int kWaves = 4, kThreads = 64 * kWaves;

std::vector<unsigned> random_u32(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned> v(n);
  for (auto& x : v) x = unsigned(rng());
  return v;
}

std::string hex(unsigned x) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", x);
  return b;
}

// --- DPP -------------------------------------------------------------------------------------------------------------

template <int Ctrl, int RowMask, int BankMask, bool BoundCtrl>
__global__ void k_dpp(const unsigned* src, const unsigned* old, unsigned long long active, unsigned* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x, l = threadIdx.x & 63;
  unsigned r = 0xdeadbeefu;
  if (active >> l & 1) r = __builtin_amdgcn_update_dpp(old[i], src[i], Ctrl, RowMask, BankMask, BoundCtrl);
  out[i] = r;
}

// The lane whose value lane l reads under DPP control `c`, or -1 when there is none (the ISA's DPP_CTRL table).
int dpp_model_source(int c, int l) {
  const int row = l / 16 * 16, r = l % 16;
  if (c < 0x100) return l / 4 * 4 + (c >> (2 * (l % 4)) & 3);                            // quad_perm
  if (c > 0x100 && c < 0x110) return r + (c - 0x100) < 16 ? l + (c - 0x100) : -1;         // row_shl:n
  if (c > 0x110 && c < 0x120) return r - (c - 0x110) >= 0 ? l - (c - 0x110) : -1;        // row_shr:n
  if (c > 0x120 && c < 0x130) return row + (r - (c - 0x120) + 16) % 16;                   // row_ror:n
  if (c >= 0x150 && c < 0x160) return row + (c - 0x150);                                  // row_newbcast:n
  switch (c) {
    case 0x130: return l < 63 ? l + 1 : -1;  // wave_shl:1
    case 0x134: return (l + 1) % 64;         // wave_rol:1
    case 0x138: return l > 0 ? l - 1 : -1;   // wave_shr:1
    case 0x13c: return (l + 63) % 64;        // wave_ror:1
    case 0x140: return row + 15 - r;         // row_mirror
    case 0x141: return l / 8 * 8 + 7 - l % 8;  // row_half_mirror
    case 0x142: return l >= 16 ? row - 1 : -1;  // row_bcast:15: lane 15 of the previous row
    case 0x143: return l >= 32 ? 31 : -1;       // row_bcast:31: lane 31 to rows 2 and 3
  }
  return -2;
}

// Lanes outside the row and bank masks are not written; a lane whose source is out of range or inactive is written
// with zero under bound_ctrl and not written otherwise.
unsigned dpp_model(int c, int rm, int bm, bool bc, const unsigned* src, const unsigned* old, uint64_t active, int l) {
  if (!(rm >> (l / 16) & 1) || !(bm >> (l / 4 % 4) & 1)) return old[l];
  const int s = dpp_model_source(c, l);
  if (s >= 0 && (active >> s & 1)) return src[s];
  return bc ? 0u : old[l];
}

template <int Ctrl, int RowMask, int BankMask, bool BoundCtrl>
void check_dpp(int& bad) {
  const auto src = random_u32(kThreads, 1 + Ctrl), old = random_u32(kThreads, 1000 + Ctrl);
  for (uint64_t active : {~0ull, 0xf0f0ff7733aa55ccull, 0x8000000000000001ull}) {
    Dev<unsigned> ds(src), dold(old), out(kThreads);
    hipLaunchKernelGGL((k_dpp<Ctrl, RowMask, BankMask, BoundCtrl>), dim3(1), dim3(kThreads), 0, 0, ds.p, dold.p,
                       (unsigned long long)active, out.p);
    const auto got = out.get();
    for (int w = 0; w < kWaves; ++w)
      for (int l = 0; l < 64; ++l) {
        const int i = 64 * w + l;
        const unsigned want = (active >> l & 1)
                                  ? dpp_model(Ctrl, RowMask, BankMask, BoundCtrl, &src[64 * w], &old[64 * w], active, l)
                                  : 0xdeadbeefu;
        if (got[i] != want && bad++ < 12)
          ADD_FAILURE() << "dpp_ctrl " << hex(Ctrl) << " row_mask " << RowMask << " bank_mask " << BankMask
                        << " bound_ctrl " << BoundCtrl << " exec " << hex(unsigned(active)) << " lane " << l << ": got "
                        << hex(got[i]) << " want " << hex(want);
      }
  }
}

template <int RowMask, int BankMask, bool BoundCtrl, int... Ctrls>
void check_dpp_all(std::integer_sequence<int, Ctrls...>, int& bad) {
  (check_dpp<Ctrls, RowMask, BankMask, BoundCtrl>(bad), ...);
}

using AllCtrls = std::integer_sequence<int,
    0x00, 0xe4, 0x1b, 0x39, 0x4e, 0x93, 0xb1, 0xff, 0x55, 0xd8,                                     // quad_perm
    0x101, 0x102, 0x103, 0x104, 0x105, 0x106, 0x107, 0x108, 0x109, 0x10a, 0x10b, 0x10c, 0x10d, 0x10e, 0x10f,  // row_shl
    0x111, 0x112, 0x113, 0x114, 0x115, 0x116, 0x117, 0x118, 0x119, 0x11a, 0x11b, 0x11c, 0x11d, 0x11e, 0x11f,  // row_shr
    0x121, 0x122, 0x123, 0x124, 0x125, 0x126, 0x127, 0x128, 0x129, 0x12a, 0x12b, 0x12c, 0x12d, 0x12e, 0x12f,  // row_ror
    0x130, 0x134, 0x138, 0x13c, 0x140, 0x141, 0x142, 0x143,
    0x150, 0x151, 0x152, 0x153, 0x154, 0x155, 0x156, 0x157, 0x158, 0x159, 0x15a, 0x15b, 0x15c, 0x15d, 0x15e, 0x15f>;
using SomeCtrls = std::integer_sequence<int, 0x1b, 0x104, 0x118, 0x12f, 0x130, 0x13c, 0x141, 0x142, 0x143, 0x157>;

// --- SDWA ------------------------------------------------------------------------------------------------------------

__global__ void k_sdwa(const unsigned* a, const unsigned* b, const unsigned* d, unsigned* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned x = a[i], y = b[i];
  unsigned r0 = d[i], r1 = d[i], r2 = d[i], r3 = d[i], r4 = d[i], r5 = d[i];
  asm volatile("v_add_u32_sdwa %0, %1, %2 dst_sel:BYTE_1 dst_unused:UNUSED_PRESERVE src0_sel:WORD_1 src1_sel:BYTE_2"
               : "+v"(r0) : "v"(x), "v"(y));
  asm volatile("v_sub_u32_sdwa %0, %1, %2 dst_sel:WORD_1 dst_unused:UNUSED_PAD src0_sel:BYTE_0 src1_sel:DWORD"
               : "+v"(r1) : "v"(x), "v"(y));
  asm volatile("v_add_u32_sdwa %0, sext(%1), %2 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_3 src1_sel:WORD_0"
               : "+v"(r2) : "v"(x), "v"(y));
  asm volatile("v_mov_b32_sdwa %0, %1 dst_sel:BYTE_2 dst_unused:UNUSED_SEXT src0_sel:BYTE_0" : "+v"(r3) : "v"(x));
  asm volatile("v_add_f16_sdwa %0, %1, -%2 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:WORD_1 src1_sel:WORD_0"
               : "+v"(r4) : "v"(x), "v"(y));
  asm volatile("v_mul_u32_u24_sdwa %0, %1, %2 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_0 src1_sel:BYTE_1"
               : "+v"(r5) : "v"(x), "v"(y));
  out[6 * i] = r0, out[6 * i + 1] = r1, out[6 * i + 2] = r2, out[6 * i + 3] = r3, out[6 * i + 4] = r4, out[6 * i + 5] = r5;
}

// --- LDS crossbar and lane reads --------------------------------------------------------------------------------------

template <int Pattern>
__global__ void k_swizzle(const unsigned* x, unsigned* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = unsigned(__builtin_amdgcn_ds_swizzle(int(x[i]), Pattern));
}

// ds_swizzle_b32: offset[15] = 1 is quad mode (each lane picks a lane of its quad by its 2-bit field of offset[7:0]),
// otherwise bit mode over groups of 32 lanes: lane ((l & and) | or) ^ xor with the masks in offset[4:0], [9:5], [14:10].
int swizzle_model_source(int p, int l) {
  if (p & 0x8000) return l / 4 * 4 + (p >> (2 * (l % 4)) & 3);
  const int and_m = p & 31, or_m = p >> 5 & 31, xor_m = p >> 10 & 31;
  return (l & 32) | (((l & 31 & and_m) | or_m) ^ xor_m);
}

template <int Pattern>
void check_swizzle(int& bad) {
  const auto x = random_u32(kThreads, 77 + Pattern);
  Dev<unsigned> dx(x), out(kThreads);
  hipLaunchKernelGGL(k_swizzle<Pattern>, dim3(1), dim3(kThreads), 0, 0, dx.p, out.p);
  const auto got = out.get();
  for (int i = 0; i < kThreads; ++i) {
    const unsigned want = x[i / 64 * 64 + swizzle_model_source(Pattern, i % 64)];
    if (got[i] != want && bad++ < 10) ADD_FAILURE() << "swizzle " << hex(Pattern) << " lane " << i % 64 << ": " << hex(got[i]);
  }
}

__global__ void k_permute(const unsigned* x, const unsigned* target, unsigned* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int t = int(target[i]);
  out[4 * i + 0] = unsigned(__builtin_amdgcn_ds_bpermute(t * 4, int(x[i])));
  out[4 * i + 1] = unsigned(__builtin_amdgcn_ds_bpermute(t * 4 + 256 * (i % 5) + 8, int(x[i])));  // wraps, + offset
  out[4 * i + 2] = unsigned(__builtin_amdgcn_ds_permute(t * 4, int(x[i])));
  out[4 * i + 3] = unsigned(__builtin_amdgcn_ds_permute(t * 4 + 12, int(x[i])));
}

__global__ void k_lanes(const unsigned* x, int lane, unsigned long long active, unsigned* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x, l = threadIdx.x & 63;
  out[4 * i + 0] = __builtin_amdgcn_readlane(x[i], lane);
  out[4 * i + 1] = __builtin_amdgcn_readlane(x[i], lane + 64 * (1 + lane % 3));  // the lane number is taken mod 64
  unsigned wl = x[i];
  asm volatile("v_writelane_b32 %0, -7, %1" : "+v"(wl) : "s"(lane));  // one SGPR: the constant bus allows no more
  out[4 * i + 2] = wl;
  unsigned f = 0x5555u;
  if (active >> l & 1) f = __builtin_amdgcn_readfirstlane(x[i]);
  out[4 * i + 3] = f;
}

// --- gfx950 -----------------------------------------------------------------------------------------------------------

__global__ void k_permlane_swap(const unsigned* a, const unsigned* b, unsigned* out) {
#if defined(__gfx950__)
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const auto r = __builtin_amdgcn_permlane16_swap(a[i], b[i], false, false);
  const auto q = __builtin_amdgcn_permlane32_swap(a[i], b[i], false, false);
  out[4 * i] = r[0], out[4 * i + 1] = r[1], out[4 * i + 2] = q[0], out[4 * i + 3] = q[1];
#endif
}

typedef short v4s __attribute__((ext_vector_type(4)));
typedef int v2i __attribute__((ext_vector_type(2)));
__global__ void k_read_tr(const unsigned* slot, unsigned* out) {
#if defined(__gfx950__)
  __shared__ unsigned short lds[4096];
  const int i = threadIdx.x;
  for (int k = i; k < 4096; k += blockDim.x) lds[k] = (unsigned short)((unsigned(k) * 0x9e3779b1u) >> 16);
  __syncthreads();
  auto* p16 = (__attribute__((address_space(3))) v4s*)((__attribute__((address_space(3))) char*)lds + 8 * slot[i]);
  const v4s r = __builtin_amdgcn_ds_read_tr16_b64_v4i16(p16);
  auto* p8 = (__attribute__((address_space(3))) v2i*)((__attribute__((address_space(3))) char*)lds + 8 * slot[i] + 2048);
  const v2i q = __builtin_amdgcn_ds_read_tr8_b64_v2i32(p8);
  out[4 * i + 0] = unsigned((unsigned short)r[0]) | unsigned((unsigned short)r[1]) << 16;
  out[4 * i + 1] = unsigned((unsigned short)r[2]) | unsigned((unsigned short)r[3]) << 16;
  out[4 * i + 2] = unsigned(q[0]), out[4 * i + 3] = unsigned(q[1]);
#endif
}

}  // namespace

TEST(Xlane, DppEveryControl) {
  int bad = 0;
  check_dpp_all<0xf, 0xf, false>(AllCtrls{}, bad);
  check_dpp_all<0xf, 0xf, true>(AllCtrls{}, bad);
  EXPECT_EQ(bad, 0);
}

TEST(Xlane, DppRowAndBankMasks) {
  int bad = 0;
  check_dpp_all<0xa, 0xf, false>(SomeCtrls{}, bad);
  check_dpp_all<0xf, 0x5, true>(SomeCtrls{}, bad);
  check_dpp_all<0x3, 0xc, false>(SomeCtrls{}, bad);
  check_dpp_all<0x6, 0x9, true>(SomeCtrls{}, bad);
  EXPECT_EQ(bad, 0);
}

TEST(Xlane, Sdwa) {
  const auto a = random_u32(kThreads, 3), b = random_u32(kThreads, 4), d = random_u32(kThreads, 5);
  Dev<unsigned> da(a), db(b), dd(d), out(6 * kThreads);
  hipLaunchKernelGGL(k_sdwa, dim3(1), dim3(kThreads), 0, 0, da.p, db.p, dd.p, out.p);
  const auto got = out.get();
  int bad = 0;
  for (int i = 0; i < kThreads; ++i) {
    const unsigned x = a[i], y = b[i];
    unsigned want[6];
    want[0] = (d[i] & ~0xff00u) | ((((x >> 16) + (y >> 16 & 0xff)) & 0xff) << 8);
    want[1] = ((x & 0xff) - y) << 16;
    want[2] = unsigned(int32_t(int8_t(x >> 24))) + (y & 0xffff);
    want[3] = (x & 0x80) ? (0xff000000u | (x & 0xff) << 16) : (x & 0xff) << 16;
    const _Float16 h = h_from(uint16_t(x >> 16)) + -h_from(uint16_t(y));
    want[4] = (d[i] & 0xffffu) | unsigned(h_bits(h)) << 16;
    want[5] = (x & 0xffff) * (y >> 8 & 0xff);
    for (int k = 0; k < 6; ++k) {
      bool ok = got[6 * i + k] == want[k];
      if (k == 4 && !ok) ok = std::isnan(float(h)) && (got[6 * i + k] & 0xffffu) == (d[i] & 0xffffu) &&
                              (got[6 * i + k] >> 26 & 0x1f) == 0x1f;
      if (!ok && bad++ < 10)
        ADD_FAILURE() << "sdwa case " << k << " x=" << hex(x) << " y=" << hex(y) << " d=" << hex(d[i]) << ": got "
                      << hex(got[6 * i + k]) << " want " << hex(want[k]);
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(Xlane, DsSwizzle) {
  int bad = 0;
  check_swizzle<0x80e4>(bad);  // quad mode, identity
  check_swizzle<0x801b>(bad);  // quad mode, reverse
  check_swizzle<0x8055>(bad);  // quad mode, broadcast lane 1
  check_swizzle<0x80b1>(bad);  // quad mode, swap pairs
  check_swizzle<0x041f>(bad);  // xor 1
  check_swizzle<0x401f>(bad);  // swap halves of 32 (xor 16)
  check_swizzle<0x7c1f>(bad);  // reverse 32 (xor 31)
  check_swizzle<0x00b8>(bad);  // broadcast lane 5 of each 8 (and 0x18, or 5)
  check_swizzle<0x020f>(bad);  // and 0x0f, or 0x10
  check_swizzle<0x083c>(bad);  // and 0x1c, or 1, xor 2
  EXPECT_EQ(bad, 0);
}

TEST(Xlane, DsPermuteAndBpermute) {
  const auto x = random_u32(kThreads, 8);
  std::mt19937 rng(12);
  std::vector<unsigned> target(kThreads);
  for (int w = 0; w < kWaves; ++w) {
    std::vector<unsigned> perm(64);
    std::iota(perm.begin(), perm.end(), 0u);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int l = 0; l < 64; ++l) target[64 * w + l] = perm[l];
  }
  Dev<unsigned> dx(x), dt(target), out(4 * kThreads);
  hipLaunchKernelGGL(k_permute, dim3(1), dim3(kThreads), 0, 0, dx.p, dt.p, out.p);
  const auto got = out.get();
  std::vector<unsigned> fwd(kThreads), fwd3(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    const int base = i / 64 * 64;
    fwd[base + int(target[i])] = x[i];                        // ds_permute: lane l's value goes to lane target[l]
    fwd3[base + int((target[i] + 3) % 64)] = x[i];
  }
  int bad = 0;
  for (int i = 0; i < kThreads; ++i) {
    const int base = i / 64 * 64;
    const unsigned want[4] = {x[base + int(target[i])], x[base + int((target[i] + 2) % 64)], fwd[i], fwd3[i]};
    for (int k = 0; k < 4; ++k)
      if (got[4 * i + k] != want[k] && bad++ < 10)
        ADD_FAILURE() << "permute case " << k << " lane " << i << ": got " << hex(got[4 * i + k]) << " want " << hex(want[k]);
  }
  EXPECT_EQ(bad, 0);
}

TEST(Xlane, ReadAndWriteLane) {
  const auto x = random_u32(kThreads, 9);
  int bad = 0;
  for (int lane : {0, 5, 31, 32, 63}) {
    for (uint64_t active : {~0ull, 0xfff0000000000000ull, 0x0000000100000000ull}) {
      Dev<unsigned> dx(x), out(4 * kThreads);
      hipLaunchKernelGGL(k_lanes, dim3(1), dim3(kThreads), 0, 0, dx.p, lane, (unsigned long long)active, out.p);
      const auto got = out.get();
      const int first = __builtin_ctzll(active);
      for (int i = 0; i < kThreads; ++i) {
        const int base = i / 64 * 64, l = i % 64;
        const unsigned want[4] = {x[base + lane], x[base + lane], l == lane ? unsigned(-7) : x[i],
                                  (active >> l & 1) ? x[base + first] : 0x5555u};
        for (int k = 0; k < 4; ++k)
          if (got[4 * i + k] != want[k] && bad++ < 10)
            ADD_FAILURE() << "lane op " << k << " lane " << lane << " exec " << hex(unsigned(active >> 32)) << ":"
                          << hex(unsigned(active)) << " at " << l << ": got " << hex(got[4 * i + k]) << " want " << hex(want[k]);
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(Xlane, Gfx950PermlaneSwap) {
  if (!gfx950()) GTEST_SKIP() << "gfx950 only";
  const auto a = random_u32(kThreads, 13), b = random_u32(kThreads, 14);
  Dev<unsigned> da(a), db(b), out(4 * kThreads);
  hipLaunchKernelGGL(k_permlane_swap, dim3(1), dim3(kThreads), 0, 0, da.p, db.p, out.p);
  const auto got = out.get();
  int bad = 0;
  for (int i = 0; i < kThreads; ++i) {
    const int l = i % 64, row = l / 16;
    // permlane16: odd rows of the first operand trade places with even rows of the second.
    const unsigned d16 = (row & 1) ? b[i - 16] : a[i], s16 = (row & 1) ? b[i] : a[i + 16];
    // permlane32: rows 2, 3 of the first operand trade places with rows 0, 1 of the second.
    const unsigned d32 = l >= 32 ? b[i - 32] : a[i], s32 = l >= 32 ? b[i] : a[i + 32];
    const unsigned want[4] = {d16, s16, d32, s32};
    for (int k = 0; k < 4; ++k)
      if (got[4 * i + k] != want[k] && bad++ < 10)
        ADD_FAILURE() << "permlane swap " << k << " lane " << l << ": got " << hex(got[4 * i + k]) << " want " << hex(want[k]);
  }
  EXPECT_EQ(bad, 0);
}

// ds_read_b64_tr_b16: within each 16 lanes, lanes 4r..4r+3 read row r of a 4x16 matrix of 16-bit elements (four per
// lane) and lane i receives column i: element j from lane 4j + i/4, position i%4. ds_read_b64_tr_b8: lanes 2r, 2r+1
// read row r of an 8x16 byte matrix, and lane i receives byte j from lane 2j + i/8, position i%8. (The lane mapping
// follows the CDNA4 ISA's description of the instruction, see docs/vgpu-numerics.md: M confidence.)
TEST(Xlane, Gfx950TransposeReads) {
  if (!gfx950()) GTEST_SKIP() << "gfx950 only";
  std::mt19937 rng(15);
  std::vector<unsigned> slot(kThreads);
  std::vector<unsigned> perm(256);
  std::iota(perm.begin(), perm.end(), 0u);
  std::shuffle(perm.begin(), perm.end(), rng);
  for (int i = 0; i < kThreads; ++i) slot[i] = perm[i];
  Dev<unsigned> ds(slot), out(4 * kThreads);
  hipLaunchKernelGGL(k_read_tr, dim3(1), dim3(kThreads), 0, 0, ds.p, out.p);
  const auto got = out.get();
  std::vector<unsigned short> lds(4096);
  for (int k = 0; k < 4096; ++k) lds[k] = (unsigned short)((unsigned(k) * 0x9e3779b1u) >> 16);
  auto elem16 = [&](int lane, int e) { return lds[4 * slot[lane] + e]; };
  auto byte8 = [&](int lane, int e) {
    const unsigned short h = lds[(8 * slot[lane] + 2048 + e) / 2];
    return (unsigned char)(((8 * slot[lane] + 2048 + e) & 1) ? h >> 8 : h & 0xff);
  };
  int bad = 0;
  for (int lane = 0; lane < kThreads; ++lane) {
    const int g = lane / 16 * 16, i = lane % 16;
    unsigned w16[2] = {0, 0}, w8[2] = {0, 0};
    for (int j = 0; j < 4; ++j) w16[j / 2] |= unsigned(elem16(g + 4 * j + i / 4, i % 4)) << 16 * (j % 2);
    for (int j = 0; j < 8; ++j) w8[j / 4] |= unsigned(byte8(g + 2 * j + i / 8, i % 8)) << 8 * (j % 4);
    const unsigned want[4] = {w16[0], w16[1], w8[0], w8[1]};
    for (int k = 0; k < 4; ++k)
      if (got[4 * lane + k] != want[k] && bad++ < 10)
        ADD_FAILURE() << "transpose read " << k << " lane " << lane << ": got " << hex(got[4 * lane + k]) << " want " << hex(want[k]);
  }
  EXPECT_EQ(bad, 0);
}
