// hk::gemm_mx: argument validation and dispatch to the kernel instance for A's and B's formats.
#include "gemm_mx.h"

#include <utility>

#include "gemm.h"
#include "gemm_fp8.h"
#include "gemm_pingpong.h"
#include "gemm_mx_kernel.h"
#include "hk/arch/target.h"
#include "hk/ops/async.h"

namespace hk {

const char* to_string(mx_format f) {
  switch (f) {
    case mx_format::e4m3: return "e4m3";
    case mx_format::e5m2: return "e5m2";
    case mx_format::e2m3: return "e2m3";
    case mx_format::e3m2: return "e3m2";
    case mx_format::e2m1: return "e2m1";
  }
  return "?";
}
int bits_of(mx_format f) { return kernels::mx_bits(int(f)); }

namespace {

constexpr const char* entry = "hk::gemm_mx";

Status error(hipError_t code, const std::string& message) { return api::error(entry, code, message); }

bool known(mx_format f) { return int(f) >= 0 && int(f) <= 4; }

Status validate(const GemmMxProblem& p) {
  if (p.m <= 0 || p.n <= 0 || p.k <= 0)
    return error(hipErrorInvalidValue, "m, n and k must be positive (got " + std::to_string(p.m) + ", " +
                                           std::to_string(p.n) + ", " + std::to_string(p.k) + ")");
  if (p.k % 32)
    return error(hipErrorInvalidValue, "k (" + std::to_string(p.k) + ") must be a multiple of 32, the MX block size");
  if (!p.a || !p.b || !p.c || !p.scale_a || !p.scale_b)
    return error(hipErrorInvalidValue, std::string("null pointer for ") +
                                           (!p.a ? "A" : !p.b ? "B" : !p.c ? "C" : !p.scale_a ? "scale_a" : "scale_b"));
  if (!known(p.a_format) || !known(p.b_format))
    return error(hipErrorInvalidValue, "A and B must each be e4m3, e5m2, e2m3, e3m2 or e2m1");
  if (p.c_type != scalar_type::fp32 && p.c_type != scalar_type::bf16 && p.c_type != scalar_type::f16)
    return error(hipErrorInvalidValue, std::string("C must be fp32, bf16 or f16, not ") + to_string(p.c_type));
  if (p.lda < p.k || p.lda % 32) return error(hipErrorInvalidValue, "lda (" + std::to_string(p.lda) + ") must be at least k and a multiple of 32");
  if (p.ldb < p.k || p.ldb % 32) return error(hipErrorInvalidValue, "ldb (" + std::to_string(p.ldb) + ") must be at least k and a multiple of 32");
  if (p.ld_scale_a < p.k / 32 || p.ld_scale_b < p.k / 32)
    return error(hipErrorInvalidValue, "ld_scale_a and ld_scale_b must be at least k / 32 (" + std::to_string(p.k / 32) + ")");
  if (p.ldc < p.n) return error(hipErrorInvalidValue, "ldc (" + std::to_string(p.ldc) + ") is less than n");
  if (long(p.m) * p.ld_scale_a >= (1l << 32) || long(p.n) * p.ld_scale_b >= (1l << 32))
    return error(hipErrorInvalidValue, "scale_a and scale_b must each span under 4 GiB (the kernels address them with 32-bit offsets)");
  if (reinterpret_cast<uintptr_t>(p.a) % 4 || reinterpret_cast<uintptr_t>(p.b) % 4)
    return error(hipErrorInvalidValue, "A and B must be aligned to 4 bytes");
  if (reinterpret_cast<uintptr_t>(p.c) % size_of(p.c_type)) return error(hipErrorInvalidValue, "C is not aligned to its element size");
  return {};
}

// Both operands 8-bit, or both e2m1: the MX form of the 4-wave fp8 kernel (gemm_mx_kernel.h), LDS DMA feed where A
// and B allow it; those and both fp6 the 8-wave ping-pong kernel where K is whole steps and the DMA feeds the
// operands and the scales. One instance per format pair: C's type is a runtime argument of the epilogue.
template <int FA, int FB>
constexpr bool on_fp8_kernel = kernels::mx_bits(FA) == kernels::mx_bits(FB) && (kernels::mx_bits(FA) == 8 || FA == 4);
template <int FA, int FB>
constexpr bool on_pingpong = kernels::mx_bits(FA) == kernels::mx_bits(FB);

// The kernel's arguments with K and the leading dimensions in elements of T, from the bytes of a row (fp6 rows: the
// stages' 128 bytes per 128 k, the leading dimension in the memory's bytes / 2).
template <class T>
kernels::GemmMxFormArgs form_args(const GemmMxProblem& p, const kernels::GemmMxArgs& a, long k_bytes) {
  kernels::GemmMxFormArgs args;
  const long lda = a.lda_bytes / long(sizeof(T)), ldb = a.ldb_bytes / long(sizeof(T));
  static_cast<kernels::GemmArgs&>(args) = {p.m, p.n, int(k_bytes / long(sizeof(T))), p.a, lda, p.b, ldb, p.c, p.ldc, p.alpha, p.beta};
  args.scale_a8 = a.scale_a, args.ld_scale_a8 = a.ld_scale_a, args.scale_b8 = a.scale_b, args.ld_scale_b8 = a.ld_scale_b;
  args.blocks = p.k / 32, args.c_type = a.c_type;
  return args;
}

// The ping-pong kernel where it takes the problem (see on_pingpong); false where it does not.
template <int FA, int FB>
bool launch_pingpong(const GemmMxProblem& p, const kernels::GemmMxArgs& a, int dma_bytes) {
  constexpr int bits = kernels::mx_bits(FA);
  // K whole steps of 128 bytes of the stages' rows (the form has no partial blocks: 128 k of 8-bit or fp6, 256 of
  // e2m1), rows and bases aligned to the DMA's 16 bytes, the scales' rows dword-aligned and every buffer under 2^31
  // bytes (the 32-bit ranges).
  const int step_k = bits == 4 ? 256 : 128;
  const bool fits = p.k % step_k == 0 && a.lda_bytes % dma_bytes == 0 && a.ldb_bytes % dma_bytes == 0 &&
                    reinterpret_cast<uintptr_t>(p.a) % dma_bytes == 0 && reinterpret_cast<uintptr_t>(p.b) % dma_bytes == 0 &&
                    long(p.m) * a.lda_bytes < (1l << 31) && long(p.n) * a.ldb_bytes < (1l << 31) &&
                    reinterpret_cast<uintptr_t>(a.scale_a) % 4 == 0 && reinterpret_cast<uintptr_t>(a.scale_b) % 4 == 0 &&
                    a.ld_scale_a % 4 == 0 && a.ld_scale_b % 4 == 0 && long(p.m) * a.ld_scale_a < (1l << 31) &&
                    long(p.n) * a.ld_scale_b < (1l << 31);
  if (!fits) return false;
  const auto args = form_args<bf16>(p, a, long(p.k) * (bits == 4 ? 4 : 8) / 8);
  const dim3 tiles{unsigned(((p.m + gemm_pingpong_tile - 1) / gemm_pingpong_tile) * ((p.n + gemm_pingpong_tile - 1) / gemm_pingpong_tile)), 1, 1};
  hipLaunchKernelGGL((kernels::gemm_pingpong<bf16, float, true, 256, kernels::GemmMxStagedForm<FA, FB>>), tiles, dim3(512), 0, p.stream, args);
  return true;
}

template <int FA, int FB>
void launch_form(const GemmMxProblem& p, const kernels::GemmMxArgs& a, int dma_bytes) {
  // The bytes' container: 16-bit elements for 8-bit formats (their swizzle serves the form's reads), fp8 for e2m1.
  using T = std::conditional_t<kernels::mx_bits(FA) == 8, bf16, fp8e4m3>;
  using Form = kernels::GemmMxForm<FA, FB>;
  const auto args = form_args<T>(p, a, long(p.k) * kernels::mx_bits(FA) / 8);
  T* pa = static_cast<T*>(const_cast<void*>(p.a));
  T* pb = static_cast<T*>(const_cast<void*>(p.b));
  const bool dma = async_loadable(gl<T, 1, 1>(pa, 1, 1, p.m, args.k, args.lda), dma_bytes) &&
                   async_loadable(gl<T, 1, 1>(pb, 1, 1, p.n, args.k, args.ldb), dma_bytes);
  const dim3 grid{unsigned(((p.m + gemm_fp8_tile - 1) / gemm_fp8_tile) * ((p.n + gemm_fp8_tile - 1) / gemm_fp8_tile)), 1, 1};
  if (dma) hipLaunchKernelGGL((kernels::gemm_fp8<T, float, true, true, false, Form>), grid, dim3(256), 0, p.stream, args);
  else hipLaunchKernelGGL((kernels::gemm_fp8<T, float, true, false, false, Form>), grid, dim3(256), 0, p.stream, args);
}

template <int FA, int FB>
void launch(const GemmMxProblem& p, const kernels::GemmMxArgs& args, int dma_bytes) {
  if constexpr (on_pingpong<FA, FB>) {
    if (launch_pingpong<FA, FB>(p, args, dma_bytes)) return;
  }
  if constexpr (on_fp8_kernel<FA, FB>) {
    launch_form<FA, FB>(p, args, dma_bytes);
  } else {
    const dim3 grid{unsigned(((p.m + gemm_mx_tile - 1) / gemm_mx_tile) * ((p.n + gemm_mx_tile - 1) / gemm_mx_tile)), 1, 1};
    hipLaunchKernelGGL((kernels::gemm_mx<FA, FB>), grid, dim3(256), 0, p.stream, args);
  }
}

// The instance for (A's format, B's format), both runtime values, out of the 25.
template <int FA, int... F>
void dispatch_b(const GemmMxProblem& p, const kernels::GemmMxArgs& args, int dma_bytes, std::integer_sequence<int, F...>) {
  ((int(p.b_format) == F ? launch<FA, F>(p, args, dma_bytes) : void()), ...);
}
template <int... F>
void dispatch(const GemmMxProblem& p, const kernels::GemmMxArgs& args, int dma_bytes, std::integer_sequence<int, F...> formats) {
  ((int(p.a_format) == F ? dispatch_b<F>(p, args, dma_bytes, formats) : void()), ...);
}

}  // namespace

Status gemm_mx(const GemmMxProblem& p) {
  if (Status s = validate(p); !s) return s;
  Status status;
  const arch::target* target = api::current_target(entry, status);
  if (!target) return status;
  if (target->id != arch::target_id::gfx950)
    return error(hipErrorInvalidDeviceFunction, std::string("the MX formats need gfx950's scaled MFMA; this device is ") + target->name);
  const long lda_bytes = p.lda * bits_of(p.a_format) / 8, ldb_bytes = p.ldb * bits_of(p.b_format) / 8;
  if (!api::inside_allocation(p.a, api::matrix_bytes(p.m, long(p.k) * bits_of(p.a_format) / 8, lda_bytes, 1)))
    return error(hipErrorInvalidValue, "A does not lie inside one device allocation");
  if (!api::inside_allocation(p.b, api::matrix_bytes(p.n, long(p.k) * bits_of(p.b_format) / 8, ldb_bytes, 1)))
    return error(hipErrorInvalidValue, "B does not lie inside one device allocation");
  if (!api::inside_allocation(p.scale_a, api::matrix_bytes(p.m, p.k / 32, p.ld_scale_a, 1)))
    return error(hipErrorInvalidValue, "scale_a does not lie inside one device allocation");
  if (!api::inside_allocation(p.scale_b, api::matrix_bytes(p.n, p.k / 32, p.ld_scale_b, 1)))
    return error(hipErrorInvalidValue, "scale_b does not lie inside one device allocation");
  if (!api::inside_allocation(p.c, api::matrix_bytes(p.m, p.n, p.ldc, size_of(p.c_type))))
    return error(hipErrorInvalidValue, "C does not lie inside one device allocation");
  const int c_type = p.c_type == scalar_type::fp32 ? 0 : p.c_type == scalar_type::bf16 ? 1 : 2;
  const kernels::GemmMxArgs args{p.m,         p.n,       p.k,          static_cast<const uint8_t*>(p.a), lda_bytes,
                                 static_cast<const uint8_t*>(p.b), ldb_bytes, p.scale_a, p.ld_scale_a, p.scale_b,
                                 p.ld_scale_b, p.c,       p.ldc,        c_type,    p.alpha,   p.beta};
  (void)hipGetLastError();
  dispatch(p, args, target->lds_dma_bytes, std::make_integer_sequence<int, 5>{});
  if (hipError_t e = hipGetLastError(); e != hipSuccess) return error(e, std::string("launch failed: ") + hipGetErrorString(e));
  return {};
}

}  // namespace hk
