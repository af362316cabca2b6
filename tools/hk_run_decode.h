// hk-run decode: hk::attention_decode on a KV cache (contiguous or paged), checked against the float64 reference
// (attention_ref.h), or with --model P timed by vgpu's model and charged with the bytes it must move (the cache's
// visible keys and values, Q and O) against the product's HBM. Included by hk_run.hip inside its anonymous namespace,
// after the helpers it uses (device_alloc, print_report, modelled runs).
//   hk-run decode --b B --ctx N --sq SQ --hq HQ --hkv HKV --d 64|128 [--page P] [--causal] [--window L,R]
//                 [--dtype bf16|f16] [--kv-dtype bf16|f16|fp8] [--append N [--rotary-dim R] [--interleaved]]
//                 [--arch ...] [--model P]
// --append N: N new keys and values per sequence written into the cache (which holds ctx + N) before the attention
// over ctx + N keys; --rotary-dim R rotates Q and the new keys (fp32 cos / sin tables, half-split or --interleaved);
// the appended rows are checked in the cache, the rotations within one rounding of the float64 ones (which the
// reference then takes, as the device rounded them). The host side (inputs, the float64 reference) runs on every
// core and prints its time next to the emulation's.
// --kv-dtype fp8: the caches in the arch's e4m3 (FNUZ on gfx942, OCP e4m3fn on gfx950) with per-KV-head k and v
// descales (the reference decodes the codes and applies them); the bytes moved are the fp8 cache's.
// --ctx: keys in every sequence's cache (the cache holds them and the appended ones exactly: S_max or the pages);
// --page P: a paged cache of P-key pages, in a shuffled order (0: contiguous).

// (attention/decode.h: included at the top of hk_run.hip, outside its anonymous namespace)

struct DecodeOptions {
  int b = 1, ctx = 1024, sq = 1, hq = 8, hkv = 1, d = 128, page = 0;
  int append = 0, rotary_dim = 0;
  bool causal = false, interleaved = false;
  int keys() const { return ctx + append; }  // per sequence, after the append
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
  c->add_option("--append", a.append, "new keys and values appended to each sequence's cache")->check(CLI::NonNegativeNumber);
  c->add_option("--rotary-dim", a.rotary_dim, "rotary of Q and the appended keys (needs --append)")->check(CLI::NonNegativeNumber);
  c->add_flag("--interleaved", a.interleaved, "rotary pairs (2i, 2i+1) instead of (i, i + R/2)");
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
      rows = std::max(1, a.keys()), pages = a.b;
      return;
    }
    rows = a.page, per_seq = std::max(1, (a.keys() + a.page - 1) / a.page), pages = a.b * per_seq;
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

// The device arrays of a decode problem besides Q, O, LSE and the caches.
struct DecodeDevice {
  int *table = nullptr, *seqlens = nullptr;
  float* descales = nullptr;
  void *k_new = nullptr, *v_new = nullptr;
  float *cos = nullptr, *sin = nullptr;
};

bool decode_q_each_row(const DecodeOptions& a) { return a.causal || !a.window.empty(); }
// Rotary table rows: the largest position rotated plus one (keys ctx + i; queries ctx + i when causal or windowed).
int decode_table_rows(const DecodeOptions& a) { return a.ctx + std::max(a.append, decode_q_each_row(a) ? a.sq : 1); }

// The rotary tables hk-run gives: fp32 cos and sin of position * 10000^(-2i / R), (rows, R / 2).
void decode_tables(const DecodeOptions& a, std::vector<float>& cs, std::vector<float>& sn) {
  const int half = a.rotary_dim / 2;
  cs.resize(size_t(decode_table_rows(a)) * half), sn.resize(cs.size());
  for (size_t i = 0; i < cs.size(); ++i) {
    const double theta = double(i / half) * std::pow(10000.0, -2.0 * double(i % half) / a.rotary_dim);
    cs[i] = float(std::cos(theta)), sn[i] = float(std::sin(theta));
  }
}

bool decode_problem(const DecodeOptions& a, const DecodeCache& cache, hk::AttentionDecodeProblem& p, const DecodeDevice& dev) {
  p.batch = a.b, p.seqlen_q = a.sq, p.heads_q = a.hq, p.heads_kv = a.hkv, p.head_dim = a.d;
  p.type = a.dtype == "f16" ? hk::scalar_type::f16 : hk::scalar_type::bf16;
  const std::string kv = a.kv_dtype.empty() ? a.dtype : a.kv_dtype;
  p.kv_type = kv == "fp8" ? hk::scalar_type::fp8_e4m3 : kv == "f16" ? hk::scalar_type::f16 : hk::scalar_type::bf16;
  if (a.fp8()) {
    const std::vector<float> d = decode_descales(a);
    (void)hipMemcpy(dev.descales, d.data(), d.size() * 4, hipMemcpyHostToDevice);
    p.k_descale = dev.descales, p.v_descale = dev.descales + a.hkv, p.k_descale_per_head = p.v_descale_per_head = true;
  }
  p.cache_rows = cache.rows, p.causal = a.causal;
  if (!cache.table.empty()) p.block_table = dev.table, p.max_blocks = cache.per_seq, p.num_blocks = cache.pages;
  p.cache_seqlens = dev.seqlens;
  if (!a.window.empty()) {
    const std::vector<int> w = parse_lengths(a.window);
    if (w.size() != 2) return std::fprintf(stderr, "--window takes L,R\n"), false;
    p.window_left = w[0], p.window_right = w[1];
  }
  if (a.rotary_dim && !a.append) return std::fprintf(stderr, "--rotary-dim rotates the appended keys: it needs --append\n"), false;
  if (a.append) p.k_new = dev.k_new, p.v_new = dev.v_new, p.seqlen_new = a.append;
  if (a.rotary_dim) {
    p.rotary_cos = dev.cos, p.rotary_sin = dev.sin, p.rotary_type = hk::scalar_type::fp32;
    p.rotary_dim = a.rotary_dim, p.rotary_rows = decode_table_rows(a), p.rotary_interleaved = a.interleaved;
    std::vector<float> cs, sn;
    decode_tables(a, cs, sn);
    (void)hipMemcpy(dev.cos, cs.data(), cs.size() * 4, hipMemcpyHostToDevice);
    (void)hipMemcpy(dev.sin, sn.data(), sn.size() * 4, hipMemcpyHostToDevice);
  }
  std::vector<int> seqlens(size_t(a.b), a.ctx);
  (void)hipMemcpy(dev.seqlens, seqlens.data(), seqlens.size() * 4, hipMemcpyHostToDevice);
  if (dev.table) (void)hipMemcpy(dev.table, cache.table.data(), cache.table.size() * 4, hipMemcpyHostToDevice);
  return true;
}

std::string decode_title(const DecodeOptions& a) {
  char t[300];
  std::snprintf(t, sizeof t, "decode B=%d ctx=%d Sq=%d Hq=%d Hkv=%d D=%d %s%s %s%s%s%s%s", a.b, a.ctx, a.sq, a.hq, a.hkv, a.d,
                a.dtype.c_str(), a.fp8() ? " fp8 cache" : "", a.page ? ("page " + std::to_string(a.page)).c_str() : "contiguous",
                a.causal ? " causal" : "", a.window.empty() ? "" : (" window " + a.window).c_str(),
                a.append ? (" append " + std::to_string(a.append)).c_str() : "",
                a.rotary_dim ? (" rotary " + std::to_string(a.rotary_dim) + (a.interleaved ? " interleaved" : "")).c_str() : "");
  return t;
}

// The rows of the packed (B, keys, Hkv, D) host arrays, split over the host's cores: f(first, last) per thread.
template <class F>
void decode_parallel(long n, F&& f) {
  const long threads = std::clamp<long>(long(std::thread::hardware_concurrency()), 1, 64), per = (n + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (long t = 0; t * per < n; ++t) pool.emplace_back([&, t] { f(t * per, std::min(n, (t + 1) * per)); });
  for (auto& th : pool) th.join();
}

int model_decode(const DecodeOptions& a, const std::string& product_name) {
  const DecodeCache cache(a);
  const size_t new_bytes = size_t(a.b) * std::max(a.append, 1) * a.hkv * a.d * a.kv_bytes();
  const int half = std::max(1, a.rotary_dim / 2);
  Untouched q(size_t(a.b) * a.sq * a.hq * a.d * 2), o(size_t(a.b) * a.sq * a.hq * a.d * 2), lse(size_t(a.b) * a.sq * a.hq * 4),
      k(cache.elems(a) * a.kv_bytes()), v(cache.elems(a) * a.kv_bytes()), table(std::max<size_t>(cache.table.size(), 1) * 4),
      seqlens(size_t(a.b) * 4), descales(size_t(2 * a.hkv) * 4), k_new(new_bytes), v_new(new_bytes),
      cos(size_t(decode_table_rows(a)) * half * 4), sin(size_t(decode_table_rows(a)) * half * 4);
  if (!q.p || !o.p || !lse.p || !k.p || !v.p || !table.p || !seqlens.p || !descales.p || !k_new.p || !v_new.p || !cos.p || !sin.p)
    return 1;
  hk::AttentionDecodeProblem p;
  const DecodeDevice dev{static_cast<int*>(table.p), static_cast<int*>(seqlens.p), static_cast<float*>(descales.p),
                         k_new.p, v_new.p, static_cast<float*>(cos.p), static_cast<float*>(sin.p)};
  if (!decode_problem(a, cache, p, dev)) return 2;
  p.q = q.p, p.o = o.p, p.lse = static_cast<float*>(lse.p), p.k_cache = k.p, p.v_cache = v.p;
  Untouched workspace(hk::attention_decode_workspace_bytes(p));
  p.workspace = workspace.p, p.workspace_bytes = hk::attention_decode_workspace_bytes(p);
  // The bytes a decode step must move: every visible key's K and V row once (in the cache's type), the appended rows
  // read and written, Q, O and the LSE.
  const double bytes = 2.0 * a.b * a.keys() * a.hkv * a.d * a.kv_bytes() + 4.0 * a.b * a.append * a.hkv * a.d * a.kv_bytes() +
                       2.0 * a.b * a.sq * a.hq * a.d * 2 + 4.0 * a.b * a.sq * a.hq;
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
  using clock = std::chrono::steady_clock;
  auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  const clock::time_point t_inputs = clock::now();
  const DecodeCache cache(a);
  const hk::scalar_type type = a.dtype == "f16" ? hk::scalar_type::f16 : hk::scalar_type::bf16;
  const hk_host::Format format = device_format(type);
  const hk_host::Format kv_format = a.fp8() ? device_format(hk::scalar_type::fp8_e4m3) : format;
  const int keys = a.keys(), kvb = a.kv_bytes();
  const long row = long(a.hkv) * a.d;  // elements of one key's row (every KV head)
  // Host tensors packed as the reference wants them (sequence by sequence, ctx + append keys each), made row by row
  // from a generator seeded by the row (the same values on any number of threads); the cache's bytes written straight
  // into its image (pages shuffled), the appended rows into k_new / v_new. fp8: the caches hold codes of values up to
  // 200 (both formats' range), the reference their values times the descales (exact in fp32).
  const size_t nq = size_t(a.b) * a.sq * a.hq * a.d, nk = size_t(a.b) * keys * row;
  std::vector<float> q(nq), k(nk), v(nk);
  std::vector<uint8_t> kc(cache.elems(a) * kvb, 0), vc(kc.size(), 0), kn(size_t(a.b) * a.append * row * kvb), vn(kn.size());
  {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (float& x : q) x = format.round(u(rng));
  }
  const std::vector<float> ds = a.fp8() ? decode_descales(a) : std::vector<float>{};
  decode_parallel(long(a.b) * keys, [&](long first, long last) {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (long r = first; r < last; ++r) {
      std::mt19937 rng(uint32_t(r * 2654435761u + 17));
      const int b = int(r / keys);
      const long j = r % keys;
      uint8_t *kd, *vd;
      if (j < a.ctx) {
        kd = &kc[size_t(cache.at(a, b, j, 0)) * kvb], vd = &vc[size_t(cache.at(a, b, j, 0)) * kvb];
      } else {
        const size_t at = (size_t(b) * a.append + (j - a.ctx)) * row * kvb;
        kd = &kn[at], vd = &vn[at];
      }
      for (long e = 0; e < row; ++e) {
        const float x = a.fp8() ? 200.f * u(rng) : u(rng), y = a.fp8() ? 200.f * u(rng) : u(rng);
        kv_format.store(x, kd + e * kvb), kv_format.store(y, vd + e * kvb);
        const size_t at = size_t(r) * row + e;
        k[at] = kv_format.load(kd + e * kvb), v[at] = kv_format.load(vd + e * kvb);
        if (a.fp8()) k[at] *= ds[e / a.d], v[at] *= ds[a.hkv + e / a.d];  // the reference's values
      }
    }
  });
  auto upload = [&](const std::vector<uint8_t>& bytes) {
    void* dev = device_alloc(std::max<size_t>(bytes.size(), 2), "a tensor");
    if (!dev) std::exit(1);
    (void)hipMemcpy(dev, bytes.data(), bytes.size(), hipMemcpyHostToDevice);
    return dev;
  };
  void *dq = upload(format.encode(q)), *dk = upload(kc), *dv = upload(vc), *dout = upload(format.encode(std::vector<float>(nq, 0.f)));
  void *dkn = upload(kn), *dvn = upload(vn);
  kc.clear(), vc.clear(), kc.shrink_to_fit(), vc.shrink_to_fit();
  const size_t half = std::max(1, a.rotary_dim / 2), table_rows = size_t(decode_table_rows(a));
  DecodeDevice dev;
  dev.table = static_cast<int*>(device_alloc(std::max<size_t>(cache.table.size(), 1) * 4, "the block table"));
  dev.seqlens = static_cast<int*>(device_alloc(size_t(a.b) * 4, "cache_seqlens"));
  dev.descales = static_cast<float*>(device_alloc(size_t(2 * a.hkv) * 4, "the descales"));
  dev.k_new = dkn, dev.v_new = dvn;
  dev.cos = static_cast<float*>(device_alloc(table_rows * half * 4, "rotary_cos"));
  dev.sin = static_cast<float*>(device_alloc(table_rows * half * 4, "rotary_sin"));
  float* dlse = static_cast<float*>(device_alloc(size_t(a.b) * a.sq * a.hq * 4, "LSE"));
  if (!dev.table || !dev.seqlens || !dlse || !dev.descales || !dev.cos || !dev.sin) return 1;
  hk::AttentionDecodeProblem p;
  if (!decode_problem(a, cache, p, dev)) return 2;
  p.q = dq, p.o = dout, p.lse = dlse, p.k_cache = dk, p.v_cache = dv;
  const size_t ws_bytes = hk::attention_decode_workspace_bytes(p);
  void* ws = ws_bytes ? device_alloc(ws_bytes, "the workspace") : nullptr;
  p.workspace = ws, p.workspace_bytes = ws_bytes;
  const double inputs_s = since(t_inputs);

  const clock::time_point t_run = clock::now();
  if (auto prof = ext<int (*)(int)>("vgpuSetProfiling")) prof(1);
  if (hk::Status s = hk::attention_decode(p); !s) return std::fprintf(stderr, "%s\n", s.message.c_str()), 1;
  if (hipError_t e = hipDeviceSynchronize(); e != hipSuccess) return std::fprintf(stderr, "%s\n", hipGetErrorString(e)), 1;
  const double run_s = since(t_run);
  vgpuDispatchInfo d{};
  if (auto last = ext<int (*)(vgpuDispatchInfo*)>("vgpuGetLastDispatch")) last(&d);

  const clock::time_point t_ref = clock::now();
  size_t bad = 0;
  double worst = 0;
  // The float64 rotations of Q and the new keys (rounded to Q's type), at flash-attention's positions.
  if (a.rotary_dim) {
    std::vector<float> cs, sn;
    decode_tables(a, cs, sn);
    const int half = a.rotary_dim / 2;
    auto rotate = [&](float* x, long pos) {
      for (int i = 0; i < half; ++i) {
        const int e0 = a.interleaved ? 2 * i : i, e1 = a.interleaved ? 2 * i + 1 : i + half;
        const double c = cs[size_t(pos) * half + i], sv = sn[size_t(pos) * half + i], x0 = x[e0], x1 = x[e1];
        x[e0] = format.round(float(x0 * c - x1 * sv)), x[e1] = format.round(float(x0 * sv + x1 * c));
      }
    };
    for (int b = 0; b < a.b; ++b) {
      for (int i = 0; i < a.sq; ++i)
        for (int h = 0; h < a.hq; ++h) rotate(&q[((size_t(b) * a.sq + i) * a.hq + h) * a.d], a.ctx + (decode_q_each_row(a) ? i : 0));
      for (int i = 0; i < a.append; ++i)
        for (int h = 0; h < a.hkv; ++h) rotate(&k[((size_t(b) * keys + a.ctx + i) * a.hkv + h) * a.d], a.ctx + i);
    }
  }
  // The appended rows in the cache: V (and K without rotary) bit for bit; with rotary, Q (the workspace's copy) and
  // K within one rounding of the float64 rotation, then taken by the reference as the device rounded them.
  if (a.append) {
    std::vector<uint8_t> got(cache.elems(a) * kvb);
    for (int which = 0; which < 2; ++which) {
      (void)hipMemcpy(got.data(), which ? dv : dk, got.size(), hipMemcpyDeviceToHost);
      const std::vector<uint8_t>& want = which ? vn : kn;
      for (int b = 0; b < a.b; ++b)
        for (int i = 0; i < a.append; ++i)
          for (long e = 0; e < row; ++e) {
            const uint8_t* g = &got[size_t(cache.at(a, b, a.ctx + i, 0) + e) * kvb];
            const size_t at = (size_t(b) * keys + a.ctx + i) * row + e;
            if (which == 0 && a.rotary_dim) {
              const double tol = 2.02 * hk_host::unit_roundoff(format.type) * std::fabs(k[at]) + 0x1p-19;
              bad += !(std::fabs(format.load(g) - k[at]) <= tol);
              k[at] = format.load(g);
            } else {
              bad += std::memcmp(g, &want[((size_t(b) * a.append + i) * row + e) * kvb], size_t(kvb)) != 0;
            }
          }
    }
  }
  if (a.rotary_dim) {
    std::vector<uint8_t> got(nq * 2);
    (void)hipMemcpy(got.data(), ws, got.size(), hipMemcpyDeviceToHost);
    for (size_t i = 0; i < nq; ++i) {
      const double tol = 2.02 * hk_host::unit_roundoff(format.type) * std::fabs(q[i]) + 0x1p-19;
      bad += !(std::fabs(format.load(&got[2 * i]) - q[i]) <= tol);
      q[i] = format.load(&got[2 * i]);
    }
  }
  attn_ref::Shape shape;
  shape.hq = a.hq, shape.hkv = a.hkv, shape.d = a.d, shape.causal = a.causal;
  shape.left = p.window_left, shape.right = p.window_right;
  shape.len_q.assign(a.b, a.sq), shape.len_k.assign(a.b, keys);
  const attn_ref::Result want = attn_ref::forward(shape, q, k, v, type == hk::scalar_type::bf16);
  std::vector<uint16_t> o_bits(nq);
  std::vector<float> lse(size_t(a.b) * a.sq * a.hq);
  (void)hipMemcpy(o_bits.data(), dout, nq * 2, hipMemcpyDeviceToHost);
  (void)hipMemcpy(lse.data(), dlse, lse.size() * 4, hipMemcpyDeviceToHost);
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
  const double ref_s = since(t_ref);
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
  std::printf("  wall time: inputs %.1f s, the call %.1f s (emulation), checks and reference %.1f s (%u host threads)\n",
              inputs_s, run_s, ref_s, std::thread::hardware_concurrency());
  for (const auto& kern : hk::report::own_kernels(device_arch()))
    if (kern.name.find("attention_decode") != std::string::npos && kern.name.find("Li" + std::to_string(a.d) + "E") != std::string::npos)
      print_report(kern.name.c_str(), 256, kern.name == d.kernel);
  return bad ? 1 : 0;
}
