// vgpu's emulation speed on hk's BF16 GEMM, next to OpenBLAS sgemm on the same host cores, in one run.
// Prints emulated GFLOP/s, wave instructions per second, and the ratio to sgemm. A benchmark, not a test.
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
#include <vector>

#include "gemm/gemm.h"
#include "host/device.h"
#include "vgpu/hip_ext.h"

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
  s = hk::gemm(p);
  (void)hipDeviceSynchronize();
  double emu = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<float> out(size_t(m) * n);
  (void)hipMemcpy(out.data(), dc, out.size() * 4, hipMemcpyDeviceToHost);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.f, fa.data(), k, fb.data(), k, 0.f, fc.data(), n);
  for (size_t x = 0; x < out.size(); ++x)  // fp32 accumulation either way: agree to well within 1e-3 * sqrt(k)
    if (!(std::fabs(out[x] - fc[x]) <= 1e-3f * std::sqrt(float(k))))
      return std::fprintf(stderr, "wrong result at %zu: %f, sgemm %f\n", x, out[x], fc[x]), 1;

  unsigned long long insts = 0;
  using LastFn = int (*)(vgpuDispatchInfo*);
  if (auto last = reinterpret_cast<LastFn>(dlsym(RTLD_DEFAULT, "vgpuGetLastDispatch"))) {
    vgpuDispatchInfo d{};
    if (last(&d) == 0) insts = d.wave_instructions;
  }

  t0 = std::chrono::steady_clock::now();
  const int reps = 5;
  for (int r = 0; r < reps; ++r)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.f, fa.data(), k, fb.data(), k, 0.f, fc.data(), n);
  double blas = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;

  std::printf("gemm %dx%dx%d bf16 -> fp32\n", m, n, k);
  std::printf("  vgpu (%s threads): %8.3f s  %8.3f GFLOP/s emulated  %10.3g wave instructions/s\n",
              std::getenv("HK_VGPU_THREADS") ? std::getenv("HK_VGPU_THREADS") : "all", emu, flops / emu * 1e-9,
              double(insts) / emu);
  std::printf("  OpenBLAS sgemm:   %8.4f s  %8.3f GFLOP/s\n", blas, flops / blas * 1e-9);
  std::printf("  ratio vgpu / OpenBLAS: %.4f\n", blas / emu);
  return 0;
}
