// hk::attention_forward and hk::attention_backward: argument validation and dispatch to the kernel instances for the
// element type and D.
#include "attention.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "attention_bwd.h"
#include "attention_fp8.h"
#include "attention_fwd.h"
#include "common/checks.h"
#include "attention_fwd_pingpong.h"

namespace hk {

namespace {

// The entry point whose checks are running (hk::attention_forward or hk::attention_backward), for the messages: one
// set of checks serves both.
thread_local const char* entry = "hk::attention_forward";

Status error(hipError_t code, std::string message) { return api::error(entry, code, message); }
Status invalid(std::string message) { return error(hipErrorInvalidValue, std::move(message)); }

// V's and O's head dim (head_dim_v, 0 meaning head_dim).
int value_dim(const AttentionInputs& p) { return p.head_dim_v ? p.head_dim_v : p.head_dim; }

// Sequence lengths are kept below this so that every row index, and a window's reach past it, stays an int.
constexpr long max_seqlen = 1l << 28;

// One tensor's view for the checks: its name, base, extents (batch, rows, heads, D), strides and element bytes.
struct Tensor {
  const char* name;
  const void* data;
  long batch, rows, heads, dim;
  AttentionInputs::Strides s;
  long elem = 2;
  // Elements from the first to one past the last addressed.
  long span() const { return (batch - 1) * s.batch + (rows - 1) * s.row + (heads - 1) * s.head + dim; }
  size_t bytes() const { return size_t(span() * elem); }
};

bool is_fp8(const AttentionInputs& p) { return p.type == scalar_type::fp8_e4m3; }

// The tensor's strides with zeros replaced by those of a contiguous (B, S, H, D) tensor (varlen: (total, H, D)).
AttentionInputs::Strides resolve(AttentionInputs::Strides s, long rows, long heads, long dim) {
  if (s.head == 0) s.head = dim;
  if (s.row == 0) s.row = heads * dim;
  if (s.batch == 0) s.batch = rows * heads * dim;
  return s;
}

// The shape checks that need no device; `o`: the forward's output (written by the forward, read by the backward).
Status validate(const AttentionInputs& p, const void* o) {
  if (p.batch <= 0) return invalid("batch must be positive (got " + std::to_string(p.batch) + ")");
  if (p.heads_q <= 0 || p.heads_kv <= 0)
    return invalid("heads_q and heads_kv must be positive (got " + std::to_string(p.heads_q) + ", " +
                   std::to_string(p.heads_kv) + ")");
  if (p.heads_q % p.heads_kv)
    return invalid("heads_q (" + std::to_string(p.heads_q) + ") must be a multiple of heads_kv (" +
                   std::to_string(p.heads_kv) + ")");
  if (!kernels::attn_head_dims(p.head_dim, value_dim(p)))
    return invalid("head_dim (Q, K) and head_dim_v (V, O) must both be 64, 128, 192 or 256, or 192 and 128 (got " +
                   std::to_string(p.head_dim) + " and " + std::to_string(value_dim(p)) + ")");
  if (p.type != scalar_type::bf16 && p.type != scalar_type::f16 && !is_fp8(p))
    return invalid(std::string("Q, K, V and O must be bf16 or f16 (or Q, K and V fp8_e4m3 for the forward), not ") +
                   to_string(p.type));
  if (is_fp8(p) && (p.head_dim != value_dim(p) || (p.head_dim != 64 && p.head_dim != 128)))
    return invalid("the FP8 forward runs head dims 64 and 128 (for Q, K and V alike) only (got " +
                   std::to_string(p.head_dim) + " and " + std::to_string(value_dim(p)) + ")");
  if (is_fp8(p) && (p.alibi_slopes || p.dropout_p > 0.f))
    return invalid("ALiBi and dropout are not supported with fp8 inputs yet (softcap is): pass neither");
  if (!p.q || !p.k || !p.v || !o)
    return invalid(std::string("null pointer for ") + (!p.q ? "Q" : !p.k ? "K" : !p.v ? "V" : "O"));
  if (!(std::isfinite(p.softmax_scale) && p.softmax_scale >= 0.f))
    return invalid("softmax_scale must be positive and finite, or 0 for 1 / sqrt(head_dim)");
  if (!(std::isfinite(p.softcap) && p.softcap >= 0.f))
    return invalid("softcap must be positive and finite, or 0 for none (got " + std::to_string(p.softcap) + ")");
  if (!(p.dropout_p >= 0.f && p.dropout_p < 1.f))
    return invalid("dropout_p must be in [0, 1) (got " + std::to_string(p.dropout_p) + ")");
  if (p.dropout_p > 0x1.fep-1f)  // the kernels compare 8-bit values (dropout_keep_max8)
    return invalid("dropout_p must be at most 1 - 2^-8, the mask's resolution: an element is kept when its 8 random "
                   "bits are <= floor(255 (1 - p)), flash-attention's rule, so at least 1/256 of them are (got " +
                   std::to_string(p.dropout_p) + ")");
  if (p.alibi_slopes && p.alibi_batch_stride != 0 && p.alibi_batch_stride < p.heads_q)
    return invalid("alibi_batch_stride must be 0 (one slope per head) or at least heads_q (got " +
                   std::to_string(p.alibi_batch_stride) + ")");
  if (p.window_left < -1 || p.window_right < -1)
    return invalid("window sizes must be -1 (unbounded) or non-negative (got " + std::to_string(p.window_left) + ", " +
                   std::to_string(p.window_right) + ")");
  if (p.causal && p.window_right > 0)
    return invalid("causal attention sees no key to the right of the diagonal: window_right must be -1 or 0");
  if (!p.cu_seqlens_q != !p.cu_seqlens_k) return invalid("varlen needs both cu_seqlens_q and cu_seqlens_k");
  if (!p.cu_seqlens_q && (p.seqlen_q <= 0 || p.seqlen_k <= 0))
    return invalid("seqlen_q and seqlen_k must be positive (got " + std::to_string(p.seqlen_q) + ", " +
                   std::to_string(p.seqlen_k) + ")");
  if (p.seqlen_q < 0 || p.seqlen_k < 0 || p.seqlen_q >= max_seqlen || p.seqlen_k >= max_seqlen)
    return invalid("seqlen_q and seqlen_k must be in [0, 2^28)");
  return {};
}

// Strides: non-negative, rows starting on 16-byte boundaries (the kernel moves 16-byte chunks), and O's elements
// distinct (each is written by one lane).
Status check_layout(const Tensor& t, bool written) {
  const std::array<long, 3> strides{t.s.batch, t.s.row, t.s.head};
  if (*std::min_element(strides.begin(), strides.end()) < 0)
    return invalid(std::string(t.name) + " strides must not be negative");
  if (reinterpret_cast<uintptr_t>(t.data) % 16) return invalid(std::string(t.name) + " must be 16-byte aligned");
  const long unit = 16 / t.elem;  // elements of 16 bytes
  if ((t.batch > 1 && t.s.batch % unit) || (t.rows > 1 && t.s.row % unit) || (t.heads > 1 && t.s.head % unit))
    return invalid(std::string(t.name) + " strides must be multiples of " + std::to_string(unit) +
                   " elements (rows start on 16-byte boundaries)");
  if (written && !checks::Strided<3>{{t.heads, t.rows, t.batch}, {t.s.head, t.s.row, t.s.batch}, t.dim}.rows_disjoint())
    return invalid(std::string(t.name) + " strides make elements overlap");
  return {};
}

// The device's target (hk's lookup): an error unless the kernels are built for it; `pingpong` tells whether it runs
// the 8-wave ping-pong kernel (attn_pingpong_runs: gfx950, and gfx942 at D = 64); `fwd_waves`: the waves of
// attention_fwd's workgroup otherwise; `bwd_block_keys`: the keys of one workgroup of the backward's dK, dV kernel and
// `bwd_dkdv_waves` its waves, by whether the instance runs at 64 keys and queries a wave (attn_bwd_keys64_variant:
// plain or ALiBi, their own schedules on gfx950 at D = 128);
// `bwd_rows`: the queries of one workgroup of its delta and dQ kernels; `bwd_dq_waves`: the waves of the dQ kernel's.
Status check_arch(bool& pingpong, int& fwd_waves, int (&bwd_block_keys)[3], int& bwd_rows, int (&bwd_dq_rows)[2], int& bwd_dq_waves,
                  int (&bwd_dkdv_waves)[3], int d, int dv) {
  Status status;
  const arch::target* target = api::current_target(entry, status);
  if (!target) return status;
  pingpong = d == dv && kernels::attn_pingpong_runs(target->lds_bytes, target->lds_read_transpose, d);
  fwd_waves = kernels::attn_waves(target->lds_bytes, target->lds_read_transpose, d, dv);
  bwd_rows = kernels::attn_bwd_rows(d, target->lds_read_transpose);
  bwd_dq_waves = kernels::attn_bwd_dq_waves(d, target->lds_read_transpose);
  for (int plain : {0, 1}) bwd_dq_rows[plain] = kernels::attn_bwd_dq_rows(d, target->lds_read_transpose, plain && d == dv);
  for (int c : {0, 1, 2}) {  // (kernel 2's classes: attn_bwd_dkdv_class)
    bwd_block_keys[c] = kernels::attn_bwd_block_keys(d, target->lds_read_transpose, c >= 1 && d == dv, c == 2 && d == dv);
    bwd_dkdv_waves[c] = kernels::attn_bwd_dkdv_waves(d, target->lds_read_transpose, c >= 1 && d == dv);
  }
  return {};
}

// Reads and checks one cu_seqlens array: B + 1 offsets from 0, non-decreasing; `longest` gets the longest sequence.
Status read_cu_seqlens(const char* name, const int* cu, int batch, int& total, int& longest) {
  if (!api::inside_allocation(cu, sizeof(int) * (size_t(batch) + 1)))
    return invalid(std::string(name) + " does not hold batch + 1 int32 entries inside one device allocation");
  std::vector<int> host(size_t(batch) + 1);
  if (hipError_t e = hipMemcpy(host.data(), cu, host.size() * sizeof(int), hipMemcpyDeviceToHost); e != hipSuccess)
    return error(e, std::string("reading ") + name + ": " + hipGetErrorString(e));
  if (host[0] != 0) return invalid(std::string(name) + "[0] must be 0 (got " + std::to_string(host[0]) + ")");
  longest = 0;
  for (int b = 0; b < batch; ++b) {
    const long len = long(host[b + 1]) - host[b];
    if (len < 0)
      return invalid(std::string(name) + " must be non-decreasing (entry " + std::to_string(b + 1) + " is " +
                     std::to_string(host[b + 1]) + ", after " + std::to_string(host[b]) + ")");
    if (len >= max_seqlen) return invalid(std::string(name) + ": sequences must be shorter than 2^28");
    longest = std::max(longest, int(len));
  }
  total = host[batch];
  return {};
}

// f(T, dims, variant) for the problem's element type, head dims (dims: a kernels::AttnDims) and variant, as
// compile-time constants: the one place the kernel instances are chosen. D = 64 and 128: the plain variant, one
// instance per feature, and the dynamic one (the features read from the arguments) for two or three features
// together, which then pay its scalar tests and schedule (AttnVariant::dynamic); wide heads: the plain variant, or the
// dynamic one for any features (one instance a kernel).
template <class F>
void dispatch(const AttentionInputs& p, F f) {
  using kernels::AttnVariant;
  constexpr AttnVariant plain{}, capped{.softcap = true}, alibi{.alibi = true}, dropped{.dropout = true},
      dynamic{.dynamic = true};
  const int features = (p.dropout_p > 0.f) + (p.softcap > 0.f) + (p.alibi_slopes != nullptr);
  auto variant = [&](auto t, auto d) {
    if (features > 1) f(t, d, std::integral_constant<AttnVariant, dynamic>{});
    else if (p.dropout_p > 0.f) f(t, d, std::integral_constant<AttnVariant, dropped>{});
    else if (p.softcap > 0.f) f(t, d, std::integral_constant<AttnVariant, capped>{});
    else if (p.alibi_slopes) f(t, d, std::integral_constant<AttnVariant, alibi>{});
    else f(t, d, std::integral_constant<AttnVariant, plain>{});
  };
  auto dim = [&](auto t) {
    using kernels::AttnDims;
    auto wide = [&](auto d) {
      if (features > 0) f(t, d, std::integral_constant<AttnVariant, dynamic>{});
      else f(t, d, std::integral_constant<AttnVariant, plain>{});
    };
    if (p.head_dim == 64) variant(t, std::integral_constant<AttnDims, AttnDims{64, 64}>{});
    else if (p.head_dim == 128) variant(t, std::integral_constant<AttnDims, AttnDims{128, 128}>{});
    else if (p.head_dim == 256) wide(std::integral_constant<AttnDims, AttnDims{256, 256}>{});
    else if (value_dim(p) == 192) wide(std::integral_constant<AttnDims, AttnDims{192, 192}>{});
    else wide(std::integral_constant<AttnDims, AttnDims{192, 128}>{});
  };
  if (p.type == scalar_type::bf16) dim(bf16{});
  else dim(half{});
}

// What the checks resolve for the launches: the shape in the kernels' terms.
struct Prepared {
  kernels::AttnArgs a{};
  long batch = 0, rows_q = 0, rows_k = 0;  // tensors' batches and rows as addressed (varlen: 1 and the totals)
  int longest_q = 0, longest_k = 0;
  bool pingpong = false;
  int fwd_waves = 4;
  checks::Span spans[4] = {};  // Q, K, V and O as byte ranges (the FP8 forward's workspace overlaps none)
  int bwd_block_keys[3] = {}, bwd_rows = 0, bwd_dq_rows[2] = {}, bwd_dq_waves = 4, bwd_dkdv_waves[3] = {4, 4, 4};
  AttentionInputs::Strides resolved(AttentionInputs::Strides s, long rows, long heads, long d) const {
    s = resolve(s, rows, heads, d);
    if (batch == 1 && a.cu_q) s.batch = 0;  // unused
    return s;
  }
};

// Every check of the shared inputs, O (at `o`, `o_strides`) and LSE, and the kernels' arguments for them; `backward`: O
// is read and LSE must be given.
Status prepare(const AttentionInputs& p, const void* o, AttentionInputs::Strides o_strides, const float* lse,
               bool backward, Prepared& r) {
  if (Status s = validate(p, o); !s) return s;
  if (Status s = check_arch(r.pingpong, r.fwd_waves, r.bwd_block_keys, r.bwd_rows, r.bwd_dq_rows, r.bwd_dq_waves, r.bwd_dkdv_waves, p.head_dim,
                                value_dim(p));
      !s)
    return s;
  if (backward && !lse) return invalid("LSE (the forward's log-sum-exp) must be given");
  if (backward && is_fp8(p))
    return invalid("the backward runs bf16 and f16 only: fp8 attention is forward-only (train in bf16 or f16)");
  const bool varlen = p.cu_seqlens_q != nullptr;
  // Rows of the tensors as the kernel addresses them: per sequence (padded) or packed totals (varlen).
  r.a.cu_q = p.cu_seqlens_q;
  long& batch = r.batch;
  long &rows_q = r.rows_q, &rows_k = r.rows_k;
  batch = p.batch, rows_q = p.seqlen_q, rows_k = p.seqlen_k;
  int &longest_q = r.longest_q, &longest_k = r.longest_k;
  longest_q = p.seqlen_q, longest_k = p.seqlen_k;
  if (varlen) {
    int total_q = 0, total_k = 0;
    if (Status s = read_cu_seqlens("cu_seqlens_q", p.cu_seqlens_q, p.batch, total_q, longest_q); !s) return s;
    if (Status s = read_cu_seqlens("cu_seqlens_k", p.cu_seqlens_k, p.batch, total_k, longest_k); !s) return s;
    if ((p.seqlen_q && p.seqlen_q < longest_q) || (p.seqlen_k && p.seqlen_k < longest_k))
      return invalid("seqlen_q / seqlen_k (" + std::to_string(p.seqlen_q) + ", " + std::to_string(p.seqlen_k) +
                     ") are shorter than the longest sequence in cu_seqlens (" + std::to_string(longest_q) + ", " +
                     std::to_string(longest_k) + ")");
    batch = 1, rows_q = total_q, rows_k = total_k;
  }
  const long d = p.head_dim, dv = value_dim(p);
  auto strides = [&](AttentionInputs::Strides s, long rows, long heads, long dim) {
    return r.resolved(s, rows, heads, dim);
  };
  const long elem = long(size_of(p.type));  // O: bf16 where Q, K and V are fp8
  const Tensor tq{"Q", p.q, batch, rows_q, p.heads_q, d, strides(p.q_strides, rows_q, p.heads_q, d), elem};
  const Tensor tk{"K", p.k, batch, rows_k, p.heads_kv, d, strides(p.k_strides, rows_k, p.heads_kv, d), elem};
  const Tensor tv{"V", p.v, batch, rows_k, p.heads_kv, dv, strides(p.v_strides, rows_k, p.heads_kv, dv), elem};
  const Tensor to{"O", o, batch, rows_q, p.heads_q, dv, strides(o_strides, rows_q, p.heads_q, dv)};
  for (const Tensor* t : {&tq, &tk, &tv, &to})
    if (Status s = check_layout(*t, t == &to && !backward); !s) return s;
  // The kernel reads K and V with buffer loads, whose offsets are 32-bit: one head of one sequence under 2 GiB.
  for (const Tensor* t : {&tk, &tv})
    if (longest_k > 0 && ((longest_k - 1) * t->s.row + t->dim) * t->elem >= (1l << 31))
      return invalid(std::string(t->name) + ": one head of one sequence must span less than 2 GiB");
  if (lse && reinterpret_cast<uintptr_t>(lse) % alignof(float)) return invalid("LSE must be 4-byte aligned");
  // Every tensor inside one allocation (empty ones address nothing).
  for (const Tensor* t : {&tq, &tk, &tv, &to})
    if (t->rows > 0 && !api::inside_allocation(t->data, t->bytes()))
      return invalid(std::string(t->name) + " does not lie inside one device allocation");
  for (int i = 0; const Tensor* t : {&tq, &tk, &tv, &to}) r.spans[i++] = {t->data, t->rows > 0 ? t->bytes() : 0, t->name};
  if (p.sinks && (reinterpret_cast<uintptr_t>(p.sinks) % alignof(float) ||
                  !api::inside_allocation(p.sinks, size_t(p.heads_q) * sizeof(float))))
    return invalid("sinks must be heads_q 4-byte aligned fp32 values inside one device allocation");
  if (p.alibi_slopes) {
    const long slopes = p.alibi_batch_stride ? (p.batch - 1) * p.alibi_batch_stride + p.heads_q : p.heads_q;
    if (reinterpret_cast<uintptr_t>(p.alibi_slopes) % alignof(float) ||
        !api::inside_allocation(p.alibi_slopes, size_t(slopes) * sizeof(float)))
      return invalid("alibi_slopes must be 4-byte aligned fp32 values, (heads_q) or (batch, heads_q), inside one "
                     "device allocation");
  }
  const long lse_elems = batch * p.heads_q * rows_q;
  if (lse && lse_elems > 0 && !api::inside_allocation(lse, size_t(lse_elems) * sizeof(float)))
    return invalid("LSE does not lie inside one device allocation");

  kernels::AttnArgs& a = r.a;
  a.q = p.q, a.k = p.k, a.v = p.v, a.o = const_cast<void*>(o), a.lse = const_cast<float*>(lse);
  a.q_bs = tq.s.batch, a.q_rs = tq.s.row, a.q_hs = tq.s.head;
  a.k_bs = tk.s.batch, a.k_rs = tk.s.row, a.k_hs = tk.s.head;
  a.v_bs = tv.s.batch, a.v_rs = tv.s.row, a.v_hs = tv.s.head;
  a.o_bs = to.s.batch, a.o_rs = to.s.row, a.o_hs = to.s.head;
  if (is_fp8(p)) {  // Q and K as bf16 pairs (attn_qk_t): strides in 2-byte units (even where they matter: check_layout)
    for (long* x : {&a.q_bs, &a.q_rs, &a.q_hs, &a.k_bs, &a.k_rs, &a.k_hs}) *x /= 2;
  }
  a.lse_bs = long(p.heads_q) * rows_q, a.lse_hs = rows_q;  // (B, Hq, Sq), or (Hq, total_q) for varlen
  a.cu_q = p.cu_seqlens_q, a.cu_k = p.cu_seqlens_k, a.sinks = p.sinks;
  a.alibi = p.alibi_slopes, a.alibi_bs = p.alibi_batch_stride;
  a.batch = p.batch, a.heads_q = p.heads_q, a.heads_kv = p.heads_kv;
  a.seqlen_q = p.seqlen_q, a.seqlen_k = p.seqlen_k;
  const int rows = backward ? r.bwd_rows : r.pingpong ? kernels::attn_pingpong_rows : r.fwd_waves * kernels::AttnTiles::wave_rows;
  a.q_tiles = (longest_q + rows - 1) / rows;
  const float scale = p.softmax_scale > 0.f ? p.softmax_scale : 1.f / std::sqrt(float(p.head_dim));
  a.scale = scale, a.scale_log2 = float(double(scale) * 1.4426950408889634);
  a.alibi_unit = p.softcap > 0.f ? p.softcap : scale;  // ALiBi joins the capped score (alibi_slope)
  a.o_scale = 1.f;
  if (p.softcap > 0.f) {
    const double cap = p.softcap, log2e = 1.4426950408889634;
    a.cap = {float(2 * log2e * scale / cap)};
    a.scale_log2 = float(cap * log2e);  // of the capped scores, tanh (AttnArgs::Softcap)
  }
  a.drop = {uint32_t(p.dropout_seed), uint32_t(p.dropout_seed >> 32), uint32_t(p.dropout_offset),
            uint32_t(p.dropout_offset >> 32), dropout_keep_max8(p.dropout_p), 1.f / (1.f - p.dropout_p)};
  // A window wider than any sequence is no window; this keeps the kernel's diagonal offsets within an int.
  const long reach = long(longest_q) + longest_k;
  a.left = p.window_left > reach ? -1 : p.window_left;
  a.right = p.causal ? 0 : p.window_right > reach ? -1 : p.window_right;

  return {};
}

}  // namespace

namespace {

// The descales' entries: one, B, Hkv or B x Hkv.
size_t descale_entries(const AttentionProblem& p) {
  return size_t(p.descale_per_batch ? p.batch : 1) * size_t(p.descale_per_head ? p.heads_kv : 1);
}

Status check_descales(const AttentionProblem& p) {
  const size_t n = descale_entries(p);
  for (auto [name, ptr] : {std::pair{"q_descale", p.q_descale}, {"k_descale", p.k_descale}, {"v_descale", p.v_descale}}) {
    if (!ptr) continue;
    if (!is_fp8(p))
      return invalid(std::string("q_descale, k_descale and v_descale apply to fp8 inputs only, not ") + to_string(p.type));
    if (reinterpret_cast<uintptr_t>(ptr) % alignof(float) || !api::inside_allocation(ptr, n * sizeof(float)))
      return invalid(std::string(name) + " must be " + std::to_string(n) +
                     " 4-byte aligned fp32 values inside one device allocation (1, B, Hkv or B x Hkv entries as "
                     "descale_per_batch and descale_per_head say)");
  }
  return {};
}

// V's elements as the kernels address them (varlen: the packed rows).
size_t value_elems(const AttentionProblem& p, long batch, long rows_k) {
  return size_t(std::max(0l, batch * rows_k)) * size_t(std::max(0, p.heads_kv)) * size_t(std::max(0, value_dim(p)));
}

// The forward with the problem's workspace (FP8), or `own` when it has none (needs_workspace: one is needed).
Status forward(const AttentionProblem& p, void* own, bool& needs_workspace) {
  if (Status s = check_descales(p); !s) return s;
  Prepared r;
  if (Status s = prepare(p, p.o, p.o_strides, p.lse, false, r); !s) return s;
  kernels::AttnArgs a = r.a;
  const long blocks = long(p.batch) * p.heads_q * a.q_tiles;
  if (blocks == 0) return {};  // every query sequence is empty: nothing to compute
  if (blocks >= (1l << 31)) return invalid("too many query tiles for one launch (batch * heads_q * tiles >= 2^31)");
  kernels::AttnFp8VArgs dec{};
  if (is_fp8(p)) {
    a.q_descale = p.q_descale, a.k_descale = p.k_descale, a.v_descale = p.v_descale;
    a.descale_bs = p.descale_per_batch ? (p.descale_per_head ? p.heads_kv : 1) : 0;
    a.descale_hs = p.descale_per_head ? 1 : 0;
    // V decoded into the workspace, contiguous (batch, rows_k, Hkv, DV), which the kernel reads as V.
    const long dv = value_dim(p);
    const size_t bytes = value_elems(p, r.batch, r.rows_k) * sizeof(bf16);
    void* ws = p.workspace;
    if (ws) {
      if (p.workspace_bytes < bytes)
        return invalid("the workspace holds " + std::to_string(p.workspace_bytes) + " bytes, the problem needs " +
                       std::to_string(bytes) + " (attention_forward_workspace_bytes)");
      if (reinterpret_cast<uintptr_t>(ws) % 16) return invalid("the workspace must be 16-byte aligned");
      if (bytes && !api::inside_allocation(ws, bytes)) return invalid("the workspace does not lie inside one device allocation");
      const long lse_bytes = p.lse ? r.batch * p.heads_q * r.rows_q * long(sizeof(float)) : 0;
      const checks::Span outs[] = {{ws, bytes, "the workspace"}};
      const checks::Span ins[] = {r.spans[0], r.spans[1], r.spans[2], r.spans[3], {p.lse, size_t(lse_bytes), "LSE"}};
      if (std::string clash = checks::first_overlap(outs, ins); !clash.empty()) return invalid(clash);
    } else if (bytes) {
      if (!own) return needs_workspace = true, Status{};
      ws = own;
    }
    dec = {static_cast<const uint8_t*>(p.v), a.v_bs, a.v_rs, a.v_hs, static_cast<bf16*>(ws), r.batch, r.rows_k, p.heads_kv, int(dv)};
    a.v = ws, a.v_hs = dv, a.v_rs = p.heads_kv * dv, a.v_bs = r.rows_k * p.heads_kv * dv;
  }
  (void)hipGetLastError();  // launch errors below are ours alone
  if (dec.out) {
    const long chunks = long(value_elems(p, r.batch, r.rows_k) / 8);
    const long grid = std::min<long>((chunks + kernels::attn_fp8_v_threads - 1) / kernels::attn_fp8_v_threads, 1l << 16);
    if (grid > 0) hipLaunchKernelGGL(kernels::attention_fp8_decode_v<>, dim3(grid), dim3(kernels::attn_fp8_v_threads), 0, p.stream, dec);
  }
  auto launch = [&](auto t, auto dims, auto v) {
    using T = decltype(t);
    constexpr int D = decltype(dims)::value.d, DV = decltype(dims)::value.dv;
    constexpr kernels::AttnVariant V = decltype(v)::value;
    if constexpr (!kernels::attn_wide(D, DV)) {  // (the ping-pong kernel runs no wide head: no instance of it)
      if (r.pingpong) {
        hipLaunchKernelGGL((kernels::attention_fwd_pingpong<T, D, V>), dim3(blocks), dim3(512), 0, p.stream, a);
        return;
      }
    }
    hipLaunchKernelGGL((kernels::attention_fwd<T, D, V, DV>), dim3(blocks), dim3(64 * r.fwd_waves), 0, p.stream, a);
  };
  if (is_fp8(p)) {  // the plain variant or softcap's at D = 64 and 128 (validate)
    using kernels::AttnDims;
    using kernels::AttnVariant;
    auto variant = [&](auto d) {
      if (p.softcap > 0.f) launch(fp8e4m3{}, d, std::integral_constant<AttnVariant, AttnVariant{.softcap = true}>{});
      else launch(fp8e4m3{}, d, std::integral_constant<AttnVariant, AttnVariant{}>{});
    };
    if (p.head_dim == 64) variant(std::integral_constant<AttnDims, AttnDims{64, 64}>{});
    else variant(std::integral_constant<AttnDims, AttnDims{128, 128}>{});
  } else {
    dispatch(p, launch);
  }
  if (hipError_t e = hipGetLastError(); e != hipSuccess) return error(e, std::string("launch failed: ") + hipGetErrorString(e));
  return {};
}

}  // namespace

Status attention_forward(const AttentionProblem& p) {
  entry = "hk::attention_forward";
  bool needs_workspace = false;
  if (Status s = forward(p, nullptr, needs_workspace); !s || !needs_workspace) return s;
  // An FP8 problem without a workspace: one of our own for this call.
  return checks::with_own_workspace(entry, attention_forward_workspace_bytes(p), p.stream,
                                    [&](void* own) { return forward(p, own, needs_workspace); });
}

size_t attention_forward_workspace_bytes(const AttentionProblem& p) {
  if (!is_fp8(p)) return 0;
  long batch = p.batch, rows = p.seqlen_k;
  if (p.cu_seqlens_k && p.batch > 0) {
    int total = 0;
    batch = 1, rows = hipMemcpy(&total, p.cu_seqlens_k + p.batch, sizeof(int), hipMemcpyDeviceToHost) == hipSuccess ? total : 0;
  }
  return value_elems(p, batch, rows) * sizeof(bf16);
}

namespace {

template <class T, int D, int DV, kernels::AttnVariant V>
void launch_backward(kernels::AttnBwdArgs a, unsigned q_blocks, const int (&k_tiles)[3], const int (&dq_tiles)[2], int dq_waves,
                     const int (&dkdv_waves)[3], unsigned steps, hipStream_t stream) {
  // (the dK, dV and dQ kernels' shapes, check_arch: 64 keys and 64 queries a wave for the plain and ALiBi variants on
  // gfx950; 32 keys a wave for the plain one on gfx942)
  constexpr int keys64 = kernels::attn_bwd_keys64_variant<V> && D == DV, cls = kernels::attn_bwd_dkdv_class<V, D, DV>;
  a.k_tiles = k_tiles[cls];
  const unsigned k_blocks = unsigned(long(a.f.batch) * a.f.heads_kv * a.k_tiles);
  // No query at all (every query sequence empty): no delta, no dQ, and dK = dV = 0 from key blocks that see nothing.
  if (q_blocks && (steps & 1)) hipLaunchKernelGGL((kernels::attention_bwd_delta<T, D, DV>), dim3(q_blocks), dim3(256), 0, stream, a);
  if (k_blocks && (steps & 2)) hipLaunchKernelGGL((kernels::attention_bwd_dkdv<T, D, V, DV>), dim3(k_blocks), dim3(64 * dkdv_waves[cls]), 0, stream, a);
  if (q_blocks && (steps & 4)) {  // (the dQ kernel's own query tiles: attn_bwd_dq_rows)
    kernels::AttnBwdArgs b = a;
    b.f.q_tiles = dq_tiles[keys64];
    const unsigned dq_blocks = unsigned(long(a.f.batch) * a.f.heads_q * b.f.q_tiles);
    hipLaunchKernelGGL((kernels::attention_bwd_dq<T, D, V, DV>), dim3(dq_blocks), dim3(64 * dq_waves), 0, stream, b);
  }
  if (a.dsinks && (steps & 8)) hipLaunchKernelGGL(kernels::attention_bwd_dsink, dim3(a.f.heads_q), dim3(256), 0, stream, a);
}

// The backward with the problem's workspace, or `delta` when it has none.
Status backward(const AttentionBackwardProblem& p, float* own_delta, bool& needs_workspace, unsigned steps = 15) {
  Prepared r;
  if (Status s = prepare(p, p.o, p.o_strides, p.lse, true, r); !s) return s;
  if (!p.dout || !p.dq || !p.dk || !p.dv)
    return invalid(std::string("null pointer for ") + (!p.dout ? "dO" : !p.dq ? "dQ" : !p.dk ? "dK" : "dV"));
  const long d = p.head_dim, dv = value_dim(p);
  const Tensor tdo{"dO", p.dout, r.batch, r.rows_q, p.heads_q, dv, r.resolved(p.do_strides, r.rows_q, p.heads_q, dv)};
  const Tensor tdq{"dQ", p.dq, r.batch, r.rows_q, p.heads_q, d, r.resolved(p.dq_strides, r.rows_q, p.heads_q, d)};
  const Tensor tdk{"dK", p.dk, r.batch, r.rows_k, p.heads_kv, d, r.resolved(p.dk_strides, r.rows_k, p.heads_kv, d)};
  const Tensor tdv{"dV", p.dv, r.batch, r.rows_k, p.heads_kv, dv, r.resolved(p.dv_strides, r.rows_k, p.heads_kv, dv)};
  for (const Tensor* t : {&tdo, &tdq, &tdk, &tdv}) {
    if (Status s = check_layout(*t, t != &tdo); !s) return s;
    if (t->rows > 0 && !api::inside_allocation(t->data, size_t(t->span()) * 2))
      return invalid(std::string(t->name) + " does not lie inside one device allocation");
  }
  // The backward also reads Q and dO with buffer loads (32-bit offsets).
  const Tensor tq{"Q", p.q, r.batch, r.rows_q, p.heads_q, d, r.resolved(p.q_strides, r.rows_q, p.heads_q, d)};
  for (const Tensor* t : {&tq, &tdo})
    if (r.longest_q > 0 && ((r.longest_q - 1) * t->s.row + t->dim) * 2 >= (1l << 31))
      return invalid(std::string(t->name) + ": one head of one sequence must span less than 2 GiB");
  const long delta_elems = r.batch * p.heads_q * r.rows_q;  // laid out like LSE
  const size_t delta_bytes = size_t(delta_elems) * sizeof(float);
  float* delta = static_cast<float*>(p.workspace);
  if (delta) {
    if (p.workspace_bytes < delta_bytes)
      return invalid("the workspace holds " + std::to_string(p.workspace_bytes) + " bytes, the problem needs " +
                     std::to_string(delta_bytes) + " (attention_backward_workspace_bytes)");
    if (reinterpret_cast<uintptr_t>(delta) % alignof(float)) return invalid("the workspace must be 4-byte aligned");
    if (delta_bytes && !api::inside_allocation(delta, delta_bytes))
      return invalid("the workspace does not lie inside one device allocation");
  } else if (delta_bytes) {
    if (!own_delta) return needs_workspace = true, Status{};
    delta = own_delta;
  }
  // Outputs alias nothing else the kernels touch (the byte ranges each spans).
  auto span = [](const Tensor& t) { return checks::Span{t.data, t.rows > 0 ? size_t(t.span()) * 2 : 0, t.name}; };
  const Tensor tk{"K", p.k, r.batch, r.rows_k, p.heads_kv, d, r.resolved(p.k_strides, r.rows_k, p.heads_kv, d)};
  const Tensor tv{"V", p.v, r.batch, r.rows_k, p.heads_kv, dv, r.resolved(p.v_strides, r.rows_k, p.heads_kv, dv)};
  const Tensor to{"O", p.o, r.batch, r.rows_q, p.heads_q, dv, r.resolved(p.o_strides, r.rows_q, p.heads_q, dv)};
  if (p.dsinks) {
    if (!p.sinks) return invalid("dsinks is the sinks' gradient: it needs sinks");
    if (reinterpret_cast<uintptr_t>(p.dsinks) % alignof(float) ||
        !api::inside_allocation(p.dsinks, size_t(p.heads_q) * sizeof(float)))
      return invalid("dsinks must be heads_q 4-byte aligned fp32 values inside one device allocation");
  }
  const size_t sink_bytes = size_t(p.heads_q) * sizeof(float);
  const checks::Span outs[] = {span(tdq), span(tdk), span(tdv), {delta, delta_bytes, "the workspace"},
                               {p.dsinks, p.dsinks ? sink_bytes : 0, "dsinks"}};
  const checks::Span ins[] = {span(tq), span(tk), span(tv), span(to), span(tdo), {p.lse, delta_bytes, "LSE"},
                              {p.sinks, p.sinks ? sink_bytes : 0, "sinks"}};
  if (std::string clash = checks::first_overlap(outs, ins); !clash.empty()) return invalid(clash);

  kernels::AttnBwdArgs a{};
  a.f = r.a;
  a.dout = p.dout, a.dq = p.dq, a.dk = p.dk, a.dv = p.dv, a.delta = delta, a.dsinks = p.dsinks;
  a.do_bs = tdo.s.batch, a.do_rs = tdo.s.row, a.do_hs = tdo.s.head;
  a.dq_bs = tdq.s.batch, a.dq_rs = tdq.s.row, a.dq_hs = tdq.s.head;
  a.dk_bs = tdk.s.batch, a.dk_rs = tdk.s.row, a.dk_hs = tdk.s.head;
  a.dv_bs = tdv.s.batch, a.dv_rs = tdv.s.row, a.dv_hs = tdv.s.head;
  int k_tiles[3];  // by the dK, dV kernel's shape (check_arch, attn_bwd_dkdv_class)
  for (int c : {0, 1, 2}) k_tiles[c] = int((r.longest_k + r.bwd_block_keys[c] - 1) / r.bwd_block_keys[c]);
  int dq_tiles[2];  // by the dQ kernel's shape (check_arch)
  for (int plain : {0, 1}) dq_tiles[plain] = int((r.longest_q + r.bwd_dq_rows[plain] - 1) / r.bwd_dq_rows[plain]);
  const long q_blocks = long(p.batch) * p.heads_q * a.f.q_tiles, k_blocks = long(p.batch) * p.heads_kv * k_tiles[0];
  if (q_blocks >= (1l << 31) || k_blocks >= (1l << 31)) return invalid("too many tiles for one launch (>= 2^31)");
  if (q_blocks == 0 && k_blocks == 0 && !p.dsinks) return {};
  (void)hipGetLastError();  // launch errors below are ours alone
  dispatch(p, [&](auto t, auto dims, auto v) {
    launch_backward<decltype(t), decltype(dims)::value.d, decltype(dims)::value.dv, decltype(v)::value>(a, unsigned(q_blocks), k_tiles, dq_tiles, r.bwd_dq_waves,
                                                                           r.bwd_dkdv_waves, steps, p.stream);
  });
  if (hipError_t e = hipGetLastError(); e != hipSuccess) return error(e, std::string("launch failed: ") + hipGetErrorString(e));
  return {};
}

}  // namespace

Status attention_backward(const AttentionBackwardProblem& p) {
  entry = "hk::attention_backward";
  bool needs_workspace = false;
  if (Status s = backward(p, nullptr, needs_workspace); !s || !needs_workspace) return s;
  // No workspace given: one of our own for this call.
  return checks::with_own_workspace(entry, attention_backward_workspace_bytes(p), p.stream,
                                    [&](void* own) { return backward(p, static_cast<float*>(own), needs_workspace); });
}

Status attention_backward_steps(const AttentionBackwardProblem& p, unsigned steps) {
  entry = "hk::attention_backward_steps";
  bool needs_workspace = false;
  if (Status s = backward(p, nullptr, needs_workspace, steps); !s) return s;
  if (needs_workspace) return invalid("the steps share their workspace: pass one");
  return {};
}

size_t attention_backward_workspace_bytes(const AttentionBackwardProblem& p) {
  long rows = long(p.batch) * p.seqlen_q;  // an upper bound of total_q for varlen too (seqlen_q: the longest)
  if (p.cu_seqlens_q && p.batch > 0) {
    int total = 0;
    if (hipMemcpy(&total, p.cu_seqlens_q + p.batch, sizeof(int), hipMemcpyDeviceToHost) == hipSuccess) rows = total;
  }
  return size_t(std::max(0l, rows)) * size_t(std::max(0, p.heads_q)) * sizeof(float);
}

}  // namespace hk
