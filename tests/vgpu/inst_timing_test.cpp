// The timing model's MFMA facts for gfx90a's forms against AMD's matrix instruction calculator (CDNA2 tables: cycles
// and FLOPs per instruction), and the same form's gfx942 spelling at gfx942's rate.
#include <gtest/gtest.h>

#include <string>

#include "timing/model.h"
#include "wave.h"

namespace vgpu {
namespace {

// An MFMA with D of `d_regs` registers, as the decoder leaves it.
InstTiming timing_of(Arch arch, const std::string& name, int d_regs) {
  Inst I;
  I.name = name.c_str();
  I.nops = 4;
  I.op[0].kind = OpKind::vgpr, I.op[0].width = uint8_t(d_regs);
  return inst_timing(arch, I);
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

}  // namespace
}  // namespace vgpu
