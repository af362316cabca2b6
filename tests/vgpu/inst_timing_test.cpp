// The timing model's MFMA facts for gfx90a's forms against AMD's matrix instruction calculator (CDNA2 tables: cycles
// and FLOPs per instruction), and the same form's gfx942 spelling at gfx942's rate.
#include <gtest/gtest.h>

#include <string>

#include "isa/isa.h"
#include "timing/model.h"
#include "wave.h"

namespace vgpu {
namespace {

// An instruction as the decoder binds it from the instruction table (its mnemonic, issue class and flags).
Inst from_table(const std::string& name) {
  const OpInfo* op = isa_table().find(name);
  EXPECT_NE(op, nullptr) << name;
  Inst I;
  if (!op) return I;
  I.name = op->name.data(), I.issue = op->issue, I.op_flags = op->flags;
  return I;
}

// An MFMA with D of `d_regs` registers, as the decoder leaves it.
InstTiming timing_of(Arch arch, const std::string& name, int d_regs) {
  Inst I = from_table(name);
  I.nops = 4;
  I.op[0].kind = OpKind::vgpr, I.op[0].width = uint8_t(d_regs);
  return inst_timing(arch, I, default_product(arch).timing);
}

TEST(InstTiming, Gfx90aMfmaCyclesAndFlopsAreTheCalculators) {
  struct Row {
    const char* name;
    int d_regs, cycles;
    double flops;
  };
  const Row rows[] = {
      {"v_mfma_f32_32x32x1f32", 32, 64, 4096},   {"v_mfma_f32_16x16x4f32", 4, 32, 2048},
      {"v_mfma_f32_32x32x8f16", 16, 64, 16384},  {"v_mfma_f32_4x4x4f16", 4, 8, 2048},
      {"v_mfma_f32_32x32x4bf16_1k", 32, 64, 16384}, {"v_mfma_f32_16x16x16bf16_1k", 4, 32, 8192},
      {"v_mfma_f32_32x32x2bf16", 32, 64, 8192},  {"v_mfma_f32_16x16x8bf16", 4, 32, 4096},
      {"v_mfma_i32_32x32x8i8", 16, 64, 16384},   {"v_mfma_i32_16x16x16i8", 4, 32, 8192},
      {"v_mfma_f64_16x16x4f64", 8, 32, 2048},    {"v_mfma_f64_4x4x4f64", 2, 16, 512},
      {"v_mfma_f32_4x4x1f32", 4, 8, 512},        {"v_mfma_i32_4x4x4i8", 4, 8, 2048},
      {"v_mfma_f32_16x16x1f32", 16, 32, 2048},
  };
  for (const Row& r : rows) {
    const InstTiming t = timing_of(Arch::gfx90a, r.name, r.d_regs);
    EXPECT_EQ(t.passes * 4, uint32_t(r.cycles)) << r.name;
    EXPECT_EQ(t.flops, r.flops) << r.name;
  }
  // gfx942 doubles the 16-bit rate: its 32x32x8 f16 takes 32 cycles (timing.md section 3).
  EXPECT_EQ(timing_of(Arch::gfx942, "v_mfma_f32_32x32x8_f16", 16).passes * 4, 32u);
}

// Each instruction's issue class is the instruction table's, registered beside its mnemonic; the s_waitcnt forms the
// executor honours are waits on their counter.
TEST(InstTiming, IssueClassesComeFromTheTable) {
  const TimingFacts& f = default_product(Arch::gfx950).timing;
  auto kind = [&](const char* name) { return inst_timing(Arch::gfx950, from_table(name), f).kind; };
  const std::pair<const char*, IssueKind> rows[] = {
      {"v_add_f32", IssueKind::valu},         {"v_accvgpr_read_b32", IssueKind::valu},
      {"v_permlane32_swap_b32", IssueKind::valu}, {"v_mfma_f32_16x16x32_bf16", IssueKind::mfma},
      {"v_mfma_f64_16x16x4_f64", IssueKind::mfma}, {"s_add_u32", IssueKind::salu},
      {"s_load_dwordx4", IssueKind::smem},    {"s_memtime", IssueKind::smem},
      {"s_dcache_wb", IssueKind::smem},       {"global_load_dwordx4", IssueKind::vmem},
      {"buffer_load_dword", IssueKind::vmem}, {"ds_read_b128", IssueKind::lds},
      {"ds_read_b64_tr_b16", IssueKind::lds}, {"s_cbranch_scc1", IssueKind::branch},
      {"s_setpc_b64", IssueKind::branch},     {"s_sendmsg", IssueKind::branch},
      {"s_waitcnt", IssueKind::waitcnt},      {"s_waitcnt_vmcnt", IssueKind::waitcnt},
      {"s_waitcnt_lgkmcnt", IssueKind::waitcnt}, {"s_barrier", IssueKind::barrier},
      {"s_nop", IssueKind::nop},              {"s_sleep", IssueKind::sleep},
      {"s_setprio", IssueKind::setprio},      {"s_endpgm", IssueKind::end},
      {"buffer_wbl2", IssueKind::internal},
  };
  for (auto [name, k] : rows) EXPECT_EQ(int(kind(name)), int(k)) << name;
  EXPECT_EQ(inst_timing(Arch::gfx950, from_table("v_exp_f32"), f).valu_cycles, f.transcendental_cycles);
  EXPECT_EQ(inst_timing(Arch::gfx950, from_table("v_fma_f32"), f).valu_cycles, f.valu_cycles);
  // s_waitcnt vmcnt(2) lgkmcnt(1) (gfx9: vmcnt [3:0], [15:14]; lgkmcnt [11:8]); the single-counter forms.
  Inst w = from_table("s_waitcnt");
  w.simm = 0x0172;
  InstTiming t = inst_timing(Arch::gfx950, w, f);
  EXPECT_EQ(t.vmcnt, 2);
  EXPECT_EQ(t.lgkmcnt, 1);
  Inst vm = from_table("s_waitcnt_vmcnt");
  vm.simm = 3;
  t = inst_timing(Arch::gfx950, vm, f);
  EXPECT_EQ(t.vmcnt, 3);
  EXPECT_EQ(t.lgkmcnt, InstTiming::kNoWait);
  Inst lgkm = from_table("s_waitcnt_lgkmcnt");
  lgkm.simm = 0;
  t = inst_timing(Arch::gfx950, lgkm, f);
  EXPECT_EQ(t.vmcnt, InstTiming::kNoWait);
  EXPECT_EQ(t.lgkmcnt, 0);
}

}  // namespace
}  // namespace vgpu
