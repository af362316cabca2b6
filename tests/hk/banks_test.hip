// The default shared-to-register paths are bank-conflict free on each arch, as vgpu's LDS model counts them.
#include <dlfcn.h>

#include <string>

#include "hk/hk.h"
#include "hk_test_util.h"
#include "vgpu/hip_ext.h"

using namespace hk;

// Loads a shared tile from global, then every wave reads it into a row-layout register tile and writes it back out.
template <class T, int R, int C, int Waves>
__global__ void shared_to_register(const T* in, T* out) {
  __shared__ st<T, R, C> s;
  gl<T, 1, 1, R, C> gin(const_cast<T*>(in), 1, 1, R, C), gout(out, 1, 1, R, C);
  load<group<Waves>>(s, gin, {});
  barrier();
  // Each wave takes a band of rows.
  constexpr int band = R / Waves;
  rt<T, band, C> r;
  load(r, s, {0, 0, wave_id(), 0});
  store(gl<T, 1, 1, R, C>(out, 1, 1, R, C), r, {0, 0, wave_id(), 0});
}

// vgpu's extension functions, looked up at run time: the test links libamdhip64 the ordinary way.
template <class F>
F ext(const char* name) {
  F f = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  EXPECT_NE(f, nullptr) << name << " not found: is the runtime vgpu?";
  return f;
}

struct ReadStats {
  unsigned long long reads = 0, conflicts = 0;
  std::string example;
};

ReadStats last_ds_reads() {
  std::vector<vgpuInstructionProfile> p(4096);
  auto get = ext<int (*)(vgpuInstructionProfile*, int)>("vgpuGetLastDispatchInstructions");
  if (!get) return {};
  int n = get(p.data(), int(p.size()));
  ReadStats s;
  for (int i = 0; i < n && i < int(p.size()); ++i)
    if (std::string(p[i].text).starts_with("ds_read")) {
      s.reads += p[i].lds_accesses;
      s.conflicts += p[i].lds_conflict_cycles;
      if (s.example.empty()) s.example = p[i].text;
    }
  return s;
}

template <class T, int R, int C, int Waves>
void check() {
  hktest::Buffer<T> in(R * C, 11), out(R * C);
  auto set_profiling = ext<int (*)(int)>("vgpuSetProfiling");
  if (!set_profiling) return;
  set_profiling(1);
  hipLaunchKernelGGL((shared_to_register<T, R, C, Waves>), dim3(1), dim3(64 * Waves), 0, 0, in.dev, out.dev);
  HIP_OK(hipDeviceSynchronize());
  set_profiling(0);
  hktest::expect_close(out.read(), in.host, 0, 0, "round trip through shared and registers");
  ReadStats s = last_ds_reads();
  EXPECT_GT(s.reads, 0u) << "no LDS reads were profiled";
  EXPECT_EQ(s.conflicts, 0u) << "shared->register reads of st<" << R << "," << C << "> conflict (" << s.example << ")";
  // The reads are the arch's widest: 64-bit on gfx942 (ds_read_b64 or its two-address form), 128-bit on gfx950.
  EXPECT_NE(s.example.find(hktest::is_gfx950() ? "_b128" : "_b64"), std::string::npos) << s.example;
}

TEST(Banks, Bf16_64x64) { check<bf16, 64, 64, 4>(); }
TEST(Banks, Bf16_128x128) { check<bf16, 128, 128, 4>(); }
TEST(Banks, F16_32x256) { check<half, 32, 256, 2>(); }
TEST(Banks, Bf16_16x64Narrow) { check<bf16, 16, 64, 1>(); }
// gfx942's K step in the pipelined GEMM: 64-byte rows. (On gfx950, 64-byte rows still cost 16 cycles per load: its
// ds_read_b128 phases pair rows 4-11 of one chunk with rows 0-3 and 12-15 of the next, which this swizzle does not
// separate; gfx950's default K step keeps rows at 128 bytes.)
TEST(Banks, Bf16_64x32Narrow) {
  if (hktest::is_gfx950()) GTEST_SKIP() << "64-byte rows are not a default gfx950 configuration";
  check<bf16, 64, 32, 4>();
}
TEST(Banks, Bf16_256x64) { check<bf16, 256, 64, 8>(); }      // gfx950's: 128-byte rows
