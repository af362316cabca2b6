// The one table of facts about the targets vgpu models: per arch, what the instruction set and the compute unit are
// (gfx90a = CDNA2, gfx942 = CDNA3, gfx950 = CDNA4); per product, what the chip built on it has (MI210, MI250X on
// gfx90a; MI300X, MI325X on gfx942; MI350X, MI355X on gfx950). The emulator and the HIP runtime's device properties read these fields (the timing model will
// too); nothing else in vgpu compares Arch values where the difference is a fact. Sources:
// ../shared/reference/cdna.md and timing.md (its short source names, [WP3], [D350]... are quoted in each row's
// `source`).
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace vgpu {

enum class Arch : uint8_t { gfx90a, gfx942, gfx950 };

// The variant of the 8-bit float formats (e4m3 "fp8", e5m2 "bf8") an arch's instructions use.
enum class Fp8Flavour : uint8_t {
  none,  // the arch has no 8-bit float instructions (gfx90a): nothing may read this field's formats for it
  fnuz,  // e4m3fnuz / e5m2fnuz: no negative zero, 0x80 is the only NaN, no infinities (gfx942)
  ocp,   // OCP e4m3fn / e5m2: e4m3 has no infinities and S.1111.111 is NaN; e5m2 is IEEE-like (gfx950)
};

// ISA and compute-unit facts, the same on every product of the arch.
struct ArchInfo {
  Arch arch;
  std::string_view name;          // "gfx942": the LLVM processor name
  uint32_t elf_mach;              // EF_AMDGPU_MACH_* in a code object's ELF header flags
  std::string_view family;        // "CDNA3"
  // The GFX version: 9.4.2 / 9.5.0. HIP reports major.minor as the compute capability, major*100 + minor*10 + stepping
  // as the old gcnArch, and major*10 + minor as a kernel's binary version.
  uint32_t version_major, version_minor, version_stepping;  // gfx90a: 9.0.10 (stepping 0xa, the "a")
  uint32_t wave_size;             // lanes per wave
  uint32_t simds_per_cu;
  uint32_t waves_per_simd;        // wave slots of one SIMD
  uint32_t registers_per_lane;    // unified VGPRs + AGPRs a wave may use, split by the kernel's accum_offset
  uint32_t lds_bytes;             // LDS a workgroup may allocate (all of one CU's LDS)
  uint32_t lds_banks;             // 4-byte banks for b32 reads (lds_banks.cpp models the other widths)
  Fp8Flavour fp8;
  // Loads straight into LDS (buffer_load_* ... lds, global_load_lds_*): the low bits of M0 that hold the LDS base
  // address, and the widest load per lane (gfx90a, gfx942: dword; gfx950 adds dwordx3 and dwordx4).
  uint32_t lds_dma_m0_bits;
  uint32_t lds_dma_max_bytes;
  // Image (texture) support as HIP reports it (hipDeviceAttributeImageSupport): texture objects and the image paths of
  // HIP's device headers. CDNA targets before gfx94x have it; gfx94x and gfx950 have none (__HIP_NO_IMAGE_SUPPORT).
  bool image_support = true;
  std::string_view default_product;  // the product vgpu stands in for unless HK_VGPU_PRODUCT names another
  std::string_view source;

  uint32_t max_waves_per_cu() const { return simds_per_cu * waves_per_simd; }
  // Workgroups of `waves` waves and `lds` bytes of LDS one CU holds at once (wave slots and LDS; registers are not
  // modelled): the occupancy HIP reports, and how many the dispatch keeps in flight per CU.
  uint32_t workgroups_per_cu(uint32_t waves, uint64_t lds) const {
    if (waves == 0) return 0;
    const uint64_t by_lds = lds ? lds_bytes / lds : ~uint64_t(0);
    return uint32_t(std::min<uint64_t>(max_waves_per_cu() / waves, by_lds));
  }
  uint32_t lds_dma_m0_mask() const { return (1u << lds_dma_m0_bits) - 1; }
};

// Peak dense throughput from the data sheets, in TFLOP/s; 0 where the product has no such path.
struct PeakTflops {
  double f16;          // bf16 and f16 matrix (the same rate)
  double fp8;          // fp8 / bf8 matrix
  double fp6_fp4;      // MXFP6 / MXFP4 matrix
  double xf32;         // TF32-like matrix
  double fp32_matrix, fp32_vector;
  double fp64_matrix, fp64_vector;
};

// What the timing model (vgpu/src/timing) needs beyond the rows above, in engine clocks at the peak clock. Sources
// as timing.md grades them (H official, M one good source or derived, L weak); a value no source gives is marked
// "chosen" in `source`, with how it was chosen.
struct TimingFacts {
  uint32_t lds_latency;            // ds_read issue to data, cycles
  uint32_t lds_port_bytes_per_clk; // one LDS port, shared by a pair of SIMDs (two ports per CU)
  uint32_t smem_latency;           // s_load issue to data (scalar L1 hit)
  uint32_t l2_latency;             // vector load that hits L2
  uint32_t hbm_latency;            // vector load that misses to HBM
  uint32_t atomic_latency;         // vector atomic (returning or not) to its completion: performed in the Infinity Cache
  uint32_t vmem_bytes_per_clk_cu;  // vector L1 <-> CU
  uint32_t l2_bytes_per_clk_xcd;   // L2 read bandwidth of one XCD
  double hbm_measured_tb_per_s;    // sustained streaming bandwidth (the device-level memory roofline)
  uint32_t wait_state_cycles;      // one s_nop wait state
  uint32_t branch_cycles;          // a wave's next issue after a branch
  uint32_t barrier_cycles;         // s_barrier release after the last wave arrives
  // The issue model's unit rates (timing/model.cpp; timing.md 4 and 3). The same on every CDNA product, so given once
  // here with their sources rather than per table row.
  uint32_t valu_cycles = 4;           // a wave64 VALU op on the SIMD's 16 lanes: 4 cycles (timing.md 4, H [RPC])
  uint32_t transcendental_cycles = 16;  // quarter rate: 4 ops/SIMD/clk (timing.md 4, H [CC])
  uint32_t mfma_pass_cycles = 4;      // one MFMA pass (timing.md 3, H)
  // A VALU instruction may issue this many cycles after an 8- or 16-bit MFMA on the same SIMD (timing.md 3,
  // co-execution [CALC], H); the model applies it to every MFMA (f32/f64 ones cannot co-execute at all: L).
  uint32_t mfma_issue_cycles = 4;
  uint32_t sleep_cycles = 64;         // s_sleep N: about 64 x N clocks (the CDNA3 ISA guide's S_SLEEP text, M)
  // The backlog, in cycles of transfer, past which the vector memory pipe / an LDS port accepts no more requests
  // (a wave trying to issue waits: StallCause::queue_full). Chosen, no source: hardware queues are finite, and these
  // keep a wave from queueing unbounded work; 256 is about a dozen wave64 dwordx4 loads at vL1's 128 B/clk, 64 about
  // four ds_read_b128 at 64 B/clk per port. Neither binds in the calibration kernels (tests/hip/timing_test.hip).
  uint32_t vmem_queue_cycles = 256;
  uint32_t lds_queue_cycles = 64;
  // The engine clock under sustained dense MFMA load, by the MFMA's input type: power management holds a chip running
  // dense matrix code well below its peak clock. Measured at the MFMA use `mfma_clock_use_*` (the model scales
  // between the peak clock at no MFMA activity and this clock at that use or more, timing/model.cpp).
  uint32_t mfma_clock_mhz_f16 = 0, mfma_clock_mhz_bf16 = 0, mfma_clock_mhz_fp8 = 0;
  double mfma_clock_use_16bit = 0, mfma_clock_use_fp8 = 0;
  std::string_view source;
  std::string_view hbm_source = {};    // of hbm_measured_tb_per_s
  std::string_view clock_source = {};  // of the mfma_clock_* fields
};

// A product: the chip built on an arch.
struct ProductInfo {
  std::string_view name;          // "MI300X"
  Arch arch;
  uint32_t compute_units;
  uint32_t xcds;                  // accelerator dies; workgroups go to them round-robin
  uint32_t peak_clock_mhz;        // peak engine clock
  uint64_t hbm_bytes;
  uint32_t hbm_pin_mbps;          // HBM data rate per pin
  uint32_t hbm_bus_bits;
  double hbm_tb_per_s;            // peak HBM bandwidth (data sheet)
  uint32_t l2_bytes_per_xcd;
  uint64_t llc_bytes;             // Infinity Cache (MALL), shared by all XCDs
  PeakTflops peak;
  uint32_t pci_device_id;
  std::string_view source;
  TimingFacts timing;

  // hipDeviceProp_t::memoryClockRate (kHz): the pin rate / 4, as ROCm reports it (5.2 Gbps -> 1,300,000 kHz).
  uint32_t memory_clock_khz() const { return hbm_pin_mbps * 1000 / 4; }
};

namespace facts {
inline constexpr uint64_t GiB = uint64_t(1) << 30, MiB = uint64_t(1) << 20;

inline constexpr std::array<ArchInfo, 3> archs{{
    {.arch = Arch::gfx90a, .name = "gfx90a", .elf_mach = 0x03f, .family = "CDNA2",
     .version_major = 9, .version_minor = 0, .version_stepping = 10,
     .wave_size = 64, .simds_per_cu = 4, .waves_per_simd = 8, .registers_per_lane = 512,
     .lds_bytes = 64 * 1024, .lds_banks = 32, .fp8 = Fp8Flavour::none,
     .lds_dma_m0_bits = 16, .lds_dma_max_bytes = 4, .default_product = "MI210",
     .source = "[ISA2] (AMD Instinct MI200 ISA guide, as LLVM's AMDGPUUsage cites it): 512 unified VGPRs+AGPRs split "
               "by ACCUM_OFFSET, 64 KiB LDS in 32 banks, no fp8/bf8 instructions, LDS DMA of one dword with the base "
               "in M0[15:0] (the CDNA1-3 text); ELF mach and version 9.0.10 from LLVM's AMDGPUUsage (EF_AMDGPU_MACH_"
               "AMDGCN_GFX90A = 0x03f); 8 waves per SIMD: timing.md (CDNA2/3, H [RPC])"},
    {.arch = Arch::gfx942, .name = "gfx942", .elf_mach = 0x04c, .family = "CDNA3",
     .version_major = 9, .version_minor = 4, .version_stepping = 2,
     .wave_size = 64, .simds_per_cu = 4, .waves_per_simd = 8, .registers_per_lane = 512,
     .lds_bytes = 64 * 1024, .lds_banks = 32, .fp8 = Fp8Flavour::fnuz,
     .lds_dma_m0_bits = 16, .lds_dma_max_bytes = 4, .image_support = false,
     .default_product = "MI300X",
     .source = "cdna.md Targets, LDS and LDS DMA; M0[15:0] for LDS DMA: the CDNA1-3 text, assumed "
               "(docs/vgpu-memory.md)"},
    {.arch = Arch::gfx950, .name = "gfx950", .elf_mach = 0x04f, .family = "CDNA4",
     .version_major = 9, .version_minor = 5, .version_stepping = 0,
     .wave_size = 64, .simds_per_cu = 4, .waves_per_simd = 8, .registers_per_lane = 512,
     .lds_bytes = 160 * 1024, .lds_banks = 64, .fp8 = Fp8Flavour::ocp,
     .lds_dma_m0_bits = 18, .lds_dma_max_bytes = 16, .image_support = false,
     .default_product = "MI355X",
     .source = "cdna.md Targets, LDS (64 banks measured, M) and LDS DMA; M0[17:0] from the CDNA4 ISA guide "
               "(docs/vgpu-memory.md)"},
}};

// The CU and cache timing of each arch, shared by its products; each product adds its own sustained HBM bandwidth.
inline constexpr TimingFacts gfx942_timing{
    .lds_latency = 52, .lds_port_bytes_per_clk = 64, .smem_latency = 48, .l2_latency = 288, .hbm_latency = 876,
    .atomic_latency = 458, .vmem_bytes_per_clk_cu = 128, .l2_bytes_per_clk_xcd = 2048, .hbm_measured_tb_per_s = 0,
    .wait_state_cycles = 4, .branch_cycles = 8, .barrier_cycles = 16,
    .source = "LDS port 64 B/clk [RPC] H; latencies LDS 52, sL1 48, L2 288 p50, HBM 876 p50 [MT4G] M; atomics "
              "bypass the L2 to the Infinity Cache on MI300 (rocprofiler-compute docs/conceptual/l2-cache.rst, "
              "L2-Fabric transactions) M, so an atomic takes the MALL latency, 218 ns [CC] = 458 clk at 2.1 GHz M; "
              "vL1 128 B/clk [SOL] M; L2 2 KB/clk/XCD [WP3] H; wait state 4 clk (timing.md 3, M); branch 8 and "
              "barrier 16 clk chosen (no source: two issue slots; four slots after the last arrival)"};
inline constexpr TimingFacts gfx90a_timing = [] {
  TimingFacts t = gfx942_timing;
  t.atomic_latency = t.l2_latency;
  t.source = "chosen (no CDNA2 measurement): every CU and cache row as gfx942's (LDS port 64 B/clk, latencies in "
             "cycles, vL1 128 B/clk, L2 2 KB/clk per die); atomics at the L2 latency (no Infinity Cache: the L2 is "
             "the coherence point, rocprofiler-compute l2-cache.rst)";
  return t;
}();
inline constexpr TimingFacts gfx950_timing = [] {
  TimingFacts t = gfx942_timing;
  t.lds_port_bytes_per_clk = 128;
  t.source = "CU rows as gfx942 except LDS: 256 B/clk read per CU [B-G4] H, i.e. 128 B/clk per port (writes assumed "
             "the same, L); latencies in cycles chosen equal to MI300X's (no CDNA4 measurement found); L2 2 KB/clk/XCD "
             "assumed unchanged (L)";
  return t;
}();
constexpr TimingFacts with_hbm(TimingFacts t, double measured_tb_per_s, std::string_view hbm_source) {
  t.hbm_measured_tb_per_s = measured_tb_per_s;
  t.hbm_source = hbm_source;
  return t;
}
// AMD's Max-Achievable FLOPs [MAF] (ROCm blog "Measuring Max-Achievable FLOPs - Part 2", Feb 2025): hipBLASLt at
// 4096 x 4864 x 32896 (fp8: 4096 x 3648 x 32896) with random data on warm parts, the lowest XCD's median clock.
// MI300X: f16 654 TF at 1115 MHz, bf16 708 at 1207, fp8 1273 at 1230; MI325X: 794 at 1354, 843 at 1447, 1519 at 1464.
// Those kernels' MFMA use, TF / (data-sheet peak x clock / peak clock), is 0.94 for f16 and bf16 on both parts (AMD
// quotes "up to 94%") and 0.83 for fp8 on both (M: derived).
constexpr TimingFacts with_mfma_clock(TimingFacts t, uint32_t f16_mhz, uint32_t bf16_mhz, uint32_t fp8_mhz,
                                      std::string_view clock_source) {
  t.mfma_clock_mhz_f16 = f16_mhz, t.mfma_clock_mhz_bf16 = bf16_mhz, t.mfma_clock_mhz_fp8 = fp8_mhz;
  t.mfma_clock_use_16bit = 0.94, t.mfma_clock_use_fp8 = 0.83;
  t.clock_source = clock_source;
  return t;
}
// CDNA4 parts: no sustained clock is published; MI325X's ratios to its peak clock (f16 0.645, bf16 0.689, fp8 0.697)
// applied to the product's peak clock (chosen, L: MI325X is the nearest part with a measurement; the ratio ignores
// MI35x's different board power and process).
inline constexpr const char* clock_scaled = "chosen: MI325X's [MAF] clock-to-peak ratios applied to the peak clock "
                                            "(no CDNA4 measurement found)";
inline constexpr PeakTflops mi300x_peak{.f16 = 1307.4, .fp8 = 2614.9, .fp6_fp4 = 0, .xf32 = 653.7,
                                        .fp32_matrix = 163.4, .fp32_vector = 163.4, .fp64_matrix = 163.4,
                                        .fp64_vector = 81.7};
// HBM sustained bandwidth where none is measured: MI300X's measured 77.5 % of its peak applied to the product's peak.
inline constexpr const char* hbm_scaled = "chosen: MI300X's measured 77.5 % of peak applied to the data-sheet peak "
                                          "(no measurement found)";

// CDNA2 parts: no sustained MFMA clock is published; the peak clock stands in (chosen, L).
inline constexpr const char* clock_peak = "chosen: the peak clock (no CDNA2 measurement found)";

// Rows of timing.md section 1 (the CDNA2 rows: [D210], AMD's MI210 launch table as AnandTech printed it, "AMD Releases
// Instinct MI210 Accelerator", March 2022, and [D250X], AMD's MI250X launch figures, November 2021). Every CDNA2 peak
// agrees with CUs x FLOP/clk/CU x 1.7 GHz (f16/bf16 1024, f32/f64 matrix 256, vector 128: [CALC]). Peaks are dense (no
// sparsity). PCI ids as lspci lists them.
inline constexpr std::array<ProductInfo, 6> products{{
    {.name = "MI210", .arch = Arch::gfx90a, .compute_units = 104, .xcds = 1, .peak_clock_mhz = 1700,
     .hbm_bytes = 64 * GiB, .hbm_pin_mbps = 3200, .hbm_bus_bits = 4096, .hbm_tb_per_s = 1.6,
     .l2_bytes_per_xcd = 8 * MiB, .llc_bytes = 0,
     .peak = {.f16 = 181.0, .fp8 = 0, .fp6_fp4 = 0, .xf32 = 0,
              .fp32_matrix = 45.3, .fp32_vector = 22.6, .fp64_matrix = 45.3, .fp64_vector = 22.6},
     .pci_device_id = 0x740f,
     .source = "[D210]: 104 CUs, 1700 MHz, 64 GB HBM2e at 3.2 Gbps on 4096 bits (1.6 TB/s), peaks H; L2 8 MiB per "
               "die (spec listings give MI250X 16 MB for two dies; the CDNA2 white paper's figure, not found in the "
               "searchable sources: M); no Infinity Cache (AMD's Linux patch, March 2021: M); PCI id: the PCI id "
               "list (Aldebaran/MI210)",
     .timing = with_mfma_clock(with_hbm(gfx90a_timing, 1.27, hbm_scaled), 1700, 1700, 0, clock_peak)},
    // HIP sees each of MI250X's two dies (GCDs) as a device of its own: the row is one GCD, half the package's
    // 220 CUs, 128 GB, 3.2 TB/s and peaks.
    {.name = "MI250X", .arch = Arch::gfx90a, .compute_units = 110, .xcds = 1, .peak_clock_mhz = 1700,
     .hbm_bytes = 64 * GiB, .hbm_pin_mbps = 3200, .hbm_bus_bits = 4096, .hbm_tb_per_s = 1.6,
     .l2_bytes_per_xcd = 8 * MiB, .llc_bytes = 0,
     .peak = {.f16 = 191.5, .fp8 = 0, .fp6_fp4 = 0, .xf32 = 0,
              .fp32_matrix = 47.9, .fp32_vector = 23.9, .fp64_matrix = 47.9, .fp64_vector = 23.9},
     .pci_device_id = 0x740c,
     .source = "[D250X] per GCD (half of: 220 CUs, 1700 MHz, 128 GB HBM2e on 8192 bits, 3.2 TB/s, 383 TF f16/bf16, "
               "95.7 TF f32/f64 matrix, 47.9 TF f32/f64 vector) H; L2 and Infinity Cache as MI210; PCI id: the PCI id "
               "list (Aldebaran/MI200)",
     .timing = with_mfma_clock(with_hbm(gfx90a_timing, 1.27, hbm_scaled), 1700, 1700, 0, clock_peak)},
    {.name = "MI300X", .arch = Arch::gfx942, .compute_units = 304, .xcds = 8, .peak_clock_mhz = 2100,
     .hbm_bytes = 192 * GiB, .hbm_pin_mbps = 5200, .hbm_bus_bits = 8192, .hbm_tb_per_s = 5.3,
     .l2_bytes_per_xcd = 4 * MiB, .llc_bytes = 256 * MiB, .peak = mi300x_peak, .pci_device_id = 0x74a1,
     .source = "CUs [SPEC]; clock [D300, B-MC]; HBM3, caches, peaks [WP3]; xf32 [D300, CALC] (WP3 prints 490.3: M)",
     .timing = with_mfma_clock(with_hbm(gfx942_timing, 4.11, "STREAM copy [AZ] M"), 1115, 1207, 1230,
                               "[MAF] H (AMD's measurement)")},
    {.name = "MI325X", .arch = Arch::gfx942, .compute_units = 304, .xcds = 8, .peak_clock_mhz = 2100,
     .hbm_bytes = 256 * GiB, .hbm_pin_mbps = 6000, .hbm_bus_bits = 8192, .hbm_tb_per_s = 6.0,
     .l2_bytes_per_xcd = 4 * MiB, .llc_bytes = 256 * MiB, .peak = mi300x_peak, .pci_device_id = 0x74a5,
     .source = "[WP3] (MI325X edition): CUs, clock, HBM3E, caches, peaks; xf32 as MI300X (M); PCI id: the PCI id list",
     .timing = with_mfma_clock(with_hbm(gfx942_timing, 4.65, hbm_scaled), 1354, 1447, 1464,
                               "[MAF] H (AMD's measurement)")},
    {.name = "MI350X", .arch = Arch::gfx950, .compute_units = 256, .xcds = 8, .peak_clock_mhz = 2200,
     .hbm_bytes = 288 * GiB, .hbm_pin_mbps = 8000, .hbm_bus_bits = 8192, .hbm_tb_per_s = 8.0,
     .l2_bytes_per_xcd = 4 * MiB, .llc_bytes = 256 * MiB,
     .peak = {.f16 = 2300, .fp8 = 4600, .fp6_fp4 = 9200, .xf32 = 0,
              .fp32_matrix = 144.2, .fp32_vector = 144.2, .fp64_matrix = 72.1, .fp64_vector = 72.1},
     .pci_device_id = 0x75a3,
     .source = "[D350]: CUs, HBM3E, caches, peaks; clock derived from 144.2 TF / (256 CU x 256 FLOP/clk) (M); "
               "PCI id: the gfx950 die's, as MI355X's (no separate listing found)",
     .timing = with_mfma_clock(with_hbm(gfx950_timing, 6.2, hbm_scaled), 1418, 1516, 1534, clock_scaled)},
    {.name = "MI355X", .arch = Arch::gfx950, .compute_units = 256, .xcds = 8, .peak_clock_mhz = 2400,
     .hbm_bytes = 288 * GiB, .hbm_pin_mbps = 8000, .hbm_bus_bits = 8192, .hbm_tb_per_s = 8.0,
     .l2_bytes_per_xcd = 4 * MiB, .llc_bytes = 256 * MiB,
     .peak = {.f16 = 2500, .fp8 = 5000, .fp6_fp4 = 10000, .xf32 = 0,
              .fp32_matrix = 157.3, .fp32_vector = 157.3, .fp64_matrix = 78.6, .fp64_vector = 78.6},
     .pci_device_id = 0x75a3,
     .source = "[D350]; clock 2400 MHz from Hot Chips 2025 coverage (agrees with 157.3 TF); HBM, caches as MI350X",
     .timing = with_mfma_clock(with_hbm(gfx950_timing, 6.2, hbm_scaled), 1547, 1654, 1673, clock_scaled)},
}};
}  // namespace facts

constexpr const ArchInfo& arch_info(Arch a) {
  for (const ArchInfo& info : facts::archs)
    if (info.arch == a) return info;
  return facts::archs[0];  // unreachable: every enumerator has a row
}

constexpr std::span<const ArchInfo> all_archs() { return facts::archs; }
constexpr std::span<const ProductInfo> all_products() { return facts::products; }

// The product with this name, any case ("MI300X", "mi300x"); nullptr if none.
constexpr const ProductInfo* find_product(std::string_view name) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
  for (const ProductInfo& p : facts::products) {
    bool same = p.name.size() == name.size();
    for (size_t i = 0; same && i < name.size(); ++i) same = lower(p.name[i]) == lower(name[i]);
    if (same) return &p;
  }
  return nullptr;
}

constexpr const ProductInfo& default_product(Arch a) { return *find_product(arch_info(a).default_product); }

// "gfx90a" / "gfx942" / "gfx950", also with feature suffixes such as "gfx950:sramecc+:xnack-". nullopt if none.
std::optional<Arch> parse_arch(std::string_view s);

}  // namespace vgpu
