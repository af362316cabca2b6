// Scalar ALU: SOP1, SOP2, SOPC and SOPK. Each operation is a lambda over its operands and SCC.
#include <bit>

#include "isa/isa.h"
#include "isa/ops.h"

namespace vgpu {
namespace {

template <class T>
T sread(const Wave& w, const Operand& o) {
  if constexpr (sizeof(T) == 8) return T(read_s64(w, o));
  else return T(read_s32(w, o));
}
template <class T>
void swrite(Wave& w, const Operand& o, T x) {
  if constexpr (sizeof(T) == 8) write_s64(w, o, uint64_t(x));
  else write_s32(w, o, uint32_t(x));
}

// A scalar operation F(args..., bool& scc): the destination (if F returns a value) is operand 0.
template <auto F>
void sop(Wave& w, const Inst& I) {
  using Tr = traits_of<F>;
  using R = typename Tr::ret;
  constexpr int first = std::is_void_v<R> ? 0 : 1;
  [&]<size_t... Is>(std::index_sequence<Is...>) {
    bool scc = w.scc;
    if constexpr (std::is_void_v<R>) {
      F(sread<std::tuple_element_t<Is, typename Tr::args>>(w, I.op[first + int(Is)])..., scc);
    } else {
      R r = F(sread<std::tuple_element_t<Is, typename Tr::args>>(w, I.op[first + int(Is)])..., scc);
      swrite(w, I.op[0], r);
    }
    w.scc = scc;
  }(std::make_index_sequence<Tr::arity - 1>{});
}

// s_*_saveexec_b64: D = EXEC; EXEC = F(S0, EXEC); SCC = EXEC != 0.
template <auto F>
void saveexec(Wave& w, const Inst& I) {
  uint64_t old = w.exec(), s0 = read_s64(w, I.op[1]);
  uint64_t e = F(s0, old);
  write_s64(w, I.op[0], old);
  w.set_exec(e);
  w.scc = e != 0;
}

using u32 = uint32_t;
using i32 = int32_t;
using u64 = uint64_t;
using i64 = int64_t;

template <class T>
T bfe(T x, u32 spec, bool sign) {  // offset in bits [5:0], width in [22:16]
  constexpr u32 bits = sizeof(T) * 8;
  u32 off = spec & (bits - 1), width = (spec >> 16) & 0x7f;
  if (width == 0) return 0;
  if (width > bits - off) width = bits - off;  // hardware clamps the field at the top of the value
  using U = std::make_unsigned_t<T>;
  U v = U(x) >> off;
  if (width < bits) {
    U mask = (U(1) << width) - 1;
    v &= mask;
    if (sign && (v >> (width - 1) & 1)) v |= ~mask;
  }
  return T(v);
}

void s_getpc(Wave& w, const Inst& I) {
  // The device address of the next instruction in the loaded image: PC-relative addressing of globals reaches them.
  write_s64(w, I.op[0], w.ctx->code_base + int64_t(I.pc) + I.size);
}

void s_setpc_or_swap(Wave& w, const Inst& I, const Operand& target_op) {
  uint64_t target = read_s64(w, target_op);
  const uint64_t base = w.ctx->code_base;
  const int idx = w.ctx->prog->index_of(int64_t(target - base));
  if (idx < 0) {
    w.fault(I, FaultKind::unknown_instruction, -1, "jump to an address that starts no instruction of the kernel or its device functions");
    return;
  }
  w.pc = idx;
}

void s_setpc(Wave& w, const Inst& I) { s_setpc_or_swap(w, I, I.op[0]); }
void s_swappc(Wave& w, const Inst& I) {
  Operand target = I.op[1];
  uint64_t t = read_s64(w, target);
  write_s64(w, I.op[0], w.ctx->code_base + int64_t(I.pc) + I.size);
  Operand lit;
  lit.kind = OpKind::imm, lit.imm = t;
  s_setpc_or_swap(w, I, lit);
}
void s_call(Wave& w, const Inst& I) { exec_unknown(w, I); }

// VGPR indexing (CDNA3/CDNA4 ISA, S_SET_GPR_IDX_ON/OFF/IDX/MODE): M0[7:0] is the index and M0[15:12] the operands it
// applies to (bit 0 src0, 1 src1, 2 src2, 3 dst); while MODE.gpr_idx_en is set, each VALU instruction's selected VGPR
// operands are offset by the index (exec_gpr_indexed). LLVM uses it at -O0 for a vector element read or written at
// a dynamic index: s_set_gpr_idx_on s2, gpr_idx(SRC0); v_mov_b32 v0, v0; s_set_gpr_idx_off.
// The mode mask: gpr_idx(...) as printed (decoded into simm), or a plain number.
uint32_t gpr_idx_mask(const Inst& I, int k) {
  return (I.nops > k && I.op[k].kind == OpKind::imm ? uint32_t(I.op[k].imm) : I.simm) & 0xf;
}
void s_set_gpr_idx_on(Wave& w, const Inst& I) {
  w.s[sreg::m0] = (w.s[sreg::m0] & ~0xf0ffu) | (read_s32(w, I.op[0]) & 0xff) | gpr_idx_mask(I, 1) << 12;
  w.gpr_idx_on = true;
}
void s_set_gpr_idx_off(Wave& w, const Inst&) { w.gpr_idx_on = false; }
void s_set_gpr_idx_idx(Wave& w, const Inst& I) {
  w.s[sreg::m0] = (w.s[sreg::m0] & ~0xffu) | (read_s32(w, I.op[0]) & 0xff);
}
void s_set_gpr_idx_mode(Wave& w, const Inst& I) {
  w.s[sreg::m0] = (w.s[sreg::m0] & ~0xf000u) | gpr_idx_mask(I, 0) << 12;
}

// Where a wave runs, as hardware would place it: workgroups go to the XCDs round-robin and to the CUs of an XCD in
// turn; a CU's waves fill its four SIMDs in turn. HW_ID (register 4): wave slot 3:0, SIMD 5:4, CU 11:8, shader engine
// 14:13 (four per XCD); XCC_ID (register 20): the XCD in 3:0.
uint32_t hardware_register(const Wave& w, uint32_t reg) {
  constexpr uint32_t kHwId = 4, kXccId = 20;
  const ProductInfo& product = *w.ctx->product;
  const uint64_t group = w.wg->linear;
  const uint32_t xcd = uint32_t(group % product.xcds);
  const uint32_t cu = uint32_t(group / product.xcds % (product.compute_units / product.xcds));
  const uint32_t simds = w.ctx->arch->simds_per_cu;
  if (reg == kXccId) return xcd;
  if (reg != kHwId) return 0;
  const uint32_t slot = uint32_t(w.id) / simds, simd = uint32_t(w.id) % simds;
  const uint32_t engine = cu % 4, unit = cu / 4;  // at most 10 CUs per engine: shader array 0 holds them all
  return (slot & 0xf) | simd << 4 | (unit & 0xf) << 8 | engine << 13;
}

}  // namespace

void register_salu(IsaTable& t) {
  // SOP2
  t.add("s_add_u32", sop<[](u32 a, u32 b, bool& c) { u64 r = u64(a) + b; c = r >> 32; return u32(r); }>);
  t.add("s_sub_u32", sop<[](u32 a, u32 b, bool& c) { c = b > a; return a - b; }>);
  t.add("s_add_i32", sop<[](u32 a, u32 b, bool& c) { u32 r = a + b; c = ((~(a ^ b) & (a ^ r)) >> 31); return r; }>);
  t.add("s_sub_i32", sop<[](u32 a, u32 b, bool& c) { u32 r = a - b; c = (((a ^ b) & (a ^ r)) >> 31); return r; }>);
  t.add("s_addc_u32", sop<[](u32 a, u32 b, bool& c) { u64 r = u64(a) + b + c; c = r >> 32; return u32(r); }>);
  t.add("s_subb_u32", sop<[](u32 a, u32 b, bool& c) { u64 s = u64(b) + c; c = s > a; return u32(a - s); }>);
  t.add("s_min_i32", sop<[](i32 a, i32 b, bool& c) { c = a < b; return c ? a : b; }>);
  t.add("s_min_u32", sop<[](u32 a, u32 b, bool& c) { c = a < b; return c ? a : b; }>);
  t.add("s_max_i32", sop<[](i32 a, i32 b, bool& c) { c = a > b; return c ? a : b; }>);
  t.add("s_max_u32", sop<[](u32 a, u32 b, bool& c) { c = a > b; return c ? a : b; }>);
  t.add("s_cselect_b32", sop<[](u32 a, u32 b, bool& c) { return c ? a : b; }>);
  t.add("s_cselect_b64", sop<[](u64 a, u64 b, bool& c) { return c ? a : b; }>);
#define HK_LOGIC(name, expr)                                                                   \
  t.add("s_" name "_b32", sop<[](u32 a, u32 b, bool& c) { u32 r = (expr); c = r != 0; return r; }>); \
  t.add("s_" name "_b64", sop<[](u64 a, u64 b, bool& c) { u64 r = (expr); c = r != 0; return r; }>);
  HK_LOGIC("and", a & b)
  HK_LOGIC("or", a | b)
  HK_LOGIC("xor", a ^ b)
  HK_LOGIC("andn2", a & ~b)
  HK_LOGIC("orn2", a | ~b)
  HK_LOGIC("nand", ~(a & b))
  HK_LOGIC("nor", ~(a | b))
  HK_LOGIC("xnor", ~(a ^ b))
#undef HK_LOGIC
  t.add("s_lshl_b32", sop<[](u32 a, u32 b, bool& c) { u32 r = a << (b & 31); c = r != 0; return r; }>);
  t.add("s_lshl_b64", sop<[](u64 a, u32 b, bool& c) { u64 r = a << (b & 63); c = r != 0; return r; }>);
  t.add("s_lshr_b32", sop<[](u32 a, u32 b, bool& c) { u32 r = a >> (b & 31); c = r != 0; return r; }>);
  t.add("s_lshr_b64", sop<[](u64 a, u32 b, bool& c) { u64 r = a >> (b & 63); c = r != 0; return r; }>);
  t.add("s_ashr_i32", sop<[](i32 a, u32 b, bool& c) { i32 r = a >> (b & 31); c = r != 0; return r; }>);
  t.add("s_ashr_i64", sop<[](i64 a, u32 b, bool& c) { i64 r = a >> (b & 63); c = r != 0; return r; }>);
  t.add("s_bfm_b32", sop<[](u32 a, u32 b, bool&) { return ((a & 31) == 0 ? 0u : ((1u << (a & 31)) - 1)) << (b & 31); }>);
  t.add("s_bfm_b64", sop<[](u32 a, u32 b, bool&) { return ((a & 63) == 0 ? u64(0) : ((u64(1) << (a & 63)) - 1)) << (b & 63); }>);
  t.add("s_mul_i32", sop<[](u32 a, u32 b, bool&) { return a * b; }>);
  t.add("s_mul_hi_u32", sop<[](u32 a, u32 b, bool&) { return u32((u64(a) * b) >> 32); }>);
  t.add("s_mul_hi_i32", sop<[](i32 a, i32 b, bool&) { return i32((i64(a) * b) >> 32); }>);
  t.add("s_bfe_u32", sop<[](u32 a, u32 b, bool& c) { u32 r = bfe<u32>(a, b, false); c = r != 0; return r; }>);
  t.add("s_bfe_i32", sop<[](i32 a, u32 b, bool& c) { i32 r = bfe<i32>(a, b, true); c = r != 0; return r; }>);
  t.add("s_bfe_u64", sop<[](u64 a, u32 b, bool& c) { u64 r = bfe<u64>(a, b, false); c = r != 0; return r; }>);
  t.add("s_bfe_i64", sop<[](i64 a, u32 b, bool& c) { i64 r = bfe<i64>(a, b, true); c = r != 0; return r; }>);
  t.add("s_absdiff_i32", sop<[](i32 a, i32 b, bool& c) { i32 r = a > b ? a - b : b - a; c = r != 0; return r; }>);
  t.add("s_lshl1_add_u32", sop<[](u32 a, u32 b, bool& c) { u64 r = (u64(a) << 1) + b; c = r >> 32; return u32(r); }>);
  t.add("s_lshl2_add_u32", sop<[](u32 a, u32 b, bool& c) { u64 r = (u64(a) << 2) + b; c = r >> 32; return u32(r); }>);
  t.add("s_lshl3_add_u32", sop<[](u32 a, u32 b, bool& c) { u64 r = (u64(a) << 3) + b; c = r >> 32; return u32(r); }>);
  t.add("s_lshl4_add_u32", sop<[](u32 a, u32 b, bool& c) { u64 r = (u64(a) << 4) + b; c = r >> 32; return u32(r); }>);
  t.add("s_pack_ll_b32_b16", sop<[](u32 a, u32 b, bool&) { return (a & 0xffff) | b << 16; }>);
  t.add("s_pack_lh_b32_b16", sop<[](u32 a, u32 b, bool&) { return (a & 0xffff) | (b & 0xffff0000u); }>);
  t.add("s_pack_hh_b32_b16", sop<[](u32 a, u32 b, bool&) { return a >> 16 | (b & 0xffff0000u); }>);

  // SOP1
  t.add("s_mov_b32", sop<[](u32 a, bool&) { return a; }>);
  t.add("s_mov_b64", sop<[](u64 a, bool&) { return a; }>, ImmType::b64);
  t.add("s_cmov_b32", [](Wave& w, const Inst& I) { if (w.scc) write_s32(w, I.op[0], read_s32(w, I.op[1])); });
  t.add("s_cmov_b64", [](Wave& w, const Inst& I) { if (w.scc) write_s64(w, I.op[0], read_s64(w, I.op[1])); }, ImmType::b64);
  t.add("s_not_b32", sop<[](u32 a, bool& c) { u32 r = ~a; c = r != 0; return r; }>);
  t.add("s_not_b64", sop<[](u64 a, bool& c) { u64 r = ~a; c = r != 0; return r; }>);
  t.add("s_brev_b32", sop<[](u32 a, bool&) { u32 r = 0; for (int i = 0; i < 32; ++i) r |= (a >> i & 1) << (31 - i); return r; }>);
  t.add("s_brev_b64", sop<[](u64 a, bool&) { u64 r = 0; for (int i = 0; i < 64; ++i) r |= (a >> i & 1) << (63 - i); return r; }>);
  t.add("s_bcnt0_i32_b32", sop<[](u32 a, bool& c) { u32 r = 32 - std::popcount(a); c = r != 0; return r; }>);
  t.add("s_bcnt0_i32_b64", sop<[](u64 a, bool& c) { u32 r = 64 - std::popcount(a); c = r != 0; return r; }>);
  t.add("s_bcnt1_i32_b32", sop<[](u32 a, bool& c) { u32 r = std::popcount(a); c = r != 0; return r; }>);
  t.add("s_bcnt1_i32_b64", sop<[](u64 a, bool& c) { u32 r = std::popcount(a); c = r != 0; return r; }>);
  t.add("s_ff0_i32_b32", sop<[](u32 a, bool&) { return a == ~0u ? -1 : std::countr_one(a); }>);
  t.add("s_ff0_i32_b64", sop<[](u64 a, bool&) { return a == ~u64(0) ? -1 : std::countr_one(a); }>);
  t.add("s_ff1_i32_b32", sop<[](u32 a, bool&) { return a == 0 ? -1 : std::countr_zero(a); }>);
  t.add("s_ff1_i32_b64", sop<[](u64 a, bool&) { return a == 0 ? -1 : std::countr_zero(a); }>);
  t.add("s_flbit_i32_b32", sop<[](u32 a, bool&) { return a == 0 ? -1 : std::countl_zero(a); }>);
  t.add("s_flbit_i32_b64", sop<[](u64 a, bool&) { return a == 0 ? -1 : std::countl_zero(a); }>);
  t.add("s_flbit_i32", sop<[](i32 a, bool&) { u32 x = u32(a < 0 ? ~a : a); return x == 0 ? -1 : std::countl_zero(x); }>);
  t.add("s_flbit_i32_i64", sop<[](i64 a, bool&) { u64 x = u64(a < 0 ? ~a : a); return x == 0 ? -1 : std::countl_zero(x); }>);
  t.add("s_sext_i32_i8", sop<[](u32 a, bool&) { return i32(int8_t(a)); }>);
  t.add("s_sext_i32_i16", sop<[](u32 a, bool&) { return i32(int16_t(a)); }>);
  t.add("s_abs_i32", sop<[](i32 a, bool& c) { i32 r = a < 0 ? -a : a; c = r != 0; return r; }>);
  t.add("s_bitset0_b32", [](Wave& w, const Inst& I) { w.s[I.op[0].reg] &= ~(1u << (read_s32(w, I.op[1]) & 31)); });
  t.add("s_bitset1_b32", [](Wave& w, const Inst& I) { w.s[I.op[0].reg] |= 1u << (read_s32(w, I.op[1]) & 31); });
  t.add("s_wqm_b64", sop<[](u64 a, bool& c) { u64 r = 0; for (int q = 0; q < 16; ++q) if (a >> (4 * q) & 0xf) r |= u64(0xf) << (4 * q); c = r != 0; return r; }>);
  t.add("s_getpc_b64", s_getpc);
  t.add("s_setpc_b64", s_setpc);
  t.add("s_swappc_b64", s_swappc);
  t.add("s_call_b64", s_call);
  t.mark({"s_setpc_b64", "s_swappc_b64", "s_call_b64"}, IssueKind::branch);  // jumps: the branch unit
  t.add("s_and_saveexec_b64", saveexec<[](u64 s, u64 e) { return s & e; }>);
  t.add("s_or_saveexec_b64", saveexec<[](u64 s, u64 e) { return s | e; }>);
  t.add("s_xor_saveexec_b64", saveexec<[](u64 s, u64 e) { return s ^ e; }>);
  t.add("s_andn2_saveexec_b64", saveexec<[](u64 s, u64 e) { return s & ~e; }>);
  t.add("s_orn2_saveexec_b64", saveexec<[](u64 s, u64 e) { return s | ~e; }>);
  t.add("s_nand_saveexec_b64", saveexec<[](u64 s, u64 e) { return ~(s & e); }>);
  t.add("s_nor_saveexec_b64", saveexec<[](u64 s, u64 e) { return ~(s | e); }>);
  t.add("s_xnor_saveexec_b64", saveexec<[](u64 s, u64 e) { return ~(s ^ e); }>);
  t.add("s_andn1_saveexec_b64", saveexec<[](u64 s, u64 e) { return ~s & e; }>);
  t.add("s_orn1_saveexec_b64", saveexec<[](u64 s, u64 e) { return ~s | e; }>);
  t.add("s_andn1_wrexec_b64", [](Wave& w, const Inst& I) {
    uint64_t e = ~read_s64(w, I.op[1]) & w.exec();
    w.set_exec(e), write_s64(w, I.op[0], e), w.scc = e != 0;
  });
  t.add("s_andn2_wrexec_b64", [](Wave& w, const Inst& I) {
    uint64_t e = read_s64(w, I.op[1]) & ~w.exec();
    w.set_exec(e), write_s64(w, I.op[0], e), w.scc = e != 0;
  });
  t.add("s_movrels_b32", [](Wave& w, const Inst& I) { w.s[I.op[0].reg] = w.s[(I.op[1].reg + w.s[sreg::m0]) & 127]; });
  t.add("s_movreld_b32", [](Wave& w, const Inst& I) { w.s[(I.op[0].reg + w.s[sreg::m0]) & 127] = read_s32(w, I.op[1]); });
  t.add("s_set_gpr_idx_on", s_set_gpr_idx_on);
  t.add("s_set_gpr_idx_off", s_set_gpr_idx_off);
  t.add("s_set_gpr_idx_idx", s_set_gpr_idx_idx);
  t.add("s_set_gpr_idx_mode", s_set_gpr_idx_mode);

  // SOPC
#define HK_CMP(name, T, expr) t.add("s_cmp_" name, sop<[](T a, T b, bool& c) { c = (expr); }>);
  HK_CMP("eq_i32", i32, a == b) HK_CMP("lg_i32", i32, a != b) HK_CMP("gt_i32", i32, a > b)
  HK_CMP("ge_i32", i32, a >= b) HK_CMP("lt_i32", i32, a < b)  HK_CMP("le_i32", i32, a <= b)
  HK_CMP("eq_u32", u32, a == b) HK_CMP("lg_u32", u32, a != b) HK_CMP("gt_u32", u32, a > b)
  HK_CMP("ge_u32", u32, a >= b) HK_CMP("lt_u32", u32, a < b)  HK_CMP("le_u32", u32, a <= b)
  HK_CMP("eq_u64", u64, a == b) HK_CMP("lg_u64", u64, a != b)
#undef HK_CMP
  t.add("s_bitcmp0_b32", sop<[](u32 a, u32 b, bool& c) { c = !(a >> (b & 31) & 1); }>);
  t.add("s_bitcmp1_b32", sop<[](u32 a, u32 b, bool& c) { c = a >> (b & 31) & 1; }>);
  t.add("s_bitcmp0_b64", sop<[](u64 a, u32 b, bool& c) { c = !(a >> (b & 63) & 1); }>);
  t.add("s_bitcmp1_b64", sop<[](u64 a, u32 b, bool& c) { c = a >> (b & 63) & 1; }>);

  // SOPK: the 16-bit immediate is operand 1 (sign-extended unless the op is unsigned).
  t.add("s_movk_i32", sop<[](u32 k, bool&) { return i32(int16_t(k)); }>);
  t.add("s_cmovk_i32", [](Wave& w, const Inst& I) { if (w.scc) w.s[I.op[0].reg] = uint32_t(int32_t(int16_t(I.op[1].imm))); });
  t.add("s_addk_i32", [](Wave& w, const Inst& I) {
    u32 a = w.s[I.op[0].reg], b = u32(i32(int16_t(I.op[1].imm))), r = a + b;
    w.scc = (~(a ^ b) & (a ^ r)) >> 31;
    w.s[I.op[0].reg] = r;
  });
  t.add("s_mulk_i32", [](Wave& w, const Inst& I) { w.s[I.op[0].reg] *= u32(i32(int16_t(I.op[1].imm))); });
#define HK_CMPK(name, T, expr) \
  t.add("s_cmpk_" name, sop<[](T a, u32 k, bool& c) { T b = std::is_signed_v<T> ? T(int16_t(k)) : T(k & 0xffff); c = (expr); }>);
  HK_CMPK("eq_i32", i32, a == b) HK_CMPK("lg_i32", i32, a != b) HK_CMPK("gt_i32", i32, a > b)
  HK_CMPK("ge_i32", i32, a >= b) HK_CMPK("lt_i32", i32, a < b)  HK_CMPK("le_i32", i32, a <= b)
  HK_CMPK("eq_u32", u32, a == b) HK_CMPK("lg_u32", u32, a != b) HK_CMPK("gt_u32", u32, a > b)
  HK_CMPK("ge_u32", u32, a >= b) HK_CMPK("lt_u32", u32, a < b)  HK_CMPK("le_u32", u32, a <= b)
#undef HK_CMPK
  // Hardware registers: the ids of where the wave runs (HW_ID, XCC_ID); the mode registers read 0, as vgpu
  // computes in the default mode.
  t.add("s_getreg_b32", [](Wave& w, const Inst& I) {
    const uint32_t reg = I.simm & 0x3f, offset = I.simm >> 6 & 0x1f, size = (I.simm >> 11 & 0x1f) + 1;
    const uint32_t value = hardware_register(w, reg) >> offset;
    write_s32(w, I.op[0], size >= 32 ? value : value & ((1u << size) - 1));
  }, op::encoded_simm16);
  t.add("s_setreg_b32", [](Wave&, const Inst&) {});
  t.add("s_setreg_imm32_b32", [](Wave&, const Inst&) {});
}

void exec_gpr_indexed(Wave& w, const Inst& I) {
  if (!w.gpr_idx_on) return I.indexed_fn(w, I);
  const uint32_t m0 = w.s[sreg::m0], idx = m0 & 0xff, mask = m0 >> 12 & 0xf;
  // Sources follow the destinations: one, or two where the second is a scalar carry/flag (v_add_co_u32 v0, vcc, ..).
  const std::string_view name = I.name;
  const bool two_dsts = I.nops > 1 && I.op[1].kind == OpKind::sgpr &&
                        (name.find("_co_") != name.npos || name.starts_with("v_div_scale") ||
                         name.starts_with("v_mad_u64_u32") || name.starts_with("v_mad_i64_i32"));
  Inst J = I;
  auto index = [&](int k) {
    if (k >= J.nops || J.op[k].kind != OpKind::vgpr) return true;  // only VGPR operands are indexed
    if (J.op[k].reg + idx + J.op[k].width > w.ctx->prog->vgprs) return false;
    J.op[k].reg = uint16_t(J.op[k].reg + idx);
    return true;
  };
  bool ok = !(mask & 8) || index(0);
  for (int src = 0; src < 3; ++src) ok = ok && (!(mask >> src & 1) || index((two_dsts ? 2 : 1) + src));
  if (!ok) {
    w.fault(I, FaultKind::unknown_instruction, -1,
            "VGPR index " + std::to_string(idx) + " (M0) takes an operand past the wave's " +
                std::to_string(w.ctx->prog->vgprs) + " registers");
    return;
  }
  I.indexed_fn(w, J);
}

}  // namespace vgpu
