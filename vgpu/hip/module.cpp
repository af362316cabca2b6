// The module API: code objects loaded at run time from a file (hipModuleLoad) or from memory (hipModuleLoadData),
// either plain AMDGPU ELF code objects (.hsaco) or offload bundles (hipcc --genco), and the kernels in them.
#include <elf.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

#include "runtime.h"

namespace vgpu::hiprt {
namespace {

std::mutex g_modules_mu;
std::set<ihipModule_t*>& modules() {
  static auto* m = new std::set<ihipModule_t*>;
  return *m;
}

bool valid_module(ihipModule_t* m) {
  std::lock_guard lock(g_modules_mu);
  return m && modules().count(m);
}

// hipModuleLoadData gets only a pointer: the extent of the image is read from its own header, every read of it
// checked against the `mapped` bytes readable there. For an ELF: the furthest byte any program header, section
// header or section reaches.
size_t elf_image_size(const uint8_t* p, uint64_t mapped) {
  auto corrupt = [](const char* what) { throw Error(std::string("the ELF header is corrupt: ") + what); };
  auto reach = [&](uint64_t offset, uint64_t bytes, const char* what) {
    if (offset > mapped || bytes > mapped - offset) corrupt(what);
    return offset + bytes;
  };
  Elf64_Ehdr eh;
  reach(0, sizeof eh, "the header itself is not all mapped");
  std::memcpy(&eh, p, sizeof eh);
  if ((eh.e_phnum && eh.e_phentsize < sizeof(Elf64_Phdr)) || (eh.e_shnum && eh.e_shentsize < sizeof(Elf64_Shdr)))
    corrupt("header entries smaller than the ELF64 structures");
  uint64_t end = sizeof eh;
  end = std::max(end, reach(eh.e_phoff, uint64_t(eh.e_phnum) * eh.e_phentsize, "program headers past the mapping"));
  end = std::max(end, reach(eh.e_shoff, uint64_t(eh.e_shnum) * eh.e_shentsize, "section headers past the mapping"));
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, p + eh.e_phoff + uint64_t(i) * eh.e_phentsize, sizeof ph);
    end = std::max(end, reach(ph.p_offset, ph.p_filesz, "a segment past the mapping"));
  }
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, p + eh.e_shoff + uint64_t(i) * eh.e_shentsize, sizeof sh);
    if (sh.sh_type != SHT_NOBITS) end = std::max(end, reach(sh.sh_offset, sh.sh_size, "a section past the mapping"));
  }
  return end;
}

// Loads the code objects of `blob` into a new module and checks that one is for the device's arch.
hipError_t load_module(hipModule_t* out, std::span<const uint8_t> blob, const std::string& origin) {
  auto m = std::make_unique<ihipModule_t>();
  m->set.origin = origin;
  try {
    m->set.objects = load_any(blob);
  } catch (const std::exception& e) {
    return fail(hipErrorInvalidImage, "cannot load " + origin + ": " + e.what());
  }
  if (m->set.objects.empty()) return fail(hipErrorInvalidImage, origin + " holds no code object");

  Runtime& rt = Runtime::get();
  std::vector<Arch> archs;
  for (const auto& co : m->set.objects) archs.push_back(co->arch);
  rt.suggest_arch(archs);
  Arch arch = rt.arch();
  if (!m->set.for_arch(arch))
    return fail(hipErrorNoBinaryForGpu, origin + " has no code object for the device's arch " +
                                            std::string(arch_info(arch).name) + " (it has: " + m->set.arch_list() + ")",
                true);

  std::lock_guard lock(g_modules_mu);
  *out = m.get();
  modules().insert(m.release());
  return hipSuccess;
}

hipError_t load_data(hipModule_t* module, const void* image) {
  if (!module || !image) return done(hipErrorInvalidValue);
  auto* p = static_cast<const uint8_t*>(image);
  size_t size = 0;
  try {
    const uint64_t mapped = readable_extent(p);
    if (mapped < SELFMAG) throw Error("no readable memory there");
    if (std::memcmp(p, ELFMAG, SELFMAG) == 0)
      size = elf_image_size(p, mapped);
    else
      size = offload_bundle_size(p);  // throws if it is not a bundle either
    if (size > mapped)
      throw Error("its header claims " + std::to_string(size) + " bytes, only " + std::to_string(mapped) +
                  " are mapped there");
  } catch (const std::exception& e) {
    return fail(hipErrorInvalidImage, std::string("the image is neither an AMDGPU code object nor an offload bundle: ") +
                                          e.what());
  }
  char origin[64];
  std::snprintf(origin, sizeof origin, "module image at %p", image);
  return load_module(module, {p, size}, origin);
}

}  // namespace
}  // namespace vgpu::hiprt

using namespace vgpu;
using namespace vgpu::hiprt;

HK_HIP_API hipError_t hipModuleLoad(hipModule_t* module, const char* path) {
  if (!module || !path) return done(hipErrorInvalidValue);
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(hipErrorFileNotFound, std::string("cannot open '") + path + "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return load_module(module, bytes, std::string("module '") + path + "'");
}

HK_HIP_API hipError_t hipModuleLoadData(hipModule_t* module, const void* image) { return load_data(module, image); }

// JIT options have no meaning for precompiled code objects; they are ignored.
HK_HIP_API hipError_t hipModuleLoadDataEx(hipModule_t* module, const void* image, unsigned int /*num_options*/,
                                          hipJitOption* /*options*/, void** /*values*/) {
  return load_data(module, image);
}

HK_HIP_API hipError_t hipModuleUnload(hipModule_t module) {
  {
    std::lock_guard lock(g_modules_mu);
    if (!module || !modules().erase(module)) return done(hipErrorInvalidResourceHandle);
  }
  delete module;
  return hipSuccess;
}

namespace vgpu::hiprt {
ihipModuleSymbol_t* module_function(const void* handle) {
  std::lock_guard lock(g_modules_mu);
  for (ihipModule_t* m : modules())
    for (auto& [name, fn] : m->functions)
      if (fn.get() == handle) return fn.get();
  return nullptr;
}
}  // namespace vgpu::hiprt

HK_HIP_API hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module, const char* name) {
  if (!function || !name) return done(hipErrorInvalidValue);
  if (!valid_module(module)) return done(hipErrorInvalidResourceHandle);
  std::lock_guard lock(g_modules_mu);
  if (auto it = module->functions.find(name); it != module->functions.end()) {
    *function = it->second.get();
    return hipSuccess;
  }
  auto co = module->set.for_arch(Runtime::get().arch());
  if (!co || !co->find(name))
    return fail(hipErrorNotFound, std::string("kernel '") + name + "' is not in " + module->set.origin);
  auto fn = std::make_unique<ihipModuleSymbol_t>();
  fn->name = name;
  fn->source = module;
  *function = fn.get();
  module->functions.emplace(name, std::move(fn));
  return hipSuccess;
}

HK_HIP_API hipError_t hipModuleGetGlobal(hipDeviceptr_t* ptr, size_t* size, hipModule_t module, const char* name) {
  if (!valid_module(module) || !name) return done(hipErrorInvalidValue);
  auto co = module->set.for_arch(Runtime::get().arch());
  if (!co) return fail(hipErrorNoBinaryForGpu, "no code object for this device in " + module->set.origin);
  size_t n = 0;
  void* p = Runtime::get().device().global_address(co, name, &n);
  if (!p) return fail(hipErrorNotFound, std::string("variable '") + name + "' is not in " + module->set.origin);
  if (ptr) *ptr = p;
  if (size) *size = n;
  return hipSuccess;
}
