// vgpu-inspect: lists the kernels of a HIP binary or code object and the instructions vgpu does not implement.
//   vgpu-inspect FILE [--all]     --all prints every decoded instruction
//   vgpu-inspect --table          the instructions vgpu implements, counted per class
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "vgpu/arch.h"
#include "vgpu/code_object.h"
#include "vgpu/error.h"
#include "vgpu/inspect.h"

// The class of a mnemonic, by the prefix the ISA guide's chapters use.
std::string instruction_class(const std::string& m) {
  static const std::pair<const char*, const char*> prefixes[] = {
      {"v_mfma", "matrix (MFMA)"},  {"v_cmp", "vector compare (VOPC)"}, {"v_pk_", "packed (VOP3P)"},
      {"v_dot", "packed (VOP3P)"},  {"v_cvt", "vector conversion"},    {"v_", "vector ALU"},
      {"s_load", "scalar memory"},  {"s_buffer", "scalar memory"},     {"s_memtime", "scalar memory"},
      {"s_memrealtime", "scalar memory"},
      {"s_cbranch", "program control"}, {"s_branch", "program control"}, {"s_endpgm", "program control"},
      {"s_barrier", "program control"}, {"s_waitcnt", "program control"}, {"s_", "scalar ALU"},
      {"ds_", "LDS (DS)"}, {"buffer_", "buffer memory (MUBUF)"}, {"global_", "global memory"},
      {"flat_", "flat memory"}, {"scratch_", "scratch memory"}};
  for (auto& [p, c] : prefixes)
    if (m.starts_with(p)) return c;
  return "other";
}

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--table") {
    std::map<std::string, int> per_class;
    auto names = vgpu::implemented_mnemonics();
    for (auto& m : names) per_class[instruction_class(m)]++;
    for (auto& [c, n] : per_class) std::printf("%-24s %4d\n", c.c_str(), n);
    std::printf("%-24s %4zu\n", "total", names.size());
    return 0;
  }
  if (argc < 2) {
    std::fprintf(stderr, "usage: vgpu-inspect FILE [--all]\n");
    return 2;
  }
  const bool all = argc > 2 && std::string(argv[2]) == "--all";
  try {
    std::ifstream f(argv[1], std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), {});
    std::vector<std::shared_ptr<const vgpu::CodeObject>> objects;
    if (bytes.size() > 4 && bytes[0] == 0x7f && bytes[4] == 2 && bytes[18] == 0x3e)  // x86-64 ELF: a host binary
      objects = vgpu::load_from_host_binary(argv[1]);
    else
      objects = vgpu::load_any(bytes);
    int missing_total = 0;
    for (auto& co : objects) {
      for (auto& k : co->kernels) {
        auto insts = vgpu::disassemble(*co, k);
        std::map<std::string, int> missing;
        for (auto& d : insts) {
          if (all) std::printf("  %6llx  %s%s\n", (unsigned long long)d.pc, d.text.c_str(), d.implemented ? "" : "   <-- not implemented");
          if (!d.implemented) missing[d.text.substr(0, d.text.find(' '))]++;
        }
        std::printf("%s %s: %zu instructions, %zu not implemented\n", std::string(vgpu::arch_info(co->arch).name).c_str(),
                    k.name.c_str(), insts.size(), missing.size());
        for (auto& [m, n] : missing) std::printf("    %s x%d\n", m.c_str(), n);
        missing_total += int(missing.size());
      }
    }
    return missing_total ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vgpu-inspect: %s\n", e.what());
    return 2;
  }
}
