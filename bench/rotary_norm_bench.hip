// The memory-bound kernels (hk::rotary, hk::layer_norm / rms_norm and backwards): bytes each kernel moves, vgpu's
// emulated bandwidth on them (bytes / host seconds of the emulation), and the time each would take at the HBM peaks of
// the products (data sheets, /work/shared/reference/timing.md) — the floor a memory-bound kernel aims at. vgpu has no
// timing model yet, so no modelled fraction of peak is printed. A benchmark, not a test: outputs are not checked here
// (the tests and `hk-run rotary|norm` check them).
//   rotary_norm_bench [scale]   (default 1: rotary 1x1024x16x128, norms 1024 x 4096; scale multiplies seqlen and rows)
#include <hip/hip_runtime.h>

#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "norm/norm.h"
#include "rotary/rotary.h"
#include "vgpu/hip_ext.h"

namespace {

struct Product {
  const char* name;
  double hbm_bytes_per_s;
};
// HBM peaks (data sheets): MI300X 5.3 TB/s, MI325X 6.0 TB/s, MI355X 8 TB/s.
const Product products[] = {{"MI300X", 5.3e12}, {"MI325X", 6.0e12}, {"MI355X", 8.0e12}};

void* device_bytes(size_t n) {
  void* p = nullptr;
  if (hipMalloc(&p, n) != hipSuccess) std::exit((std::fprintf(stderr, "hipMalloc of %zu bytes failed\n", n), 1));
  (void)hipMemset(p, 0, n);
  return p;
}

// Runs `launch` once to decode the kernels, then once timed; prints the bytes moved and the rates.
void measure(const std::string& what, double bytes, const std::function<hk::Status()>& launch) {
  hk::Status s = launch();
  if (!s || hipDeviceSynchronize() != hipSuccess) std::exit((std::fprintf(stderr, "%s: %s\n", what.c_str(), s.message.c_str()), 1));
  const auto t0 = std::chrono::steady_clock::now();
  s = launch();
  (void)hipDeviceSynchronize();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%-44s %9.2f MB  vgpu %8.3f s  %7.3f GB/s emulated |", what.c_str(), bytes * 1e-6, secs, bytes / secs * 1e-9);
  for (const Product& p : products) std::printf("  %s %7.2f us", p.name, bytes / p.hbm_bytes_per_s * 1e6);
  std::printf("  (at HBM peak)\n");
}

}  // namespace

int main(int argc, char** argv) {
  const int scale = argc > 1 ? std::max(1, std::atoi(argv[1])) : 1;
  hipDeviceProp_t prop;
  (void)hipGetDeviceProperties(&prop, 0);
  std::printf("memory-bound kernels on %s (scale %d)\n", prop.gcnArchName, scale);

  {  // rotary: Q and K bf16 (b, s, h, d), half-split, angles from a base; each element read and written once.
    const int b = 1, s = 1024 * scale, h = 16, d = 128;
    const size_t n = size_t(b) * s * h * d, bytes = 2 * n;
    void *q = device_bytes(bytes), *k = device_bytes(bytes), *qo = device_bytes(bytes), *ko = device_bytes(bytes);
    hk::RotaryProblem p;
    p.batch = b, p.seqlen = s, p.head_dim = d, p.type = hk::scalar_type::bf16, p.base = 10000.f;
    p.q = hk::RotaryTensor::contiguous(q, qo, s, h, d), p.k = hk::RotaryTensor::contiguous(k, ko, s, h, d);
    const std::string shape = std::to_string(b) + "x" + std::to_string(s) + "x" + std::to_string(h) + "x" + std::to_string(d);
    measure("rotary Q+K " + shape + " bf16", 4.0 * n * 2, [&] { return hk::rotary(p); });
    measure("rotary_backward Q+K " + shape + " bf16", 4.0 * n * 2, [&] { return hk::rotary_backward(p); });
    for (void* ptr : {q, k, qo, ko}) (void)hipFree(ptr);
  }
  {  // norms: bf16 rows x cols with residual and dropout.
    const int rows = 1024 * scale, cols = 4096;
    const size_t n = size_t(rows) * cols, e = 2;
    void *x = device_bytes(n * e), *res = device_bytes(n * e), *y = device_bytes(n * e), *r = device_bytes(n * e);
    void *w = device_bytes(cols * e), *bias = device_bytes(cols * e), *stats = device_bytes(8 * size_t(rows));
    void *dy = device_bytes(n * e), *dx = device_bytes(n * e), *dres = device_bytes(n * e);
    void *dw = device_bytes(cols * e), *db = device_bytes(cols * e);
    const size_t ws = hk::norm_backward_workspace_bytes(rows, cols);
    void* workspace = device_bytes(ws);
    const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
    for (const bool rms : {false, true}) {
      hk::NormProblem p;
      p.rows = rows, p.cols = cols, p.x = x, p.ldx = cols, p.residual = res, p.ld_residual = cols, p.weight = w;
      p.y = y, p.ldy = cols, p.residual_out = r, p.ld_residual_out = cols, p.p = 0.1f, p.seed = 7;
      p.rstd = static_cast<float*>(stats) + rows;
      if (!rms) p.bias = bias, p.mean = static_cast<float*>(stats);
      // x, residual in; r, y out; the statistics.
      const double fwd = 4.0 * n * e + (rms ? 4.0 : 8.0) * rows;
      measure(std::string(rms ? "rms_norm" : "layer_norm") + " " + shape + " bf16 p=0.1", fwd,
              [&] { return rms ? hk::rms_norm(p) : hk::layer_norm(p); });
      hk::NormBackwardProblem bw;
      bw.rows = rows, bw.cols = cols, bw.dy = dy, bw.ldy = cols, bw.r = r, bw.ldr = cols, bw.weight = w;
      bw.rstd = static_cast<const float*>(p.rstd), bw.dx = dx, bw.ldx = cols, bw.dresidual = dres, bw.ld_dresidual = cols;
      bw.dweight = dw, bw.workspace = workspace, bw.workspace_bytes = ws, bw.p = 0.1f, bw.seed = 7;
      if (!rms) bw.mean = p.mean, bw.dbias = db;
      // dy, r in; dx, dresidual out; the statistics; the partials (dweight, and dbias for LayerNorm: half of the
      // workspace each) written and read back.
      const double bwd = 4.0 * n * e + (rms ? 4.0 : 8.0) * rows + (rms ? 1.0 : 2.0) * ws;
      measure(std::string(rms ? "rms_norm_backward" : "layer_norm_backward") + " " + shape + " bf16", bwd,
              [&] { return rms ? hk::rms_norm_backward(bw) : hk::layer_norm_backward(bw); });
    }
    for (void* ptr : {x, res, y, r, w, bias, stats, dy, dx, dres, dw, db, workspace}) (void)hipFree(ptr);
  }
  return 0;
}
