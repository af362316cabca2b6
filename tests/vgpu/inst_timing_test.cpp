// The timing model's MFMA facts for gfx90a's forms against AMD's matrix instruction calculator (CDNA2 tables: cycles
// and FLOPs per instruction), and the same form's gfx942 spelling at gfx942's rate; the shapes and widths the
// instruction table registers for the model, for instructions of each arch; and the registers the model counts for a
// kernel (its occupancy) being its own code's.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "isa/isa.h"
#include "program.h"
#include "vgpu/code_object.h"
#include "timing/model.h"
#include "wave.h"

namespace vgpu {
namespace {

// An instruction as the decoder binds it from the instruction table (its mnemonic, issue class, flags and shape).
Inst from_table(const std::string& name) {
  const OpInfo* op = isa_table().find(name);
  EXPECT_NE(op, nullptr) << name;
  Inst I;
  if (!op) return I;
  I.name = op->name.data(), I.issue = op->issue, I.op_flags = op->flags, I.shape = op->shape;
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

// The MFMA shapes and memory widths the table registers (from the executors' template arguments), and the passes,
// FLOPs and bytes per lane the model takes from them, for instructions each arch's compiled code contains.
TEST(InstTiming, ShapesAndWidthsComeFromTheTable) {
  struct Mfma {
    Arch arch;
    const char* name;
    InstShape shape;
    uint32_t passes;
    uint8_t cbsz_blgp = 0;
  };
  using enum MfmaType;
  const Mfma mfmas[] = {
      {Arch::gfx90a, "v_mfma_f32_32x32x8f16", InstShape::mfma(32, 32, 8, 1, f16), 16},
      {Arch::gfx90a, "v_mfma_f32_32x32x4bf16_1k", InstShape::mfma(32, 32, 4, 2, bf16), 16},
      {Arch::gfx90a, "v_mfma_f64_4x4x4f64", InstShape::mfma(4, 4, 4, 4, f64), 4},
      {Arch::gfx942, "v_mfma_f32_32x32x8_bf16", InstShape::mfma(32, 32, 8, 1, bf16), 8},
      {Arch::gfx942, "v_mfma_f32_16x16x32_fp8_bf8", InstShape::mfma(16, 16, 32, 1, fp8), 4},
      {Arch::gfx942, "v_mfma_f32_32x32x2_f32", InstShape::mfma(32, 32, 2, 1, f32), 16},
      {Arch::gfx942, "v_mfma_f32_16x16x8_xf32", InstShape::mfma(16, 16, 8, 1, xf32), 4},
      // The model's count for the multi-block fp32 forms (the base count; docs/vgpu-timing.md, 2026-12-04).
      {Arch::gfx942, "v_mfma_f32_32x32x1_2b_f32", InstShape::mfma(32, 32, 1, 2, f32), 8},
      {Arch::gfx942, "v_mfma_i32_32x32x4_2b_i8", InstShape::mfma(32, 32, 4, 2, i8), 8},
      {Arch::gfx942, "v_mfma_f64_16x16x4_f64", InstShape::mfma(16, 16, 4, 1, f64), 8},
      {Arch::gfx950, "v_mfma_f32_16x16x32_bf16", InstShape::mfma(16, 16, 32, 1, bf16), 4},
      {Arch::gfx950, "v_mfma_f64_16x16x4_f64", InstShape::mfma(16, 16, 4, 1, f64), 16},
      {Arch::gfx950, "v_mfma_f32_32x32x64_f8f6f4", InstShape::mfma(32, 32, 64, 1, f8f6f4), 16, 0},  // fp8 x fp8
      {Arch::gfx950, "v_mfma_f32_32x32x64_f8f6f4", InstShape::mfma(32, 32, 64, 1, f8f6f4), 8, 4},   // fp4 x fp4
      {Arch::gfx950, "v_mfma_scale_f32_16x16x128_f8f6f4", InstShape::mfma(16, 16, 128, 1, f8f6f4), 4, 2},  // fp6
  };
  for (const Mfma& r : mfmas) {
    Inst I = from_table(r.name);
    I.cbsz = I.blgp = r.cbsz_blgp;
    const InstShape& s = I.shape;
    EXPECT_EQ(int(I.issue), int(IssueKind::mfma)) << r.name;
    EXPECT_EQ(s.m, r.shape.m) << r.name;
    EXPECT_EQ(s.n, r.shape.n) << r.name;
    EXPECT_EQ(s.k, r.shape.k) << r.name;
    EXPECT_EQ(s.blocks, r.shape.blocks) << r.name;
    EXPECT_EQ(int(s.input), int(r.shape.input)) << r.name;
    const InstTiming t = inst_timing(r.arch, I, default_product(r.arch).timing);
    EXPECT_EQ(t.passes, r.passes) << r.name << " on arch " << int(r.arch);
    EXPECT_EQ(t.flops, 2.0 * r.shape.m * r.shape.n * r.shape.k * r.shape.blocks) << r.name;
  }
  // Both spellings of a form are one registration's facts.
  for (auto [a, b] : {std::pair{"v_mfma_f32_32x32x4_2b_bf16", "v_mfma_f32_32x32x4bf16_1k"},
                      {"v_mfma_f32_16x16x1_4b_f32", "v_mfma_f32_16x16x1f32"}, {"v_mfma_f64_4x4x4_4b_f64", "v_mfma_f64_4x4x4f64"}}) {
    const InstShape x = from_table(a).shape, y = from_table(b).shape;
    EXPECT_TRUE(x.m == y.m && x.n == y.n && x.k == y.k && x.blocks == y.blocks && x.input == y.input) << a << " " << b;
  }
  EXPECT_EQ(int(inst_timing(Arch::gfx950, from_table("v_mfma_f32_16x16x32_f16"), default_product(Arch::gfx950).timing)
                    .mfma_class),
            int(MfmaClass::f16));

  // Bytes per lane: the executor's width; read2/write2 both addresses'; an atomic its data type's.
  const std::pair<const char*, uint32_t> widths[] = {
      {"ds_read_b128", 16},         {"ds_read2_b64", 16},        {"ds_write2st64_b32", 8},
      {"ds_read_u8_d16", 1},        {"ds_write_b16", 2},         {"ds_add_rtn_f32", 4},
      {"ds_add_u64", 8},            {"ds_bpermute_b32", 4},      {"ds_read_b64_tr_b16", 8},
      {"buffer_load_dwordx4", 16},  {"buffer_load_dwordx2", 8},  {"buffer_store_short", 2},
      {"buffer_load_format_xy", 8}, {"buffer_atomic_pk_add_bf16", 4}, {"buffer_atomic_cmpswap_x2", 8},
      {"global_load_lds_dwordx4", 16}, {"global_store_dwordx3", 12}, {"global_atomic_add_f64", 8},
      {"scratch_load_ubyte", 1},
  };
  for (Arch arch : {Arch::gfx90a, Arch::gfx942, Arch::gfx950})
    for (auto [name, bytes] : widths)
      EXPECT_EQ(inst_timing(arch, from_table(name), default_product(arch).timing).bytes_per_lane, bytes) << name;
  // Every MFMA registers a shape and every vector memory and LDS access a width (ds_nop moves nothing).
  isa_table().for_each([](const OpInfo& o) {
    if (o.issue == IssueKind::mfma) EXPECT_GT(int(o.shape.m) * o.shape.n * o.shape.k * o.shape.blocks, 0) << o.name;
    if ((o.issue == IssueKind::vmem || o.issue == IssueKind::lds) && o.name != "ds_nop")
      EXPECT_GT(o.shape.lane_bytes, 0) << o.name;
  });
}

// A kernel whose last instruction branches back (loader_kernels.hip's ends_in_a_branch) is decoded up to its symbol's
// end: decoding on took the following kernels' code for its own, and their registers into its occupancy (hk's norm
// forward was modelled at 4 waves a SIMD for the 150 VGPRs of kernels after it; it has 94).
TEST(Decoder, KernelCodeEndsAtItsSymbol) {
  for (const char* arch : {"gfx90a", "gfx942", "gfx950"}) {
    SCOPED_TRACE(arch);
    std::ifstream in(std::string(VGPU_LOADER_TEST_DATA) + "/loader_kernels." + arch + ".co", std::ios::binary);
    const std::vector<uint8_t> elf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(elf.empty());
    const std::shared_ptr<const CodeObject> co = load_code_object(elf);
    const KernelInfo* k = co->find("ends_in_a_branch");
    ASSERT_NE(k, nullptr);
    ASSERT_GT(k->code_size, 0u);
    const std::shared_ptr<Program> prog = decode_kernel(*co, *k);
    int kernel_insts = 0;
    for (size_t i = 0; i < prog->insts.size() && prog->texts[prog->insts[i].text] != "<end of kernel code>"; ++i) {
      EXPECT_LT(uint64_t(prog->offsets[i]), k->code_size) << prog->texts[prog->insts[i].text];
      ++kernel_insts;
    }
    EXPECT_GE(kernel_insts, 3) << "s_branch, s_endpgm, v_mov_b32, s_branch";
    EXPECT_LT(prog->vgprs, 200u) << "wide_registers' v200 counted as this kernel's";
  }
}

}  // namespace
}  // namespace vgpu
