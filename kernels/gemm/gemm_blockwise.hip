// hk::gemm_blockwise: argument validation and the launch of the fp8 kernels' blockwise form (gemm_blockwise_kernel.h).
#include "gemm_blockwise.h"

#include "gemm_blockwise_kernel.h"
#include "gemm_fp8.h"
#include "gemm_pingpong.h"
#include "hk/ops/async.h"

namespace hk {

namespace {

constexpr const char* entry = "hk::gemm_blockwise";

Status fail(const std::string& message) { return api::error(entry, hipErrorInvalidValue, message); }

Status validate(const GemmBlockwiseProblem& p) {
  constexpr int blk = gemm_blockwise_block;
  if (p.m <= 0 || p.n <= 0 || p.k <= 0)
    return fail("m, n and k must be positive (got " + std::to_string(p.m) + ", " + std::to_string(p.n) + ", " + std::to_string(p.k) + ")");
  if (p.k % blk) return fail("k (" + std::to_string(p.k) + ") must be a multiple of 128, the scales' block of k");
  if (!p.a || !p.b || !p.c || !p.scale_a || !p.scale_b)
    return fail(std::string("null pointer for ") + (!p.a ? "A" : !p.b ? "B" : !p.c ? "C" : !p.scale_a ? "scale_a" : "scale_b"));
  if (p.c_type != scalar_type::bf16 && p.c_type != scalar_type::fp32)
    return fail(std::string("C must be bf16 or fp32, not ") + to_string(p.c_type));
  const long kb = p.k / blk;
  if (p.lda < p.k) return fail("lda (" + std::to_string(p.lda) + ") is less than k");
  if (p.ldb < p.k) return fail("ldb (" + std::to_string(p.ldb) + ") is less than k");
  if (p.ldc < p.n) return fail("ldc (" + std::to_string(p.ldc) + ") is less than n");
  if (p.ld_scale_a < kb) return fail("ld_scale_a (" + std::to_string(p.ld_scale_a) + ") is less than k / 128");
  if (p.ld_scale_b < kb) return fail("ld_scale_b (" + std::to_string(p.ld_scale_b) + ") is less than k / 128");
  if (double(p.m) * double(p.ld_scale_a) * 4 > double(UINT32_MAX))
    return fail("scale_a spans more than 4 GiB (m * ld_scale_a * 4 bytes): the kernels address its rows with 32-bit offsets");
  if (reinterpret_cast<uintptr_t>(p.scale_a) % 4 || reinterpret_cast<uintptr_t>(p.scale_b) % 4)
    return fail("the scales must be aligned to 4 bytes");
  if (reinterpret_cast<uintptr_t>(p.c) % size_of(p.c_type)) return fail("C is not aligned to its element size");
  return {};
}

// The ping-pong kernel's half-height form (gemm_blockwise_kernel.h says why) where the LDS DMA feeds A and B, in
// logical 256 x 256 tiles of two halves each; the 4-wave fp8 kernel through registers elsewhere.
template <class T, class TOut, bool Dma>
void launch(const GemmBlockwiseProblem& p, const kernels::GemmArgs& args) {
  auto tiles = [&](int tile) { return ((p.m + tile - 1) / tile) * ((p.n + tile - 1) / tile); };
  if constexpr (Dma)
    hipLaunchKernelGGL((kernels::gemm_pingpong<T, TOut, true, 128, kernels::GemmBlockwiseForm>), dim3(2 * tiles(gemm_pingpong_tile)), dim3(512), 0,
                       p.stream, args);
  else hipLaunchKernelGGL((kernels::gemm_fp8<T, TOut, true, false, true>), dim3(tiles(gemm_fp8_tile)), dim3(256), 0, p.stream, args);
}

}  // namespace

Status gemm_blockwise(const GemmBlockwiseProblem& p) {
  static_assert(gemm_fp8_tile == gemm_blockwise_block, "gemm_blockwise: a tile's columns share one scale of B");
  if (Status s = validate(p); !s) return s;
  Status status;
  const arch::target* target = api::current_target(entry, status);
  if (!target) return status;
  const long kb = p.k / gemm_blockwise_block, nb = (p.n + gemm_blockwise_block - 1) / gemm_blockwise_block;
  if (!api::inside_allocation(p.a, api::matrix_bytes(p.m, p.k, p.lda, 1))) return fail("A does not lie inside one device allocation");
  if (!api::inside_allocation(p.b, api::matrix_bytes(p.n, p.k, p.ldb, 1))) return fail("B does not lie inside one device allocation");
  if (!api::inside_allocation(p.c, api::matrix_bytes(p.m, p.n, p.ldc, size_of(p.c_type))))
    return fail("C does not lie inside one device allocation");
  if (!api::inside_allocation(p.scale_a, api::matrix_bytes(p.m, kb, p.ld_scale_a, 4)))
    return fail("scale_a (m x k/128) does not lie inside one device allocation");
  if (!api::inside_allocation(p.scale_b, api::matrix_bytes(nb, kb, p.ld_scale_b, 4)))
    return fail("scale_b (ceil(n/128) x k/128) does not lie inside one device allocation");
  using T = fp8e4m3;
  T* a = static_cast<T*>(const_cast<void*>(p.a));
  T* b = static_cast<T*>(const_cast<void*>(p.b));
  const int dma_bytes = target->lds_dma_bytes;
  const bool dma_ok = async_loadable(gl<T, 1, 1>(a, 1, 1, p.m, p.k, p.lda), dma_bytes) &&
                      async_loadable(gl<T, 1, 1>(b, 1, 1, p.n, p.k, p.ldb), dma_bytes);
  using Feed = GemmProblem::Feed;
  if (p.feed == Feed::lds_dma && !dma_ok)
    return fail("the LDS DMA feed needs A and B to start on " + std::to_string(dma_bytes) + "-byte boundaries, lda and ldb in whole " +
                std::to_string(dma_bytes) + "-byte units, and A, B under 2 GiB on " + target->name);
  const bool dma = p.feed == Feed::lds_dma || (p.feed == Feed::automatic && dma_ok);
  kernels::GemmArgs args{p.m, p.n, p.k, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, 1.f, 0.f};
  args.scale_a = p.scale_a, args.ld_scale_a = p.ld_scale_a, args.scale_b = p.scale_b, args.ld_scale_b = p.ld_scale_b;
  (void)hipGetLastError();
  if (p.c_type == scalar_type::bf16) dma ? launch<T, bf16, true>(p, args) : launch<T, bf16, false>(p, args);
  else dma ? launch<T, float, true>(p, args) : launch<T, float, false>(p, args);
  if (hipError_t e = hipGetLastError(); e != hipSuccess) return api::error(entry, e, std::string("launch failed: ") + hipGetErrorString(e));
  return {};
}

}  // namespace hk
