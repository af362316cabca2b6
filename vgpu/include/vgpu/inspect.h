// Looking at kernels the way vgpu sees them: its decoded instructions, and what vgpu implements.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "vgpu/code_object.h"

namespace vgpu {

struct DecodedInstruction {
  uint64_t pc = 0;         // byte offset from the kernel entry
  std::string text;        // LLVM's disassembly
  std::string mnemonic;    // the table entry it is bound to ("" when vgpu does not implement it)
  bool implemented = false;
};

// The kernel's instructions as vgpu decodes them (from the entry to the last reachable s_endpgm).
std::vector<DecodedInstruction> disassemble(const CodeObject& co, const KernelInfo& kernel);

// Every mnemonic in vgpu's instruction table, sorted.
std::vector<std::string> implemented_mnemonics();

}  // namespace vgpu
