// hk-run: run one hk kernel on the (virtual) device, check it against the host, and report what it costs.
//   hk-run gemm --m M --n N --k K [--dtype bf16|f16|fp8|fp8_e4m3|fp8_e5m2] [--out fp32|bf16] [--bt]
//               [--arch gfx942|gfx950]
//   (fp8 = fp8_e4m3; fp8 types in the device arch's format: FNUZ e4m3 / e5m2 on gfx942, OCP e4m3fn / e5m2 on gfx950)
//   hk-run report [--arch gfx942|gfx950]      resources of every kernel in this binary
#include <hip/hip_runtime.h>

#include "fp8_ref.h"

#include <dlfcn.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "gemm/gemm.h"
#include "report/kernel_report.h"
#include "vgpu/arch.h"

namespace {

template <class F>
F ext(const char* name) { return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name)); }

float quantize(float f, hk::scalar_type t) {
  if (t == hk::scalar_type::f16) return float(_Float16(f));
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<uint16_t> to_device_bits(const std::vector<float>& v, hk::scalar_type t) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == hk::scalar_type::f16) { _Float16 h = _Float16(v[i]); std::memcpy(&out[i], &h, 2); }
    else { uint32_t u; std::memcpy(&u, &v[i], 4); out[i] = uint16_t(u >> 16); }
  }
  return out;
}

// The device's target (hk's lookup), and the same arch as vgpu's loader names it (for the kernel report).
const hk::arch::target& device_target() {
  static const hk::arch::target* t = hk::arch::device_target(0);
  if (!t) std::fprintf(stderr, "hk-run: the device is not a target hk is built for\n"), std::exit(1);
  return *t;
}
vgpu::Arch device_arch() { return *vgpu::parse_arch(device_target().name); }

// fp8 of the device's target (fp8_ref.h, the host model of the formats): FNUZ e4m3 / e5m2 on gfx942, OCP on gfx950.
fp8_ref::F8 fp8_format(bool e5m2) {
  const bool ocp = !device_target().fp8_fnuz;
  return e5m2 ? fp8_ref::bf8_of(ocp) : fp8_ref::fp8_of(ocp);
}

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
// Random finite fp8 codes of magnitude at most 4, and their values.
std::vector<uint8_t> fp8_codes(std::vector<float>& v, std::mt19937& rng, const fp8_ref::F8& f) {
  std::vector<uint8_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    float x;
    do out[i] = uint8_t(rng()), x = float(fp8_ref::value(out[i], f));
    while (!(std::fabs(x) <= 4.f));
    v[i] = x;
  }
  return out;
}

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
  const hk::scalar_type ab = e5m2 ? hk::scalar_type::fp8_e5m2 : fp8 ? hk::scalar_type::fp8_e4m3 : in == "f16" ? hk::scalar_type::f16 : hk::scalar_type::bf16,
                  ct = out == "bf16" ? hk::scalar_type::bf16 : hk::scalar_type::fp32;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> a(size_t(m) * k), b(size_t(n) * k);
  std::vector<uint8_t> a_bytes, b_bytes;
  if (fp8) {
    const fp8_ref::F8 f = fp8_format(e5m2);
    a_bytes = fp8_codes(a, rng, f), b_bytes = fp8_codes(b, rng, f);
  } else {
    for (auto& x : a) x = quantize(u(rng), ab);
    for (auto& x : b) x = quantize(u(rng), ab);
    auto bits = [](const std::vector<uint16_t>& v) {
      std::vector<uint8_t> r(v.size() * 2);
      std::memcpy(r.data(), v.data(), r.size());
      return r;
    };
    a_bytes = bits(to_device_bits(a, ab)), b_bytes = bits(to_device_bits(b, ab));
  }
  const size_t c_elem = ct == hk::scalar_type::fp32 ? 4 : 2;
  void* da = device_alloc(a_bytes.size(), "A");
  void* db = da ? device_alloc(b_bytes.size(), "B") : nullptr;
  void* dc = db ? device_alloc(size_t(m) * n * c_elem, "C") : nullptr;
  if (!dc) return (void)hipFree(da), (void)hipFree(db), 1;
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
  // Check a spread of elements (every one for small problems) against a double-precision host reference.
  const size_t total = size_t(m) * n, step = std::max<size_t>(1, total / 20000);
  double worst = 0;
  size_t bad = 0, checked = 0;
  for (size_t idx = 0; idx < total; idx += step, ++checked) {
    const int i = int(idx / n), j = int(idx % n);
    double want = 0, mag = 0;
    for (int kk = 0; kk < k; ++kk) {
      double x = a[size_t(i) * k + kk] * double(bt ? b[size_t(j) * k + kk] : b[size_t(kk) * n + j]);
      want += x, mag += std::fabs(x);
    }
    float got;
    if (ct == hk::scalar_type::fp32) std::memcpy(&got, &raw[4 * idx], 4);
    else { uint32_t bits = uint32_t(*reinterpret_cast<uint16_t*>(&raw[2 * idx])) << 16; std::memcpy(&got, &bits, 4); }
    const double err = std::fabs(got - want), tol = (fp8 ? (k + 8) * std::ldexp(1.0, -23) : 0) * mag + 1e-5 * mag + 1e-6 +
                                                     (ct == hk::scalar_type::bf16 ? std::fabs(want) / 256 : 0);
    worst = std::max(worst, err / (mag + 1e-30));
    bad += !(err <= tol);
  }
  vgpuDispatchInfo d{};
  if (auto last = ext<int (*)(vgpuDispatchInfo*)>("vgpuGetLastDispatch")) last(&d);
  std::printf("gemm %dx%dx%d %s%s -> %s on %s: %s (%zu of %zu elements checked, worst relative error %.2e)\n", m, n, k,
              in.c_str(), bt ? " A*B^T" : " A*B", out.c_str(), d.arch, bad ? "FAILED" : "ok", checked - bad, checked,
              worst);
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
  gemm->add_option("--dtype", in, "A and B element type")->check(CLI::IsMember({"bf16", "f16", "fp8", "fp8_e4m3", "fp8_e5m2"}));
  gemm->add_option("--out", out, "C element type")->check(CLI::IsMember({"fp32", "bf16"}));
  gemm->add_flag("--bt", bt, "B is N x K (C = A * B^T)");
  gemm->add_option("--arch", arch)->check(is_target);
  auto* report = app.add_subcommand("report", "resources of every kernel in this binary");
  report->add_option("--arch", arch)->check(is_target);
  CLI11_PARSE(app, argc, argv);
  if (!arch.empty()) setenv("HK_VGPU_ARCH", arch.c_str(), 1);  // before the runtime picks its device
  if (*gemm) return run_gemm(m, n, k, in, out, bt);
  print_report(nullptr, 256, false);
  return 0;
}
