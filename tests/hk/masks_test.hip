// Masks and fills by global position: make_causal, tril, triu, mask_bounds, on accumulator tiles and on 16-bit
// tiles of both layouts, at several tile origins, against a host model of each rule.
#include "hk/hk.h"
#include "hk_test_util.h"

using namespace hk;

enum class Op { causal, tril, triu, bounds };

struct Args {
  int row0, col0, k;    // tile origin; the diagonal (tril/triu) or offset (causal)
  int rows, cols;       // bounds
  float value;
};

// Loads an M x N tile of T in layout L from `in`, applies the op at the given origin, stores it to `out`.
template <class T, int M, int N, layout L, Op O>
__global__ void apply_mask(const T* in, T* out, Args a) {
  gl<T, 1, 1, M, N> gi(const_cast<T*>(in), 1, 1, M, N), go(out, 1, 1, M, N);
  rt<T, M, N, L> t;
  load(t, gi, {});
  if constexpr (O == Op::causal) {
    if (a.value == -INFINITY) make_causal(t, a.row0, a.col0, a.k);  // the default value
    else make_causal(t, a.row0, a.col0, a.k, a.value);
  } else if constexpr (O == Op::tril) {
    tril(t, a.value, a.k, a.row0, a.col0);
  } else if constexpr (O == Op::triu) {
    triu(t, a.value, a.k, a.row0, a.col0);
  } else {
    mask_bounds(t, a.row0, a.col0, a.rows, a.cols, a.value);
  }
  store(go, t, {});
}

// The host model: element (r, c) of the tile is at (row0 + r, col0 + c).
bool masked(Op o, const Args& a, int r, int c) {
  const int gr = a.row0 + r, gc = a.col0 + c;
  switch (o) {
    case Op::causal: return gc > gr + a.k;
    case Op::tril: return gc - gr > a.k;
    case Op::triu: return gc - gr < a.k;
    case Op::bounds: return gr >= a.rows || gc >= a.cols;
  }
  return false;
}

template <class T, int M, int N, layout L, Op O>
void check(const Args& a) {
  hktest::Buffer<T> in(M * N, 21, 8.f), out(M * N);
  hipLaunchKernelGGL((apply_mask<T, M, N, L, O>), dim3(1), dim3(64), 0, 0, in.dev, out.dev, a);
  HIP_ASSERT(hipDeviceSynchronize());
  std::vector<float> want(M * N);
  int n_masked = 0;
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      const bool m = masked(O, a, r, c);
      n_masked += m;
      want[r * N + c] = m ? hktest::quantize<T>(a.value) : in.host[r * N + c];
    }
  SCOPED_TRACE(testing::Message() << "origin (" << a.row0 << ", " << a.col0 << ") k " << a.k << " bounds " << a.rows
                                  << " x " << a.cols << ": " << n_masked << " of " << M * N << " masked");
  hktest::expect_close(out.read(), want, 0, 0, "mask");
}

// Tile origins on, above and below the diagonal, and offsets that put the diagonal anywhere in the tile.
const Args kCausal[] = {{0, 0, 0, 0, 0, -INFINITY}, {32, 0, 0, 0, 0, -INFINITY},   {0, 32, 0, 0, 0, -INFINITY},
                        {64, 48, 5, 0, 0, -INFINITY}, {16, 48, -7, 0, 0, -1e4f}, {128, 96, 100, 0, 0, -INFINITY}};

TEST(Masks, CausalAcc) {
  for (const Args& a : kCausal) check<float, 32, 48, layout::col, Op::causal>(a);
}
TEST(Masks, CausalAccSquare64) {
  for (const Args& a : kCausal) check<float, 64, 64, layout::col, Op::causal>(a);
}
TEST(Masks, CausalBf16Row) {
  for (const Args& a : kCausal) check<bf16, 32, 64, layout::row, Op::causal>(a);
}
TEST(Masks, CausalF16Col) {
  for (const Args& a : kCausal) check<half, 64, 32, layout::col, Op::causal>(a);
}
TEST(Masks, TrilAcc) {
  for (int k : {-20, -1, 0, 3, 31})
    check<float, 32, 32, layout::col, Op::tril>({0, 0, k, 0, 0, 0.f}), check<float, 32, 32, layout::col, Op::tril>({16, 32, k, 0, 0, 2.5f});
}
TEST(Masks, TriuAcc) {
  for (int k : {-20, -1, 0, 3, 31})
    check<float, 32, 32, layout::col, Op::triu>({0, 0, k, 0, 0, 0.f}), check<float, 32, 32, layout::col, Op::triu>({48, 16, k, 0, 0, -1.f});
}
TEST(Masks, TrilTriuBf16Row) {
  for (int k : {-9, 0, 17}) {
    check<bf16, 32, 64, layout::row, Op::tril>({8, 0, k, 0, 0, 0.f});
    check<bf16, 32, 64, layout::row, Op::triu>({0, 8, k, 0, 0, 0.f});
  }
}
TEST(Masks, BoundsAcc) {
  // Edge tiles: rows and columns past the tensor, one, both, neither, and a tile entirely outside.
  const Args cases[] = {{0, 0, 0, 32, 48, 0.f},  {0, 0, 0, 17, 48, 0.f},     {0, 0, 0, 32, 33, -INFINITY},
                        {96, 144, 0, 100, 150, 0.f}, {96, 144, 0, 90, 140, 7.f}, {0, 48, 0, 1000, 49, 0.f}};
  for (const Args& a : cases) check<float, 32, 48, layout::col, Op::bounds>(a);
}
TEST(Masks, BoundsBf16RowAndCol) {
  const Args cases[] = {{0, 0, 0, 31, 63, 0.f}, {64, 128, 0, 70, 130, 0.f}, {0, 0, 0, 1, 1, -2.f}};
  for (const Args& a : cases) {
    check<bf16, 32, 64, layout::row, Op::bounds>(a);
    check<bf16, 64, 32, layout::col, Op::bounds>(a);
  }
}
