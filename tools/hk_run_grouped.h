// hk-run grouped-gemm --groups M0,M1,... --n N --k K [--dtype bf16|f16|fp8|fp8_e4m3|fp8_e5m2] [--out fp32|bf16]
// [--bt]: hk::grouped_gemm over groups of M0, M1, ... rows (0: an empty group; "8x1024": eight groups of 1024), B
// (G, K, N) or with --bt (G, N, K), int64 offsets; each group's C checked against the double-precision reference of
// its own A rows and B (the host toolkit's, as run_gemm). Included by hk_run.hip inside its namespace.
namespace grouped_run {

// "0,17,300,1" or "8x1024,0": the rows of each group; false with a message for anything else.
bool parse(const std::string& text, std::vector<long>& rows) {
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const size_t x = item.find('x');
    char* end = nullptr;
    const long count = x == std::string::npos ? 1 : std::strtol(item.c_str(), &end, 10);
    const std::string value = x == std::string::npos ? item : item.substr(x + 1);
    const long r = std::strtol(value.c_str(), &end, 10);
    if (value.empty() || *end || r < 0 || count < 1 || r > INT32_MAX)
      return std::fprintf(stderr, "hk-run: --groups takes rows per group such as 0,17,300,1 or 8x1024, not '%s'\n", text.c_str()), false;
    rows.insert(rows.end(), count, r);
    at = comma + 1;
  }
  return true;
}

int run(const std::vector<long>& rows, int n, int k, const std::string& in, const std::string& out, bool bt,
        const std::string& model) {
  const bool e5m2 = in == "fp8_e5m2", fp8 = e5m2 || in == "fp8" || in == "fp8_e4m3";
  const hk::scalar_type ab = e5m2 ? hk::scalar_type::fp8_e5m2 : fp8 ? hk::scalar_type::fp8_e4m3 : in == "f16" ? hk::scalar_type::f16 : hk::scalar_type::bf16,
                        ct = out == "bf16" ? hk::scalar_type::bf16 : hk::scalar_type::fp32;
  const int groups = int(rows.size());
  std::vector<long> offsets{0};
  for (long r : rows) offsets.push_back(offsets.back() + r);
  const long m = offsets.back();
  if (m <= 0 || m > INT32_MAX) return std::fprintf(stderr, "hk-run: the groups' rows must add up to 1 .. 2^31 - 1\n"), 1;
  const hk_host::Format fab = device_format(ab), fc = device_format(ct);
  const float limit = fp8 ? 4.f : 1.f;
  // One A of every group's rows and one B per group, seeded per group so that a group's operands do not depend on
  // the others'.
  std::vector<hk_host::Matrix> a, b;
  std::vector<uint8_t> a_bytes, b_bytes;
  for (int g = 0; g < groups; ++g) {
    a.push_back(hk_host::random_matrix(rows[g], k, fab, 1 + 2 * g, limit));
    b.push_back(bt ? hk_host::random_matrix(n, k, fab, 2 + 2 * g, limit) : hk_host::random_matrix(k, n, fab, 2 + 2 * g, limit));
    for (const auto* mat : {&a[g], &b[g]}) {
      const std::vector<uint8_t> bytes = fab.encode(mat->values);
      (mat == &a[g] ? a_bytes : b_bytes).insert((mat == &a[g] ? a_bytes : b_bytes).end(), bytes.begin(), bytes.end());
    }
  }
  const size_t c_elem = fc.bytes();
  DeviceArrays dev;
  void* da = dev.copy(a_bytes, "A");
  void* db = dev.copy(b_bytes, "B");
  void* dc = dev.alloc(size_t(m) * n * c_elem, "C");
  void* doff = dev.copy(offsets, "offsets");
  if (!doff) return 1;
  hk::GroupedGemmProblem p;
  p.m = int(m), p.n = n, p.k = k, p.a = da, p.lda = k, p.b = db, p.ldb = bt ? k : n, p.b_is_nk = bt, p.c = dc, p.ldc = n;
  p.ab_type = ab, p.c_type = ct, p.groups = groups, p.offsets = doff, p.offsets_int64 = true;
  std::string name = "grouped_gemm " + std::to_string(groups) + " groups of " + std::to_string(m) + " rows, n " +
                     std::to_string(n) + " k " + std::to_string(k) + " " + in + (bt ? " A*B^T" : " A*B") + " -> " + out;
  vgpuDispatchInfo d{};
  if (!launch_once(model, [&] { return hk::grouped_gemm(p); }, d)) return 1;
  if (!model.empty()) {
    std::printf("%s on %s: not checked (the model executed %llu waves only)\n", name.c_str(), d.arch, d.waves);
    const vgpu::ProductInfo& product = *vgpu::find_product(model);
    print_model_log(2.0 * m * n * k, fp8 ? product.peak.fp8 : product.peak.f16);
    return 0;
  }
  std::vector<uint8_t> raw(size_t(m) * n * c_elem);
  (void)hipMemcpy(raw.data(), dc, raw.size(), hipMemcpyDeviceToHost);
  long checked = 0, failed = 0;
  double worst = 0;
  for (int g = 0; g < groups; ++g) {
    if (rows[g] == 0) continue;
    hk_host::Matrix got(rows[g], n);
    got.values = fc.decode(std::vector<uint8_t>(raw.begin() + offsets[g] * n * c_elem, raw.begin() + offsets[g + 1] * n * c_elem));
    const size_t step = std::max<size_t>(1, size_t(m) * n / 20000);
    const hk_host::Comparison check =
        hk_host::compare(got, hk_host::Matmul{{a[g]}, {b[g], bt}}, fc.type, "C of group " + std::to_string(g), step);
    for (const std::string& miss : check.first_misses()) std::fprintf(stderr, "%s\n", miss.c_str());
    checked += check.checked(), failed += check.failed(), worst = std::max(worst, check.worst());
  }
  std::printf("%s on %s: %s (%ld of %ld elements checked within tolerance, worst error %.2f of it)\n", name.c_str(), d.arch,
              failed ? "FAILED" : "ok", checked - failed, checked, worst);
  std::printf("  grid %u, %llu waves, %llu wave instructions, %.3f s emulated\n", d.grid[0], d.waves, d.wave_instructions,
              d.wall_seconds);
  print_report(d.kernel, d.block[0] * d.block[1] * d.block[2], true);
  return failed ? 1 : 0;
}

}  // namespace grouped_run
