// hk::gemm_int8: argument validation and the launch of the fp8 kernels' int8 form (gemm_int8_kernel.h): the 8-wave
// ping-pong kernel fed straight into LDS by the DMA where A and B allow it, the 4-wave kernel through registers
// elsewhere.
#include "gemm_int8.h"

#include "gemm.h"
#include "gemm_fp8.h"
#include "gemm_pingpong.h"
#include "gemm_int8_kernel.h"
#include "hk/arch/target.h"
#include "hk/ops/async.h"

namespace hk {

namespace {

constexpr const char* entry = "hk::gemm_int8";

Status error(hipError_t code, const std::string& message) { return api::error(entry, code, message); }

template <class TOut>
void launch(const GemmInt8Problem& p, const kernels::GemmArgs& base, bool dma) {
  using T = fp8e4m3;  // the bytes' container: the kernels move and multiply them as int8
  using Form = kernels::GemmInt8Form<TOut>;
  using C = std::conditional_t<std::same_as<TOut, int>, float, TOut>;  // an int32 C is written as its 32-bit words
  typename Form::Args args;
  static_cast<kernels::GemmArgs&>(args) = base;
  args.row_scale = p.row_scale, args.col_scale = p.col_scale;
  auto tiles = [&](int t) { return unsigned(((p.m + t - 1) / t) * ((p.n + t - 1) / t)); };
  if (dma) hipLaunchKernelGGL((kernels::gemm_pingpong<T, C, true, 256, Form>), dim3(tiles(gemm_pingpong_tile)), dim3(512), 0, p.stream, args);
  else hipLaunchKernelGGL((kernels::gemm_fp8<T, C, true, false, false, Form>), dim3(tiles(gemm_fp8_tile)), dim3(256), 0, p.stream, args);
}

Status validate(const GemmInt8Problem& p) {
  using O = GemmInt8Problem::Output;
  if (p.m <= 0 || p.n <= 0 || p.k <= 0)
    return error(hipErrorInvalidValue, "m, n and k must be positive (got " + std::to_string(p.m) + ", " +
                                           std::to_string(p.n) + ", " + std::to_string(p.k) + ")");
  if (!p.a || !p.b || !p.c) return error(hipErrorInvalidValue, std::string("null pointer for ") + (!p.a ? "A" : !p.b ? "B" : "C"));
  if (p.c_type != O::int32 && p.c_type != O::bf16 && p.c_type != O::fp32)
    return error(hipErrorInvalidValue, "C must be int32, bf16 or fp32");
  if (p.c_type == O::int32 && (p.row_scale || p.col_scale))
    return error(hipErrorInvalidValue, "row and column scales need a bf16 or fp32 C (an int32 C is the exact sum)");
  if (p.lda < p.k || p.lda % 4) return error(hipErrorInvalidValue, "lda (" + std::to_string(p.lda) + ") must be at least k and a multiple of 4");
  if (p.ldb < p.k || p.ldb % 4) return error(hipErrorInvalidValue, "ldb (" + std::to_string(p.ldb) + ") must be at least k and a multiple of 4");
  if (p.ldc < p.n) return error(hipErrorInvalidValue, "ldc (" + std::to_string(p.ldc) + ") is less than n");
  if (reinterpret_cast<uintptr_t>(p.a) % 4 || reinterpret_cast<uintptr_t>(p.b) % 4)
    return error(hipErrorInvalidValue, "A and B must be aligned to 4 bytes");
  const size_t out = p.c_type == O::bf16 ? 2 : 4;
  if (reinterpret_cast<uintptr_t>(p.c) % out) return error(hipErrorInvalidValue, "C is not aligned to its element size");
  if (reinterpret_cast<uintptr_t>(p.row_scale) % 4 || reinterpret_cast<uintptr_t>(p.col_scale) % 4)
    return error(hipErrorInvalidValue, "the scales must be aligned to 4 bytes");
  return {};
}

}  // namespace

Status gemm_int8(const GemmInt8Problem& p) {
  using O = GemmInt8Problem::Output;
  if (Status s = validate(p); !s) return s;
  Status status;
  const arch::target* target = api::current_target(entry, status);
  if (!target) return status;
  const size_t out = p.c_type == O::bf16 ? 2 : 4;
  if (!api::inside_allocation(p.a, api::matrix_bytes(p.m, p.k, p.lda, 1)))
    return error(hipErrorInvalidValue, "A does not lie inside one device allocation");
  if (!api::inside_allocation(p.b, api::matrix_bytes(p.n, p.k, p.ldb, 1)))
    return error(hipErrorInvalidValue, "B does not lie inside one device allocation");
  if (!api::inside_allocation(p.c, api::matrix_bytes(p.m, p.n, p.ldc, out)))
    return error(hipErrorInvalidValue, "C does not lie inside one device allocation");
  if (p.row_scale && !api::inside_allocation(p.row_scale, size_t(p.m) * 4))
    return error(hipErrorInvalidValue, "row_scale does not lie inside one device allocation");
  if (p.col_scale && !api::inside_allocation(p.col_scale, size_t(p.n) * 4))
    return error(hipErrorInvalidValue, "col_scale does not lie inside one device allocation");
  using T = fp8e4m3;
  T* a = reinterpret_cast<T*>(const_cast<int8_t*>(p.a));
  T* b = reinterpret_cast<T*>(const_cast<int8_t*>(p.b));
  const bool dma = async_loadable(gl<T, 1, 1>(a, 1, 1, p.m, p.k, p.lda), target->lds_dma_bytes) &&
                   async_loadable(gl<T, 1, 1>(b, 1, 1, p.n, p.k, p.ldb), target->lds_dma_bytes);
  const kernels::GemmArgs base{p.m, p.n, p.k, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, 1.f, 0.f};
  (void)hipGetLastError();
  if (p.c_type == O::int32) launch<int>(p, base, dma);
  else if (p.c_type == O::bf16) launch<bf16>(p, base, dma);
  else launch<float>(p, base, dma);
  if (hipError_t e = hipGetLastError(); e != hipSuccess) return error(e, std::string("launch failed: ") + hipGetErrorString(e));
  return {};
}

}  // namespace hk
