// Synchronisation and scheduling: xcd_remap is a bijection that gives each XCD a contiguous run of logical ids, the
// s_waitcnt helpers encode their counts as the arch's assembler reads them, and kernels using sched_group_barrier /
// sched_barrier / wave_barrier compile and compute the same results.
#include <algorithm>
#include <set>

#include "hk/hk.h"
#include "hk_test_util.h"

using namespace hk;

// ---- xcd_remap --------------------------------------------------------------------------------------------------------

// For `count` blocks on `xcds` XCDs: every logical id is hit once, and the hardware ids of one XCD (id % xcds == x, in
// dispatch order id = x, x + xcds, ...) get consecutive logical ids, the XCDs' runs in XCD order with sizes differing
// by at most one.
void check_remap(int count, int xcds, const std::vector<int>& logical) {
  ASSERT_EQ(int(logical.size()), count);
  std::vector<int> seen(count, 0);
  for (int id = 0; id < count; ++id) {
    ASSERT_GE(logical[id], 0) << "count " << count << " xcds " << xcds << " id " << id;
    ASSERT_LT(logical[id], count) << "count " << count << " xcds " << xcds << " id " << id;
    ASSERT_EQ(seen[logical[id]]++, 0) << "count " << count << " xcds " << xcds << ": logical id " << logical[id] << " twice";
  }
  int next = 0, smallest = count, largest = 0;
  for (int x = 0; x < xcds; ++x) {
    int run = 0;
    for (int id = x; id < count; id += xcds, ++run)
      ASSERT_EQ(logical[id], next + run) << "count " << count << " xcds " << xcds << ": XCD " << x << " is not contiguous";
    next += run, smallest = std::min(smallest, run), largest = std::max(largest, run);
  }
  EXPECT_EQ(next, count);
  EXPECT_LE(largest - smallest, 1) << "count " << count << " xcds " << xcds;
}

TEST(Sync, XcdRemapBijectionHost) {
  for (int xcds : {1, 2, 3, 4, 7, 8, 16})
    for (int count = 1; count <= 1100; ++count) {
      std::vector<int> logical(count);
      for (int id = 0; id < count; ++id) logical[id] = xcd_remap(id, count, xcds);
      check_remap(count, xcds, logical);
      if (HasFatalFailure()) return;
    }
}

TEST(Sync, XcdRemapLargeCountsHost) {
  for (int count : {8191, 8192, 65535, 65536, 304 * 37 + 5})
    for (int xcds : {8}) {
      std::vector<int> logical(count);
      for (int id = 0; id < count; ++id) logical[id] = xcd_remap(id, count, xcds);
      check_remap(count, xcds, logical);
    }
}

__global__ void remap_ids(int* out) {
  if (threadIdx.x == 0) out[blockIdx.x] = xcd_remap(int(blockIdx.x), int(gridDim.x));
}

TEST(Sync, XcdRemapOnDevice) {
  for (int count : {1, 7, 8, 9, 100, 257, 1000}) {
    int* d;
    HIP_ASSERT(hipMalloc(&d, count * sizeof(int)));
    hipLaunchKernelGGL(remap_ids, dim3(count), dim3(64), 0, 0, d);
    HIP_ASSERT(hipDeviceSynchronize());
    std::vector<int> logical(count);
    HIP_ASSERT(hipMemcpy(logical.data(), d, count * sizeof(int), hipMemcpyDeviceToHost));
    (void)hipFree(d);
    check_remap(count, 8, logical);  // both archs have 8 XCDs
  }
}

// ---- s_waitcnt ----------------------------------------------------------------------------------------------------------

// The GFX9 encoding, as LLVM prints the immediates (s_waitcnt vmcnt(0) is 0x0f70, lgkmcnt(0) is 0xc07f).
static_assert(arch::cdna3::waitcnt(0, 7, 15) == 0x0f70 && arch::cdna4::waitcnt(0, 7, 15) == 0x0f70);
static_assert(arch::cdna3::waitcnt(63, 7, 0) == 0xc07f && arch::cdna4::waitcnt(63, 7, 0) == 0xc07f);
static_assert(arch::cdna3::waitcnt(40, 7, 15) == (8 | 0x70 | 0xf00 | 2 << 14));
static_assert(arch::cdna3::waitcnt() == 0xcf7f, "all counters at maximum: no wait");

// Many independent loads in flight, then explicit waits: each must appear in the executed code with its count.
__global__ void waits(const float* in, float* out) {
  __shared__ float s[256];
  const int t = threadIdx.x;
  s[t] = in[t] * 2.f;
  s[t + 64] = in[t + 64] * 2.f;
  __syncthreads();
  float v[48];
#pragma unroll
  for (int i = 0; i < 48; ++i) v[i] = __builtin_nontemporal_load(&in[(t + 7 * i) % 256]);
  wait_vmcnt<40>();      // s_waitcnt vmcnt(40): the first 8 loads have landed
  float a = s[(t + 1) % 128], b = s[(t + 2) % 128], c = s[(t + 3) % 128], d = s[(t + 4) % 128];
  wait_lgkmcnt<2>();     // lgkmcnt(2)
  set_priority<0>();     // an instruction between the waits, or LLVM merges adjacent ones into the strictest
  wait_counts<17, 1>();  // vmcnt(17) lgkmcnt(1)
  wait_vmcnt<0>();
  wait_lgkmcnt<0>();
  float sum = a + b + c + d;
#pragma unroll
  for (int i = 0; i < 48; ++i) sum += v[i];
  out[t] = sum;
}

TEST(Sync, WaitcntHelpers) {
  hktest::Buffer<float> in(256, 3), out(64);
  const bool profiled = hktest::set_profiling(true);
  hipLaunchKernelGGL(waits, dim3(1), dim3(64), 0, 0, in.dev, out.dev);
  HIP_ASSERT(hipDeviceSynchronize());
  hktest::set_profiling(false);
  std::vector<float> want(64);
  for (int t = 0; t < 64; ++t) {
    float sum = 0;
    for (int k = 1; k <= 4; ++k) sum += 2.f * in.host[(t + k) % 128];
    for (int i = 0; i < 48; ++i) sum += in.host[(t + 7 * i) % 256];
    want[t] = sum;
  }
  hktest::expect_close(out.read(), want, 1e-5f, 1e-5f, "loads around explicit waits");
  if (!profiled) return;
  std::set<std::string> found;
  for (const std::string& text : hktest::last_instructions())
    if (text.starts_with("s_waitcnt"))
      for (const char* w : {"vmcnt(40)", "lgkmcnt(2)", "vmcnt(17)", "lgkmcnt(1)"})
        if (text.find(w) != std::string::npos) found.insert(w);
  for (const char* w : {"vmcnt(40)", "lgkmcnt(2)", "vmcnt(17)", "lgkmcnt(1)"})
    EXPECT_TRUE(found.count(w)) << "no executed s_waitcnt with " << w;
}

// ---- scheduling barriers ------------------------------------------------------------------------------------------------

// C = A B^T through shared tiles, the tile reads and the MFMAs interleaved by scheduling groups: one MFMA, then two
// LDS reads, alternating; the other barriers only constrain the order.
template <int M, int N, int K>
__global__ void scheduled_mma(const bf16* a, const bf16* b, float* c) {
  __shared__ st<bf16, M, K> sa;
  __shared__ st<bf16, N, K> sb;
  load<wave>(sa, gl<bf16, 1, 1, M, K>(const_cast<bf16*>(a), 1, 1, M, K), {});
  load<wave>(sb, gl<bf16, 1, 1, N, K>(const_cast<bf16*>(b), 1, 1, N, K), {});
  barrier();
  rt_acc<M, N> acc;
  zero(acc);
  constexpr int kt = 4 * arch::mfma_elems;  // one MFMA's K
  for (int k = 0; k < K / kt; ++k) {
    rt<bf16, M, kt> ra;
    rt<bf16, N, kt> rb;
    load(ra, sa, {0, 0, 0, k});
    load(rb, sb, {0, 0, 0, k});
    mma_ABt(acc, ra, rb, acc);
#pragma unroll
    for (int g = 0; g < (M / 16) * (N / 16); ++g) {
      sched_group_barrier<sched::mfma, 1, 0>();
      sched_group_barrier<sched::ds_read, 2, 0>();
    }
    sched_barrier<sched::valu | sched::salu>();
  }
  wave_barrier();
  set_priority<1>();
  store(gl<float, 1, 1, M, N>(c, 1, 1, M, N), acc, {});
  set_priority<0>();
  sched_barrier();
}

TEST(Sync, SchedGroupBarrierMma) {
  constexpr int M = 32, N = 32, K = 128;
  hktest::Buffer<bf16> a(M * K, 5), b(N * K, 6);
  hktest::Buffer<float> c(M * N);
  hipLaunchKernelGGL((scheduled_mma<M, N, K>), dim3(1), dim3(64), 0, 0, a.dev, b.dev, c.dev);
  HIP_ASSERT(hipDeviceSynchronize());
  std::vector<float> want(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0;
      for (int k = 0; k < K; ++k) s += double(a.host[i * K + k]) * b.host[j * K + k];
      want[i * N + j] = float(s);
    }
  hktest::expect_close(c.read(), want, 1e-4f, 1e-4f, "scheduled mma");
}
