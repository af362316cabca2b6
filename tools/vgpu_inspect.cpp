// vgpu-inspect: lists the kernels of a HIP binary or code object and the instructions vgpu does not implement.
//   vgpu-inspect FILE [--all]     --all prints every decoded instruction
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

int main(int argc, char** argv) {
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
