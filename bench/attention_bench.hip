// vgpu's emulation speed on hk's attention forward and backward: emulated GFLOP/s (forward: 4 * D FLOPs per visible
// query-key pair and head; backward: 10 * D, flash-attention's count of its five products, without the recomputation
// of S), wave instructions per second, and (where BLAS is found) the forward's ratio to OpenBLAS sgemm's GFLOP/s on
// the same cores in the same run, non-causal and causal. A benchmark, not a test: the results are checked only for
// being finite (attention_test and attention_bwd_test check them against the reference).
//   attention_bench [B S HQ HKV D]     (default 1 512 8 2 128; bf16)
#include <hip/hip_runtime.h>

#ifdef HK_BENCH_BLAS
#include <cblas.h>
#endif

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <random>
#include <vector>

#include "attention/attention.h"
#include "vgpu/hip_ext.h"

// OpenBLAS sgemm's GFLOP/s on a 1024^3 product (best of three after a warm-up), or 0 without BLAS.
double sgemm_gflops() {
#ifdef HK_BENCH_BLAS
  const int n = 1024;
  std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n);
  double best = 1e30;
  for (int r = 0; r < 4; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n);
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) best = std::min(best, t);
  }
  return 2.0 * n * n * n / best * 1e-9;
#else
  return 0;
#endif
}

int main(int argc, char** argv) {
  const bool given = argc > 5;
  const int b = given ? std::atoi(argv[1]) : 1, s = given ? std::atoi(argv[2]) : 512, hq = given ? std::atoi(argv[3]) : 8,
            hkv = given ? std::atoi(argv[4]) : 2, d = given ? std::atoi(argv[5]) : 128;
  const size_t q_elems = size_t(b) * s * hq * d, kv_elems = size_t(b) * s * hkv * d;
  std::vector<uint16_t> host(std::max(q_elems, kv_elems));
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  for (auto& x : host) {
    const float v = uni(rng);
    uint32_t u;
    std::memcpy(&u, &v, 4);
    x = uint16_t((u + 0x7fff + (u >> 16 & 1)) >> 16);  // bf16, round to nearest even
  }
  void *q, *k, *v, *o, *dout, *dq, *dk, *dv, *workspace;
  float* lse;
  if (hipMalloc(&q, q_elems * 2) || hipMalloc(&k, kv_elems * 2) || hipMalloc(&v, kv_elems * 2) || hipMalloc(&o, q_elems * 2) ||
      hipMalloc(&lse, size_t(b) * hq * s * 4) || hipMalloc(&dout, q_elems * 2) || hipMalloc(&dq, q_elems * 2) ||
      hipMalloc(&dk, kv_elems * 2) || hipMalloc(&dv, kv_elems * 2) || hipMalloc(&workspace, size_t(b) * hq * s * 4))
    return 1;
  (void)hipMemcpy(dout, host.data(), q_elems * 2, hipMemcpyHostToDevice);
  (void)hipMemcpy(q, host.data(), q_elems * 2, hipMemcpyHostToDevice);
  (void)hipMemcpy(k, host.data(), kv_elems * 2, hipMemcpyHostToDevice);
  (void)hipMemcpy(v, host.data(), kv_elems * 2, hipMemcpyHostToDevice);
  using LastFn = int (*)(vgpuDispatchInfo*);
  auto last = reinterpret_cast<LastFn>(dlsym(RTLD_DEFAULT, "vgpuGetLastDispatch"));
  const double blas = sgemm_gflops();
  for (bool causal : {false, true}) {
    hk::AttentionProblem p;
    p.batch = b, p.seqlen_q = p.seqlen_k = s, p.heads_q = hq, p.heads_kv = hkv, p.head_dim = d;
    p.q = q, p.k = k, p.v = v, p.o = o, p.lse = lse, p.causal = causal;
    hk::Status st = hk::attention_forward(p);  // warm-up: decodes the kernel once
    if (!st || hipDeviceSynchronize() != hipSuccess) return std::fprintf(stderr, "%s\n", st.message.c_str()), 1;
    const auto t0 = std::chrono::steady_clock::now();
    st = hk::attention_forward(p);
    (void)hipDeviceSynchronize();
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<float> l(size_t(b) * hq * s);
    (void)hipMemcpy(l.data(), lse, l.size() * 4, hipMemcpyDeviceToHost);
    for (float x : l)
      if (!std::isfinite(x)) return std::fprintf(stderr, "non-finite LSE\n"), 1;
    const double pairs = causal ? double(s) * (s + 1) / 2 : double(s) * s;
    const double flops = 4.0 * d * hq * b * pairs;
    unsigned long long insts = 0;
    vgpuDispatchInfo info{};
    if (last && last(&info) == 0) insts = info.wave_instructions;
    std::printf("attention fwd B%d S%d Hq%d Hkv%d D%d bf16%s on %s: %8.3f s  %7.3f GFLOP/s emulated  %10.3g wave "
                "instructions/s",
                b, s, hq, hkv, d, causal ? " causal" : "", info.arch, t, flops / t * 1e-9, double(insts) / t);
    if (blas > 0) std::printf("  ratio to OpenBLAS sgemm (%.1f GFLOP/s): %.4f", blas, flops / t * 1e-9 / blas);
    std::printf("\n");

    hk::AttentionBackwardProblem bp;
    bp.batch = b, bp.seqlen_q = bp.seqlen_k = s, bp.heads_q = hq, bp.heads_kv = hkv, bp.head_dim = d;
    bp.q = q, bp.k = k, bp.v = v, bp.o = o, bp.dout = dout, bp.lse = lse, bp.dq = dq, bp.dk = dk, bp.dv = dv;
    bp.causal = causal, bp.workspace = workspace, bp.workspace_bytes = size_t(b) * hq * s * 4;
    st = hk::attention_backward(bp);  // warm-up
    if (!st || hipDeviceSynchronize() != hipSuccess) return std::fprintf(stderr, "%s\n", st.message.c_str()), 1;
    const auto t1 = std::chrono::steady_clock::now();
    st = hk::attention_backward(bp);
    (void)hipDeviceSynchronize();
    const double tb = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    std::vector<uint16_t> g(q_elems);
    (void)hipMemcpy(g.data(), dq, g.size() * 2, hipMemcpyDeviceToHost);
    for (uint16_t x : g)
      if ((x & 0x7f80) == 0x7f80) return std::fprintf(stderr, "non-finite dQ\n"), 1;
    std::printf("attention bwd B%d S%d Hq%d Hkv%d D%d bf16%s on %s: %8.3f s  %7.3f GFLOP/s emulated (3 kernels)\n", b, s, hq,
                hkv, d, causal ? " causal" : "", info.arch, tb, 2.5 * flops / tb * 1e-9);
  }
  for (void* x : {q, k, v, o, dout, dq, dk, dv, workspace, static_cast<void*>(lse)}) (void)hipFree(x);
  return 0;
}
