// Buffer memory (MUBUF) and LDS DMA: buffer loads, stores and atomics through a 128-bit buffer resource (V#), with
// the hardware's range checking, and the loads that write straight to LDS (buffer_load_* ... lds, global_load_lds_*).
// The rules, their sources and the assumptions are in docs/vgpu-memory.md.
#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "isa/formats.h"
#include "isa/isa.h"
#include "isa/mem_ops.h"
#include "memory/memory.h"

namespace vgpu {
namespace {

// Buffer resource (V#) fields that shape the address; the rest of dword 3 (dst_sel, formats) only matters to the
// format instructions (buffer_load_format_*), which read it themselves.
struct Rsrc {
  uint64_t base = 0;         // bits 47:0
  uint32_t stride = 0;       // bits 61:48
  uint32_t num_records = 0;  // bits 95:64: bytes for raw access, records for indexed access with a stride
  bool private_segment = false;  // the private segment buffer vgpu handed the kernel (wave.h kPrivateBufferRsrc)
};

// The operands of a MUBUF instruction, in assembler order: `vdata, vaddr, srsrc, soffset`, or without vdata for the
// forms that load to LDS (`vaddr, srsrc, soffset ... lds`).
struct Layout {
  int vaddr, srsrc, soffset;
};
inline Layout layout(const Inst& I) { return (I.flags & mod::lds) ? Layout{0, 1, 2} : Layout{1, 2, 3}; }

bool read_rsrc(Wave& w, const Inst& I, const Operand& o, Rsrc& r) {
  if (o.kind != OpKind::sgpr || o.width != 4 || o.reg + 4 > sreg::count) {
    w.fault(I, FaultKind::unknown_instruction, -1, "the buffer resource is not four SGPRs");
    return false;
  }
  const uint32_t* s = &w.s[o.reg];
  r.base = uint64_t(s[0]) | uint64_t(s[1] & 0xffff) << 32;
  // The private segment buffer (its base moved by the kernel's wave offset, which vgpu gives as 0, or by a frame
  // offset): swizzled, thread-id addressed, resolved to the lanes' private memory by buffer_lanes.
  if (r.base - kPrivateBufferBase < kPrivateBufferSpan && (s[3] >> 23 & 1) && (s[1] >> 31)) {
    r.private_segment = true;
    return true;
  }
  // SWIZZLE_ENABLE (bit 63): kernel libraries set it, with bit 62 and the tile's row stride, on V#s they use for raw
  // (offen-only) access, and read linearly on MI300X and MI355X: raw access is linear here too. Indexed access would
  // follow the guides' swizzled formula, which vgpu does not model (docs/vgpu-memory.md).
  if (s[1] >> 31 && (I.flags & mod::idxen)) {
    w.fault(I, FaultKind::unknown_instruction, -1,
            "the buffer resource has SWIZZLE_ENABLE (bit 63) set on an idxen access: vgpu does not model swizzled "
            "indexed buffer addressing (raw offen access with it is linear)");
    return false;
  }
  if (s[3] >> 23 & 1) {
    w.fault(I, FaultKind::unknown_instruction, -1,
            "the buffer resource has ADD_TID_ENABLE (bit 119) set: vgpu does not model thread-id buffer addressing");
    return false;
  }
  // Bit 62 (cache swizzle) only spreads accesses over the L1 cache banks: no effect on addresses or data.
  r.stride = (s[1] >> 16) & 0x3fff;
  r.num_records = s[2];
  return true;
}

// Per-lane addresses of a MUBUF access of N elements of Elem bytes each, and how many leading elements pass the
// range check (ok[l] in 0..N). PerElem: dwordx2/x3/x4 loads and stores are checked per dword; everything else (one
// element, atomics) all or nothing.
//   index  = idxen ? VGPR[vaddr] : 0
//   offset = (offen ? VGPR[vaddr + idxen] : 0) + inst_offset        (32-bit, wraps)
//   addr   = base + index * stride + offset + soffset                (64-bit)
//   in range: idxen && stride != 0 ? index < num_records
//                                  : offset + soffset + (k + 1) * Elem <= num_records for element k
//
// The private segment buffer instead (wave.h): with ADD_TID_ENABLE, SWIZZLE_ENABLE, element size 4 and index stride 64,
// lane t's byte at offset o lies at wave byte P = base - kPrivateBufferBase + soffset + (o / 4) * 256 + 4 t + o % 4,
// i.e. dword P / 256 of lane (P mod 256) / 4: addr[l] is then the host address of that byte of that lane's private
// memory (a frame offset in soffset is a multiple of 256, so it is the lane's own). No range check (num_records is
// all ones); a byte past the private segment faults. idxen is not used with it.
template <uint32_t Elem, uint32_t N>
bool private_lanes(Wave& w, const Inst& I, const Rsrc& r, const Layout& L, uint64_t* addr, uint32_t* ok) {
  const bool offen = I.flags & mod::offen;
  const Operand& va = I.op[L.vaddr];
  if ((I.flags & mod::idxen) || (offen && va.kind != OpKind::vgpr)) {
    w.fault(I, FaultKind::unknown_instruction, -1, "private segment buffer access with idxen or without its offset VGPR");
    return false;
  }
  const uint64_t wave_base = r.base - kPrivateBufferBase + read_s32(w, I.op[L.soffset]);
  const uint64_t exec = w.exec();
  for (int l = 0; l < kLanes; ++l) {
    ok[l] = N;
    addr[l] = 0;
    if (!(exec >> l & 1)) continue;
    const uint32_t o = (offen ? w.v[va.reg][l] : 0) + uint32_t(I.offset);
    const uint64_t P = wave_base + uint64_t(o / 4) * 256 + 4 * uint64_t(l) + o % 4;
    const int lane = int(P % 256 / 4);
    uint8_t* p = private_ptr(w, I, P / 256 * 4 + P % 4, Elem * N, lane);
    if (!p) return false;
    addr[l] = reinterpret_cast<uint64_t>(p);
  }
  return true;
}

// The lowest and highest byte over the enabled lanes' in-range elements, where buffer_lanes found them on its way
// (a full wave with every lane in range): lanes_in_cached_allocation then needs no pass over the lanes.
struct LaneBounds {
  uint64_t lo = 0, hi = 0;
  bool known = false;
};

template <uint32_t Elem, uint32_t N, bool PerElem>
bool buffer_lanes(Wave& w, const Inst& I, const Layout& L, uint64_t* addr, uint32_t* ok, bool* is_private = nullptr,
                  LaneBounds* bounds = nullptr) {
  Rsrc r;
  if (!read_rsrc(w, I, I.op[L.srsrc], r)) return false;
  if (is_private) *is_private = r.private_segment;
  if (r.private_segment) return private_lanes<Elem, N>(w, I, r, L, addr, ok);
  const bool idxen = I.flags & mod::idxen, offen = I.flags & mod::offen;
  const Operand& va = I.op[L.vaddr];
  if ((idxen || offen) && (va.kind != OpKind::vgpr || va.width < (idxen && offen ? 2 : 1))) {
    w.fault(I, FaultKind::unknown_instruction, -1, "idxen/offen without the VGPRs that supply them");
    return false;
  }
  const uint32_t soffset = read_s32(w, I.op[L.soffset]);
  const uint32_t* vi = idxen ? w.v[va.reg] : nullptr;
  const uint32_t* vo = offen ? w.v[va.reg + (idxen ? 1 : 0)] : nullptr;
  const bool indexed = idxen && r.stride != 0;
  if (bounds && !idxen && vo && w.exec() == ~0ull) {
    // A full wave of offsets (a tile load): when the largest offset's N elements are in range, so is every lane's,
    // and the loops below reduce to vector ones with the same addresses and counts.
    uint32_t lowest = ~0u, highest = 0;
    for (int l = 0; l < kLanes; ++l) {
      const uint32_t part = vo[l] + uint32_t(I.offset);
      lowest = std::min(lowest, part), highest = std::max(highest, part);
    }
    if (uint64_t(highest) + soffset + uint64_t(N) * Elem <= r.num_records) {
      const uint64_t at = r.base + soffset;
      for (int l = 0; l < kLanes; ++l) addr[l] = at + (vo[l] + uint32_t(I.offset)), ok[l] = N;
      *bounds = {at + lowest, at + highest + uint64_t(N) * Elem, true};
      return true;
    }
  }
  for (int l = 0; l < kLanes; ++l) {
    const uint32_t index = vi ? vi[l] : 0;
    const uint32_t part = (vo ? vo[l] : 0) + uint32_t(I.offset);
    const uint64_t off = uint64_t(part) + soffset;
    addr[l] = r.base + uint64_t(index) * r.stride + off;
    uint32_t n;
    if (indexed) n = index < r.num_records ? N : 0;
    else n = off >= r.num_records ? 0 : uint32_t(std::min<uint64_t>(N, (r.num_records - off) / Elem));
    ok[l] = PerElem || n == N ? n : 0;
  }
  return true;
}

// Whether every enabled lane's in-range elements lie in one of the two allocations the wave last touched, checked
// once for the instruction (the lowest and highest byte over the lanes): then the per-lane checks can be skipped.
// Otherwise each lane is checked as before, which finds the allocation or raises the fault naming the lane.
template <uint32_t Elem>
bool lanes_in_cached_allocation(Wave& w, uint64_t exec, const uint64_t* addr, const uint32_t* ok,
                                const LaneBounds& bounds = {}) {
  if (bounds.known)
    return (bounds.lo >= w.mem_lo && bounds.hi <= w.mem_hi) || w.use_prev_allocation(bounds.lo, bounds.hi);
  uint64_t lo = ~0ull, hi = 0;
  bool any = false, wraps = false;
  for (int l = 0; l < kLanes; ++l) {
    const bool on = (exec >> l & 1) && ok[l];
    const uint64_t end = addr[l] + ok[l] * Elem;
    lo = on ? std::min(lo, addr[l]) : lo;
    hi = on ? std::max(hi, end) : hi;
    any |= on;
    wraps |= on && end < addr[l];
  }
  return !any || (!wraps && ((lo >= w.mem_lo && hi <= w.mem_hi) || w.use_prev_allocation(lo, hi)));
}

// Asks the host's caches for every enabled in-range lane's first byte before the copies: the lanes of a tile load
// span a few cache lines that are often not cached, and a tight loop of prefetches has them fetched at once rather
// than one miss after another in the copy loop.
// One prefetch per cache line: neighbouring lanes mostly share one, and prefetches of a line already asked for
// only queue up behind the misses.
inline void prefetch_lanes(uint64_t exec, const uint64_t* addr, const uint32_t* ok, const LaneBounds& bounds) {
  uint64_t last_line = ~0ull;
  if (bounds.known) {  // every lane enabled and in range
    for (int l = 0; l < kLanes; ++l)
      if (addr[l] >> 6 != last_line) __builtin_prefetch(reinterpret_cast<const void*>(addr[l])), last_line = addr[l] >> 6;
    return;
  }
  for (int l = 0; l < kLanes; ++l) {
    const uint64_t line = addr[l] >> 6;
    if ((exec >> l & 1) && ok[l] && line != last_line) {
      __builtin_prefetch(reinterpret_cast<const void*>(addr[l]));
      last_line = line;
    }
  }
}

// buffer_load_* with the lds modifier: each lane's data goes to LDS at
//   M0[lds_dma_m0_bits-1:0] (17:0 on gfx950, 15:0 on gfx942) + inst_offset + lane * (Bytes <= 4 ? 4 : 16)
// One- and two-byte loads write their lane's whole dword, zero- or sign-extended; dwordx3 writes 3 dwords of its 16-byte
// slot. Out-of-range elements write zeros. An LDS address past the workgroup's allocation faults.
template <uint32_t Bytes, Ext E>
void buffer_load_lds(Wave& w, const Inst& I) {
  const ArchInfo& arch = *w.ctx->arch;
  // Sub-dword and dword loads on every arch; dwordx3 and dwordx4 where the arch's LDS DMA is that wide. Never dwordx2.
  constexpr bool legal_narrow = Bytes <= 4 && (E == Ext::dwords || E == Ext::u8 || E == Ext::i8 || E == Ext::u16 ||
                                               E == Ext::i16);
  constexpr bool legal_wide = Bytes == 12 || Bytes == 16;
  const bool wide_dma = arch.lds_dma_max_bytes >= 16;
  if (!(legal_narrow || (legal_wide && wide_dma))) {
    w.fault(I, FaultKind::unknown_instruction, -1,
            std::string("no LDS DMA form of ") + I.name + " on " + std::string(arch.name) +
                " (ubyte, sbyte, ushort, sshort, dword" + (wide_dma ? ", dwordx3, dwordx4)" : ")"));
    return;
  }
  constexpr uint32_t Elem = Bytes >= 4 ? 4 : Bytes, N = Bytes >= 4 ? Bytes / 4 : 1, Slot = Bytes <= 4 ? 4 : 16;
  constexpr uint32_t Written = Bytes <= 4 ? 4 : Bytes;
  const Layout L = layout(I);
  alignas(64) uint64_t addr[kLanes];
  alignas(64) uint32_t ok[kLanes];
  LaneBounds bounds;
  if (!buffer_lanes<Elem, N, true>(w, I, L, addr, ok, nullptr, &bounds)) return;
  const uint64_t lds_base = uint64_t(w.s[sreg::m0] & arch.lds_dma_m0_mask()) + uint32_t(I.offset);
  const uint64_t exec = w.exec();
  // Every lane's LDS slot goes through lds_ptr, which also records the bytes in flight for the hazard check.
  // The common case short: when the global side fits the cached allocation and every slot lies inside LDS, the
  // first enabled lane goes through lds_ptr (which opens the load's span) and, if no load in flight meets the
  // instruction's slots, the others only extend the span and write their marks (what lds_ptr would do for them).
  // Lane l's element (its in-range dwords, or its byte/short extended) written to its LDS slot.
  const auto copy_lane = [&](int l, uint8_t* dst) {
    const uint8_t* src = reinterpret_cast<const uint8_t*>(addr[l]);
    uint32_t v[4] = {};
    if constexpr (E == Ext::dwords) {
      for (uint32_t i = 0; i < N && i < ok[l]; ++i) std::memcpy(&v[i], src + 4 * i, 4);
    } else {
      if (ok[l]) std::memcpy(&v[0], src, Bytes);
      v[0] = extend(v[0], E);
    }
    std::memcpy(dst, v, Written);
  };
  const bool global_fits = lanes_in_cached_allocation<Elem>(w, exec, addr, ok, bounds);
  if (global_fits) prefetch_lanes(exec, addr, ok, bounds);
  if (exec && w.wg->watching_dma && !w.wg->watch->dma.empty()) {
    // The per-dword marks this load will write (16 bytes per LDS dword, a quarter of a MiB for 64 KiB of LDS: mostly
    // out of the host's caches), asked for with the global lines so that their misses overlap too.
    const uint64_t lo = (lds_base + uint64_t(std::countr_zero(exec)) * Slot) / 4;
    const uint64_t hi = std::min<uint64_t>((lds_base + uint64_t(63 - std::countl_zero(exec)) * Slot + Written - 1) / 4,
                                           w.wg->watch->dma.size() - 1);
    const LdsWatch::DmaMark* marks = w.wg->watch->dma.data();
    for (uint64_t d = lo; d <= hi; d += 64 / sizeof(LdsWatch::DmaMark)) __builtin_prefetch(marks + d, 1);
  }
  int first_lane = -1;
  uint8_t* first_dst = nullptr;
  bool clear = false;
  if (global_fits && exec) {
    const int last_lane = 63 - std::countl_zero(exec);
    first_lane = std::countr_zero(exec);
    const uint64_t lo = lds_base + uint64_t(first_lane) * Slot, hi = lds_base + uint64_t(last_lane) * Slot + Written;
    if (hi <= w.wg->lds_bytes) {
      first_dst = lds_ptr(w, I, lo, Written, first_lane, LdsUse::dma);
      if (!first_dst) return;
      clear = dma_lanes_clear(w, lo, hi);
    }
  }
  if (clear) {
    // What mark_dma_lane does for each lane, with what is the same for all of them made once: the span grows to the
    // slots' bounds, and every lane after the first writes the same mark over its dwords.
    LdsWatch& x = *w.wg->watch;
    const uint32_t lo_dword = uint32_t((lds_base + uint64_t(first_lane) * Slot) / 4);
    const uint32_t hi_dword = uint32_t((lds_base + uint64_t(63 - std::countl_zero(exec)) * Slot + Written - 1) / 4);
    x.open.lo = std::min(x.open.lo, lo_dword), x.open.hi = std::max(x.open.hi, hi_dword);
    const LdsWatch::DmaMark mark{x.serial, w.vm_issued, uint32_t(&I - w.ctx->prog->insts.data()), uint32_t(w.id)};
    LdsWatch::DmaMark* marks = x.dma.data();
    uint8_t* lds = w.wg->lds;
    if (Written == Slot && bounds.known) {
      // A full wave, every lane in range, slots back to back: the marks are one run of dwords (the first lane's
      // were written by lds_ptr with the same mark), and each lane copies its N dwords or extended element.
      std::fill(marks + lo_dword, marks + hi_dword + 1, mark);
      uint8_t* dst = lds + uint32_t(lds_base);
      if constexpr (E == Ext::dwords) {
        for (int l = 0; l < kLanes; ++l) std::memcpy(dst + l * Slot, reinterpret_cast<const uint8_t*>(addr[l]), Bytes);
      } else {
        for (int l = 0; l < kLanes; ++l) copy_lane(l, dst + l * Slot);
      }
      return;
    }
    for (uint64_t e = exec; e; e &= e - 1) {
      const int l = std::countr_zero(e);
      const uint32_t slot = uint32_t(lds_base + uint64_t(l) * Slot);
      if (l != first_lane)
        for (uint32_t d = slot / 4; d <= (slot + Written - 1) / 4; ++d) marks[d] = mark;
      copy_lane(l, lds + slot);  // lands at issue; the marks say in flight
    }
    return;
  }
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    uint8_t* dst;
    if (first_dst && l == first_lane) {
      dst = first_dst;
    } else if (clear) {
      dst = w.wg->lds + lds_base + uint64_t(l) * Slot;
      mark_dma_lane(w, I, uint32_t(lds_base + uint64_t(l) * Slot), Written);
    } else {
      dst = lds_ptr(w, I, lds_base + uint64_t(l) * Slot, Written, l, LdsUse::dma);
    }
    if (!dst) return;
    if (!global_fits && ok[l] && !check_global(w, I, addr[l], ok[l] * Elem, l)) return;
    copy_lane(l, dst);  // lands at issue; lds_ptr marked the bytes in flight
  }
}

template <uint32_t Bytes, Ext E>
void buffer_load(Wave& w, const Inst& I) {
  if (I.flags & mod::lds) return buffer_load_lds<Bytes, E>(w, I);
  constexpr uint32_t Elem = Bytes >= 4 ? 4 : Bytes, N = Bytes >= 4 ? Bytes / 4 : 1;
  const Layout L = layout(I);
  alignas(64) uint64_t addr[kLanes];
  alignas(64) uint32_t ok[kLanes];
  bool priv = false;
  LaneBounds bounds;
  if (!buffer_lanes<Elem, N, true>(w, I, L, addr, ok, &priv, &bounds)) return;
  const uint64_t exec = w.exec();
  const uint16_t d = I.op[0].reg;
  const bool global_fits = priv || lanes_in_cached_allocation<Elem>(w, exec, addr, ok, bounds);
  if (global_fits) prefetch_lanes(exec, addr, ok, bounds);
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    if (!global_fits && ok[l] && !check_global(w, I, addr[l], ok[l] * Elem, l)) return;
    const uint8_t* src = reinterpret_cast<const uint8_t*>(addr[l]);
    if constexpr (E == Ext::dwords) {
      for (uint32_t i = 0; i < N; ++i) {
        uint32_t x = 0;
        if (i < ok[l]) std::memcpy(&x, src + 4 * i, 4);
        w.v[d + i][l] = x;
      }
    } else {
      uint32_t x = 0;
      if (ok[l]) std::memcpy(&x, src, Bytes);
      w.v[d][l] = extend(x, E);
    }
  }
}

// buffer_load_format_{x,xy,xyz,xyzw}: each lane reads one element of the V#'s data format (dword 3 bits 18:15) and
// returns N components converted by its number format (bits 14:12) and chosen by dst_sel (bits 11:0, three bits per
// component: 0 zero, 1 one, 4..7 the element's x..w). This is how HIP's texture fetches on linear memory read
// (vgpu/hip/texture.cpp). The formats modelled are the plain ones of 1, 2, 3 or 4 channels of 8, 16 or 32 bits;
// a channel the format lacks reads 0 (1 for w), and an element out of range reads 0 in every component.
struct ElementFormat {
  uint32_t channels, bits;
};
bool element_format(uint32_t data_format, ElementFormat& f) {
  switch (data_format) {
    case 1: f = {1, 8}; return true;     // 8
    case 2: f = {1, 16}; return true;    // 16
    case 3: f = {2, 8}; return true;     // 8_8
    case 4: f = {1, 32}; return true;    // 32
    case 5: f = {2, 16}; return true;    // 16_16
    case 10: f = {4, 8}; return true;    // 8_8_8_8
    case 11: f = {2, 32}; return true;   // 32_32
    case 12: f = {4, 16}; return true;   // 16_16_16_16
    case 13: f = {3, 32}; return true;   // 32_32_32
    case 14: f = {4, 32}; return true;   // 32_32_32_32
    default: return false;               // invalid, or packed (10_11_11, 2_10_10_10, ...): not modelled
  }
}

// One channel's raw bits to the 32-bit value the instruction returns. Number formats: 0 unorm, 1 snorm, 2 uscaled,
// 3 sscaled, 4 uint, 5 sint, 7 float.
bool convert_channel(uint32_t raw, uint32_t bits, uint32_t num, uint32_t& out) {
  if (bits == 32 && num != 4 && num != 5 && num != 7) return false;  // 32-bit channels: uint, sint, float only
  const uint32_t mask = bits == 32 ? ~0u : (1u << bits) - 1;
  const uint32_t u = raw & mask;
  const int32_t s = bits == 32 ? int32_t(u) : int32_t(u << (32 - bits)) >> (32 - bits);
  switch (num) {
    case 0: out = std::bit_cast<uint32_t>(float(u) / float(mask)); return true;
    case 1: out = std::bit_cast<uint32_t>(std::max(float(s) / float(mask >> 1), -1.0f)); return true;
    case 2: out = std::bit_cast<uint32_t>(float(u)); return true;
    case 3: out = std::bit_cast<uint32_t>(float(s)); return true;
    case 4: out = u; return true;
    case 5: out = uint32_t(s); return true;
    case 7:
      if (bits == 32) out = u;
      else if (bits == 16) out = std::bit_cast<uint32_t>(float(std::bit_cast<f16>(uint16_t(u))));
      else return false;  // no 8-bit float format
      return true;
    default: return false;
  }
}

template <uint32_t N>
void buffer_load_format(Wave& w, const Inst& I) {
  if (I.flags & mod::lds) {
    w.fault(I, FaultKind::unknown_instruction, -1, "format loads to LDS are not modelled");
    return;
  }
  const Layout L = layout(I);
  alignas(64) uint64_t addr[kLanes];
  alignas(64) uint32_t ok[kLanes];
  const Operand& rs = I.op[L.srsrc];
  // read_rsrc (in buffer_lanes) checks the operand before dword 3 is read.
  const uint32_t word3 = rs.kind == OpKind::sgpr && rs.reg + 4 <= sreg::count ? w.s[rs.reg + 3] : 0;
  ElementFormat f;
  const uint32_t num = word3 >> 12 & 7;
  uint32_t probe;
  if (!element_format(word3 >> 15 & 15, f) || !convert_channel(0, f.bits, num, probe)) {
    w.fault(I, FaultKind::unknown_instruction, -1,
            "buffer resource with data format " + std::to_string(word3 >> 15 & 15) + " and number format " +
                std::to_string(num) + ": vgpu models the 8/16/32-bit channel formats only");
    return;
  }
  // One element per lane, range-checked whole: 1, 2, 4, 8, 12 or 16 bytes.
  const uint32_t bytes = f.channels * f.bits / 8;
  bool lanes_ok = false;
  switch (bytes) {
    case 1: lanes_ok = buffer_lanes<1, 1, false>(w, I, L, addr, ok); break;
    case 2: lanes_ok = buffer_lanes<2, 1, false>(w, I, L, addr, ok); break;
    case 4: lanes_ok = buffer_lanes<4, 1, false>(w, I, L, addr, ok); break;
    case 8: lanes_ok = buffer_lanes<8, 1, false>(w, I, L, addr, ok); break;
    case 12: lanes_ok = buffer_lanes<12, 1, false>(w, I, L, addr, ok); break;
    default: lanes_ok = buffer_lanes<16, 1, false>(w, I, L, addr, ok); break;
  }
  if (!lanes_ok) return;
  const bool float_one = num != 4 && num != 5;
  const uint64_t exec = w.exec();
  const uint16_t d = I.op[0].reg;
  alignas(64) uint32_t ok_bytes[kLanes];
  for (int l = 0; l < kLanes; ++l) ok_bytes[l] = ok[l] ? bytes : 0;
  const bool global_fits = lanes_in_cached_allocation<1>(w, exec, addr, ok_bytes);
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    if (!global_fits && ok[l] && !check_global(w, I, addr[l], bytes, l)) return;
    uint32_t channel[4] = {0, 0, 0, float_one ? 0x3f800000u : 1u};
    if (ok[l]) {
      uint8_t raw[16] = {};
      std::memcpy(raw, reinterpret_cast<const uint8_t*>(addr[l]), bytes);
      for (uint32_t c = 0; c < f.channels; ++c) {
        uint32_t bitsc = 0;
        std::memcpy(&bitsc, raw + c * f.bits / 8, f.bits / 8);
        convert_channel(bitsc, f.bits, num, channel[c]);
      }
    } else {
      channel[3] = 0;
    }
    for (uint32_t i = 0; i < N; ++i) {
      const uint32_t sel = word3 >> (3 * i) & 7;
      w.v[d + i][l] = sel >= 4 ? channel[sel - 4] : sel == 1 && ok[l] ? (float_one ? 0x3f800000u : 1u) : 0;
    }
  }
}

// Stores `Bytes` from the data VGPRs; `hi` stores the high 16 bits of the first register (the *_d16_hi forms).
// Out-of-range elements are dropped.
template <uint32_t Bytes, bool hi = false>
void buffer_store(Wave& w, const Inst& I) {
  if (I.flags & mod::lds) {
    w.fault(I, FaultKind::unknown_instruction, -1, "buffer stores have no LDS form");
    return;
  }
  constexpr uint32_t Elem = Bytes >= 4 ? 4 : Bytes, N = Bytes >= 4 ? Bytes / 4 : 1;
  const Layout L = layout(I);
  alignas(64) uint64_t addr[kLanes];
  alignas(64) uint32_t ok[kLanes];
  bool priv = false;
  if (!buffer_lanes<Elem, N, true>(w, I, L, addr, ok, &priv)) return;
  const uint64_t exec = w.exec();
  const uint16_t d = I.op[0].reg;
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1) || !ok[l]) continue;
    if (!priv && !check_global(w, I, addr[l], ok[l] * Elem, l)) return;
    uint8_t* dst = reinterpret_cast<uint8_t*>(addr[l]);
    if constexpr (Bytes >= 4) {
      for (uint32_t i = 0; i < ok[l]; ++i) std::memcpy(dst + 4 * i, &w.v[d + i][l], 4);
    } else {
      uint32_t x = hi ? w.v[d][l] >> 16 : w.v[d][l];
      std::memcpy(dst, &x, Bytes);
    }
  }
}

// Atomics: Op(old, data, compare) -> new, range-checked all or nothing. glc (gfx9 syntax) / sc0 (gfx940 syntax)
// returns the old value in the data VGPRs; an out-of-range lane changes nothing and returns 0. cmpswap takes
// {data, compare} in consecutive registers and returns into the first.
template <class T, auto Op, bool cmpswap = false>
void buffer_atomic(Wave& w, const Inst& I) {
  if (I.flags & mod::lds) {
    w.fault(I, FaultKind::unknown_instruction, -1, "buffer atomics have no LDS form");
    return;
  }
  const bool returns = I.flags & (mod::glc | mod::sc0);
  const Layout L = layout(I);
  alignas(64) uint64_t addr[kLanes];
  alignas(64) uint32_t ok[kLanes];
  bool priv = false;
  if (!buffer_lanes<sizeof(T), 1, false>(w, I, L, addr, ok, &priv)) return;
  const uint64_t exec = w.exec();
  constexpr uint32_t words = sizeof(T) / 4;
  const uint16_t d = I.op[0].reg;
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    T old = 0;
    if (ok[l]) {
      if (!priv && !check_global(w, I, addr[l], sizeof(T), l)) return;
      auto word = [&](uint32_t r) {
        uint64_t x = w.v[r][l];
        if constexpr (words == 2) x |= uint64_t(w.v[r + 1][l]) << 32;
        return T(x);
      };
      const T data = word(d), cmp = cmpswap ? word(d + words) : T(0);
      old = atomic_rmw(reinterpret_cast<T*>(addr[l]), [&](T o) { return Op(o, data, cmp); });
    }
    if (returns) {
      w.v[d][l] = uint32_t(old);
      if constexpr (words == 2) w.v[d + 1][l] = uint32_t(uint64_t(old) >> 32);
    }
  }
}

// global_load_lds_*: per-lane global address as global_load (VGPR pair, or SGPR pair + 32-bit VGPR offset, plus the
// signed instruction offset), no range check; LDS address = M0[17:2]*4 (gfx950) / M0[15:2]*4 (gfx942) + inst_offset +
// lane * (Bytes <= 4 ? 4 : 16). Sub-dword loads fill their lane's dword as the buffer form does.
template <uint32_t Bytes, Ext E>
void global_load_lds(Wave& w, const Inst& I) {
  constexpr uint32_t N = Bytes >= 4 ? Bytes / 4 : 1, Slot = Bytes <= 4 ? 4 : 16, Written = Bytes <= 4 ? 4 : Bytes;
  const Operand& va = I.op[0];
  const Operand* sa = I.nops > 1 && I.op[1].kind == OpKind::sgpr ? &I.op[1] : nullptr;
  if (va.kind != OpKind::vgpr || (!sa && va.width < 2)) {
    w.fault(I, FaultKind::unknown_instruction, -1, "global_load_lds without its address VGPRs");
    return;
  }
  const int64_t lds_base = int64_t(w.s[sreg::m0] & w.ctx->arch->lds_dma_m0_mask() & ~3u) + I.offset;
  const uint64_t sbase = sa ? read_s64(w, *sa) : 0;
  const uint64_t exec = w.exec();
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    const uint64_t a = (sa ? sbase + w.v[va.reg][l]
                           : (uint64_t(w.v[va.reg][l]) | uint64_t(w.v[va.reg + 1][l]) << 32)) + int64_t(I.offset);
    const int64_t la = lds_base + int64_t(l) * Slot;
    uint8_t* dst = lds_ptr(w, I, uint64_t(la), Written, l, LdsUse::dma);  // a negative address wraps to a huge one: a fault
    if (!dst) return;
    const uint8_t* src = lane_ptr(w, I, Space::global, a, Bytes, l, LdsUse::read);
    if (!src) return;
    uint32_t x[4] = {};
    if constexpr (E == Ext::dwords) {
      std::memcpy(x, src, 4 * N);
    } else {
      std::memcpy(&x[0], src, Bytes);
      x[0] = extend(x[0], E);
    }
    std::memcpy(dst, x, Written);  // lands at issue; lds_ptr marked the bytes in flight
  }
}

// Registrations, each a vector memory access counted by vmcnt, with its bytes per lane for the timing model taken
// from the width its executor is made for (a format load: its dwords; an atomic: its data type's).
template <uint32_t Bytes, Ext E>
void load(IsaTable& t, std::string_view name) {
  t.add(name, buffer_load<Bytes, E>, op::vector_memory, InstShape::lanes(Bytes));
}
template <uint32_t N>
void load_format(IsaTable& t, std::string_view name) {
  t.add(name, buffer_load_format<N>, op::vector_memory, InstShape::lanes(4 * N));
}
template <uint32_t Bytes, bool hi = false>
void store(IsaTable& t, std::string_view name) {
  t.add(name, buffer_store<Bytes, hi>, op::vector_memory, InstShape::lanes(Bytes));
}
template <uint32_t Bytes, Ext E>
void load_lds(IsaTable& t, std::string_view name) {
  t.add(name, global_load_lds<Bytes, E>, op::vector_memory, InstShape::lanes(Bytes));
}

}  // namespace

void register_mubuf(IsaTable& t) {
  load<1, Ext::u8>(t, "buffer_load_ubyte");
  load<1, Ext::i8>(t, "buffer_load_sbyte");
  load<2, Ext::u16>(t, "buffer_load_ushort");
  load<2, Ext::i16>(t, "buffer_load_sshort");
  load<4, Ext::dwords>(t, "buffer_load_dword");
  load<8, Ext::dwords>(t, "buffer_load_dwordx2");
  load<12, Ext::dwords>(t, "buffer_load_dwordx3");
  load<16, Ext::dwords>(t, "buffer_load_dwordx4");
  load<1, Ext::u8_d16>(t, "buffer_load_ubyte_d16");
  load<1, Ext::i8_d16>(t, "buffer_load_sbyte_d16");
  load<2, Ext::u16_d16>(t, "buffer_load_short_d16");
  load<1, Ext::u8_d16_hi>(t, "buffer_load_ubyte_d16_hi");
  load<1, Ext::i8_d16_hi>(t, "buffer_load_sbyte_d16_hi");
  load<2, Ext::u16_d16_hi>(t, "buffer_load_short_d16_hi");
  load_format<1>(t, "buffer_load_format_x");
  load_format<2>(t, "buffer_load_format_xy");
  load_format<3>(t, "buffer_load_format_xyz");
  load_format<4>(t, "buffer_load_format_xyzw");
  store<1>(t, "buffer_store_byte");
  store<1, true>(t, "buffer_store_byte_d16_hi");
  store<2>(t, "buffer_store_short");
  store<2, true>(t, "buffer_store_short_d16_hi");
  store<4>(t, "buffer_store_dword");
  store<8>(t, "buffer_store_dwordx2");
  store<12>(t, "buffer_store_dwordx3");
  store<16>(t, "buffer_store_dwordx4");

  load_lds<1, Ext::u8>(t, "global_load_lds_ubyte");
  load_lds<1, Ext::i8>(t, "global_load_lds_sbyte");
  load_lds<2, Ext::u16>(t, "global_load_lds_ushort");
  load_lds<2, Ext::i16>(t, "global_load_lds_sshort");
  load_lds<4, Ext::dwords>(t, "global_load_lds_dword");
  load_lds<12, Ext::dwords>(t, "global_load_lds_dwordx3");  // gfx950 (the disassembler decodes it only there)
  load_lds<16, Ext::dwords>(t, "global_load_lds_dwordx4");

  for_each_atomic([&]<class T, auto Op, bool cmpswap>(const char* name) {
    t.add(intern(std::string("buffer_atomic_") + name), buffer_atomic<T, Op, cmpswap>, op::vector_memory | op::atomic,
          InstShape::lanes(sizeof(T)));
  });
}

}  // namespace vgpu
