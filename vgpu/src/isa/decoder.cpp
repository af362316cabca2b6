// Decoding with LLVM's MC disassembler: each instruction is disassembled once to text, and the text's mnemonic,
// operands and modifiers are turned into an Inst bound to its executing function. The assembler syntax is the ISA
// guide's own notation, so this is also the most readable contract between vgpu and the hardware documentation.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <mutex>

#include "isa/isa.h"
#include "wave.h"
#include "llvm/MC/MCAsmInfo.h"
#include "llvm/MC/MCContext.h"
#include "llvm/MC/MCDisassembler/MCDisassembler.h"
#include "llvm/MC/MCInst.h"
#include "llvm/MC/MCInstPrinter.h"
#include "llvm/MC/MCInstrInfo.h"
#include "llvm/MC/MCRegisterInfo.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/MCTargetOptions.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"
#include "vgpu/device.h"

extern "C" void LLVMInitializeAMDGPUTargetInfo();
extern "C" void LLVMInitializeAMDGPUTargetMC();
extern "C" void LLVMInitializeAMDGPUDisassembler();

namespace vgpu {

namespace {

// One MC disassembler + printer per arch, built on first use. MC objects are not thread-safe: guarded by `mu`.
struct Disassembler {
  std::unique_ptr<llvm::MCRegisterInfo> mri;
  std::unique_ptr<llvm::MCAsmInfo> mai;
  std::unique_ptr<llvm::MCSubtargetInfo> sti;
  std::unique_ptr<llvm::MCInstrInfo> mii;
  std::unique_ptr<llvm::MCContext> ctx;
  std::unique_ptr<llvm::MCDisassembler> dis;
  std::unique_ptr<llvm::MCInstPrinter> printer;
  std::mutex mu;

  explicit Disassembler(Arch arch) {
    static std::once_flag init;
    std::call_once(init, [] {
      LLVMInitializeAMDGPUTargetInfo();
      LLVMInitializeAMDGPUTargetMC();
      LLVMInitializeAMDGPUDisassembler();
    });
    llvm::Triple triple("amdgcn-amd-amdhsa");
    std::string err;
    const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
    if (!target) throw Error("vgpu: LLVM has no amdgcn target: " + err);
    std::string cpu(arch_info(arch).name);
    llvm::MCTargetOptions opts;
    mri.reset(target->createMCRegInfo(triple.str()));
    mai.reset(target->createMCAsmInfo(*mri, triple.str(), opts));
    sti.reset(target->createMCSubtargetInfo(triple.str(), cpu, ""));
    mii.reset(target->createMCInstrInfo());
    if (!mri || !mai || !sti || !mii) throw Error("vgpu: cannot create the MC layer for " + cpu);
    ctx = std::make_unique<llvm::MCContext>(triple, mai.get(), mri.get(), sti.get());
    dis.reset(target->createMCDisassembler(*sti, *ctx));
    printer.reset(target->createMCInstPrinter(triple, 0, *mai, *mii, *mri));
    if (!dis || !printer) throw Error("vgpu: cannot create the disassembler for " + cpu);
  }
};

Disassembler& disassembler(Arch arch) {
  static const auto per_arch = [] {
    std::vector<std::unique_ptr<Disassembler>> v;
    for (const ArchInfo& a : all_archs()) v.push_back(std::make_unique<Disassembler>(a.arch));
    return v;
  }();
  for (size_t i = 0; i < per_arch.size(); ++i)
    if (all_archs()[i].arch == arch) return *per_arch[i];
  throw Error("vgpu: no disassembler for this arch");
}

// --- Text parsing -----------------------------------------------------------------------------------------------

std::vector<std::string> split_operands(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '[' || c == '(') depth++;
    if (c == ']' || c == ')') depth--;
    if (depth == 0 && (c == ',' || c == ' ' || c == '\t')) {
      if (!cur.empty()) out.push_back(cur), cur.clear();
      continue;
    }
    cur += c;
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool parse_uint(std::string_view s, uint64_t& v) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2), base = 16;
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parse_int(std::string_view s, int64_t& v) {
  bool neg = !s.empty() && s[0] == '-';
  if (neg) s.remove_prefix(1);
  uint64_t u;
  if (!parse_uint(s, u)) return false;
  v = neg ? -int64_t(u) : int64_t(u);
  return true;
}

uint16_t f32_to_f16_bits(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }

// Bits of a float-written constant for the instruction's operand type. 1/(2*pi) has exact encodings per type.
uint64_t float_bits(double d, ImmType t, bool inv2pi) {
  switch (t) {
    case ImmType::f64:
    case ImmType::b64: return inv2pi ? 0x3fc45f306dc9c882ull : std::bit_cast<uint64_t>(d);
    case ImmType::f16: return inv2pi ? 0x3118 : f32_to_f16_bits(float(d));
    case ImmType::pk16: {
      uint64_t h = inv2pi ? 0x3118 : f32_to_f16_bits(float(d));
      return h;
    }
    case ImmType::bf16: return inv2pi ? 0x3e22 : std::bit_cast<uint32_t>(float(d)) >> 16;
    default: return inv2pi ? 0x3e22f983u : std::bit_cast<uint32_t>(float(d));
  }
}

bool is64(ImmType t) { return t == ImmType::f64 || t == ImmType::b64; }

// Parses one register/constant operand. Returns false if the token is not one.
bool parse_operand(std::string_view tok, ImmType it, uint32_t accum_offset, Operand& o) {
  o = Operand{};
  // Source modifiers: -x, |x|, -|x|, neg(x), abs(x), sext(x).
  auto strip = [&](std::string_view pre, std::string_view post) {
    if (tok.size() > pre.size() + post.size() && tok.starts_with(pre) && tok.ends_with(post)) {
      tok = tok.substr(pre.size(), tok.size() - pre.size() - post.size());
      return true;
    }
    return false;
  };
  if (strip("sext(", ")")) o.sext = true;
  if (strip("neg(", ")")) o.neg = true;
  if (tok.size() > 1 && tok[0] == '-' && !std::isdigit(uint8_t(tok[1]))) o.neg = true, tok.remove_prefix(1);
  if (strip("|", "|") || strip("abs(", ")")) o.abs = true;

  auto reg_range = [&](std::string_view body, uint16_t& first, uint8_t& width) {
    // "12" or "[4:7]"
    if (!body.empty() && body[0] == '[') {
      auto colon = body.find(':');
      uint64_t a, b;
      if (colon == std::string_view::npos || !parse_uint(body.substr(1, colon - 1), a) ||
          !parse_uint(body.substr(colon + 1, body.size() - colon - 2), b))
        return false;
      first = uint16_t(a), width = uint8_t(b - a + 1);
      return true;
    }
    uint64_t a;
    if (!parse_uint(body, a)) return false;
    first = uint16_t(a), width = 1;
    return true;
  };

  static const struct { std::string_view name; uint16_t reg; uint8_t width; } named[] = {
      {"vcc", sreg::vcc, 2},          {"vcc_lo", sreg::vcc, 1},
      {"vcc_hi", sreg::vcc + 1, 1},   {"exec", sreg::exec, 2},
      {"exec_lo", sreg::exec, 1},     {"exec_hi", sreg::exec + 1, 1},
      {"m0", sreg::m0, 1},            {"flat_scratch", sreg::flat_scratch, 2},
      {"flat_scratch_lo", sreg::flat_scratch, 1}, {"flat_scratch_hi", sreg::flat_scratch + 1, 1},
      {"xnack_mask", sreg::xnack_mask, 2},
  };
  for (auto& n : named)
    if (tok == n.name) {
      o.kind = OpKind::sgpr, o.reg = n.reg, o.width = n.width;
      return true;
    }
  if (tok == "off") return o.kind = OpKind::off, true;
  if (tok == "src_scc" || tok == "scc") return o.kind = OpKind::scc, true;
  if (tok == "src_vccz" || tok == "vccz") return o.kind = OpKind::vccz, true;
  if (tok == "src_execz" || tok == "execz") return o.kind = OpKind::execz, true;
  static const std::string_view apertures[] = {"src_shared_base", "src_shared_limit", "src_private_base",
                                               "src_private_limit"};
  for (uint16_t i = 0; i < 4; ++i)
    if (tok == apertures[i]) return o.kind = OpKind::aperture, o.reg = i, true;

  if (tok.size() > 1 && (tok[0] == 'v' || tok[0] == 's' || tok[0] == 'a') &&
      (std::isdigit(uint8_t(tok[1])) || tok[1] == '[')) {
    if (!reg_range(tok.substr(1), o.reg, o.width)) return false;
    if (tok[0] == 's') o.kind = OpKind::sgpr;
    else o.kind = OpKind::vgpr;
    if (tok[0] == 'a') o.reg = uint16_t(o.reg + accum_offset);
    return true;
  }
  if (tok.starts_with("ttmp")) {
    if (!reg_range(tok.substr(4), o.reg, o.width)) return false;
    o.kind = OpKind::sgpr, o.reg = uint16_t(o.reg + sreg::ttmp0);
    return true;
  }
  // Constants: hex literal, integer, or float.
  int64_t iv;
  if (tok.starts_with("0x") || tok.starts_with("0X")) {
    uint64_t u;
    if (!parse_uint(tok, u)) return false;
    // A 32-bit literal feeding a 64-bit float operand supplies the high half.
    if (it == ImmType::f64 && u <= 0xffffffffull) u <<= 32;
    o.kind = OpKind::imm, o.imm = u;
    if (o.neg) o.imm = is64(it) ? std::bit_cast<uint64_t>(-std::bit_cast<double>(o.imm)) : o.imm ^ 0x80000000u;
    o.neg = false;
    return true;
  }
  if (parse_int(tok, iv)) {
    o.kind = OpKind::imm, o.imm = uint64_t(iv);  // sign-extended to 64 bits; 32-bit reads take the low half
    return true;
  }
  if (tok == "0.15915494" || tok == "0.15915494309189532" || tok == "0.1592") {
    o.kind = OpKind::imm, o.imm = float_bits(0, it, true);
    return true;
  }
  char* end = nullptr;
  std::string t(tok);
  double d = std::strtod(t.c_str(), &end);
  if (end && *end == 0 && !t.empty()) {
    o.kind = OpKind::imm, o.imm = float_bits(d, it, false);
    return true;
  }
  return false;
}

uint8_t parse_bits(std::string_view v) {  // "[0,1,1]" -> bit i = element i
  uint8_t bits = 0;
  int i = 0;
  for (char c : v) {
    if (c == '0' || c == '1') bits |= uint8_t((c - '0') << i++);
  }
  return bits;
}

uint8_t sdwa_sel(std::string_view v) {
  static const std::string_view names[] = {"BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1", "DWORD"};
  for (uint8_t i = 0; i < 7; ++i)
    if (v == names[i]) return i;
  return 6;
}

// DPP control in the hardware encoding (see the ISA guide's DPP_CTRL table).
uint16_t dpp_ctrl(std::string_view key, std::string_view val) {
  uint64_t n = 0;
  if (key == "quad_perm") {
    uint16_t c = 0;
    int i = 0;
    for (char ch : val)
      if (ch >= '0' && ch <= '3') c |= uint16_t((ch - '0') << (2 * i++));
    return c;
  }
  parse_uint(val, n);
  if (key == "row_shl") return uint16_t(0x100 + n);
  if (key == "row_shr") return uint16_t(0x110 + n);
  if (key == "row_ror") return uint16_t(0x120 + n);
  if (key == "wave_shl") return 0x130;
  if (key == "wave_rol") return 0x134;
  if (key == "wave_shr") return 0x138;
  if (key == "wave_ror") return 0x13c;
  if (key == "row_mirror") return 0x140;
  if (key == "row_half_mirror") return 0x141;
  if (key == "row_bcast") return n == 15 ? 0x142 : 0x143;
  if (key == "row_newbcast") return uint16_t(0x150 + n);  // gfx90a+
  return 0xffff;
}

// ds_swizzle_b32's offset in LLVM's macro syntax, back to the 16-bit pattern: swizzle(QUAD_PERM,a,b,c,d),
// swizzle(BITMASK_PERM,"01pip") (one character per lane-id bit, most significant first: 0/1 force the bit, p keeps it,
// i inverts it), swizzle(SWAP,n), swizzle(REVERSE,n), swizzle(BROADCAST,n,lane).
bool parse_swizzle(std::string_view v, int32_t& out) {
  if (!v.starts_with("swizzle(") || !v.ends_with(")")) return false;
  std::vector<std::string> args;
  std::string cur;
  for (char c : v.substr(8, v.size() - 9)) {
    if (c == ',') args.push_back(cur), cur.clear();
    else if (c != '"' && c != ' ') cur += c;
  }
  args.push_back(cur);
  std::vector<uint32_t> n;
  for (size_t i = 1; i < args.size(); ++i) {
    uint64_t u = 0;
    if (args[0] != "BITMASK_PERM" && !parse_uint(args[i], u)) return false;
    n.push_back(uint32_t(u));
  }
  auto bitmask = [&](uint32_t and_m, uint32_t or_m, uint32_t xor_m) {
    out = int32_t((and_m & 31) | (or_m & 31) << 5 | (xor_m & 31) << 10);
    return true;
  };
  if (args[0] == "QUAD_PERM" && n.size() == 4) return out = int32_t(0x8000 | n[0] | n[1] << 2 | n[2] << 4 | n[3] << 6), true;
  if (args[0] == "SWAP" && n.size() == 1) return bitmask(31, 0, n[0]);
  if (args[0] == "REVERSE" && n.size() == 1) return bitmask(31, 0, n[0] - 1);
  if (args[0] == "BROADCAST" && n.size() == 2) return bitmask(31 & ~(n[0] - 1), n[1], 0);
  if (args[0] == "BITMASK_PERM" && args.size() == 2 && args[1].size() == 5) {
    uint32_t and_m = 0, or_m = 0, xor_m = 0;
    for (int i = 0; i < 5; ++i) {
      const uint32_t bit = 1u << (4 - i);
      switch (args[1][i]) {
        case '0': break;
        case '1': or_m |= bit; break;
        case 'p': and_m |= bit; break;
        case 'i': and_m |= bit, xor_m |= bit; break;
        default: return false;
      }
    }
    return bitmask(and_m, or_m, xor_m);
  }
  return false;
}

// Applies "key:value" or bare-keyword modifiers. Returns false if unknown.
bool apply_modifier(std::string_view tok, Inst& I) {
  auto colon = tok.find(':');
  std::string_view key = tok.substr(0, colon), val = colon == std::string_view::npos ? "" : tok.substr(colon + 1);
  uint64_t u = 0;
  int64_t s = 0;
  static const struct { std::string_view name; uint32_t flag; } keywords[] = {
      {"offen", mod::offen}, {"idxen", mod::idxen}, {"glc", mod::glc}, {"slc", mod::slc},       {"nt", mod::nt},
      {"lds", mod::lds},     {"clamp", mod::clamp}, {"gds", mod::gds}, {"sc0", mod::sc0},       {"sc1", mod::sc1},
      {"addr64", mod::addr64},
  };
  if (colon == std::string_view::npos) {
    for (auto& k : keywords)
      if (tok == k.name) return I.flags |= k.flag, true;
    if (tok == "row_mirror" || tok == "row_half_mirror") return I.dpp_ctrl = dpp_ctrl(tok, ""), I.flags |= mod::dpp, true;
    if (tok == "bound_ctrl:0" || tok == "bound_ctrl") return I.flags |= mod::bound_ctrl, true;
    // s_set_gpr_idx_on / _mode's operand mask: "gpr_idx(SRC0,DST)".
    if (tok.starts_with("gpr_idx(") && tok.ends_with(")")) {
      I.simm = 0;
      for (auto [n, bit] : {std::pair{"SRC0", 1u}, {"SRC1", 2u}, {"SRC2", 4u}, {"DST", 8u}})
        if (tok.find(n) != std::string_view::npos) I.simm |= bit;
      return true;
    }
    // Counter and message arguments of s_waitcnt, s_sendmsg, s_setreg...: "vmcnt(0)", "hwreg(HW_REG_MODE, 0, 4)".
    if (tok.ends_with(")") && tok.find('(') != std::string_view::npos) return true;
    return tok == "dlc" || tok == "lwe" || tok == "tfe" || tok == "d16" || tok == "a16";
  }
  if (key == "offset") {
    if (parse_int(val, s)) return I.offset = int32_t(s), true;
    return parse_swizzle(val, I.offset);
  }
  if (key == "offset0") return parse_int(val, s) && (I.offset = int32_t(s), true);
  if (key == "offset1") return parse_int(val, s) && (I.offset1 = int32_t(s), true);
  if (key == "mul") return parse_uint(val, u) && (I.omod = u == 2 ? 1 : 2, true);
  if (key == "div") return I.omod = 3, true;
  if (key == "op_sel") return I.op_sel = parse_bits(val), true;
  if (key == "op_sel_hi") return I.op_sel_hi = parse_bits(val), I.flags |= mod::op_sel_hi_given, true;
  if (key == "neg_lo") return I.neg_lo = parse_bits(val), true;
  if (key == "neg_hi") return I.neg_hi = parse_bits(val), true;
  if (key == "cbsz") return parse_uint(val, u) && (I.cbsz = uint8_t(u), true);
  if (key == "abid") return parse_uint(val, u) && (I.abid = uint8_t(u), true);
  if (key == "blgp") return parse_uint(val, u) && (I.blgp = uint8_t(u), true);
  if (key == "row_mask") return parse_uint(val, u) && (I.row_mask = uint8_t(u), true);
  if (key == "bank_mask") return parse_uint(val, u) && (I.bank_mask = uint8_t(u), true);
  if (key == "bound_ctrl") return I.flags |= mod::bound_ctrl, true;
  if (key == "dst_sel") return I.dst_sel = sdwa_sel(val), true;
  if (key == "src0_sel") return I.src0_sel = sdwa_sel(val), true;
  if (key == "src1_sel") return I.src1_sel = sdwa_sel(val), true;
  if (key == "dst_unused") return I.dst_unused = val == "UNUSED_SEXT" ? 1 : val == "UNUSED_PRESERVE" ? 2 : 0, true;
  if (key == "format" || key == "dfmt" || key == "nfmt") return true;
  if (key == "bitop3") return parse_uint(val, u) && (I.simm = uint32_t(u), true);
  uint16_t c = dpp_ctrl(key, val);
  if (c != 0xffff) return I.dpp_ctrl = c, I.flags |= mod::dpp, true;
  return false;
}

}  // namespace

int Program::index_of(int64_t off) const {
  auto it = std::lower_bound(by_offset.begin(), by_offset.end(), std::pair<int64_t, int>{off, -1});
  if (it == by_offset.end() || it->first != off) return -1;
  return it->second;
}

std::shared_ptr<Program> decode_kernel(const CodeObject& co, const KernelInfo& info) {
  auto prog = std::make_shared<Program>();
  prog->kernel = info.name;
  prog->arch = co.arch;
  prog->info = info;
  const IsaTable& table = isa_table();
  Disassembler& D = disassembler(co.arch);
  std::lock_guard lock(D.mu);

  if (info.entry < co.text_addr || info.entry >= co.text_addr + co.text.size())
    throw Error("vgpu: kernel " + info.name + " has its entry outside .text");
  const uint64_t start = info.entry - co.text_addr;
  const uint32_t accum = info.kd.accum_offset();
  uint64_t furthest_target = 0;  // decode at least up to every branch target seen
  uint32_t max_vgpr = 0;
  std::vector<size_t> branches;  // instructions whose target is resolved once everything is decoded
  bool indexing = false;         // between s_set_gpr_idx_on and s_set_gpr_idx_off

  // Decodes [from, to) of .text into prog; the kernel's own code (kernel = true) ends at the first s_endpgm past every
  // branch target seen.
  auto decode_range = [&](uint64_t from, uint64_t to, bool kernel) {
    for (uint64_t off = from; off < to;) {
      llvm::MCInst mi;
      uint64_t size = 0;
      llvm::ArrayRef<uint8_t> bytes(co.text.data() + off, to - off);
      std::string text;
      Inst I;
      I.pc = int32_t(int64_t(off) - int64_t(start));
      auto status = D.dis->getInstruction(mi, size, bytes, co.text_addr + off, llvm::nulls());
      // SoftFail: decoded, with a warning that the encoding is "potentially undefined". LLVM says so of the VOP3
      // form of v_cmpx_* with an SGPR-pair destination (Tensile's edge code: v_cmpx_eq_u32_e64 s[54:55], v4, s54),
      // which gfx9 defines (the result goes to the pair and to EXEC) and real gfx90a runs; the instruction is whole.
      if (status == llvm::MCDisassembler::Fail || size == 0) {
        size = 4;
        text = "<undecodable>";
        I.fn = exec_unknown;
      } else {
        llvm::raw_string_ostream os(text);
        D.printer->printInst(&mi, co.text_addr + off, "", *D.sti, os);
        os.flush();
      }
      I.size = uint32_t(size);
      // Normalise the printed text: tabs to spaces, trimmed.
      std::replace(text.begin(), text.end(), '\t', ' ');
      text.erase(0, text.find_first_not_of(' '));
      I.text = uint32_t(prog->texts.size());
      prog->texts.push_back(text);
      bool ends_program = false;

      if (!I.fn) {
        auto sp = text.find(' ');
        std::string mnem = text.substr(0, sp);
        std::string_view rest = sp == std::string::npos ? "" : std::string_view(text).substr(sp + 1);
        for (std::string_view suffix : {"_e32", "_e64", "_sdwa", "_dpp"})
          if (mnem.size() > suffix.size() && mnem.ends_with(suffix)) {
            mnem.resize(mnem.size() - suffix.size());
            if (suffix == "_e64") I.flags |= mod::vop3;
            if (suffix == "_sdwa") I.flags |= mod::sdwa;
            if (suffix == "_dpp") I.flags |= mod::dpp;
            break;
          }
        const OpInfo* known = table.find(mnem);
        // The 8-bit float instructions read the arch's fp8 flavour; an arch without one (gfx90a) must not run them.
        // (LLVM decodes none for such an arch; this keeps a hand-assembled or misdecoded one from picking a flavour.)
        if (known && arch_info(co.arch).fp8 == Fp8Flavour::none &&
            (mnem.find("fp8") != std::string::npos || mnem.find("bf8") != std::string::npos))
          known = nullptr;
        bool ok = known != nullptr;
        if (ok) {
          I.fn = known->fn;
          I.name = known->name.data();
          I.issue = known->issue, I.op_flags = known->flags, I.shape = known->shape;
          ends_program = known->is(op::ends_program);
          if (known->is(op::vector_memory)) I.vmem_fn = I.fn, I.fn = exec_vmem_counted;
          // SOPP/SOPK: simm16 in the low half of the first word, as encoded.
          uint32_t word;
          std::memcpy(&word, bytes.data(), 4);
          const uint32_t simm16 = word & 0xffff;
          if (known->is(op::encoded_simm16)) I.simm = simm16;
          if (known->is(op::branch)) {
            // target = next instruction + 4 * simm16.
            int64_t target = int64_t(off) + 4 + 4 * int64_t(int16_t(simm16));
            I.offset = int32_t(target - int64_t(start));
            if (kernel) furthest_target = std::max<uint64_t>(furthest_target, uint64_t(target));
            branches.push_back(prog->insts.size());
          } else {
            for (auto& tok : split_operands(rest)) {
              Operand o;
              if (I.nops < std::size(I.op) && parse_operand(tok, known->imm, accum, o)) {
                I.op[I.nops++] = o;
                if (o.kind == OpKind::vgpr) max_vgpr = std::max<uint32_t>(max_vgpr, o.reg + o.width);
              } else if (!apply_modifier(tok, I)) {
                ok = false;  // a modifier vgpu does not model: refuse rather than run it wrongly
                break;
              }
            }
            // SOPP/SOPK with a plain immediate operand (s_nop 3, s_setprio 1, s_waitcnt ...).
            if (I.nops > 0 && I.op[0].kind == OpKind::imm) I.simm = uint32_t(I.op[0].imm);
          }
        }
        if (!ok) I.fn = exec_unknown, I.name = "";
        bool plain = !(I.flags & (mod::dpp | mod::sdwa | mod::clamp)) && I.omod == 0;
        for (int k = 0; k < I.nops; ++k) plain = plain && !I.op[k].abs && !I.op[k].neg && !I.op[k].sext;
        if (plain) I.flags |= mod::plain;
      }
      // VGPR indexing: LLVM emits each indexed VALU instruction between s_set_gpr_idx_on and s_set_gpr_idx_off.
      const std::string_view name = I.name;
      if (name == "s_set_gpr_idx_on") indexing = true;
      else if (name == "s_set_gpr_idx_off") indexing = false;
      else if (indexing && name.starts_with("v_") && I.fn != exec_unknown) I.indexed_fn = I.fn, I.fn = exec_gpr_indexed;
      prog->offsets.push_back(int64_t(off) - int64_t(start));
      prog->insts.push_back(I);
      off += size;
      if (kernel && ends_program && off > furthest_target) break;
    }
  };
  // The kernel's code ends where its symbol says: decoding on would take the next kernels' code (and their registers,
  // which the hardware does not allocate to this one: COMPUTE_PGM_RSRC1's VGPR count does) for this kernel's.
  decode_range(start, info.code_size ? std::min<uint64_t>(start + info.code_size, co.text.size()) : co.text.size(), true);
  // A sentinel catches control flow that runs past the decoded code.
  Inst end;
  end.fn = [](Wave& w, const Inst& I) {
    w.fault(I, FaultKind::unknown_instruction, -1, "execution ran past the kernel's decoded code");
  };
  end.pc = prog->offsets.empty() ? 0 : int32_t(prog->offsets.back() + prog->insts.back().size);
  end.text = uint32_t(prog->texts.size());
  prog->texts.push_back("<end of kernel code>");
  prog->insts.push_back(end);
  prog->offsets.push_back(end.pc);
  // The code object's device functions follow, for the kernel's calls (s_swappc_b64) and returns (s_setpc_b64);
  // their offsets from the kernel entry may be negative.
  for (const CodeObject::Function& f : co.functions)
    decode_range(f.vaddr - co.text_addr, f.vaddr - co.text_addr + f.size, false);
  prog->by_offset.resize(prog->offsets.size());
  for (size_t i = 0; i < prog->offsets.size(); ++i) prog->by_offset[i] = {prog->offsets[i], int(i)};
  std::sort(prog->by_offset.begin(), prog->by_offset.end());
  // Resolve branch targets to instruction indices.
  for (size_t i : branches) {
    Inst& I = prog->insts[i];
    I.target = prog->index_of(uint64_t(I.offset));
    if (I.target < 0) I.fn = exec_unknown;
  }
  prog->vgprs = std::max<uint32_t>({max_vgpr, info.vgpr_count, accum + info.agpr_count, 1});
  return prog;
}

}  // namespace vgpu
