// Layout swaps, transposes, the accumulator -> operand conversion of attention, and col-layout loads from shared
// tiles (the B operand of mma_AB), with the LDS bank conflicts of each path as vgpu's model counts them.
#include <cstdio>

#include "hk/hk.h"
#include "hk_test_util.h"
#include "mma_cases.h"

using namespace hk;

template <class T, int R, int C>
using glt = gl<T, 1, 1, R, C>;

// ---- acc -> operand -------------------------------------------------------------------------------------------------

template <class T, int M, int N, class Shape>
__global__ void acc_to_op(const float* in, T* out) {
  rt_acc<M, N, Shape> acc;
  load(acc, glt<float, M, N>(const_cast<float*>(in), 1, 1, M, N), {});
  rt<T, M, N, layout::row, Shape> op;
  acc_to_operand(op, acc);
  store(glt<T, M, N>(out, 1, 1, M, N), op, {});
}

// In registers: the only LDS instructions are ds_bpermute (cross-lane moves, no LDS memory).
template <class T, int M, int N, class Shape = mfma16>
void check_acc_to_op() {
  static_assert(swappable_in_registers<rt<T, M, N, layout::row, Shape>, rt_acc<M, N, Shape>>);
  hktest::Buffer<float> in(M * N, 31, 5.f);
  hktest::Buffer<T> out(M * N);
  const bool profiled = hktest::set_profiling(true);
  hipLaunchKernelGGL((acc_to_op<T, M, N, Shape>), dim3(1), dim3(64), 0, 0, in.dev, out.dev);
  HIP_ASSERT(hipDeviceSynchronize());
  hktest::set_profiling(false);
  std::vector<float> want(M * N);
  for (int i = 0; i < M * N; ++i) want[i] = hktest::quantize<T>(in.host[i]);
  hktest::expect_close(out.read(), want, 0, 0, "acc_to_operand");
  if (!profiled) return;
  const hktest::LdsStats s = hktest::last_lds("ds_");
  for (auto& [m, c] : s.mnemonics) EXPECT_EQ(m, "ds_bpermute_b32") << "acc_to_operand touched LDS memory";
  EXPECT_TRUE(s.has("ds_bpermute_b32"));
}

TEST(Layout, AccToOperandBf16_16x64) { check_acc_to_op<bf16, 16, 64>(); }
TEST(Layout, AccToOperandBf16_32x32) { check_acc_to_op<bf16, 32, 32>(); }
TEST(Layout, AccToOperandF16_64x128) { check_acc_to_op<half, 64, 128>(); }
// The 32x32 family: 16 bpermute rounds per 32x32 accumulator block.
TEST(Layout, AccToOperand32Bf16_32x32) { check_acc_to_op<bf16, 32, 32, mfma32>(); }
TEST(Layout, AccToOperand32F16_64x96) { check_acc_to_op<half, 64, 96, mfma32>(); }
TEST(Layout, AccToOperand32Bf16_32x128) { check_acc_to_op<bf16, 32, 128, mfma32>(); }

// Attention's P V with P converted in registers (the generic case of mma_cases.h, which also runs it through scratch,
// in the 32x32 family and for fp8).
TEST(Layout, AttentionPVBf16) { hkmma::check_pv<bf16, bf16, mfma16, hkmma::Via::registers, 32, 64, 64>(); }
TEST(Layout, AttentionPVF16) { hkmma::check_pv<half, half, mfma16, hkmma::Via::registers, 16, 128, 32>(); }

// ---- swap_layout and transpose ----------------------------------------------------------------------------------------

// Loads an R x C tile in layout Ls, converts it to layout Ld and element type Td (in registers where hk has a register
// path and Scratch is false, otherwise through a shared tile), stores it.
template <class Ts, class Td, int R, int C, layout Ls, layout Ld, bool Scratch>
__global__ void swap_kernel(const Ts* in, Td* out) {
  rt<Ts, R, C, Ls> s;
  load(s, glt<Ts, R, C>(const_cast<Ts*>(in), 1, 1, R, C), {});
  rt<Td, R, C, Ld> d;
  if constexpr (Scratch) {
    __shared__ st<Td, R, C> scratch;
    swap_layout(d, s, scratch);
  } else if constexpr (swappable_in_registers<decltype(d), decltype(s)>) {
    swap_layout(d, s);
  } else {
    zero(d);  // no register path on this arch: the host does not launch this
  }
  store(glt<Td, R, C>(out, 1, 1, R, C), d, {});
}

// dst = src^T, in registers or through a shared tile.
template <class T, int R, int C, layout Ls, layout Ld, bool Scratch>
__global__ void transpose_kernel(const T* in, T* out) {
  rt<T, R, C, Ls> s;
  load(s, glt<T, R, C>(const_cast<T*>(in), 1, 1, R, C), {});
  rt<T, C, R, Ld> d;
  if constexpr (Scratch) {
    __shared__ st<T, C, R> scratch;
    transpose(d, s, scratch);
  } else {
    transpose(d, s);
  }
  store(glt<T, C, R>(out, 1, 1, C, R), d, {});
}

// Whether hk has a register path for the pair on the arch the device code is compiled for: asked on the device.
template <class D, class S>
__global__ void has_register_path(int* out) {
  *out = swappable_in_registers<D, S>;
}

template <class D, class S>
bool register_path() {
  int* d;
  EXPECT_EQ(hipMalloc(&d, 4), hipSuccess);
  hipLaunchKernelGGL((has_register_path<D, S>), dim3(1), dim3(1), 0, 0, d);
  int h = -1;
  EXPECT_EQ(hipMemcpy(&h, d, 4, hipMemcpyDeviceToHost), hipSuccess);
  (void)hipFree(d);
  return h == 1;
}

template <class Ts, class Td, int R, int C, layout Ls, layout Ld, bool Scratch>
void check_swap() {
  hktest::Buffer<Ts> in(R * C, 51, 3.f);
  hktest::Buffer<Td> out(R * C);
  hipLaunchKernelGGL((swap_kernel<Ts, Td, R, C, Ls, Ld, Scratch>), dim3(1), dim3(64), 0, 0, in.dev, out.dev);
  HIP_ASSERT(hipDeviceSynchronize());
  std::vector<float> want(R * C);
  for (int i = 0; i < R * C; ++i) want[i] = hktest::quantize<Td>(in.host[i]);
  hktest::expect_close(out.read(), want, 0, 0, "swap_layout");
}

template <class T, int R, int C, layout Ls, layout Ld, bool Scratch>
void check_transpose() {
  hktest::Buffer<T> in(R * C, 52, 3.f), out(R * C);
  hipLaunchKernelGGL((transpose_kernel<T, R, C, Ls, Ld, Scratch>), dim3(1), dim3(64), 0, 0, in.dev, out.dev);
  HIP_ASSERT(hipDeviceSynchronize());
  std::vector<float> want(R * C);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) want[c * R + r] = in.host[r * C + c];
  hktest::expect_close(out.read(), want, 0, 0, "transpose");
}

// Register paths that exist on both archs: E = 4 on both sides (fp32 tiles), acc -> any row tile.
TEST(Layout, SwapRegistersF32RowToCol) { check_swap<float, float, 32, 48, layout::row, layout::col, false>(); }
TEST(Layout, SwapRegistersF32ColToRow) { check_swap<float, float, 48, 32, layout::col, layout::row, false>(); }
TEST(Layout, SwapRegistersAccToBf16Row) { check_swap<float, bf16, 32, 64, layout::col, layout::row, false>(); }
// 16-bit row <-> col: in registers where E = 4 (gfx942), through shared memory otherwise (gfx950, E = 8).
TEST(Layout, SwapBf16RowToColRegistersWhereE4) {
  using D = rt<bf16, 64, 32, layout::col>;
  using S = rt<bf16, 64, 32, layout::row>;
  const bool regs = register_path<D, S>();
  EXPECT_EQ(regs, hk_host::device_arch() == hk_host::Arch::gfx942)
      << "register path for 16-bit row -> col exactly where E = 4 (gfx942)";
  if (regs) check_swap<bf16, bf16, 64, 32, layout::row, layout::col, false>();
  else GTEST_SKIP() << "no register path on this arch (E = 8): the scratch cases cover it";
}
TEST(Layout, SwapScratchBf16RowToCol) { check_swap<bf16, bf16, 64, 32, layout::row, layout::col, true>(); }
TEST(Layout, SwapScratchBf16ColToRow) { check_swap<bf16, bf16, 32, 64, layout::col, layout::row, true>(); }
TEST(Layout, SwapScratchF16ColToRow) { check_swap<half, half, 64, 64, layout::col, layout::row, true>(); }
TEST(Layout, SwapScratchF32RowToBf16Row) { check_swap<float, bf16, 32, 64, layout::row, layout::row, true>(); }
TEST(Layout, SwapScratchAccToBf16Col) { check_swap<float, bf16, 64, 32, layout::col, layout::col, true>(); }
TEST(Layout, SwapScratchBf16RowToF32Col) { check_swap<bf16, float, 32, 64, layout::row, layout::col, true>(); }

TEST(Layout, TransposeFreeBf16RowToCol) { check_transpose<bf16, 32, 64, layout::row, layout::col, false>(); }
TEST(Layout, TransposeFreeF32ColToRow) { check_transpose<float, 48, 16, layout::col, layout::row, false>(); }
TEST(Layout, TransposeRegistersF32Acc) { check_transpose<float, 32, 48, layout::col, layout::col, false>(); }
TEST(Layout, TransposeRegistersF32Row) { check_transpose<float, 16, 32, layout::row, layout::row, false>(); }
TEST(Layout, TransposeScratchBf16Row) { check_transpose<bf16, 32, 64, layout::row, layout::row, true>(); }
TEST(Layout, TransposeScratchF16Col) { check_transpose<half, 64, 32, layout::col, layout::col, true>(); }

// ---- col-layout loads from shared tiles ---------------------------------------------------------------------------------

// A K x N shared tile (row-major, swizzled) read into col-layout register tiles of Kt x Nt at every tile position, by
// every wave, and written back out.
template <class T, int K, int N, int Kt, int Nt, int Waves>
__global__ void col_from_shared(const T* in, T* out) {
  __shared__ st<T, K, N> s;
  load<group<Waves>>(s, glt<T, K, N>(const_cast<T*>(in), 1, 1, K, N), {});
  barrier();
  for (int t = wave_id(); t < (K / Kt) * (N / Nt); t += Waves) {
    const coord at{0, 0, t / (N / Nt), t % (N / Nt)};
    rt<T, Kt, Nt, layout::col> r;
    load(r, s, at);
    store(glt<T, K, N>(out, 1, 1, K, N), r, at);
  }
}

struct ColLoad {
  unsigned long long accesses, conflict_cycles;
  std::string read;
};

template <class T, int K, int N, int Kt, int Nt, int Waves>
ColLoad check_col_load() {
  hktest::Buffer<T> in(K * N, 61), out(K * N);
  const bool profiled = hktest::set_profiling(true);
  hipLaunchKernelGGL((col_from_shared<T, K, N, Kt, Nt, Waves>), dim3(1), dim3(64 * Waves), 0, 0, in.dev, out.dev);
  EXPECT_EQ(hipDeviceSynchronize(), hipSuccess);
  hktest::set_profiling(false);
  hktest::expect_close(out.read(), in.host, 0, 0, "col-layout load from shared");
  if (!profiled) return {};
  const hktest::LdsStats s = hktest::last_lds("ds_read");
  EXPECT_GT(s.accesses, 0u);
  std::string reads;
  for (auto& [m, c] : s.mnemonics) reads += (reads.empty() ? "" : ", ") + m + " (" + std::to_string(c) + " conflict cycles)";
  std::printf("[col load] %s st<%d x %d> -> rt<%d x %d, col>: %llu LDS read instructions, %llu conflict cycles: %s\n",
              hk_host::device_arch_name().c_str(), K, N, Kt, Nt, s.accesses, s.conflict_cycles, reads.c_str());
  return {s.accesses, s.conflict_cycles, s.example};
}

// gfx950 reads 16-bit col tiles with ds_read_b64_tr_b16, four elements per read; gfx942 reads each element
// (ds_read_u16). Conflicts are pinned per read instruction: none on either arch (st's swizzle is chosen for these
// reads as well as the row-layout ones; tests/hk/banks_test.hip covers every family and width).
template <class T, int K, int N, int Kt, int Nt, int Waves>
void check_col_load_path() {
  const ColLoad c = check_col_load<T, K, N, Kt, Nt, Waves>();
  if (c.accesses == 0) return;  // not vgpu: nothing profiled
  const bool g950 = hk_host::device_arch() == hk_host::Arch::gfx950;
  constexpr int per_lane = Kt * Nt / 64;  // elements per lane per tile
  const unsigned long long tiles = (K / Kt) * (N / Nt);
  EXPECT_EQ(c.accesses, tiles * (g950 ? per_lane / 4 : per_lane)) << "reads per tile";
  EXPECT_NE(c.read.find(g950 ? "ds_read_b64_tr_b16" : "ds_read_u16"), std::string::npos) << c.read;
  EXPECT_EQ(c.conflict_cycles, 0u) << "LDS conflict cycles";
}

TEST(ColLoad, Bf16_64x64_Tile32x32) { check_col_load_path<bf16, 64, 64, 32, 32, 4>(); }
TEST(ColLoad, Bf16_128x64_Tile64x16) { check_col_load_path<bf16, 128, 64, 64, 16, 2>(); }
TEST(ColLoad, F16_64x128_Tile64x64) { check_col_load_path<half, 64, 128, 64, 64, 2>(); }
TEST(ColLoad, Bf16_32x256_Tile32x128) { check_col_load_path<bf16, 32, 256, 32, 128, 1>(); }
