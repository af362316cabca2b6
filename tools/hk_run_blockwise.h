// hk-run gemm --dtype fp8_block [--out bf16|fp32] [--pow2-scales]: hk::gemm_blockwise (B given N x K, K a multiple
// of 128) against a double-precision reference built from the quantized e4m3 values (the device arch's format) and
// the fp32 scales: random per 1 x 128 block of A and per 128 x 128 block of B, spread over 2^-6 .. 2^6 (powers of
// two with --pow2-scales). Included by hk_run.hip inside its namespace.
namespace blockwise_run {

int run(int m, int n, int k, const std::string& out, bool pow2, const std::string& model) {
  if (k % 128) return std::fprintf(stderr, "hk-run: fp8_block needs k a multiple of 128 (got %d)\n", k), 1;
  const hk::scalar_type ct = out == "fp32" ? hk::scalar_type::fp32 : hk::scalar_type::bf16;
  const hk_host::Format f8 = device_format(hk::scalar_type::fp8_e4m3), fc = device_format(ct);
  const hk_host::Matrix a = hk_host::random_matrix(m, k, f8, 1, 4.f), b = hk_host::random_matrix(n, k, f8, 2, 4.f);
  const int kb = k / 128, nb = (n + 127) / 128;
  std::mt19937 rng(7);
  auto scale = [&] {
    const float e = std::uniform_real_distribution<float>(-6.f, 6.f)(rng);
    return pow2 ? std::ldexp(1.f, int(std::lround(e))) : std::exp2(e);
  };
  std::vector<float> sa(size_t(m) * kb), sb(size_t(nb) * kb);
  for (float& x : sa) x = scale();
  for (float& x : sb) x = scale();
  const std::vector<uint8_t> a_bytes = f8.encode(a.values), b_bytes = f8.encode(b.values);
  DeviceArrays dev;
  void* da = dev.copy(a_bytes, "A");
  void* db = dev.copy(b_bytes, "B");
  void* dsa = dev.copy(sa, "scale_a");
  void* dsb = dev.copy(sb, "scale_b");
  void* dc = dev.alloc(size_t(m) * n * fc.bytes(), "C");
  if (!dc) return 1;
  hk::GemmBlockwiseProblem p;
  p.m = m, p.n = n, p.k = k, p.a = da, p.lda = k, p.b = db, p.ldb = k, p.c = dc, p.ldc = n, p.c_type = ct;
  p.scale_a = static_cast<const float*>(dsa), p.ld_scale_a = kb, p.scale_b = static_cast<const float*>(dsb), p.ld_scale_b = kb;
  p.pow2_scales = pow2;
  const std::string name = "gemm_blockwise " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                           " fp8 e4m3 A*B^T, " + (pow2 ? "power-of-two" : "fp32") + " block scales -> " + out;
  vgpuDispatchInfo d{};
  if (!launch_once(model, [&] { return hk::gemm_blockwise(p); }, d)) return 1;
  if (!model.empty()) {
    std::printf("%s on %s: not checked (the model executed %llu waves only)\n", name.c_str(), d.arch, d.waves);
    print_model_log(2.0 * m * n * k, vgpu::find_product(model)->peak.fp8);
    return 0;
  }
  std::vector<uint8_t> raw(size_t(m) * n * fc.bytes());
  (void)hipMemcpy(raw.data(), dc, raw.size(), hipMemcpyDeviceToHost);
  const std::vector<float> got = fc.decode(raw);
  hk_host::Comparison check("C");
  const size_t step = std::max<size_t>(1, size_t(m) * n / 20000);
  for (size_t idx = 0; idx < size_t(m) * n; idx += step) {
    const int i = int(idx / n), j = int(idx % n);
    double value = 0, magnitude = 0;
    for (int x = 0; x < kb; ++x) {
      double part = 0, part_mag = 0;
      for (int y = 128 * x; y < 128 * x + 128; ++y) part += double(a(i, y)) * b(j, y), part_mag += std::fabs(double(a(i, y)) * b(j, y));
      const double s = double(sa[size_t(i) * kb + x]) * sb[size_t(j / 128) * kb + x];
      value += part * s, magnitude += part_mag * s;
    }
    check.check(i, j, got[idx], value, hk_host::matmul_tolerance({value, magnitude}, k, fc.type));
  }
  for (const std::string& miss : check.first_misses()) std::fprintf(stderr, "%s\n", miss.c_str());
  std::printf("%s on %s: %s (%ld of %ld elements checked within tolerance, worst error %.2f of it)\n", name.c_str(), d.arch,
              check.ok() ? "ok" : "FAILED", check.checked() - check.failed(), check.checked(), check.worst());
  std::printf("  grid %u, %llu waves, %llu wave instructions, %.3f s emulated\n", d.grid[0], d.waves, d.wave_instructions,
              d.wall_seconds);
  print_report(d.kernel, d.block[0] * d.block[1] * d.block[2], true);
  return check.ok() ? 0 : 1;
}

}  // namespace blockwise_run
