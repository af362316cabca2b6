// Scalar memory: loads through the scalar cache from global memory (kernel arguments, uniform data).
#include <chrono>

#include "isa/isa.h"
#include "isa/ops.h"

namespace vgpu {
namespace {

// s_load_dword{,x2,x4,x8,x16} sdst, sbase, offset: address = sbase + offset (immediate or SGPR) + offset modifier.
template <int Dwords>
void s_load(Wave& w, const Inst& I) {
  uint64_t addr = read_s64(w, I.op[1]) + (I.nops > 2 ? read_s32(w, I.op[2]) : 0) + int64_t(I.offset);
  addr &= ~uint64_t(3);  // the scalar unit ignores the two low address bits
  if (!check_global(w, I, addr, 4 * Dwords, -1)) return;
  std::memcpy(&w.s[I.op[0].reg], reinterpret_cast<const void*>(addr), 4 * Dwords);
}

// s_buffer_load_dword*: address = resource base + offset, dropped (zeros) past num_records like buffer loads.
template <int Dwords>
void s_buffer_load(Wave& w, const Inst& I) {
  const uint32_t* rsrc = &w.s[I.op[1].reg];
  uint64_t base = (uint64_t(rsrc[1] & 0xffff) << 32) | rsrc[0];
  uint32_t num_records = rsrc[2];
  uint64_t off = (I.nops > 2 ? read_s32(w, I.op[2]) : 0) + uint64_t(int64_t(I.offset));
  off &= ~uint64_t(3);
  for (int i = 0; i < Dwords; ++i) {
    uint64_t o = off + 4 * i;
    uint32_t x = 0;
    if (o + 4 <= num_records) {
      if (!check_global(w, I, base + o, 4, -1)) return;
      std::memcpy(&x, reinterpret_cast<const void*>(base + o), 4);
    }
    w.s[I.op[0].reg + i] = x;
  }
}

// The shader clock (clock64()): with no timing model, the dispatch's starting clock plus 4 cycles per instruction
// the wave has issued, so it grows with the wave's work and across dispatches (Device::clock_).
void s_memtime(Wave& w, const Inst& I) {
  write_s64(w, I.op[0], w.ctx->clock_base + kCyclesPerInstruction * w.insts);
}

// The constant-rate "real time" clock (wall_clock64()): the host's monotonic clock at the 100 MHz that
// hipDeviceAttributeWallClockRate reports.
void s_memrealtime(Wave& w, const Inst& I) {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  write_s64(w, I.op[0], uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()) / 10);
}

}  // namespace

void register_smem(IsaTable& t) {
  t.add("s_load_dword", s_load<1>);
  t.add("s_load_dwordx2", s_load<2>);
  t.add("s_load_dwordx4", s_load<4>);
  t.add("s_load_dwordx8", s_load<8>);
  t.add("s_load_dwordx16", s_load<16>);
  t.add("s_buffer_load_dword", s_buffer_load<1>);
  t.add("s_buffer_load_dwordx2", s_buffer_load<2>);
  t.add("s_buffer_load_dwordx4", s_buffer_load<4>);
  t.add("s_buffer_load_dwordx8", s_buffer_load<8>);
  t.add("s_buffer_load_dwordx16", s_buffer_load<16>);
  t.add("s_memtime", s_memtime);
  t.add("s_memrealtime", s_memrealtime);
}

}  // namespace vgpu
