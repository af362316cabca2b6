// The registration ABI clang emits into HIP host programs: each translation unit's module constructor registers
// its fat binary, then every kernel stub and device variable in it; the matching destructor unregisters them.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "runtime.h"

namespace vgpu::hiprt {
namespace {

// What __hipRegisterFatBinary receives: clang's __hip_fatbin_wrapper ("HIPF"), pointing at an offload bundle.
struct FatBinaryWrapper {
  uint32_t magic;
  uint32_t version;
  const void* binary;
  const void* unused;
};
constexpr uint32_t kFatBinaryMagic = 0x48495046;  // "FPIH" in memory

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIxPTR, reinterpret_cast<uintptr_t>(p));
  return buf;
}

// The archs of a bundle's entries, from their triples ("hipv4-amdgcn-amd-amdhsa--gfx950:xnack-"), in order.
std::vector<Arch> bundle_archs(std::span<const uint8_t> bytes) {
  std::vector<Arch> archs;
  for (const BundleEntry& e : read_offload_bundle(bytes)) {
    auto dash = e.triple.rfind("--");
    if (dash == std::string::npos) continue;
    if (auto a = parse_arch(std::string_view(e.triple).substr(dash + 2))) archs.push_back(*a);
  }
  return archs;
}

// True the first time it is called for `key`: a kernel that cannot run is reported on stderr once, not per launch.
bool first_report(const std::string& key) {
  static std::mutex mu;
  static auto* seen = new std::set<std::string>;
  std::lock_guard lock(mu);
  return seen->insert(key).second;
}

}  // namespace

uint64_t readable_extent(const void* p) {
  const uint64_t at = reinterpret_cast<uint64_t>(p);
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (!maps) return 0;
  uint64_t end = 0;
  char line[512];
  while (std::fgets(line, sizeof line, maps)) {
    unsigned long long lo = 0, hi = 0;
    char perms[8] = {};
    if (std::sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) != 3) continue;
    const bool readable = perms[0] == 'r';
    if (end == 0 && readable && lo <= at && at < hi) end = hi;
    else if (end != 0 && lo == end && readable) end = hi;
    else if (end != 0) break;
  }
  std::fclose(maps);
  return end > at ? end - at : 0;
}

std::shared_ptr<const CodeObject> CodeSet::for_arch(Arch arch) const {
  for (const auto& co : objects)
    if (co->arch == arch) return co;
  return nullptr;
}

std::string CodeSet::arch_list() const {
  std::string s;
  for (const auto& co : objects) {
    if (!s.empty()) s += ", ";
    s += arch_info(co->arch).name;
  }
  return s.empty() ? "none" : s;
}

FatBinary::FatBinary(const uint8_t* bundle, size_t size) : bytes_(bundle, size) {
  code_.origin = "fat binary at " + hex(bundle);
}

const CodeSet& FatBinary::code() {
  std::call_once(once_, [this] {
    if (bytes_.empty()) {
      code_.error = "the registered fat binary holds no offload bundle";
      return;
    }
    try {
      code_.objects = load_any(bytes_);
    } catch (const std::exception& e) {
      code_.error = e.what();
    }
  });
  return code_;
}

hipError_t resolve(ihipModuleSymbol_t& fn, ResolvedKernel& out, hipError_t missing) {
  Runtime& rt = Runtime::get();
  const CodeSet& set = fn.source->code();
  if (!set.error.empty())
    return fail(hipErrorInvalidImage, "kernel " + fn.name + ": cannot load the " + set.origin + ": " + set.error,
                first_report(fn.name));
  Arch arch = rt.arch();
  out.object = set.for_arch(arch);
  if (!out.object) {
    return fail(hipErrorNoBinaryForGpu,
                "kernel " + fn.name + " has no code object for the device's arch " + std::string(arch_info(arch).name) +
                    " (the " + set.origin + " has: " + set.arch_list() + "); set HK_VGPU_ARCH or add --offload-arch=" +
                    std::string(arch_info(arch).name),
                first_report(fn.name));
  }
  out.info = out.object->find(fn.name);
  if (!out.info)
    return fail(missing, "kernel " + fn.name + " is not in the " + std::string(arch_info(arch).name) +
                             " code object of the " + set.origin);
  return hipSuccess;
}

}  // namespace vgpu::hiprt

using namespace vgpu;
using namespace vgpu::hiprt;

HK_HIP_API void** __hipRegisterFatBinary(const void* data) {
  Runtime& rt = Runtime::get();
  auto* wrapper = static_cast<const FatBinaryWrapper*>(data);
  const uint8_t* bundle = nullptr;
  size_t size = 0;
  if (wrapper && wrapper->magic == kFatBinaryMagic && wrapper->binary) {
    bundle = static_cast<const uint8_t*>(wrapper->binary);
    try {
      size = offload_bundle_size(bundle);
      if (const uint64_t mapped = readable_extent(bundle); size > mapped)
        throw Error("its header claims " + std::to_string(size) + " bytes, only " + std::to_string(mapped) +
                    " are mapped there: the header is corrupt");
      rt.suggest_arch(bundle_archs({bundle, size}));
    } catch (const std::exception& e) {
      if (!quiet()) std::fprintf(stderr, "vgpu: cannot read the fat binary at %p: %s\n", wrapper->binary, e.what());
      bundle = nullptr;
      size = 0;
    }
  } else if (!quiet()) {
    std::fprintf(stderr, "vgpu: __hipRegisterFatBinary: not a HIP fat binary wrapper at %p\n", data);
  }
  // Even a bad binary gets a handle: its kernels then fail at launch with a message instead of being unknown.
  return reinterpret_cast<void**>(rt.add_fat_binary(bundle, size));
}

HK_HIP_API void __hipRegisterFunction(void** modules, const void* host_function, char* /*device_function*/,
                                      const char* device_name, unsigned int /*thread_limit*/, uint3* /*tid*/,
                                      uint3* /*bid*/, dim3* /*block_dim*/, dim3* /*grid_dim*/, int* /*wave_size*/) {
  if (!modules || !host_function || !device_name) return;
  Runtime::get().add_function(reinterpret_cast<FatBinary*>(modules), host_function, device_name);
}

HK_HIP_API void __hipRegisterVar(void** modules, void* var, char* /*host_var*/, char* device_var, int /*ext*/,
                                 size_t size, int constant, int /*global*/) {
  if (!modules || !var) return;
  // Recorded only: vgpu does not yet expose where a code object's variables live on the device, so
  // hipMemcpyToSymbol and friends report hipErrorNotSupported.
  Runtime::get().add_variable(reinterpret_cast<FatBinary*>(modules), var, device_var, size, constant != 0);
}

HK_HIP_API void __hipRegisterManagedVar(void* modules, void** pointer, void* init_value, const char* name,
                                        size_t size, unsigned /*align*/) {
  if (!modules || !pointer) return;
  // The host side of a __managed__ variable is a pointer to managed memory holding the initial value.
  void* p = Runtime::get().allocate(size ? size : 1, hipMemoryTypeManaged, 0);
  if (p && init_value && size) std::memcpy(p, init_value, size);
  *pointer = p;
  Runtime::get().add_variable(reinterpret_cast<FatBinary*>(modules), pointer, name, size, false);
}

HK_HIP_API void __hipRegisterSurface(void**, void*, char*, char*, int, int) {}
HK_HIP_API void __hipRegisterTexture(void**, void*, char*, char*, int, int, int) {}

HK_HIP_API void __hipUnregisterFatBinary(void** modules) {
  if (modules) Runtime::get().remove_fat_binary(reinterpret_cast<FatBinary*>(modules));
}

// Host-side offloading of precompiled headers is not used by clang's HIP toolchain; report none.
HK_HIP_API void __hipGetPCH(const char** pch, unsigned int* size) {
  if (pch) *pch = nullptr;
  if (size) *size = 0;
}

HK_HIP_API hipError_t hipGetFuncBySymbol(hipFunction_t* function, const void* symbol) {
  if (!function || !symbol) return done(hipErrorInvalidValue);
  ihipModuleSymbol_t* fn = Runtime::get().find_function(symbol);
  if (!fn) return done(hipErrorInvalidDeviceFunction);
  *function = fn;
  return hipSuccess;
}
