// Global -> shared straight into LDS (load_async, buffer loads with the lds modifier): every element lands where the
// shared tile's swizzle says, for power-of-two and other row widths, 16-bit and fp8, every tile position of ragged
// tensors with padded row strides (inside tiles take the unchecked path, edge tiles the checked one; past the tensor:
// zeros), groups of 1 to 4 waves. vgpu lands the data only at wait_vmcnt, so the wait is exercised too.
#include <cstdint>
#include <random>

#include "hk/hk.h"
#include "hk/ops/async.h"
#include "hk_test_util.h"

using namespace hk;

// The tile at `at` of a rows x cols tensor (row stride ld) into a shared tile, then every element out by st(r, c).
template <class T, int R, int C, int Waves>
__global__ void async_tile(const T* in, int rows, int cols, int ld, int tr, int tc, T* out) {
  __shared__ st<T, R, C> s;
  const gl<T, 1, 1> src(const_cast<T*>(in), 1, 1, rows, cols, ld);
  load_async<group<Waves>>(s, src, {0, 0, tr, tc});
  wait_vmcnt<0>();
  barrier();
  for (int i = threadIdx.x; i < R * C; i += 64 * Waves) out[i] = s(i / C, i % C);
}

template <class T, int R, int C, int Waves>
void check(int rows, int cols, int ld, int tr, int tc) {
  SCOPED_TRACE(testing::Message() << R << "x" << C << " tile (" << tr << ", " << tc << ") of " << rows << "x" << cols
                                  << " ld " << ld << ", " << Waves << " waves");
  std::mt19937 rng(R * 131 + C + rows);
  std::vector<uint8_t> mem(size_t(rows - 1) * ld * sizeof(T) + cols * sizeof(T));
  for (auto& b : mem) b = uint8_t(rng());
  void *din = nullptr, *dout = nullptr;
  HIP_ASSERT(hipMalloc(&din, mem.size()));
  HIP_ASSERT(hipMalloc(&dout, R * C * sizeof(T)));
  HIP_ASSERT(hipMemcpy(din, mem.data(), mem.size(), hipMemcpyHostToDevice));
  hipLaunchKernelGGL((async_tile<T, R, C, Waves>), dim3(1), dim3(64 * Waves), 0, 0, static_cast<const T*>(din), rows,
                     cols, ld, tr, tc, static_cast<T*>(dout));
  HIP_ASSERT(hipDeviceSynchronize());
  std::vector<uint8_t> got(R * C * sizeof(T));
  HIP_ASSERT(hipMemcpy(got.data(), dout, got.size(), hipMemcpyDeviceToHost));
  (void)hipFree(din);
  (void)hipFree(dout);
  int bad = 0;
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      const int gr = tr * R + r, gc = tc * C + c;
      const bool inside = gr < rows && gc < cols;
      for (size_t b = 0; b < sizeof(T); ++b) {
        const uint8_t want = inside ? mem[(size_t(gr) * ld + gc) * sizeof(T) + b] : 0;
        if (got[(r * C + c) * sizeof(T) + b] != want && bad++ < 5)
          ADD_FAILURE() << "element (" << r << ", " << c << ") byte " << b << ": got " << int(got[(r * C + c) * sizeof(T) + b])
                        << " want " << int(want);
      }
    }
  EXPECT_EQ(bad, 0);
}

// Every tile position over a tensor whose sides are not multiples of the tile's, and one row and one column of tiles
// wholly past it: inside tiles (the unchecked path), the bottom and right edges, the corner, and tiles that read
// nothing but zeros. The row stride is padded past the columns.
template <class T, int R, int C, int Waves>
void check_every_tile(int rows, int cols, int ld) {
  for (int tr = 0; tr <= (rows + R - 1) / R; ++tr)
    for (int tc = 0; tc <= (cols + C - 1) / C; ++tc) check<T, R, C, Waves>(rows, cols, ld, tr, tc);
}

TEST(Async, Bf16PowerOfTwoRows) {
  check<bf16, 64, 64, 4>(64, 64, 64, 0, 0);
  check_every_tile<bf16, 64, 64, 4>(200, 136, 152);
}
TEST(Async, Bf16WideRowsFewWaves) {  // a row spans several loads
  check<bf16, 32, 256, 2>(96, 512, 520, 1, 1);
  check_every_tile<bf16, 32, 256, 2>(100, 520, 536);
}
TEST(Async, Bf16RowsOf192Bytes) {  // rows that are not a power of two: the general lane mapping
  check<bf16, 64, 96, 4>(128, 96, 104, 1, 0);
  check_every_tile<bf16, 64, 96, 4>(150, 200, 208);
}
TEST(Async, Bf16GroupOfThreeWaves) { check_every_tile<bf16, 64, 96, 3>(130, 104, 112); }
TEST(Async, Fp8) {
  check<fp8e4m3, 128, 128, 4>(256, 256, 256, 1, 1);
  check<fp8e4m3, 128, 64, 1>(160, 80, 96, 1, 1);
  check_every_tile<fp8e4m3, 128, 128, 4>(300, 272, 288);
  check_every_tile<fp8e4m3, 128, 64, 1>(160, 80, 96);
}

// The staged paths: global -> shared (load / load_bounded, through registers) and shared -> global (store /
// store_bounded) by a group; the tile at `at` round-trips, and an edge tile writes nothing past the tensor.
template <class T, int R, int C, int Waves>
__global__ void staged_round_trip(const T* in, T* out, int rows, int cols, int ld, int tr, int tc) {
  __shared__ st<T, R, C> s;
  const gl<T, 1, 1> src(const_cast<T*>(in), 1, 1, rows, cols, ld), dst(out, 1, 1, rows, cols, ld);
  load_bounded<group<Waves>>(s, src, {0, 0, tr, tc});
  barrier();
  store_bounded<group<Waves>>(dst, s, {0, 0, tr, tc});
}

template <class T, int R, int C, int Waves>
void check_staged(int rows, int cols, int ld, int tr, int tc) {
  SCOPED_TRACE(testing::Message() << "staged " << R << "x" << C << " tile (" << tr << ", " << tc << ") of " << rows << "x"
                                  << cols << " ld " << ld);
  const size_t bytes = (size_t(rows - 1) * ld + cols) * sizeof(T);
  std::mt19937 rng(rows + cols);
  std::vector<uint8_t> mem(bytes), canary(bytes, 0xa5);
  for (auto& b : mem) b = uint8_t(rng());
  void *din = nullptr, *dout = nullptr;
  HIP_ASSERT(hipMalloc(&din, bytes));
  HIP_ASSERT(hipMalloc(&dout, bytes));
  HIP_ASSERT(hipMemcpy(din, mem.data(), bytes, hipMemcpyHostToDevice));
  HIP_ASSERT(hipMemcpy(dout, canary.data(), bytes, hipMemcpyHostToDevice));
  hipLaunchKernelGGL((staged_round_trip<T, R, C, Waves>), dim3(1), dim3(64 * Waves), 0, 0, static_cast<const T*>(din),
                     static_cast<T*>(dout), rows, cols, ld, tr, tc);
  HIP_ASSERT(hipDeviceSynchronize());
  std::vector<uint8_t> got(bytes);
  HIP_ASSERT(hipMemcpy(got.data(), dout, bytes, hipMemcpyDeviceToHost));
  (void)hipFree(din);
  (void)hipFree(dout);
  int bad = 0;
  for (size_t i = 0; i < bytes; ++i) {
    const long e = long(i / sizeof(T)), r = e / ld, c = e % ld;
    const bool in_tile = r >= tr * R && r < (tr + 1) * R && c >= tc * C && c < (tc + 1) * C && c < cols;
    if (got[i] != (in_tile ? mem[i] : canary[i]) && bad++ < 5)
      ADD_FAILURE() << "byte " << i << " (row " << r << ", col " << c << "): got " << int(got[i]);
  }
  EXPECT_EQ(bad, 0);
}

TEST(Async, StagedSharedRoundTrip) {
  check_staged<bf16, 64, 64, 4>(64, 64, 64, 0, 0);
  check_staged<bf16, 64, 64, 4>(100, 90, 96, 1, 1);  // edge tile: rows 64..99, cols 64..89 of the tensor
  check_staged<fp8e4m3, 32, 128, 2>(40, 200, 208, 1, 1);
  check_staged<half, 32, 96, 1>(32, 96, 96, 0, 0);
}
