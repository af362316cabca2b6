// hk-run decode: hk::attention_decode on a KV cache (contiguous or paged), checked against the float64 reference
// (attention_ref.h), or with --model P timed by vgpu's model and charged with the bytes it must move (the cache's
// visible keys and values, Q and O) against the product's HBM. Included by hk_run.hip inside its anonymous namespace,
// after the helpers it uses (device_alloc, print_report, modelled runs).
//   hk-run decode --b B --ctx N --sq SQ --hq HQ --hkv HKV --d 64|128 [--page P] [--causal] [--window L,R]
//                 [--dtype bf16|f16] [--kv-dtype bf16|f16|fp8] [--arch ...] [--model P]
// --kv-dtype fp8: the caches in the arch's e4m3 (FNUZ on gfx942, OCP e4m3fn on gfx950) with per-KV-head k and v
// descales (the reference decodes the codes and applies them); the bytes moved are the fp8 cache's.
// --ctx: keys in every sequence's cache (the cache holds them exactly: S_max or the pages for N keys);
// --page P: a paged cache of P-key pages, in a shuffled order (0: contiguous).

// (attention/decode.h: included at the top of hk_run.hip, outside its anonymous namespace)

struct DecodeOptions {
  int b = 1, ctx = 1024, sq = 1, hq = 8, hkv = 1, d = 128, page = 0;
  bool causal = false;
  std::string window, dtype = "bf16", kv_dtype;  // kv_dtype empty: dtype
  bool fp8() const { return kv_dtype == "fp8"; }
  int kv_bytes() const { return fp8() ? 1 : 2; }
};

// The descales hk-run gives an fp8 cache: k then v, per KV head, exact with any e4m3 code in fp32 (3 bits).
std::vector<float> decode_descales(const DecodeOptions& a) {
  std::vector<float> d(size_t(2 * a.hkv));
  for (int h = 0; h < a.hkv; ++h) d[h] = (1.f + float(h % 4) / 4.f) / 256.f, d[a.hkv + h] = (1.f + float(h % 3) / 4.f) / 128.f;
  return d;
}

CLI::App* add_decode_command(CLI::App& app, DecodeOptions& a, std::string& arch) {
  auto* c = app.add_subcommand("decode", "decode attention over a KV cache (flash_attn_with_kvcache) with hk::attention_decode");
  c->add_option("--b", a.b, "batch")->check(CLI::PositiveNumber);
  c->add_option("--ctx", a.ctx, "keys cached per sequence")->check(CLI::NonNegativeNumber);
  c->add_option("--sq", a.sq, "new queries per sequence (1 to 16)")->check(CLI::Range(1, 16));
  c->add_option("--hq", a.hq, "query heads")->check(CLI::PositiveNumber);
  c->add_option("--hkv", a.hkv, "key/value heads")->check(CLI::PositiveNumber);
  c->add_option("--d", a.d, "head dimension")->check(CLI::IsMember({64, 128}));
  c->add_option("--page", a.page, "page size of a paged cache (0: contiguous)")->check(CLI::NonNegativeNumber);
  c->add_flag("--causal", a.causal, "causal, aligned bottom-right");
  c->add_option("--window", a.window, "sliding window L,R (-1 = unbounded)");
  c->add_option("--dtype", a.dtype, "Q, O and cache element type")->check(CLI::IsMember({"bf16", "f16"}));
  c->add_option("--kv-dtype", a.kv_dtype, "cache element type (default: --dtype; fp8: the arch's e4m3 with descales)")
      ->check(CLI::IsMember({"bf16", "f16", "fp8"}));
  std::vector<std::string> arch_names;
  for (const hk::arch::target& t : hk::arch::targets) arch_names.push_back(t.name);
  c->add_option("--arch", arch)->check(CLI::IsMember(arch_names));
  return c;
}

// The cache's layout: pages (contiguous: one per sequence of S_max = ctx rows) and the block table, pages shuffled.
struct DecodeCache {
  int rows = 0, pages = 0, per_seq = 0;  // rows per page, pages in the cache, table entries per sequence
  std::vector<int> table;                // (B, per_seq), empty when contiguous
  DecodeCache(const DecodeOptions& a) {
    if (a.page == 0) {
      rows = std::max(1, a.ctx), pages = a.b;
      return;
    }
    rows = a.page, per_seq = std::max(1, (a.ctx + a.page - 1) / a.page), pages = a.b * per_seq;
    table.resize(size_t(pages));
    for (int i = 0; i < pages; ++i) table[i] = i;
    std::mt19937 rng(7);
    std::shuffle(table.begin(), table.end(), rng);
  }
  // Element offset of key j of sequence b, head h, in a (pages, rows, Hkv, D) cache.
  long at(const DecodeOptions& a, int b, long j, int h) const {
    const long page = table.empty() ? b : table[size_t(b) * per_seq + j / rows], row = table.empty() ? j : j % rows;
    return ((page * rows + row) * a.hkv + h) * a.d;
  }
  size_t elems(const DecodeOptions& a) const { return size_t(pages) * rows * a.hkv * a.d; }
};

bool decode_problem(const DecodeOptions& a, const DecodeCache& cache, hk::AttentionDecodeProblem& p, int* table_dev,
                    int* seqlens_dev, float* descale_dev) {
  p.batch = a.b, p.seqlen_q = a.sq, p.heads_q = a.hq, p.heads_kv = a.hkv, p.head_dim = a.d;
  p.type = a.dtype == "f16" ? hk::scalar_type::f16 : hk::scalar_type::bf16;
  const std::string kv = a.kv_dtype.empty() ? a.dtype : a.kv_dtype;
  p.kv_type = kv == "fp8" ? hk::scalar_type::fp8_e4m3 : kv == "f16" ? hk::scalar_type::f16 : hk::scalar_type::bf16;
  if (a.fp8()) {
    const std::vector<float> d = decode_descales(a);
    (void)hipMemcpy(descale_dev, d.data(), d.size() * 4, hipMemcpyHostToDevice);
    p.k_descale = descale_dev, p.v_descale = descale_dev + a.hkv, p.k_descale_per_head = p.v_descale_per_head = true;
  }
  p.cache_rows = cache.rows, p.causal = a.causal;
  if (!cache.table.empty()) p.block_table = table_dev, p.max_blocks = cache.per_seq, p.num_blocks = cache.pages;
  p.cache_seqlens = seqlens_dev;
  if (!a.window.empty()) {
    const std::vector<int> w = parse_lengths(a.window);
    if (w.size() != 2) return std::fprintf(stderr, "--window takes L,R\n"), false;
    p.window_left = w[0], p.window_right = w[1];
  }
  std::vector<int> seqlens(size_t(a.b), a.ctx);
  (void)hipMemcpy(seqlens_dev, seqlens.data(), seqlens.size() * 4, hipMemcpyHostToDevice);
  if (table_dev) (void)hipMemcpy(table_dev, cache.table.data(), cache.table.size() * 4, hipMemcpyHostToDevice);
  return true;
}

std::string decode_title(const DecodeOptions& a) {
  char t[200];
  std::snprintf(t, sizeof t, "decode B=%d ctx=%d Sq=%d Hq=%d Hkv=%d D=%d %s%s %s%s%s", a.b, a.ctx, a.sq, a.hq, a.hkv, a.d,
                a.dtype.c_str(), a.fp8() ? " fp8 cache" : "", a.page ? ("page " + std::to_string(a.page)).c_str() : "contiguous",
                a.causal ? " causal" : "", a.window.empty() ? "" : (" window " + a.window).c_str());
  return t;
}

int model_decode(const DecodeOptions& a, const std::string& product_name) {
  const DecodeCache cache(a);
  Untouched q(size_t(a.b) * a.sq * a.hq * a.d * 2), o(size_t(a.b) * a.sq * a.hq * a.d * 2), lse(size_t(a.b) * a.sq * a.hq * 4),
      k(cache.elems(a) * a.kv_bytes()), v(cache.elems(a) * a.kv_bytes()), table(std::max<size_t>(cache.table.size(), 1) * 4),
      seqlens(size_t(a.b) * 4), descales(size_t(2 * a.hkv) * 4);
  if (!q.p || !o.p || !lse.p || !k.p || !v.p || !table.p || !seqlens.p || !descales.p) return 1;
  hk::AttentionDecodeProblem p;
  if (!decode_problem(a, cache, p, static_cast<int*>(table.p), static_cast<int*>(seqlens.p), static_cast<float*>(descales.p)))
    return 2;
  p.q = q.p, p.o = o.p, p.lse = static_cast<float*>(lse.p), p.k_cache = k.p, p.v_cache = v.p;
  Untouched workspace(hk::attention_decode_workspace_bytes(p));
  p.workspace = workspace.p, p.workspace_bytes = hk::attention_decode_workspace_bytes(p);
  // The bytes a decode step must move: every visible key's K and V row once (in the cache's type), Q, O and the LSE.
  const double bytes = 2.0 * a.b * a.ctx * a.hkv * a.d * a.kv_bytes() + 2.0 * a.b * a.sq * a.hq * a.d * 2 + 4.0 * a.b * a.sq * a.hq;
  const std::string what = decode_title(a) + " on " + product_name;
  if (!modelled(product_name, what.c_str(), 0, 0, bytes, [&] { return hk::attention_decode(p); })) return 1;
  double seconds = 0;
  for (const vgpuTimingInfo& t : model_log()) seconds += t.seconds;
  const vgpu::ProductInfo& product = *vgpu::find_product(product_name);
  const double tb = bytes / seconds * 1e-12;
  std::printf("  decode: %.3g MB in %.4f ms = %.2f TB/s = %.1f%% of %s's sustained %.2f TB/s HBM (%.1f%% of the %.1f TB/s peak)\n",
              bytes * 1e-6, seconds * 1e3, tb, 100 * tb / product.timing.hbm_measured_tb_per_s, product_name.c_str(),
              product.timing.hbm_measured_tb_per_s, 100 * tb / product.hbm_tb_per_s, product.hbm_tb_per_s);
  return 0;
}

int run_decode(const DecodeOptions& a) {
  const DecodeCache cache(a);
  const hk::scalar_type type = a.dtype == "f16" ? hk::scalar_type::f16 : hk::scalar_type::bf16;
  const hk_host::Format format = device_format(type);
  const hk_host::Format kv_format = a.fp8() ? device_format(hk::scalar_type::fp8_e4m3) : format;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  // Host tensors packed as the reference wants them (sequence by sequence); the caches scattered into the pages.
  // fp8: the caches hold codes of values up to 200 (both formats' range), the reference their values times the
  // descales (exact in fp32).
  const size_t nq = size_t(a.b) * a.sq * a.hq * a.d, nk = size_t(a.b) * a.ctx * a.hkv * a.d;
  std::vector<float> q(nq), k(nk), v(nk);
  for (float& x : q) x = format.round(u(rng));
  for (auto* t : {&k, &v})
    for (float& x : *t) x = a.fp8() ? kv_format.round(200.f * u(rng)) : format.round(u(rng));
  std::vector<float> kc(cache.elems(a), 0.f), vc(cache.elems(a), 0.f);
  for (int b = 0; b < a.b; ++b)
    for (long j = 0; j < a.ctx; ++j)
      for (int h = 0; h < a.hkv; ++h) {
        const size_t from = ((size_t(b) * a.ctx + j) * a.hkv + h) * a.d;
        const long to = cache.at(a, b, j, h);
        std::copy(k.begin() + from, k.begin() + from + a.d, kc.begin() + to);
        std::copy(v.begin() + from, v.begin() + from + a.d, vc.begin() + to);
      }
  if (a.fp8()) {  // the reference's values: codes times their head's descale
    const std::vector<float> d = decode_descales(a);
    for (size_t i = 0; i < nk; ++i) k[i] *= d[i / a.d % a.hkv], v[i] *= d[a.hkv + i / a.d % a.hkv];
  }
  auto upload = [&](const std::vector<float>& host, const hk_host::Format& f) {
    const std::vector<uint8_t> bytes = f.encode(host);
    void* dev = device_alloc(std::max<size_t>(bytes.size(), 2), "a tensor");
    if (!dev) std::exit(1);
    (void)hipMemcpy(dev, bytes.data(), bytes.size(), hipMemcpyHostToDevice);
    return dev;
  };
  void *dq = upload(q, format), *dk = upload(kc, kv_format), *dv = upload(vc, kv_format),
       *dout = upload(std::vector<float>(nq, 0.f), format);
  kc.clear(), vc.clear(), kc.shrink_to_fit(), vc.shrink_to_fit();
  int *dtable = static_cast<int*>(device_alloc(std::max<size_t>(cache.table.size(), 1) * 4, "the block table")),
      *dseq = static_cast<int*>(device_alloc(size_t(a.b) * 4, "cache_seqlens"));
  float* dlse = static_cast<float*>(device_alloc(size_t(a.b) * a.sq * a.hq * 4, "LSE"));
  float* ddesc = static_cast<float*>(device_alloc(size_t(2 * a.hkv) * 4, "the descales"));
  if (!dtable || !dseq || !dlse || !ddesc) return 1;
  hk::AttentionDecodeProblem p;
  if (!decode_problem(a, cache, p, dtable, dseq, ddesc)) return 2;
  p.q = dq, p.o = dout, p.lse = dlse, p.k_cache = dk, p.v_cache = dv;
  if (auto prof = ext<int (*)(int)>("vgpuSetProfiling")) prof(1);
  if (hk::Status s = hk::attention_decode(p); !s) return std::fprintf(stderr, "%s\n", s.message.c_str()), 1;
  if (hipError_t e = hipDeviceSynchronize(); e != hipSuccess) return std::fprintf(stderr, "%s\n", hipGetErrorString(e)), 1;
  vgpuDispatchInfo d{};
  if (auto last = ext<int (*)(vgpuDispatchInfo*)>("vgpuGetLastDispatch")) last(&d);

  attn_ref::Shape shape;
  shape.hq = a.hq, shape.hkv = a.hkv, shape.d = a.d, shape.causal = a.causal;
  shape.left = p.window_left, shape.right = p.window_right;
  shape.len_q.assign(a.b, a.sq), shape.len_k.assign(a.b, a.ctx);
  const attn_ref::Result want = attn_ref::forward(shape, q, k, v, type == hk::scalar_type::bf16);
  std::vector<uint16_t> o_bits(nq);
  std::vector<float> lse(size_t(a.b) * a.sq * a.hq);
  (void)hipMemcpy(o_bits.data(), dout, nq * 2, hipMemcpyDeviceToHost);
  (void)hipMemcpy(lse.data(), dlse, lse.size() * 4, hipMemcpyDeviceToHost);
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < nq; ++i) {  // O is (B, Sq, Hq, D): the reference's packed order
    const double err = std::fabs(format.load(reinterpret_cast<const uint8_t*>(&o_bits[i])) - want.o[i]);
    bad += !(err <= want.o_tol[i]);
    if (want.o_tol[i] > 0) worst = std::max(worst, err / want.o_tol[i]);
  }
  for (int b = 0; b < a.b; ++b)
    for (int i = 0; i < a.sq; ++i)
      for (int h = 0; h < a.hq; ++h) {
        const double got = lse[(size_t(b) * a.hq + h) * a.sq + i];
        const size_t r = (size_t(b) * a.sq + i) * a.hq + h;
        bad += !(std::isinf(want.lse[r]) ? got == want.lse[r] : std::fabs(got - want.lse[r]) <= want.lse_tol[r]);
        if (want.lse_tol[r] > 0 && std::isfinite(got)) worst = std::max(worst, std::fabs(got - want.lse[r]) / want.lse_tol[r]);
      }
  uint64_t hash = 1469598103934665603ull;  // FNV-1a of O's and LSE's bits: compare runs (HK_VGPU_THREADS, paging)
  auto mix = [&](const void* data, size_t n) {
    for (size_t i = 0; i < n; ++i) hash = (hash ^ static_cast<const uint8_t*>(data)[i]) * 1099511628211ull;
  };
  mix(o_bits.data(), o_bits.size() * 2), mix(lse.data(), lse.size() * 4);
  std::printf("%s on %s: %s (%zu O and %zu LSE elements, %zu outside tolerance, worst error %.2f of its tolerance; "
              "bits %016llx)\n", decode_title(a).c_str(), d.arch, bad ? "FAILED" : "ok", nq, lse.size(), bad, worst,
              (unsigned long long)hash);
  std::printf("  last launch: grid %u, %llu waves, %llu wave instructions, %.3f s emulated\n", d.grid[0], d.waves,
              d.wave_instructions, d.wall_seconds);
  for (const auto& kern : hk::report::own_kernels(device_arch()))
    if (kern.name.find("attention_decode") != std::string::npos && kern.name.find("Li" + std::to_string(a.d) + "E") != std::string::npos)
      print_report(kern.name.c_str(), 256, kern.name == d.kernel);
  return bad ? 1 : 0;
}
