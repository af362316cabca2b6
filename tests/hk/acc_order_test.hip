// Operands in the accumulator's row order (ops/acc_order.h): O^T = V^T P^T with P^T an fp32 accumulator turned into
// the B operand by copy_acc_order and V read by load_acc_order from a shared tile, then used transposed (the free
// row <-> col view) as the A operand — attention's second product with no cross-lane moves, in 16x16 and 32x32 blocks. Checked against a host
// reference; the reads' LDS bank conflicts are asserted zero on vgpu's model.
#include "hk/hk.h"
#include "hk/ops/acc_order.h"
#include "hk_test_util.h"

using namespace hk;

template <class T, int R, int C>
using glt = gl<T, 1, 1, R, C>;

// pt: N x M fp32 (keys x queries), v: N x D (keys x head dim); o: D x M = V^T P^T.
// S: the MFMA family of every tile (16x16 or 32x32 blocks).
template <class T, int M, int N, int D, class S>
__global__ void pv_transposed(const float* pt, const T* v, float* o) {
  __shared__ st<T, N, D> sv;
  load<wave>(sv, glt<T, N, D>(const_cast<T*>(v), 1, 1, N, D), {});
  barrier();
  rt_acc<N, M, S> acc;
  load(acc, glt<float, N, M>(const_cast<float*>(pt), 1, 1, N, M), {});
  rt<T, N, M, layout::col, S> b;
  copy_acc_order(b, acc);
  rt<T, N, D, layout::col, S> vc;
  load_acc_order(vc, sv);
  rt<T, D, N, layout::row, S> a;
  transpose(a, vc);  // the same registers
  rt_acc<D, M, S> out;
  zero(out);
  mma_AB(out, a, b, out);
  store(glt<float, D, M>(o, 1, 1, D, M), out, {});
}

template <class T, int M, int N, int D, class S = mfma16>
void check_pv_transposed() {
  hktest::Buffer<float> pt(N * M, 51, 1.f);
  hktest::Buffer<T> v(N * D, 52);
  hktest::Buffer<float> o(D * M);
  const bool profiled = hktest::set_profiling(true);
  hipLaunchKernelGGL((pv_transposed<T, M, N, D, S>), dim3(1), dim3(64), 0, 0, pt.dev, v.dev, o.dev);
  HIP_ASSERT(hipDeviceSynchronize());
  hktest::set_profiling(false);
  std::vector<float> want(D * M);
  for (int x = 0; x < D; ++x)
    for (int q = 0; q < M; ++q) {
      double s = 0;
      for (int k = 0; k < N; ++k) s += double(v.host[k * D + x]) * hktest::quantize<T>(pt.host[k * M + q]);
      want[x * M + q] = float(s);
    }
  hktest::expect_close(o.read(), want, 1e-4f, 1e-4f, "V^T P^T");
  if (!profiled) return;
  const hktest::LdsStats reads = hktest::last_lds("ds_read");
  EXPECT_EQ(reads.conflict_cycles, 0u) << "load_acc_order: " << reads.example;
  EXPECT_EQ(hktest::last_lds("ds_bpermute").accesses, 0u) << "copy_acc_order moved data across lanes";
}

TEST(AccOrder, PVTransposedBf16) { check_pv_transposed<bf16, 16, 64, 128>(); }
TEST(AccOrder, PVTransposedF16) { check_pv_transposed<half, 32, 64, 64>(); }
TEST(AccOrder, PVTransposedBf16Wide) { check_pv_transposed<bf16, 48, 128, 32>(); }
TEST(AccOrder, PVTransposed32x32Bf16) { check_pv_transposed<bf16, 32, 64, 128, mfma32>(); }
TEST(AccOrder, PVTransposed32x32F16) { check_pv_transposed<half, 64, 64, 64, mfma32>(); }
