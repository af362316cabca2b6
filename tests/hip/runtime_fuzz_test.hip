// Damaged binaries through the runtime, in process: this program's own offload bundle (as clang embeds it) and the
// module test's code objects, with 1 to 64 bytes changed, are registered (__hipRegisterFatBinary, as a program's
// constructor does) or loaded (hipModuleLoadData), then their kernels launched and the device synchronised. Every
// case must end in an error or a result, never a crash or a hang (HK_VGPU_INSTRUCTION_LIMIT bounds what a damaged
// kernel can run).
#include <elf.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "hip_check.h"

#ifndef HK_MODULE_DIR
#error "HK_MODULE_DIR must name the directory of the module code objects"
#endif

// Kernels of the bundle under test: memory, LDS and a barrier, and a printf (its hostcall buffer) never reached.
extern "C" __global__ void fuzz_scale(float* out, const float* in, float a, int n, int say) {
  __shared__ float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  if (i < n) out[i] = a * tile[blockDim.x - 1 - threadIdx.x];
  if (say > 1000) printf("lane %d of %d\n", i, n);
}

extern "C" __global__ void fuzz_sum(int* out, const int* in, int n) {
  int s = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += in[i];
  atomicAdd(out, s);
}

// The registration ABI clang's module constructors call (exported by libamdhip64).
extern "C" void** __hipRegisterFatBinary(const void* data);
extern "C" void __hipRegisterFunction(void** modules, const void* host_function, char* device_function,
                                      const char* device_name, unsigned int thread_limit, uint3* tid, uint3* bid,
                                      dim3* block_dim, dim3* grid_dim, int* wave_size);
extern "C" void __hipUnregisterFatBinary(void** modules);

namespace {

struct FatBinaryWrapper {
  uint32_t magic, version;
  const void* binary;
  const void* unused;
};

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The .hip_fatbin section of this program: the offload bundle clang embedded.
std::vector<uint8_t> own_fat_binary() {
  const std::vector<uint8_t> exe = read_file("/proc/self/exe");
  if (exe.size() < sizeof(Elf64_Ehdr)) return {};
  Elf64_Ehdr eh;
  std::memcpy(&eh, exe.data(), sizeof eh);
  if (eh.e_shoff + uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr) > exe.size() || eh.e_shstrndx >= eh.e_shnum) return {};
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  std::memcpy(sh.data(), exe.data() + eh.e_shoff, sh.size() * sizeof(Elf64_Shdr));
  for (const Elf64_Shdr& s : sh) {
    const uint64_t name = sh[eh.e_shstrndx].sh_offset + s.sh_name;
    if (name < exe.size() && std::strcmp(reinterpret_cast<const char*>(exe.data() + name), ".hip_fatbin") == 0 &&
        s.sh_offset + s.sh_size <= exe.size())
      return {exe.begin() + s.sh_offset, exe.begin() + s.sh_offset + s.sh_size};
  }
  return {};
}

// Changes 1 to 64 bytes: anywhere, in the first 512 bytes (bundle and ELF headers), or in one embedded ELF's
// headers and tables (found by its magic), each a third of the time.
void damage(std::vector<uint8_t>& bytes, std::mt19937_64& rng) {
  std::vector<size_t> elves;
  for (size_t i = 0; i + 4 <= bytes.size(); ++i)
    if (std::memcmp(bytes.data() + i, "\x7f" "ELF", 4) == 0) elves.push_back(i);
  const int count = 1 + int(rng() % 64);
  for (int k = 0; k < count; ++k) {
    size_t at = rng() % bytes.size();
    switch (rng() % 3) {
      case 0: break;
      case 1: at = rng() % std::min<size_t>(bytes.size(), 512); break;
      default:
        if (!elves.empty()) {
          const size_t elf = elves[rng() % elves.size()];
          Elf64_Ehdr eh;
          std::memcpy(&eh, bytes.data() + elf, std::min(sizeof eh, bytes.size() - elf));
          const uint64_t tables[] = {0, eh.e_phoff, eh.e_shoff};
          at = elf + tables[rng() % 3] + rng() % 256;
          if (at >= bytes.size()) at = rng() % bytes.size();
        }
    }
    switch (rng() % 4) {
      case 0: bytes[at] ^= uint8_t(1u << (rng() % 8)); break;
      case 1: bytes[at] = uint8_t(rng()); break;
      case 2: bytes[at] = 0xff; break;
      default: bytes[at] = 0; break;
    }
  }
}

// The host values of kernel arguments, each at the start of its own 1 MiB of zeros: the ABI passes no sizes, so the
// runtime copies as many bytes as the (damaged) metadata says, and they must be there to read. Argument arrays end in
// null pointers, which the runtime refuses, for metadata that claims more arguments.
struct HostArgs {
  static constexpr size_t kSpan = size_t(1) << 20;
  std::vector<uint8_t> storage = std::vector<uint8_t>(8 * kSpan, 0);
  void* pointers[16] = {};
  template <class T>
  void set(int i, T value) {
    std::memcpy(storage.data() + i * kSpan, &value, sizeof value);
    pointers[i] = storage.data() + i * kSpan;
  }
};

struct Buffers {
  DeviceBuffer<float> out{4096}, in{4096};
  DeviceBuffer<int> sum{1}, values{4096};
};

// Launches both kernels of a fat binary registered as a program's constructor would; returns how many ran cleanly.
int run_registered(const std::vector<uint8_t>& bundle, Buffers& b) {
  static char keys[2];  // host-side handles of the two kernels, as clang's stubs are
  FatBinaryWrapper wrapper{0x48495046, 1, bundle.data(), nullptr};
  void** handle = __hipRegisterFatBinary(&wrapper);
  if (!handle) return 0;
  __hipRegisterFunction(handle, &keys[0], const_cast<char*>("fuzz_scale"), "fuzz_scale", -1, nullptr, nullptr,
                        nullptr, nullptr, nullptr);
  __hipRegisterFunction(handle, &keys[1], const_cast<char*>("fuzz_sum"), "fuzz_sum", -1, nullptr, nullptr, nullptr,
                        nullptr, nullptr);
  int clean = 0;
  static HostArgs scale, sum;
  scale.set(0, b.out.ptr), scale.set(1, b.in.ptr), scale.set(2, 2.0f), scale.set(3, 1000), scale.set(4, 0);
  clean += hipLaunchKernel(&keys[0], dim3(4), dim3(256), scale.pointers, 0, nullptr) == hipSuccess;
  sum.set(0, b.sum.ptr), sum.set(1, b.values.ptr), sum.set(2, 1000);
  clean += hipLaunchKernel(&keys[1], dim3(1), dim3(128), sum.pointers, 0, nullptr) == hipSuccess;
  (void)hipDeviceSynchronize();
  (void)hipGetLastError();
  __hipUnregisterFatBinary(handle);
  return clean;
}

// Loads a code object with the module API and launches its scale_add; true if it ran cleanly.
bool run_module(const std::vector<uint8_t>& image, Buffers& b) {
  hipModule_t m = nullptr;
  if (hipModuleLoadData(&m, image.data()) != hipSuccess) return false;
  bool clean = false;
  hipFunction_t f = nullptr;
  if (hipModuleGetFunction(&f, m, "scale_add") == hipSuccess) {
    static HostArgs args;
    args.set(0, b.out.ptr), args.set(1, b.in.ptr), args.set(2, 3.0f), args.set(3, 1000);
    clean = hipModuleLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, nullptr, args.pointers, nullptr) == hipSuccess;
    (void)hipDeviceSynchronize();
  }
  (void)hipGetLastError();
  (void)hipModuleUnload(m);
  return clean;
}

int cases() {
  const char* env = std::getenv("HK_FUZZ_CASES");
  return env && *env ? std::atoi(env) : 2000;
}

}  // namespace

TEST(RuntimeFuzz, DamagedBundlesAndCodeObjectsNeverCrash) {
  // Bounds for what a damaged kernel may do, and quiet reports (each case may warn).
  setenv("HK_VGPU_INSTRUCTION_LIMIT", "200000", 1);
  setenv("HK_VGPU_BARRIER_WATCHDOG", "100000", 1);
  setenv("HK_VGPU_QUIET", "1", 1);
  const std::vector<uint8_t> bundle = own_fat_binary();
  ASSERT_GT(bundle.size(), 1000u) << "no .hip_fatbin section in /proc/self/exe";
  const std::vector<uint8_t> object = read_file(std::string(HK_MODULE_DIR) + "/module_kernels." + test_arch() + ".hsaco");
  ASSERT_GT(object.size(), 1000u);
  Buffers b;
  ASSERT_NE(b.out.ptr, nullptr);
  HIP_ASSERT(hipMemset(b.in.ptr, 0, b.in.bytes()));
  HIP_ASSERT(hipMemset(b.values.ptr, 0, b.values.bytes()));

  // The undamaged inputs run cleanly: the harness itself works.
  ASSERT_EQ(run_registered(bundle, b), 2);
  ASSERT_TRUE(run_module(object, b));

  const char* seed = std::getenv("HK_FUZZ_SEED");
  std::mt19937_64 rng(seed && *seed ? std::strtoull(seed, nullptr, 0) : 14);
  const int total = cases();
  int registered_clean = 0, module_clean = 0;
  for (int c = 0; c < total; ++c) {
    const bool module_path = c % 3 == 2;
    std::vector<uint8_t> damaged = module_path ? object : bundle;
    damage(damaged, rng);
    if (module_path) module_clean += run_module(damaged, b);
    else registered_clean += run_registered(damaged, b) == 2;
  }
  std::printf("%d damaged programs: %d registered bundles and %d module code objects still ran cleanly\n", total,
              registered_clean, module_clean);
  // The damage reached the runtime: most damaged programs were refused or faulted (else the harness ran nothing new).
  const int module_cases = total / 3, registered_cases = total - module_cases;
  EXPECT_LT(registered_clean, registered_cases / 2);
  EXPECT_LT(module_clean, module_cases / 2);

  // The runtime is still sound afterwards.
  EXPECT_EQ(run_registered(bundle, b), 2);
  EXPECT_TRUE(run_module(object, b));
}
