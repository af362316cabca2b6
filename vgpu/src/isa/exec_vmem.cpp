// Vector memory through the GLOBAL, FLAT and SCRATCH instructions: per-lane loads, stores and atomics.
#include <algorithm>
#include <cstring>
#include <string>

#include "isa/isa.h"
#include "isa/mem_ops.h"
#include "memory/memory.h"

namespace vgpu {
namespace {

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
    const uint8_t* p = lane_ptr(w, I, S, addr[l], Bytes, l, LdsUse::read);
    if (!p) return;
    if constexpr (E == Ext::dwords) {
      for (uint32_t i = 0; i < Bytes / 4; ++i) std::memcpy(&w.v[d + i][l], p + 4 * i, 4);
    } else {
      uint32_t x = 0;
      std::memcpy(&x, p, Bytes);
      w.v[d][l] = extend(x, E);
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
  if constexpr (S == Space::global && Bytes >= 4) {
    if (exec == ~0ull) {
      // A full wave whose bytes all lie in the allocation the wave last touched (or the one before): check_global
      // would pass every lane, so it is asked once for the lanes' bounds.
      uint64_t lowest = addr[0], highest = addr[0];
      for (int l = 0; l < kLanes; ++l) lowest = std::min(lowest, addr[l]), highest = std::max(highest, addr[l]);
      const uint64_t end = highest + Bytes;
      if (end > highest && ((lowest >= w.mem_lo && end <= w.mem_hi) || w.use_prev_allocation(lowest, end))) {
        for (int l = 0; l < kLanes; ++l)  // lane by lane, as below: where lanes overlap, the last one wins
          for (uint32_t i = 0; i < Bytes / 4; ++i) std::memcpy(reinterpret_cast<uint8_t*>(addr[l]) + 4 * i, &w.v[d + i][l], 4);
        return;
      }
    }
  }
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    uint8_t* p = lane_ptr(w, I, S, addr[l], Bytes, l, LdsUse::write);
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
    uint8_t* p = lane_ptr(w, I, S, addr[l], sizeof(T), l, LdsUse::atomic);
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

// Registrations, each a vector memory access counted by vmcnt, with its bytes per lane for the timing model taken
// from the width its executor is made for (an atomic: its data type's).
template <Space S, uint32_t Bytes, Ext E>
void load(IsaTable& t, const std::string& name) {
  t.add(intern(name), vload<S, Bytes, E>, op::vector_memory, InstShape::lanes(Bytes));
}
template <Space S, uint32_t Bytes, bool hi = false>
void store(IsaTable& t, const std::string& name) {
  t.add(intern(name), vstore<S, Bytes, hi>, op::vector_memory, InstShape::lanes(Bytes));
}

template <Space S>
void register_space(IsaTable& t, const std::string& prefix) {
  load<S, 1, Ext::u8>(t, prefix + "load_ubyte");
  load<S, 1, Ext::i8>(t, prefix + "load_sbyte");
  load<S, 2, Ext::u16>(t, prefix + "load_ushort");
  load<S, 2, Ext::i16>(t, prefix + "load_sshort");
  load<S, 4, Ext::dwords>(t, prefix + "load_dword");
  load<S, 8, Ext::dwords>(t, prefix + "load_dwordx2");
  load<S, 12, Ext::dwords>(t, prefix + "load_dwordx3");
  load<S, 16, Ext::dwords>(t, prefix + "load_dwordx4");
  load<S, 1, Ext::u8_d16>(t, prefix + "load_ubyte_d16");
  load<S, 1, Ext::i8_d16>(t, prefix + "load_sbyte_d16");
  load<S, 2, Ext::u16_d16>(t, prefix + "load_short_d16");
  load<S, 1, Ext::u8_d16_hi>(t, prefix + "load_ubyte_d16_hi");
  load<S, 1, Ext::i8_d16_hi>(t, prefix + "load_sbyte_d16_hi");
  load<S, 2, Ext::u16_d16_hi>(t, prefix + "load_short_d16_hi");
  store<S, 1>(t, prefix + "store_byte");
  store<S, 1, true>(t, prefix + "store_byte_d16_hi");
  store<S, 2>(t, prefix + "store_short");
  store<S, 2, true>(t, prefix + "store_short_d16_hi");
  store<S, 4>(t, prefix + "store_dword");
  store<S, 8>(t, prefix + "store_dwordx2");
  store<S, 12>(t, prefix + "store_dwordx3");
  store<S, 16>(t, prefix + "store_dwordx4");
  if constexpr (S == Space::scratch) return;

  for_each_atomic([&]<class T, auto Op, bool cmpswap>(const char* name) {
    t.add(intern(prefix + "atomic_" + name), vatomic<S, T, Op, cmpswap>, op::vector_memory | op::atomic,
          InstShape::lanes(sizeof(T)));
  });
}

}  // namespace

void register_vmem(IsaTable& t) {
  register_space<Space::global>(t, "global_");
  register_space<Space::flat>(t, "flat_");
  register_space<Space::scratch>(t, "scratch_");
}

}  // namespace vgpu
