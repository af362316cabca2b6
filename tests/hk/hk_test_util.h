// Shared by the tile-library tests: device buffers of tile element types over the host toolkit (tests/host/), vgpu's
// profiler (LDS accesses and bank conflicts per instruction), and a per-family summary of the cases each program ran.
#pragma once
#include <dlfcn.h>
#include <hip/hip_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hk/hk.h"
#include "host/device.h"
#include "host/gtest.h"
#include "vgpu/hip_ext.h"
#include "hip/hip_check.h"

namespace hktest {

// The element type T as the device stores it (the host toolkit's model of it).
template <class T>
hk_host::Format format_of() {
  using hk_host::Type;
  if constexpr (std::is_same_v<T, float>) return hk_host::device_format(Type::fp32);
  else if constexpr (std::is_same_v<T, __bf16>) return hk_host::device_format(Type::bf16);
  else if constexpr (std::is_same_v<T, _Float16>) return hk_host::device_format(Type::f16);
  else return hk_host::device_format(T::format == hk::arch::fp8_format::e5m2 ? Type::fp8_e5m2 : Type::fp8_e4m3);
}

// f rounded to T, as storing it in a T tile does.
template <class T>
float quantize(float f) {
  return format_of<T>().round(f);
}

// n elements of T on the device: seeded random values exact in T within [-limit, limit] (hk_host::random_values), or
// zeros for seed 0; `host` holds them as floats.
template <class T>
struct Buffer {
  T* dev = nullptr;
  std::vector<float> host;
  explicit Buffer(size_t n, uint32_t seed = 0, float limit = 1.f)
      : host(seed ? hk_host::random_values(n, format_of<T>(), seed, limit) : std::vector<float>(n)) {
    EXPECT_EQ(hipMalloc(&dev, n * sizeof(T)), hipSuccess);
    upload();
  }
  ~Buffer() { (void)hipFree(dev); }
  void upload() {
    const std::vector<uint8_t> raw = format_of<T>().encode(host);
    EXPECT_EQ(hipMemcpy(dev, raw.data(), raw.size(), hipMemcpyHostToDevice), hipSuccess);
  }
  std::vector<float> read() const {
    std::vector<uint8_t> raw(host.size() * sizeof(T));
    EXPECT_EQ(hipMemcpy(raw.data(), dev, raw.size(), hipMemcpyDeviceToHost), hipSuccess);
    return format_of<T>().decode(raw);
  }
};

using hk_host::expect_close;

// vgpu's extension functions, looked up at run time (the tests link libamdhip64 the ordinary way): null on ROCm.
template <class F>
F vgpu_ext(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

// Turns vgpu's per-instruction profile on or off for later launches; false when the runtime is not vgpu.
inline bool set_profiling(bool on) {
  auto f = vgpu_ext<int (*)(int)>("vgpuSetProfiling");
  return f && f(on ? 1 : 0) == 0;
}

// LDS traffic of the last profiled dispatch, summed over the executed instructions whose text starts with `prefix`.
struct LdsStats {
  unsigned long long accesses = 0, conflict_cycles = 0;
  std::map<std::string, unsigned long long> mnemonics;  // mnemonic -> conflict cycles
  std::string example;                                  // the first matching instruction's text
  bool has(const std::string& mnemonic) const { return mnemonics.count(mnemonic) != 0; }
};

inline LdsStats last_lds(const char* prefix) {
  LdsStats s;
  auto get = vgpu_ext<int (*)(vgpuInstructionProfile*, int)>("vgpuGetLastDispatchInstructions");
  if (!get) return s;
  std::vector<vgpuInstructionProfile> p(8192);
  const int n = get(p.data(), int(p.size()));
  for (int i = 0; i < n && i < int(p.size()); ++i) {
    const std::string text = p[i].text;
    if (!text.starts_with(prefix) || !p[i].executed) continue;
    s.accesses += p[i].lds_accesses;
    s.conflict_cycles += p[i].lds_conflict_cycles;
    s.mnemonics[text.substr(0, text.find(' '))] += p[i].lds_conflict_cycles;
    if (s.example.empty()) s.example = text;
  }
  return s;
}

// The executed instructions of the last profiled dispatch (their disassembly).
inline std::vector<std::string> last_instructions() {
  std::vector<std::string> out;
  auto get = vgpu_ext<int (*)(vgpuInstructionProfile*, int)>("vgpuGetLastDispatchInstructions");
  if (!get) return out;
  std::vector<vgpuInstructionProfile> p(8192);
  const int n = get(p.data(), int(p.size()));
  for (int i = 0; i < n && i < int(p.size()); ++i)
    if (p[i].executed) out.push_back(p[i].text);
  return out;
}

// At the end of every hk test program: one line per test suite (an op family) with the cases it ran.
class FamilySummary : public testing::EmptyTestEventListener {
  void OnTestProgramEnd(const testing::UnitTest& u) override {
    const char* arch = std::getenv("HK_VGPU_ARCH");
    int total = 0, passed = 0, skipped = 0;
    for (int i = 0; i < u.total_test_suite_count(); ++i) {
      const testing::TestSuite* t = u.GetTestSuite(i);
      if (!t->should_run()) continue;
      std::printf("[hk summary] %-12s %3d cases run: %3d passed, %d skipped, %d failed (%s)\n", t->name(),
                  t->test_to_run_count(), t->successful_test_count(), t->skipped_test_count(), t->failed_test_count(),
                  arch ? arch : "default device");
      total += t->test_to_run_count(), passed += t->successful_test_count(), skipped += t->skipped_test_count();
    }
    std::printf("[hk summary] %-12s %3d cases run: %3d passed, %d skipped, %d failed\n", "all", total, passed, skipped,
                total - passed - skipped);
  }
};
inline const bool family_summary_registered = [] {
  testing::UnitTest::GetInstance()->listeners().Append(new FamilySummary);
  return true;
}();

}  // namespace hktest
