// hk-run gemm --dtype mxfp8|mxfp6|mxfp4 [--a-format F --b-format F]: hk::gemm_mx against a float64 host reference that
// decodes every element format from its bits and applies the E8M0 scales. Included by hk_run.hip after its helpers.
// The scales are random around 1.0 (120..134), with edge values planted where the shape allows: A's row 0 block 0 is
// 0 (2^-127), row 1 block 0 is 254 (2^127, against B scales 100..110 in block 0 so the results stay finite in fp32),
// row 2's last block 255 (NaN: its row of C must be NaN), B's column 3 block 0 is 0.
// (Its includes are hk_run.hip's: it sits inside that file's anonymous namespace.)

namespace mx_run {

// The value of an element code (OCP formats: e4m3fn, e5m2 with inf/NaN, and the MX 6/4-bit ones without).
double decode(uint32_t x, hk::mx_format f) {
  int eb = 4, mb = 3;
  switch (f) {
    case hk::mx_format::e4m3: eb = 4, mb = 3; break;
    case hk::mx_format::e5m2: eb = 5, mb = 2; break;
    case hk::mx_format::e2m3: eb = 2, mb = 3; break;
    case hk::mx_format::e3m2: eb = 3, mb = 2; break;
    case hk::mx_format::e2m1: eb = 2, mb = 1; break;
  }
  const int bias = (1 << (eb - 1)) - 1, e = int(x >> mb) & ((1 << eb) - 1), m = int(x) & ((1 << mb) - 1);
  const bool neg = x >> (eb + mb) & 1;
  if (f == hk::mx_format::e4m3 && e == 15 && m == 7) return NAN;
  if (f == hk::mx_format::e5m2 && e == 31) return m ? NAN : neg ? -INFINITY : INFINITY;
  const double mag = e == 0 ? std::ldexp(double(m), 1 - bias - mb) : std::ldexp(double(m + (1 << mb)), e - bias - mb);
  return neg ? -mag : mag;
}

bool parse(const std::string& s, hk::mx_format& f) {
  for (int c = 0; c <= 4; ++c)
    if (s == hk::to_string(hk::mx_format(c))) return f = hk::mx_format(c), true;
  return false;
}

// A random finite code, at most 16 in magnitude for the 8-bit formats (the 6/4-bit ones: any code).
uint32_t random_code(std::mt19937& rng, hk::mx_format f) {
  const int bits = hk::bits_of(f);
  for (;;) {
    const uint32_t x = rng() & ((1u << bits) - 1);
    const double v = decode(x, f);
    if (std::isfinite(v) && std::fabs(v) <= 16) return x;
  }
}

// Element k of a row stored as packed `bits`-bit codes (low bits first).
void put(uint8_t* row, int k, int bits, uint32_t code) {
  for (int b = 0; b < bits; ++b)
    if (code >> b & 1) row[(k * bits + b) / 8] |= uint8_t(1u << ((k * bits + b) % 8));
}

int run(int m, int n, int k, hk::mx_format fa, hk::mx_format fb, const std::string& out, const std::string& model) {
  const int ba = hk::bits_of(fa), bb = hk::bits_of(fb), blocks = k / 32;
  const hk::scalar_type ct = out == "bf16" ? hk::scalar_type::bf16 : out == "f16" ? hk::scalar_type::f16 : hk::scalar_type::fp32;
  std::mt19937 rng(1234);
  std::vector<uint32_t> ca(size_t(m) * k), cb(size_t(n) * k);
  const size_t row_a = size_t(k) * ba / 8, row_b = size_t(k) * bb / 8;
  std::vector<uint8_t> a(std::max<size_t>(1, m * row_a)), b(std::max<size_t>(1, n * row_b)), sa(size_t(m) * std::max(blocks, 1)),
      sb(size_t(n) * std::max(blocks, 1));
  for (int i = 0; i < m; ++i)
    for (int x = 0; x < k; ++x) put(&a[i * row_a], x, ba, ca[size_t(i) * k + x] = random_code(rng, fa));
  for (int j = 0; j < n; ++j)
    for (int x = 0; x < k; ++x) put(&b[j * row_b], x, bb, cb[size_t(j) * k + x] = random_code(rng, fb));
  for (int i = 0; i < m; ++i)
    for (int kb = 0; kb < blocks; ++kb) sa[size_t(i) * blocks + kb] = uint8_t(120 + rng() % 15);
  for (int j = 0; j < n; ++j)
    for (int kb = 0; kb < blocks; ++kb) sb[size_t(j) * blocks + kb] = uint8_t(kb == 0 ? 100 + rng() % 11 : 120 + rng() % 15);
  if (blocks > 0) {
    if (m > 0) sa[0] = 0;
    if (m > 1) sa[size_t(1) * blocks] = 254;
    if (m > 2) sa[size_t(2) * blocks + blocks - 1] = 255;
    if (n > 3) sb[size_t(3) * blocks] = 0;
  }
  const size_t c_elem = hk::size_of(ct);
  DeviceArrays dev;
  void* da = dev.copy(a, "A");
  void* db = dev.copy(b, "B");
  void* dsa = dev.copy(sa, "scale_a");
  void* dsb = dev.copy(sb, "scale_b");
  void* dc = dev.alloc(size_t(m) * n * c_elem, "C");
  if (!dc) return 1;
  hk::GemmMxProblem p;
  p.m = m, p.n = n, p.k = k, p.a = da, p.lda = k, p.a_format = fa, p.b = db, p.ldb = k, p.b_format = fb;
  p.scale_a = static_cast<const uint8_t*>(dsa), p.ld_scale_a = blocks, p.scale_b = static_cast<const uint8_t*>(dsb);
  p.ld_scale_b = blocks, p.c = dc, p.ldc = n, p.c_type = ct;
  const std::string name = std::string("gemm_mx ") + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                           " " + hk::to_string(fa) + " x " + hk::to_string(fb) + " -> " + out;
  vgpuDispatchInfo d{};
  if (!launch_once(model, [&] { return hk::gemm_mx(p); }, d)) return 1;
  if (!model.empty()) {
    std::printf("%s on %s: not checked (the model executed %llu waves only)\n", name.c_str(), d.arch, d.waves);
    const vgpu::ProductInfo& product = *vgpu::find_product(model);
    print_model_log(2.0 * m * n * k, ba < 8 && bb < 8 ? product.peak.fp6_fp4 : product.peak.fp8);
    return 0;
  }
  std::vector<uint8_t> raw(size_t(m) * n * c_elem);
  (void)hipMemcpy(raw.data(), dc, raw.size(), hipMemcpyDeviceToHost);
  const double out_eps = ct == hk::scalar_type::bf16 ? 0x1p-8 : ct == hk::scalar_type::f16 ? 0x1p-11 : 0;
  const double out_max = ct == hk::scalar_type::bf16 ? 0x1.fep127 : ct == hk::scalar_type::f16 ? 65504.0 : double(FLT_MAX);
  const double out_tiny = ct == hk::scalar_type::bf16 ? 0x1p-133 : ct == hk::scalar_type::f16 ? 0x1p-24 : 0x1p-149;  // subnormal ulp
  long failed = 0;
  double worst = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double want = 0, mag = 0;
      for (int kb = 0; kb < blocks; ++kb) {
        const int xa = sa[size_t(i) * blocks + kb], xb = sb[size_t(j) * blocks + kb];
        const double scale = xa == 255 || xb == 255 ? NAN : std::ldexp(1.0, xa + xb - 254);
        for (int x = 32 * kb; x < 32 * kb + 32; ++x) {
          const double t = decode(ca[size_t(i) * k + x], fa) * decode(cb[size_t(j) * k + x], fb) * scale;
          want += t, mag += std::fabs(t);
        }
      }
      const size_t at = size_t(i) * n + j;
      double got;
      if (ct == hk::scalar_type::fp32) got = reinterpret_cast<const float*>(raw.data())[at];
      else if (ct == hk::scalar_type::bf16) got = std::bit_cast<float>(uint32_t(reinterpret_cast<const uint16_t*>(raw.data())[at]) << 16);
      else got = double(reinterpret_cast<const _Float16*>(raw.data())[at]);
      bool ok;
      double err = 0;
      if (std::isnan(want)) ok = std::isnan(got);
      else if (std::fabs(want) > out_max * (1 + out_eps)) ok = std::isinf(got) && (got > 0) == (want > 0);
      else {
        const double tol = (k + 8) * std::ldexp(mag, -23) + out_eps * std::fabs(want) + out_tiny;
        err = std::fabs(got - want) / tol;
        ok = err <= 1;
      }
      worst = std::max(worst, err);
      if (!ok && failed++ < 5) std::fprintf(stderr, "C[%d][%d] = %g, want %g (sum of |terms| %g)\n", i, j, got, want, mag);
    }
  std::printf("%s on %s: %s (%ld of %ld elements within tolerance, worst error %.2f of it)\n", name.c_str(), d.arch,
              failed ? "FAILED" : "ok", long(m) * n - failed, long(m) * n, worst);
  std::printf("  grid %u, %llu waves, %llu wave instructions, %.3f s emulated\n", d.grid[0], d.waves, d.wave_instructions,
              d.wall_seconds);
  print_report(d.kernel, d.block[0] * d.block[1] * d.block[2], true);
  return failed ? 1 : 0;
}

}  // namespace mx_run
