// Data-parallel primitives (DPP): src0 of a VOP1/VOP2/VOPC instruction read from another lane of the wave.
#include "isa/isa.h"
#include "isa/ops.h"

namespace vgpu {
namespace {

// The lane that lane l reads under DPP control `c`, or -1 if it has none.
int dpp_source(uint16_t c, int l) {
  const int row = l & ~15, in_row = l & 15;
  if (c <= 0xff) return (l & ~3) | (c >> (2 * (l & 3)) & 3);  // quad_perm
  if (c >= 0x101 && c <= 0x10f) { int s = in_row + (c - 0x100); return s < 16 ? row + s : -1; }   // row_shl
  if (c >= 0x111 && c <= 0x11f) { int s = in_row - (c - 0x110); return s >= 0 ? row + s : -1; }   // row_shr
  if (c >= 0x121 && c <= 0x12f) return row + ((in_row - (c - 0x120)) & 15);                        // row_ror
  if (c >= 0x150 && c <= 0x15f) return row + (c - 0x150);  // row_newbcast:n (gfx90a+): lane n of the row to all
  switch (c) {
    case 0x130: return l + 1 < 64 ? l + 1 : -1;  // wave_shl:1
    case 0x134: return (l + 1) & 63;             // wave_rol:1
    case 0x138: return l >= 1 ? l - 1 : -1;      // wave_shr:1
    case 0x13c: return (l - 1) & 63;             // wave_ror:1
    case 0x140: return row + (15 - in_row);      // row_mirror
    case 0x141: return (l & ~7) + (7 - (l & 7)); // row_half_mirror
    case 0x142: return l >= 16 ? row - 1 : -1;  // row_bcast:15: the last lane of the previous row
    case 0x143: return l >= 32 ? 31 : -1;        // row_bcast:31
    default: return -1;
  }
}

}  // namespace

void dpp_permute(const Wave& w, const Inst& I, const uint32_t* src, uint32_t* out, uint64_t& valid) {
  const uint64_t exec = w.exec();
  valid = 0;
  for (int l = 0; l < kLanes; ++l) {
    int s = dpp_source(I.dpp_ctrl, l);
    bool ok = s >= 0 && (exec >> s & 1);
    out[l] = ok ? src[s] : 0;
    valid |= uint64_t(ok) << l;
  }
}

uint64_t dpp_write_mask(const Wave& w, const Inst& I) {
  uint64_t m = 0;
  const uint64_t exec = w.exec();
  for (int l = 0; l < kLanes; ++l) {
    bool on = (I.row_mask >> (l >> 4) & 1) && (I.bank_mask >> ((l >> 2) & 3) & 1);
    if (!(I.flags & mod::bound_ctrl)) {
      int s = dpp_source(I.dpp_ctrl, l);
      on = on && s >= 0 && (exec >> s & 1);
    }
    m |= uint64_t(on) << l;
  }
  return m;
}

}  // namespace vgpu
