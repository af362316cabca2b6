// hk-run: run one hk kernel on the (virtual) device, check it against the host, and report what it costs.
//   hk-run gemm --m M --n N --k K [--dtype bf16|f16|fp8|fp8_e4m3|fp8_e5m2] [--out fp32|bf16] [--bt]
//               [--arch gfx942|gfx950]
//   (fp8 = fp8_e4m3; fp8 types in the device arch's format: FNUZ e4m3 / e5m2 on gfx942, OCP e4m3fn / e5m2 on gfx950)
//   hk-run report [--arch gfx942|gfx950]      resources of every kernel in this binary
#include <hip/hip_runtime.h>

#include <dlfcn.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "gemm/gemm.h"
#include "host/device.h"
#include "report/kernel_report.h"
#include "vgpu/arch.h"

namespace {

template <class F>
F ext(const char* name) { return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name)); }

// The device's arch for the kernel report, from the host toolkit's one lookup.
vgpu::Arch device_arch() { return *vgpu::parse_arch(hk_host::name(hk_host::device_arch())); }

// t as the device stores it (tests/host/; fp8 in the device arch's format: FNUZ on gfx942, OCP on gfx950).
hk_host::Format device_format(hk::dtype t) { return hk_host::device_format(*hk_host::type_named(hk::to_string(t))); }

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
    std::printf("%s\n  %s\n  %s\n", k.name.c_str(), hk::report::header().c_str(),
                hk::report::row(res, with_profile ? &prof : nullptr).c_str());
  }
}

int run_gemm(int m, int n, int k, const std::string& in, const std::string& out, bool bt) {
  const bool e5m2 = in == "fp8_e5m2", fp8 = e5m2 || in == "fp8" || in == "fp8_e4m3";
  const hk::dtype ab = e5m2 ? hk::dtype::fp8_e5m2 : fp8 ? hk::dtype::fp8_e4m3 : in == "f16" ? hk::dtype::f16 : hk::dtype::bf16,
                  ct = out == "bf16" ? hk::dtype::bf16 : hk::dtype::fp32;
  // The operands and reference of tests/kernels/gemm_test.hip (the host toolkit): seeded values exact in the type.
  const hk_host::Format fab = device_format(ab), fc = device_format(ct);
  const float limit = fp8 ? 4.f : 1.f;
  const hk_host::Matrix a = hk_host::random_matrix(m, k, fab, 1, limit),
                        b = bt ? hk_host::random_matrix(n, k, fab, 2, limit) : hk_host::random_matrix(k, n, fab, 2, limit);
  const std::vector<uint8_t> a_bytes = fab.encode(a.values), b_bytes = fab.encode(b.values);
  void *da, *db, *dc;
  const size_t c_elem = fc.bytes();
  if (hipMalloc(&da, a_bytes.size()) || hipMalloc(&db, b_bytes.size()) || hipMalloc(&dc, size_t(m) * n * c_elem)) return 1;
  (void)hipMemcpy(da, a_bytes.data(), a_bytes.size(), hipMemcpyHostToDevice);
  (void)hipMemcpy(db, b_bytes.data(), b_bytes.size(), hipMemcpyHostToDevice);
  hk::GemmProblem p;
  p.m = m, p.n = n, p.k = k, p.a = da, p.lda = k, p.b = db, p.ldb = bt ? k : n, p.b_is_nk = bt, p.c = dc, p.ldc = n;
  p.ab_type = ab, p.c_type = ct;
  if (auto prof = ext<int (*)(int)>("vgpuSetProfiling")) prof(1);
  hk::Status s = hk::gemm(p);
  if (!s) return std::fprintf(stderr, "%s\n", s.message.c_str()), 1;
  if (hipError_t e = hipDeviceSynchronize(); e != hipSuccess) return std::fprintf(stderr, "%s\n", hipGetErrorString(e)), 1;
  std::vector<uint8_t> raw(size_t(m) * n * c_elem);
  (void)hipMemcpy(raw.data(), dc, raw.size(), hipMemcpyDeviceToHost);
  // Check a spread of elements (every one for small problems) against the double-precision host reference.
  hk_host::Matrix got(m, n);
  got.values = fc.decode(raw);
  const size_t step = std::max<size_t>(1, size_t(m) * n / 20000);
  const hk_host::Comparison check = hk_host::compare(got, hk_host::Matmul{{a}, {b, bt}}, fc.type, "C", step);
  for (const std::string& miss : check.first_misses()) std::fprintf(stderr, "%s\n", miss.c_str());
  const bool bad = !check.ok();
  vgpuDispatchInfo d{};
  if (auto last = ext<int (*)(vgpuDispatchInfo*)>("vgpuGetLastDispatch")) last(&d);
  std::printf("gemm %dx%dx%d %s%s -> %s on %s: %s (%ld of %ld elements checked within tolerance, worst error %.2f of it)\n",
              m, n, k, in.c_str(), bt ? " A*B^T" : " A*B", out.c_str(), d.arch, bad ? "FAILED" : "ok",
              check.checked() - check.failed(), check.checked(), check.worst());
  std::printf("  grid %u, %llu waves, %llu wave instructions, %.3f s emulated\n", d.grid[0], d.waves, d.wave_instructions,
              d.wall_seconds);
  print_report(d.kernel, d.block[0] * d.block[1] * d.block[2], true);
  (void)hipFree(da), (void)hipFree(db), (void)hipFree(dc);
  return bad ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hk-run: run an hk kernel, check it, report its cost"};
  app.require_subcommand(1);
  std::string arch;
  app.add_option("--arch", arch, "virtual device arch (gfx942 or gfx950)")->check(CLI::IsMember({"gfx942", "gfx950"}));
  auto* gemm = app.add_subcommand("gemm", "C = A * B (or A * B^T) with hk::gemm");
  int m = 256, n = 256, k = 256;
  std::string in = "bf16", out = "fp32";
  bool bt = false;
  gemm->add_option("--m", m)->check(CLI::PositiveNumber);
  gemm->add_option("--n", n)->check(CLI::PositiveNumber);
  gemm->add_option("--k", k)->check(CLI::PositiveNumber);
  gemm->add_option("--dtype", in, "A and B element type")->check(CLI::IsMember({"bf16", "f16", "fp8", "fp8_e4m3", "fp8_e5m2"}));
  gemm->add_option("--out", out, "C element type")->check(CLI::IsMember({"fp32", "bf16"}));
  gemm->add_flag("--bt", bt, "B is N x K (C = A * B^T)");
  gemm->add_option("--arch", arch)->check(CLI::IsMember({"gfx942", "gfx950"}));
  auto* report = app.add_subcommand("report", "resources of every kernel in this binary");
  report->add_option("--arch", arch)->check(CLI::IsMember({"gfx942", "gfx950"}));
  CLI11_PARSE(app, argc, argv);
  if (!arch.empty()) setenv("HK_VGPU_ARCH", arch.c_str(), 1);  // before the runtime picks its device
  if (*gemm) return run_gemm(m, n, k, in, out, bt);
  print_report(nullptr, 256, false);
  return 0;
}
