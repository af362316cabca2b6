// Buffer memory (MUBUF) and LDS DMA on the arch under test, through exact instruction forms written as inline asm:
// raw, structured and raw-with-index addressing with offen/idxen/soffset/instruction offset, range checking at the
// exact boundaries (out-of-range loads read 0, stores are dropped, neighbours stay untouched), the buffer atomics,
// buffer_load ... lds and global_load_lds_* placement per lane, and the faults. Every result is compared with a host
// model of the rules in docs/vgpu-memory.md.
#include <hip/hip_runtime.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "host/device.h"
#include "isa_arch.h"
#include "hip/hip_check.h"

using u32 = uint32_t;
using u64 = uint64_t;
typedef int v4i __attribute__((ext_vector_type(4)));
typedef u32 v2u __attribute__((ext_vector_type(2)));
typedef u32 v3u __attribute__((ext_vector_type(3)));
typedef u32 v4u __attribute__((ext_vector_type(4)));

constexpr int kLanes = 64;

// Everything a test kernel reads: the V# words, per-lane VGPR inputs, the SGPR offset, and where results go.
struct KArgs {
  u32 rsrc[4];
  const u32* idx;   // per-lane index VGPR
  const u32* off;   // per-lane offset VGPR
  const u32* init;  // per-lane data: 4 dwords each (initial destination, store data or atomic data)
  u32* out;         // 4 dwords per lane, or the LDS image for the DMA kernels
  u32 soff;
  u32 active;       // lanes [0, active) execute the instruction
  u32 m0;
  u32 lds_bytes;
  const void* gbase;  // global_load_lds base address
};

__device__ inline v4i rs(const KArgs& a) { return v4i{int(a.rsrc[0]), int(a.rsrc[1]), int(a.rsrc[2]), int(a.rsrc[3])}; }

template <class T> __device__ inline T get(const u32* p, int l);
template <> __device__ inline u32 get<u32>(const u32* p, int l) { return p[4 * l]; }
template <> __device__ inline v2u get<v2u>(const u32* p, int l) { return v2u{p[4 * l], p[4 * l + 1]}; }
template <> __device__ inline v3u get<v3u>(const u32* p, int l) { return v3u{p[4 * l], p[4 * l + 1], p[4 * l + 2]}; }
template <> __device__ inline v4u get<v4u>(const u32* p, int l) {
  return v4u{p[4 * l], p[4 * l + 1], p[4 * l + 2], p[4 * l + 3]};
}
__device__ inline void put(u32* p, int l, u32 d) { p[4 * l] = d; }
__device__ inline void put(u32* p, int l, v2u d) { p[4 * l] = d.x, p[4 * l + 1] = d.y; }
__device__ inline void put(u32* p, int l, v3u d) { p[4 * l] = d.x, p[4 * l + 1] = d.y, p[4 * l + 2] = d.z; }
__device__ inline void put(u32* p, int l, v4u d) { p[4 * l] = d.x, p[4 * l + 1] = d.y, p[4 * l + 2] = d.z, p[4 * l + 3] = d.w; }

#define WAIT "\n\ts_waitcnt vmcnt(0)"

// One kernel: d starts as the lane's init value; lanes below `active` run the asm statement (the remaining
// arguments: its text and operand lists, with d as the data operand); loads and returning atomics put d back out.
#define BUFFER_KERNEL(NAME, VT, PUT, ...)                                                                         \
  __global__ void NAME(const KArgs a) {                                                                           \
    const int l = threadIdx.x;                                                                                    \
    VT d = get<VT>(a.init, l);                                                                                    \
    if (l < int(a.active)) asm volatile(__VA_ARGS__);                                                             \
    PUT;                                                                                                          \
  }
#define PUT_D put(a.out, l, d)
#define KEEP_D (void)d

// --- Loads to VGPRs: one kernel per instruction and addressing mode (vaddr off / offen / idxen / idxen offen) ------
#define LOAD_KERNELS(NAME, INSN, VT)                                                                               \
  BUFFER_KERNEL(NAME##_off, VT, PUT_D, INSN " %0, off, %1, %2 offset:20" WAIT                                      \
                : "+v"(d) : "s"(rs(a)), "s"(a.soff) : "memory")                                                   \
  BUFFER_KERNEL(NAME##_offen, VT, PUT_D, INSN " %0, %1, %2, %3 offen offset:20" WAIT                               \
                : "+v"(d) : "v"(a.off[l]), "s"(rs(a)), "s"(a.soff) : "memory")                                    \
  BUFFER_KERNEL(NAME##_idxen, VT, PUT_D, INSN " %0, %1, %2, %3 idxen offset:20" WAIT                               \
                : "+v"(d) : "v"(a.idx[l]), "s"(rs(a)), "s"(a.soff) : "memory")                                    \
  BUFFER_KERNEL(NAME##_both, VT, PUT_D, INSN " %0, %1, %2, %3 idxen offen offset:20" WAIT                          \
                : "+v"(d) : "v"(v2u{a.idx[l], a.off[l]}), "s"(rs(a)), "s"(a.soff) : "memory")

LOAD_KERNELS(ld_ubyte, "buffer_load_ubyte", u32)
LOAD_KERNELS(ld_sbyte, "buffer_load_sbyte", u32)
LOAD_KERNELS(ld_ushort, "buffer_load_ushort", u32)
LOAD_KERNELS(ld_sshort, "buffer_load_sshort", u32)
LOAD_KERNELS(ld_dword, "buffer_load_dword", u32)
LOAD_KERNELS(ld_dwordx2, "buffer_load_dwordx2", v2u)
LOAD_KERNELS(ld_dwordx3, "buffer_load_dwordx3", v3u)
LOAD_KERNELS(ld_dwordx4, "buffer_load_dwordx4", v4u)
LOAD_KERNELS(ld_ubyte_d16, "buffer_load_ubyte_d16", u32)
LOAD_KERNELS(ld_sbyte_d16, "buffer_load_sbyte_d16", u32)
LOAD_KERNELS(ld_short_d16, "buffer_load_short_d16", u32)
LOAD_KERNELS(ld_ubyte_d16_hi, "buffer_load_ubyte_d16_hi", u32)
LOAD_KERNELS(ld_sbyte_d16_hi, "buffer_load_sbyte_d16_hi", u32)
LOAD_KERNELS(ld_short_d16_hi, "buffer_load_short_d16_hi", u32)

// --- Stores ---------------------------------------------------------------------------------------------------------
#define STORE_KERNELS(NAME, INSN, VT)                                                                              \
  BUFFER_KERNEL(NAME##_offen, VT, KEEP_D, INSN " %0, %1, %2, %3 offen offset:20" WAIT                              \
                : : "v"(d), "v"(a.off[l]), "s"(rs(a)), "s"(a.soff) : "memory")                                    \
  BUFFER_KERNEL(NAME##_both, VT, KEEP_D, INSN " %0, %1, %2, %3 idxen offen offset:20" WAIT                         \
                : : "v"(d), "v"(v2u{a.idx[l], a.off[l]}), "s"(rs(a)), "s"(a.soff) : "memory")

STORE_KERNELS(st_byte, "buffer_store_byte", u32)
STORE_KERNELS(st_byte_d16_hi, "buffer_store_byte_d16_hi", u32)
STORE_KERNELS(st_short, "buffer_store_short", u32)
STORE_KERNELS(st_short_d16_hi, "buffer_store_short_d16_hi", u32)
STORE_KERNELS(st_dword, "buffer_store_dword", u32)
STORE_KERNELS(st_dwordx2, "buffer_store_dwordx2", v2u)
STORE_KERNELS(st_dwordx3, "buffer_store_dwordx3", v3u)
STORE_KERNELS(st_dwordx4, "buffer_store_dwordx4", v4u)

// --- Atomics: with return (sc0; gfx90a calls the same bit glc) and without ------------------------------------------
#if defined(__gfx90a__)
#define RETURN_BIT " glc"
#else
#define RETURN_BIT " sc0"
#endif
#define ATOMIC_KERNELS(NAME, INSN, VT)                                                                             \
  BUFFER_KERNEL(NAME##_rtn, VT, PUT_D, INSN " %0, %1, %2, %3 offen offset:8" RETURN_BIT WAIT                       \
                : "+v"(d) : "v"(a.off[l]), "s"(rs(a)), "s"(a.soff) : "memory")                                    \
  BUFFER_KERNEL(NAME##_nrt, VT, KEEP_D, INSN " %0, %1, %2, %3 offen offset:8" WAIT                                 \
                : : "v"(d), "v"(a.off[l]), "s"(rs(a)), "s"(a.soff) : "memory")

ATOMIC_KERNELS(at_swap, "buffer_atomic_swap", u32)
ATOMIC_KERNELS(at_add, "buffer_atomic_add", u32)
ATOMIC_KERNELS(at_sub, "buffer_atomic_sub", u32)
ATOMIC_KERNELS(at_smin, "buffer_atomic_smin", u32)
ATOMIC_KERNELS(at_umin, "buffer_atomic_umin", u32)
ATOMIC_KERNELS(at_smax, "buffer_atomic_smax", u32)
ATOMIC_KERNELS(at_umax, "buffer_atomic_umax", u32)
ATOMIC_KERNELS(at_and, "buffer_atomic_and", u32)
ATOMIC_KERNELS(at_or, "buffer_atomic_or", u32)
ATOMIC_KERNELS(at_xor, "buffer_atomic_xor", u32)
ATOMIC_KERNELS(at_inc, "buffer_atomic_inc", u32)
ATOMIC_KERNELS(at_dec, "buffer_atomic_dec", u32)
ATOMIC_KERNELS(at_cmpswap, "buffer_atomic_cmpswap", v2u)
ATOMIC_KERNELS(at_add_f32, "buffer_atomic_add_f32", u32)
ATOMIC_KERNELS(at_pk_add_f16, "buffer_atomic_pk_add_f16", u32)
ATOMIC_KERNELS(at_swap_x2, "buffer_atomic_swap_x2", v2u)
ATOMIC_KERNELS(at_add_x2, "buffer_atomic_add_x2", v2u)
ATOMIC_KERNELS(at_sub_x2, "buffer_atomic_sub_x2", v2u)
ATOMIC_KERNELS(at_smin_x2, "buffer_atomic_smin_x2", v2u)
ATOMIC_KERNELS(at_umin_x2, "buffer_atomic_umin_x2", v2u)
ATOMIC_KERNELS(at_smax_x2, "buffer_atomic_smax_x2", v2u)
ATOMIC_KERNELS(at_umax_x2, "buffer_atomic_umax_x2", v2u)
ATOMIC_KERNELS(at_and_x2, "buffer_atomic_and_x2", v2u)
ATOMIC_KERNELS(at_or_x2, "buffer_atomic_or_x2", v2u)
ATOMIC_KERNELS(at_xor_x2, "buffer_atomic_xor_x2", v2u)
ATOMIC_KERNELS(at_inc_x2, "buffer_atomic_inc_x2", v2u)
ATOMIC_KERNELS(at_dec_x2, "buffer_atomic_dec_x2", v2u)
ATOMIC_KERNELS(at_cmpswap_x2, "buffer_atomic_cmpswap_x2", v4u)
ATOMIC_KERNELS(at_add_f64, "buffer_atomic_add_f64", v2u)
ATOMIC_KERNELS(at_min_f64, "buffer_atomic_min_f64", v2u)
ATOMIC_KERNELS(at_max_f64, "buffer_atomic_max_f64", v2u)
#if defined(__gfx950__) || !defined(__HIP_DEVICE_COMPILE__)
ATOMIC_KERNELS(at_pk_add_bf16, "buffer_atomic_pk_add_bf16", u32)
#else
__global__ void at_pk_add_bf16_rtn(const KArgs) {}
__global__ void at_pk_add_bf16_nrt(const KArgs) {}
#endif

// --- LDS DMA ------------------------------------------------------------------------------------------------------
// Each kernel fills its dynamic LDS with a canary, runs the DMA on lanes [0, active), and copies the whole LDS out.
#define LDS_PROLOGUE                                                              \
  extern __shared__ u32 lds[];                                                    \
  const int l = threadIdx.x;                                                      \
  const u32 words = a.lds_bytes / 4;                                              \
  for (u32 i = l; i < words; i += kLanes) lds[i] = 0xC0DE0000u ^ i;               \
  __syncthreads();
#define LDS_EPILOGUE                                                              \
  __syncthreads();                                                                \
  for (u32 i = l; i < words; i += kLanes) a.out[i] = lds[i];

#define BUFFER_DMA_KERNEL(NAME, INSN)                                                                              \
  __global__ void NAME(const KArgs a) {                                                                           \
    LDS_PROLOGUE                                                                                                  \
    if (l < int(a.active))                                                                                        \
      asm volatile("s_mov_b32 m0, %3\n\t" INSN " %0, %1, %2 offen offset:12 lds" WAIT                             \
                   : : "v"(a.off[l]), "s"(rs(a)), "s"(a.soff), "s"(a.m0) : "memory");                        \
    LDS_EPILOGUE                                                                                                  \
  }
#define GLOBAL_DMA_KERNELS(NAME, INSN)                                                                             \
  __global__ void NAME##_vaddr(const KArgs a) {                                                                   \
    LDS_PROLOGUE                                                                                                  \
    const char* p = static_cast<const char*>(a.gbase) + a.off[l];                                                 \
    if (l < int(a.active))                                                                                        \
      asm volatile("s_mov_b32 m0, %1\n\t" INSN " %0, off offset:-8" WAIT : : "v"(p), "s"(a.m0) : "memory"); \
    LDS_EPILOGUE                                                                                                  \
  }                                                                                                               \
  __global__ void NAME##_saddr(const KArgs a) {                                                                   \
    LDS_PROLOGUE                                                                                                  \
    if (l < int(a.active))                                                                                        \
      asm volatile("s_mov_b32 m0, %2\n\t" INSN " %0, %1 offset:24" WAIT                                           \
                   : : "v"(a.off[l]), "s"(a.gbase), "s"(a.m0) : "memory");                                   \
    LDS_EPILOGUE                                                                                                  \
  }
#define EMPTY_DMA_KERNELS(NAME)                \
  __global__ void NAME##_vaddr(const KArgs) {} \
  __global__ void NAME##_saddr(const KArgs) {}

BUFFER_DMA_KERNEL(dma_ubyte, "buffer_load_ubyte")
BUFFER_DMA_KERNEL(dma_sbyte, "buffer_load_sbyte")
BUFFER_DMA_KERNEL(dma_ushort, "buffer_load_ushort")
BUFFER_DMA_KERNEL(dma_sshort, "buffer_load_sshort")
BUFFER_DMA_KERNEL(dma_dword, "buffer_load_dword")
// global_load_lds_* is gfx940 and later: empty on gfx90a, where the host does not launch them.
#if defined(__gfx942__) || defined(__gfx950__) || !defined(__HIP_DEVICE_COMPILE__)
#define HK_GLOBAL_LOAD_LDS 1
GLOBAL_DMA_KERNELS(gdma_ubyte, "global_load_lds_ubyte")
GLOBAL_DMA_KERNELS(gdma_sbyte, "global_load_lds_sbyte")
GLOBAL_DMA_KERNELS(gdma_ushort, "global_load_lds_ushort")
GLOBAL_DMA_KERNELS(gdma_sshort, "global_load_lds_sshort")
GLOBAL_DMA_KERNELS(gdma_dword, "global_load_lds_dword")
#else
EMPTY_DMA_KERNELS(gdma_ubyte)
EMPTY_DMA_KERNELS(gdma_sbyte)
EMPTY_DMA_KERNELS(gdma_ushort)
EMPTY_DMA_KERNELS(gdma_sshort)
EMPTY_DMA_KERNELS(gdma_dword)
#endif
#if defined(__gfx950__) || !defined(__HIP_DEVICE_COMPILE__)
BUFFER_DMA_KERNEL(dma_dwordx3, "buffer_load_dwordx3")
BUFFER_DMA_KERNEL(dma_dwordx4, "buffer_load_dwordx4")
GLOBAL_DMA_KERNELS(gdma_dwordx3, "global_load_lds_dwordx3")
GLOBAL_DMA_KERNELS(gdma_dwordx4, "global_load_lds_dwordx4")
#else
__global__ void dma_dwordx3(const KArgs) {}
__global__ void dma_dwordx4(const KArgs) {}
EMPTY_DMA_KERNELS(gdma_dwordx3)
EMPTY_DMA_KERNELS(gdma_dwordx4)
#endif

// --- When LDS DMA data lands: vgpu lands it at the s_waitcnt vmcnt that lets it be complete, the latest moment
// hardware may, so a read that is not ordered after that wait sees the old LDS. Each lane reads its slot three
// times: with the load in flight, after vmcnt(1) while a later store is also outstanding, and after vmcnt(0).
// --- The same instructions as clang emits them from its buffer builtins (CK-style raw buffers) ---------------------
__global__ void builtin_raw(const KArgs a) {
  LDS_PROLOGUE
  __amdgpu_buffer_rsrc_t r = __builtin_amdgcn_make_buffer_rsrc(const_cast<void*>(a.gbase), 0, a.rsrc[2], 0x00020000);
  const u32 o = a.off[l];
  u32* out = a.out + 16 * l;
  out[0] = __builtin_amdgcn_raw_buffer_load_b8(r, o, a.soff, 0);
  out[1] = __builtin_amdgcn_raw_buffer_load_b16(r, o, a.soff, 0);
  out[2] = __builtin_amdgcn_raw_buffer_load_b32(r, o + 36, a.soff, 0);
  const v2u x2 = __builtin_amdgcn_raw_buffer_load_b64(r, o, 0, 0);
  const v3u x3 = __builtin_amdgcn_raw_buffer_load_b96(r, o, a.soff, 0);
  const v4u x4 = __builtin_amdgcn_raw_buffer_load_b128(r, o, a.soff, 0);
  out[3] = x2.x, out[4] = x2.y, out[5] = x3.x, out[6] = x3.y, out[7] = x3.z;
  out[8] = x4.x, out[9] = x4.y, out[10] = x4.z, out[11] = x4.w;
  __builtin_amdgcn_raw_buffer_store_b16(uint16_t(0xab00 | l), r, 2 * l, 16, 0);
  // LDS DMA: the immediate offset (16, 8) moves both the global and the LDS address.
  __builtin_amdgcn_raw_ptr_buffer_load_lds(r, (__attribute__((address_space(3))) void*)(lds + 64), 4, o, a.soff, 16, 0);
#if defined(HK_GLOBAL_LOAD_LDS)
  __builtin_amdgcn_global_load_lds((__attribute__((address_space(1))) void*)(static_cast<const char*>(a.gbase) + o),
                                   (__attribute__((address_space(3))) void*)(lds + 512), 2, 8, 0);
#endif
  __syncthreads();
  for (u32 i = l; i < words; i += kLanes) a.out[16 * kLanes + i] = lds[i];
}

// --- Host side -------------------------------------------------------------------------------------------------------
namespace {

using Kernel = void (*)(const KArgs);

bool is_gfx950() { return isa_arch::gfx950(); }
// global_load_lds_* (gfx940 and later; gfx90a loads into LDS through buffer_load ... lds only).
bool has_global_load_lds() { return !isa_arch::gfx90a(); }

template <class T>
struct Dev {
  T* ptr = nullptr;
  size_t n = 0;
  explicit Dev(size_t count) : n(count) { EXPECT_EQ(hipMalloc(&ptr, n * sizeof(T)), hipSuccess); }
  Dev(const std::vector<T>& v) : Dev(v.size()) { upload(v); }
  ~Dev() { (void)hipFree(ptr); }
  void upload(const std::vector<T>& v) { EXPECT_EQ(hipMemcpy(ptr, v.data(), n * sizeof(T), hipMemcpyHostToDevice), hipSuccess); }
  std::vector<T> download() const {
    std::vector<T> v(n);
    EXPECT_EQ(hipMemcpy(v.data(), ptr, n * sizeof(T), hipMemcpyDeviceToHost), hipSuccess);
    return v;
  }
};

// The V# for CK-style raw or structured access: dword 3 is 0x00020000 (DATA_FORMAT 32, no swizzle, no add_tid).
void make_rsrc(u32* w, const void* base, u32 stride, u32 num_records) {
  const u64 b = reinterpret_cast<u64>(base);
  w[0] = u32(b);
  w[1] = u32(b >> 32) & 0xffff;
  w[1] |= (stride & 0x3fff) << 16;
  w[2] = num_records;
  w[3] = 0x00020000;
}

// The addressing and range-check rules of docs/vgpu-memory.md, for one lane.
struct Access {
  u64 offset;  // byte offset from the V# base
  u32 ok;      // leading elements in range
};
Access buffer_access(bool idxen, bool offen, u32 idx, u32 voff, u32 inst_offset, u32 soff, u32 stride,
                     u32 num_records, u32 elem, u32 n, bool per_elem) {
  const u32 index = idxen ? idx : 0;
  const u32 part = (offen ? voff : 0) + inst_offset;  // wraps at 32 bits
  const u64 off = u64(part) + soff;
  Access a{u64(index) * stride + off, 0};
  if (idxen && stride) a.ok = index < num_records ? n : 0;
  else a.ok = off >= num_records ? 0 : u32(std::min<u64>(n, (num_records - off) / elem));
  if (!per_elem && a.ok < n) a.ok = 0;
  return a;
}

enum Mode { kOff, kOffen, kIdxen, kBoth };
const char* mode_name(int m) { return m == kOff ? "off" : m == kOffen ? "offen" : m == kIdxen ? "idxen" : "idxen offen"; }

enum class Ext { dwords, u8, i8, u16, i16, u8_d16, i8_d16, u16_d16, u8_d16_hi, i8_d16_hi, u16_d16_hi };

u32 extend(u32 x, Ext e) {
  switch (e) {
    case Ext::i8: return u32(int32_t(int8_t(x)));
    case Ext::i16: return u32(int32_t(int16_t(x)));
    case Ext::i8_d16: return uint16_t(int16_t(int8_t(x)));      // the other half reads as 0 (SRAM ECC parts)
    case Ext::u8_d16_hi: case Ext::u16_d16_hi: return x << 16;
    case Ext::i8_d16_hi: return u32(uint16_t(int16_t(int8_t(x)))) << 16;
    default: return x;
  }
}

struct LoadOp {
  const char* name;
  u32 bytes;
  Ext ext;
  Kernel k[4];  // off, offen, idxen, both
};
#define LOADOP(n, b, e) {#n, b, e, {ld_##n##_off, ld_##n##_offen, ld_##n##_idxen, ld_##n##_both}}
const LoadOp kLoads[] = {
    LOADOP(ubyte, 1, Ext::u8),           LOADOP(sbyte, 1, Ext::i8),         LOADOP(ushort, 2, Ext::u16),
    LOADOP(sshort, 2, Ext::i16),         LOADOP(dword, 4, Ext::dwords),     LOADOP(dwordx2, 8, Ext::dwords),
    LOADOP(dwordx3, 12, Ext::dwords),    LOADOP(dwordx4, 16, Ext::dwords),  LOADOP(ubyte_d16, 1, Ext::u8_d16),
    LOADOP(sbyte_d16, 1, Ext::i8_d16),   LOADOP(short_d16, 2, Ext::u16_d16), LOADOP(ubyte_d16_hi, 1, Ext::u8_d16_hi),
    LOADOP(sbyte_d16_hi, 1, Ext::i8_d16_hi), LOADOP(short_d16_hi, 2, Ext::u16_d16_hi),
};

// One addressing scenario: the V# shape, per-lane VGPRs and the SGPR offset.
struct Scenario {
  const char* what;
  int mode;
  u32 stride, num_records, soff;
  std::vector<u32> idx, off;
  u32 active = kLanes;
};

constexpr u32 kArena = 4096;  // bytes of the allocation the buffers live in
constexpr u32 kBase = 256;    // the V# base, as a byte offset into the arena

std::vector<uint8_t> pattern_bytes(u32 n, u32 seed) {
  std::vector<uint8_t> b(n);
  std::mt19937 rng(seed);
  for (auto& x : b) x = uint8_t(rng());
  return b;
}

// Scenarios that put lanes on both sides of every boundary.
std::vector<Scenario> load_scenarios() {
  std::vector<Scenario> s;
  {
    // Raw: offsets straddle num_records = 200 one byte at a time; inst_offset 20 and soffset 4 both count toward the
    // check; a far lane (the "offset + 0x80000000" idiom) reads 0 without touching memory; voffset + inst_offset
    // wraps at 32 bits; lanes 60.. are off in EXEC.
    Scenario c{"raw, byte-wise boundary", kOffen, 0, 200, 4, std::vector<u32>(kLanes), std::vector<u32>(kLanes), 60};
    for (u32 l = 0; l < kLanes; ++l) c.off[l] = l < 48 ? 150 + l : 4 * l - 180;
    c.off[56] = 0x80000000u;
    c.off[57] = 0xfffffff0u;  // + 20 wraps to 4
    c.off[58] = 0xffffffffu - 19;
    for (u32 l = 0; l < kLanes; ++l) c.idx[l] = 1000 + l;  // ignored without idxen
    s.push_back(c);
  }
  {
    // Raw, soffset alone pushing lanes out: num_records 64, offsets 0..63, soffset 30.
    Scenario c{"raw, soffset counts", kOffen, 0, 64, 30, std::vector<u32>(kLanes), std::vector<u32>(kLanes)};
    for (u32 l = 0; l < kLanes; ++l) c.off[l] = l;
    s.push_back(c);
  }
  {
    // No VGPR address: every lane reads base + 20 + soffset; num_records cuts a dwordx4 after its second dword.
    Scenario c{"vaddr off", kOff, 0, 34, 6, std::vector<u32>(kLanes), std::vector<u32>(kLanes)};
    s.push_back(c);
  }
  {
    // Structured: stride 12, 20 records; only the index is checked (inst_offset 20 > stride stays in range).
    Scenario c{"structured idxen", kIdxen, 12, 20, 4, std::vector<u32>(kLanes), std::vector<u32>(kLanes)};
    for (u32 l = 0; l < kLanes; ++l) c.idx[l] = l < 40 ? l : 0xffffffffu - l;
    s.push_back(c);
  }
  {
    // Structured with an offset VGPR: stride 16, 30 records, indices wrap past 30.
    Scenario c{"structured idxen offen", kBoth, 16, 30, 8, std::vector<u32>(kLanes), std::vector<u32>(kLanes)};
    for (u32 l = 0; l < kLanes; ++l) c.idx[l] = l % 37, c.off[l] = (3 * l) % 13;
    s.push_back(c);
  }
  {
    // idxen with stride 0: the index adds nothing and the byte offset is checked, as for a raw buffer.
    Scenario c{"idxen, stride 0", kBoth, 0, 60, 2, std::vector<u32>(kLanes), std::vector<u32>(kLanes)};
    for (u32 l = 0; l < kLanes; ++l) c.idx[l] = 7 * l, c.off[l] = l % 41;
    s.push_back(c);
  }
  return s;
}

void run(Kernel k, const KArgs& a, u32 lds_bytes = 0) {
  hipLaunchKernelGGL(k, dim3(1), dim3(kLanes), lds_bytes, 0, a);
  ASSERT_EQ(hipGetLastError(), hipSuccess);
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
}

TEST(Mubuf, LoadsMatchTheRangeCheckModel) {
  const std::vector<uint8_t> mem = pattern_bytes(kArena, 7);
  Dev<uint8_t> arena(mem);
  std::vector<u32> init(4 * kLanes);
  for (u32 i = 0; i < init.size(); ++i) init[i] = 0x5a5a0000u | i;
  Dev<u32> dinit(init);
  int checked = 0;
  for (const Scenario& sc : load_scenarios()) {
    Dev<u32> didx(sc.idx), doff(sc.off);
    for (const LoadOp& op : kLoads) {
      SCOPED_TRACE(std::string("buffer_load_") + op.name + " " + mode_name(sc.mode) + ": " + sc.what);
      Dev<u32> out(4 * kLanes);
      out.upload(std::vector<u32>(4 * kLanes, 0xdeadbeefu));
      KArgs a{};
      make_rsrc(a.rsrc, arena.ptr + kBase, sc.stride, sc.num_records);
      a.idx = didx.ptr, a.off = doff.ptr, a.init = dinit.ptr, a.out = out.ptr, a.soff = sc.soff, a.active = sc.active;
      run(op.k[sc.mode], a);
      const std::vector<u32> got = out.download();
      const u32 elem = op.bytes >= 4 ? 4 : op.bytes, n = op.bytes >= 4 ? op.bytes / 4 : 1;
      for (u32 l = 0; l < kLanes; ++l) {
        u32 want[4];
        for (u32 i = 0; i < n; ++i) want[i] = init[4 * l + i];
        if (l < sc.active) {
          const bool idxen = sc.mode == kIdxen || sc.mode == kBoth, offen = sc.mode == kOffen || sc.mode == kBoth;
          Access ac = buffer_access(idxen, offen, sc.idx[l], sc.off[l], 20, sc.soff, sc.stride, sc.num_records,
                                    elem, n, true);
          const u64 at = kBase + ac.offset;
          if (ac.ok) ASSERT_LE(at + ac.ok * elem, kArena) << "test scenario reads outside its arena, lane " << l;
          if (op.ext == Ext::dwords) {
            for (u32 i = 0; i < n; ++i) {
              u32 x = 0;
              if (i < ac.ok) std::memcpy(&x, &mem[at + 4 * i], 4);
              want[i] = x;
            }
          } else {
            u32 x = 0;
            if (ac.ok) std::memcpy(&x, &mem[at], op.bytes);
            want[0] = extend(x, op.ext);
          }
        }
        for (u32 i = 0; i < n; ++i)
          ASSERT_EQ(got[4 * l + i], want[i]) << "lane " << l << " dword " << i << std::hex << " got 0x" << got[4 * l + i]
                                             << " want 0x" << want[i];
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, int(load_scenarios().size() * std::size(kLoads) * kLanes));
}

struct StoreOp {
  const char* name;
  u32 bytes;
  bool hi;
  Kernel k[2];  // offen, both
};
#define STOREOP(n, b, h) {#n, b, h, {st_##n##_offen, st_##n##_both}}
const StoreOp kStores[] = {STOREOP(byte, 1, false),  STOREOP(byte_d16_hi, 1, true), STOREOP(short, 2, false),
                           STOREOP(short_d16_hi, 2, true), STOREOP(dword, 4, false), STOREOP(dwordx2, 8, false),
                           STOREOP(dwordx3, 12, false), STOREOP(dwordx4, 16, false)};

TEST(Mubuf, StoresAreDroppedOutOfRangeAndNeighboursStayUntouched) {
  // Lanes 20 bytes apart (no two lanes overlap for any size), unaligned by one byte; num_records cuts lane 39 inside
  // its second dword (raw), or at record 25 (structured, stride 24).
  struct StoreScenario {
    const char* what;
    int mode;  // 0 offen, 1 idxen offen
    u32 stride, num_records, soff;
    std::vector<u32> idx, off;
  };
  std::vector<StoreScenario> scs;
  {
    StoreScenario c{"raw", 0, 0, 20 * 39 + 24 + 1 + 5, 4, std::vector<u32>(kLanes), std::vector<u32>(kLanes)};
    for (u32 l = 0; l < kLanes; ++l) c.off[l] = 20 * l + 1;
    c.off[62] = 0x80000000u;       // out of range and outside the allocation: dropped, no fault
    c.off[63] = 0xffffffffu - 15;  // wraps to offset 4: in range
    scs.push_back(c);
  }
  {
    StoreScenario c{"structured", 1, 24, 25, 1, std::vector<u32>(kLanes), std::vector<u32>(kLanes)};
    for (u32 l = 0; l < kLanes; ++l) c.idx[l] = l < 60 ? l : 1000 + l, c.off[l] = l % 2;
    scs.push_back(c);
  }
  std::vector<u32> data(4 * kLanes);
  for (u32 l = 0; l < kLanes; ++l)
    for (u32 i = 0; i < 4; ++i) data[4 * l + i] = 0xa0000000u | (l << 16) | (i << 8) | (l ^ 0x5a);
  Dev<u32> ddata(data);
  for (const StoreScenario& sc : scs) {
    Dev<u32> didx(sc.idx), doff(sc.off);
    for (const StoreOp& op : kStores) {
      SCOPED_TRACE(std::string("buffer_store_") + op.name + " " + sc.what);
      std::vector<uint8_t> want(kArena, 0xee);
      Dev<uint8_t> arena(want);
      KArgs a{};
      make_rsrc(a.rsrc, arena.ptr + kBase, sc.stride, sc.num_records);
      a.idx = didx.ptr, a.off = doff.ptr, a.init = ddata.ptr, a.soff = sc.soff, a.active = kLanes;
      run(op.k[sc.mode], a);
      const u32 elem = op.bytes >= 4 ? 4 : op.bytes, n = op.bytes >= 4 ? op.bytes / 4 : 1;
      for (u32 l = 0; l < kLanes; ++l) {
        Access ac = buffer_access(sc.mode == 1, true, sc.idx[l], sc.off[l], 20, sc.soff, sc.stride, sc.num_records,
                                  elem, n, true);
        const u64 at = kBase + ac.offset;
        if (ac.ok) ASSERT_LE(at + ac.ok * elem, kArena);
        if (op.bytes >= 4) {
          for (u32 i = 0; i < ac.ok; ++i) std::memcpy(&want[at + 4 * i], &data[4 * l + i], 4);
        } else if (ac.ok) {
          u32 x = op.hi ? data[4 * l] >> 16 : data[4 * l];
          std::memcpy(&want[at], &x, op.bytes);
        }
      }
      const std::vector<uint8_t> got = arena.download();
      for (u32 i = 0; i < kArena; ++i) ASSERT_EQ(int(got[i]), int(want[i])) << "byte " << i << " of the arena";
    }
  }
}

// --- Atomics -------------------------------------------------------------------------------------------------------
float f32(u32 x) { return std::bit_cast<float>(x); }
u32 bits(float f) { return std::bit_cast<u32>(f); }
float ftz(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.f, x) : x; }
uint16_t rne16(float f, bool bf16) { return bf16 ? hk_host::bf16_bits(f) : hk_host::f16_bits(f); }
float widen16(uint16_t h, bool bf16) { return bf16 ? hk_host::bf16_value(h) : hk_host::f16_value(h); }
u32 pk_add(u32 a, u32 b, bool bf16) {
  u32 r = 0;
  for (int i = 0; i < 2; ++i)
    r |= u32(rne16(widen16(uint16_t(a >> 16 * i), bf16) + widen16(uint16_t(b >> 16 * i), bf16), bf16)) << 16 * i;
  return r;
}

// min/max_f64 per CDNA4 ISA 9.2.3: sNaN -> that NaN quieted (memory operand first), else the smaller/larger in the
// order -inf < ... < -0 < +0 < ... < +inf with a quiet NaN losing to any number.
u64 minmax_f64(u64 a, u64 b, bool max) {
  const u64 q = 1ull << 51;
  const double x = std::bit_cast<double>(a), y = std::bit_cast<double>(b);
  if (std::isnan(x) && !(a & q)) return a | q;
  if (std::isnan(y) && !(b & q)) return b | q;
  if (std::isnan(x)) return std::isnan(y) ? a : b;
  if (std::isnan(y)) return a;
  if (x == 0 && y == 0) return max ? (std::signbit(x) ? b : a) : (std::signbit(x) ? a : b);
  return (max ? x >= y : x <= y) ? a : b;
}

struct AtomicOp {
  const char* name;
  int words;      // 1: 32-bit memory word, 2: 64-bit
  bool cmpswap;
  Kernel rtn, nrt;
  std::function<u64(u64 old, u64 data, u64 cmp)> f;
  bool gfx950_only = false;
};

std::vector<AtomicOp> atomic_ops() {
  using F = std::function<u64(u64, u64, u64)>;
  auto s32 = [](u64 x) { return int32_t(u32(x)); };
  auto s64 = [](u64 x) { return int64_t(x); };
  std::vector<AtomicOp> v = {
      {"swap", 1, false, at_swap_rtn, at_swap_nrt, F([](u64, u64 d, u64) { return d; })},
      {"add", 1, false, at_add_rtn, at_add_nrt, F([](u64 o, u64 d, u64) { return u32(o + d); })},
      {"sub", 1, false, at_sub_rtn, at_sub_nrt, F([](u64 o, u64 d, u64) { return u32(o - d); })},
      {"smin", 1, false, at_smin_rtn, at_smin_nrt, F([=](u64 o, u64 d, u64) { return u32(std::min(s32(o), s32(d))); })},
      {"umin", 1, false, at_umin_rtn, at_umin_nrt, F([](u64 o, u64 d, u64) { return std::min(u32(o), u32(d)); })},
      {"smax", 1, false, at_smax_rtn, at_smax_nrt, F([=](u64 o, u64 d, u64) { return u32(std::max(s32(o), s32(d))); })},
      {"umax", 1, false, at_umax_rtn, at_umax_nrt, F([](u64 o, u64 d, u64) { return std::max(u32(o), u32(d)); })},
      {"and", 1, false, at_and_rtn, at_and_nrt, F([](u64 o, u64 d, u64) { return o & d; })},
      {"or", 1, false, at_or_rtn, at_or_nrt, F([](u64 o, u64 d, u64) { return o | d; })},
      {"xor", 1, false, at_xor_rtn, at_xor_nrt, F([](u64 o, u64 d, u64) { return o ^ d; })},
      {"inc", 1, false, at_inc_rtn, at_inc_nrt, F([](u64 o, u64 d, u64) { return u32(o) >= u32(d) ? 0 : u32(o + 1); })},
      {"dec", 1, false, at_dec_rtn, at_dec_nrt,
       F([](u64 o, u64 d, u64) { return (u32(o) == 0 || u32(o) > u32(d)) ? u32(d) : u32(o - 1); })},
      {"cmpswap", 1, true, at_cmpswap_rtn, at_cmpswap_nrt, F([](u64 o, u64 d, u64 c) { return o == c ? d : o; })},
      {"add_f32", 1, false, at_add_f32_rtn, at_add_f32_nrt,
       F([](u64 o, u64 d, u64) { return bits(ftz(f32(u32(o))) + ftz(f32(u32(d)))); })},
      {"pk_add_f16", 1, false, at_pk_add_f16_rtn, at_pk_add_f16_nrt, F([](u64 o, u64 d, u64) { return pk_add(u32(o), u32(d), false); })},
      {"pk_add_bf16", 1, false, at_pk_add_bf16_rtn, at_pk_add_bf16_nrt,
       F([](u64 o, u64 d, u64) { return pk_add(u32(o), u32(d), true); }), true},
      {"swap_x2", 2, false, at_swap_x2_rtn, at_swap_x2_nrt, F([](u64, u64 d, u64) { return d; })},
      {"add_x2", 2, false, at_add_x2_rtn, at_add_x2_nrt, F([](u64 o, u64 d, u64) { return o + d; })},
      {"sub_x2", 2, false, at_sub_x2_rtn, at_sub_x2_nrt, F([](u64 o, u64 d, u64) { return o - d; })},
      {"smin_x2", 2, false, at_smin_x2_rtn, at_smin_x2_nrt, F([=](u64 o, u64 d, u64) { return u64(std::min(s64(o), s64(d))); })},
      {"umin_x2", 2, false, at_umin_x2_rtn, at_umin_x2_nrt, F([](u64 o, u64 d, u64) { return std::min(o, d); })},
      {"smax_x2", 2, false, at_smax_x2_rtn, at_smax_x2_nrt, F([=](u64 o, u64 d, u64) { return u64(std::max(s64(o), s64(d))); })},
      {"umax_x2", 2, false, at_umax_x2_rtn, at_umax_x2_nrt, F([](u64 o, u64 d, u64) { return std::max(o, d); })},
      {"and_x2", 2, false, at_and_x2_rtn, at_and_x2_nrt, F([](u64 o, u64 d, u64) { return o & d; })},
      {"or_x2", 2, false, at_or_x2_rtn, at_or_x2_nrt, F([](u64 o, u64 d, u64) { return o | d; })},
      {"xor_x2", 2, false, at_xor_x2_rtn, at_xor_x2_nrt, F([](u64 o, u64 d, u64) { return o ^ d; })},
      {"inc_x2", 2, false, at_inc_x2_rtn, at_inc_x2_nrt, F([](u64 o, u64 d, u64) { return o >= d ? 0 : o + 1; })},
      {"dec_x2", 2, false, at_dec_x2_rtn, at_dec_x2_nrt, F([](u64 o, u64 d, u64) { return (o == 0 || o > d) ? d : o - 1; })},
      {"cmpswap_x2", 2, true, at_cmpswap_x2_rtn, at_cmpswap_x2_nrt, F([](u64 o, u64 d, u64 c) { return o == c ? d : o; })},
      {"add_f64", 2, false, at_add_f64_rtn, at_add_f64_nrt,
       F([](u64 o, u64 d, u64) { return std::bit_cast<u64>(std::bit_cast<double>(o) + std::bit_cast<double>(d)); })},
      {"min_f64", 2, false, at_min_f64_rtn, at_min_f64_nrt, F([](u64 o, u64 d, u64) { return minmax_f64(o, d, false); })},
      {"max_f64", 2, false, at_max_f64_rtn, at_max_f64_nrt, F([](u64 o, u64 d, u64) { return minmax_f64(o, d, true); })},
  };
  return v;
}

// Operand values per lane, with the edge cases each family cares about in the first lanes.
void atomic_inputs(const AtomicOp& op, u32 l, std::mt19937_64& rng, u64& old, u64& data, u64& cmp) {
  const std::string n = op.name;
  old = rng(), data = rng(), cmp = rng();
  if (op.words == 1) old = u32(old), data = u32(data), cmp = u32(cmp);
  if (n.rfind("inc", 0) == 0 || n.rfind("dec", 0) == 0) {
    const u64 cases[][2] = {{0, 5}, {5, 5}, {6, 5}, {4, 5}, {0, 0}, {7, 0}, {u32(~0u), u32(~0u)}};
    if (l < std::size(cases)) old = cases[l][0], data = cases[l][1];
    else old %= 16, data %= 16;
  }
  if (op.cmpswap && l % 2 == 0) cmp = old;  // half the lanes swap
  if (n == "add_f32") {
    const u32 cases[][2] = {{0x00000003, 0x00000005}, {0x80000003, 0x80000001}, {0x00400000, bits(1.f)},
                            {bits(1.5f), bits(2.25f)}, {bits(-0.f), bits(0.f)}, {0x7f800000, bits(1.f)}};
    if (l < std::size(cases)) old = cases[l][0], data = cases[l][1];
    else old = bits(float(int(rng() % 2001) - 1000) / 8), data = bits(float(int(rng() % 2001) - 1000) / 16);
  }
  if (n == "pk_add_f16") {
    const u32 cases[][2] = {{0x3c003c01, 0x10001000}, {0x00010001, 0x80020001}, {0x7bff7bff, 0x5c005000}};
    if (l < std::size(cases)) old = cases[l][0], data = cases[l][1];
    else old = u32(old) & 0x3fff3fff, data = u32(data) & 0x3fff3fff;
  }
  if (n == "pk_add_bf16") {
    // 1 + 2^-8 and 1.0078125 + 2^-8 are exact ties: round to even gives 1.0 and 1.015625.
    const u32 cases[][2] = {{0x3f813f80, 0x3b803b80}, {0x00013f80, 0x00013c00}, {0x7f7f4f80, 0x7f7f3f80}};
    if (l < std::size(cases)) old = cases[l][0], data = cases[l][1];
    else old = u32(old) & 0x7fff7fff, data = u32(data) & 0x3fff3fff;
  }
  if (n == "min_f64" || n == "max_f64") {
    const u64 qnan = 0x7ff8000000000000ull, snan = 0x7ff0000000000001ull, m0 = 1ull << 63, one = std::bit_cast<u64>(1.0);
    const u64 cases[][2] = {{m0, 0}, {0, m0}, {qnan, one}, {one, qnan}, {snan, one}, {one, snan | m0},
                            {std::bit_cast<u64>(-2.5), one}, {0x0000000000000001ull, 0x8000000000000001ull}};
    if (l < std::size(cases)) old = cases[l][0], data = cases[l][1];
    else old = std::bit_cast<u64>(double(int64_t(rng() % 2001) - 1000) / 3), data = std::bit_cast<u64>(double(int64_t(rng() % 2001) - 1000) / 7);
  }
  if (n == "add_f64") old = std::bit_cast<u64>(double(rng() % 100000) / 7), data = std::bit_cast<u64>(-double(rng() % 1000) / 3);
}

TEST(Mubuf, AtomicsMatchTheHostModel) {
  const bool gfx950 = is_gfx950();
  for (const AtomicOp& op : atomic_ops()) {
    if (op.gfx950_only && !gfx950) continue;
    for (bool returns : {true, false}) {
      SCOPED_TRACE(std::string("buffer_atomic_") + op.name + (returns ? " sc0" : ""));
      std::mt19937_64 rng(op.words * 1000 + std::hash<std::string>{}(op.name));
      // Lane l works on its own word at offset l * 8 (+ inst_offset 8); num_records stops the last 6 lanes, which
      // must leave memory alone and return 0.
      const u32 wb = 8, num_records = 8 + wb * 58;
      std::vector<u64> mem(kArena / 8, 0);
      std::vector<u32> off(kLanes), init(4 * kLanes);
      std::vector<u64> old(kLanes), data(kLanes), cmp(kLanes);
      for (u32 l = 0; l < kLanes; ++l) {
        atomic_inputs(op, l, rng, old[l], data[l], cmp[l]);
        off[l] = wb * l;
        const u32 word = (kBase + 8 + wb * l) / 8;
        mem[word] = op.words == 1 ? (mem[word] & ~0xffffffffull) | u32(old[l]) : old[l];
        u32 regs[4] = {u32(data[l]), u32(data[l] >> 32), 0, 0};
        if (op.cmpswap) {
          if (op.words == 1) regs[1] = u32(cmp[l]);
          else regs[2] = u32(cmp[l]), regs[3] = u32(cmp[l] >> 32);
        }
        std::memcpy(&init[4 * l], regs, sizeof regs);
      }
      std::vector<uint8_t> bytes(kArena);
      std::memcpy(bytes.data(), mem.data(), kArena);
      Dev<uint8_t> arena(bytes);
      Dev<u32> doff(off), dinit(init), out(4 * kLanes);
      KArgs a{};
      make_rsrc(a.rsrc, arena.ptr + kBase, 0, num_records);
      a.off = doff.ptr, a.init = dinit.ptr, a.out = out.ptr, a.soff = 0, a.active = kLanes;
      run(returns ? op.rtn : op.nrt, a);
      const std::vector<uint8_t> after = arena.download();
      const std::vector<u32> got = out.download();
      for (u32 l = 0; l < kLanes; ++l) {
        const u32 at = kBase + 8 + wb * l;
        const bool in = at - kBase + 4 * op.words <= num_records;
        u64 now = 0;
        std::memcpy(&now, &after[at], 4 * op.words);
        const u64 want = in ? op.f(old[l], data[l], cmp[l]) : old[l];
        ASSERT_EQ(now, want) << std::hex << "lane " << l << " old 0x" << old[l] << " data 0x" << data[l];
        if (returns) {
          u64 r = got[4 * l];
          if (op.words == 2) r |= u64(got[4 * l + 1]) << 32;
          ASSERT_EQ(r, in ? old[l] : 0) << "returned value of lane " << l;
        }
      }
      // The upper half of each 8-byte slot of a 32-bit atomic is untouched.
      if (op.words == 1)
        for (u32 l = 0; l < kLanes; ++l) ASSERT_EQ(after[kBase + 12 + wb * l], 0) << "lane " << l;
    }
  }
}

TEST(Mubuf, ContendedAtomicAddReturnsEveryIntermediateValue) {
  Dev<u32> arena(std::vector<u32>(64, 0));
  std::vector<u32> init(4 * kLanes, 1), off(kLanes, 0);
  Dev<u32> dinit(init), doff(off), out(4 * kLanes);
  KArgs a{};
  make_rsrc(a.rsrc, arena.ptr, 0, 256);
  a.off = doff.ptr, a.init = dinit.ptr, a.out = out.ptr, a.soff = 16, a.active = kLanes;  // all lanes hit byte 24
  run(at_add_rtn, a);
  std::vector<u32> got = out.download(), returned;
  for (u32 l = 0; l < kLanes; ++l) returned.push_back(got[4 * l]);
  std::sort(returned.begin(), returned.end());
  for (u32 l = 0; l < kLanes; ++l) ASSERT_EQ(returned[l], l);
  EXPECT_EQ(arena.download()[6], u32(kLanes));
}

// --- LDS DMA -------------------------------------------------------------------------------------------------------
struct DmaOp {
  const char* name;
  u32 bytes;
  Ext ext;
  Kernel buffer, gvaddr, gsaddr;
  bool gfx950_only;
};
const DmaOp kDmas[] = {
    {"ubyte", 1, Ext::u8, dma_ubyte, gdma_ubyte_vaddr, gdma_ubyte_saddr, false},
    {"sbyte", 1, Ext::i8, dma_sbyte, gdma_sbyte_vaddr, gdma_sbyte_saddr, false},
    {"ushort", 2, Ext::u16, dma_ushort, gdma_ushort_vaddr, gdma_ushort_saddr, false},
    {"sshort", 2, Ext::i16, dma_sshort, gdma_sshort_vaddr, gdma_sshort_saddr, false},
    {"dword", 4, Ext::dwords, dma_dword, gdma_dword_vaddr, gdma_dword_saddr, false},
    {"dwordx3", 12, Ext::dwords, dma_dwordx3, gdma_dwordx3_vaddr, gdma_dwordx3_saddr, true},
    {"dwordx4", 16, Ext::dwords, dma_dwordx4, gdma_dwordx4_vaddr, gdma_dwordx4_saddr, true},
};

std::vector<u32> canary_lds(u32 bytes) {
  std::vector<u32> v(bytes / 4);
  for (u32 i = 0; i < v.size(); ++i) v[i] = 0xC0DE0000u ^ i;
  return v;
}

// Writes one lane's DMA result into the host LDS image: `ok` leading elements from `src`, zeros for the rest.
void model_dma_lane(std::vector<u32>& lds, u64 lds_addr, const DmaOp& op, const uint8_t* src, u32 ok) {
  std::vector<uint8_t> img(lds.size() * 4);
  std::memcpy(img.data(), lds.data(), img.size());
  if (op.ext == Ext::dwords) {
    for (u32 i = 0; i < op.bytes / 4; ++i) {
      u32 x = 0;
      if (i < ok) std::memcpy(&x, src + 4 * i, 4);
      std::memcpy(&img[lds_addr + 4 * i], &x, 4);
    }
  } else {
    u32 x = 0;
    if (ok) std::memcpy(&x, src, op.bytes);
    x = extend(x, op.ext);
    std::memcpy(&img[lds_addr], &x, 4);
  }
  std::memcpy(lds.data(), img.data(), img.size());
}

TEST(Mubuf, BufferLoadToLdsPlacesEachLaneAtM0PlusOffsetPlusLaneStride) {
  const bool gfx950 = is_gfx950();
  const std::vector<uint8_t> mem = pattern_bytes(kArena, 11);
  Dev<uint8_t> arena(mem);
  struct DmaScenario {
    const char* what;
    u32 num_records, soff, m0, lds_bytes, active;
    bool gfx950_only;
  };
  const DmaScenario scs[] = {
      // M0 bits above 17 are ignored (gfx950 uses M0[17:0], gfx942 M0[15:0]); num_records cuts the lanes' range.
      {"m0 = 64 with high garbage", 300, 8, 0xabc00040u, 2048, 64, false},
      {"m0 not 16-aligned, partial exec", 201, 0, 0x28u, 2048, 45, false},
      {"LDS above 64 KiB", 4000, 4, 70000u, 100 * 1024, 64, true},
  };
  for (const DmaScenario& sc : scs) {
    if (sc.gfx950_only && !gfx950) continue;
    for (const DmaOp& op : kDmas) {
      if (op.gfx950_only && !gfx950) continue;
      SCOPED_TRACE(std::string("buffer_load_") + op.name + " ... lds: " + sc.what);
      std::vector<u32> off(kLanes);
      for (u32 l = 0; l < kLanes; ++l) off[l] = op.bytes <= 4 ? 7 * l + 1 : 5 * l + 3;  // unaligned, overlapping reads
      Dev<u32> doff(off), out(sc.lds_bytes / 4);
      KArgs a{};
      make_rsrc(a.rsrc, arena.ptr + kBase, 0, sc.num_records);
      a.off = doff.ptr, a.out = out.ptr, a.soff = sc.soff, a.active = sc.active, a.m0 = sc.m0, a.lds_bytes = sc.lds_bytes;
      run(op.buffer, a, sc.lds_bytes);
      std::vector<u32> want = canary_lds(sc.lds_bytes);
      const u32 m0 = sc.m0 & (gfx950 ? 0x3ffffu : 0xffffu), slot = op.bytes <= 4 ? 4 : 16;
      const u32 elem = op.bytes >= 4 ? 4 : op.bytes, n = op.bytes >= 4 ? op.bytes / 4 : 1;
      for (u32 l = 0; l < sc.active; ++l) {
        Access ac = buffer_access(false, true, 0, off[l], 12, sc.soff, 0, sc.num_records, elem, n, true);
        model_dma_lane(want, m0 + 12 + l * slot, op, &mem[kBase + ac.offset], ac.ok);
      }
      const std::vector<u32> got = out.download();
      for (u32 i = 0; i < want.size(); ++i)
        ASSERT_EQ(got[i], want[i]) << std::hex << "LDS byte 0x" << 4 * i << " got 0x" << got[i] << " want 0x" << want[i];
    }
  }
}

TEST(Mubuf, GlobalLoadLdsPlacesEachLaneAtM0PlusOffsetPlusLaneStride) {
  if (!has_global_load_lds()) GTEST_SKIP() << "no global_load_lds on this arch";
  const bool gfx950 = is_gfx950();
  const std::vector<uint8_t> mem = pattern_bytes(kArena, 13);
  Dev<uint8_t> arena(mem);
  // gfx950 drops M0[1:0] for global_load_lds (M0[17:2] * 4); on gfx942 the test keeps M0 dword-aligned.
  const u32 m0 = gfx950 ? 0x00fc0083u : 0x00fc0080u;
  const u32 lds_bytes = 2048, m0_eff = m0 & (gfx950 ? 0x3fffcu : 0xfffcu);
  for (const DmaOp& op : kDmas) {
    if (op.gfx950_only && !gfx950) continue;
    for (bool saddr : {false, true}) {
      SCOPED_TRACE(std::string("global_load_lds_") + op.name + (saddr ? " saddr" : " vaddr"));
      std::vector<u32> off(kLanes);
      for (u32 l = 0; l < kLanes; ++l) off[l] = 64 + 9 * l;
      Dev<u32> doff(off), out(lds_bytes / 4);
      KArgs a{};
      a.off = doff.ptr, a.out = out.ptr, a.active = 50, a.m0 = m0, a.lds_bytes = lds_bytes, a.gbase = arena.ptr;
      run(saddr ? op.gsaddr : op.gvaddr, a, lds_bytes);
      const int inst_offset = saddr ? 24 : -8;  // the signed offset moves both addresses
      std::vector<u32> want = canary_lds(lds_bytes);
      const u32 slot = op.bytes <= 4 ? 4 : 16;
      for (u32 l = 0; l < a.active; ++l)
        model_dma_lane(want, u32(int(m0_eff) + inst_offset) + l * slot, op, &mem[off[l] + inst_offset], 4);
      const std::vector<u32> got = out.download();
      for (u32 i = 0; i < want.size(); ++i)
        ASSERT_EQ(got[i], want[i]) << std::hex << "LDS byte 0x" << 4 * i << " got 0x" << got[i] << " want 0x" << want[i];
    }
  }
}

TEST(Mubuf, BuiltinsAsClangEmitsThem) {
  const std::vector<uint8_t> mem = pattern_bytes(kArena, 17);
  Dev<uint8_t> arena(mem);
  const u32 nr = 150, soff = 4, lds_bytes = 4096;
  std::vector<u32> off(kLanes);
  for (u32 l = 0; l < kLanes; ++l) off[l] = 3 * l + l % 5;
  Dev<u32> doff(off), out(16 * kLanes + lds_bytes / 4);
  KArgs a{};
  a.rsrc[2] = nr, a.off = doff.ptr, a.out = out.ptr, a.soff = soff, a.lds_bytes = lds_bytes, a.gbase = arena.ptr;
  run(builtin_raw, a, lds_bytes);
  const std::vector<u32> got = out.download();
  const std::vector<uint8_t> after = arena.download();
  std::vector<uint8_t> want_mem = mem;
  std::vector<u32> lds = canary_lds(lds_bytes);
  auto read = [&](u32 at, u32 bytes) {
    u32 x = 0;
    std::memcpy(&x, &mem[at], bytes);
    return x;
  };
  for (u32 l = 0; l < kLanes; ++l) {
    SCOPED_TRACE("lane " + std::to_string(l));
    u32 want[12];
    Access b = buffer_access(false, true, 0, off[l], 0, soff, 0, nr, 1, 1, true);
    want[0] = b.ok ? read(b.offset, 1) : 0;
    Access h = buffer_access(false, true, 0, off[l], 0, soff, 0, nr, 2, 1, true);
    want[1] = h.ok ? read(h.offset, 2) : 0;
    Access w = buffer_access(false, true, 0, off[l], 36, soff, 0, nr, 4, 1, true);
    want[2] = w.ok ? read(w.offset, 4) : 0;
    Access x2 = buffer_access(false, true, 0, off[l], 0, 0, 0, nr, 4, 2, true);
    for (u32 i = 0; i < 2; ++i) want[3 + i] = i < x2.ok ? read(x2.offset + 4 * i, 4) : 0;
    Access x3 = buffer_access(false, true, 0, off[l], 0, soff, 0, nr, 4, 3, true);
    for (u32 i = 0; i < 3; ++i) want[5 + i] = i < x3.ok ? read(x3.offset + 4 * i, 4) : 0;
    Access x4 = buffer_access(false, true, 0, off[l], 0, soff, 0, nr, 4, 4, true);
    for (u32 i = 0; i < 4; ++i) want[8 + i] = i < x4.ok ? read(x4.offset + 4 * i, 4) : 0;
    for (u32 i = 0; i < 12; ++i) ASSERT_EQ(got[16 * l + i], want[i]) << "result " << i;
    if (16 + 2 * l + 2 <= nr) want_mem[16 + 2 * l] = uint8_t(l), want_mem[16 + 2 * l + 1] = 0xab;
    Access d = buffer_access(false, true, 0, off[l], 16, soff, 0, nr, 4, 1, true);
    lds[64 + 4 + l] = d.ok ? read(d.offset, 4) : 0;
    if (has_global_load_lds()) lds[512 + 2 + l] = read(off[l] + 8, 2);
  }
  for (u32 i = 0; i < kArena; ++i) ASSERT_EQ(int(after[i]), int(want_mem[i])) << "byte " << i;
  for (u32 i = 0; i < lds.size(); ++i)
    ASSERT_EQ(got[16 * kLanes + i], lds[i]) << std::hex << "LDS byte 0x" << 4 * i;
}

// --- Faults --------------------------------------------------------------------------------------------------------
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Launches k and expects the launch to fail with `code`, the message naming `mnemonic` and `detail`.
void expect_fault(Kernel k, const KArgs& a, u32 lds_bytes, hipError_t code, const std::string& mnemonic,
                  const std::string& detail) {
  hipLaunchKernelGGL(k, dim3(1), dim3(kLanes), lds_bytes, 0, a);
  hipError_t e = hipGetLastError();
  (void)hipDeviceSynchronize();
  EXPECT_EQ(e, code) << hipGetErrorName(e);
  const std::string text = hipGetErrorString(e);
  EXPECT_TRUE(contains(text, mnemonic)) << text;
  EXPECT_TRUE(contains(text, detail)) << text;
  (void)hipGetLastError();
}

TEST(Mubuf, LdsDmaPastTheAllocationFaults) {
  Dev<uint8_t> arena(pattern_bytes(kArena, 3));
  Dev<u32> doff(std::vector<u32>(kLanes, 0)), out(1024 / 4);
  KArgs a{};
  make_rsrc(a.rsrc, arena.ptr, 0, kArena);
  a.off = doff.ptr, a.out = out.ptr, a.active = kLanes, a.lds_bytes = 1024;
  a.m0 = 1024 - 12 - 4 * 40;  // lane 40 writes the first dword past the 1024-byte allocation
  expect_fault(dma_dword, a, 1024, hipErrorIllegalAddress, "buffer_load_dword", "past the workgroup's 1024-byte");
  expect_fault(dma_dword, a, 1024, hipErrorIllegalAddress, "buffer_load_dword", "lane 40");
  if (!has_global_load_lds()) return;
  Dev<u32> doff16(std::vector<u32>(kLanes, 16));
  a.off = doff16.ptr, a.gbase = arena.ptr, a.m0 = 1024 + 8 - 4 * 10;  // global form: lane 10 is the first one past
  expect_fault(gdma_dword_vaddr, a, 1024, hipErrorIllegalAddress, "global_load_lds_dword", "lane 10");
}

TEST(Mubuf, InRangeAccessOutsideEveryAllocationFaults) {
  Dev<uint8_t> arena(pattern_bytes(kArena, 3));
  std::vector<u32> off(kLanes, 0);
  off[17] = 0xc0000000u;  // in range for num_records 0xffffffff, but 3 GiB past the allocation
  Dev<u32> doff(off), dinit(std::vector<u32>(4 * kLanes, 0)), out(4 * kLanes);
  KArgs a{};
  make_rsrc(a.rsrc, arena.ptr, 0, 0xffffffffu);
  a.off = doff.ptr, a.init = dinit.ptr, a.out = out.ptr, a.active = kLanes;
  expect_fault(ld_dword_offen, a, 0, hipErrorIllegalAddress, "buffer_load_dword", "outside every allocation");
  expect_fault(st_dword_offen, a, 0, hipErrorIllegalAddress, "buffer_store_dword", "lane 17");
}

TEST(Mubuf, UnmodelledResourceFeaturesFaultClearly) {
  Dev<uint8_t> arena(pattern_bytes(kArena, 3));
  Dev<u32> doff(std::vector<u32>(kLanes, 0)), dinit(std::vector<u32>(4 * kLanes, 0)), out(4 * kLanes);
  KArgs a{};
  a.off = doff.ptr, a.init = dinit.ptr, a.out = out.ptr, a.active = kLanes;
  make_rsrc(a.rsrc, arena.ptr, 16, 64);
  a.rsrc[1] |= 1u << 31;
  a.idx = doff.ptr;
  expect_fault(ld_dword_idxen, a, 0, hipErrorLaunchFailure, "buffer_load_dword", "SWIZZLE_ENABLE");
  make_rsrc(a.rsrc, arena.ptr, 16, 64);
  a.rsrc[3] |= 1u << 23;
  expect_fault(st_dword_offen, a, 0, hipErrorLaunchFailure, "buffer_store_dword", "ADD_TID_ENABLE");
  // The cache-swizzle bit (62) changes no address: a plain load with it set works.
  make_rsrc(a.rsrc, arena.ptr, 0, 64);
  a.rsrc[1] |= 1u << 30;
  run(ld_dword_offen, a);
  const std::vector<uint8_t> mem = pattern_bytes(kArena, 3);
  u32 want;
  std::memcpy(&want, &mem[20], 4);  // offset 0 + inst_offset 20
  EXPECT_EQ(out.download()[0], want);
}

// V#s as kernel libraries build them: bits 62 (cache swizzle) and 63 (swizzle enable) set and the tile's row stride in
// the stride field, used for raw offen loads of a row-major tile, to VGPRs and straight into LDS. Hardware reads these
// linearly (docs/vgpu-memory.md): the result is the plain raw-buffer model's, range check in bytes included.
TEST(Mubuf, SwizzleBitsAndRowStrideLeaveRawOffenAccessLinear) {
  const std::vector<uint8_t> mem = pattern_bytes(kArena, 13);
  Dev<uint8_t> arena(mem);
  const u32 row_bytes = 256, num_records = 1500, soff = 4;
  std::vector<u32> off(kLanes);
  for (u32 l = 0; l < kLanes; ++l) off[l] = (l / 16) * row_bytes + (l % 16) * 4 + (l == 63 ? 4000 : 0);  // 63: past
  Dev<u32> doff(off), dinit(std::vector<u32>(4 * kLanes, 0x77777777u)), out(4 * kLanes);
  KArgs a{};
  make_rsrc(a.rsrc, arena.ptr + kBase, row_bytes, num_records);
  a.rsrc[1] |= 3u << 30;
  a.off = doff.ptr, a.init = dinit.ptr, a.out = out.ptr, a.soff = soff, a.active = kLanes;
  run(ld_dword_offen, a);
  const std::vector<u32> got = out.download();
  for (u32 l = 0; l < kLanes; ++l) {
    const Access ac = buffer_access(false, true, 0, off[l], 20, soff, row_bytes, num_records, 4, 1, false);
    u32 want = 0;
    if (ac.ok) std::memcpy(&want, &mem[kBase + ac.offset], 4);
    EXPECT_EQ(got[4 * l], want) << "lane " << l;
  }

  // Straight into LDS: buffer_load_dword ... lds with the same V#.
  const DmaOp& dword = *std::find_if(std::begin(kDmas), std::end(kDmas),
                                     [](const DmaOp& op) { return std::string(op.name) == "dword"; });
  const u32 lds_bytes = 2048, m0 = 64;
  Dev<u32> lds_out(lds_bytes / 4);
  a.out = lds_out.ptr, a.m0 = m0, a.lds_bytes = lds_bytes;
  run(dword.buffer, a, lds_bytes);
  std::vector<u32> want = canary_lds(lds_bytes);
  for (u32 l = 0; l < kLanes; ++l) {
    const Access ac = buffer_access(false, true, 0, off[l], 12, soff, row_bytes, num_records, 4, 1, true);
    model_dma_lane(want, m0 + 12 + l * 4, dword, ac.ok ? &mem[kBase + ac.offset] : mem.data(), ac.ok);
  }
  const std::vector<u32> lds = lds_out.download();
  for (u32 i = 0; i < want.size(); ++i) ASSERT_EQ(lds[i], want[i]) << "LDS byte " << 4 * i;
}

}  // namespace
