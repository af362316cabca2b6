// Shared machinery for instruction semantics: an operation is one lambda, and these templates read its operands,
// apply modifiers and write its result for all 64 lanes at once (plain loops over arrays the compiler vectorizes).
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include <immintrin.h>

#include "wave.h"

namespace vgpu {

using f16 = _Float16;

template <class T>
struct fn_traits : fn_traits<decltype(&T::operator())> {};
template <class C, class R, class... A>
struct fn_traits<R (C::*)(A...) const> {
  using ret = R;
  using args = std::tuple<std::remove_cvref_t<A>...>;
  static constexpr size_t arity = sizeof...(A);
};
template <auto F>
using traits_of = fn_traits<decltype(F)>;

template <class T>
inline constexpr bool is_float_v = std::is_floating_point_v<T> || std::is_same_v<T, f16>;

template <class T>
struct alignas(64) Lanes {
  T v[kLanes];
  T& operator[](int l) { return v[l]; }
  const T& operator[](int l) const { return v[l]; }
};

// Unsigned integer of the same width, for bit-level moves.
template <class T>
using bits_t = std::conditional_t<sizeof(T) == 8, uint64_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint16_t>>;

// SDWA operand select: BYTE_0..3, WORD_0..1, DWORD; sign-extends when `sext`.
inline uint32_t sdwa_extract(uint32_t x, uint8_t sel, bool sext) {
  if (sel >= 6) return x;
  if (sel < 4) {
    uint32_t b = (x >> (8 * sel)) & 0xff;
    return sext ? uint32_t(int32_t(int8_t(b))) : b;
  }
  uint32_t h = (x >> (16 * (sel - 4))) & 0xffff;
  return sext ? uint32_t(int32_t(int16_t(h))) : h;
}

// DPP: src0 as lane l sees it through the instruction's DPP control; lanes whose source is invalid get 0.
void dpp_permute(const Wave& w, const Inst& I, const uint32_t* src, uint32_t* out, uint64_t& valid);
// DPP: the lanes that write (row_mask, bank_mask, and valid sources unless bound_ctrl).
uint64_t dpp_write_mask(const Wave& w, const Inst& I);

// A 32-bit source of an instruction with mod::plain, read in place: the VGPR's lanes, or `bcast` filled with the
// scalar operand's value.
inline const uint32_t* plain_source(const Wave& w, const Operand& o, uint32_t* bcast) {
  if (o.kind == OpKind::vgpr) return w.v[o.reg];
  const uint32_t x = read_s32(w, o);
  for (int l = 0; l < kLanes; ++l) bcast[l] = x;
  return bcast;
}

// The mask of the lanes whose byte in `on` is 1 (each 0 or 1), sixteen lanes per step: the per-lane shift and or
// of a compare's result do not vectorize.
inline uint64_t mask_of(const uint8_t* on) {
  uint64_t m = 0;
  for (int l = 0; l < kLanes; l += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(on + l));
    m |= uint64_t(uint32_t(_mm_movemask_epi8(_mm_cmpgt_epi8(x, _mm_setzero_si128())))) << l;
  }
  return m;
}

// r[l] = bit l of m ? b[l] : a[l], four lanes per step. Each step reads its lanes of a and b before it writes them
// in r, so r may be a or b.
inline void select_lanes(uint64_t m, const uint32_t* a, const uint32_t* b, uint32_t* r) {
  const __m128i bit = _mm_setr_epi32(1, 2, 4, 8);
  for (int l = 0; l < kLanes; l += 4) {
    const __m128i sel = _mm_cmpeq_epi32(_mm_and_si128(_mm_set1_epi32(int(m >> l)), bit), bit);
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + l));
    const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + l));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(r + l), _mm_blendv_epi8(x, y, sel));
  }
}

// Reads source `k` of the instruction (operand index `opi`) for all lanes as type T.
template <class T>
inline void fetch(const Wave& w, const Inst& I, int opi, int k, Lanes<T>& out) {
  const Operand& o = I.op[opi];
  if constexpr (sizeof(T) == 4) {
    if (I.flags & mod::plain) {  // nothing to apply: one copy
      if (o.kind == OpKind::vgpr) {
        std::memcpy(out.v, w.v[o.reg], sizeof out.v);
      } else {
        const T x = std::bit_cast<T>(read_s32(w, o));
        for (int l = 0; l < kLanes; ++l) out[l] = x;
      }
      return;
    }
  }
  if constexpr (sizeof(T) == 8) {
    if (o.kind == OpKind::vgpr) {
      const uint32_t* lo = w.v[o.reg];
      const uint32_t* hi = w.v[o.reg + 1];
      for (int l = 0; l < kLanes; ++l) out[l] = std::bit_cast<T>(uint64_t(lo[l]) | uint64_t(hi[l]) << 32);
    } else {
      T x = std::bit_cast<T>(read_s64(w, o));
      for (int l = 0; l < kLanes; ++l) out[l] = x;
    }
  } else {
    alignas(64) uint32_t raw[kLanes];
    if (o.kind == OpKind::vgpr) {
      const uint32_t* src = w.v[o.reg];
      if ((I.flags & mod::dpp) && k == 0) {
        uint64_t valid;
        dpp_permute(w, I, src, raw, valid);
      } else {
        std::memcpy(raw, src, sizeof raw);
      }
    } else {
      uint32_t x = read_s32(w, o);
      for (int l = 0; l < kLanes; ++l) raw[l] = x;
    }
    if (I.flags & mod::sdwa) {
      uint8_t sel = k == 0 ? I.src0_sel : k == 1 ? I.src1_sel : 6;
      for (int l = 0; l < kLanes; ++l) raw[l] = sdwa_extract(raw[l], sel, o.sext);
    }
    if constexpr (sizeof(T) == 4) {
      for (int l = 0; l < kLanes; ++l) out[l] = std::bit_cast<T>(raw[l]);
    } else {
      const int shift = (I.op_sel >> k & 1) ? 16 : 0;
      for (int l = 0; l < kLanes; ++l) out[l] = std::bit_cast<T>(uint16_t(raw[l] >> shift));
    }
  }
  // Input modifiers act on the sign bit (also for the bit-typed operands LLVM gives them, e.g. v_cndmask_b32).
  if (o.abs || o.neg) {
    using B = bits_t<T>;
    constexpr B sign = B(1) << (8 * sizeof(T) - 1);
    for (int l = 0; l < kLanes; ++l) {
      B x = std::bit_cast<B>(out[l]);
      if (o.abs) x &= B(~sign);
      if (o.neg) x ^= sign;
      out[l] = std::bit_cast<T>(x);
    }
  }
}

// Output modifiers of float results: omod (x2, x4, /2) then clamp to [0, 1].
template <class T>
inline void output_modifiers(const Inst& I, Lanes<T>& r) {
  if constexpr (is_float_v<T>) {
    if (I.omod) {
      const T m = I.omod == 1 ? T(2) : I.omod == 2 ? T(4) : T(0.5);
      for (int l = 0; l < kLanes; ++l) r[l] = T(r[l] * m);
    }
    if (I.flags & mod::clamp)
      for (int l = 0; l < kLanes; ++l) r[l] = r[l] > T(1) ? T(1) : r[l] > T(0) ? r[l] : T(0);  // NaN -> 0
  }
}

// Writes a per-lane result to VGPR operand `opi` for the lanes enabled in EXEC.
// `mask` further limits the written lanes (DPP row and bank masks).
template <class T>
inline void store(Wave& w, const Inst& I, int opi, const Lanes<T>& r, uint64_t mask = ~0ull) {
  const Operand& d = I.op[opi];
  const uint64_t exec = w.exec() & mask;
  if constexpr (sizeof(T) == 8) {
    uint32_t* lo = w.v[d.reg];
    uint32_t* hi = w.v[d.reg + 1];
    if (exec == ~0ull) {
      for (int l = 0; l < kLanes; ++l) {
        const uint64_t x = std::bit_cast<uint64_t>(r[l]);
        lo[l] = uint32_t(x), hi[l] = uint32_t(x >> 32);
      }
      return;
    }
    for (int l = 0; l < kLanes; ++l) {
      uint64_t x = std::bit_cast<uint64_t>(r[l]);
      bool on = exec >> l & 1;
      lo[l] = on ? uint32_t(x) : lo[l];
      hi[l] = on ? uint32_t(x >> 32) : hi[l];
    }
  } else if constexpr (sizeof(T) == 4) {
    uint32_t* dst = w.v[d.reg];
    if (I.flags & mod::sdwa && I.dst_sel != 6) {
      // SDWA destination select: write the selected field, fill the rest per dst_unused.
      const uint8_t sel = I.dst_sel;
      const uint32_t shift = sel < 4 ? 8 * sel : 16 * (sel - 4), width = sel < 4 ? 8 : 16;
      const uint32_t mask = ((1u << width) - 1) << shift;
      for (int l = 0; l < kLanes; ++l) {
        if (!(exec >> l & 1)) continue;
        uint32_t x = std::bit_cast<uint32_t>(r[l]) << shift & mask;
        if (I.dst_unused == 2) x |= dst[l] & ~mask;
        else if (I.dst_unused == 1 && (x >> (shift + width - 1) & 1)) x |= ~mask & ~((1u << shift) - 1);
        dst[l] = x;
      }
      return;
    }
    if (exec == ~0ull) {  // a full wave: a plain copy (the blend below does not vectorize)
      std::memcpy(dst, r.v, sizeof r.v);
      return;
    }
    for (int l = 0; l < kLanes; ++l) dst[l] = (exec >> l & 1) ? std::bit_cast<uint32_t>(r[l]) : dst[l];
  } else {
    // 16-bit results: op_sel[3] writes the high half and keeps the low; otherwise gfx9 zeroes the high half.
    uint32_t* dst = w.v[d.reg];
    if (I.op_sel & 8) {
      for (int l = 0; l < kLanes; ++l)
        dst[l] = (exec >> l & 1) ? (dst[l] & 0xffff) | uint32_t(std::bit_cast<uint16_t>(r[l])) << 16 : dst[l];
    } else if (I.flags & mod::sdwa) {
      Lanes<uint32_t> wide;
      for (int l = 0; l < kLanes; ++l) wide[l] = std::bit_cast<uint16_t>(r[l]);
      store(w, I, opi, wide, mask);
    } else {
      for (int l = 0; l < kLanes; ++l) dst[l] = (exec >> l & 1) ? std::bit_cast<uint16_t>(r[l]) : dst[l];
    }
  }
}

// A vector ALU operation: D = F(S0, S1, ...), types taken from F's signature. Sources start at operand `first`.
template <auto F, int first = 1>
inline void valu(Wave& w, const Inst& I) {
  using Tr = traits_of<F>;
  using R = typename Tr::ret;
  if constexpr (Tr::arity > 0 && sizeof(R) == 4 &&
                []<size_t... Is>(std::index_sequence<Is...>) {
                  return ((sizeof(std::tuple_element_t<Is, typename Tr::args>) == 4) && ...);
                }(std::make_index_sequence<Tr::arity>{})) {
    if (I.flags & mod::plain) {  // 32-bit sources read in place, the result stored as it is
      [&]<size_t... Is>(std::index_sequence<Is...>) {
        alignas(64) uint32_t bcast[Tr::arity][kLanes];
        const uint32_t* src[Tr::arity] = {plain_source(w, I.op[first + int(Is)], bcast[Is])...};
        if (w.exec() == ~0ull) {
          // A full wave: straight into D, eight lanes at a time (each group's sources are read before its results
          // are written, so D may be one of them).
          uint32_t* dst = w.v[I.op[0].reg];
          for (int l = 0; l < kLanes; l += 8) {
            uint32_t group[8];
            for (int j = 0; j < 8; ++j)
              group[j] = std::bit_cast<uint32_t>(F(std::bit_cast<std::tuple_element_t<Is, typename Tr::args>>(src[Is][l + j])...));
            std::memcpy(dst + l, group, sizeof group);
          }
          return;
        }
        Lanes<R> r;
        for (int l = 0; l < kLanes; ++l) r[l] = F(std::bit_cast<std::tuple_element_t<Is, typename Tr::args>>(src[Is][l])...);
        store(w, I, 0, r);
      }(std::make_index_sequence<Tr::arity>{});
      return;
    }
  }
  [&]<size_t... Is>(std::index_sequence<Is...>) {
    std::tuple<Lanes<std::tuple_element_t<Is, typename Tr::args>>...> src;
    (fetch(w, I, first + int(Is), int(Is), std::get<Is>(src)), ...);
    Lanes<R> r;
    for (int l = 0; l < kLanes; ++l) r[l] = F(std::get<Is>(src)[l]...);
    output_modifiers(I, r);
    store(w, I, 0, r, (I.flags & mod::dpp) ? dpp_write_mask(w, I) : ~0ull);
  }(std::make_index_sequence<Tr::arity>{});
}

// Lane mask of a scalar or VCC operand (carry-in, cndmask condition).
inline uint64_t read_mask(const Wave& w, const Operand& o) { return read_s64(w, o); }

}  // namespace vgpu
