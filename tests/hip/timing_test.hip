// Calibration of vgpu's timing model (docs/vgpu-timing.md): microkernels whose limits are published, modelled on each
// product of the device's arch, must land within 10% of the published figure (timing.md, cdna.md):
//   - dense bf16 and fp8 MFMA peak, 4 independent accumulation chains per wave, one wave per SIMD: per clock, the data
//     sheet's peak at the peak clock; at the modelled (sustained) clock, AMD's measured Max-Achievable FLOPs [MAF]
//     where published (MI300X, MI325X): bf16 TFLOP/s, and the fp8 clock (see MfmaPeak);
//   - a dependent MFMA chain: 16 cycles per 16x16 MFMA (4 passes; timing.md 3);
//   - LDS read bandwidth per CU: 128 B/clk on gfx942 [RPC], 256 B/clk on gfx950 [B-G4];
//   - HBM streaming: a copy kernel. The model bounds HBM time by the table's sustained figure (MI300X's is the measured
//     STREAM copy, 4.11 TB/s [AZ]; the others are chosen), so matching it only shows the bound is applied; what the
//     test checks independently is the traffic: the copy must be limited by HBM with exactly its 2 x 256 MiB reaching it;
//   - occupancy: a CU holds 32 one-wave workgroups as it holds 8 four-wave ones (LLVM's getMaxWorkGroupsPerCU), and a
//     CU's short last round runs only the workgroups left for it;
//   - a returning atomic takes the Infinity Cache's latency (atomics bypass the L2 on MI300; rocprofiler-compute).
// Only the sampled workgroups are executed (sample-only mode), so each case takes well under a second.
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <string_view>
#include <vector>

#include "hip_check.h"
#include "hk/arch.h"
#include "vgpu/arch.h"
#include "vgpu/hip_ext.h"

namespace {
using hk::arch::f32x4;
using target = hk::arch::current;
}  // namespace

// Operand fragments with lane-dependent values (the model times them; the values only keep the compiler honest).
__device__ void fill(hk::arch::bf16_frag& a, hk::arch::bf16_frag& b) {
  for (int i = 0; i < hk::arch::mfma_elems; ++i) a[i] = __bf16(float(threadIdx.x % 7 + i)), b[i] = __bf16(0.5f);
}
__device__ void fill(target::fp8_frag<hk::arch::fp8_format::e4m3>& a, target::fp8_frag<hk::arch::fp8_format::e4m3>& b) {
  for (int i = 0; i < int(sizeof a.v / 4); ++i) a.v[i] = 0x38383838 + int(threadIdx.x % 3), b.v[i] = 0x30303030;
}

// Four accumulation chains per wave keep the matrix core busy whatever the chain latency is. (A bool, not the
// fragment type, picks the operands: fragment types differ per target, and the host pass must name the same kernel.)
template <bool Fp8>
__global__ void mfma_peak(float* out, int iters) {
  std::conditional_t<Fp8, target::fp8_frag<hk::arch::fp8_format::e4m3>, hk::arch::bf16_frag> a, b;
  fill(a, b);
  f32x4 c0 = {}, c1 = {}, c2 = {}, c3 = {};
  for (int i = 0; i < iters; i += 8) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      c0 = target::mma16(a, b, c0), c1 = target::mma16(b, a, c1);
      c2 = target::mma16(a, a, c2), c3 = target::mma16(b, b, c3);
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = c0[0] + c1[1] + c2[2] + c3[3];
}

// One chain: each MFMA accumulates into the previous one's result.
__global__ void mfma_chain(float* out, int iters) {
  hk::arch::bf16_frag a, b;
  for (int i = 0; i < hk::arch::mfma_elems; ++i) a[i] = __bf16(float(threadIdx.x % 5)), b[i] = __bf16(0.25f);
  f32x4 c = {};
  for (int i = 0; i < iters; i += 32) {
#pragma unroll
    for (int j = 0; j < 32; ++j) c = target::mma16(a, b, c);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = c[0];
}

// Each lane reads 16 consecutive bytes, the wave 1 KiB: conflict-free on both archs' bank models. Eight reads are in
// flight together (inline assembly, so nothing but the loop competes with them) and 16 waves share the CU's two LDS
// ports, so the ports are the limit.
__global__ void lds_read_bandwidth(float* out, int iters) {
  __shared__ float4 tile[1024];
  for (int i = threadIdx.x; i < 1024; i += blockDim.x) tile[i] = make_float4(float(i), 1.f, 2.f, 3.f);
  __syncthreads();
  // The low 32 bits of an LDS variable's flat address are its LDS offset; handing it to the assembly keeps the tile.
  const unsigned base = unsigned(reinterpret_cast<uintptr_t>(&tile[threadIdx.x % 64]));
  float4 v;
  for (int i = 0; i < iters; i += 8) {
    asm volatile(
        "ds_read_b128 %0, %1\n ds_read_b128 %0, %1 offset:1024\n ds_read_b128 %0, %1 offset:2048\n"
        "ds_read_b128 %0, %1 offset:3072\n ds_read_b128 %0, %1 offset:4096\n ds_read_b128 %0, %1 offset:5120\n"
        "ds_read_b128 %0, %1 offset:6144\n ds_read_b128 %0, %1 offset:7168\n s_waitcnt lgkmcnt(0)"
        : "=v"(v) : "v"(base) : "memory");
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = v.x + v.y + v.z + v.w;
}

// A chain of dependent global loads (each address comes from the previous value): latency-bound, so the time of a
// grid is how many waves a CU overlaps.
__global__ void load_chain(const int* in, int* out, int iters) {
  int idx = threadIdx.x % 64, sum = 0;
  for (int i = 0; i < iters; ++i) {
    const int v = in[idx];
    sum += v, idx = (idx + 64 + (v & 1)) & 4095;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// A chain of returning atomics: each lane's next address depends on the value the previous one returned.
__global__ void atomic_chain(int* counters, int* out, int iters) {
  int idx = threadIdx.x % 64, sum = 0;
  for (int i = 0; i < iters; ++i) {
    const int v = atomicAdd(&counters[idx], 1);
    sum += v, idx = (idx + 64 + ((v >> 30) & 1)) & 4095;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// Independent FMA chains: VALU-bound (each wave64 FMA holds its SIMD's vector unit 4 cycles), so a round's time is
// the waves per SIMD times one wave's work (a lone wave also issues its few scalar instructions in turns of its own).
__global__ void valu_loop(float* out, int iters) {
  float a[8];
  for (int j = 0; j < 8; ++j) a[j] = float(threadIdx.x + j);
  for (int i = 0; i < iters; i += 8) {  // 64 FMAs per loop branch: the loop's scalar work is a few percent
#pragma unroll
    for (int k = 0; k < 8; ++k)
#pragma unroll
      for (int j = 0; j < 8; ++j) a[j] = a[j] * 1.0001f + 0.5f;
  }
  float sum = 0;
  for (int j = 0; j < 8; ++j) sum += a[j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

__global__ void copy_stream(const float4* in, float4* out, size_t n) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = in[i];
}

namespace {

// vgpu's extension, looked up as a program that may also run on ROCm would.
template <class F>
F ext(const char* name) { return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name)); }
int set_timing(const char* product, int sample_only) {
  auto f = ext<int (*)(const char*, int)>("vgpuSetTiming");
  return f ? f(product, sample_only) : -1;
}
int last_timing(vgpuTimingInfo* out) {
  auto f = ext<int (*)(vgpuTimingInfo*)>("vgpuGetLastTiming");
  return f ? f(out) : -1;
}

// The products of the device's arch (the one lookup of arch names in this test).
std::vector<const vgpu::ProductInfo*> products_of_device() {
  std::vector<const vgpu::ProductInfo*> out;
  for (const vgpu::ProductInfo& p : vgpu::all_products())
    if (vgpu::arch_info(p.arch).name == test_arch()) out.push_back(&p);
  return out;
}

// Launches `launch` with the timing model on `product` (sample-only) and returns the model's report.
template <class F>
vgpuTimingInfo modelled(const vgpu::ProductInfo& product, F launch) {
  const std::string name(product.name);
  EXPECT_EQ(set_timing(name.c_str(), 1), 0);
  launch();
  EXPECT_EQ(hipGetLastError(), hipSuccess);
  EXPECT_EQ(hipDeviceSynchronize(), hipSuccess);
  vgpuTimingInfo t{};
  EXPECT_EQ(last_timing(&t), 0);
  set_timing(nullptr, 0);
  return t;
}

// AMD's measured Max-Achievable FLOPs (ROCm blog "Measuring Max-Achievable FLOPs - Part 2", Feb 2025), TFLOP/s;
// none is published for the CDNA4 products.
struct MaxAchievable {
  std::string_view product;
  double bf16_tflops, fp8_mhz;
};
constexpr MaxAchievable kPublishedMaf[] = {{"MI300X", 708, 1230}, {"MI325X", 843, 1464}};
const MaxAchievable* published_maf(const vgpu::ProductInfo& p) {
  for (const MaxAchievable& m : kPublishedMaf)
    if (m.product == p.name) return &m;
  return nullptr;
}

void expect_within(double got, double want, double tolerance, const char* what) {
  std::printf("  %s: modelled %.4g, published %.4g (%+.1f%%)\n", what, got, want, 100 * (got / want - 1));
  EXPECT_NEAR(got / want, 1.0, tolerance) << what << ": modelled " << got << ", published " << want;
}

TEST(TimingModel, MfmaPeak) {
  for (const vgpu::ProductInfo* p : products_of_device()) {
    SCOPED_TRACE(std::string(p->name));
    std::printf("%s\n", std::string(p->name).c_str());
    DeviceBuffer<float> out(size_t(p->compute_units) * 256);
    const int iters = 256;
    const auto bf16 = modelled(*p, [&] { mfma_peak<false><<<p->compute_units, 256>>>(out.ptr, iters); });
    const auto fp8 = modelled(*p, [&] { mfma_peak<true><<<p->compute_units, 256>>>(out.ptr, iters); });
    // Per clock: the throughput at the peak clock against the data sheet.
    const auto at_peak_clock = [](const vgpuTimingInfo& t) { return t.mfma_flops / t.cycles * t.peak_clock_ghz * 1e-3; };
    expect_within(at_peak_clock(bf16), p->peak.f16, 0.10, "bf16 TFLOP/s at the peak clock");
    expect_within(at_peak_clock(fp8), p->peak.fp8, 0.10, "fp8 TFLOP/s at the peak clock");
    EXPECT_GT(bf16.mfma_busy, 0.9);
    // In time: dense MFMA code runs at the sustained clock, below the peak.
    EXPECT_LT(bf16.clock_ghz, bf16.peak_clock_ghz);
    // bf16: MAF's GEMM keeps the matrix cores as busy as this microkernel (94%), so their TFLOP/s compare. fp8: MAF's
    // GEMM reaches only 83% MFMA use, below this microkernel's, so its TFLOP/s is no limit here; the sustained clock
    // it ran at is.
    if (const MaxAchievable* maf = published_maf(*p)) {
      expect_within(bf16.mfma_flops / bf16.seconds * 1e-12, maf->bf16_tflops, 0.10, "bf16 TFLOP/s against [MAF]");
      expect_within(fp8.clock_ghz * 1e3, maf->fp8_mhz, 0.10, "fp8 sustained MHz against [MAF]");
    }
  }
}

TEST(TimingModel, DependentMfmaChain) {
  for (const vgpu::ProductInfo* p : products_of_device()) {
    SCOPED_TRACE(std::string(p->name));
    std::printf("%s\n", std::string(p->name).c_str());
    DeviceBuffer<float> out(64);
    const int iters = 4096;
    const auto t = modelled(*p, [&] { mfma_chain<<<1, 64>>>(out.ptr, iters); });
    expect_within(t.round_cycles / iters, 16.0, 0.10, "cycles per dependent 16x16 MFMA");
  }
}

TEST(TimingModel, LdsReadBandwidth) {
  for (const vgpu::ProductInfo* p : products_of_device()) {
    SCOPED_TRACE(std::string(p->name));
    std::printf("%s\n", std::string(p->name).c_str());
    DeviceBuffer<float> out(1024);
    const int iters = 2048;
    const auto t = modelled(*p, [&] { lds_read_bandwidth<<<1, 1024>>>(out.ptr, iters); });
    const double bytes_per_clk = 16.0 * iters * 64 * 16 / t.round_cycles;
    expect_within(bytes_per_clk, 2.0 * p->timing.lds_port_bytes_per_clk, 0.10, "LDS B/clk per CU");
  }
}

TEST(TimingModel, HbmStreaming) {
  for (const vgpu::ProductInfo* p : products_of_device()) {
    SCOPED_TRACE(std::string(p->name));
    std::printf("%s\n", std::string(p->name).c_str());
    const size_t n = size_t(16) << 20;  // 256 MiB in, 256 MiB out: far past every cache
    DeviceBuffer<float4> in(n), out(n);
    ASSERT_TRUE(in.ptr && out.ptr);
    const unsigned grid = p->compute_units * 8;
    const auto t = modelled(*p, [&] { copy_stream<<<grid, 256>>>(in.ptr, out.ptr, n); });
    expect_within(2.0 * n * 16 / t.seconds * 1e-12, p->timing.hbm_measured_tb_per_s, 0.10, "copy TB/s");
    EXPECT_STREQ(t.limiter, "HBM bandwidth");
    EXPECT_NEAR(t.hbm_bytes / (2.0 * n * 16), 1.0, 0.01) << "HBM traffic of a 2 x 256 MiB copy";
  }
}

// Occupancy (LLVM's getMaxWorkGroupsPerCU, AMDGPUBaseInfo.cpp): a CU holds 8 waves per SIMD on each of its 4
// SIMDs, and a workgroup's waves take slots on any SIMD with room, so a CU holds 32 one-wave workgroups, as it holds
// 8 four-wave ones. The same 32 latency-bound waves per CU therefore take the same time in either grouping (one round).
TEST(TimingModel, OneWaveWorkgroupsFillTheCu) {
  for (const vgpu::ProductInfo* p : products_of_device()) {
    SCOPED_TRACE(std::string(p->name));
    std::printf("%s\n", std::string(p->name).c_str());
    const vgpu::ArchInfo& arch = vgpu::arch_info(p->arch);
    DeviceBuffer<int> in(4096), out(size_t(p->compute_units) * arch.max_waves_per_cu() * 64);
    HIP_ASSERT(hipMemset(in.ptr, 0, 4096 * sizeof(int)));
    const int iters = 64;
    const unsigned waves = p->compute_units * arch.max_waves_per_cu();
    const auto one = modelled(*p, [&] { load_chain<<<waves, 64>>>(in.ptr, out.ptr, iters); });
    const auto four = modelled(*p, [&] { load_chain<<<waves / 4, 256>>>(in.ptr, out.ptr, iters); });
    EXPECT_EQ(one.workgroups_per_cu, arch.max_waves_per_cu());
    EXPECT_EQ(four.workgroups_per_cu, arch.max_waves_per_cu() / 4);
    EXPECT_EQ(one.rounds, 1u);
    expect_within(one.seconds, four.seconds, 0.05, "one-wave workgroups against four-wave ones, s");
  }
}

// The dispatcher gives a CU its next workgroup when one ends, so a CU's short last round runs only what is left: 36
// one-wave workgroups per CU are a full round of 32 (8 per SIMD) and a round of 4 (1 per SIMD), which VALU-bound
// takes about 1/8 of a full one, not a second full round.
TEST(TimingModel, ShortLastRound) {
  for (const vgpu::ProductInfo* p : products_of_device()) {
    SCOPED_TRACE(std::string(p->name));
    std::printf("%s\n", std::string(p->name).c_str());
    const uint32_t per_cu = vgpu::arch_info(p->arch).max_waves_per_cu();
    DeviceBuffer<float> out(size_t(p->compute_units) * (per_cu + 4) * 64);
    const int iters = 512;
    const auto full = modelled(*p, [&] { valu_loop<<<p->compute_units * per_cu, 64>>>(out.ptr, iters); });
    const auto more = modelled(*p, [&] { valu_loop<<<p->compute_units * (per_cu + 4), 64>>>(out.ptr, iters); });
    EXPECT_EQ(full.rounds, 1u);
    EXPECT_EQ(more.rounds, 2u);
    expect_within(more.seconds / full.seconds, 1.0 + 4.0 / per_cu, 0.10, "time of 36 one-wave workgroups per CU over 32");
  }
}

// An atomic is performed beyond the L2: on MI300 every atomic bypasses it to the Infinity Cache (rocprofiler-compute,
// l2-cache.rst), so a returning atomic takes the MALL latency, 218 ns [CC] (timing.md 2); CDNA2's L2 is its
// coherence point. One wave's chain of dependent atomics takes that latency per link (plus a few issue slots).
TEST(TimingModel, AtomicLatency) {
  for (const vgpu::ProductInfo* p : products_of_device()) {
    SCOPED_TRACE(std::string(p->name));
    std::printf("%s\n", std::string(p->name).c_str());
    DeviceBuffer<int> counters(4096), out(64);
    HIP_ASSERT(hipMemset(counters.ptr, 0, 4096 * sizeof(int)));
    const int iters = 256;
    const auto t = modelled(*p, [&] { atomic_chain<<<1, 64>>>(counters.ptr, out.ptr, iters); });
    const double want = p->llc_bytes ? 218e-9 * 2.1e9 : double(p->timing.l2_latency);
    expect_within(t.round_cycles / iters, want, 0.10, "cycles per dependent atomic");
  }
}

TEST(TimingModel, OffByDefault) {
  DeviceBuffer<float> out(64);
  mfma_chain<<<1, 64>>>(out.ptr, 4);
  HIP_ASSERT(hipDeviceSynchronize());
  vgpuTimingInfo t{};
  EXPECT_EQ(last_timing(&t), 1);
}

}  // namespace
