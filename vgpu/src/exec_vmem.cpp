// Vector memory through the GLOBAL, FLAT and SCRATCH instructions: per-lane loads, stores and atomics.
#include <string>

#include "formats.h"
#include "isa.h"
#include "memory.h"

namespace vgpu {
namespace {

// How a loaded value lands in its VGPR: whole dwords, extended to 32 bits, or into one 16-bit half.
enum class Ext : uint8_t { dwords, u8, i8, u16, i16, u8_d16, i8_d16, u16_d16, u8_d16_hi, i8_d16_hi, u16_d16_hi };

struct Layout {
  int vdst = -1, vaddr = 0, vdata = -1, saddr = -1;
};

// Per-lane addresses of a memory instruction.
void lane_addresses(const Wave& w, const Inst& I, Space space, const Layout& L, uint64_t* addr) {
  const Operand& va = I.op[L.vaddr];
  const Operand* sa = L.saddr >= 0 && L.saddr < I.nops ? &I.op[L.saddr] : nullptr;
  const bool has_s = sa && sa->kind != OpKind::off;
  const int64_t off = I.offset;
  if (space == Space::scratch) {
    const uint64_t base = has_s ? read_s32(w, *sa) : 0;
    for (int l = 0; l < kLanes; ++l) addr[l] = base + (va.kind == OpKind::vgpr ? w.v[va.reg][l] : 0) + off;
  } else if (has_s) {
    const uint64_t base = read_s64(w, *sa);
    for (int l = 0; l < kLanes; ++l) addr[l] = base + w.v[va.reg][l] + off;
  } else {
    for (int l = 0; l < kLanes; ++l) addr[l] = (uint64_t(w.v[va.reg][l]) | uint64_t(w.v[va.reg + 1][l]) << 32) + off;
  }
}

template <Space S, uint32_t Bytes, Ext E>
void vload(Wave& w, const Inst& I) {
  const Layout L{0, 1, -1, 2};
  alignas(64) uint64_t addr[kLanes];
  lane_addresses(w, I, S, L, addr);
  const uint64_t exec = w.exec();
  const uint16_t d = I.op[0].reg;
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    const uint8_t* p = lane_ptr(w, I, S, addr[l], Bytes, l);
    if (!p) return;
    if constexpr (E == Ext::dwords) {
      for (uint32_t i = 0; i < Bytes / 4; ++i) std::memcpy(&w.v[d + i][l], p + 4 * i, 4);
    } else {
      uint32_t x = 0;
      std::memcpy(&x, p, Bytes);
      uint32_t& r = w.v[d][l];
      switch (E) {
        case Ext::u8: case Ext::u16: r = x; break;
        case Ext::i8: r = uint32_t(int32_t(int8_t(x))); break;
        case Ext::i16: r = uint32_t(int32_t(int16_t(x))); break;
        case Ext::u8_d16: case Ext::u16_d16: r = (r & 0xffff0000u) | x; break;
        case Ext::i8_d16: r = (r & 0xffff0000u) | uint16_t(int16_t(int8_t(x))); break;
        case Ext::u8_d16_hi: case Ext::u16_d16_hi: r = (r & 0xffffu) | x << 16; break;
        case Ext::i8_d16_hi: r = (r & 0xffffu) | uint32_t(uint16_t(int16_t(int8_t(x)))) << 16; break;
        default: break;
      }
    }
  }
}

// Stores `Bytes` from the data VGPRs; `hi` stores the high 16 bits of the first register (the *_d16_hi forms).
template <Space S, uint32_t Bytes, bool hi = false>
void vstore(Wave& w, const Inst& I) {
  const Layout L{-1, 0, 1, 2};
  alignas(64) uint64_t addr[kLanes];
  lane_addresses(w, I, S, L, addr);
  const uint64_t exec = w.exec();
  const uint16_t d = I.op[1].reg;
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    uint8_t* p = lane_ptr(w, I, S, addr[l], Bytes, l);
    if (!p) return;
    if constexpr (Bytes >= 4) {
      for (uint32_t i = 0; i < Bytes / 4; ++i) std::memcpy(p + 4 * i, &w.v[d + i][l], 4);
    } else {
      uint32_t x = hi ? w.v[d][l] >> 16 : w.v[d][l];
      std::memcpy(p, &x, Bytes);
    }
  }
}

// Atomics: Op(old, data, compare) -> new. cmpswap takes {data, compare} in consecutive registers.
template <Space S, class T, auto Op, bool cmpswap = false>
void vatomic(Wave& w, const Inst& I) {
  const bool returns = I.flags & (mod::glc | mod::sc0);
  const Layout L = returns ? Layout{0, 1, 2, 3} : Layout{-1, 0, 1, 2};
  alignas(64) uint64_t addr[kLanes];
  lane_addresses(w, I, S, L, addr);
  const uint64_t exec = w.exec();
  constexpr uint32_t words = sizeof(T) / 4;
  const uint16_t dr = I.op[L.vdata].reg;
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    uint8_t* p = lane_ptr(w, I, S, addr[l], sizeof(T), l);
    if (!p) return;
    auto word = [&](uint32_t r) {
      uint64_t x = w.v[r][l];
      if constexpr (words == 2) x |= uint64_t(w.v[r + 1][l]) << 32;
      return T(x);
    };
    const T data = word(dr), cmp = cmpswap ? word(dr + words) : T(0);
    T old = atomic_rmw(reinterpret_cast<T*>(p), [&](T o) { return Op(o, data, cmp); });
    if (returns) {
      w.v[I.op[0].reg][l] = uint32_t(old);
      if constexpr (words == 2) w.v[I.op[0].reg + 1][l] = uint32_t(uint64_t(old) >> 32);
    }
  }
}

// Packed 16-bit float add of two halves, as the pk_add atomics do.
template <bool bf16>
uint32_t pk_add16(uint32_t a, uint32_t b) {
  auto half = [](uint32_t x, int i) -> float {
    uint16_t h = uint16_t(x >> (16 * i));
    return bf16 ? bf16_to_f32(h) : float(std::bit_cast<f16>(h));
  };
  auto pack = [](float f) -> uint32_t { return bf16 ? f32_to_bf16(f) : std::bit_cast<uint16_t>(f16(f)); };
  return pack(half(a, 0) + half(b, 0)) | pack(half(a, 1) + half(b, 1)) << 16;
}

template <Space S>
void register_space(IsaTable& t, const std::string& prefix) {
  // Names outlive the table: keep them in a static pool.
  static std::vector<std::unique_ptr<std::string>> pool;
  auto add = [&](const char* suffix, ExecFn fn, ImmType imm = ImmType::b32) {
    pool.push_back(std::make_unique<std::string>(prefix + suffix));
    t.add(*pool.back(), fn, imm);
  };
  add("load_ubyte", vload<S, 1, Ext::u8>);
  add("load_sbyte", vload<S, 1, Ext::i8>);
  add("load_ushort", vload<S, 2, Ext::u16>);
  add("load_sshort", vload<S, 2, Ext::i16>);
  add("load_dword", vload<S, 4, Ext::dwords>);
  add("load_dwordx2", vload<S, 8, Ext::dwords>);
  add("load_dwordx3", vload<S, 12, Ext::dwords>);
  add("load_dwordx4", vload<S, 16, Ext::dwords>);
  add("load_ubyte_d16", vload<S, 1, Ext::u8_d16>);
  add("load_sbyte_d16", vload<S, 1, Ext::i8_d16>);
  add("load_short_d16", vload<S, 2, Ext::u16_d16>);
  add("load_ubyte_d16_hi", vload<S, 1, Ext::u8_d16_hi>);
  add("load_sbyte_d16_hi", vload<S, 1, Ext::i8_d16_hi>);
  add("load_short_d16_hi", vload<S, 2, Ext::u16_d16_hi>);
  add("store_byte", vstore<S, 1>);
  add("store_byte_d16_hi", vstore<S, 1, true>);
  add("store_short", vstore<S, 2>);
  add("store_short_d16_hi", vstore<S, 2, true>);
  add("store_dword", vstore<S, 4>);
  add("store_dwordx2", vstore<S, 8>);
  add("store_dwordx3", vstore<S, 12>);
  add("store_dwordx4", vstore<S, 16>);
  if constexpr (S == Space::scratch) return;

  using u32 = uint32_t;
  using u64 = uint64_t;
  using i32 = int32_t;
  using i64 = int64_t;
#define HK_ATOMIC(name, T, expr) add("atomic_" name, vatomic<S, T, [](T o, T d, T) -> T { return (expr); }>);
  HK_ATOMIC("swap", u32, d)
  HK_ATOMIC("add", u32, o + d)
  HK_ATOMIC("sub", u32, o - d)
  HK_ATOMIC("smin", u32, u32(std::min(i32(o), i32(d))))
  HK_ATOMIC("umin", u32, std::min(o, d))
  HK_ATOMIC("smax", u32, u32(std::max(i32(o), i32(d))))
  HK_ATOMIC("umax", u32, std::max(o, d))
  HK_ATOMIC("and", u32, o & d)
  HK_ATOMIC("or", u32, o | d)
  HK_ATOMIC("xor", u32, o ^ d)
  HK_ATOMIC("inc", u32, o >= d ? 0 : o + 1)
  HK_ATOMIC("dec", u32, (o == 0 || o > d) ? d : o - 1)
  HK_ATOMIC("swap_x2", u64, d)
  HK_ATOMIC("add_x2", u64, o + d)
  HK_ATOMIC("sub_x2", u64, o - d)
  HK_ATOMIC("smin_x2", u64, u64(std::min(i64(o), i64(d))))
  HK_ATOMIC("umin_x2", u64, std::min(o, d))
  HK_ATOMIC("smax_x2", u64, u64(std::max(i64(o), i64(d))))
  HK_ATOMIC("umax_x2", u64, std::max(o, d))
  HK_ATOMIC("and_x2", u64, o & d)
  HK_ATOMIC("or_x2", u64, o | d)
  HK_ATOMIC("xor_x2", u64, o ^ d)
  HK_ATOMIC("inc_x2", u64, o >= d ? 0 : o + 1)
  HK_ATOMIC("dec_x2", u64, (o == 0 || o > d) ? d : o - 1)
  HK_ATOMIC("add_f32", u32, std::bit_cast<u32>(std::bit_cast<float>(o) + std::bit_cast<float>(d)))
  HK_ATOMIC("add_f64", u64, std::bit_cast<u64>(std::bit_cast<double>(o) + std::bit_cast<double>(d)))
  HK_ATOMIC("min_f64", u64, std::bit_cast<u64>(std::fmin(std::bit_cast<double>(o), std::bit_cast<double>(d))))
  HK_ATOMIC("max_f64", u64, std::bit_cast<u64>(std::fmax(std::bit_cast<double>(o), std::bit_cast<double>(d))))
  HK_ATOMIC("pk_add_f16", u32, pk_add16<false>(o, d))
  HK_ATOMIC("pk_add_bf16", u32, pk_add16<true>(o, d))
#undef HK_ATOMIC
  add("atomic_cmpswap", vatomic<S, u32, [](u32 o, u32 d, u32 c) { return o == c ? d : o; }, true>);
  add("atomic_cmpswap_x2", vatomic<S, u64, [](u64 o, u64 d, u64 c) { return o == c ? d : o; }, true>);
}

}  // namespace

void register_vmem(IsaTable& t) {
  register_space<Space::global>(t, "global_");
  register_space<Space::flat>(t, "flat_");
  register_space<Space::scratch>(t, "scratch_");
}

}  // namespace vgpu
