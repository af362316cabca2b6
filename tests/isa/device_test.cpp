// vgpu's core through its C++ API: code objects loaded from disk, kernels dispatched on each virtual arch.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <numeric>
#include <random>

#include "vgpu/device.h"
#include "vgpu/kernarg.h"

namespace {

struct Fixture {
  vgpu::Device dev;
  std::shared_ptr<const vgpu::CodeObject> co;
  explicit Fixture(vgpu::Arch arch) : dev(arch) {
    std::string path = std::string(HK_ISA_KERNELS_DIR) + "/device_kernels." + std::string(vgpu::arch_info(arch).name) + ".co";
    std::ifstream f(path, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), {});
    co = vgpu::load_code_object(bytes);
  }
  template <class... A>
  vgpu::Fault launch(const char* name, vgpu::Dim3 grid, vgpu::Dim3 block, vgpu::DispatchStats* st, A... args) {
    const vgpu::KernelInfo* k = co->find(name);
    EXPECT_NE(k, nullptr) << name;
    const void* ptrs[] = {&args...};
    auto ka = vgpu::build_kernarg(*k, ptrs, grid, block, 0);
    vgpu::LaunchParams lp{grid, block, 0, ka.data(), ka.size()};
    return dev.dispatch(co, *k, lp, st);
  }
  template <class T>
  T* alloc(size_t n) { return static_cast<T*>(dev.memory().allocate(n * sizeof(T))); }
};

class Core : public testing::TestWithParam<vgpu::Arch> {};

TEST_P(Core, VectorAddRaggedTail) {
  Fixture fx(GetParam());
  const int n = 1000;  // 4 workgroups of 256, the last one 232 live
  float *a = fx.alloc<float>(n), *b = fx.alloc<float>(n), *c = fx.alloc<float>(n + 64);
  for (int i = 0; i < n; ++i) a[i] = float(i) * 0.5f, b[i] = float(3 * i) - 7.f;
  for (int i = 0; i < n + 64; ++i) c[i] = -1.f;
  vgpu::DispatchStats st;
  auto f = fx.launch("vadd", {4}, {256}, &st, a, b, c, n);
  ASSERT_FALSE(f) << f.message();
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << i;
  for (int i = n; i < n + 64; ++i) ASSERT_EQ(c[i], -1.f) << "tail lane " << i << " was written";
  EXPECT_EQ(st.waves, 16u);
  EXPECT_GT(st.wave_instructions, 16u * 10);
}

TEST_P(Core, BlockSumThroughLds) {
  Fixture fx(GetParam());
  const int n = 5000, block = 512, groups = (n + block - 1) / block;
  int *in = fx.alloc<int>(n), *out = fx.alloc<int>(groups);
  std::mt19937 rng(1);
  for (int i = 0; i < n; ++i) in[i] = int(rng() % 2001) - 1000;
  auto f = fx.launch("block_sum", {uint32_t(groups)}, {uint32_t(block)}, nullptr, in, out, n);
  ASSERT_FALSE(f) << f.message();
  for (int g = 0; g < groups; ++g) {
    int want = 0;
    for (int i = g * block; i < std::min(n, (g + 1) * block); ++i) want += in[i];
    EXPECT_EQ(out[g], want) << "workgroup " << g;
  }
}

TEST_P(Core, ThreeDimensionalIds) {
  Fixture fx(GetParam());
  vgpu::Dim3 grid{3, 2, 2}, block{8, 4, 3};
  const uint32_t w = grid.x * block.x, h = grid.y * block.y, d = grid.z * block.z;
  unsigned* out = fx.alloc<unsigned>(w * h * d);
  auto f = fx.launch("coords", grid, block, nullptr, out);
  ASSERT_FALSE(f) << f.message();
  for (uint32_t z = 0; z < d; ++z)
    for (uint32_t y = 0; y < h; ++y)
      for (uint32_t x = 0; x < w; ++x) {
        unsigned want = x % block.x | (y % block.y) << 8 | (z % block.z) << 16 | (x / block.x) << 24 |
                        (y / block.y) << 27 | (z / block.z) << 30;
        ASSERT_EQ(out[(z * h + y) * w + x], want) << x << "," << y << "," << z;
      }
}

TEST_P(Core, OutOfBoundsStoreIsAFault) {
  Fixture fx(GetParam());
  int* p = fx.alloc<int>(16);
  auto f = fx.launch("store_at", {1}, {64}, nullptr, p, long(1) << 30);
  ASSERT_EQ(f.kind, vgpu::FaultKind::memory_out_of_bounds);
  std::string m = f.message();
  EXPECT_NE(m.find("store_at"), std::string::npos) << m;
  EXPECT_NE(m.find("global_store_dword"), std::string::npos) << m;
  EXPECT_NE(m.find("wave 0"), std::string::npos) << m;
  EXPECT_NE(m.find("lane 0"), std::string::npos) << m;
  // The device stays usable.
  auto ok = fx.launch("store_at", {1}, {64}, nullptr, p, long(3));
  EXPECT_FALSE(ok) << ok.message();
  EXPECT_EQ(p[3], 1);
}

TEST_P(Core, DeviceGlobals) {
  Fixture fx(GetParam());
  size_t size = 0;
  auto* count = static_cast<unsigned*>(fx.dev.global_address(fx.co, "hit_count", &size));
  ASSERT_NE(count, nullptr);
  EXPECT_EQ(size, 4u);
  auto* bias = static_cast<float*>(fx.dev.global_address(fx.co, "bias", &size));
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(*bias, 0.25f);  // initialised data came with the image
  *bias = 1.5f;             // written from the host, read by the kernel through a relocated pointer
  *count = 100;
  EXPECT_EQ(fx.dev.global_address(fx.co, "no_such_variable"), nullptr);
  float* out = fx.alloc<float>(128);
  auto f = fx.launch("use_globals", {1}, {128}, nullptr, out);
  ASSERT_FALSE(f) << f.message();
  const float table[4] = {0.5f, 2.f, -1.f, 8.f};
  for (int t = 0; t < 128; ++t) ASSERT_EQ(out[t], float(t) * table[t % 4] + 1.5f) << t;
  EXPECT_EQ(*count, 228u);
}

// The LDS bank-conflict profile: extra cycles of the stride kernel's ds_read_b32 per arch's bank model.
TEST_P(Core, LdsBankConflictProfile) {
  Fixture fx(GetParam());
  fx.dev.set_profiling(true);
  float* out = fx.alloc<float>(64);
  const bool g950 = vgpu::arch_info(GetParam()).lds_banks == 64;
  // stride -> extra cycles of one ds_read_b32: gfx90a and gfx942 have 32 banks and two phases of 32 lanes, gfx950 64
  // banks, one phase.
  const std::pair<int, uint64_t> cases[] = {{1, 0}, {2, g950 ? 1u : 2u}, {32, g950 ? 31u : 62u}, {64, g950 ? 63u : 62u}};
  for (auto [stride, extra] : cases) {
    vgpu::DispatchStats st;
    auto f = fx.launch("lds_stride", {1}, {64}, &st, out, stride);
    ASSERT_FALSE(f) << f.message();
    for (int t = 0; t < 64; ++t) ASSERT_EQ(out[t], float(t));
    ASSERT_TRUE(st.profiled);
    const vgpu::InstructionProfile* read = nullptr;
    for (auto& ip : st.instructions)
      if (ip.text.starts_with("ds_read_b32")) read = &ip;
    ASSERT_NE(read, nullptr);
    EXPECT_EQ(read->lds_accesses, 1u);
    EXPECT_EQ(read->lds_conflict_cycles, extra) << "stride " << stride << ": " << read->text;
    EXPECT_GE(st.lds_conflict_cycles, 2 * extra) << "the write conflicts like the read";
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, Core, testing::Values(vgpu::Arch::gfx90a, vgpu::Arch::gfx942, vgpu::Arch::gfx950),
                         [](const auto& info) { return std::string(vgpu::arch_info(info.param).name); });

}  // namespace
