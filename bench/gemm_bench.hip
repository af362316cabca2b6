// vgpu's emulation speed on hk's BF16 GEMM, next to OpenBLAS sgemm on the same host cores, in one run.
// Prints emulated GFLOP/s, wave instructions per second, and the ratio to sgemm, by wall time (the figure that counts
// on an idle machine) and by the process's CPU time (steadier where other work shares the cores). A benchmark, not a
// test.
// Inputs are fixed-seed uniform [-1, 1] values rounded to bf16: all-ones inputs would keep every MFMA group on one
// branch of the emulator's arithmetic (and C growing past 2^7 on another), which real data does not.
//   gemm_bench [M N K]     (default 512 512 512)
#include <hip/hip_runtime.h>

#include <cblas.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "gemm/gemm.h"
#include "host/device.h"
#include "vgpu/hip_ext.h"

// CPU seconds the process has used so far, over all its threads.
double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

int main(int argc, char** argv) {
  const int m = argc > 3 ? std::atoi(argv[1]) : 512, n = argc > 3 ? std::atoi(argv[2]) : 512,
            k = argc > 3 ? std::atoi(argv[3]) : 512;
  const double flops = 2.0 * m * n * k;
  // bf16 operands (the host toolkit's seeded values, rounded to bf16) and the same values as floats for sgemm.
  const hk_host::Format bf16 = hk_host::device_format(hk_host::Type::bf16);
  const hk_host::Matrix A = hk_host::random_matrix(m, k, bf16, 42), B = hk_host::random_matrix(n, k, bf16, 43);
  const std::vector<uint8_t> a = bf16.encode(A.values), b = bf16.encode(B.values);
  const std::vector<float>&fa = A.values, &fb = B.values;
  std::vector<float> fc(size_t(m) * n);
  void *da, *db, *dc;
  if (hipMalloc(&da, a.size()) || hipMalloc(&db, b.size()) || hipMalloc(&dc, size_t(m) * n * 4)) return 1;
  (void)hipMemcpy(da, a.data(), a.size(), hipMemcpyHostToDevice);
  (void)hipMemcpy(db, b.data(), b.size(), hipMemcpyHostToDevice);
  hk::GemmProblem p;
  p.m = m, p.n = n, p.k = k, p.a = da, p.lda = k, p.b = db, p.ldb = k, p.b_is_nk = true, p.c = dc, p.ldc = n;
  hk::Status s = hk::gemm(p);  // warm-up: decodes the kernel once
  if (!s || hipDeviceSynchronize() != hipSuccess) return std::fprintf(stderr, "%s\n", s.message.c_str()), 1;
  auto t0 = std::chrono::steady_clock::now();
  double c0 = cpu_seconds();
  s = hk::gemm(p);
  (void)hipDeviceSynchronize();
  const double emu = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double emu_cpu = cpu_seconds() - c0;
  std::vector<float> out(size_t(m) * n);
  (void)hipMemcpy(out.data(), dc, out.size() * 4, hipMemcpyDeviceToHost);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.f, fa.data(), k, fb.data(), k, 0.f, fc.data(), n);
  for (size_t x = 0; x < out.size(); ++x)  // fp32 accumulation either way: agree to well within 1e-3 * sqrt(k)
    if (!(std::fabs(out[x] - fc[x]) <= 1e-3f * std::sqrt(float(k))))
      return std::fprintf(stderr, "wrong result at %zu: %f, sgemm %f\n", x, out[x], fc[x]), 1;

  unsigned long long insts = 0;
  char arch[16] = "?";
  using LastFn = int (*)(vgpuDispatchInfo*);
  if (auto last = reinterpret_cast<LastFn>(dlsym(RTLD_DEFAULT, "vgpuGetLastDispatch"))) {
    vgpuDispatchInfo d{};
    if (last(&d) == 0) insts = d.wave_instructions, std::memcpy(arch, d.arch, sizeof arch);
  }

  t0 = std::chrono::steady_clock::now();
  c0 = cpu_seconds();
  const int reps = 5;
  for (int r = 0; r < reps; ++r)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.f, fa.data(), k, fb.data(), k, 0.f, fc.data(), n);
  const double blas = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
  const double blas_cpu = (cpu_seconds() - c0) / reps;

  using SimdFn = const char* (*)();
  const auto simd = reinterpret_cast<SimdFn>(dlsym(RTLD_DEFAULT, "vgpuMfmaArithmetic"));
  std::printf("gemm %dx%dx%d bf16 -> fp32 on %s\n", m, n, k, arch);
  std::printf("  vgpu (%s threads, MFMA arithmetic %s): %8.3f s  %8.3f GFLOP/s emulated  %10.3g wave instructions/s"
              "  (%.3f CPU s)\n",
              std::getenv("HK_VGPU_THREADS") ? std::getenv("HK_VGPU_THREADS") : "all", simd ? simd() : "?", emu,
              flops / emu * 1e-9, double(insts) / emu, emu_cpu);
  std::printf("  OpenBLAS sgemm:   %8.4f s  %8.3f GFLOP/s  (%.4f CPU s)\n", blas, flops / blas * 1e-9, blas_cpu);
  std::printf("  ratio vgpu / OpenBLAS: %.4f (wall time), %.4f (CPU time)\n", blas / emu, blas_cpu / emu_cpu);
  return 0;
}
