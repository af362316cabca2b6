// hk-run: run one hk kernel on the (virtual) device, check it against the host, and report what it costs.
//   hk-run gemm --m M --n N --k K [--dtype bf16|f16|fp8|fp8_e4m3|fp8_e5m2] [--out fp32|bf16] [--bt]
//   hk-run gemm --m M --n N --k K --dtype mxfp8|mxfp6|mxfp4 [--a-format F] [--b-format F] [--out fp32|bf16|f16] (gfx950)
//   hk-run gemm --m M --n N --k K --dtype int8 [--out int32|bf16|fp32] (B N x K; bf16/fp32: per-row/column scales)
//               [--arch gfx942|gfx950]
//   hk-run gemm --m M --n N --k K --dtype fp8_block [--out bf16|fp32] [--pow2-scales] (hk::gemm_blockwise: e4m3 A, B
//               N x K, fp32 scales per 1 x 128 of A and 128 x 128 of B; K a multiple of 128; tools/hk_run_blockwise.h)
//   hk-run grouped-gemm --groups M0,M1,... --n N --k K [--dtype bf16|f16|fp8|fp8_e4m3|fp8_e5m2] [--out fp32|bf16] [--bt]
//               (hk::grouped_gemm: groups of M0, M1, ... rows, 0 an empty group, "8x1024" eight of 1024; tools/hk_run_grouped.h)
//   (fp8 = fp8_e4m3; fp8 types in the device arch's format: FNUZ e4m3 / e5m2 on gfx942, OCP e4m3fn / e5m2 on gfx950)
//   hk-run rotary --b B --s S --h H --d D [--rotary-dim R] [--interleaved] [--dtype bf16|f16|fp32] [--arch ...]
//   hk-run norm --rows R --cols C [--rms] [--p P] [--seed S] [--dtype bf16|f16|fp32] [--arch ...]
//               [--mask none|bytes|bits] (with --model: the dropout mask the forward writes; default none, as
//               the backward regenerates it from Philox)
//   hk-run attn --b B --sq SQ --sk SK --hq HQ --hkv HKV --d 64|128|192|256 [--dv DV] [--causal] [--window L,R] [--softcap C] [--sinks] [--alibi] [--dropout P] [--dtype bf16|f16|fp8]
//               [--varlen QLENS[:KLENS]] [--bwd] [--arch gfx942|gfx950]
//   (--bwd: the backward too, each of its kernels checked and reported;
//    --varlen: comma-separated sequence lengths, packed; keys as long as the queries unless KLENS is given)
//   hk-run decode --b B --ctx N [--sq SQ] --hq HQ --hkv HKV --d 64|128 [--page P] [--causal] [--window L,R] (tools/hk_run_decode.h)
//   hk-run report [--arch gfx942|gfx950]      resources of every kernel in this binary
//   gemm|attn|rotary|norm ... --model mi300x|mi325x|mi350x|mi355x: vgpu's timing model predicts every launch's time
//   on that product (docs/vgpu-timing.md); only the sampled workgroups run, on uninitialized inputs, so nothing is
//   checked. rotary --q-only (model only) rotates Q alone, as single-tensor benchmarks do.
//   report --model P: the report with a modelled column (hk-run's standard problems on P, see run_report) and
//   each kernel's top stall
//   with --model: --trace FILE writes the replayed CU round of every launch as Chrome trace-event JSON (Perfetto,
//   chrome://tracing); --trace-png FILE draws it (tools/trace_png.py); --stalls prints each launch's stall table:
//   the wave-cycles by cause, the top instructions by stall cycles, and the hot loop's MFMA use
#include <hip/hip_runtime.h>

#include <dlfcn.h>

#include <CLI/CLI.hpp>
#include <bit>
#include <cctype>
#include <cfloat>
#include <cxxabi.h>
#include <cmath>
#include <chrono>
#include <cstring>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "attention/attention.h"
#include "attention/decode.h"
#include "gemm/gemm.h"
#include "gemm/gemm_blockwise.h"
#include "gemm/gemm_int8.h"
#include "gemm/gemm_mx.h"
#include "kernels/rotary_norm_ref.h"
#include "norm/norm.h"
#include "rotary/rotary.h"
#include "host/scalar_type.h"
#include "kernels/attention_ref.h"
#include "report/kernel_report.h"
#include "vgpu/arch.h"

namespace {

template <class F>
F ext(const char* name) { return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name)); }

// The device's arch for the kernel report, from the host toolkit's one lookup (hk's target lookup).
vgpu::Arch device_arch() { return *vgpu::parse_arch(hk_host::device_arch_name()); }

using hk_host::device_format;  // an element type as the device stores it (tests/host/scalar_type.h)

// hipMalloc that says what failed, and why.
void* device_alloc(size_t bytes, const char* what) {
  void* p = nullptr;
  if (hipError_t e = hipMalloc(&p, bytes); e != hipSuccess) {
    std::fprintf(stderr, "hk-run: cannot allocate %s (%.3g GiB on the device): %s\n", what, double(bytes) / (1ull << 30),
                 hipGetErrorString(e));
    return nullptr;
  }
  return p;
}

// A run's device arrays, freed together when the run returns. `copy` allocates one and fills it from the host (a
// null source leaves it unset); after a failed allocation it and every later call return null, so a run allocates
// everything and checks the last pointer once.
class DeviceArrays {
 public:
  DeviceArrays() = default;
  DeviceArrays(const DeviceArrays&) = delete;
  DeviceArrays& operator=(const DeviceArrays&) = delete;
  ~DeviceArrays() {
    for (void* p : arrays_) (void)hipFree(p);
  }
  void* copy(const void* host, size_t bytes, const char* what) {
    void* p = failed_ ? nullptr : device_alloc(bytes, what);
    if (!p) return failed_ = true, nullptr;
    arrays_.push_back(p);
    if (host) (void)hipMemcpy(p, host, bytes, hipMemcpyHostToDevice);
    return p;
  }
  template <class T>
  void* copy(const std::vector<T>& host, const char* what) {
    return copy(host.data(), host.size() * sizeof(T), what);
  }
  void* alloc(size_t bytes, const char* what) { return copy(nullptr, bytes, what); }

 private:
  std::vector<void*> arrays_;
  bool failed_ = false;
};

// `./hk report --model P`: the modelled column, by kernel symbol (filled by print_model while run_report runs).
std::map<std::string, std::string>* g_report_model = nullptr;
std::string g_report_problem;  // the standard problem being modelled, for the column
bool g_stalls = false;         // --stalls: each modelled launch's stall table

void print_report(const char* kernel, unsigned block_threads, bool with_profile) {
  const vgpu::Arch arch = device_arch();
  if (!kernel) std::printf("kernels of hk-run for %s (occupancy for %u-thread workgroups)\n", std::string(vgpu::arch_info(arch).name).c_str(), block_threads);
  for (const auto& k : hk::report::own_kernels(arch)) {
    if (kernel && k.name != kernel) continue;
    auto res = hk::report::resources(k, arch, block_threads);
    hk::report::Profile prof;
    if (with_profile) {
      auto get = ext<int (*)(vgpuInstructionProfile*, int)>("vgpuGetLastDispatchInstructions");
      std::vector<vgpuInstructionProfile> insts(get ? get(nullptr, 0) : 0);
      if (get) get(insts.data(), int(insts.size()));
      prof = hk::report::profile(insts);
    }
    std::string header = hk::report::header(), row = hk::report::row(res, with_profile ? &prof : nullptr);
    if (g_report_model) {
      auto it = g_report_model->find(k.name);
      if (!with_profile) header.resize(std::min(header.size(), header.find(" |")));  // the profile columns are empty
      header += " | modelled";
      row += " | " + (it == g_report_model->end() ? std::string("- (no standard problem)") : it->second);
    }
    std::printf("%s\n  %s\n  %s\n", k.name.c_str(), header.c_str(), row.c_str());
  }
}

// ---- the timing model (--model PRODUCT) ---------------------------------------------------------------------------

// Turns vgpu's timing model on for later launches, executing only the workgroups it samples.
bool start_model(const std::string& product) {
  auto set = ext<int (*)(const char*, int)>("vgpuSetTiming");
  if (!set || set(product.c_str(), 1) != 0)
    return std::fprintf(stderr, "hk-run: the runtime has no timing model for '%s'\n", product.c_str()), false;
  return true;
}

// One hk entry point's launch as every runner makes it: the profiler on, the model started when one is asked for,
// `call` (returning hk::Status) launched and waited for, `d` the dispatch's record. False, after saying why, on failure.
template <class Call>
bool launch_once(const std::string& model, Call&& call, vgpuDispatchInfo& d) {
  if (auto prof = ext<int (*)(int)>("vgpuSetProfiling")) prof(1);
  if (!model.empty() && !start_model(model)) return false;
  if (hk::Status s = call(); !s) return std::fprintf(stderr, "%s\n", s.message.c_str()), false;
  if (hipError_t e = hipDeviceSynchronize(); e != hipSuccess) return std::fprintf(stderr, "%s\n", hipGetErrorString(e)), false;
  d = {};
  if (auto last = ext<int (*)(vgpuDispatchInfo*)>("vgpuGetLastDispatch")) last(&d);
  return true;
}

// Every launch modelled since start_model, in order.
std::vector<vgpuTimingInfo> model_log() {
  auto log = ext<int (*)(vgpuTimingInfo*, int)>("vgpuGetTimingLog");
  std::vector<vgpuTimingInfo> out(log ? log(nullptr, 0) : 0);
  if (log) log(out.data(), int(out.size()));
  return out;
}

// A kernel's readable name: the demangled symbol up to its template or argument list.
std::string short_name(const char* symbol) {
  int status = 0;
  char* plain = abi::__cxa_demangle(symbol, nullptr, nullptr, &status);
  std::string name = status == 0 && plain ? plain : symbol;
  std::free(plain);
  if (size_t cut = name.find_first_of("<("); cut != std::string::npos) name.resize(cut);
  if (size_t ns = name.rfind("::"); ns != std::string::npos) name = name.substr(ns + 2);
  return name;
}

// The top stalls of modelled launch `launch` (an index into the timing log).
std::vector<vgpuTimingStall> model_stalls(int launch) {
  auto get = ext<int (*)(int, vgpuTimingStall*, int)>("vgpuGetTimingStalls");
  std::vector<vgpuTimingStall> out(get ? get(launch, nullptr, 0) : 0);
  if (get) get(launch, out.data(), int(out.size()));
  return out;
}
const char* cause_name(int cause) {
  auto name = ext<const char* (*)(int)>("vgpuStallCauseName");
  return name ? name(cause) : "?";
}

// --stalls: where the replayed round's wave-cycles went, the instructions that stalled most, and the hot loop.
void print_stalls(const vgpuTimingInfo& t, int launch) {
  const double all = double(t.waves) * t.replayed_cycles;
  if (all <= 0) return;
  std::printf("    stalls of the replayed round (%u waves x %.0f cycles; %.0f cycles skipped with every wave waiting):\n     ",
              t.waves, t.replayed_cycles, t.skipped_cycles);
  for (int c = 0; c < VGPU_STALL_CAUSES; ++c)
    if (t.wave_cycles[c] > 0) std::printf(" %s %.1f%%", cause_name(c), 100 * t.wave_cycles[c] / all);
  std::printf("\n    top instructions by stall cycles (share of the waves' time):\n");
  std::printf("      %8s %12s %6s %8s  %-18s %s\n", "pc", "cycles", "share", "issued", "reason", "instruction");
  const std::vector<vgpuTimingStall> stalls = model_stalls(launch);
  for (size_t i = 0; i < stalls.size() && i < 16; ++i) {
    const vgpuTimingStall& s = stalls[i];
    std::printf("      %8llx %12.0f %5.1f%% %8llu  %-18s %s\n", s.pc, s.cycles, 100 * s.cycles / all, s.issued,
                cause_name(s.cause), s.text);
  }
  if (!t.hot_loop_found) return (void)std::printf("    no loop\n");
  std::printf("    hot loop 0x%llx-0x%llx: MFMA utilisation %.1f%% (matrix cores busy over the SIMDs' time in it)\n",
              t.hot_loop_begin_pc, t.hot_loop_end_pc, 100 * t.hot_loop_mfma_util);
  for (int s = 0; s < 4; ++s) {
    const vgpuTimingHotLoopSimd& h = t.hot_loop_simd[s];
    if (!h.mfmas) continue;
    std::printf("      SIMD%d: %llu MFMAs, %.1f%% busy; between consecutive MFMAs %.2f instructions (VALU %.2f, "
                "SALU/SMEM %.2f, VMEM %.2f, LDS %.2f, other %.2f), matrix core idle %.1f cycles\n",
                s, h.mfmas, 100 * h.util, h.between, h.between_valu, h.between_salu, h.between_vmem, h.between_lds,
                h.between_other, h.idle_between);
  }
}

// The report's top-stall cell of modelled launch `launch`: the instruction, its reason and share of the round.
std::string top_stall(const vgpuTimingInfo& t, int launch) {
  const std::vector<vgpuTimingStall> stalls = model_stalls(launch);
  if (stalls.empty() || t.waves == 0 || t.replayed_cycles <= 0) return "no stall";
  char cell[192];
  std::snprintf(cell, sizeof cell, "top stall %.1f%% %s at 0x%llx '%s'",
                100 * stalls[0].cycles / (double(t.waves) * t.replayed_cycles), cause_name(stalls[0].cause),
                stalls[0].pc, stalls[0].text);
  return cell;
}

// What one modelled launch did: its time, the work it was charged with (`flops` against `peak_tflops`, or `bytes`
// against the product's HBM), and where the sampled CU's time went. `launch`: its index in the timing log.
// `bytes` moved in `seconds` as a fraction of the product's sustained HBM bandwidth (its HBM roofline).
double sustained_fraction(const vgpu::ProductInfo& product, double bytes, double seconds) {
  return bytes / seconds * 1e-12 / product.timing.hbm_measured_tb_per_s;
}

void print_model(const vgpuTimingInfo& t, int launch, double flops, double peak_tflops, double bytes = 0) {
  const vgpu::ProductInfo& product = *vgpu::find_product(t.product);
  std::printf("  model %s %s: %.4f ms", t.product, short_name(t.kernel).c_str(), t.seconds * 1e3);
  if (flops > 0) {
    const double tflops = flops / t.seconds * 1e-12;
    std::printf(", %.1f TFLOP/s = %.1f%% of the %.0f TFLOP/s peak", tflops, 100 * tflops / peak_tflops, peak_tflops);
  }
  if (bytes > 0) {
    const double tb = bytes / t.seconds * 1e-12;
    std::printf(", %.1f GB/s = %.1f%% of the %.1f TB/s HBM peak (%.0f%% of the %.2f TB/s sustained)", tb * 1e3,
                100 * tb / product.hbm_tb_per_s, product.hbm_tb_per_s, 100 * sustained_fraction(product, bytes, t.seconds),
                product.timing.hbm_measured_tb_per_s);
  }
  std::printf(" (limited by %s)\n", t.limiter);
  if (g_report_model) {  // the report's column: throughput of the standard problem, else the time
    char cell[96];
    if (flops > 0) std::snprintf(cell, sizeof cell, "%.0f TFLOP/s (%.0f%% of peak)", flops / t.seconds * 1e-12,
                                 100 * flops / t.seconds * 1e-12 / peak_tflops);
    else if (bytes > 0) std::snprintf(cell, sizeof cell, "%.0f GB/s (%.0f%% of HBM peak)", bytes / t.seconds * 1e-9,
                                      100 * bytes / t.seconds * 1e-12 / product.hbm_tb_per_s);
    else std::snprintf(cell, sizeof cell, "%.3f ms", t.seconds * 1e3);
    (*g_report_model)[t.kernel] = std::string(cell) + " " + g_report_problem + "; " + top_stall(t, launch);
    return;
  }
  std::printf("    %u workgroups per CU, %llu rounds of %.0f cycles at %.2f GHz (peak %.2f); bounds: L2 %.0f, HBM %.0f "
              "cycles; %.3g MB reach HBM\n",
              t.workgroups_per_cu, t.rounds, t.round_cycles, t.clock_ghz, t.peak_clock_ghz, t.l2_floor_cycles,
              t.hbm_floor_cycles, t.hbm_bytes * 1e-6);
  std::printf("    sample: %u workgroups replayed, %u probed across the grid (average work %.3f x the sample's)\n",
              t.sampled_workgroups, t.probed_workgroups, t.work_weight);
  std::printf("    where the time went: MFMA busy %.1f%%, VALU busy %.1f%%; waves waiting on memory %.1f%%, LDS %.1f%%, "
              "barriers %.1f%%, nop/branch %.1f%%, issue-bound %.1f%%\n",
              100 * t.mfma_busy, 100 * t.valu_busy, 100 * t.wait_memory, 100 * t.wait_lds, 100 * t.wait_barrier, 100 * t.wait_nop,
              100 * t.issue_bound);
  if (g_stalls) print_stalls(t, launch);
}

// The modelled launches of one operation: each, then their sum when there are several. Returns the total seconds.
double print_model_log(double flops, double peak_tflops, double bytes = 0) {
  const std::vector<vgpuTimingInfo> log = model_log();
  if (log.empty()) return (void)std::printf("  model: no launch was modelled\n"), 0;
  double seconds = 0;
  for (const vgpuTimingInfo& t : log) seconds += t.seconds;
  // Work is charged to the whole operation; with one launch its line carries it.
  for (size_t i = 0; i < log.size(); ++i)
    print_model(log[i], int(i), log.size() == 1 ? flops : 0, peak_tflops, log.size() == 1 ? bytes : 0);
  if (log.size() > 1) {
    std::printf("  model %s total of %zu launches: %.4f ms", log[0].product, log.size(), seconds * 1e3);
    if (flops > 0) std::printf(", %.1f TFLOP/s", flops / seconds * 1e-12);
    if (bytes > 0)
      std::printf(", %.1f GB/s (%.0f%% of the %.2f TB/s sustained)", bytes / seconds * 1e-9,
                  100 * sustained_fraction(*vgpu::find_product(log[0].product), bytes, seconds),
                  vgpu::find_product(log[0].product)->timing.hbm_measured_tb_per_s);
    std::printf("\n");
  }
  return seconds;
}

int run_gemm(int m, int n, int k, const std::string& in, const std::string& out, bool bt, const std::string& model) {
  const bool e5m2 = in == "fp8_e5m2", fp8 = e5m2 || in == "fp8" || in == "fp8_e4m3";
  const hk::scalar_type ab = e5m2 ? hk::scalar_type::fp8_e5m2 : fp8 ? hk::scalar_type::fp8_e4m3 : in == "f16" ? hk::scalar_type::f16 : hk::scalar_type::bf16,
                  ct = out == "bf16" ? hk::scalar_type::bf16 : hk::scalar_type::fp32;
  // The operands and reference of tests/kernels/gemm_test.hip (the host toolkit): seeded values exact in the type.
  const hk_host::Format fab = device_format(ab), fc = device_format(ct);
  const float limit = fp8 ? 4.f : 1.f;
  const hk_host::Matrix a = hk_host::random_matrix(m, k, fab, 1, limit),
                        b = bt ? hk_host::random_matrix(n, k, fab, 2, limit) : hk_host::random_matrix(k, n, fab, 2, limit);
  const std::vector<uint8_t> a_bytes = fab.encode(a.values), b_bytes = fab.encode(b.values);
  const size_t c_elem = fc.bytes();
  DeviceArrays dev;
  void* da = dev.copy(a_bytes, "A");
  void* db = dev.copy(b_bytes, "B");
  void* dc = dev.alloc(size_t(m) * n * c_elem, "C");
  if (!dc) return 1;
  hk::GemmProblem p;
  p.m = m, p.n = n, p.k = k, p.a = da, p.lda = k, p.b = db, p.ldb = bt ? k : n, p.b_is_nk = bt, p.c = dc, p.ldc = n;
  p.ab_type = ab, p.c_type = ct;
  vgpuDispatchInfo d{};
  if (!launch_once(model, [&] { return hk::gemm(p); }, d)) return 1;
  if (!model.empty()) {
    std::printf("gemm %dx%dx%d %s%s -> %s on %s: not checked (the model executed %llu waves only)\n", m, n, k,
                in.c_str(), bt ? " A*B^T" : " A*B", out.c_str(), d.arch, d.waves);
    const vgpu::ProductInfo& product = *vgpu::find_product(model);
    // A skinny GEMM (M up to 256: decode) is bound by reading B once: the bytes of A, B and C (written once: beta is
    // 0) over the product's sustained HBM bandwidth are its roofline.
    const double bytes = double(a_bytes.size() + b_bytes.size()) + double(m) * n * c_elem;
    const double seconds = print_model_log(2.0 * m * n * k, fp8 ? product.peak.fp8 : product.peak.f16, m <= 256 ? bytes : 0);
    if (m <= 256 && seconds > 0)
      std::printf("  HBM roofline: %.1f MB of A, B and C take %.4f ms at the %.2f TB/s sustained; the GEMM runs at %.1f%% of it\n",
                  bytes * 1e-6, bytes / (product.timing.hbm_measured_tb_per_s * 1e12) * 1e3,
                  product.timing.hbm_measured_tb_per_s, 100 * sustained_fraction(product, bytes, seconds));
    return 0;
  }
  std::vector<uint8_t> raw(size_t(m) * n * c_elem);
  (void)hipMemcpy(raw.data(), dc, raw.size(), hipMemcpyDeviceToHost);
  // Check a spread of elements (every one for small problems) against the double-precision host reference.
  hk_host::Matrix got(m, n);
  got.values = fc.decode(raw);
  const size_t step = std::max<size_t>(1, size_t(m) * n / 20000);
  const hk_host::Comparison check = hk_host::compare(got, hk_host::Matmul{{a}, {b, bt}}, fc.type, "C", step);
  for (const std::string& miss : check.first_misses()) std::fprintf(stderr, "%s\n", miss.c_str());
  const bool bad = !check.ok();
  std::printf("gemm %dx%dx%d %s%s -> %s on %s: %s (%ld of %ld elements checked within tolerance, worst error %.2f of it)\n",
              m, n, k, in.c_str(), bt ? " A*B^T" : " A*B", out.c_str(), d.arch, bad ? "FAILED" : "ok",
              check.checked() - check.failed(), check.checked(), check.worst());
  std::printf("  grid %u, %llu waves, %llu wave instructions, %.3f s emulated\n", d.grid[0], d.waves, d.wave_instructions,
              d.wall_seconds);
  print_report(d.kernel, d.block[0] * d.block[1] * d.block[2], true);
  return bad ? 1 : 0;
}

#include "hk_run_int8.h"  // the int8 GEMM runner (int8_run::run), inside this namespace
#include "hk_run_mx.h"  // the MX GEMM runner (mx_run::run), inside this namespace
#include "hk_run_blockwise.h"  // the blockwise fp8 GEMM runner (blockwise_run::run), inside this namespace
#include "hk_run_grouped.h"  // the grouped GEMM runner (grouped_run::run), inside this namespace

// ---- rotary and norm (hk::rotary, hk::layer_norm / rms_norm and their backwards) ----------------------------------

hk::scalar_type float_dtype(const std::string& name) {
  return name == "f16" ? hk::scalar_type::f16 : name == "fp32" ? hk::scalar_type::fp32 : hk::scalar_type::bf16;
}

// The last dispatch's line: kernel, grid, emulated time and the bytes it moved per emulated second.
vgpuDispatchInfo last_dispatch(double bytes) {
  vgpuDispatchInfo d{};
  if (auto last = ext<int (*)(vgpuDispatchInfo*)>("vgpuGetLastDispatch")) last(&d);
  std::printf("  grid %u, %llu waves, %llu wave instructions, %.3f s emulated, %.1f MB moved (%.3f GB/s emulated)\n",
              d.grid[0], d.waves, d.wave_instructions, d.wall_seconds, bytes * 1e-6,
              d.wall_seconds > 0 ? bytes / d.wall_seconds * 1e-9 : 0.0);
  return d;
}

// Counts the misses of `got` against `want`, printing the first few under `what`.
size_t misses(const char* what, const std::vector<float>& got, const std::vector<rnref::Expect>& want) {
  return rnref::count_misses(got, want, [&](size_t i, float g, const rnref::Expect& w) {
    std::fprintf(stderr, "  %s[%zu] = %g, want %g (tol %.3g)\n", what, i, g, w.value, w.tol);
  });
}

// Q and K (batch, seqlen, heads, head_dim), angles from base 10000 at positions 0 .. seqlen-1: the forward, then the
// backward of its output, each checked against the float64 host reference.
int run_rotary(int b, int s, int h, int d, int rotary_dim, bool interleaved, const std::string& type_name) {
  const hk::scalar_type t = float_dtype(type_name);
  const size_t n = size_t(b) * s * h * d;
  rnref::DeviceArray q(t, n), k(t, n), q_out(t, n), k_out(t, n), q_back(t, n), k_back(t, n);
  q.random(1), k.random(2);
  hk::RotaryProblem p;
  p.batch = b, p.seqlen = s, p.head_dim = d, p.rotary_dim = rotary_dim, p.type = t, p.interleaved = interleaved;
  p.base = 10000.f;
  p.q = hk::RotaryTensor::contiguous(q.dev, q_out.dev, s, h, d);
  p.k = hk::RotaryTensor::contiguous(k.dev, k_out.dev, s, h, d);
  if (auto prof = ext<int (*)(int)>("vgpuSetProfiling")) prof(1);
  const double bytes = 4.0 * n * hk::size_of(t);  // q and k read and written
  size_t bad = 0;
  for (const bool backward : {false, true}) {
    if (backward) {
      q_out.host = q_out.download(), k_out.host = k_out.download();
      p.q = hk::RotaryTensor::contiguous(q_out.dev, q_back.dev, s, h, d);
      p.k = hk::RotaryTensor::contiguous(k_out.dev, k_back.dev, s, h, d);
    }
    const hk::Status st = backward ? hk::rotary_backward(p) : hk::rotary(p);
    if (!st) return std::fprintf(stderr, "%s\n", st.message.c_str()), 1;
    if (hipError_t e = hipDeviceSynchronize(); e != hipSuccess) return std::fprintf(stderr, "%s\n", hipGetErrorString(e)), 1;
    rnref::RotaryAngles ang;
    ang.base = 10000.0, ang.sign = backward ? -1 : 1;
    const rnref::RotaryShape sh{b, s, h, d, rotary_dim ? rotary_dim : d, interleaved, long(s) * h * d, long(h) * d, d};
    size_t wrong = misses("q", (backward ? q_back : q_out).download(),
                          rnref::rotary_reference(sh, (backward ? q_out : q).host, ang, t));
    wrong += misses("k", (backward ? k_back : k_out).download(),
                    rnref::rotary_reference(sh, (backward ? k_out : k).host, ang, t));
    bad += wrong;
    std::printf("rotary%s b=%d s=%d h=%d d=%d rotary_dim=%d %s %s on Q and K: %s (%zu elements checked)\n",
                backward ? "_backward" : "", b, s, h, d, sh.rotary_dim, interleaved ? "interleaved" : "half-split",
                type_name.c_str(), wrong ? "FAILED" : "ok", 2 * n);
    const vgpuDispatchInfo info = last_dispatch(bytes);
    print_report(info.kernel, info.block[0], true);
  }
  return bad ? 1 : 0;
}

// r = residual + dropout(x, p) / (1 - p), y = norm(r) * w (+ b), then the backward from the forward's outputs; every
// output checked against the float64 host reference, the dropout mask bit for bit.
int run_norm(int rows, int cols, bool rms, float drop, uint64_t seed, const std::string& type_name) {
  const hk::scalar_type t = float_dtype(type_name);
  const size_t n = size_t(rows) * cols;
  rnref::DeviceArray x(t, n), residual(t, n), weight(t, cols), bias(t, cols), y(t, n), r(t, n);
  rnref::DeviceArray mean(hk::scalar_type::fp32, rows), rstd(hk::scalar_type::fp32, rows), mask(hk::scalar_type::fp32, n, true);
  x.random(1, -2.f, 2.f), residual.random(2), weight.random(3, 0.5f, 1.5f), bias.random(4);
  hk::NormProblem p;
  p.rows = rows, p.cols = cols, p.type = t, p.weight_type = t;
  p.x = x.dev, p.ldx = cols, p.residual = residual.dev, p.ld_residual = cols, p.weight = weight.dev;
  p.y = y.dev, p.ldy = cols, p.residual_out = r.dev, p.ld_residual_out = cols;
  p.rstd = static_cast<float*>(rstd.dev), p.mask = static_cast<uint8_t*>(mask.dev), p.ld_mask = cols;
  if (!rms) p.bias = bias.dev, p.mean = static_cast<float*>(mean.dev);
  p.p = drop, p.seed = seed;
  if (auto prof = ext<int (*)(int)>("vgpuSetProfiling")) prof(1);
  hk::Status st = rms ? hk::rms_norm(p) : hk::layer_norm(p);
  if (!st) return std::fprintf(stderr, "%s\n", st.message.c_str()), 1;
  if (hipError_t e = hipDeviceSynchronize(); e != hipSuccess) return std::fprintf(stderr, "%s\n", hipGetErrorString(e)), 1;
  const rnref::NormShape sh{rows, cols, rms, p.eps, drop, seed, 0};
  const auto want = rnref::norm_forward_reference(sh, x.host, residual.host, weight.host,
                                                  rms ? std::vector<float>{} : bias.host, t, t);
  std::vector<rnref::Expect> want_mask(n);
  for (size_t i = 0; i < n; ++i) want_mask[i] = {double(want.mask[i]), 0};
  size_t bad = misses("r", r.download(), want.r) + misses("y", y.download(), want.y) +
               misses("mask", mask.download(), want_mask) + misses("rstd", rstd.download(), want.rstd) +
               (rms ? 0 : misses("mean", mean.download(), want.mean));
  const char* norm = rms ? "rms_norm" : "layer_norm";
  std::printf("%s %dx%d %s dropout p=%g seed=%llu: %s (r, y, mask, statistics: %zu elements checked)\n", norm, rows, cols,
              type_name.c_str(), drop, (unsigned long long)seed, bad ? "FAILED" : "ok", 3 * n + rows * (rms ? 1 : 2));
  const double elem = hk::size_of(t);
  vgpuDispatchInfo info = last_dispatch(n * (4 * elem + 1) + 8.0 * rows);  // x, residual in; r, y, mask, stats out
  print_report(info.kernel, info.block[0], true);
  // The backward's row kernel is the forward's instance with the same template arguments; the profile below is of
  // the last dispatch (the column reduction), so the row kernel shows its resources only.
  std::string backward_kernel = info.kernel;
  for (auto [from, to] : {std::pair{"12norm_forward", "13norm_backward"}, std::pair{"15NormForwardArgs", "16NormBackwardArgs"}})
    if (size_t at = backward_kernel.find(from); at != std::string::npos) backward_kernel.replace(at, std::strlen(from), to);
  const unsigned backward_threads = info.block[0];

  rnref::DeviceArray dy(t, n), dx(t, n), dres(t, n), dweight(t, cols), dbias(t, cols);
  dy.random(5);
  const size_t ws = hk::norm_backward_workspace_bytes(rows, cols);
  rnref::DeviceArray workspace(hk::scalar_type::fp32, ws / 4);
  hk::NormBackwardProblem b;
  b.rows = rows, b.cols = cols, b.type = t, b.weight_type = t, b.dy = dy.dev, b.ldy = cols, b.r = r.dev, b.ldr = cols;
  b.rstd = static_cast<const float*>(rstd.dev), b.weight = weight.dev, b.dx = dx.dev, b.ldx = cols;
  b.dresidual = dres.dev, b.ld_dresidual = cols, b.dweight = dweight.dev, b.workspace = workspace.dev;
  b.workspace_bytes = ws, b.p = drop, b.seed = seed;
  if (!rms) b.mean = static_cast<const float*>(mean.dev), b.dbias = dbias.dev;
  st = rms ? hk::rms_norm_backward(b) : hk::layer_norm_backward(b);
  if (!st) return std::fprintf(stderr, "%s\n", st.message.c_str()), 1;
  if (hipError_t e = hipDeviceSynchronize(); e != hipSuccess) return std::fprintf(stderr, "%s\n", hipGetErrorString(e)), 1;
  const auto bw = rnref::norm_backward_reference(sh, dy.host, r.download(), mean.download(), rstd.download(), weight.host,
                                                 {}, t, t);
  const size_t bad_bw = misses("dx", dx.download(), bw.dx) + misses("dresidual", dres.download(), bw.dresidual) +
                        misses("dweight", dweight.download(), bw.dweight) +
                        (rms ? 0 : misses("dbias", dbias.download(), bw.dbias));
  std::printf("%s_backward %dx%d %s: %s (dx, dresidual, dweight%s checked)\n", norm, rows, cols, type_name.c_str(),
              bad_bw ? "FAILED" : "ok", rms ? "" : ", dbias");
  print_report(backward_kernel.c_str(), backward_threads, false);
  info = last_dispatch(double(ws));  // the column reduction: partials in (dweight / dbias out is negligible)
  print_report(info.kernel, info.block[0], true);
  return bad + bad_bw ? 1 : 0;
}
// ---- modelled runs of rotary, norm and attention: device buffers only, no host data, nothing checked -------------

// A device tensor the host never writes: the model times the sampled workgroups whatever the values, and pages no
// workgroup touches are never committed, so full-size problems fit in this machine's memory.
struct Untouched {
  void* p = nullptr;
  explicit Untouched(size_t bytes) : p(device_alloc(std::max<size_t>(bytes, 4), "a tensor")) {}
  Untouched(const Untouched&) = delete;
  ~Untouched() { (void)hipFree(p); }
};

// Runs `op` (one hk call) with the model on `product` and prints its launches; false if it failed.
template <class F>
bool modelled(const std::string& product, const char* what, double flops, double peak, double bytes, F op) {
  if (!start_model(product)) return false;
  const hk::Status st = op();
  if (!st) return std::fprintf(stderr, "%s\n", st.message.c_str()), false;
  if (hipError_t e = hipDeviceSynchronize(); e != hipSuccess) return std::fprintf(stderr, "%s\n", hipGetErrorString(e)), false;
  std::printf("%s\n", what);
  print_model_log(flops, peak, bytes);
  return true;
}

int model_rotary(int b, int s, int h, int d, int rotary_dim, bool interleaved, const std::string& type_name, bool q_only,
                 const std::string& product) {
  const hk::scalar_type t = float_dtype(type_name);
  const size_t n = size_t(b) * s * h * d, bytes = n * hk::size_of(t);
  Untouched q(bytes), q_out(bytes), k(q_only ? 0 : bytes), k_out(q_only ? 0 : bytes);
  if (!q.p || !q_out.p || !k.p || !k_out.p) return 1;
  hk::RotaryProblem p;
  p.batch = b, p.seqlen = s, p.head_dim = d, p.rotary_dim = rotary_dim, p.type = t, p.interleaved = interleaved;
  p.base = 10000.f;
  p.q = hk::RotaryTensor::contiguous(q.p, q_out.p, s, h, d);
  if (!q_only) p.k = hk::RotaryTensor::contiguous(k.p, k_out.p, s, h, d);
  const double moved = 2.0 * double(bytes) * (q_only ? 1 : 2);  // every tensor read once and written once
  char what[160];
  std::snprintf(what, sizeof what, "rotary b=%d s=%d h=%d d=%d %s %s on %s (%.1f MB moved per direction)", b, s, h, d,
                type_name.c_str(), q_only ? "Q" : "Q and K", product.c_str(), moved * 1e-6);
  if (!modelled(product, what, 0, 0, moved, [&] { return hk::rotary(p); })) return 1;
  std::snprintf(what, sizeof what, "rotary_backward, the same shapes");
  return modelled(product, what, 0, 0, moved, [&] { return hk::rotary_backward(p); }) ? 0 : 1;
}

int model_norm(int rows, int cols, bool rms, float drop, uint64_t seed, const std::string& type_name,
               const std::string& product, const std::string& mask_kind = "none") {
  const hk::scalar_type t = float_dtype(type_name);
  const size_t n = size_t(rows) * cols, elem = hk::size_of(t);
  Untouched x(n * elem), residual(n * elem), weight(cols * elem), bias(cols * elem), y(n * elem), r(n * elem);
  const bool bytes_mask = mask_kind == "bytes", bits_mask = mask_kind == "bits";
  const size_t mask_row = bytes_mask ? cols : bits_mask ? (cols + 7) / 8 : 0;
  Untouched mean(rows * 4), rstd(rows * 4), mask(size_t(rows) * mask_row), dy(n * elem), dx(n * elem), dres(n * elem), dweight(cols * elem),
      dbias(cols * elem), workspace(hk::norm_backward_workspace_bytes(rows, cols));
  hk::NormProblem p;
  p.rows = rows, p.cols = cols, p.type = t, p.weight_type = t;
  p.x = x.p, p.ldx = cols, p.residual = residual.p, p.ld_residual = cols, p.weight = weight.p;
  p.y = y.p, p.ldy = cols, p.residual_out = r.p, p.ld_residual_out = cols;
  p.rstd = static_cast<float*>(rstd.p);
  if (bytes_mask) p.mask = static_cast<uint8_t*>(mask.p), p.ld_mask = cols;
  if (bits_mask) p.mask_bits = static_cast<uint8_t*>(mask.p), p.ld_mask_bits = long(mask_row);
  if (!rms) p.bias = bias.p, p.mean = static_cast<float*>(mean.p);
  p.p = drop, p.seed = seed;
  const char* norm = rms ? "rms_norm" : "layer_norm";
  char what[160];
  std::snprintf(what, sizeof what, "%s %dx%d %s dropout p=%g on %s (x, residual in; y, r, %sstatistics out)", norm,
                rows, cols, type_name.c_str(), drop, product.c_str(), bytes_mask ? "byte mask, " : bits_mask ? "bit mask, " : "");
  const double forward_bytes = double(n) * 4 * elem + double(rows) * mask_row + 8.0 * rows;
  if (!modelled(product, what, 0, 0, forward_bytes, [&] { return rms ? hk::rms_norm(p) : hk::layer_norm(p); })) return 1;
  hk::NormBackwardProblem bw;
  bw.rows = rows, bw.cols = cols, bw.type = t, bw.weight_type = t, bw.dy = dy.p, bw.ldy = cols, bw.r = r.p, bw.ldr = cols;
  bw.rstd = static_cast<const float*>(rstd.p), bw.weight = weight.p, bw.dx = dx.p, bw.ldx = cols;
  bw.dresidual = dres.p, bw.ld_dresidual = cols, bw.dweight = dweight.p, bw.workspace = workspace.p;
  bw.workspace_bytes = hk::norm_backward_workspace_bytes(rows, cols), bw.p = drop, bw.seed = seed;
  if (!rms) bw.mean = static_cast<const float*>(mean.p), bw.dbias = dbias.p;
  std::snprintf(what, sizeof what, "%s_backward, the same shape (dy, r in; dx, dresidual out)", norm);
  return modelled(product, what, 0, 0, double(n) * 4 * elem,
                  [&] { return rms ? hk::rms_norm_backward(bw) : hk::layer_norm_backward(bw); }) ? 0 : 1;
}

// One attention forward case: random inputs (contiguous (B, S, H, D), or packed (total, H, D) with --varlen), checked
// element by element against the float64 reference with its per-dtype tolerances.
struct AttnOptions {
  int b = 1, sq = 128, sk = 128, hq = 1, hkv = 1, d = 128;
  int dv = 0;  // V's and O's head dim; 0 = d
  int vd() const { return dv ? dv : d; }
  std::string dims() const { return std::to_string(d) + (vd() != d ? "/" + std::to_string(vd()) : ""); }
  bool causal = false, bwd = false, sinks = false, alibi = false;
  float softcap = 0.f;
  float dropout = 0.f;  // dropout_p, under a fixed seed and offset (attn_dropout_seed / attn_dropout_offset)
  std::string window, dtype = "bf16", varlen;
};
constexpr uint64_t attn_dropout_seed = 0x5eed, attn_dropout_offset = 0;

// --dtype: bf16, f16, or fp8 (the FP8 forward: Q, K and V in the arch's e4m3 with per (batch, KV head) descales, O bf16).
hk::scalar_type attn_type(const AttnOptions& a) {
  return a.dtype == "f16" ? hk::scalar_type::f16 : a.dtype == "fp8" ? hk::scalar_type::fp8_e4m3 : hk::scalar_type::bf16;
}
// The FP8 runs' descales of (b, KV head h), (B, Hkv): values a quantizer would pick for inputs of a few units.
float attn_descale(int which, int b, int h) { return 0.0625f * float(1 + (3 * b + 5 * h + 7 * which) % 11) / 4.f; }

std::vector<int> parse_lengths(const std::string& text) {
  std::vector<int> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    out.push_back(std::atoi(text.substr(at, comma - at).c_str()));
    at = comma + 1;
  }
  return out;
}

// " causal", " softcap C", both or neither: the variant in a report's title.
std::string causal_text(const AttnOptions& a) {
  std::string t = a.causal ? " causal" : "";
  if (a.softcap > 0) {
    char cap[32];
    std::snprintf(cap, sizeof cap, " softcap %g", a.softcap);
    t += cap;
  }
  if (a.sinks) t += " sinks";
  if (a.alibi) t += " alibi";
  if (a.dropout > 0) {
    char drop[32];
    std::snprintf(drop, sizeof drop, " dropout %g", a.dropout);
    t += drop;
  }
  return t;
}

// The options' shape, or false (with a message) if they do not make one.
bool attn_shape(const AttnOptions& a, attn_ref::Shape& shape) {
  shape.hq = a.hq, shape.hkv = a.hkv, shape.d = a.d, shape.dv = a.dv, shape.causal = a.causal, shape.softcap = a.softcap;
  shape.dropout = a.dropout, shape.seed = attn_dropout_seed, shape.offset = attn_dropout_offset;
  if (a.sinks)
    for (float z : attn_ref::sample_sinks(a.hq)) shape.sinks.push_back(z);
  if (a.alibi)
    for (float m : attn_ref::sample_alibi(a.hq)) shape.alibi.push_back(m);
  if (!a.window.empty()) {
    const std::vector<int> w = parse_lengths(a.window);
    if (w.size() != 2) return std::fprintf(stderr, "--window takes L,R\n"), false;
    shape.left = w[0], shape.right = w[1];
  }
  if (!a.varlen.empty()) {
    const size_t colon = a.varlen.find(':');
    shape.len_q = parse_lengths(a.varlen.substr(0, colon));
    shape.len_k = colon == std::string::npos ? shape.len_q : parse_lengths(a.varlen.substr(colon + 1));
    if (shape.len_q.size() != shape.len_k.size())
      return std::fprintf(stderr, "--varlen: as many key lengths as query lengths\n"), false;
  } else {
    shape.len_q.assign(a.b, a.sq), shape.len_k.assign(a.b, a.sk);
  }
  return true;
}

// Forward FLOPs: 2 (D + DV) per visible (query, key) pair and query head (the keys a query sees are one interval).
double attn_flops(const attn_ref::Shape& shape) {
  double pairs = 0;
  for (size_t b = 0; b < shape.len_q.size(); ++b) {
    const long sq = shape.len_q[b], sk = shape.len_k[b];
    for (long i = 0; i < sq; ++i) {
      long lo = 0, hi = sk - 1;
      const long diag = i + sk - sq;
      if (shape.causal || shape.right >= 0) hi = std::min(hi, diag + (shape.causal ? 0 : shape.right));
      if (shape.left >= 0) lo = std::max(lo, diag - shape.left);
      pairs += double(std::max(0L, hi - lo + 1));
    }
  }
  return 2.0 * (shape.d + shape.vd()) * shape.hq * pairs;
}

int model_attn(const AttnOptions& a, const std::string& product_name) {
  attn_ref::Shape shape;
  if (!attn_shape(a, shape)) return 2;
  const hk::scalar_type type = attn_type(a);
  const bool fp8 = type == hk::scalar_type::fp8_e4m3;
  const size_t in = hk::size_of(type);
  const long tq = shape.total_q(), tk = shape.total_k();
  Untouched q(size_t(tq) * a.hq * a.d * in), k(size_t(tk) * a.hkv * a.d * in), v(size_t(tk) * a.hkv * a.vd() * in),
      o(size_t(tq) * a.hq * a.vd() * 2), lse(size_t(tq) * a.hq * 4);
  if (!q.p || !k.p || !v.p || !o.p || !lse.p) return 1;
  hk::AttentionProblem p;
  p.batch = int(shape.len_q.size()), p.heads_q = a.hq, p.heads_kv = a.hkv, p.head_dim = a.d, p.head_dim_v = a.dv;
  p.q = q.p, p.k = k.p, p.v = v.p, p.o = o.p, p.lse = static_cast<float*>(lse.p), p.type = type, p.causal = a.causal;
  p.window_left = shape.left, p.window_right = shape.right, p.softcap = a.softcap;
  p.dropout_p = a.dropout, p.dropout_seed = attn_dropout_seed, p.dropout_offset = attn_dropout_offset;
  const std::vector<float> sinks_host = attn_ref::sample_sinks(a.hq);
  Untouched sinks(sinks_host.size() * 4), dsinks(sinks_host.size() * 4);
  if (a.sinks) {
    (void)hipMemcpy(sinks.p, sinks_host.data(), sinks_host.size() * 4, hipMemcpyHostToDevice);
    p.sinks = static_cast<float*>(sinks.p);
  }
  const std::vector<float> slopes_host = attn_ref::sample_alibi(a.hq);
  Untouched slopes(slopes_host.size() * 4);
  if (a.alibi) {
    (void)hipMemcpy(slopes.p, slopes_host.data(), slopes_host.size() * 4, hipMemcpyHostToDevice);
    p.alibi_slopes = static_cast<float*>(slopes.p);
  }
  std::vector<int> cu_q{0}, cu_k{0};
  Untouched dev_cu_q((shape.len_q.size() + 1) * 4), dev_cu_k((shape.len_q.size() + 1) * 4);
  if (!a.varlen.empty()) {
    for (size_t b = 0; b < shape.len_q.size(); ++b)
      cu_q.push_back(cu_q.back() + shape.len_q[b]), cu_k.push_back(cu_k.back() + shape.len_k[b]);
    (void)hipMemcpy(dev_cu_q.p, cu_q.data(), cu_q.size() * 4, hipMemcpyHostToDevice);
    (void)hipMemcpy(dev_cu_k.p, cu_k.data(), cu_k.size() * 4, hipMemcpyHostToDevice);
    p.cu_seqlens_q = static_cast<int*>(dev_cu_q.p), p.cu_seqlens_k = static_cast<int*>(dev_cu_k.p);
  } else {
    p.seqlen_q = a.sq, p.seqlen_k = a.sk;
  }
  Untouched fwd_workspace(hk::attention_forward_workspace_bytes(p));  // (fp8: V in bf16)
  if (fp8) p.workspace = fwd_workspace.p, p.workspace_bytes = hk::attention_forward_workspace_bytes(p);
  const vgpu::ProductInfo& product = *vgpu::find_product(product_name);
  char what[200];
  std::snprintf(what, sizeof what, "attn B=%zu Sq=%d Sk=%d Hq=%d Hkv=%d D=%s %s%s on %s", shape.len_q.size(), a.sq, a.sk,
                a.hq, a.hkv, a.dims().c_str(), a.dtype.c_str(), causal_text(a).c_str(), product_name.c_str());
  if (!modelled(product_name, what, attn_flops(shape), fp8 ? product.peak.fp8 : product.peak.f16, 0,
                [&] { return hk::attention_forward(p); }))
    return 1;
  if (!a.bwd) return 0;
  // The backward: its three launches, charged with flash-attention's count (2.5x the forward's FLOPs).
  Untouched dout(size_t(tq) * a.hq * a.vd() * 2), dq(size_t(tq) * a.hq * a.d * 2), dk(size_t(tk) * a.hkv * a.d * 2),
      dv(size_t(tk) * a.hkv * a.vd() * 2), workspace(size_t(tq) * a.hq * 4);
  if (!dout.p || !dq.p || !dk.p || !dv.p || !workspace.p) return 1;
  hk::AttentionBackwardProblem bp;
  bp.batch = p.batch, bp.seqlen_q = p.seqlen_q, bp.seqlen_k = p.seqlen_k, bp.heads_q = a.hq, bp.heads_kv = a.hkv;
  bp.head_dim = a.d, bp.head_dim_v = a.dv, bp.q = q.p, bp.k = k.p, bp.v = v.p, bp.o = o.p, bp.dout = dout.p, bp.lse = p.lse;
  bp.dq = dq.p, bp.dk = dk.p, bp.dv = dv.p, bp.type = type, bp.causal = a.causal;
  bp.window_left = p.window_left, bp.window_right = p.window_right, bp.softcap = a.softcap, bp.sinks = p.sinks;
  bp.alibi_slopes = p.alibi_slopes;
  bp.dropout_p = p.dropout_p, bp.dropout_seed = p.dropout_seed, bp.dropout_offset = p.dropout_offset;
  if (a.sinks) bp.dsinks = static_cast<float*>(dsinks.p);
  bp.cu_seqlens_q = p.cu_seqlens_q, bp.cu_seqlens_k = p.cu_seqlens_k;
  bp.workspace = workspace.p, bp.workspace_bytes = size_t(tq) * a.hq * 4;
  std::snprintf(what, sizeof what, "attn backward B=%zu Sq=%d Sk=%d Hq=%d Hkv=%d D=%s %s%s on %s", shape.len_q.size(),
                a.sq, a.sk, a.hq, a.hkv, a.dims().c_str(), a.dtype.c_str(), causal_text(a).c_str(), product_name.c_str());
  return modelled(product_name, what, 2.5 * attn_flops(shape), product.peak.f16, 0,
                  [&] { return hk::attention_backward(bp); }) ? 0 : 1;
}

int run_attn(const AttnOptions& a) {
  const hk::scalar_type type = attn_type(a);
  const bool fp8 = type == hk::scalar_type::fp8_e4m3;
  if (fp8 && a.bwd) return std::fprintf(stderr, "--bwd: the FP8 attention is forward-only\n"), 2;
  attn_ref::Shape shape;
  if (!attn_shape(a, shape)) return 2;
  const bool varlen = !a.varlen.empty();
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  // The host toolkit's model of the element types: of Q, K and V (`in`; fp8 codes of a few units) and of O (`format`).
  const hk_host::Format in_format = device_format(type), format = device_format(fp8 ? hk::scalar_type::bf16 : type);
  auto tensor = [&](long rows, int heads, std::vector<float>& host, int dim, bool input = true) {
    const hk_host::Format& f = input ? in_format : format;
    host.resize(size_t(rows) * heads * dim);
    for (auto& x : host) x = f.round(input && fp8 ? 4.f * u(rng) : u(rng));
    const std::vector<uint8_t> bytes = f.encode(host);
    void* dev = device_alloc(std::max<size_t>(bytes.size(), 2), "a tensor");
    if (!dev) std::exit(1);
    (void)hipMemcpy(dev, bytes.data(), bytes.size(), hipMemcpyHostToDevice);
    return dev;
  };
  std::vector<float> q, k, v, o_host;
  const long tq = shape.total_q(), tk = shape.total_k();
  void *dq = tensor(tq, a.hq, q, a.d), *dk = tensor(tk, a.hkv, k, a.d), *dv = tensor(tk, a.hkv, v, a.vd()),
       *dout = tensor(tq, a.hq, o_host, a.vd(), false);
  float* dlse = nullptr;
  int *cu_q = nullptr, *cu_k = nullptr;
  if (hipMalloc(&dlse, std::max<size_t>(size_t(tq) * a.hq, 1) * 4) != hipSuccess) return 1;
  hk::AttentionProblem p;
  p.batch = int(shape.len_q.size()), p.heads_q = a.hq, p.heads_kv = a.hkv, p.head_dim = a.d, p.head_dim_v = a.dv;
  p.q = dq, p.k = dk, p.v = dv, p.o = dout, p.lse = dlse, p.type = type, p.causal = a.causal;
  p.window_left = shape.left, p.window_right = shape.right, p.softcap = a.softcap;
  p.dropout_p = a.dropout, p.dropout_seed = attn_dropout_seed, p.dropout_offset = attn_dropout_offset;
  float *d_sinks = nullptr, *d_dsinks = nullptr;
  if (a.sinks) {
    const std::vector<float> z = attn_ref::sample_sinks(a.hq);
    d_sinks = static_cast<float*>(device_alloc(z.size() * 4, "the sinks"));
    d_dsinks = static_cast<float*>(device_alloc(z.size() * 4, "the sinks' gradient"));
    if (!d_sinks || !d_dsinks) return 1;
    (void)hipMemcpy(d_sinks, z.data(), z.size() * 4, hipMemcpyHostToDevice);
    p.sinks = d_sinks;
  }
  float* d_slopes = nullptr;
  if (a.alibi) {
    const std::vector<float> m = attn_ref::sample_alibi(a.hq);
    d_slopes = static_cast<float*>(device_alloc(m.size() * 4, "the ALiBi slopes"));
    if (!d_slopes) return 1;
    (void)hipMemcpy(d_slopes, m.data(), m.size() * 4, hipMemcpyHostToDevice);
    p.alibi_slopes = d_slopes;
  }
  if (varlen) {
    auto offsets = [](const std::vector<int>& lens, int*& dev) {
      std::vector<int> cu{0};
      for (int n : lens) cu.push_back(cu.back() + n);
      if (hipMalloc(&dev, cu.size() * 4) != hipSuccess) std::exit(1);
      (void)hipMemcpy(dev, cu.data(), cu.size() * 4, hipMemcpyHostToDevice);
    };
    offsets(shape.len_q, cu_q), offsets(shape.len_k, cu_k);
    p.cu_seqlens_q = cu_q, p.cu_seqlens_k = cu_k;
  } else {
    p.seqlen_q = a.sq, p.seqlen_k = a.sk;
  }
  // FP8: per (batch, KV head) descales, and the reference's inputs the codes' values times them.
  float* d_descales = nullptr;
  if (fp8) {
    const int nb = int(shape.len_q.size());
    std::vector<float> ds(3 * size_t(nb) * a.hkv);
    for (int w = 0; w < 3; ++w)
      for (int b = 0; b < nb; ++b)
        for (int h = 0; h < a.hkv; ++h) ds[(size_t(w) * nb + b) * a.hkv + h] = attn_descale(w, b, h);
    d_descales = static_cast<float*>(device_alloc(ds.size() * 4, "the descales"));
    if (!d_descales) return 1;
    (void)hipMemcpy(d_descales, ds.data(), ds.size() * 4, hipMemcpyHostToDevice);
    p.q_descale = d_descales, p.k_descale = d_descales + nb * a.hkv, p.v_descale = d_descales + 2 * nb * a.hkv;
    p.descale_per_batch = p.descale_per_head = true;
  }
  std::vector<float> q_ref = q, k_ref = k, v_ref = v;
  if (fp8) {
    long sq0 = 0, sk0 = 0;
    for (size_t b = 0; b < shape.len_q.size(); ++b) {
      auto scale = [&](std::vector<float>& x, int which, long start, long rows, int heads, int dim, int ratio) {
        for (long r = start; r < start + rows; ++r)
          for (int h = 0; h < heads; ++h)
            for (int e = 0; e < dim; ++e) x[(r * heads + h) * dim + e] *= attn_descale(which, int(b), h / ratio);
      };
      scale(q_ref, 0, sq0, shape.len_q[b], a.hq, a.d, a.hq / a.hkv);
      scale(k_ref, 1, sk0, shape.len_k[b], a.hkv, a.d, 1);
      scale(v_ref, 2, sk0, shape.len_k[b], a.hkv, a.vd(), 1);
      sq0 += shape.len_q[b], sk0 += shape.len_k[b];
    }
  }
  if (auto prof = ext<int (*)(int)>("vgpuSetProfiling")) prof(1);
  hk::Status s = hk::attention_forward(p);
  if (!s) return std::fprintf(stderr, "%s\n", s.message.c_str()), 1;
  if (hipError_t e = hipDeviceSynchronize(); e != hipSuccess) return std::fprintf(stderr, "%s\n", hipGetErrorString(e)), 1;
  vgpuDispatchInfo d{};
  if (auto last = ext<int (*)(vgpuDispatchInfo*)>("vgpuGetLastDispatch")) last(&d);

  std::vector<uint16_t> o_bits(size_t(tq) * a.hq * a.vd());
  std::vector<float> lse(size_t(tq) * a.hq);
  (void)hipMemcpy(o_bits.data(), dout, o_bits.size() * 2, hipMemcpyDeviceToHost);
  (void)hipMemcpy(lse.data(), dlse, lse.size() * 4, hipMemcpyDeviceToHost);
  const attn_ref::Result want = attn_ref::forward(shape, q_ref, k_ref, v_ref, type != hk::scalar_type::f16);
  size_t bad = 0;
  double worst = 0;  // largest error as a share of its tolerance
  for (size_t i = 0; i < o_bits.size(); ++i) {
    const float got = format.load(reinterpret_cast<const uint8_t*>(&o_bits[i]));
    const double err = std::fabs(got - want.o[i]);
    bad += !(err <= want.o_tol[i]);
    if (want.o_tol[i] > 0) worst = std::max(worst, err / want.o_tol[i]);
  }
  long start = 0;
  for (size_t b = 0; b < shape.len_q.size(); ++b) {
    for (long i = 0; i < shape.len_q[b]; ++i)
      for (int h = 0; h < a.hq; ++h) {
        // The device's LSE is (B, Hq, Sq), or (Hq, total_q) for varlen; the reference's is by packed row.
        const double got = lse[varlen ? h * tq + start + i : (long(b) * a.hq + h) * shape.len_q[b] + i];
        const long r = (start + i) * a.hq + h;
        const bool ok = std::isinf(want.lse[r]) ? got == want.lse[r] : std::fabs(got - want.lse[r]) <= want.lse_tol[r];
        bad += !ok;
        if (want.lse_tol[r] > 0 && std::isfinite(got)) worst = std::max(worst, std::fabs(got - want.lse[r]) / want.lse_tol[r]);
      }
    start += shape.len_q[b];
  }
  const double flops = attn_flops(shape);
  std::printf("attn %s B=%zu Sq=%s Sk=%s Hq=%d Hkv=%d D=%s %s%s window %d,%d on %s: %s (%zu O and %zu LSE elements, "
              "%zu outside tolerance, worst error %.2f of its tolerance)\n",
              varlen ? "varlen" : "", shape.len_q.size(), varlen ? a.varlen.substr(0, a.varlen.find(':')).c_str() : std::to_string(a.sq).c_str(),
              varlen ? (a.varlen.find(':') == std::string::npos ? "same" : a.varlen.substr(a.varlen.find(':') + 1).c_str())
                     : std::to_string(a.sk).c_str(),
              a.hq, a.hkv, a.dims().c_str(), a.dtype.c_str(), causal_text(a).c_str(), shape.left, shape.right, d.arch,
              bad ? "FAILED" : "ok", o_bits.size(), lse.size(), bad, worst);
  std::printf("  grid %u, %llu waves, %llu wave instructions, %.3f s emulated, %.3f GFLOP/s emulated\n", d.grid[0],
              d.waves, d.wave_instructions, d.wall_seconds, d.wall_seconds > 0 ? flops / d.wall_seconds * 1e-9 : 0.0);
  print_report(d.kernel, d.block[0] * d.block[1] * d.block[2], true);
  size_t bad_bwd = 0;
  if (a.bwd) {
    // The backward of loss sum(O * dO) for random dO, one kernel at a time so that each one's report is its own.
    std::vector<float> dout_host, unused;
    void* d_dout = tensor(tq, a.hq, dout_host, a.vd());
    void *d_dq = tensor(tq, a.hq, unused, a.d), *d_dk = tensor(tk, a.hkv, unused, a.d), *d_dv = tensor(tk, a.hkv, unused, a.vd());
    hk::AttentionBackwardProblem b;
    b.batch = p.batch, b.seqlen_q = p.seqlen_q, b.seqlen_k = p.seqlen_k, b.heads_q = a.hq, b.heads_kv = a.hkv;
    b.head_dim = a.d, b.head_dim_v = a.dv, b.q = dq, b.k = dk, b.v = dv, b.o = dout, b.dout = d_dout, b.lse = dlse;
    b.dq = d_dq, b.dk = d_dk, b.dv = d_dv, b.type = type, b.causal = a.causal;
    b.window_left = shape.left, b.window_right = shape.right, b.cu_seqlens_q = cu_q, b.cu_seqlens_k = cu_k;
    b.softcap = a.softcap, b.sinks = d_sinks, b.dsinks = d_dsinks, b.alibi_slopes = d_slopes;
    b.dropout_p = p.dropout_p, b.dropout_seed = p.dropout_seed, b.dropout_offset = p.dropout_offset;
    b.workspace_bytes = hk::attention_backward_workspace_bytes(b);
    b.workspace = device_alloc(std::max<size_t>(b.workspace_bytes, 4), "the workspace");
    struct Step {
      unsigned bit;
      const char* what;
      double flops_per_pair;  // matrix FLOPs per visible (query, key) pair and head, over D
    };
    std::vector<std::pair<Step, vgpuDispatchInfo>> runs;
    std::vector<Step> steps{{1, "delta = rowsum(dO * O)", 0}, {2, "dK, dV", 8}, {4, "dQ", 6}};
    if (a.sinks) steps.push_back({8, "the sinks' gradient", 0});
    for (const Step step : steps) {
      hk::Status st = hk::attention_backward_steps(b, step.bit);
      if (!st) return std::fprintf(stderr, "%s\n", st.message.c_str()), 1;
      if (hipError_t e = hipDeviceSynchronize(); e != hipSuccess) return std::fprintf(stderr, "%s\n", hipGetErrorString(e)), 1;
      vgpuDispatchInfo info{};
      if (auto last = ext<int (*)(vgpuDispatchInfo*)>("vgpuGetLastDispatch")) last(&info);
      std::printf("backward kernel: %s\n  grid %u, %llu waves, %llu wave instructions, %.3f s emulated\n", step.what,
                  info.grid[0], info.waves, info.wave_instructions, info.wall_seconds);
      if (step.flops_per_pair > 0 && info.wall_seconds > 0)
        std::printf("  %.3f GFLOP/s emulated\n", flops / 4 * step.flops_per_pair / info.wall_seconds * 1e-9);
      print_report(info.kernel, info.block[0] * info.block[1] * info.block[2], true);
    }
    const attn_ref::Gradients want = attn_ref::backward(shape, q, k, v, dout_host, type == hk::scalar_type::bf16);
    double worst_bwd = 0;
    size_t elems = 0;
    for (auto [dev, val, tol] : {std::tuple{d_dq, &want.dq, &want.dq_tol}, {d_dk, &want.dk, &want.dk_tol}, {d_dv, &want.dv, &want.dv_tol}}) {
      std::vector<uint16_t> bits(val->size());
      (void)hipMemcpy(bits.data(), dev, bits.size() * 2, hipMemcpyDeviceToHost);
      for (size_t i = 0; i < bits.size(); ++i) {
        const double err = std::fabs(format.load(reinterpret_cast<const uint8_t*>(&bits[i])) - (*val)[i]);
        bad_bwd += !(err <= (*tol)[i]);
        worst_bwd = std::max(worst_bwd, err / (*tol)[i]);
      }
      elems += bits.size();
    }
    if (a.sinks) {
      std::vector<float> got(a.hq);
      (void)hipMemcpy(got.data(), d_dsinks, got.size() * 4, hipMemcpyDeviceToHost);
      for (int h = 0; h < a.hq; ++h) {
        const double err = std::fabs(got[h] - want.dsinks[h]);
        bad_bwd += !(err <= want.dsinks_tol[h]);
        worst_bwd = std::max(worst_bwd, err / want.dsinks_tol[h]);
      }
      elems += got.size();
    }
    std::printf("attn backward: %s (%zu dQ, dK, dV (and dsinks) elements against the float64 reference, %zu outside tolerance, "
                "worst error %.2f of its tolerance)\n", bad_bwd ? "FAILED" : "ok", elems, bad_bwd, worst_bwd);
    for (void* x : {d_dout, d_dq, d_dk, d_dv, b.workspace}) (void)hipFree(x);
  }
  for (void* x : {dq, dk, dv, dout, static_cast<void*>(dlse), static_cast<void*>(cu_q), static_cast<void*>(cu_k),
                  static_cast<void*>(d_sinks), static_cast<void*>(d_dsinks), static_cast<void*>(d_slopes),
                  static_cast<void*>(d_descales)})
    if (x) (void)hipFree(x);
  return bad || bad_bwd ? 1 : 0;
}

// The attn subcommand's options.
CLI::App* add_attn_command(CLI::App& app, AttnOptions& a, std::string& arch) {
  auto* attn = app.add_subcommand("attn", "attention forward (O and LSE) with hk::attention_forward; --bwd: and backward");
  attn->add_option("--b", a.b, "batch")->check(CLI::PositiveNumber);
  attn->add_option("--sq", a.sq, "query length")->check(CLI::PositiveNumber);
  attn->add_option("--sk", a.sk, "key length")->check(CLI::PositiveNumber);
  attn->add_option("--hq", a.hq, "query heads")->check(CLI::PositiveNumber);
  attn->add_option("--hkv", a.hkv, "key/value heads")->check(CLI::PositiveNumber);
  attn->add_option("--d", a.d, "head dimension of Q and K")->check(CLI::IsMember({64, 128, 192, 256}));
  attn->add_option("--dv", a.dv, "head dimension of V and O (default --d; 128 with --d 192)")->check(CLI::IsMember({64, 128, 192, 256}));
  attn->add_flag("--causal", a.causal, "causal, aligned bottom-right");
  attn->add_option("--window", a.window, "sliding window L,R (-1 = unbounded)");
  attn->add_option("--softcap", a.softcap, "cap the scaled scores x to C tanh(x / C) (0: none)");
  attn->add_flag("--sinks", a.sinks, "attention sinks: one logit per query head in every row's denominator");
  attn->add_flag("--alibi", a.alibi, "ALiBi: -slope(h) |i + Sk - Sq - j| added to the scaled scores, slopes 2^(-8 (h + 1) / Hq)");
  attn->add_option("--dropout", a.dropout, "dropout_p: P's elements dropped with this probability (seed 0x5eed, offset 0)")
      ->check(CLI::Range(0.0, 0.999));
  attn->add_option("--dtype", a.dtype, "Q, K, V and O element type (fp8: Q, K, V in the arch's e4m3 with descales, O bf16; forward only)")
      ->check(CLI::IsMember({"bf16", "f16", "fp8"}));
  attn->add_option("--varlen", a.varlen, "packed sequences: QLENS[:KLENS], comma-separated");
  attn->add_flag("--bwd", a.bwd, "also the backward (dQ, dK, dV with hk::attention_backward), checked, with each kernel's report");
  std::vector<std::string> arch_names;
  for (const hk::arch::target& t : hk::arch::targets) arch_names.push_back(t.name);
  attn->add_option("--arch", arch)->check(CLI::IsMember(arch_names));
  return attn;
}

// `hk-run report --model P`: the kernel report with a modelled column. Each kernel is timed on P by the standard
// problem that launches it (the sizes of the published tables in cdna.md where they are quick to model): GEMMs at
// 4096^3 (A*B^T bf16, f16 and fp8 with fp32 out, bf16 out, and A*B bf16), attention forward GQA B16 H64 Hkv8 N1024 at
// D128 and D64, rotary of Q (B16 S2048 H16 D128) and LayerNorm with dropout (32768 x 2048), forward and backward.
int run_report(const std::string& product) {
  std::map<std::string, std::string> column;
  g_report_model = &column;
  int status = 0;
  const auto problem = [&](const char* name, auto run) {
    g_report_problem = std::string("[") + name + "]";
    std::printf("modelling %s on %s\n", name, product.c_str());
    std::fflush(stdout);
    status |= run();
  };
  problem("gemm 4096^3 bf16 A*B^T", [&] { return run_gemm(4096, 4096, 4096, "bf16", "fp32", true, product); });
  problem("gemm 4096^3 f16 A*B^T", [&] { return run_gemm(4096, 4096, 4096, "f16", "fp32", true, product); });
  problem("gemm 4096^3 fp8 A*B^T", [&] { return run_gemm(4096, 4096, 4096, "fp8", "fp32", true, product); });
  problem("gemm 4096^3 bf16 A*B^T bf16 out", [&] { return run_gemm(4096, 4096, 4096, "bf16", "bf16", true, product); });
  problem("gemm 4096^3 bf16 A*B", [&] { return run_gemm(4096, 4096, 4096, "bf16", "fp32", false, product); });
  for (int d : {128, 64}) {
    AttnOptions a;
    a.b = 16, a.sq = a.sk = 1024, a.hq = 64, a.hkv = 8, a.d = d;
    const std::string name = "attn fwd GQA N1024 D" + std::to_string(d);
    problem(name.c_str(), [&] { return model_attn(a, product); });
  }
  problem("rotary Q B16 S2048 H16 D128",
          [&] { return model_rotary(16, 2048, 16, 128, 0, false, "bf16", true, product); });
  problem("layer_norm 32768x2048 p=0.1", [&] { return model_norm(16 * 2048, 2048, false, 0.1f, 1, "bf16", product); });
  print_report(nullptr, 256, false);
  g_report_model = nullptr;
  return status;
}

#include "hk_run_decode.h"

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hk-run: run an hk kernel, check it, report its cost"};
  app.require_subcommand(1);
  std::string arch;
  std::vector<std::string> arch_names;
  for (const hk::arch::target& t : hk::arch::targets) arch_names.push_back(t.name);
  const CLI::IsMember is_target(arch_names);
  app.add_option("--arch", arch, "virtual device arch (gfx942 or gfx950)")->check(is_target);
  auto* gemm = app.add_subcommand("gemm", "C = A * B (or A * B^T) with hk::gemm");
  int m = 256, n = 256, k = 256;
  std::string in = "bf16", out = "fp32";
  bool bt = false;
  const CLI::Validator positive(
      [](std::string& v) {
        long x = 0;
        size_t used = 0;
        try { x = std::stol(v, &used); } catch (...) { used = 0; }
        return used == v.size() && x > 0 && x <= INT32_MAX ? std::string() : "must be a whole number from 1 to 2147483647, not '" + v + "'";
      },
      "POSITIVE");
  gemm->add_option("--m", m, "rows of A and C")->check(positive);
  gemm->add_option("--n", n, "columns of B and C")->check(positive);
  gemm->add_option("--k", k, "columns of A, rows of B")->check(positive);
  gemm->add_option("--dtype", in, "A and B element type (mx*: hk::gemm_mx, B given N x K, e8m0 scales per 32 k)")
      ->check(CLI::IsMember({"bf16", "f16", "fp8", "fp8_e4m3", "fp8_e5m2", "mxfp8", "mxfp6", "mxfp4", "int8", "fp8_block"}));
  gemm->add_option("--out", out, "C element type (f16: mx* only; int32: int8 only, its default)")
      ->check(CLI::IsMember({"fp32", "bf16", "f16", "int32"}));
  std::string mx_a, mx_b;
  const CLI::IsMember mx_formats({"e4m3", "e5m2", "e2m3", "e3m2", "e2m1"});
  gemm->add_option("--a-format", mx_a, "mx*: A's element format (default: the dtype's)")->check(mx_formats);
  gemm->add_option("--b-format", mx_b, "mx*: B's element format (default: the dtype's)")->check(mx_formats);
  gemm->add_flag("--bt", bt, "B is N x K (C = A * B^T)");
  bool pow2_scales = false;
  gemm->add_flag("--pow2-scales", pow2_scales, "fp8_block: power-of-two scales");
  gemm->add_option("--arch", arch)->check(is_target);
  std::string model;
  std::vector<std::string> product_names;
  for (const vgpu::ProductInfo& p : vgpu::all_products()) {
    std::string lower(p.name);
    for (char& c : lower) c = char(std::tolower(c));
    product_names.push_back(lower);
  }
  std::string trace, trace_png;
  const auto add_model = [&](CLI::App* command) {
    command->add_option("--model", model, "predict the time on this product with vgpu's timing model")
        ->check(CLI::IsMember(product_names, CLI::ignore_case));
    if (command->get_name() == "report") return;
    command->add_option("--trace", trace, "with --model: write each launch's replayed CU round as Chrome trace JSON");
    command->add_option("--trace-png", trace_png, "with --model: draw the trace as a PNG (tools/trace_png.py)");
    command->add_flag("--stalls", g_stalls, "with --model: print each launch's stall table and hot loop");
  };
  add_model(gemm);
  auto* grouped = app.add_subcommand("grouped-gemm", "the MoE GEMM: groups of rows of A, one B each, with hk::grouped_gemm");
  std::string group_rows = "0,17,300,1", gin = "bf16", gout = "fp32";
  int gn = 512, gk = 256;
  bool gbt = false;
  grouped->add_option("--groups", group_rows, "rows of each group, comma-separated (0: empty; 8x1024: eight groups of 1024)");
  grouped->add_option("--n", gn, "columns of B and C")->check(positive);
  grouped->add_option("--k", gk, "columns of A, rows of B")->check(positive);
  grouped->add_option("--dtype", gin, "A and B element type")->check(CLI::IsMember({"bf16", "f16", "fp8", "fp8_e4m3", "fp8_e5m2"}));
  grouped->add_option("--out", gout, "C element type")->check(CLI::IsMember({"fp32", "bf16"}));
  grouped->add_flag("--bt", gbt, "B is (G, N, K) (C = A * B^T per group), else (G, K, N)");
  grouped->add_option("--arch", arch)->check(is_target);
  add_model(grouped);
  auto* rotary = app.add_subcommand("rotary", "rotary embedding of Q and K (and its backward) with hk::rotary");
  int rb = 2, rs = 128, rh = 4, rd = 128, rrot = 0;
  bool interleaved = false;
  std::string rtype = "bf16";
  rotary->add_option("--b", rb, "batch")->check(positive);
  rotary->add_option("--s", rs, "sequence length")->check(positive);
  rotary->add_option("--h", rh, "heads")->check(positive);
  rotary->add_option("--d", rd, "head dimension")->check(positive);
  rotary->add_option("--rotary-dim", rrot, "rotated dimensions (default: all)")->check(CLI::NonNegativeNumber);
  rotary->add_flag("--interleaved", interleaved, "pairs (2i, 2i+1) (GPT-J) instead of (i, i + rotary_dim/2)");
  rotary->add_option("--dtype", rtype)->check(CLI::IsMember({"bf16", "f16", "fp32"}));
  rotary->add_option("--arch", arch)->check(is_target);
  bool q_only = false;
  rotary->add_flag("--q-only", q_only, "with --model: rotate Q alone");
  add_model(rotary);
  auto* norm = app.add_subcommand("norm", "fused dropout + residual + LayerNorm / RMSNorm (and its backward)");
  int nrows = 256, ncols = 2048;
  std::string nmask = "none";
  bool rms = false;
  float drop = 0.f;
  uint64_t seed = 0;
  std::string ntype = "bf16";
  norm->add_option("--rows", nrows)->check(positive);
  norm->add_option("--cols", ncols, "hidden size (up to 16384)")->check(positive);
  norm->add_flag("--rms", rms, "RMSNorm instead of LayerNorm");
  norm->add_option("--p", drop, "dropout probability")->check(CLI::Range(0.0, 0.999));
  norm->add_option("--seed", seed, "dropout seed");
  norm->add_option("--mask", nmask, "with --model: the dropout mask written (default none: the backward regenerates it)")
      ->check(CLI::IsMember({"none", "bytes", "bits"}));
  norm->add_option("--dtype", ntype)->check(CLI::IsMember({"bf16", "f16", "fp32"}));
  norm->add_option("--arch", arch)->check(is_target);
  add_model(norm);
  AttnOptions attn_options;
  auto* attn = add_attn_command(app, attn_options, arch);
  add_model(attn);
  DecodeOptions decode_options;
  auto* decode = add_decode_command(app, decode_options, arch);
  add_model(decode);
  auto* report = app.add_subcommand("report", "resources of every kernel in this binary");
  report->add_option("--arch", arch)->check(is_target);
  add_model(report);
  CLI11_PARSE(app, argc, argv);
  if (!model.empty()) {  // the model's product sets the device's arch and product
    const vgpu::ProductInfo& product = *vgpu::find_product(model);
    const std::string product_arch(vgpu::arch_info(product.arch).name);
    if (!arch.empty() && vgpu::parse_arch(arch) != product.arch)
      return std::fprintf(stderr, "hk-run: --model %s is a %s product, not %s\n", model.c_str(), product_arch.c_str(),
                          arch.c_str()), 1;
    arch = product_arch;
    setenv("HK_VGPU_PRODUCT", std::string(product.name).c_str(), 1);
  }
  if (!arch.empty()) setenv("HK_VGPU_ARCH", arch.c_str(), 1);  // before the runtime picks its device
  if ((!trace.empty() || !trace_png.empty() || g_stalls) && model.empty())
    return std::fprintf(stderr, "hk-run: --trace, --trace-png and --stalls need --model\n"), 1;
  if (!trace_png.empty() && trace.empty()) trace = trace_png + ".json";
  if (!trace.empty()) setenv("HK_VGPU_TIMING_TRACE", trace.c_str(), 1);  // before the runtime starts
  const auto run = [&] {
    if (*gemm && in.starts_with("mx")) {
      hk::mx_format fa = in == "mxfp8" ? hk::mx_format::e4m3 : in == "mxfp6" ? hk::mx_format::e2m3 : hk::mx_format::e2m1;
      hk::mx_format fb = fa;
      if (!mx_a.empty()) mx_run::parse(mx_a, fa);
      if (!mx_b.empty()) mx_run::parse(mx_b, fb);
      return mx_run::run(m, n, k, fa, fb, out, model);
    }
    if (*gemm && in == "int8") {
      if (out == "f16") return std::fprintf(stderr, "hk-run: int8 gives int32, bf16 or fp32\n"), 1;
      return int8_run::run(m, n, k, out == "bf16" || (out == "fp32" && gemm->count("--out")) ? out : "int32", model);
    }
    if (*gemm && in == "fp8_block") {
      if (out != "bf16" && out != "fp32") return std::fprintf(stderr, "hk-run: fp8_block gives bf16 or fp32\n"), 1;
      return blockwise_run::run(m, n, k, gemm->count("--out") ? out : "bf16", pow2_scales, model);
    }
    if (*gemm && (out == "f16" || out == "int32" || !mx_a.empty() || !mx_b.empty()))
      return std::fprintf(stderr, "hk-run: --out f16 and --a-format, --b-format are for the mx* dtypes, --out int32 for int8\n"), 1;
    if (*gemm) return run_gemm(m, n, k, in, out, bt, model);
    if (*grouped) {
      std::vector<long> rows;
      if (!grouped_run::parse(group_rows, rows)) return 1;
      return grouped_run::run(rows, gn, gk, gin, gout, gbt, model);
    }
    if (*rotary && !model.empty()) return model_rotary(rb, rs, rh, rd, rrot, interleaved, rtype, q_only, model);
    if (*rotary) return run_rotary(rb, rs, rh, rd, rrot, interleaved, rtype);
    if (*norm && !model.empty()) return model_norm(nrows, ncols, rms, drop, seed, ntype, model, nmask);
    if (*norm) return run_norm(nrows, ncols, rms, drop, seed, ntype);
    if (*attn && !model.empty()) return model_attn(attn_options, model);
    if (*attn) return run_attn(attn_options);
    if (*decode && !model.empty()) return model_decode(decode_options, model);
    if (*decode) return run_decode(decode_options);
    if (!model.empty()) return run_report(model);
    print_report(nullptr, 256, false);
    return 0;
  };
  const int status = run();
  if (!trace.empty() && status == 0) std::printf("timing trace: %s\n", trace.c_str());
  if (trace_png.empty() || status != 0) return status;
  // The picture, by the toolchain root's python3 (matplotlib).
  std::fflush(stdout);  // the report first, then the script's line
  const std::string draw = std::string("python3 '") + HK_TOOLS_DIR + "/trace_png.py' '" + trace + "' '" + trace_png + "'";
  return std::system(draw.c_str()) == 0 ? 0 : 1;
}
