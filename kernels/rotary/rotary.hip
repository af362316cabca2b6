// hk::rotary: argument validation and dispatch to the kernel instance for the tensors' and tables' types.
#include "rotary.h"

#include <algorithm>
#include <cmath>

#include "common/checks.h"
#include "rotary_kernel.h"

namespace hk {

namespace {

using checks::size_of;

Status error(std::string message) { return {hipErrorInvalidValue, "hk::rotary: " + std::move(message)}; }

checks::Strided<3> in_layout(const RotaryProblem& p, const RotaryTensor& t) {
  return {{p.batch, p.seqlen, t.heads}, {t.in_stride_b, t.in_stride_s, t.in_stride_h}, p.head_dim};
}
checks::Strided<3> out_layout(const RotaryProblem& p, const RotaryTensor& t) {
  return {{p.batch, p.seqlen, t.heads}, {t.out_stride_b, t.out_stride_s, t.out_stride_h}, p.head_dim};
}

Status check_tensor(const RotaryProblem& p, const RotaryTensor& t, const char* name) {
  const std::string n = name;
  if (!t.in || !t.out) return error("null pointer for " + n + (t.in ? ".out" : ".in"));
  if (t.heads <= 0) return error(n + ".heads must be positive (got " + std::to_string(t.heads) + ")");
  for (long s : {t.in_stride_b, t.in_stride_s, t.in_stride_h, t.out_stride_b, t.out_stride_s, t.out_stride_h})
    if (s < 0) return error(n + ": strides must not be negative");
  const size_t elem = size_of(p.type);
  if (!checks::aligned(t.in, elem) || !checks::aligned(t.out, elem))
    return error(n + " is not aligned to its element size");
  const auto in = in_layout(p, t), out = out_layout(p, t);
  if (!out.rows_disjoint()) return error(n + ".out strides make (batch, seqlen, head) rows overlap");
  const bool in_place = t.in == t.out;
  if (in_place && (t.in_stride_b != t.out_stride_b || t.in_stride_s != t.out_stride_s || t.in_stride_h != t.out_stride_h))
    return error(n + " in place needs the same strides for in and out");
  if (!checks::inside_allocation(t.in, in.span() * elem)) return error(n + ".in does not lie inside one device allocation");
  if (!checks::inside_allocation(t.out, out.span() * elem)) return error(n + ".out does not lie inside one device allocation");
  if (!in_place && checks::overlap(t.in, in.span() * elem, t.out, out.span() * elem))
    return error(n + ".in and " + n + ".out overlap without being the same tensor");
  return {};
}

Status validate(const RotaryProblem& p, int rotary_dim) {
  if (p.batch <= 0 || p.seqlen <= 0 || p.head_dim <= 0)
    return error("batch, seqlen and head_dim must be positive (got " + std::to_string(p.batch) + ", " +
                 std::to_string(p.seqlen) + ", " + std::to_string(p.head_dim) + ")");
  if (long(p.batch) * p.seqlen > 0x7fffffffl) return error("batch * seqlen must be below 2^31 (token indices are 32-bit)");
  if (rotary_dim < 2 || rotary_dim % 2 || rotary_dim > p.head_dim || rotary_dim > rotary_max_dim)
    return error("rotary_dim must be even, at least 2 and at most head_dim and " + std::to_string(rotary_max_dim) +
                 " (got " + std::to_string(rotary_dim) + " with head_dim " + std::to_string(p.head_dim) + ")");
  if (!checks::is_float_type(p.type)) return error(std::string("q and k must be bf16, f16 or fp32, not ") + to_string(p.type));
  if (Status s = check_tensor(p, p.q, "q"); !s) return s;
  if (p.k.in || p.k.out) {
    if (Status s = check_tensor(p, p.k, "k"); !s) return s;
    const size_t elem = size_of(p.type);
    if (checks::overlap(p.q.out, out_layout(p, p.q).span() * elem, p.k.out, out_layout(p, p.k).span() * elem))
      return error("q.out and k.out overlap");
  }
  if (p.position_offset < 0) return error("position_offset must not be negative");
  const bool tables = p.cos || p.sin;
  if (tables == (p.base != 0.f)) return error("give either cos and sin tables or a base, not both or neither");
  if (tables) {
    if (!p.cos || !p.sin) return error(std::string("null pointer for ") + (p.cos ? "sin" : "cos"));
    if (p.table_type != scalar_type::fp32 && p.table_type != scalar_type::bf16)
      return error(std::string("cos and sin tables must be fp32 or bf16, not ") + to_string(p.table_type));
    if (p.positions) return error("positions need computed angles (a base); tables are indexed by position_offset + s");
    if (p.table_stride < rotary_dim / 2)
      return error("table_stride (" + std::to_string(p.table_stride) + ") is less than rotary_dim / 2");
    if (p.table_rows < p.position_offset + p.seqlen)
      return error("the tables hold " + std::to_string(p.table_rows) + " positions, fewer than position_offset + seqlen (" +
                   std::to_string(p.position_offset + p.seqlen) + ")");
    const size_t elem = size_of(p.table_type), bytes = (size_t(p.table_rows - 1) * p.table_stride + rotary_dim / 2) * elem;
    if (!checks::aligned(p.cos, elem) || !checks::aligned(p.sin, elem)) return error("cos and sin must be aligned to their element size");
    if (!checks::inside_allocation(p.cos, bytes) || !checks::inside_allocation(p.sin, bytes))
      return error("cos and sin tables do not lie inside device allocations");
  } else {
    if (!(p.base > 0.f) || !std::isfinite(p.base)) return error("base must be positive and finite");
    if (p.positions) {
      if (!checks::aligned(p.positions, 4)) return error("positions must be 4-byte aligned");
      if (!checks::inside_allocation(p.positions, size_t(p.batch) * p.seqlen * 4))
        return error("positions (batch x seqlen int32) do not lie inside one device allocation");
    } else if (p.position_offset + p.seqlen > (1l << 24)) {
      return error("positions must stay below 2^24 (exact in fp32)");
    }
  }
  return {};
}

kernels::RotaryTensorArgs args_of(const RotaryTensor& t) {
  return {t.in, t.out, t.heads, t.in_stride_b, t.in_stride_s, t.in_stride_h, t.out_stride_b, t.out_stride_s, t.out_stride_h};
}

// Whether every row of both tensors (and the pointers) allows P-element vector accesses.
bool vector_rows(const RotaryProblem& p, int P) {
  const size_t bytes = size_t(P) * size_of(p.type);
  for (const RotaryTensor* t : {&p.q, &p.k}) {
    if (!t->in) continue;
    if (!checks::aligned(t->in, bytes) || !checks::aligned(t->out, bytes)) return false;
    for (long s : {t->in_stride_b, t->in_stride_s, t->in_stride_h, t->out_stride_b, t->out_stride_s, t->out_stride_h})
      if (s % P) return false;
  }
  return true;
}

template <class T, int P, bool Vec>
void launch_with(const RotaryProblem& p, const kernels::RotaryArgs& a) {
  const dim3 grid{unsigned((a.tokens + a.block_tokens - 1) / a.block_tokens)}, block{kernels::rotary_threads};
  const size_t lds = kernels::rotary_shared_bytes(a.block_tokens, a.rotary_dim);
  if (p.cos && p.table_type == scalar_type::bf16) hipLaunchKernelGGL((kernels::rotary<T, bf16, P, Vec>), grid, block, lds, p.stream, a);
  else if (p.cos) hipLaunchKernelGGL((kernels::rotary<T, float, P, Vec>), grid, block, lds, p.stream, a);
  else hipLaunchKernelGGL((kernels::rotary<T, void, P, Vec>), grid, block, lds, p.stream, a);
}

// Items of P pairs as 16-byte accesses where the shape and strides allow, else element by element; tokens per
// workgroup so that each thread has about two items (rotary_kernel.h).
template <class T>
void launch(const RotaryProblem& p, kernels::RotaryArgs& a) {
  constexpr int P = 16 / sizeof(T);
  const int half = a.rotary_dim / 2;
  const bool vec = half % P == 0 && vector_rows(p, P);
  const long items = long(p.q.heads + (p.k.in ? p.k.heads : 0)) * (vec ? half / P : half);
  a.block_tokens = int(std::clamp<long>((2 * kernels::rotary_threads + items - 1) / items, 1, kernels::rotary_max_tokens));
  if (vec) launch_with<T, P, true>(p, a);
  else launch_with<T, 1, false>(p, a);
}

Status run(const RotaryProblem& p, float sign) {
  const int rotary_dim = p.rotary_dim ? p.rotary_dim : p.head_dim;
  if (Status s = validate(p, rotary_dim); !s) return s;
  kernels::RotaryArgs a{};
  a.tokens = long(p.batch) * p.seqlen;
  a.seqlen = p.seqlen, a.head_dim = p.head_dim, a.rotary_dim = rotary_dim;
  a.q = args_of(p.q), a.k = args_of(p.k);
  if (!p.k.in) a.k.in = nullptr;
  a.interleaved = p.interleaved, a.sign = sign;
  a.cos = p.cos, a.sin = p.sin, a.table_stride = p.table_stride;
  a.log2_base = p.base > 0.f ? std::log2(p.base) : 0.f;
  a.positions = p.positions, a.position_offset = p.position_offset;
  (void)hipGetLastError();  // launch errors below are ours alone
  if (p.type == scalar_type::bf16) launch<bf16>(p, a);
  else if (p.type == scalar_type::f16) launch<half>(p, a);
  else launch<float>(p, a);
  if (hipError_t e = hipGetLastError(); e != hipSuccess)
    return {e, std::string("hk::rotary: launch failed: ") + hipGetErrorString(e)};
  return {};
}

}  // namespace

Status rotary(const RotaryProblem& p) { return run(p, 1.f); }
Status rotary_backward(const RotaryProblem& p) { return run(p, -1.f); }

}  // namespace hk
