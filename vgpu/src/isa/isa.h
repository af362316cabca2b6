// The instruction table: mnemonic -> executing function. Each exec_*.cpp file registers one class of instructions,
// so adding an instruction is a local change next to its relatives.
#pragma once
#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "program.h"

namespace vgpu {

// How a constant written as a float in the disassembly becomes bits for this instruction's sources.
enum class ImmType : uint8_t { b32, f32, f16, bf16, f64, b64, pk16 };

// What the decoder must know about an instruction beyond how to run it, registered beside its mnemonic.
namespace op {
inline constexpr uint16_t
    vector_memory = 1u << 0,   // a load, store or atomic of the vector memory path: counted by vmcnt
    branch = 1u << 1,          // SOPP branch: the target is the next instruction + 4 * simm16
    encoded_simm16 = 1u << 2,  // simm16 is taken from the encoding (s_waitcnt: the text prints the counters by name)
    ends_program = 1u << 3,    // s_endpgm: a kernel's code ends at the first one past every branch target
    // Timing (timing/inst_timing.cpp):
    quarter_rate = 1u << 4,    // a transcendental VALU operation: a quarter of the VALU's rate (timing.md 4)
    waits_vmcnt = 1u << 5,     // s_waitcnt_vmcnt null, simm16: waits for vmcnt <= simm16
    waits_lgkmcnt = 1u << 6,   // s_waitcnt_lgkmcnt null, simm16: waits for lgkmcnt <= simm16
    waits_expcnt = 1u << 7,    // s_waitcnt_expcnt: export counts, none in compute code (no wait)
    atomic = 1u << 8;          // a vector memory atomic: a read-modify-write done beyond the L2 (TimingFacts::atomic_latency)
}  // namespace op

struct OpInfo {
  std::string_view name;
  ExecFn fn = nullptr;
  ImmType imm = ImmType::b32;
  uint16_t flags = 0;  // op::
  IssueKind issue = IssueKind::internal;  // the unit that issues it (timing model)
  InstShape shape;                        // its MFMA shape or memory width (timing model)
  bool is(uint16_t flag) const { return (flags & flag) != 0; }
};

class IsaTable {
 public:
  void add(std::string_view name, ExecFn fn, ImmType imm = ImmType::b32, uint16_t flags = 0, InstShape shape = {});
  void add(std::string_view name, ExecFn fn, uint16_t flags, InstShape shape = {}) {
    add(name, fn, ImmType::b32, flags, shape);
  }
  void add(std::string_view name, ExecFn fn, InstShape shape) { add(name, fn, ImmType::b32, 0, shape); }
  const OpInfo* find(std::string_view mnemonic) const;
  // Registrations from here on issue as `k`: isa_table.cpp sets each class file's class before calling it, and the
  // file marks its exceptions beside their registrations (mark throws for a mnemonic not registered).
  void set_issue(IssueKind k) { issue_ = k; }
  void mark(std::initializer_list<std::string_view> names, IssueKind k);
  void mark(std::initializer_list<std::string_view> names, uint16_t flags);
  size_t size() const { return ops_.size(); }
  template <class F> void for_each(F&& f) const { for (auto& [k, v] : ops_) f(v); }

 private:
  OpInfo& at(std::string_view mnemonic);
  std::unordered_map<std::string_view, OpInfo> ops_;
  IssueKind issue_ = IssueKind::internal;
};

const IsaTable& isa_table();

// One registration function per instruction class (exec_*.cpp).
void register_salu(IsaTable&);
void register_sopp(IsaTable&);
void register_smem(IsaTable&);
void register_valu(IsaTable&);
void register_vcmp(IsaTable&);
void register_vmem(IsaTable&);
void register_ds(IsaTable&);
void register_mfma(IsaTable&);    // matrix cores (exec_mfma.cpp)
void register_mfma_f64(IsaTable&);  // matrix cores in double precision (exec_mfma_f64.cpp)
// The fused-model MFMAs (bf16/f16/xf32/fp8) computed by the literal, slow reference model: what the fast path is
// tested against bit for bit (tests/vgpu/mfma_model_test.cpp). Not used for execution.
const IsaTable& mfma_reference_table();
// Elements where the vector f16/bf16 operand decoders of the fused MFMA forms (four at a time; eight at a time in the
// AVX2 gather, where the CPU has AVX2) differ from the scalar one, over all 65536 codes of each.
int mfma_decode_mismatches();
// The instruction sets the fused MFMA arithmetic is compiled for (the same results bit for bit). The widest the CPU
// has is used unless HK_VGPU_MFMA_SIMD=sse4.1|avx2|avx512 or set_mfma_simd picks another (tests run each in turn).
enum class MfmaSimd : uint8_t { sse41, avx2, avx512 };
const char* mfma_simd_name(MfmaSimd s);
std::vector<MfmaSimd> mfma_simd_supported();  // by this CPU, narrowest first
MfmaSimd mfma_simd();
void set_mfma_simd(MfmaSimd s);  // must be one this CPU supports
void register_mubuf(IsaTable&);   // buffer memory and LDS DMA (exec_mubuf.cpp)
void register_cvt(IsaTable&);     // bf16/fp8 conversions (exec_cvt.cpp)
void register_vop3p(IsaTable&);   // packed 16-bit math (exec_vop3p.cpp)
void register_xlane(IsaTable&);   // permlane swaps, transposing LDS reads (exec_xlane.cpp)

// The function bound to instructions the table lacks: raises FaultKind::unknown_instruction.
void exec_unknown(Wave& w, const Inst& I);
// A vector memory instruction (the decoder puts it in front of Inst::vmem_fn): counts it for vmcnt, then runs it.
void exec_vmem_counted(Wave& w, const Inst& I);
// A VALU instruction the decoder found between s_set_gpr_idx_on and s_set_gpr_idx_off (in front of Inst::indexed_fn):
// while indexing is on, runs it with the VGPR operands M0[15:12] selects offset by M0[7:0].
void exec_gpr_indexed(Wave& w, const Inst& I);

}  // namespace vgpu
