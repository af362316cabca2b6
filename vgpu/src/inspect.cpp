#include "vgpu/inspect.h"

#include <algorithm>

#include "isa/isa.h"

namespace vgpu {

std::vector<DecodedInstruction> disassemble(const CodeObject& co, const KernelInfo& kernel) {
  auto prog = decode_kernel(co, kernel);
  std::vector<DecodedInstruction> out;
  for (size_t i = 0; i + 1 < prog->insts.size(); ++i) {  // the last entry is the end-of-code sentinel
    const Inst& I = prog->insts[i];
    DecodedInstruction d;
    d.pc = I.pc;
    d.text = prog->texts[I.text];
    d.implemented = I.fn != exec_unknown;
    d.mnemonic = d.implemented ? I.name : "";
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<std::string> implemented_mnemonics() {
  std::vector<std::string> names;
  isa_table().for_each([&](const OpInfo& op) { names.emplace_back(op.name); });
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace vgpu
