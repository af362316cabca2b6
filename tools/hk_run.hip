// hk-run: run one hk kernel on the (virtual) device, check it against the host, and report what it costs.
//   hk-run gemm --m M --n N --k K [--dtype bf16|f16|fp8|fp8_e4m3|fp8_e5m2] [--out fp32|bf16] [--bt]
//               [--arch gfx942|gfx950]
//   (fp8 = fp8_e4m3; fp8 types in the device arch's format: FNUZ e4m3 / e5m2 on gfx942, OCP e4m3fn / e5m2 on gfx950)
//   hk-run attn --b B --sq SQ --sk SK --hq HQ --hkv HKV --d 64|128 [--causal] [--window L,R] [--dtype bf16|f16]
//               [--varlen QLENS[:KLENS]] [--arch gfx942|gfx950]
//   (--varlen: comma-separated sequence lengths, packed; keys as long as the queries unless KLENS is given)
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

#include "attention/attention.h"
#include "gemm/gemm.h"
#include "kernels/attention_ref.h"
#include "report/kernel_report.h"
#include "vgpu/arch.h"

namespace {

template <class F>
F ext(const char* name) { return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name)); }

float quantize(float f, hk::dtype t) {
  if (t == hk::dtype::f16) return float(_Float16(f));
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<uint16_t> to_device_bits(const std::vector<float>& v, hk::dtype t) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == hk::dtype::f16) { _Float16 h = _Float16(v[i]); std::memcpy(&out[i], &h, 2); }
    else { uint32_t u; std::memcpy(&u, &v[i], 4); out[i] = uint16_t(u >> 16); }
  }
  return out;
}

vgpu::Arch device_arch() {
  hipDeviceProp_t p;
  (void)hipGetDeviceProperties(&p, 0);
  return vgpu::parse_arch(p.gcnArchName).value_or(vgpu::Arch::gfx950);
}

// fp8 of the device's arch (fp8_ref.h, the host model of the formats): FNUZ e4m3 / e5m2 on gfx942, OCP on gfx950.
fp8_ref::F8 fp8_format(bool e5m2) {
  hipDeviceProp_t p;
  (void)hipGetDeviceProperties(&p, 0);
  const bool gfx950 = std::strncmp(p.gcnArchName, "gfx950", 6) == 0;
  return e5m2 ? fp8_ref::bf8_of(gfx950) : fp8_ref::fp8_of(gfx950);
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
  const hk::dtype ab = e5m2 ? hk::dtype::fp8_e5m2 : fp8 ? hk::dtype::fp8_e4m3 : in == "f16" ? hk::dtype::f16 : hk::dtype::bf16,
                  ct = out == "bf16" ? hk::dtype::bf16 : hk::dtype::fp32;
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
  void *da, *db, *dc;
  const size_t c_elem = ct == hk::dtype::fp32 ? 4 : 2;
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
    if (ct == hk::dtype::fp32) std::memcpy(&got, &raw[4 * idx], 4);
    else { uint32_t bits = uint32_t(*reinterpret_cast<uint16_t*>(&raw[2 * idx])) << 16; std::memcpy(&got, &bits, 4); }
    const double err = std::fabs(got - want), tol = (fp8 ? (k + 8) * std::ldexp(1.0, -23) : 0) * mag + 1e-5 * mag + 1e-6 +
                                                     (ct == hk::dtype::bf16 ? std::fabs(want) / 256 : 0);
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


// One attention forward case: random inputs (contiguous (B, S, H, D), or packed (total, H, D) with --varlen), checked
// element by element against the float64 reference with its per-dtype tolerances.
struct AttnOptions {
  int b = 1, sq = 128, sk = 128, hq = 1, hkv = 1, d = 128;
  bool causal = false;
  std::string window, dtype = "bf16", varlen;
};

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

int run_attn(const AttnOptions& a) {
  const hk::dtype type = a.dtype == "f16" ? hk::dtype::f16 : hk::dtype::bf16;
  attn_ref::Shape shape;
  shape.hq = a.hq, shape.hkv = a.hkv, shape.d = a.d, shape.causal = a.causal;
  if (!a.window.empty()) {
    const std::vector<int> w = parse_lengths(a.window);
    if (w.size() != 2) return std::fprintf(stderr, "--window takes L,R\n"), 2;
    shape.left = w[0], shape.right = w[1];
  }
  const bool varlen = !a.varlen.empty();
  if (varlen) {
    const size_t colon = a.varlen.find(':');
    shape.len_q = parse_lengths(a.varlen.substr(0, colon));
    shape.len_k = colon == std::string::npos ? shape.len_q : parse_lengths(a.varlen.substr(colon + 1));
    if (shape.len_q.size() != shape.len_k.size()) return std::fprintf(stderr, "--varlen: as many key lengths as query lengths\n"), 2;
  } else {
    shape.len_q.assign(a.b, a.sq), shape.len_k.assign(a.b, a.sk);
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  auto tensor = [&](long rows, int heads, std::vector<float>& host) {
    host.resize(size_t(rows) * heads * a.d);
    for (auto& x : host) x = quantize(u(rng), type);
    const std::vector<uint16_t> bits = to_device_bits(host, type);
    void* dev = nullptr;
    if (hipMalloc(&dev, std::max<size_t>(bits.size(), 1) * 2) != hipSuccess) std::exit(1);
    (void)hipMemcpy(dev, bits.data(), bits.size() * 2, hipMemcpyHostToDevice);
    return dev;
  };
  std::vector<float> q, k, v, o_host;
  const long tq = shape.total_q(), tk = shape.total_k();
  void *dq = tensor(tq, a.hq, q), *dk = tensor(tk, a.hkv, k), *dv = tensor(tk, a.hkv, v), *dout = tensor(tq, a.hq, o_host);
  float* dlse = nullptr;
  int *cu_q = nullptr, *cu_k = nullptr;
  if (hipMalloc(&dlse, std::max<size_t>(size_t(tq) * a.hq, 1) * 4) != hipSuccess) return 1;
  hk::AttentionProblem p;
  p.batch = int(shape.len_q.size()), p.heads_q = a.hq, p.heads_kv = a.hkv, p.head_dim = a.d;
  p.q = dq, p.k = dk, p.v = dv, p.o = dout, p.lse = dlse, p.type = type, p.causal = a.causal;
  p.window_left = shape.left, p.window_right = shape.right;
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
  if (auto prof = ext<int (*)(int)>("vgpuSetProfiling")) prof(1);
  hk::Status s = hk::attention_forward(p);
  if (!s) return std::fprintf(stderr, "%s\n", s.message.c_str()), 1;
  if (hipError_t e = hipDeviceSynchronize(); e != hipSuccess) return std::fprintf(stderr, "%s\n", hipGetErrorString(e)), 1;
  vgpuDispatchInfo d{};
  if (auto last = ext<int (*)(vgpuDispatchInfo*)>("vgpuGetLastDispatch")) last(&d);

  std::vector<uint16_t> o_bits(size_t(tq) * a.hq * a.d);
  std::vector<float> lse(size_t(tq) * a.hq);
  (void)hipMemcpy(o_bits.data(), dout, o_bits.size() * 2, hipMemcpyDeviceToHost);
  (void)hipMemcpy(lse.data(), dlse, lse.size() * 4, hipMemcpyDeviceToHost);
  const attn_ref::Result want = attn_ref::forward(shape, q, k, v, type == hk::dtype::bf16);
  size_t bad = 0;
  double worst = 0;  // largest error as a share of its tolerance
  for (size_t i = 0; i < o_bits.size(); ++i) {
    float got;
    if (type == hk::dtype::f16) { _Float16 h; std::memcpy(&h, &o_bits[i], 2); got = float(h); }
    else { uint32_t w = uint32_t(o_bits[i]) << 16; std::memcpy(&got, &w, 4); }
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
  const double flops = [&] {  // 4 * D per visible (query, key) pair and head
    double pairs = 0;
    for (size_t b = 0; b < shape.len_q.size(); ++b)
      for (long i = 0; i < shape.len_q[b]; ++i)
        for (long j = 0; j < shape.len_k[b]; ++j) pairs += attn_ref::visible(shape, i, j, shape.len_q[b], shape.len_k[b]);
    return 4.0 * a.d * a.hq * pairs;
  }();
  std::printf("attn %s B=%zu Sq=%s Sk=%s Hq=%d Hkv=%d D=%d %s%s window %d,%d on %s: %s (%zu O and %zu LSE elements, "
              "%zu outside tolerance, worst error %.2f of its tolerance)\n",
              varlen ? "varlen" : "", shape.len_q.size(), varlen ? a.varlen.substr(0, a.varlen.find(':')).c_str() : std::to_string(a.sq).c_str(),
              varlen ? (a.varlen.find(':') == std::string::npos ? "same" : a.varlen.substr(a.varlen.find(':') + 1).c_str())
                     : std::to_string(a.sk).c_str(),
              a.hq, a.hkv, a.d, a.dtype.c_str(), a.causal ? " causal" : "", shape.left, shape.right, d.arch,
              bad ? "FAILED" : "ok", o_bits.size(), lse.size(), bad, worst);
  std::printf("  grid %u, %llu waves, %llu wave instructions, %.3f s emulated, %.3f GFLOP/s emulated\n", d.grid[0],
              d.waves, d.wave_instructions, d.wall_seconds, d.wall_seconds > 0 ? flops / d.wall_seconds * 1e-9 : 0.0);
  print_report(d.kernel, d.block[0] * d.block[1] * d.block[2], true);
  for (void* x : {dq, dk, dv, dout, static_cast<void*>(dlse), static_cast<void*>(cu_q), static_cast<void*>(cu_k)})
    if (x) (void)hipFree(x);
  return bad ? 1 : 0;
}

// The attn subcommand's options.
CLI::App* add_attn_command(CLI::App& app, AttnOptions& a, std::string& arch) {
  auto* attn = app.add_subcommand("attn", "attention forward (O and LSE) with hk::attention_forward");
  attn->add_option("--b", a.b, "batch")->check(CLI::PositiveNumber);
  attn->add_option("--sq", a.sq, "query length")->check(CLI::PositiveNumber);
  attn->add_option("--sk", a.sk, "key length")->check(CLI::PositiveNumber);
  attn->add_option("--hq", a.hq, "query heads")->check(CLI::PositiveNumber);
  attn->add_option("--hkv", a.hkv, "key/value heads")->check(CLI::PositiveNumber);
  attn->add_option("--d", a.d, "head dimension")->check(CLI::IsMember({64, 128}));
  attn->add_flag("--causal", a.causal, "causal, aligned bottom-right");
  attn->add_option("--window", a.window, "sliding window L,R (-1 = unbounded)");
  attn->add_option("--dtype", a.dtype, "Q, K, V and O element type")->check(CLI::IsMember({"bf16", "f16"}));
  attn->add_option("--varlen", a.varlen, "packed sequences: QLENS[:KLENS], comma-separated");
  attn->add_option("--arch", arch)->check(CLI::IsMember({"gfx942", "gfx950"}));
  return attn;
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
  AttnOptions attn_options;
  auto* attn = add_attn_command(app, attn_options, arch);
  auto* report = app.add_subcommand("report", "resources of every kernel in this binary");
  report->add_option("--arch", arch)->check(CLI::IsMember({"gfx942", "gfx950"}));
  CLI11_PARSE(app, argc, argv);
  if (!arch.empty()) setenv("HK_VGPU_ARCH", arch.c_str(), 1);  // before the runtime picks its device
  if (*gemm) return run_gemm(m, n, k, in, out, bt);
  if (*attn) return run_attn(attn_options);
  print_report(nullptr, 256, false);
  return 0;
}
