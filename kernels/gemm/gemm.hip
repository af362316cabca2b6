// hk::gemm: argument validation and dispatch to the kernel instance for the element types, the feed and B's
// orientation.
#include "gemm.h"

#include "gemm_fp8.h"
#include "gemm_pingpong.h"
#include "gemm_skinny.h"
#include "gemm_staged.h"
#include <algorithm>

#include "hk/ops/async.h"

namespace hk {

namespace {

constexpr const char* entry = "hk::gemm";

Status error(hipError_t code, const std::string& message) { return api::error(entry, code, message); }

bool fp8(scalar_type t) { return t == scalar_type::fp8_e4m3 || t == scalar_type::fp8_e5m2; }

// The problem's own checks, independent of the device.
Status validate(const GemmProblem& p) {
  if (p.m <= 0 || p.n <= 0 || p.k <= 0)
    return error(hipErrorInvalidValue, "m, n and k must be positive (got " + std::to_string(p.m) + ", " +
                                           std::to_string(p.n) + ", " + std::to_string(p.k) + ")");
  if (!p.a || !p.b || !p.c) return error(hipErrorInvalidValue, std::string("null pointer for ") + (!p.a ? "A" : !p.b ? "B" : "C"));
  if (p.ab_type != scalar_type::bf16 && p.ab_type != scalar_type::f16 && !fp8(p.ab_type))
    return error(hipErrorInvalidValue, std::string("A and B must be bf16 or f16 (or both fp8_e4m3, or both fp8_e5m2), not ") +
                                           to_string(p.ab_type));
  if (p.c_type != scalar_type::fp32 && p.c_type != scalar_type::bf16)
    return error(hipErrorInvalidValue, std::string("C must be fp32 or bf16, not ") + to_string(p.c_type));
  const long b_cols = p.b_is_nk ? p.k : p.n;
  if (p.lda < p.k) return error(hipErrorInvalidValue, "lda (" + std::to_string(p.lda) + ") is less than k");
  if (p.ldb < b_cols)
    return error(hipErrorInvalidValue, "ldb (" + std::to_string(p.ldb) + ") is less than " + (p.b_is_nk ? "k" : "n"));
  if (p.ldc < p.n) return error(hipErrorInvalidValue, "ldc (" + std::to_string(p.ldc) + ") is less than n");
  const size_t in = size_of(p.ab_type), out = size_of(p.c_type);
  if (reinterpret_cast<uintptr_t>(p.a) % in || reinterpret_cast<uintptr_t>(p.b) % in)
    return error(hipErrorInvalidValue, "A and B must be aligned to their element size");
  if (reinterpret_cast<uintptr_t>(p.c) % out) return error(hipErrorInvalidValue, "C is not aligned to its element size");
  return {};
}

// The operands as the kernels see them, for the host-side eligibility rule of the LDS DMA feed (async_loadable).
template <class T>
bool dma_feedable(const GemmProblem& p, int dma_bytes) {
  T* a = static_cast<T*>(const_cast<void*>(p.a));
  T* b = static_cast<T*>(const_cast<void*>(p.b));
  return async_loadable(gl<T, 1, 1>(a, 1, 1, p.m, p.k, p.lda), dma_bytes) &&
         async_loadable(gl<T, 1, 1>(b, 1, 1, p.b_is_nk ? p.n : p.k, p.b_is_nk ? p.k : p.n, p.ldb), dma_bytes);
}

// The kernel for B's orientation; with NkOnly, only the B^T instance exists (the caller never asks for the other).
template <class TIn, class TOut, template <class, class, bool> class Kernel, bool NkOnly = false>
void launch(const GemmProblem& p, const kernels::GemmArgs& args, int workgroups, int threads) {
  const dim3 grid{unsigned(workgroups), 1, 1};
  if (NkOnly || p.b_is_nk) hipLaunchKernelGGL((Kernel<TIn, TOut, true>::kernel), grid, dim3(threads), 0, p.stream, args);
  else if constexpr (!NkOnly) hipLaunchKernelGGL((Kernel<TIn, TOut, false>::kernel), grid, dim3(threads), 0, p.stream, args);
}

// The kernel templates as class templates over (TIn, TOut, BIsNK), so `launch` takes any of them.
template <class TIn, class TOut, bool BIsNK>
struct pingpong { static constexpr auto kernel = kernels::gemm_pingpong<TIn, TOut, BIsNK>; };
template <class TIn, class TOut, bool BIsNK>
struct pingpong_half { static constexpr auto kernel = kernels::gemm_pingpong<TIn, TOut, BIsNK, 128>; };

// The ping-pong kernel's 256 x 256 tiles, one per workgroup and CU. Where more tiles than CUs leave a last round
// under half full (1024 tiles on 304 CUs: 3 rounds and 112 tiles), the whole rounds run first and the last round's
// tiles then run as two 128 x 256 halves each, on up to twice as many CUs, in about half the time.
template <class TIn, class TOut, bool NkOnly>
void launch_pingpong(const GemmProblem& p, kernels::GemmArgs args) {
  constexpr int tile = gemm_pingpong_tile;
  const int tiles = ((p.m + tile - 1) / tile) * ((p.n + tile - 1) / tile);
  int device = 0, cus = 0;
  if (hipGetDevice(&device) != hipSuccess || hipDeviceGetAttribute(&cus, hipDeviceAttributeMultiprocessorCount, device) != hipSuccess)
    cus = 0;
  const int last = cus > 0 && tiles > cus ? tiles % cus : 0;
  if (last == 0 || 2 * last > cus) return launch<TIn, TOut, pingpong, NkOnly>(p, args, tiles, 512);
  launch<TIn, TOut, pingpong, NkOnly>(p, args, tiles - last, 512);
  args.tile_first = 2 * (tiles - last);  // in half tiles
  launch<TIn, TOut, pingpong_half, NkOnly>(p, args, 2 * last, 512);
}
template <class TIn, class TOut, bool BIsNK>
struct staged { static constexpr auto kernel = kernels::gemm_staged<TIn, TOut, BIsNK>; };
template <class TIn, class TOut, bool BIsNK>
struct fp8_dma { static constexpr auto kernel = kernels::gemm_fp8<TIn, TOut, BIsNK, true>; };
template <class TIn, class TOut, bool BIsNK>
struct fp8_registers { static constexpr auto kernel = kernels::gemm_fp8<TIn, TOut, BIsNK, false>; };

template <class TIn, class TOut>
void launch(const GemmProblem& p, const kernels::GemmArgs& args, bool dma) {
  // fp8 A * B (B in the col layout) stays on the 4-wave kernel: its transposed B fragments would not fit the
  // ping-pong kernel's registers.
  auto tiles = [&](int tile) { return ((p.m + tile - 1) / tile) * ((p.n + tile - 1) / tile); };
  if (dma && (!fp8_input<TIn> || p.b_is_nk)) launch_pingpong<TIn, TOut, fp8_input<TIn>>(p, args);
  else if constexpr (fp8_input<TIn>) {
    if (dma) launch<TIn, TOut, fp8_dma>(p, args, tiles(gemm_fp8_tile), 256);
    else launch<TIn, TOut, fp8_registers>(p, args, tiles(gemm_fp8_tile), 256);
  } else {
    launch<TIn, TOut, staged>(p, args, tiles(gemm_staged_tile), 256);
  }
}

template <class TIn>
void launch(const GemmProblem& p, const kernels::GemmArgs& args, bool dma) {
  if (p.c_type == scalar_type::fp32) launch<TIn, float>(p, args, dma);
  else launch<TIn, bf16>(p, args, dma);
}

// The skinny kernel (gemm_skinny.h) where A has few rows: at most skinny_max_m, and A's and B's rows on 16-byte
// boundaries (its loads).
constexpr int skinny_max_m = 256;
bool skinny_fits(const GemmProblem& p) {
  const uintptr_t in = size_of(p.ab_type);
  auto rows16 = [&](const void* x, long ld) { return (reinterpret_cast<uintptr_t>(x) | uintptr_t(ld) * in) % 16 == 0; };
  return p.m <= skinny_max_m && rows16(p.a, p.lda) && rows16(p.b, p.ldb);
}

// The skinny kernel with BM rows of C per workgroup; K split where the blocks of C are few, the splits' partial
// products summed by a second kernel in a workspace allocated and freed in stream order.
template <class TIn, class TOut, int BM>
Status launch_skinny(const GemmProblem& p, const kernels::GemmArgs& args) {
  using Shape = kernels::SkinnyShape<TIn, BM, true>;  // WN and KB: the same for both orientations but fp8 K x N's KB
  const int kb = p.b_is_nk ? Shape::KB : kernels::SkinnyShape<TIn, BM, false>::KB;
  kernels::SkinnyArgs s{args, nullptr, 1, 0, (p.m + BM - 1) / BM, (p.n + Shape::WN - 1) / Shape::WN};
  int device = 0, cus = 0;
  if (hipGetDevice(&device) != hipSuccess || hipDeviceGetAttribute(&cus, hipDeviceAttributeMultiprocessorCount, device) != hipSuccess)
    cus = 0;
  const int steps = (p.k + kb - 1) / kb;
  const long blocks = long(s.tiles_m) * s.tiles_n;
  // On the model a workgroup per CU or fewer keeps HBM busy down to a quarter of the CUs (4 x 16 KB in flight
  // each); under that, K splits into ranges of at least a step per wave, about a workgroup per CU.
  const long splits = 4 * blocks >= cus ? 1 : std::clamp((cus + blocks - 1) / blocks, 1l, long(std::max(1, steps / 4)));
  s.split_steps = int((steps + splits - 1) / splits);
  s.splits = (steps + s.split_steps - 1) / s.split_steps;
  const size_t part_bytes = s.splits > 1 ? size_t(s.splits) * p.m * p.n * sizeof(float) : 0;
  if (part_bytes) {
    void* part = nullptr;
    if (hipError_t e = hipMallocAsync(&part, part_bytes, p.stream); e != hipSuccess)
      return error(e, "allocating the " + std::to_string(part_bytes) + "-byte workspace of the split K: " + hipGetErrorString(e));
    s.part = static_cast<float*>(part);
  }
  const dim3 grid{unsigned(blocks * s.splits), 1, 1};
  if (p.b_is_nk) hipLaunchKernelGGL((kernels::gemm_skinny<TIn, TOut, true, BM>), grid, dim3(256), 0, p.stream, s);
  else hipLaunchKernelGGL((kernels::gemm_skinny<TIn, TOut, false, BM>), grid, dim3(256), 0, p.stream, s);
  if (part_bytes) {
    const long mn = long(p.m) * p.n;
    hipLaunchKernelGGL((kernels::gemm_skinny_reduce<TOut>), dim3(unsigned((mn + 255) / 256)), dim3(256), 0, p.stream, s);
    (void)hipFreeAsync(s.part, p.stream);
  }
  return {};
}

template <class TIn>
Status launch_skinny(const GemmProblem& p, const kernels::GemmArgs& args) {
  auto rows = [&]<class TOut>(TOut) { return p.m <= 16 ? launch_skinny<TIn, TOut, 16>(p, args) : launch_skinny<TIn, TOut, 64>(p, args); };
  return p.c_type == scalar_type::fp32 ? rows(float{}) : rows(bf16{});
}

// f(T{}) for the C++ type of A and B.
template <class F>
decltype(auto) with_input_type(scalar_type t, F&& f) {
  switch (t) {
    case scalar_type::fp8_e4m3: return f(fp8e4m3{});
    case scalar_type::fp8_e5m2: return f(fp8e5m2{});
    case scalar_type::f16: return f(half{});
    default: return f(bf16{});
  }
}

}  // namespace

Status gemm(const GemmProblem& p) {
  if (Status s = validate(p); !s) return s;
  Status status;
  const arch::target* target = api::current_target(entry, status);
  if (!target) return status;
  const size_t in = size_of(p.ab_type), out = size_of(p.c_type);
  if (!api::inside_allocation(p.a, api::matrix_bytes(p.m, p.k, p.lda, in)))
    return error(hipErrorInvalidValue, "A does not lie inside one device allocation");
  if (!api::inside_allocation(p.b, api::matrix_bytes(p.b_is_nk ? p.n : p.k, p.b_is_nk ? p.k : p.n, p.ldb, in)))
    return error(hipErrorInvalidValue, "B does not lie inside one device allocation");
  if (!api::inside_allocation(p.c, api::matrix_bytes(p.m, p.n, p.ldc, out)))
    return error(hipErrorInvalidValue, "C does not lie inside one device allocation");

  const int dma_bytes = target->lds_dma_bytes;
  const bool dma_ok = with_input_type(p.ab_type, [&]<class T>(T) { return dma_feedable<T>(p, dma_bytes); });
  if (p.feed == GemmProblem::Feed::lds_dma && !dma_ok)
    return error(hipErrorInvalidValue, "the LDS DMA feed needs A and B to start on " + std::to_string(dma_bytes) +
                                           "-byte boundaries, k, lda, ldb (and n when B is K x N) in whole " +
                                           std::to_string(dma_bytes) + "-byte units, and A, B under 2 GiB on " + target->name);
  const bool dma = p.feed == GemmProblem::Feed::lds_dma || (p.feed == GemmProblem::Feed::automatic && dma_ok);
  const kernels::GemmArgs args{p.m, p.n, p.k, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, p.alpha, p.beta};
  (void)hipGetLastError();  // launch errors below are ours alone
  if (p.feed == GemmProblem::Feed::automatic && skinny_fits(p)) {
    if (Status s = with_input_type(p.ab_type, [&]<class T>(T) { return launch_skinny<T>(p, args); }); !s) return s;
  } else {
    with_input_type(p.ab_type, [&]<class T>(T) { launch<T>(p, args, dma); });
  }
  if (hipError_t e = hipGetLastError(); e != hipSuccess) return error(e, std::string("launch failed: ") + hipGetErrorString(e));
  return {};
}

}  // namespace hk
