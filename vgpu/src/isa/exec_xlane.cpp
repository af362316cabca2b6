// gfx950 cross-lane operations: the permlane swaps and the transposing LDS reads.
#include <cstring>

#include <immintrin.h>

#include "isa/isa.h"
#include "memory/memory.h"

namespace vgpu {
namespace {

// v_permlane16_swap_b32 vdst, vsrc: the odd rows (16 lanes each) of vdst trade places with the even rows of vsrc:
// for l in rows 0 and 2, vdst[l + 16] <-> vsrc[l]. v_permlane32_swap_b32: rows 2 and 3 of vdst trade places with rows 0
// and 1 of vsrc: for l < 32, vdst[l + 32] <-> vsrc[l]. A register lane is written when its lane is in EXEC; when the
// lane it receives from is not, it keeps its value, or gets zero under bound_ctrl, as a DPP move does (fi:1, which
// reads inactive lanes, is not modelled: the decoder refuses it).
template <int Stride>
void v_permlane_swap(Wave& w, const Inst& I) {
  uint32_t* d = w.v[I.op[0].reg];
  uint32_t* s = w.v[I.op[1].reg];
  const uint64_t exec = w.exec();
  const bool zero = I.flags & mod::bound_ctrl;
  for (int l = 0; l < kLanes; ++l) {
    if (l & Stride) continue;  // l is the lane of vsrc; l + Stride the lane of vdst
    const int m = l + Stride;
    const bool lon = exec >> l & 1, mon = exec >> m & 1;
    const uint32_t from_s = s[l], from_d = d[m];
    if (mon) d[m] = lon ? from_s : zero ? 0 : d[m];
    if (lon) s[l] = mon ? from_d : zero ? 0 : s[l];
  }
}

// ds_read_b64_tr_b16 vdst[2], vaddr offset:o — each lane reads 8 bytes (four 16-bit elements) at vaddr + o, and within
// each group of 16 lanes the 4x16 matrix they form is transposed: the lanes 4r..4r+3 supply row r (16 elements, four
// per lane, in lane order), and lane i of the group receives column i: element j (j = 0..3; vdst[j / 2], half j % 2)
// is element (i % 4) of the data lane 4j + i / 4 read.
// ds_read_b64_tr_b8: the same with 8-bit elements: lanes 2r, 2r + 1 supply row r of an 8x16 byte matrix, and lane i
// receives column i: byte j (j = 0..7) is byte (i % 8) of the data lane 2j + i / 8 read.
// The ISA requires EXEC to be all ones; vgpu reads inactive lanes' data as zero and writes only active lanes.
template <int ElemBits>
void ds_read_b64_tr(Wave& w, const Inst& I) {
  const uint64_t exec = w.exec();
  const uint32_t* a = w.v[I.op[1].reg];
  alignas(64) uint32_t addr[kLanes];
  for (int l = 0; l < kLanes; ++l) addr[l] = a[l] + uint32_t(I.offset);
  if (w.profile) profile_lds(w, I, addr, 8, false);
  alignas(16) uint64_t raw[kLanes] = {};
  const uint16_t d = I.op[0].reg;
  if (exec == ~0ull && lds_lanes_clear(w, exec, addr, 0, 8)) {
    // A full wave inside LDS with no hazard possible (lds_lanes_clear, as the other DS reads): no per-lane check.
    const uint8_t* lds = w.wg->lds;
    for (int l = 0; l < kLanes; ++l) std::memcpy(&raw[l], lds + addr[l], 8);
    if constexpr (ElemBits == 16) {
      // Row r of a group is the 32 bytes of its lanes 4r..4r+3; register d + h of lane i holds column i of rows 2h
      // and 2h + 1, i.e. the two rows' 16-bit elements interleaved.
      for (int g = 0; g < kLanes; g += 16)
        for (int h = 0; h < 2; ++h) {
          const __m128i* r0 = reinterpret_cast<const __m128i*>(&raw[g + 8 * h]);
          const __m128i* r1 = reinterpret_cast<const __m128i*>(&raw[g + 8 * h + 4]);
          const __m128i x0 = _mm_load_si128(r0), x1 = _mm_load_si128(r0 + 1);
          const __m128i y0 = _mm_load_si128(r1), y1 = _mm_load_si128(r1 + 1);
          __m128i* out = reinterpret_cast<__m128i*>(w.v[d + h] + g);
          _mm_storeu_si128(out, _mm_unpacklo_epi16(x0, y0));
          _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(x0, y0));
          _mm_storeu_si128(out + 2, _mm_unpacklo_epi16(x1, y1));
          _mm_storeu_si128(out + 3, _mm_unpackhi_epi16(x1, y1));
        }
      return;
    }
  } else {
    for (int l = 0; l < kLanes; ++l) {
      if (!(exec >> l & 1)) continue;
      const uint8_t* p = lds_ptr(w, I, addr[l], 8, l, LdsUse::read);
      if (!p) return;
      std::memcpy(&raw[l], p, 8);
    }
  }
  constexpr int per = 64 / ElemBits;  // elements per lane
  constexpr int lanes_per_row = 16 / per;
  constexpr uint64_t mask = (uint64_t(1) << ElemBits) - 1;
  for (int l = 0; l < kLanes; ++l) {
    if (!(exec >> l & 1)) continue;
    const int g = l & ~15, i = l & 15;
    uint64_t out = 0;
    for (int j = 0; j < per; ++j) {
      const int src = g + lanes_per_row * j + i / per;
      out |= (raw[src] >> (ElemBits * (i % per)) & mask) << (ElemBits * j);
    }
    w.v[d][l] = uint32_t(out);
    w.v[d + 1][l] = uint32_t(out >> 32);
  }
}

}  // namespace

void register_xlane(IsaTable& t) {
  t.add("v_permlane16_swap_b32", v_permlane_swap<16>);
  t.add("v_permlane32_swap_b32", v_permlane_swap<32>);
  t.add("ds_read_b64_tr_b16", ds_read_b64_tr<16>, InstShape::lanes(8));  // 64 bits per lane (ds_read_b64_tr)
  t.add("ds_read_b64_tr_b8", ds_read_b64_tr<8>, InstShape::lanes(8));
  t.mark({"ds_read_b64_tr_b16", "ds_read_b64_tr_b8"}, IssueKind::lds);
}

}  // namespace vgpu
