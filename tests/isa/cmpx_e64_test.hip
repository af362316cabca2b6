// The VOP3 (e64) form of v_cmpx_* with an SGPR-pair destination, as Tensile's hand-written GEMM edge code uses it
// (rocBLAS: v_cmpx_eq_u32_e64 s[54:55], v4, s54): the lanes' result goes to the pair and to EXEC. LLVM's disassembler
// flags the encoding "potentially undefined" (a SoftFail), which vgpu once took for undecodable; gfx9 defines it.
// Each lane compares its value with a scalar, then writes 1 under the new EXEC; the pair and the written lanes are
// checked against the host.
#include <hip/hip_runtime.h>

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace {

constexpr int kBlock = 64;
constexpr int kBlocks = 4;

__global__ void cmpx_e64(const unsigned* a, unsigned b, unsigned long long* masks, unsigned* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned v = a[i];
  unsigned long long mask;
  unsigned r;
  asm volatile(
      "s_mov_b64 s[40:41], exec\n\t"
      "v_mov_b32 %1, 0\n\t"
      "v_cmpx_eq_u32_e64 %0, %2, %3\n\t"
      "v_mov_b32 %1, 1\n\t"
      "s_mov_b64 exec, s[40:41]"
      : "=s"(mask), "=&v"(r)
      : "v"(v), "s"(b)
      : "s40", "s41");
  out[i] = r;
  if (threadIdx.x == 0) masks[blockIdx.x] = mask;
}

TEST(CmpxE64, WritesThePairAndExec) {
  const int n = kBlock * kBlocks;
  const unsigned b = 7;
  std::vector<unsigned> a(n);
  for (int i = 0; i < n; ++i) a[i] = (i * 37 + i / 5) % 3 == 0 ? b : i;  // about a third of the lanes match
  unsigned *da, *dout;
  unsigned long long* dmasks;
  ASSERT_EQ(hipMalloc(&da, n * sizeof(unsigned)), hipSuccess);
  ASSERT_EQ(hipMalloc(&dout, n * sizeof(unsigned)), hipSuccess);
  ASSERT_EQ(hipMalloc(&dmasks, kBlocks * sizeof(unsigned long long)), hipSuccess);
  ASSERT_EQ(hipMemcpy(da, a.data(), n * sizeof(unsigned), hipMemcpyHostToDevice), hipSuccess);
  hipLaunchKernelGGL(cmpx_e64, dim3(kBlocks), dim3(kBlock), 0, nullptr, da, b, dmasks, dout);
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess);
  std::vector<unsigned> out(n);
  std::vector<unsigned long long> masks(kBlocks);
  ASSERT_EQ(hipMemcpy(out.data(), dout, n * sizeof(unsigned), hipMemcpyDeviceToHost), hipSuccess);
  ASSERT_EQ(hipMemcpy(masks.data(), dmasks, kBlocks * sizeof(unsigned long long), hipMemcpyDeviceToHost), hipSuccess);
  for (int blk = 0; blk < kBlocks; ++blk) {
    unsigned long long expect = 0;
    for (int l = 0; l < kBlock; ++l) {
      const int i = blk * kBlock + l;
      const bool match = a[i] == b;
      expect |= uint64_t(match) << l;
      EXPECT_EQ(out[i], match ? 1u : 0u) << "lane " << l << " of block " << blk;
    }
    EXPECT_EQ(masks[blk], expect) << "block " << blk;
  }
  (void)hipFree(da);
  (void)hipFree(dout);
  (void)hipFree(dmasks);
}

}  // namespace
