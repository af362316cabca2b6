// Shared by the tile-library tests: device buffers, bf16/f16 quantisation on the host, tolerant comparison, vgpu's
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

#include "hk/arch/target.h"
#include "vgpu/hip_ext.h"

#define HIP_OK(x) ASSERT_EQ((x), hipSuccess) << hipGetErrorString(x)

namespace hktest {

// Host model of the device types: round to nearest even, independent of the device's conversion code.
inline float quantize_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float quantize_f16(float f) { return float(_Float16(f)); }

template <class T>
float quantize(float f) {
  if constexpr (std::is_same_v<T, __bf16>) return quantize_bf16(f);
  else if constexpr (std::is_same_v<T, _Float16>) return quantize_f16(f);
  else return f;
}

template <class T>
struct Buffer {
  T* dev = nullptr;
  std::vector<float> host;  // the exact values the device holds, as float
  explicit Buffer(size_t n, uint32_t seed = 0, float scale = 1.f) : host(n) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<T> raw(n);
    for (size_t i = 0; i < n; ++i) {
      host[i] = seed ? quantize<T>(u(rng)) : 0.f;
      raw[i] = T(host[i]);
    }
    EXPECT_EQ(hipMalloc(&dev, n * sizeof(T)), hipSuccess);
    EXPECT_EQ(hipMemcpy(dev, raw.data(), n * sizeof(T), hipMemcpyHostToDevice), hipSuccess);
  }
  ~Buffer() { (void)hipFree(dev); }
  std::vector<float> read() const {
    std::vector<T> raw(host.size());
    EXPECT_EQ(hipMemcpy(raw.data(), dev, raw.size() * sizeof(T), hipMemcpyDeviceToHost), hipSuccess);
    std::vector<float> out(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) out[i] = float(raw[i]);
    return out;
  }
};

// |got - want| <= atol + rtol * |want| everywhere; reports the first few misses.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, float atol, float rtol,
                         const char* what) {
  ASSERT_EQ(got.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok = std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i]) ||
              (std::isnan(got[i]) && std::isnan(want[i])) || got[i] == want[i];
    if (!ok && bad++ < 5) ADD_FAILURE() << what << " [" << i << "]: got " << got[i] << " want " << want[i];
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " elements differ";
}

inline bool is_gfx950() {
  const hk::arch::target* t = hk::arch::device_target(0);
  return t && t->id == hk::arch::target_id::gfx950;
}

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
