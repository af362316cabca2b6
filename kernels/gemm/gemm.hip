// hk::gemm: argument validation and dispatch to the kernel instance for the element types and B's orientation.
#include "gemm.h"

#include <cstring>

#include "gemm_fp8.h"
#include "gemm_kernel.h"
#include "gemm_pipelined.h"

namespace hk {

namespace {

Status error(hipError_t code, std::string message) { return {code, "hk::gemm: " + std::move(message)}; }

size_t size_of(dtype t) { return t == dtype::fp32 ? 4 : t == dtype::bf16 || t == dtype::f16 ? 2 : 1; }

// The problem's own checks, independent of the device.
Status validate(const GemmProblem& p) {
  if (p.m <= 0 || p.n <= 0 || p.k <= 0)
    return error(hipErrorInvalidValue, "m, n and k must be positive (got " + std::to_string(p.m) + ", " +
                                           std::to_string(p.n) + ", " + std::to_string(p.k) + ")");
  if (!p.a || !p.b || !p.c) return error(hipErrorInvalidValue, std::string("null pointer for ") + (!p.a ? "A" : !p.b ? "B" : "C"));
  if (p.ab_type != dtype::bf16 && p.ab_type != dtype::f16 && p.ab_type != dtype::fp8_e4m3 && p.ab_type != dtype::fp8_e5m2)
    return error(hipErrorInvalidValue, std::string("A and B must be bf16 or f16 (or both fp8_e4m3, or both fp8_e5m2), not ") +
                                           to_string(p.ab_type));
  if (p.c_type != dtype::fp32 && p.c_type != dtype::bf16)
    return error(hipErrorInvalidValue, std::string("C must be fp32 or bf16, not ") + to_string(p.c_type));
  const long b_cols = p.b_is_nk ? p.k : p.n;
  if (p.lda < p.k) return error(hipErrorInvalidValue, "lda (" + std::to_string(p.lda) + ") is less than k");
  if (p.ldb < b_cols)
    return error(hipErrorInvalidValue, "ldb (" + std::to_string(p.ldb) + ") is less than " + (p.b_is_nk ? "k" : "n"));
  if (p.ldc < p.n) return error(hipErrorInvalidValue, "ldc (" + std::to_string(p.ldc) + ") is less than n");
  // The kernel moves A and B in 16-byte chunks: their rows must start on 16-byte boundaries.
  const size_t in = size_of(p.ab_type);
  if (reinterpret_cast<uintptr_t>(p.a) % 16 || reinterpret_cast<uintptr_t>(p.b) % 16)
    return error(hipErrorInvalidValue, "A and B must be 16-byte aligned");
  if (p.lda * in % 16 || p.ldb * in % 16)
    return error(hipErrorInvalidValue, "lda and ldb must be multiples of " + std::to_string(16 / in) +
                                           " elements (rows start on 16-byte boundaries)");
  if (reinterpret_cast<uintptr_t>(p.c) % size_of(p.c_type))
    return error(hipErrorInvalidValue, "C is not aligned to its element size");
  return {};
}

// The device must be one the kernels are built for, and the matrices must lie inside device allocations.
// On success `dma_bytes` is the arch's LDS DMA unit.
Status check_device(const GemmProblem& p, int& dma_bytes) {
  int device = 0;
  hipDeviceProp_t prop;
  if (hipGetDevice(&device) != hipSuccess || hipGetDeviceProperties(&prop, device) != hipSuccess)
    return error(hipErrorNoDevice, "no HIP device");
  if (std::strncmp(prop.gcnArchName, "gfx942", 6) && std::strncmp(prop.gcnArchName, "gfx950", 6))
    return error(hipErrorNoBinaryForGpu, std::string("no kernel for ") + prop.gcnArchName + " (built for gfx942, gfx950)");
  dma_bytes = std::strncmp(prop.gcnArchName, "gfx950", 6) == 0 ? arch::cdna4::lds_dma_bytes : arch::cdna3::lds_dma_bytes;
  auto extent_ok = [](const void* ptr, long rows, long cols, long ld, size_t elem) {
    void* base = nullptr;
    size_t size = 0;
    if (hipMemGetAddressRange(reinterpret_cast<hipDeviceptr_t*>(&base), &size, const_cast<void*>(ptr)) != hipSuccess) {
      (void)hipGetLastError();
      return false;  // not memory the runtime allocated
    }
    const size_t need = (size_t(rows - 1) * size_t(ld) + size_t(cols)) * elem;
    return static_cast<const char*>(ptr) + need <= static_cast<const char*>(base) + size;
  };
  const size_t in = size_of(p.ab_type), out = size_of(p.c_type);
  if (!extent_ok(p.a, p.m, p.k, p.lda, in)) return error(hipErrorInvalidValue, "A does not lie inside one device allocation");
  if (!extent_ok(p.b, p.b_is_nk ? p.n : p.k, p.b_is_nk ? p.k : p.n, p.ldb, in))
    return error(hipErrorInvalidValue, "B does not lie inside one device allocation");
  if (!extent_ok(p.c, p.m, p.n, p.ldc, out)) return error(hipErrorInvalidValue, "C does not lie inside one device allocation");
  return {};
}

template <class TIn, class TOut>
void launch(const GemmProblem& p, const kernels::GemmArgs& args, bool pipelined) {
  const int tile = pipelined ? gemm_pipelined_tile : gemm_simple_tile;
  const dim3 grid{unsigned(((p.m + tile - 1) / tile) * ((p.n + tile - 1) / tile)), 1, 1};
  if (pipelined) {
    if (p.b_is_nk) hipLaunchKernelGGL((kernels::gemm_pipelined<TIn, TOut, true>), grid, dim3(512), 0, p.stream, args);
    else hipLaunchKernelGGL((kernels::gemm_pipelined<TIn, TOut, false>), grid, dim3(512), 0, p.stream, args);
  } else {
    if (p.b_is_nk) hipLaunchKernelGGL((kernels::gemm<TIn, TOut, true>), grid, dim3(256), 0, p.stream, args);
    else hipLaunchKernelGGL((kernels::gemm<TIn, TOut, false>), grid, dim3(256), 0, p.stream, args);
  }
}

// The fp8 kernel (TIn: fp8e4m3 or fp8e5m2): A and B straight into LDS where they allow it (`async`), else through
// registers.
template <class TIn, class TOut>
void launch_fp8(const GemmProblem& p, const kernels::GemmArgs& args, bool async) {
  const int tile = gemm_fp8_tile;
  const dim3 grid{unsigned(((p.m + tile - 1) / tile) * ((p.n + tile - 1) / tile)), 1, 1};
  if (async) {
    if (p.b_is_nk) hipLaunchKernelGGL((kernels::gemm_fp8<TIn, TOut, true, true>), grid, dim3(256), 0, p.stream, args);
    else hipLaunchKernelGGL((kernels::gemm_fp8<TIn, TOut, false, true>), grid, dim3(256), 0, p.stream, args);
  } else {
    if (p.b_is_nk) hipLaunchKernelGGL((kernels::gemm_fp8<TIn, TOut, true, false>), grid, dim3(256), 0, p.stream, args);
    else hipLaunchKernelGGL((kernels::gemm_fp8<TIn, TOut, false, false>), grid, dim3(256), 0, p.stream, args);
  }
}

template <class TIn>
void launch_fp8(const GemmProblem& p, const kernels::GemmArgs& args, bool async) {
  if (p.c_type == dtype::fp32) launch_fp8<TIn, float>(p, args, async);
  else launch_fp8<TIn, bf16>(p, args, async);
}

// Whether A and B can be fed straight into LDS in units of `dma` bytes.
bool pipelinable(const GemmProblem& p, int dma) {
  const long unit = dma / long(size_of(p.ab_type));
  const long b_rows = p.b_is_nk ? p.n : p.k, b_cols = p.b_is_nk ? p.k : p.n;
  auto bytes = [&](long rows, long cols, long ld) { return ((rows - 1) * ld + cols) * long(size_of(p.ab_type)); };
  return p.k % unit == 0 && b_cols % unit == 0 && p.lda % unit == 0 && p.ldb % unit == 0 &&
         bytes(p.m, p.k, p.lda) < (1l << 31) && bytes(b_rows, b_cols, p.ldb) < (1l << 31);
}

}  // namespace

Status gemm(const GemmProblem& p) {
  if (Status s = validate(p); !s) return s;
  int dma = 0;
  if (Status s = check_device(p, dma); !s) return s;
  const bool can_pipeline = pipelinable(p, dma);
  if (p.variant == GemmProblem::kernel::pipelined && !can_pipeline)
    return error(hipErrorInvalidValue, "the pipelined kernel needs k, lda, ldb (and n when B is K x N) in whole " +
                                           std::to_string(dma) + "-byte units and A, B under 2 GiB");
  const bool pipelined = p.variant == GemmProblem::kernel::pipelined ||
                         (p.variant == GemmProblem::kernel::automatic && can_pipeline);
  const kernels::GemmArgs args{p.m, p.n, p.k, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, p.alpha, p.beta};
  (void)hipGetLastError();  // launch errors below are ours alone
  const bool bf = p.ab_type == dtype::bf16, out32 = p.c_type == dtype::fp32;
  if (p.ab_type == dtype::fp8_e4m3) launch_fp8<fp8e4m3>(p, args, pipelined);
  else if (p.ab_type == dtype::fp8_e5m2) launch_fp8<fp8e5m2>(p, args, pipelined);
  else if (bf && out32) launch<bf16, float>(p, args, pipelined);
  else if (bf) launch<bf16, bf16>(p, args, pipelined);
  else if (out32) launch<half, float>(p, args, pipelined);
  else launch<half, bf16>(p, args, pipelined);
  if (hipError_t e = hipGetLastError(); e != hipSuccess) return error(e, std::string("launch failed: ") + hipGetErrorString(e));
  return {};
}

}  // namespace hk
