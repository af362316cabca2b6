// Matrix cores in double precision: v_mfma_f64_16x16x4 (one block) and v_mfma_f64_4x4x4 (four blocks), D = A x B + C
// with A, B, C and D in f64. Apart from exec_mfma.cpp because every operand element is a register pair, which the
// 32-bit layout tables there do not describe.
//
// Layouts (AMD's matrix instruction calculator for CDNA2 and CDNA3, the same on gfx90a, gfx942 and gfx950): A[i][k] of
// block b in lane M*b + 16*k + i (B[k][j] likewise with j), one f64 per lane in the operand's register pair; D[i][j] of
// block b in register pair floor(i/4), lane 16*(i mod 4) + N*b + j. Arithmetic: a chain of IEEE fused multiply-adds
// over k in order, from C (assumed: AMD documents the f64 MFMAs as IEEE-compliant but not their summation order;
// docs/vgpu-mfma.md).
#include <bit>
#include <cmath>
#include <cstdint>

#include "isa/isa.h"
#include "vgpu/device.h"
#include "wave.h"

namespace vgpu {
namespace {

struct F64Shape {
  int m, n, k, blocks;
};

constexpr int a_lane(const F64Shape& s, int i, int k, int b) { return s.m * b + 16 * k + i; }
constexpr int d_lane(const F64Shape& s, int i, int j, int b) { return 16 * (i % 4) + s.n * b + j; }
constexpr int d_pair(int i) { return i / 4; }

// The calculator's rows, pinned: 16x16x4 D[5][3] in v[3:2] lane 19; 4x4x4 A[2][3] of block 1 in lane 54,
// D[3][1] of block 2 in lane 57.
static_assert(d_pair(5) == 1 && d_lane({16, 16, 4, 1}, 5, 3, 0) == 19);
static_assert(a_lane({4, 4, 4, 4}, 2, 3, 1) == 54 && d_lane({4, 4, 4, 4}, 3, 1, 2) == 57);

double load(const Wave& w, int reg, int lane) {
  return std::bit_cast<double>(uint64_t(w.v[reg + 1][lane]) << 32 | w.v[reg][lane]);
}
void store(Wave& w, int reg, int lane, double x) {
  const uint64_t u = std::bit_cast<uint64_t>(x);
  w.v[reg][lane] = uint32_t(u), w.v[reg + 1][lane] = uint32_t(u >> 32);
}

template <F64Shape S>
void mfma_f64(Wave& w, const Inst& I) {
  constexpr int d_regs = 2 * S.m * S.n * S.blocks / kLanes;
  auto fail = [&](const char* what) { w.fault(I, FaultKind::unknown_instruction, -1, what); };
  if (I.nops != 4) return fail("MFMA with an unexpected operand count");
  for (int i = 0; i < 3; ++i)
    if (I.op[i].kind != OpKind::vgpr) return fail("MFMA operand that is not a VGPR or AGPR");
  if (I.op[1].width != 2 || I.op[2].width != 2 || I.op[0].width != d_regs ||
      (I.op[3].kind == OpKind::vgpr && I.op[3].width != d_regs))
    return fail("f64 MFMA with operands of the wrong width");
  if (I.op[3].kind != OpKind::vgpr && I.op[3].kind != OpKind::imm)
    return fail("MFMA accumulator that is neither a register nor an inline constant");
  for (int i = 0; i < 4; ++i)
    if (I.op[i].neg || I.op[i].abs) return fail("f64 MFMA negation (neg:[...]) is not modelled");
  if (I.cbsz || I.abid || I.blgp) return fail("f64 MFMA with cbsz/abid/blgp (the forms have no broadcast)");
  if (I.flags & mod::clamp) return fail("MFMA clamp is not modelled");

  double a[S.blocks][S.m][S.k], b[S.blocks][S.k][S.n], d[S.blocks][S.m][S.n];
  for (int blk = 0; blk < S.blocks; ++blk)
    for (int k = 0; k < S.k; ++k) {
      for (int i = 0; i < S.m; ++i) a[blk][i][k] = load(w, I.op[1].reg, a_lane(S, i, k, blk));
      for (int j = 0; j < S.n; ++j) b[blk][k][j] = load(w, I.op[2].reg, a_lane(S, j, k, blk));
    }
  const double c_const = std::bit_cast<double>(I.op[3].imm);
  for (int blk = 0; blk < S.blocks; ++blk)
    for (int i = 0; i < S.m; ++i)
      for (int j = 0; j < S.n; ++j) {
        double acc = I.op[3].kind == OpKind::vgpr ? load(w, I.op[3].reg + 2 * d_pair(i), d_lane(S, i, j, blk)) : c_const;
        for (int k = 0; k < S.k; ++k) acc = std::fma(a[blk][i][k], b[blk][k][j], acc);
        d[blk][i][j] = acc;
      }
  // D may overlap C: everything is read before anything is written. MFMAs ignore EXEC.
  for (int blk = 0; blk < S.blocks; ++blk)
    for (int i = 0; i < S.m; ++i)
      for (int j = 0; j < S.n; ++j) store(w, I.op[0].reg + 2 * d_pair(i), d_lane(S, i, j, blk), d[blk][i][j]);
}

template <F64Shape S>
void add(IsaTable& t, std::string_view name) {
  t.add(name, mfma_f64<S>, ImmType::f64, 0, InstShape::mfma(S.m, S.n, S.k, S.blocks, MfmaType::f64));
}

}  // namespace

void register_mfma_f64(IsaTable& t) {
  // gfx942/gfx950 spelling first, then gfx90a's.
  add<F64Shape{16, 16, 4, 1}>(t, "v_mfma_f64_16x16x4_f64");
  add<F64Shape{16, 16, 4, 1}>(t, "v_mfma_f64_16x16x4f64");
  add<F64Shape{4, 4, 4, 4}>(t, "v_mfma_f64_4x4x4_4b_f64");
  add<F64Shape{4, 4, 4, 4}>(t, "v_mfma_f64_4x4x4f64");
}

}  // namespace vgpu
