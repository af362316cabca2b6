// Host-side argument checks shared by the entry points of the memory-bound kernels and attention: element sizes,
// whether a strided tensor lies inside one device allocation, whether its rows can overlap; and a workspace of the
// call's own where its caller gave none.
#pragma once
#include <hip/hip_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

#include "api.h"

namespace hk::checks {

// A call that needs a workspace its caller did not give: `run(pointer)` with one of our own of `bytes`, freed once the
// stream has run its kernels (so the call waits for the stream).
template <class F>
Status with_own_workspace(const char* entry, size_t bytes, hipStream_t stream, F&& run) {
  void* own = nullptr;
  if (hipError_t e = hipMalloc(&own, bytes); e != hipSuccess)
    return api::error(entry, e, "allocating the " + std::to_string(bytes) + "-byte workspace: " + hipGetErrorString(e));
  Status s = run(own);
  if (s)
    if (hipError_t e = hipStreamSynchronize(stream); e != hipSuccess)
      s = api::error(entry, e, std::string("running: ") + hipGetErrorString(e));
  (void)hipFree(own);
  return s;
}

using api::inside_allocation;
using hk::size_of;
inline bool is_float_type(scalar_type t) { return t == scalar_type::bf16 || t == scalar_type::f16 || t == scalar_type::fp32; }
inline bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// A tensor of `inner` contiguous elements per row, rows at the given (extent, stride) pairs (strides in elements).
template <size_t N>
struct Strided {
  std::array<long, N> extent, stride;
  long inner;
  long span() const {  // elements from the first to one past the last
    long last = 0;
    for (size_t i = 0; i < N; ++i) last += (extent[i] - 1) * stride[i];
    return last + inner;
  }
  // Distinct rows never share an element: ordered by stride, each dimension steps past everything the ones inside
  // it cover (dimensions of extent 1 take no part).
  bool rows_disjoint() const {
    std::array<size_t, N> order;
    for (size_t i = 0; i < N; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return stride[a] < stride[b]; });
    long covered = inner;
    for (size_t i : order) {
      if (extent[i] <= 1) continue;  // a dimension of one or no rows steps over nothing
      if (stride[i] < covered) return false;
      covered = stride[i] * (extent[i] - 1) + covered;
    }
    return true;
  }
};

// Whether the byte ranges [a, a + a_bytes) and [b, b + b_bytes) share a byte.
inline bool overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const char *x = static_cast<const char*>(a), *y = static_cast<const char*>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

// A named byte range of an argument ([ptr, ptr + bytes); null ptr: the argument is absent).
struct Span {
  const void* ptr;
  size_t bytes;
  const char* name;
};

// "A overlaps B" for the first output that shares a byte with an input or with another output; empty if none does.
// Outputs are written in any order by many threads, so none may alias anything else the kernel touches.
template <size_t NO, size_t NI>
std::string first_overlap(const Span (&outs)[NO], const Span (&ins)[NI]) {
  for (size_t i = 0; i < NO; ++i) {
    if (!outs[i].ptr) continue;
    for (const Span& in : ins)
      if (in.ptr && overlap(outs[i].ptr, outs[i].bytes, in.ptr, in.bytes)) return std::string(outs[i].name) + " overlaps " + in.name;
    for (size_t j = i + 1; j < NO; ++j)
      if (outs[j].ptr && overlap(outs[i].ptr, outs[i].bytes, outs[j].ptr, outs[j].bytes))
        return std::string(outs[i].name) + " overlaps " + outs[j].name;
  }
  return {};
}

}  // namespace hk::checks
