// LDS (DS instructions): reads, writes, two-address forms, atomics and the cross-lane permutes that use the LDS
// crossbar. A workgroup runs on one host thread, so LDS atomics need no host atomics.
#include <string>

#include <immintrin.h>

#include "isa/isa.h"
#include "isa/mem_ops.h"
#include "memory/memory.h"

namespace vgpu {
namespace {

// Byte addresses of a DS instruction's lanes (address VGPR + offset), recorded for the profile when it is on.
inline void ds_addresses(Wave& w, const Inst& I, int addr_op, uint32_t offset, uint32_t bytes, bool write,
                         uint32_t* out) {
  const uint32_t* a = w.v[I.op[addr_op].reg];
  for (int l = 0; l < kLanes; ++l) out[l] = a[l] + offset;
  if (w.profile) profile_lds(w, I, out, bytes, write);
}

// A full wave's reads of Words (1, 2 or 4) consecutive dwords per lane, lane l's at lds + a[l] + offset, into the
// registers first..first + Words - 1. Two and four dwords go four lanes at a time: each lane's dwords in one load,
// then a transpose (moves only), rather than one pass over the lanes per register.
template <uint32_t Words>
inline void read_full_wave(Wave& w, uint32_t first, const uint8_t* lds, const uint32_t* a, uint32_t offset) {
  const uint8_t* base = lds + offset;
  if constexpr (Words == 4) {
    uint32_t *d0 = w.v[first], *d1 = w.v[first + 1], *d2 = w.v[first + 2], *d3 = w.v[first + 3];
    for (int l = 0; l < kLanes; l += 4) {
      __m128 r0 = _mm_loadu_ps(reinterpret_cast<const float*>(base + a[l]));
      __m128 r1 = _mm_loadu_ps(reinterpret_cast<const float*>(base + a[l + 1]));
      __m128 r2 = _mm_loadu_ps(reinterpret_cast<const float*>(base + a[l + 2]));
      __m128 r3 = _mm_loadu_ps(reinterpret_cast<const float*>(base + a[l + 3]));
      _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
      _mm_storeu_ps(reinterpret_cast<float*>(d0 + l), r0);
      _mm_storeu_ps(reinterpret_cast<float*>(d1 + l), r1);
      _mm_storeu_ps(reinterpret_cast<float*>(d2 + l), r2);
      _mm_storeu_ps(reinterpret_cast<float*>(d3 + l), r3);
    }
  } else if constexpr (Words == 2) {
    uint32_t *d0 = w.v[first], *d1 = w.v[first + 1];
    for (int l = 0; l < kLanes; l += 4) {
      const __m128i t0 = _mm_unpacklo_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(base + a[l])),
                                            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(base + a[l + 1])));
      const __m128i t1 = _mm_unpacklo_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(base + a[l + 2])),
                                            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(base + a[l + 3])));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d0 + l), _mm_unpacklo_epi64(t0, t1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d1 + l), _mm_unpackhi_epi64(t0, t1));
    }
  } else {
    for (uint32_t i = 0; i < Words; ++i) {
      uint32_t* dst = w.v[first + i];
      for (int l = 0; l < kLanes; ++l) std::memcpy(&dst[l], base + a[l] + 4 * i, 4);
    }
  }
}

template <uint32_t Bytes, Ext E>
void ds_read(Wave& w, const Inst& I) {
  const uint64_t exec = w.exec();
  alignas(64) uint32_t a[kLanes];
  ds_addresses(w, I, 1, uint32_t(I.offset), Bytes, false, a);
  const uint16_t d = I.op[0].reg;
  auto load = [&](int l, const uint8_t* p) {
    if constexpr (E == Ext::dwords) {
      for (uint32_t i = 0; i < Bytes / 4; ++i) std::memcpy(&w.v[d + i][l], p + 4 * i, 4);
    } else {
      uint32_t x = 0;
      std::memcpy(&x, p, Bytes);
      w.v[d][l] = extend(x, E);
    }
  };
  if (lds_lanes_clear(w, exec, a, 0, Bytes)) {
    const uint8_t* lds = w.wg->lds;
    if (exec == ~0ull) {  // a full wave: destination register by register, its lanes in order
      if constexpr (E == Ext::dwords) {
        read_full_wave<Bytes / 4>(w, d, lds, a, 0);
      } else {
        for (int l = 0; l < kLanes; ++l) load(l, lds + a[l]);
      }
      return;
    }
    for (int l = 0; l < kLanes; ++l)
      if (exec >> l & 1) load(l, lds + a[l]);
    return;
  }
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    const uint8_t* p = lds_ptr(w, I, a[l], Bytes, l, LdsUse::read);
    if (!p) return;
    load(l, p);
  }
}

template <uint32_t Bytes, bool hi = false>
void ds_write(Wave& w, const Inst& I) {
  const uint64_t exec = w.exec();
  alignas(64) uint32_t a[kLanes];
  ds_addresses(w, I, 0, uint32_t(I.offset), Bytes, true, a);
  const uint16_t d = I.op[1].reg;
  auto store = [&](int l, uint8_t* p) {
    if constexpr (Bytes >= 4) {
      for (uint32_t i = 0; i < Bytes / 4; ++i) std::memcpy(p + 4 * i, &w.v[d + i][l], 4);
    } else {
      uint32_t x = hi ? w.v[d][l] >> 16 : w.v[d][l];
      std::memcpy(p, &x, Bytes);
    }
  };
  if (lds_lanes_clear(w, exec, a, 0, Bytes)) {
    uint8_t* lds = w.wg->lds;
    if (exec == ~0ull) {
      for (int l = 0; l < kLanes; ++l) store(l, lds + a[l]);
      return;
    }
    for (int l = 0; l < kLanes; ++l)
      if (exec >> l & 1) store(l, lds + a[l]);
    return;
  }
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    uint8_t* p = lds_ptr(w, I, a[l], Bytes, l, LdsUse::write);
    if (!p) return;
    store(l, p);
  }
}

// ds_read2 / ds_write2: two elements at offset0 and offset1, in units of the element size (times 64 for st64).
// The profile counts the two halves of a read2/write2 as two accesses of the element size (an assumption: the
// phase grouping of the two-address forms is not documented).
inline void profile_pair(Wave& w, const Inst& I, int addr_op, uint32_t bytes, uint32_t stride, bool write) {
  if (!w.profile) return;
  alignas(64) uint32_t tmp[kLanes];
  ds_addresses(w, I, addr_op, uint32_t(I.offset) * bytes * stride, bytes, write, tmp);
  ds_addresses(w, I, addr_op, uint32_t(I.offset1) * bytes * stride, bytes, write, tmp);
}

template <uint32_t Bytes, uint32_t Stride>
void ds_read2(Wave& w, const Inst& I) {
  const uint64_t exec = w.exec();
  profile_pair(w, I, 1, Bytes, Stride, false);
  alignas(64) uint32_t a[kLanes];  // copied first: the destination may overlap the address register
  std::memcpy(a, w.v[I.op[1].reg], sizeof a);
  const uint16_t d = I.op[0].reg;
  constexpr uint32_t words = Bytes / 4;
  const uint32_t offs[2] = {uint32_t(I.offset) * Bytes * Stride, uint32_t(I.offset1) * Bytes * Stride};
  if (lds_lanes_clear(w, exec, a, offs[0], Bytes) && lds_lanes_clear(w, exec, a, offs[1], Bytes)) {
    const uint8_t* lds = w.wg->lds;
    if (exec == ~0ull) {  // a full wave: destination register by register, its lanes in order
      for (int k = 0; k < 2; ++k) read_full_wave<words>(w, d + k * words, lds, a, offs[k]);
      return;
    }
    for (int l = 0; l < kLanes; ++l) {
      if (!(exec >> l & 1)) continue;
      for (int k = 0; k < 2; ++k)
        for (uint32_t i = 0; i < words; ++i) std::memcpy(&w.v[d + k * words + i][l], lds + a[l] + offs[k] + 4 * i, 4);
    }
    return;
  }
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    for (int k = 0; k < 2; ++k) {
      const uint8_t* p = lds_ptr(w, I, uint64_t(a[l]) + offs[k], Bytes, l, LdsUse::read);
      if (!p) return;
      for (uint32_t i = 0; i < words; ++i) std::memcpy(&w.v[d + k * words + i][l], p + 4 * i, 4);
    }
  }
}

template <uint32_t Bytes, uint32_t Stride>
void ds_write2(Wave& w, const Inst& I) {
  const uint64_t exec = w.exec();
  profile_pair(w, I, 0, Bytes, Stride, true);
  const uint32_t* a = w.v[I.op[0].reg];
  constexpr uint32_t words = Bytes / 4;
  const uint32_t offs[2] = {uint32_t(I.offset) * Bytes * Stride, uint32_t(I.offset1) * Bytes * Stride};
  const bool clear = lds_lanes_clear(w, exec, a, offs[0], Bytes) && lds_lanes_clear(w, exec, a, offs[1], Bytes);
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    for (int k = 0; k < 2; ++k) {
      uint8_t* p = clear ? w.wg->lds + a[l] + offs[k] : lds_ptr(w, I, uint64_t(a[l]) + offs[k], Bytes, l, LdsUse::write);
      if (!p) return;
      const uint16_t d = I.op[1 + k].reg;
      for (uint32_t i = 0; i < words; ++i) std::memcpy(p + 4 * i, &w.v[d + i][l], 4);
    }
  }
}

// LDS atomics: Op(old, data0, data1) -> new. The _rtn forms return the old value in operand 0.
template <class T, auto Op, int ndata, bool rtn>
void ds_atomic(Wave& w, const Inst& I) {
  const uint64_t exec = w.exec();
  const int ai = rtn ? 1 : 0;
  if (w.profile) {
    alignas(64) uint32_t tmp[kLanes];
    ds_addresses(w, I, ai, uint32_t(I.offset), sizeof(T), true, tmp);
  }
  const uint32_t* a = w.v[I.op[ai].reg];
  constexpr uint32_t words = sizeof(T) / 4;
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    uint8_t* p = lds_ptr(w, I, uint64_t(a[l]) + uint32_t(I.offset), sizeof(T), l, LdsUse::atomic);
    if (!p) return;
    auto data = [&](int k) {
      uint64_t x = w.v[I.op[ai + 1 + k].reg][l];
      if constexpr (words == 2) x |= uint64_t(w.v[I.op[ai + 1 + k].reg + 1][l]) << 32;
      return T(x);
    };
    T old;
    std::memcpy(&old, p, sizeof(T));
    T d0 = data(0), d1 = ndata > 1 ? data(1) : T(0);
    T nw = Op(old, d0, d1);
    std::memcpy(p, &nw, sizeof(T));
    if constexpr (rtn) {
      w.v[I.op[0].reg][l] = uint32_t(old);
      if constexpr (words == 2) w.v[I.op[0].reg + 1][l] = uint32_t(uint64_t(old) >> 32);
    }
  }
}

// ds_bpermute_b32: each lane reads the data of lane (addr / 4) mod 64; ds_permute_b32: each lane writes its data to
// lane (addr / 4) mod 64. Inactive source lanes read as zero... only active lanes take part.
template <bool backward>
void ds_permute(Wave& w, const Inst& I) {
  const uint64_t exec = w.exec();
  const uint32_t* a = w.v[I.op[1].reg];
  const uint32_t* src = w.v[I.op[2].reg];
  alignas(64) uint32_t out[kLanes] = {};
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    int other = int(((a[l] + uint32_t(I.offset)) >> 2) & 63);
    if (backward) out[l] = (exec >> other & 1) ? src[other] : 0;
    else out[other] = src[l];
  }
  uint32_t* d = w.v[I.op[0].reg];
  for (int l = 0; l < kLanes; ++l)
    if (exec >> l & 1) d[l] = out[l];
}

// ds_swizzle_b32 offset:pattern: bit 15 selects QDMode (quad permutation) or BitMode (and/or/xor masks on 32 lanes).
void ds_swizzle(Wave& w, const Inst& I) {
  const uint64_t exec = w.exec();
  const uint32_t* src = w.v[I.op[1].reg];
  const uint32_t pat = uint32_t(I.offset) & 0xffff;
  alignas(64) uint32_t out[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    int other;
    if (pat & 0x8000) {
      int q = l & 3;
      other = (l & ~3) | int(pat >> (2 * q) & 3);
    } else {
      int and_m = pat & 0x1f, or_m = pat >> 5 & 0x1f, xor_m = pat >> 10 & 0x1f;
      other = (l & 0x20) | ((((l & 0x1f) & and_m) | or_m) ^ xor_m);
    }
    out[l] = (exec >> other & 1) ? src[other] : 0;
  }
  uint32_t* d = w.v[I.op[0].reg];
  for (int l = 0; l < kLanes; ++l)
    if (exec >> l & 1) d[l] = out[l];
}

// Registrations, each with its bytes per lane for the timing model taken from the width its executor is made for
// (read2/write2: both addresses'; an atomic: its data type's).
template <uint32_t Bytes, Ext E>
void read(IsaTable& t, std::string_view name) { t.add(name, ds_read<Bytes, E>, InstShape::lanes(Bytes)); }
template <uint32_t Bytes, bool hi = false>
void write(IsaTable& t, std::string_view name) { t.add(name, ds_write<Bytes, hi>, InstShape::lanes(Bytes)); }
template <uint32_t Bytes, uint32_t Stride>
void read2(IsaTable& t, std::string_view name) { t.add(name, ds_read2<Bytes, Stride>, InstShape::lanes(2 * Bytes)); }
template <uint32_t Bytes, uint32_t Stride>
void write2(IsaTable& t, std::string_view name) { t.add(name, ds_write2<Bytes, Stride>, InstShape::lanes(2 * Bytes)); }
template <class T, auto Op, int ndata, bool rtn>
void atomic(IsaTable& t, std::string_view name) {
  t.add(name, ds_atomic<T, Op, ndata, rtn>, InstShape::lanes(sizeof(T)));
}

}  // namespace

void register_ds(IsaTable& t) {
  read<1, Ext::u8>(t, "ds_read_u8");
  read<1, Ext::i8>(t, "ds_read_i8");
  read<2, Ext::u16>(t, "ds_read_u16");
  read<2, Ext::i16>(t, "ds_read_i16");
  read<4, Ext::dwords>(t, "ds_read_b32");
  read<8, Ext::dwords>(t, "ds_read_b64");
  read<12, Ext::dwords>(t, "ds_read_b96");
  read<16, Ext::dwords>(t, "ds_read_b128");
  read<1, Ext::u8_d16>(t, "ds_read_u8_d16");
  read<1, Ext::i8_d16>(t, "ds_read_i8_d16");
  read<2, Ext::u16_d16>(t, "ds_read_u16_d16");
  read<1, Ext::u8_d16_hi>(t, "ds_read_u8_d16_hi");
  read<1, Ext::i8_d16_hi>(t, "ds_read_i8_d16_hi");
  read<2, Ext::u16_d16_hi>(t, "ds_read_u16_d16_hi");
  write<1>(t, "ds_write_b8");
  write<2>(t, "ds_write_b16");
  write<4>(t, "ds_write_b32");
  write<8>(t, "ds_write_b64");
  write<12>(t, "ds_write_b96");
  write<16>(t, "ds_write_b128");
  write<1, true>(t, "ds_write_b8_d16_hi");
  write<2, true>(t, "ds_write_b16_d16_hi");
  read2<4, 1>(t, "ds_read2_b32");
  read2<8, 1>(t, "ds_read2_b64");
  read2<4, 64>(t, "ds_read2st64_b32");
  read2<8, 64>(t, "ds_read2st64_b64");
  write2<4, 1>(t, "ds_write2_b32");
  write2<8, 1>(t, "ds_write2_b64");
  write2<4, 64>(t, "ds_write2st64_b32");
  write2<8, 64>(t, "ds_write2st64_b64");

  using u32 = uint32_t;
  using u64 = uint64_t;
  using i32 = int32_t;
  using i64 = int64_t;
  auto both = [&](const char* name, ExecFn plain, ExecFn rtn, InstShape lanes) {
    std::string n(name), base = n.substr(0, n.rfind('_')), type = n.substr(n.rfind('_'));
    t.add(intern(n), plain, lanes);
    t.add(intern(base + "_rtn" + type), rtn, lanes);
  };
#define HK_DS(name, T, n, expr) \
  both(name, ds_atomic<T, [](T o, T d, T e) -> T { (void)e; return (expr); }, n, false>, \
       ds_atomic<T, [](T o, T d, T e) -> T { (void)e; return (expr); }, n, true>, InstShape::lanes(sizeof(T)));
  HK_DS("ds_add_u32", u32, 1, o + d)
  HK_DS("ds_sub_u32", u32, 1, o - d)
  HK_DS("ds_rsub_u32", u32, 1, d - o)
  HK_DS("ds_inc_u32", u32, 1, o >= d ? 0 : o + 1)
  HK_DS("ds_dec_u32", u32, 1, (o == 0 || o > d) ? d : o - 1)
  HK_DS("ds_min_i32", u32, 1, u32(std::min(i32(o), i32(d))))
  HK_DS("ds_max_i32", u32, 1, u32(std::max(i32(o), i32(d))))
  HK_DS("ds_min_u32", u32, 1, std::min(o, d))
  HK_DS("ds_max_u32", u32, 1, std::max(o, d))
  HK_DS("ds_and_b32", u32, 1, o & d)
  HK_DS("ds_or_b32", u32, 1, o | d)
  HK_DS("ds_xor_b32", u32, 1, o ^ d)
  HK_DS("ds_mskor_b32", u32, 2, (o & ~d) | e)
  HK_DS("ds_cmpst_b32", u32, 2, o == d ? e : o)
  HK_DS("ds_add_f32", u32, 1, std::bit_cast<u32>(std::bit_cast<float>(o) + std::bit_cast<float>(d)))
  HK_DS("ds_min_f32", u32, 1, std::bit_cast<u32>(std::fmin(std::bit_cast<float>(o), std::bit_cast<float>(d))))
  HK_DS("ds_max_f32", u32, 1, std::bit_cast<u32>(std::fmax(std::bit_cast<float>(o), std::bit_cast<float>(d))))
  HK_DS("ds_add_u64", u64, 1, o + d)
  HK_DS("ds_sub_u64", u64, 1, o - d)
  HK_DS("ds_min_i64", u64, 1, u64(std::min(i64(o), i64(d))))
  HK_DS("ds_max_i64", u64, 1, u64(std::max(i64(o), i64(d))))
  HK_DS("ds_min_u64", u64, 1, std::min(o, d))
  HK_DS("ds_max_u64", u64, 1, std::max(o, d))
  HK_DS("ds_and_b64", u64, 1, o & d)
  HK_DS("ds_or_b64", u64, 1, o | d)
  HK_DS("ds_xor_b64", u64, 1, o ^ d)
  HK_DS("ds_cmpst_b64", u64, 2, o == d ? e : o)
  HK_DS("ds_add_f64", u64, 1, std::bit_cast<u64>(std::bit_cast<double>(o) + std::bit_cast<double>(d)))
  // The packed 16-bit adds and the f64 min/max follow the global atomics' rules (mem_ops.h): each half rounded once,
  // denormals kept; min/max_f64 with the ISA's NaN and signed-zero order. ds_pk_add_bf16 is gfx950's.
  HK_DS("ds_pk_add_f16", u32, 1, pk_add16<false>(o, d))
  HK_DS("ds_pk_add_bf16", u32, 1, pk_add16<true>(o, d))
  HK_DS("ds_min_f64", u64, 1, minmax_f64<false>(o, d))
  HK_DS("ds_max_f64", u64, 1, minmax_f64<true>(o, d))
#undef HK_DS
  atomic<u32, [](u32, u32 d, u32) { return d; }, 1, true>(t, "ds_wrxchg_rtn_b32");
  atomic<u64, [](u64, u64 d, u64) { return d; }, 1, true>(t, "ds_wrxchg_rtn_b64");
  t.add("ds_bpermute_b32", ds_permute<true>, InstShape::lanes(4));  // a dword per lane
  t.add("ds_permute_b32", ds_permute<false>, InstShape::lanes(4));
  t.add("ds_swizzle_b32", ds_swizzle, InstShape::lanes(4));
  t.add("ds_nop", [](Wave&, const Inst&) {});
}

}  // namespace vgpu
