// The timing facts of one instruction, from its mnemonic: what unit issues it, MFMA passes and FLOPs, bytes per lane
// of a memory access. The pass counts follow LLVM's scheduling model and the ISA guides as timing.md section 3
// tabulates them: 4 passes (16 cycles) for 16x16 shapes, 8 for 32x32, 2 for 4x4; fp32-input shapes twice that; f64
// 16x16x4 8 passes on gfx942 and 16 on gfx950; gfx950's f8f6f4 shapes twice the base when A or B is fp8/bf8. gfx90a
// (CDNA2, half gfx942's 16- and 8-bit matrix rate per CU) follows the cycle counts of AMD's matrix instruction
// calculator for CDNA2: 32x32 forms 64 cycles, 16x16 32, 4x4 8 whatever the input type; f64 as gfx942.
#include <algorithm>
#include <charconv>
#include <string_view>

#include "timing/model.h"

namespace vgpu {
namespace {

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool has(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

uint32_t number_at(std::string_view s, size_t& i) {
  uint32_t v = 0;
  auto r = std::from_chars(s.data() + i, s.data() + s.size(), v);
  i = size_t(r.ptr - s.data());
  return v;
}

void mfma_shape(Arch arch, const Inst& I, std::string_view name, InstTiming& t) {
  // The shape MxNxK is the first token of three numbers joined by 'x'.
  uint32_t m = 0, n = 0, k = 0;
  size_t rest = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] != '_' || i + 1 >= name.size() || name[i + 1] < '0' || name[i + 1] > '9') continue;
    size_t j = i + 1;
    m = number_at(name, j);
    if (j >= name.size() || name[j] != 'x') continue;
    ++j, n = number_at(name, j);
    if (j >= name.size() || name[j] != 'x') continue;
    ++j, k = number_at(name, j), rest = j;
    break;
  }
  uint32_t blocks = 1;
  std::string_view tail = name.substr(rest);
  if (size_t b = tail.find('_'); b != std::string_view::npos && b + 1 < tail.size() && tail[b + 1] >= '0' &&
                                 tail[b + 1] <= '9') {
    size_t j = b + 1;
    uint32_t v = number_at(tail, j);
    if (j < tail.size() && tail[j] == 'b') blocks = v;
  }
  // gfx90a's names ("v_mfma_f32_32x32x1f32") carry no block count: D's registers give it (M x N per block, one
  // register per 64 elements; f64 takes two).
  if (blocks == 1 && I.nops > 0 && m * n > 0) {
    const uint32_t dwords = uint32_t(I.op[0].width) * 64 / (starts(name, "v_mfma_f64") ? 2 : 1);
    blocks = std::max<uint32_t>(1, dwords / (m * n));
  }
  t.flops = 2.0 * m * n * k * blocks;
  t.passes = m >= 32 ? 8 : m >= 16 ? 4 : 2;
  const bool f64 = starts(name, "v_mfma_f64");
  const bool f32_input = !f64 && (starts(tail, "_f32") || starts(tail, "f32"));
  if (arch == Arch::gfx90a) {
    if (f64 || m >= 16) t.passes *= 2;  // the calculator's CDNA2 cycles: 4x4 forms as gfx942's, the others twice
  } else {
    if (f32_input) t.passes *= 2;
    if (f64) t.passes *= arch == Arch::gfx950 ? 4 : 2;  // 16x16x4: 32 cycles on gfx942, 64 on gfx950 (timing.md 3)
  }
  if (has(name, "f8f6f4") && (I.cbsz <= 1 || I.blgp <= 1)) t.passes *= 2;
  t.mfma_class = has(name, "bf16") ? MfmaClass::bf16
                 : has(name, "f16") ? MfmaClass::f16
                 : (has(name, "fp8") || has(name, "bf8") || has(name, "f8f6f4") || has(name, "i8")) ? MfmaClass::fp8
                                                                                                   : MfmaClass::other;
}

uint32_t lane_bytes(std::string_view name) {
  for (auto [token, bytes] : {std::pair{"dwordx4", 16u}, {"dwordx3", 12u}, {"dwordx2", 8u}, {"dword", 4u},
                              {"b128", 16u}, {"b96", 12u}, {"b64", 8u}, {"b32", 4u}, {"short", 2u}, {"d16", 2u},
                              {"b16", 2u}, {"u16", 2u}, {"i16", 2u}, {"byte", 1u}, {"b8", 1u}, {"u8", 1u},
                              {"i8", 1u}})
    if (has(name, token)) return (has(name, "read2") || has(name, "write2")) ? 2 * bytes : bytes;
  return 4;
}

}  // namespace

InstTiming inst_timing(Arch arch, const Inst& I) {
  const std::string_view name = I.name;
  InstTiming t;
  if (starts(name, "v_mfma") || starts(name, "v_smfmac")) {
    t.kind = IssueKind::mfma;
    mfma_shape(arch, I, name, t);
  } else if (starts(name, "v_")) {
    t.kind = IssueKind::valu;
    // Transcendentals run at quarter rate (timing.md 4).
    for (std::string_view q : {"v_exp_", "v_log_", "v_rcp_", "v_rsq_", "v_sqrt_", "v_sin_", "v_cos_"})
      if (starts(name, q)) t.valu_cycles = 16;
  } else if (starts(name, "ds_")) {
    t.kind = IssueKind::lds, t.bytes_per_lane = lane_bytes(name);
  } else if (I.vmem_fn) {  // the instruction table's op::vector_memory, as the decoder bound it
    t.kind = IssueKind::vmem, t.bytes_per_lane = lane_bytes(name);
    t.atomic = has(name, "_atomic");
  } else if (name == "s_waitcnt") {
    t.kind = IssueKind::waitcnt;
  } else if (name == "s_barrier") {
    t.kind = IssueKind::barrier;
  } else if (name == "s_nop") {
    t.kind = IssueKind::nop;
  } else if (name == "s_sleep") {
    t.kind = IssueKind::sleep;
  } else if (name == "s_setprio") {
    t.kind = IssueKind::setprio;
  } else if (name == "s_endpgm") {
    t.kind = IssueKind::end;
  } else if (starts(name, "s_load") || starts(name, "s_buffer_load") || starts(name, "s_store") ||
             starts(name, "s_buffer_store") || starts(name, "s_scratch") || starts(name, "s_atomic") ||
             starts(name, "s_buffer_atomic") || starts(name, "s_dcache") || starts(name, "s_mem")) {
    t.kind = IssueKind::smem;
  } else if (I.target >= 0 || starts(name, "s_cbranch") || starts(name, "s_branch") || starts(name, "s_setpc") ||
             starts(name, "s_swappc") || starts(name, "s_call") || starts(name, "s_sendmsg") ||
             starts(name, "s_trap") || starts(name, "s_icache")) {
    t.kind = IssueKind::branch;
  } else if (starts(name, "s_")) {
    t.kind = IssueKind::salu;
  } else {
    t.kind = IssueKind::internal;
  }
  return t;
}

}  // namespace vgpu
