// hk::gemm: argument validation and dispatch to the kernel instance for the element types, the feed and B's
// orientation.
#include "gemm.h"

#include <cstring>
#include <vector>

#include "gemm_fp8.h"
#include "gemm_pingpong.h"
#include "gemm_skinny.h"
#include "gemm_staged.h"
#include <algorithm>

#include "hk/ops/async.h"

namespace hk {

namespace {

constexpr const char* entry = "hk::gemm";

bool fp8(scalar_type t) { return t == scalar_type::fp8_e4m3 || t == scalar_type::fp8_e5m2; }

// The problem's own checks, independent of the device.
Status validate(const GemmProblem& p, const char* who) {
  if (p.m <= 0 || p.n <= 0 || p.k <= 0)
    return api::error(who, hipErrorInvalidValue, "m, n and k must be positive (got " + std::to_string(p.m) + ", " +
                                           std::to_string(p.n) + ", " + std::to_string(p.k) + ")");
  if (!p.a || !p.b || !p.c) return api::error(who, hipErrorInvalidValue, std::string("null pointer for ") + (!p.a ? "A" : !p.b ? "B" : "C"));
  if (p.ab_type != scalar_type::bf16 && p.ab_type != scalar_type::f16 && !fp8(p.ab_type))
    return api::error(who, hipErrorInvalidValue, std::string("A and B must be bf16 or f16 (or both fp8_e4m3, or both fp8_e5m2), not ") +
                                           to_string(p.ab_type));
  if (p.c_type != scalar_type::fp32 && p.c_type != scalar_type::bf16)
    return api::error(who, hipErrorInvalidValue, std::string("C must be fp32 or bf16, not ") + to_string(p.c_type));
  const long b_cols = p.b_is_nk ? p.k : p.n;
  if (p.lda < p.k) return api::error(who, hipErrorInvalidValue, "lda (" + std::to_string(p.lda) + ") is less than k");
  if (p.ldb < b_cols)
    return api::error(who, hipErrorInvalidValue, "ldb (" + std::to_string(p.ldb) + ") is less than " + (p.b_is_nk ? "k" : "n"));
  if (p.ldc < p.n) return api::error(who, hipErrorInvalidValue, "ldc (" + std::to_string(p.ldc) + ") is less than n");
  const size_t in = size_of(p.ab_type), out = size_of(p.c_type);
  if (reinterpret_cast<uintptr_t>(p.a) % in || reinterpret_cast<uintptr_t>(p.b) % in)
    return api::error(who, hipErrorInvalidValue, "A and B must be aligned to their element size");
  if (reinterpret_cast<uintptr_t>(p.c) % out) return api::error(who, hipErrorInvalidValue, "C is not aligned to its element size");
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

// The number of bm x bn tiles covering C: one problem's, or with group_rows, every group's of a grouped GEMM.
struct TileCount {
  const GemmProblem& p;
  const std::vector<long>* group_rows = nullptr;
  int operator()(int bm, int bn) const {
    const long tiles_n = (p.n + bn - 1) / bn;
    if (!group_rows) return int((p.m + bm - 1) / bm * tiles_n);
    long tiles = 0;
    for (long rows : *group_rows) tiles += (rows + bm - 1) / bm * tiles_n;
    return int(tiles);
  }
};

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
// A grouped GEMM takes whole tiles or halves throughout, whichever needs fewer rounds of the CUs (a round of halves
// counted as half a round).
template <class TIn, class TOut, bool NkOnly>
void launch_pingpong(const GemmProblem& p, kernels::GemmArgs args, const TileCount& count) {
  constexpr int tile = gemm_pingpong_tile;
  const int tiles = count(tile, tile);
  int device = 0, cus = 0;
  if (hipGetDevice(&device) != hipSuccess || hipDeviceGetAttribute(&cus, hipDeviceAttributeMultiprocessorCount, device) != hipSuccess)
    cus = 0;
  if (count.group_rows) {
    const int halves = count(tile / 2, tile);
    if (cus > 0 && (halves + cus - 1) / cus < 2 * ((tiles + cus - 1) / cus))
      return launch<TIn, TOut, pingpong_half, NkOnly>(p, args, halves, 512);
    return launch<TIn, TOut, pingpong, NkOnly>(p, args, tiles, 512);
  }
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
void launch(const GemmProblem& p, const kernels::GemmArgs& args, bool dma, const TileCount& count) {
  // fp8 A * B (B in the col layout) stays on the 4-wave kernel: its transposed B fragments would not fit the
  // ping-pong kernel's registers.
  auto tiles = [&](int tile) { return count(tile, tile); };
  if (tiles(gemm_staged_tile) == 0) return;  // a grouped GEMM whose groups are all empty
  if (dma && (!fp8_input<TIn> || p.b_is_nk)) launch_pingpong<TIn, TOut, fp8_input<TIn>>(p, args, count);
  else if constexpr (fp8_input<TIn>) {
    if (dma) launch<TIn, TOut, fp8_dma>(p, args, tiles(gemm_fp8_tile), 256);
    else launch<TIn, TOut, fp8_registers>(p, args, tiles(gemm_fp8_tile), 256);
  } else {
    launch<TIn, TOut, staged>(p, args, tiles(gemm_staged_tile), 256);
  }
}

template <class TIn>
void launch(const GemmProblem& p, const kernels::GemmArgs& args, bool dma, const TileCount& count) {
  if (p.c_type == scalar_type::fp32) launch<TIn, float>(p, args, dma, count);
  else launch<TIn, bf16>(p, args, dma, count);
}

// The skinny kernel (gemm_skinny.h) where A has few rows: at most skinny_max_m, and A's and B's rows on 16-byte
// boundaries (its loads).
constexpr int skinny_max_m = 256;
bool skinny_fits(const GemmProblem& p) {
  const uintptr_t in = size_of(p.ab_type);
  auto rows16 = [&](const void* x, long ld) { return (reinterpret_cast<uintptr_t>(x) | uintptr_t(ld) * in) % 16 == 0; };
  // fp8 with B given K x N stays on the tiled fp8 kernel: the skinny kernel's per-wave LDS transpose of such a B
  // conflicts in its loop (8192 cycles on gfx942) and spills 4 SGPRs at 64 rows.
  if (fp8(p.ab_type) && !p.b_is_nk) return false;
  return p.m <= skinny_max_m && rows16(p.a, p.lda) && rows16(p.b, p.ldb);
}

// The skinny kernel with BM rows of C per workgroup; K split where the blocks of C are few, the splits' partial
// products summed by a second kernel in a workspace allocated and freed in stream order.
template <class TIn, class TOut, int BM>
Status launch_skinny(const GemmProblem& p, const kernels::GemmArgs& args) {
  using Shape = kernels::SkinnyShape<TIn, BM>;
  const int kb = Shape::KB;
  kernels::SkinnyArgs s{args, nullptr, std::is_same_v<TOut, bf16>, 1, 0, (p.m + BM - 1) / BM, (p.n + Shape::WN - 1) / Shape::WN};
  int device = 0, cus = 0;
  if (hipGetDevice(&device) != hipSuccess || hipDeviceGetAttribute(&cus, hipDeviceAttributeMultiprocessorCount, device) != hipSuccess)
    cus = 0;
  const int steps = (p.k + kb - 1) / kb;
  const long blocks = long(s.tiles_m) * s.tiles_n;
  // On the model a workgroup per CU or fewer keeps HBM busy down to a quarter of the CUs (4 x 16 KB in flight
  // each); under that, K splits into ranges of at least a step per wave, about a workgroup per CU.
  const long splits = 4 * blocks >= cus ? 1 : std::clamp((cus + blocks - 1) / blocks, 1l, long(std::max(1, steps / 4)));
  const int split_steps = int((steps + splits - 1) / splits);
  s.split_k = split_steps * kb;
  s.splits = (steps + split_steps - 1) / split_steps;
  const size_t part_bytes = s.splits > 1 ? size_t(s.splits) * p.m * p.n * sizeof(float) : 0;
  if (part_bytes) {
    void* part = nullptr;
    if (hipError_t e = hipMallocAsync(&part, part_bytes, p.stream); e != hipSuccess)
      return api::error(entry, e, "allocating the " + std::to_string(part_bytes) + "-byte workspace of the split K: " + hipGetErrorString(e));
    s.part = static_cast<float*>(part);
  }
  const dim3 grid{unsigned(blocks * s.splits), 1, 1};
  if (p.b_is_nk) hipLaunchKernelGGL((kernels::gemm_skinny<TIn, true, BM>), grid, dim3(256), 0, p.stream, s);
  else if constexpr (sizeof(TIn) == 2)  // fp8 with B given K x N takes the tiled kernel (skinny_fits): no instance
    hipLaunchKernelGGL((kernels::gemm_skinny<TIn, false, BM>), grid, dim3(256), 0, p.stream, s);
  if (part_bytes) {
    const long mn = long(p.m) * p.n;
    hipLaunchKernelGGL((kernels::gemm_skinny_reduce<TOut>), dim3(unsigned((mn + 255) / 256)), dim3(256), 0, p.stream, s);
    (void)hipFreeAsync(s.part, p.stream);
  }
  return {};
}

// Rows per block: 16 up to 16 rows, 64 up to 128, 128 past that. At m > 128, 64-row blocks read B m / 64 times from
// L2 (1.6 GB at m = 256, over L2's 16 KB a clock; 128-row blocks 0.8 GB), so 128-row blocks win on the model:
// MI355X fp8 m = 256 51 -> 83%, m = 192 66 -> 73% of the HBM roofline. But a 128-row block over a last block half
// empty (m % 128 in 1..64) computes padded rows, and where the matrix cores are half as deep (mfma_k 16: gfx942,
// whose skinny GEMMs near m = 256 are bound by the MFMAs at the clock they lower) that costs more than the L2
// traffic: MI325X m = 192 bf16 60.0 (128 rows) vs 64.6% (64 rows), fp8 54.0 vs 66.1%.
template <class TIn>
Status launch_skinny(const GemmProblem& p, const kernels::GemmArgs& args, const arch::target& target) {
  const bool rows128 = p.m > 128 && (target.mfma_k >= 32 || p.m % 128 == 0 || p.m % 128 > 64);
  auto rows = [&]<class TOut>(TOut) {
    if (rows128) return launch_skinny<TIn, TOut, 128>(p, args);
    return p.m <= 16 ? launch_skinny<TIn, TOut, 16>(p, args) : launch_skinny<TIn, TOut, 64>(p, args);
  };
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

// The checks against the device (allocations, the LDS DMA feed), then the launch over `count`'s tiles. B spans
// b_bytes from p.b. `who`: the entry point named in errors.
Status run(const char* who, const GemmProblem& p, kernels::GemmArgs args, size_t b_bytes, const TileCount& count) {
  Status status;
  const arch::target* target = api::current_target(who, status);
  if (!target) return status;
  const size_t in = size_of(p.ab_type), out = size_of(p.c_type);
  if (!api::inside_allocation(p.a, api::matrix_bytes(p.m, p.k, p.lda, in)))
    return api::error(who, hipErrorInvalidValue, "A does not lie inside one device allocation");
  if (!api::inside_allocation(p.b, b_bytes)) return api::error(who, hipErrorInvalidValue, "B does not lie inside one device allocation");
  if (!api::inside_allocation(p.c, api::matrix_bytes(p.m, p.n, p.ldc, out)))
    return api::error(who, hipErrorInvalidValue, "C does not lie inside one device allocation");

  const int dma_bytes = target->lds_dma_bytes;
  const bool dma_ok = args.b_group_stride * long(in) % dma_bytes == 0 && with_input_type(p.ab_type, [&]<class T>(T) { return dma_feedable<T>(p, dma_bytes); });
  if (p.feed == GemmProblem::Feed::lds_dma && !dma_ok)
    return api::error(who, hipErrorInvalidValue, "the LDS DMA feed needs A and B to start on " + std::to_string(dma_bytes) +
                                           "-byte boundaries, k, lda, ldb (and n when B is K x N; a grouped B's group "
                                           "stride) in whole " + std::to_string(dma_bytes) + "-byte units, and A, B under 2 GiB on " + target->name);
  const bool dma = p.feed == GemmProblem::Feed::lds_dma || (p.feed == GemmProblem::Feed::automatic && dma_ok);
  (void)hipGetLastError();  // launch errors below are ours alone
  if (args.groups == 0 && p.feed == GemmProblem::Feed::automatic && skinny_fits(p)) {
    if (Status s = with_input_type(p.ab_type, [&]<class T>(T) { return launch_skinny<T>(p, args, *target); }); !s) return s;
  } else {
    with_input_type(p.ab_type, [&]<class T>(T) { launch<T>(p, args, dma, count); });
  }
  if (hipError_t e = hipGetLastError(); e != hipSuccess) return api::error(who, e, std::string("launch failed: ") + hipGetErrorString(e));
  return {};
}

}  // namespace

Status gemm(const GemmProblem& p) {
  if (Status s = validate(p, entry); !s) return s;
  const size_t b_bytes = api::matrix_bytes(p.b_is_nk ? p.n : p.k, p.b_is_nk ? p.k : p.n, p.ldb, size_of(p.ab_type));
  const kernels::GemmArgs args{p.m, p.n, p.k, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, p.alpha, p.beta};
  return run(entry, p, args, b_bytes, TileCount{p});
}

Status grouped_gemm(const GroupedGemmProblem& p) {
  constexpr const char* who = "hk::grouped_gemm";
  auto fail = [&](const std::string& message) { return api::error(who, hipErrorInvalidValue, message); };
  if (Status s = validate(p, who); !s) return s;
  if (p.groups <= 0) return fail("groups must be positive (got " + std::to_string(p.groups) + ")");
  const size_t off_bytes = p.offsets_int64 ? 8 : 4;
  if (!p.offsets) return fail("null pointer for the offsets");
  if (reinterpret_cast<uintptr_t>(p.offsets) % off_bytes)
    return fail(std::string("the offsets must be aligned to their ") + (p.offsets_int64 ? "8" : "4") + "-byte elements");
  if (!api::inside_allocation(p.offsets, (size_t(p.groups) + 1) * off_bytes))
    return fail("the offsets (groups + 1 values) do not lie inside one device allocation");
  const long b_rows = p.b_is_nk ? p.n : p.k, b_cols = p.b_is_nk ? p.k : p.n;
  const long span = (b_rows - 1) * p.ldb + b_cols, stride = p.b_group_stride ? p.b_group_stride : b_rows * p.ldb;
  if (stride < span)
    return fail("b_group_stride (" + std::to_string(p.b_group_stride) + ") is less than one group's B (" + std::to_string(span) +
                " elements): the groups' B matrices would overlap");
  // The offsets, read back: their checks and the tiles of each group.
  std::vector<uint8_t> raw((size_t(p.groups) + 1) * off_bytes);
  if (hipError_t e = hipMemcpyAsync(raw.data(), p.offsets, raw.size(), hipMemcpyDeviceToHost, p.stream); e != hipSuccess)
    return api::error(who, e, std::string("reading the offsets: ") + hipGetErrorString(e));
  if (hipError_t e = hipStreamSynchronize(p.stream); e != hipSuccess)
    return api::error(who, e, std::string("reading the offsets: ") + hipGetErrorString(e));
  std::vector<long> offsets(size_t(p.groups) + 1), rows(size_t(p.groups));
  for (size_t g = 0; g < offsets.size(); ++g) {
    if (p.offsets_int64) std::memcpy(&offsets[g], &raw[g * 8], 8);
    else offsets[g] = *reinterpret_cast<const int32_t*>(&raw[g * 4]);
  }
  if (offsets[0] != 0) return fail("offsets[0] must be 0 (got " + std::to_string(offsets[0]) + ")");
  for (int g = 0; g < p.groups; ++g) {
    rows[g] = offsets[g + 1] - offsets[g];
    if (rows[g] < 0)
      return fail("the offsets must not decrease (offsets[" + std::to_string(g + 1) + "] = " + std::to_string(offsets[g + 1]) +
                  " < offsets[" + std::to_string(g) + "] = " + std::to_string(offsets[g]) + ")");
  }
  if (offsets.back() != p.m)
    return fail("offsets[groups] (" + std::to_string(offsets.back()) + ") must be m, the rows of A and C (" + std::to_string(p.m) + ")");
  const size_t in = size_of(p.ab_type);
  const size_t b_bytes = (size_t(p.groups - 1) * size_t(stride) + size_t(span)) * in;
  kernels::GemmArgs args{p.m, p.n, p.k, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, p.alpha, p.beta};
  args.groups = p.groups, args.offsets = p.offsets, args.offsets64 = p.offsets_int64, args.b_group_stride = stride;
  return run(who, p, args, b_bytes, TileCount{p, &rows});
}

}  // namespace hk
