// hk-run gemm --dtype int8 [--out int32|bf16|fp32]: hk::gemm_int8 (B given N x K) against an exact host reference:
// int32 C must match bit for bit (sums wrap modulo 2^32); bf16 / fp32 C is acc * row_scale * col_scale with random
// scales, within the rounding of the fp32 products (and bf16's). Included by hk_run.hip inside its namespace.
namespace int8_run {

int run(int m, int n, int k, const std::string& out, const std::string& model) {
  using O = hk::GemmInt8Problem::Output;
  const O ct = out == "bf16" ? O::bf16 : out == "fp32" ? O::fp32 : O::int32;
  const long ld = (k + 3) / 4 * 4;
  std::mt19937 rng(99);
  std::vector<int8_t> a(size_t(m) * ld), b(size_t(n) * ld);
  for (auto& x : a) x = int8_t(rng());
  for (auto& x : b) x = int8_t(rng());
  std::vector<float> rs(m), cs(n);
  for (auto& x : rs) x = std::uniform_real_distribution<float>(0.5f, 2.f)(rng);
  for (auto& x : cs) x = std::uniform_real_distribution<float>(-1e-3f, 1e-3f)(rng);
  const size_t ce = ct == O::bf16 ? 2 : 4;
  DeviceArrays dev;
  void* da = dev.copy(a, "A");
  void* db = dev.copy(b, "B");
  void* drs = dev.copy(rs, "row scales");
  void* dcs = dev.copy(cs, "column scales");
  void* dc = dev.alloc(size_t(m) * n * ce, "C");
  if (!dc) return 1;
  hk::GemmInt8Problem p;
  p.m = m, p.n = n, p.k = k, p.a = static_cast<const int8_t*>(da), p.lda = ld, p.b = static_cast<const int8_t*>(db), p.ldb = ld;
  p.c = dc, p.ldc = n, p.c_type = ct;
  if (ct != O::int32) p.row_scale = static_cast<const float*>(drs), p.col_scale = static_cast<const float*>(dcs);
  const std::string name = "gemm_int8 " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " -> " +
                           (ct == O::int32 ? "int32" : out);
  vgpuDispatchInfo d{};
  if (!launch_once(model, [&] { return hk::gemm_int8(p); }, d)) return 1;
  if (!model.empty()) {
    std::printf("%s on %s: not checked (the model executed %llu waves only); TOPS below\n", name.c_str(), d.arch, d.waves);
    print_model_log(2.0 * m * n * k, vgpu::find_product(model)->peak.fp8);  // int8 runs at the fp8 rate on CDNA3/4
    return 0;
  }
  std::vector<uint8_t> raw(size_t(m) * n * ce);
  (void)hipMemcpy(raw.data(), dc, raw.size(), hipMemcpyDeviceToHost);
  long failed = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      int64_t acc = 0;
      for (int x = 0; x < k; ++x) acc += int64_t(a[size_t(i) * ld + x]) * b[size_t(j) * ld + x];
      const int32_t want = int32_t(uint32_t(uint64_t(acc)));
      const size_t at = size_t(i) * n + j;
      bool ok;
      double got = 0, ref = 0;
      if (ct == O::int32) {
        int32_t g;
        std::memcpy(&g, &raw[at * 4], 4);
        ok = g == want, got = g, ref = want;
      } else {
        ref = double(want) * rs[i] * cs[j];
        if (ct == O::fp32) {
          float g;
          std::memcpy(&g, &raw[at * 4], 4);
          got = g;
        } else {
          uint16_t h;
          std::memcpy(&h, &raw[at * 2], 2);
          got = std::bit_cast<float>(uint32_t(h) << 16);
        }
        const double eps = (ct == O::bf16 ? 0x1p-8 : 0) + 0x1p-22;
        ok = std::fabs(got - ref) <= eps * std::fabs(ref) + 1e-30;
      }
      if (!ok && failed++ < 5) std::fprintf(stderr, "C[%d][%d] = %.9g, want %.9g\n", i, j, got, ref);
    }
  std::printf("%s on %s: %s (%ld of %ld elements %s)\n", name.c_str(), d.arch, failed ? "FAILED" : "ok", long(m) * n - failed,
              long(m) * n, ct == O::int32 ? "exact" : "within tolerance");
  std::printf("  grid %u, %llu waves, %llu wave instructions, %.3f s emulated\n", d.grid[0], d.waves, d.wave_instructions,
              d.wall_seconds);
  print_report(d.kernel, d.block[0] * d.block[1] * d.block[2], true);
  return failed ? 1 : 0;
}

}  // namespace int8_run
