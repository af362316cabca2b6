// A downstream program of an installed hk: a bf16 GEMM through hk::gemm, checked against a host loop; exit 0 only
// if every element is within bf16 input rounding of the double-precision product, and a bad problem is refused.
#include <hk/kernels/gemm/gemm.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {
uint16_t to_bf16(float f) {  // round to nearest even (the inputs here are finite)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float from_bf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
bool ok(hipError_t e, const char* what) {
  if (e != hipSuccess) std::fprintf(stderr, "%s: %s\n", what, hipGetErrorString(e));
  return e == hipSuccess;
}
}  // namespace

int main() {
  const int m = 96, n = 80, k = 64;
  std::vector<uint16_t> a(m * k), b(k * n);
  for (int i = 0; i < m * k; ++i) a[i] = to_bf16(float((i * 37) % 23) / 16.f - 0.7f);
  for (int i = 0; i < k * n; ++i) b[i] = to_bf16(float((i * 11) % 19) / 8.f - 1.1f);
  void *da, *db, *dc;
  if (!ok(hipMalloc(&da, a.size() * 2), "hipMalloc") || !ok(hipMalloc(&db, b.size() * 2), "hipMalloc") ||
      !ok(hipMalloc(&dc, size_t(m) * n * 4), "hipMalloc"))
    return 1;
  if (!ok(hipMemcpy(da, a.data(), a.size() * 2, hipMemcpyHostToDevice), "hipMemcpy") ||
      !ok(hipMemcpy(db, b.data(), b.size() * 2, hipMemcpyHostToDevice), "hipMemcpy"))
    return 1;

  hk::GemmProblem p;
  p.m = m, p.n = n, p.k = k, p.a = da, p.lda = k, p.b = db, p.ldb = n, p.c = dc, p.ldc = n;
  if (hk::Status s = hk::gemm(p); !s) {
    std::fprintf(stderr, "hk::gemm: %s\n", s.message.c_str());
    return 1;
  }
  std::vector<float> c(size_t(m) * n);
  if (!ok(hipMemcpy(c.data(), dc, c.size() * 4, hipMemcpyDeviceToHost), "hipMemcpy")) return 1;

  int bad = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double ref = 0, mag = 0;
      for (int x = 0; x < k; ++x) {
        const double t = double(from_bf16(a[i * k + x])) * from_bf16(b[x * n + j]);
        ref += t, mag += std::fabs(t);
      }
      if (std::fabs(c[i * n + j] - ref) > 1e-5 * mag + 1e-6) ++bad;
    }
  hk::GemmProblem wrong = p;
  wrong.lda = k - 1;  // rows of A overlap: must be refused
  const bool refused = !hk::gemm(wrong);
  std::printf("downstream hk::gemm %dx%dx%d: %d of %d elements wrong; bad problem %s\n", m, n, k, bad, m * n,
              refused ? "refused" : "ACCEPTED");
  return bad == 0 && refused ? 0 : 1;
}
