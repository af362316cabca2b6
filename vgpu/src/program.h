// A kernel decoded once into a flat array of instructions, each bound to the function that executes it.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vgpu/arch.h"
#include "vgpu/code_object.h"

namespace vgpu {

struct Wave;
struct Inst;

// What unit issues an instruction, for the timing model (timing/model.h): registered beside each mnemonic in the
// instruction table (isa/isa.h), copied to Inst::issue by the decoder.
enum class IssueKind : uint8_t { valu, mfma, salu, smem, vmem, lds, branch, waitcnt, barrier, nop, sleep, setprio, end,
                                 internal };
using ExecFn = void (*)(Wave&, const Inst&);

// The element types of an MFMA's A and B operands, as the matrix-core executors read them (isa/exec_mfma.cpp,
// exec_mfma_f64.cpp): fp8/bf8 in the arch's flavour; f8f6f4 takes its formats from cbsz (A) and blgp (B).
enum class MfmaType : uint8_t { f32, xf32, f16, bf16, fp8, bf8, i8, f8f6f4, f64 };

// What the timing model reads of an instruction beyond its unit, registered beside its mnemonic from the same
// template arguments that make its executor (isa/exec_*.cpp) and copied to Inst::shape by the decoder.
struct InstShape {
  uint8_t m = 0, n = 0, k = 0, blocks = 0;  // MFMA: one block's M x N x K, and the blocks
  MfmaType input = MfmaType::f32;           // MFMA: A's element type
  uint8_t lane_bytes = 0;  // memory and LDS access: bytes each lane moves (both of read2/write2's; an atomic's data)
  static constexpr InstShape mfma(int m, int n, int k, int blocks, MfmaType a) {
    return {uint8_t(m), uint8_t(n), uint8_t(k), uint8_t(blocks), a, 0};
  }
  static constexpr InstShape lanes(size_t bytes) { return {.lane_bytes = uint8_t(bytes)}; }
};

enum class OpKind : uint8_t {
  none,
  sgpr,      // scalar register file in hardware encoding: s0-s105, vcc 106-107, ttmp 108-123, m0 124, exec 126-127
  vgpr,      // unified vector register file: v0.. and the AGPRs after accum_offset
  imm,       // inline constant or literal, already in the operand type's bits
  scc,       // src_scc
  vccz,      // src_vccz
  execz,     // src_execz
  off,       // "off": no address register
  aperture,  // src_{shared,private}_{base,limit}: reg holds which one
};

// Scalar register indices in the hardware encoding, which is also the layout of Wave::s.
namespace sreg {
inline constexpr uint16_t vcc = 106, flat_scratch = 102, xnack_mask = 104, ttmp0 = 108, m0 = 124, exec = 126;
inline constexpr uint16_t count = 128;
}  // namespace sreg

struct Operand {
  OpKind kind = OpKind::none;
  uint8_t width = 1;   // dwords the register tuple spans
  bool neg = false, abs = false, sext = false;
  uint16_t reg = 0;
  uint64_t imm = 0;
  bool is_reg() const { return kind == OpKind::sgpr || kind == OpKind::vgpr; }
};

// Instruction modifier flags.
namespace mod {
inline constexpr uint32_t offen = 1u << 0, idxen = 1u << 1, glc = 1u << 2, slc = 1u << 3, nt = 1u << 4,
                          lds = 1u << 5, clamp = 1u << 6, gds = 1u << 7, sc0 = 1u << 8, sc1 = 1u << 9,
                          addr64 = 1u << 10, bound_ctrl = 1u << 11, dpp = 1u << 12, sdwa = 1u << 13,
                          vop3 = 1u << 14, op_sel_hi_given = 1u << 15,
                          // Set by the decoder: no DPP, SDWA, abs/neg on an operand, omod or clamp. A VALU operation
                          // may then read its 32-bit sources in place and write its result unchanged (ops.h).
                          plain = 1u << 16;
}

struct Inst {
  ExecFn fn = nullptr;
  ExecFn vmem_fn = nullptr; // a vector memory instruction's own function: fn counts it for vmcnt, then calls this
  ExecFn indexed_fn = nullptr;  // a VALU instruction between s_set_gpr_idx_on and _off: its own function, which fn
                                // calls with the operands M0 indexes (exec_gpr_indexed)
  uint8_t nops = 0;         // operands in assembler order (destinations first)
  Operand op[7];
  uint32_t flags = 0;       // mod::
  int32_t offset = 0;       // memory offset, or DS offset0
  int32_t offset1 = 0;      // DS offset1
  uint8_t omod = 0;         // 0 none, 1 mul:2, 2 mul:4, 3 div:2
  uint8_t op_sel = 0, op_sel_hi = 0xff, neg_lo = 0, neg_hi = 0;  // VOP3/VOP3P bit per operand (op_sel_hi defaults to all ones)
  uint8_t cbsz = 0, abid = 0, blgp = 0;
  uint16_t dpp_ctrl = 0;    // hardware DPP_CTRL encoding
  uint8_t row_mask = 0xf, bank_mask = 0xf;
  uint8_t dst_sel = 6, dst_unused = 0, src0_sel = 6, src1_sel = 6;  // SDWA; 6 = DWORD
  uint32_t simm = 0;        // SOPP/SOPK immediate
  int32_t target = -1;      // branch target as an instruction index
  int32_t pc = 0;           // byte offset from the kernel entry (negative in a device function placed before it)
  uint32_t size = 0;        // bytes
  uint32_t text = 0;        // index into Program::texts
  const char* name = "";    // mnemonic (points into the instruction table)
  IssueKind issue = IssueKind::internal;  // the table's issue class (unknown instructions: internal)
  uint16_t op_flags = 0;    // the table's op:: flags (isa/isa.h)
  InstShape shape;          // the table's MFMA shape or memory width
};

struct Program {
  std::string kernel;
  Arch arch{};
  KernelInfo info;
  uint32_t vgprs = 0;               // unified registers the wave needs (highest used + 1)
  std::vector<Inst> insts;
  std::vector<int64_t> offsets;     // byte offset from the kernel entry of each instruction (the kernel's, then callees')
  std::vector<std::pair<int64_t, int>> by_offset;  // (offset, instruction index), ascending
  std::vector<std::string> texts;   // disassembly of each instruction
  int index_of(int64_t byte_offset) const;  // -1 if no instruction starts there
  mutable std::atomic<uint32_t> defects_warned{0};  // HardwareDefect bits already reported for this kernel
};

// Hardware defects vgpu models as the hardware behaves, reported once per kernel when a kernel meets one.
enum class HardwareDefect : uint32_t {
  constant_mfma_scale = 1,  // v_mfma_scale_*: an SGPR or inline-constant scale is read from bits 30:23
  // Not a defect but hardware behaviour a kernel may rely on, reported the same way: a DS read past the workgroup's
  // LDS allocation returns 0 (the LDS range check discards it) instead of faulting.
  lds_read_out_of_range = 2,
  // Likewise: a global read that runs past the end of an allocation but stays inside its last page reads what is
  // mapped there (vgpu: 0) instead of faulting.
  global_read_past_allocation = 4,
};

// Decodes the kernel at `info.entry` of `co` with LLVM's MC disassembler. Never fails on unknown instructions: they
// are bound to a function that raises a fault when executed.
std::shared_ptr<Program> decode_kernel(const CodeObject& co, const KernelInfo& info);

}  // namespace vgpu
