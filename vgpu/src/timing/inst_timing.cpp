// The timing facts of one instruction, all as the instruction table registers them beside its mnemonic: the unit
// that issues it (Inst::issue), op::quarter_rate, the s_waitcnt forms' counters, an MFMA's shape and input type and a
// memory access's bytes per lane (Inst::shape, from the template arguments of the executor that runs it). The pass
// counts follow LLVM's scheduling model and the ISA guides as timing.md section 3 tabulates them: 4 passes (16 cycles)
// for 16x16 shapes, 8 for 32x32, 2 for 4x4; single-block fp32-input shapes twice that; f64 16x16x4 8 passes on gfx942
// and 16 on gfx950; gfx950's f8f6f4 shapes twice the base when A or B is fp8/bf8. gfx90a (CDNA2, half gfx942's 16-
// and 8-bit matrix rate per CU) follows the cycle counts of AMD's matrix instruction calculator for CDNA2: 32x32 forms
// 64 cycles, 16x16 32, 4x4 8 whatever the input type; f64 as gfx942.
#include <algorithm>

#include "isa/isa.h"
#include "timing/model.h"

namespace vgpu {
namespace {

void mfma_timing(Arch arch, const Inst& I, InstTiming& t) {
  const InstShape& s = I.shape;
  t.flops = 2.0 * s.m * s.n * s.k * s.blocks;
  t.passes = s.m >= 32 ? 8 : s.m >= 16 ? 4 : 2;
  const bool f64 = s.input == MfmaType::f64;
  if (arch == Arch::gfx90a) {
    if (f64 || s.m >= 16) t.passes *= 2;  // the calculator's CDNA2 cycles: 4x4 forms as gfx942's, the others twice
  } else {
    // The multi-block fp32 forms (32x32x1_2b, 16x16x1_4b, 4x4x1_16b) keep the base count, as the model has had them
    // (docs/vgpu-timing.md, log of 2026-12-04: a public CDNA3 table lists more).
    if (s.input == MfmaType::f32 && s.blocks == 1) t.passes *= 2;
    if (f64) t.passes *= arch == Arch::gfx950 ? 4 : 2;  // 16x16x4: 32 cycles on gfx942, 64 on gfx950 (timing.md 3)
  }
  if (s.input == MfmaType::f8f6f4 && (I.cbsz <= 1 || I.blgp <= 1)) t.passes *= 2;
  switch (s.input) {
    case MfmaType::f16: t.mfma_class = MfmaClass::f16; break;
    case MfmaType::bf16: t.mfma_class = MfmaClass::bf16; break;
    case MfmaType::fp8: case MfmaType::bf8: case MfmaType::f8f6f4:
    case MfmaType::i8: t.mfma_class = MfmaClass::fp8; break;
    default: t.mfma_class = MfmaClass::other; break;
  }
}

}  // namespace

InstTiming inst_timing(Arch arch, const Inst& I, const TimingFacts& f) {
  InstTiming t;
  t.kind = I.issue;  // the instruction table's class, registered beside the mnemonic (isa/isa_table.cpp)
  switch (t.kind) {
    case IssueKind::mfma: mfma_timing(arch, I, t); break;
    case IssueKind::valu: t.valu_cycles = (I.op_flags & op::quarter_rate) ? f.transcendental_cycles : f.valu_cycles; break;
    case IssueKind::lds: t.bytes_per_lane = I.shape.lane_bytes; break;
    case IssueKind::vmem: t.bytes_per_lane = I.shape.lane_bytes, t.atomic = (I.op_flags & op::atomic) != 0; break;
    case IssueKind::waitcnt:
      // The counts each form waits for (no wait on a counter: kNoWait). s_waitcnt, gfx9 encoding: vmcnt [3:0] and
      // [15:14], lgkmcnt [11:8]; s_waitcnt_vmcnt / s_waitcnt_lgkmcnt null, simm16: the count is simm16 (the SGPR, null
      // in compiled code, is not modelled, as the executor does not).
      if (I.op_flags & op::waits_vmcnt) t.vmcnt = uint8_t(std::min<uint32_t>(I.simm & 0xffff, InstTiming::kNoWait));
      else if (I.op_flags & op::waits_lgkmcnt) t.lgkmcnt = uint8_t(std::min<uint32_t>(I.simm & 0xffff, InstTiming::kNoWait));
      else if (!(I.op_flags & op::waits_expcnt))
        t.vmcnt = uint8_t((I.simm & 0xf) | ((I.simm >> 14) & 3) << 4), t.lgkmcnt = uint8_t((I.simm >> 8) & 0xf);
      break;
    default: break;
  }
  return t;
}

}  // namespace vgpu
