// hk::attention_decode: argument validation, the split of the keys, and dispatch to the decode kernels.
#include "decode.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "decode_append.h"
#include "common/checks.h"

namespace hk {

namespace {

const char* const entry = "hk::attention_decode";
Status error(hipError_t code, std::string message) { return api::error(entry, code, message); }
Status invalid(std::string message) { return error(hipErrorInvalidValue, std::move(message)); }
std::string str(long x) { return std::to_string(x); }

// What the checks resolve: the kernel's arguments and the grid.
struct Plan {
  kernels::DecodeArgs a{};
  kernels::DecodeAppendArgs app{};
  long items = 0;
  size_t workspace = 0;  // bytes of the workspace: the rotated Q (q_bytes), then the partials (when split)
  size_t q_bytes = 0;
};

// The split of the keys: enough workgroups to give every CU four, each split at least 8 tiles (2 per wave), at most
// one split per 4 tiles of the capacity. Depends on the shapes only (not on seqlens or the block table), so paged and
// contiguous caches of one problem split alike.
void split(const AttentionDecodeProblem& p, long capacity, int cus, Plan& r) {
  constexpr int BK = kernels::decode_keys;
  const long tiles = (capacity + BK - 1) / BK, want = 4l * cus;
  long splits = std::clamp((want + r.items - 1) / r.items, 1l, std::max(1l, tiles / 8));
  splits = std::min<long>(splits, kernels::decode_max_splits);
  long split_tiles = (tiles + splits - 1) / splits;
  split_tiles = (split_tiles + 3) / 4 * 4;
  splits = std::max(1l, (tiles + split_tiles - 1) / split_tiles);  // (never more than before)
  r.a.splits = int(splits), r.a.split_tiles = int(std::max(4l, split_tiles));
  r.workspace = splits > 1 ? size_t(splits) * r.items * kernels::decode_rows * (p.head_dim + 1) * sizeof(float) : 0;
  if (p.rotary_cos) {  // the rotated Q, packed, first (16-byte aligned, as the partials after it)
    r.q_bytes = (size_t(p.batch) * p.seqlen_q * p.heads_q * p.head_dim * size_of(p.type) + 15) / 16 * 16;
    r.workspace += r.q_bytes;
  }
}

// The shape checks and the plan, with no device access but the target.
Status plan_shape(const AttentionDecodeProblem& p, Plan& r) {
  if (p.batch <= 0) return invalid("batch must be positive (got " + str(p.batch) + ")");
  if (p.seqlen_q < 1 || p.seqlen_q > 16) return invalid("seqlen_q must be 1 to 16 (got " + str(p.seqlen_q) + ")");
  if (p.heads_q <= 0 || p.heads_kv <= 0 || p.heads_q % p.heads_kv)
    return invalid("heads_q (" + str(p.heads_q) + ") must be a positive multiple of heads_kv (" + str(p.heads_kv) + ")");
  if (p.head_dim != 64 && p.head_dim != 128) return invalid("head_dim must be 64 or 128 (got " + str(p.head_dim) + ")");
  if (p.type != scalar_type::bf16 && p.type != scalar_type::f16)
    return invalid(std::string("Q and O must be bf16 or f16, not ") + to_string(p.type));
  if (p.kv_type != p.type && p.kv_type != scalar_type::fp8_e4m3)
    return invalid(std::string("the caches must have Q's type (") + to_string(p.type) + ") or be fp8_e4m3, not " +
                   to_string(p.kv_type));
  if (p.kv_type != scalar_type::fp8_e4m3 && (p.k_descale || p.v_descale))
    return invalid(std::string("k_descale / v_descale apply to fp8 caches only, not ") + to_string(p.kv_type));
  if (!p.q || !p.k_cache || !p.v_cache || !p.o || !p.cache_seqlens)
    return invalid(std::string("null pointer for ") +
                   (!p.q ? "Q" : !p.k_cache ? "k_cache" : !p.v_cache ? "v_cache" : !p.o ? "O" : "cache_seqlens"));
  if (!(std::isfinite(p.softmax_scale) && p.softmax_scale >= 0.f))
    return invalid("softmax_scale must be positive and finite, or 0 for 1 / sqrt(head_dim)");
  if (p.window_left < -1 || p.window_right < -1)
    return invalid("window sizes must be -1 (unbounded) or non-negative (got " + str(p.window_left) + ", " +
                   str(p.window_right) + ")");
  if (p.causal && p.window_right > 0)
    return invalid("causal attention sees no key to the right of the diagonal: window_right must be -1 or 0");
  if (p.cache_rows <= 0) return invalid("cache_rows (S_max, or the page size) must be positive");
  const bool paged = p.block_table != nullptr;
  if (paged && (p.max_blocks <= 0 || p.num_blocks <= 0))
    return invalid("a paged cache needs max_blocks and num_blocks positive (got " + str(p.max_blocks) + ", " +
                   str(p.num_blocks) + ")");
  const long capacity = paged ? long(p.max_blocks) * p.cache_rows : p.cache_rows;
  if (capacity >= (1l << 28)) return invalid("the cache capacity must be below 2^28 keys per sequence");
  if ((p.k_new == nullptr) != (p.v_new == nullptr))
    return invalid(std::string("k_new and v_new are appended together: ") + (p.k_new ? "v_new" : "k_new") + " is null");
  if (p.k_new ? p.seqlen_new < 1 || p.seqlen_new >= (1 << 28) : p.seqlen_new != 0)
    return invalid("seqlen_new (" + str(p.seqlen_new) + ") must be positive with k_new / v_new and 0 without them");
  if ((p.rotary_cos == nullptr) != (p.rotary_sin == nullptr))
    return invalid(std::string("rotary needs both tables: ") + (p.rotary_cos ? "rotary_sin" : "rotary_cos") + " is null");
  if (p.rotary_cos) {
    if (!p.k_new) return invalid("rotary applies to Q and the appended keys: it needs k_new and v_new");
    if (p.kv_type != p.type)
      return invalid(std::string("rotary needs a cache of Q's type (the keys are rotated in it), not ") + to_string(p.kv_type));
    if (p.rotary_dim < 2 || p.rotary_dim % 2 || p.rotary_dim > p.head_dim)
      return invalid("rotary_dim must be even, 2 to head_dim (" + str(p.head_dim) + "), got " + str(p.rotary_dim));
    if (p.rotary_type != scalar_type::fp32 && p.rotary_type != p.type)
      return invalid(std::string("the rotary tables must be fp32 or Q's type (") + to_string(p.type) + "), not " +
                     to_string(p.rotary_type));
    if (p.rotary_rows <= 0) return invalid("rotary_rows must be positive (got " + str(p.rotary_rows) + ")");
    if (p.rotary_stride != 0 && p.rotary_stride < p.rotary_dim / 2)
      return invalid("rotary_stride (" + str(p.rotary_stride) + ") must be 0 (packed) or at least rotary_dim / 2 (" +
                     str(p.rotary_dim / 2) + ")");
  } else if (p.rotary_dim || p.rotary_rows) {
    return invalid("rotary_dim / rotary_rows given without rotary tables");
  }
  Status status;
  const arch::target* target = api::current_target(entry, status);
  if (!target) return status;
  r.items = long(p.batch) * p.heads_kv * ((long(p.seqlen_q) * (p.heads_q / p.heads_kv) + 15) / 16);
  split(p, capacity, target->compute_units, r);
  if (r.items * r.a.splits >= (1l << 31)) return invalid("too many workgroups for one launch");
  return {};
}

// Reads `n` int32 (fp32) from device memory after checking that they lie in one allocation.
template <class I>
Status read_ints(const char* name, const I* dev, size_t n, std::vector<I>& host) {
  if (reinterpret_cast<uintptr_t>(dev) % 4 || !api::inside_allocation(dev, n * sizeof(I)))
    return invalid(std::string(name) + " does not hold " + str(long(n)) + " aligned " +
                   (std::is_same_v<I, int> ? "int32" : "fp32") + " entries inside one device allocation");
  host.resize(n);
  if (hipError_t e = hipMemcpy(host.data(), dev, n * sizeof(I), hipMemcpyDeviceToHost); e != hipSuccess)
    return error(e, std::string("reading ") + name + ": " + hipGetErrorString(e));
  return {};
}

struct View {
  const char* name;
  const void* data;
  long n0, n1, n2, dim;  // batch (pages), rows, heads, D
  AttentionDecodeProblem::Strides s;
  long elem = 2;         // bytes per element
  long span() const { return (n0 - 1) * s.batch + (n1 - 1) * s.row + (n2 - 1) * s.head + dim; }
};

Status check_view(View& t, bool written) {
  if (t.s.head == 0) t.s.head = t.dim;
  if (t.s.row == 0) t.s.row = t.n2 * t.dim;
  if (t.s.batch == 0) t.s.batch = t.n1 * t.s.row;
  if (t.s.batch < 0 || t.s.row < 0 || t.s.head < 0) return invalid(std::string(t.name) + " strides must not be negative");
  if (reinterpret_cast<uintptr_t>(t.data) % 16) return invalid(std::string(t.name) + " must be 16-byte aligned");
  const long a = 16 / t.elem;
  if ((t.n0 > 1 && t.s.batch % a) || (t.n1 > 1 && t.s.row % a) || (t.n2 > 1 && t.s.head % a))
    return invalid(std::string(t.name) + " strides must be multiples of " + str(a) +
                   " elements (rows start on 16-byte boundaries)");
  if (written && !checks::Strided<3>{{t.n2, t.n1, t.n0}, {t.s.head, t.s.row, t.s.batch}, t.dim}.rows_disjoint())
    return invalid(std::string(t.name) + " strides make elements overlap");
  if (!api::inside_allocation(t.data, size_t(t.span() * t.elem)))
    return invalid(std::string(t.name) + " does not lie inside one device allocation");
  return {};
}

// Entries of a descale array: 1, Hkv (per head), B (per batch) or B x Hkv (both).
size_t descale_entries(const AttentionDecodeProblem& p, bool per_head, bool per_batch) {
  return (per_head ? size_t(p.heads_kv) : 1) * (per_batch ? size_t(p.batch) : 1);
}

// Paged appends: every cache row a new key lands on must belong to that key alone, not to another key of any
// sequence (a written row read or written twice through shared or repeated pages). Rows in use per page, as
// intervals of (sequence, table entry); pages holding appended rows are compared with every other use of the page.
Status check_append_rows(const AttentionDecodeProblem& p, const std::vector<int>& seqlens, const std::vector<int>& table) {
  struct Use {
    int page, hi, b;  // rows [0, hi) of `page` hold keys of sequence b through table entry `entry`
    long entry;
    bool written;
  };
  std::vector<Use> uses;
  const int page = p.cache_rows;
  for (int b = 0; b < p.batch; ++b) {
    const long end = long(seqlens[b]) + p.seqlen_new;
    for (long e = 0; e * page < end; ++e) {
      const int lo_key = int(e * page), hi_key = int(std::min<long>(end, (e + 1) * page));
      const bool written = hi_key > seqlens[b];
      uses.push_back({table[size_t(b) * p.max_blocks + e], hi_key - lo_key, b, e, written});
    }
  }
  std::sort(uses.begin(), uses.end(), [](const Use& x, const Use& y) { return x.page < y.page; });
  for (size_t i = 0; i < uses.size();) {
    size_t j = i;
    while (j < uses.size() && uses[j].page == uses[i].page) ++j;
    for (size_t x = i; x < j; ++x) {
      if (!uses[x].written) continue;
      // Its written rows: from the sequence's old end (within the entry) to hi.
      const int w_lo = std::max(0, int(seqlens[uses[x].b] - uses[x].entry * page));
      for (size_t y = i; y < j; ++y)
        if (y != x && w_lo < uses[y].hi)
          return invalid("block_table[" + str(uses[x].b) + "][" + str(uses[x].entry) + "] and block_table[" +
                         str(uses[y].b) + "][" + str(uses[y].entry) + "] are both page " + str(uses[x].page) +
                         ", and keys appended to sequence " + str(uses[x].b) + " would land on rows sequence " +
                         str(uses[y].b) + " also uses");
    }
    i = j;
  }
  return {};
}

Status prepare(const AttentionDecodeProblem& p, Plan& r) {
  if (Status s = plan_shape(p, r); !s) return s;
  const bool paged = p.block_table != nullptr, append = p.k_new != nullptr;
  const long capacity = paged ? long(p.max_blocks) * p.cache_rows : p.cache_rows, d = p.head_dim;
  View q{"Q", p.q, p.batch, p.seqlen_q, p.heads_q, d, p.q_strides};
  View o{"O", p.o, p.batch, p.seqlen_q, p.heads_q, d, p.o_strides};
  const long pages = paged ? p.num_blocks : p.batch;
  View k{"k_cache", p.k_cache, pages, p.cache_rows, p.heads_kv, d, p.k_strides};
  View v{"v_cache", p.v_cache, pages, p.cache_rows, p.heads_kv, d, p.v_strides};
  View kn{"k_new", p.k_new, p.batch, std::max(1, p.seqlen_new), p.heads_kv, d, p.k_new_strides};
  View vn{"v_new", p.v_new, p.batch, std::max(1, p.seqlen_new), p.heads_kv, d, p.v_new_strides};
  k.elem = v.elem = kn.elem = vn.elem = long(size_of(p.kv_type));
  for (View* t : {&q, &o, &k, &v, &kn, &vn})
    if (t->data || (t != &kn && t != &vn))
      if (Status s = check_view(*t, t == &o || (append && (t == &k || t == &v))); !s) return s;
  if (p.lse && (reinterpret_cast<uintptr_t>(p.lse) % 4 ||
                !api::inside_allocation(p.lse, size_t(p.batch) * p.heads_q * p.seqlen_q * sizeof(float))))
    return invalid("LSE must be batch * heads_q * seqlen_q 4-byte aligned fp32 values inside one device allocation");
  const long half = p.rotary_dim / 2, table_stride = p.rotary_stride ? p.rotary_stride : half;
  const size_t table_bytes = p.rotary_cos ? size_t((p.rotary_rows - 1) * table_stride + half) * size_of(p.rotary_type) : 0;
  for (auto [name, t] : {std::pair{"rotary_cos", p.rotary_cos}, std::pair{"rotary_sin", p.rotary_sin}})
    if (t && (reinterpret_cast<uintptr_t>(t) % size_of(p.rotary_type) || !api::inside_allocation(t, table_bytes)))
      return invalid(std::string(name) + " must hold rotary_rows (" + str(p.rotary_rows) + ") aligned rows of rotary_dim / 2 (" +
                     str(half) + ") entries, " + str(table_stride) + " apart, inside one device allocation");
  auto span = [](const View& t) { return checks::Span{t.data, t.data ? size_t(t.span() * t.elem) : 0, t.name}; };
  const size_t lse_bytes = size_t(p.batch) * p.heads_q * p.seqlen_q * sizeof(float);
  const size_t kds = p.k_descale ? descale_entries(p, p.k_descale_per_head, p.k_descale_per_batch) : 0;
  const size_t vds = p.v_descale ? descale_entries(p, p.v_descale_per_head, p.v_descale_per_batch) : 0;
  // Written: O, LSE, the workspace, and the caches when appending (they are read too, by the decode kernel after
  // the append, so they are written by one kernel and read by the next: only the other arguments must stay apart).
  const checks::Span outs[] = {span(o), {p.lse, p.lse ? lse_bytes : 0, "LSE"},
                               {append ? p.k_cache : nullptr, size_t(k.span() * k.elem), "k_cache"},
                               {append ? p.v_cache : nullptr, size_t(v.span() * v.elem), "v_cache"},
                               {p.workspace, p.workspace ? p.workspace_bytes : 0, "the workspace"}};
  const checks::Span ins[] = {span(q), {append ? nullptr : p.k_cache, size_t(k.span() * k.elem), "k_cache"},
                              {append ? nullptr : p.v_cache, size_t(v.span() * v.elem), "v_cache"},
                              span(kn), span(vn), {p.cache_seqlens, size_t(p.batch) * 4, "cache_seqlens"},
                              {p.block_table, paged ? size_t(p.batch) * p.max_blocks * 4 : 0, "block_table"},
                              {p.k_descale, kds * 4, "k_descale"}, {p.v_descale, vds * 4, "v_descale"},
                              {p.rotary_cos, table_bytes, "rotary_cos"}, {p.rotary_sin, table_bytes, "rotary_sin"}};
  if (std::string clash = checks::first_overlap(outs, ins); !clash.empty()) return invalid(clash);

  std::vector<int> seqlens, table;
  if (Status s = read_ints("cache_seqlens", p.cache_seqlens, size_t(p.batch), seqlens); !s) return s;
  for (int b = 0; b < p.batch; ++b)
    if (seqlens[b] < 0 || long(seqlens[b]) + p.seqlen_new > capacity)
      return invalid("cache_seqlens[" + str(b) + "] = " + str(seqlens[b]) +
                     (p.seqlen_new ? " plus the " + str(p.seqlen_new) + " appended keys" : std::string()) +
                     " is outside the cache's capacity [0, " + str(capacity) + "]");
  if (p.rotary_cos) {
    // Positions: keys seqlens[b] + i (i < seqlen_new); queries seqlens[b] + i (i < Sq) when causal or windowed, else
    // seqlens[b].
    const bool q_each_row = p.causal || p.window_left >= 0 || p.window_right >= 0;
    const long last = *std::max_element(seqlens.begin(), seqlens.end()) +
                      std::max<long>(p.seqlen_new, q_each_row ? p.seqlen_q : 1) - 1;
    if (last >= p.rotary_rows)
      return invalid("the rotary tables have " + str(p.rotary_rows) + " rows, but position " + str(last) +
                     " is rotated (cache_seqlens plus the new keys" + (q_each_row ? " and queries)" : ")"));
  }
  for (auto [name, ptr, per_head, per_batch] :
       {std::tuple{"k_descale", p.k_descale, p.k_descale_per_head, p.k_descale_per_batch},
        std::tuple{"v_descale", p.v_descale, p.v_descale_per_head, p.v_descale_per_batch}}) {
    if (!ptr) continue;
    std::vector<float> ds;
    if (Status s = read_ints(name, ptr, descale_entries(p, per_head, per_batch), ds); !s) return s;
    for (size_t h = 0; h < ds.size(); ++h)
      if (!(std::isfinite(ds[h]) && ds[h] > 0.f))
        return invalid(std::string(name) + "[" + str(long(h)) + "] = " + std::to_string(ds[h]) +
                       " is not a positive finite descale");
  }
  if (paged) {
    if (Status s = read_ints("block_table", p.block_table, size_t(p.batch) * p.max_blocks, table); !s) return s;
    for (int b = 0; b < p.batch; ++b)
      for (long i = 0; i < (seqlens[b] + p.seqlen_new + p.cache_rows - 1) / p.cache_rows; ++i) {
        const int page = table[size_t(b) * p.max_blocks + i];
        if (page < 0 || page >= p.num_blocks)
          return invalid("block_table[" + str(b) + "][" + str(i) + "] = " + str(page) + " is not a page of the cache (0 to " +
                         str(p.num_blocks - 1) + ")");
      }
    if (append)
      if (Status s = check_append_rows(p, seqlens, table); !s) return s;
  }

  kernels::DecodeArgs& a = r.a;
  a.q = p.q, a.k = p.k_cache, a.v = p.v_cache, a.o = p.o, a.lse = p.lse;
  a.block_table = p.block_table, a.seqlens = p.cache_seqlens;
  a.k_descale = p.k_descale, a.v_descale = p.v_descale;
  a.k_ds_stride = p.k_descale_per_head, a.v_ds_stride = p.v_descale_per_head;
  a.k_ds_bstride = p.k_descale_per_batch ? (p.k_descale_per_head ? p.heads_kv : 1) : 0;
  a.v_ds_bstride = p.v_descale_per_batch ? (p.v_descale_per_head ? p.heads_kv : 1) : 0;
  a.seqlen_new = p.seqlen_new;
  kernels::DecodeAppendArgs& ap = r.app;
  if (append) {
    ap.k_new = p.k_new, ap.v_new = p.v_new;
    ap.kn_bs = kn.s.batch, ap.kn_rs = kn.s.row, ap.kn_hs = kn.s.head, ap.vn_bs = vn.s.batch, ap.vn_rs = vn.s.row, ap.vn_hs = vn.s.head;
  }
  if (p.rotary_cos) {
    ap.q_in = p.q, ap.qi_bs = q.s.batch, ap.qi_rs = q.s.row, ap.qi_hs = q.s.head;
    ap.cos = p.rotary_cos, ap.sin = p.rotary_sin, ap.table_fp32 = p.rotary_type == scalar_type::fp32;
    ap.interleaved = p.rotary_interleaved, ap.q_each_row = p.causal || p.window_left >= 0 || p.window_right >= 0;
    ap.rotary_dim = p.rotary_dim, ap.table_stride = table_stride;
  }
  a.q_bs = q.s.batch, a.q_rs = q.s.row, a.q_hs = q.s.head, a.o_bs = o.s.batch, a.o_rs = o.s.row, a.o_hs = o.s.head;
  a.k_ps = k.s.batch, a.k_rs = k.s.row, a.k_hs = k.s.head, a.v_ps = v.s.batch, a.v_rs = v.s.row, a.v_hs = v.s.head;
  a.bt_stride = p.max_blocks, a.page_size = p.cache_rows;
  a.batch = p.batch, a.heads_q = p.heads_q, a.heads_kv = p.heads_kv, a.seqlen_q = p.seqlen_q;
  a.q_blocks = int((long(p.seqlen_q) * (p.heads_q / p.heads_kv) + 15) / 16);
  a.combine_rows = a.q_blocks == 1 ? p.seqlen_q * (p.heads_q / p.heads_kv) : kernels::decode_rows;
  const long reach = capacity + p.seqlen_q;  // a window wider than any sequence is no window
  a.left = p.window_left > reach ? -1 : p.window_left;
  a.right = p.causal ? 0 : p.window_right > reach ? -1 : p.window_right;
  const float scale = p.softmax_scale > 0.f ? p.softmax_scale : 1.f / std::sqrt(float(p.head_dim));
  a.scale_log2 = float(double(scale) * 1.4426950408889634);
  return {};
}

Status launch(const AttentionDecodeProblem& p, Plan& r, void* workspace) {
  kernels::DecodeArgs& a = r.a;
  char* ws = static_cast<char*>(workspace);
  if (p.rotary_cos) {  // the decode kernel reads the rotated copy of Q, packed
    a.q = ws;
    a.q_hs = p.head_dim, a.q_rs = long(p.heads_q) * p.head_dim, a.q_bs = long(p.seqlen_q) * a.q_rs;
  }
  if (a.splits > 1) {
    a.part_lse = reinterpret_cast<float*>(ws + r.q_bytes);
    a.part_o = a.part_lse + size_t(a.splits) * r.items * kernels::decode_rows;
  }
  (void)hipGetLastError();  // launch errors below are ours alone
  const bool fp8 = p.kv_type == scalar_type::fp8_e4m3;
  auto go = [&](auto t, auto kv, auto dim) {
    using T = decltype(t);
    using KV = decltype(kv);
    constexpr int D = decltype(dim)::value, P = 16 / int(sizeof(T));
    if (p.k_new) {
      const unsigned grid = unsigned(p.batch * (p.seqlen_new + (p.rotary_cos ? p.seqlen_q : 0)));
      if (!p.rotary_cos || p.rotary_dim / 2 % P == 0)
        hipLaunchKernelGGL((kernels::attention_decode_append<T, KV, D, P, true>), dim3(grid), dim3(kernels::decode_append_threads),
                           0, p.stream, a, r.app);
      else
        hipLaunchKernelGGL((kernels::attention_decode_append<T, KV, D, 1, false>), dim3(grid), dim3(kernels::decode_append_threads),
                           0, p.stream, a, r.app);
    }
    hipLaunchKernelGGL((kernels::attention_decode<T, KV, D>), dim3(unsigned(r.items * a.splits)), dim3(256), 0, p.stream, a);
    if (a.splits > 1)
      hipLaunchKernelGGL((kernels::attention_decode_combine<T, D>), dim3(unsigned(r.items * a.combine_rows)), dim3(256), 0, p.stream, a);
  };
  auto dim = [&](auto t, auto kv) {
    if (p.head_dim == 64) go(t, kv, std::integral_constant<int, 64>{});
    else go(t, kv, std::integral_constant<int, 128>{});
  };
  auto kv = [&](auto t) {
    if (fp8) dim(t, fp8e4m3{});
    else dim(t, t);
  };
  if (p.type == scalar_type::bf16) kv(bf16{});
  else kv(half{});
  if (hipError_t e = hipGetLastError(); e != hipSuccess) return error(e, std::string("launch failed: ") + hipGetErrorString(e));
  return {};
}

}  // namespace

Status attention_decode(const AttentionDecodeProblem& p) {
  Plan r;
  if (Status s = prepare(p, r); !s) return s;
  if (!r.workspace) return launch(p, r, nullptr);
  if (p.workspace) {
    if (p.workspace_bytes < r.workspace)
      return invalid("the workspace holds " + str(long(p.workspace_bytes)) + " bytes, the problem needs " +
                     str(long(r.workspace)) + " (attention_decode_workspace_bytes)");
    if (reinterpret_cast<uintptr_t>(p.workspace) % 16 || !api::inside_allocation(p.workspace, r.workspace))
      return invalid("the workspace must be 16-byte aligned and inside one device allocation");
    return launch(p, r, p.workspace);
  }
  return checks::with_own_workspace(entry, r.workspace, p.stream, [&](void* own) { return launch(p, r, own); });
}

size_t attention_decode_workspace_bytes(const AttentionDecodeProblem& p) {
  Plan r;
  return plan_shape(p, r) ? r.workspace : 0;
}

}  // namespace hk
