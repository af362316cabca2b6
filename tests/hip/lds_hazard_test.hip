// LDS hazards: a read of LDS bytes that a load straight into LDS (LDS DMA) may still be writing, by the issuing wave
// before its s_waitcnt vmcnt or by another wave without a barrier after that wait, is reported with both PCs: a
// warning counted in the dispatch info by default (the data lands at issue), a fault with vgpuSetRaceCheck(1)
// (HK_VGPU_RACECHECK=1). The same kernels with the wait / barrier in place are clean. A plain race between waves
// (a write and a read of the same LDS bytes with no barrier between) is found in race-check mode; outside it, the
// waves leave a barrier together, so a read right after it comes before another wave's later overwrite.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "hip_check.h"
#include "vgpu/hip_ext.h"

using u32 = uint32_t;
constexpr int kLanes = 64;

// One wave loads 64 dwords into LDS (lane l's dword at M0 + 4 l, M0 = 0: the kernel's LDS is all dynamic) and reads
// them back: before the wait that completes the load (the hazard), or after it.
#define DMA_THEN_READ(NAME, BEFORE_READ)                                                       \
  __global__ void NAME(const u32* src, u32* out) {                                             \
    const int l = threadIdx.x;                                                                 \
    u32 x;                                                                                     \
    asm volatile("s_mov_b32 m0, 0\n\t"                                                         \
                 "global_load_lds_dword %1, off\n\t" BEFORE_READ                                \
                 "ds_read_b32 %0, %2\n\t"                                                      \
                 "s_waitcnt vmcnt(0) lgkmcnt(0)"                                               \
                 : "=&v"(x)                                                                    \
                 : "v"(src + l), "v"(4u * u32(l))                                              \
                 : "memory");                                                                  \
    out[l] = x;                                                                                \
  }
DMA_THEN_READ(dma_read_before_wait, "")
DMA_THEN_READ(dma_read_after_wait, "s_waitcnt vmcnt(0)\n\t")

// Two waves: wave 0 loads into LDS and waits for its load; wave 1 reads the data, after a barrier or (the hazard)
// without one, so nothing orders its read after wave 0's wait.
__global__ void dma_other_wave_reads(const u32* src, u32* out, int barrier) {
  const int l = threadIdx.x;
  if (l < kLanes)
    asm volatile("s_mov_b32 m0, 0\n\tglobal_load_lds_dword %0, off\n\ts_waitcnt vmcnt(0)" : : "v"(src + l) : "memory");
  if (barrier) __syncthreads();
  if (l >= kLanes) {
    u32 x;
    asm volatile("ds_read_b32 %0, %1\n\ts_waitcnt lgkmcnt(0)" : "=v"(x) : "v"(4u * u32(l - kLanes)) : "memory");
    out[l - kLanes] = x;
  }
}

// Two waves: wave 0 writes LDS, wave 1 reads the same bytes, with or (the race) without a barrier between.
__global__ void wave_writes_other_reads(u32* out, int barrier) {
  const int l = threadIdx.x;
  if (l < kLanes) asm volatile("ds_write_b32 %0, %1\n\ts_waitcnt lgkmcnt(0)" : : "v"(4u * u32(l)), "v"(u32(l) * 3) : "memory");
  if (barrier) __syncthreads();
  if (l >= kLanes) {
    u32 x;
    asm volatile("ds_read_b32 %0, %1\n\ts_waitcnt lgkmcnt(0)" : "=v"(x) : "v"(4u * u32(l - kLanes)) : "memory");
    out[l - kLanes] = x;
  }
}

// rocPRIM's adjacent_find shape: work-item 0 publishes a value in an LDS word, every work-item reads it after a
// barrier, and work-item 0 then overwrites the word with what it loads from global memory, without a second barrier
// before the others' reads. A race, which race-check mode reports; on hardware the waves leave the barrier together
// and the others' reads reach LDS long before the global load returns, so they see the first value.
__global__ void one_word_reused_after_barrier(const u32* next, u32* seen) {
  __shared__ u32 word;
  if (threadIdx.x == 0) word = 1000u + blockIdx.x;
  __syncthreads();
  const u32 first = word;
  if (threadIdx.x == 0) word = __hip_atomic_load(next, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
  __syncthreads();
  seen[blockIdx.x * blockDim.x + threadIdx.x] = first * 10000u + word;
}

// Each lane reads its left neighbour's slot of a 64-word LDS table with a plain DS read: lane 0's address is 4 bytes
// before the allocation (wraps to 0xfffffffc), as compiled code reads a neighbour speculatively and discards it.
__global__ void read_left_neighbour(u32* out) {
  __shared__ u32 table[kLanes];
  table[threadIdx.x] = threadIdx.x + 100;
  __syncthreads();
  u32 left, address = (threadIdx.x - 1) * 4u + u32(reinterpret_cast<uintptr_t>(table));
  asm volatile("ds_read_b32 %0, %1\n s_waitcnt lgkmcnt(0)" : "=v"(left) : "v"(address) : "memory");
  out[threadIdx.x] = left;
}

// Reads 16 bytes at element `at` of `in` (a vectorised load of a buffer's last elements may run past its end), or
// writes them when `write`.
__global__ void read_or_write_vector(u32* in, u32* out, int at, int write) {
  if (threadIdx.x != 0) return;
  uint4* p = reinterpret_cast<uint4*>(in + at);
  if (write) *p = uint4{1, 2, 3, 4};
  else reinterpret_cast<uint4*>(out)[0] = *p;
}

namespace {

// vgpu's extension API, looked up at run time as programs that may also run on ROCm do (vgpu/hip_ext.h).
template <class F>
F ext(const char* name) {
  F f = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  if (!f) {
    std::fprintf(stderr, "%s: not running on vgpu\n", name);
    std::abort();
  }
  return f;
}
void set_racecheck(bool on) { ext<int (*)(int)>("vgpuSetRaceCheck")(on ? 1 : 0); }
void set_profiling(bool on) { ext<int (*)(int)>("vgpuSetProfiling")(on ? 1 : 0); }
int dispatch_instructions(vgpuInstructionProfile* out, int max) {
  return ext<int (*)(vgpuInstructionProfile*, int)>("vgpuGetLastDispatchInstructions")(out, max);
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

vgpuDispatchInfo last_dispatch() {
  vgpuDispatchInfo info{};
  EXPECT_EQ(ext<int (*)(vgpuDispatchInfo*)>("vgpuGetLastDispatch")(&info), 0);
  return info;
}

// "pc 0x..." of the first instruction of the last (profiled) dispatch whose text starts with `mnemonic`.
std::string pc_of(const std::string& mnemonic) {
  std::vector<vgpuInstructionProfile> insts(dispatch_instructions(nullptr, 0));
  dispatch_instructions(insts.data(), int(insts.size()));
  for (const vgpuInstructionProfile& i : insts)
    if (std::string(i.text).rfind(mnemonic + " ", 0) == 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "pc 0x%llx", i.pc);
      return buf;
    }
  ADD_FAILURE() << "no " << mnemonic << " in the profile";
  return "?";
}

struct Launch {
  hipError_t error;
  std::string stderr_text;
  vgpuDispatchInfo info;
};

// Launches `run` in the given mode, capturing stderr; the error is what synchronizing reports.
template <class F>
Launch launch(bool racecheck, F run) {
  set_racecheck(racecheck);
  testing::internal::CaptureStderr();
  run();
  Launch r;
  r.error = hipDeviceSynchronize();
  r.stderr_text = testing::internal::GetCapturedStderr();
  r.info = last_dispatch();
  (void)hipGetLastError();
  return r;
}

struct Buffers {
  std::vector<u32> data;
  DeviceBuffer<u32> src{kLanes}, out{kLanes};
  Buffers() : data(kLanes) {
    for (int i = 0; i < kLanes; ++i) data[i] = 0x9e3779b9u * u32(i + 1);
    (void)hipMemcpy(src.ptr, data.data(), src.bytes(), hipMemcpyHostToDevice);
    (void)hipMemset(out.ptr, 0, out.bytes());
  }
  std::vector<u32> result() const {
    std::vector<u32> r(kLanes);
    (void)hipMemcpy(r.data(), out.ptr, out.bytes(), hipMemcpyDeviceToHost);
    return r;
  }
};

// The hazard's reports: warning (counted once for the one wave-instruction, data landed at issue) and fault.
void check_hazard(const std::function<void(Buffers&)>& hazard, const std::string& kernel, const std::string& reader_wave) {
  Buffers b;
  set_profiling(true);
  Launch warned = launch(false, [&] { hazard(b); });
  set_profiling(false);
  ASSERT_EQ(warned.error, hipSuccess);
  EXPECT_EQ(warned.info.lds_dma_hazards, 1u);
  EXPECT_EQ(warned.info.racecheck, 0);
  EXPECT_EQ(b.result(), b.data) << "by default the data lands when the load is issued";
  const std::string reader = pc_of("ds_read_b32"), load = pc_of("global_load_lds_dword");
  for (const std::string& part : std::vector<std::string>{std::string("warning: LDS-DMA hazard in kernel "), kernel, "at " + reader,
                                  "ds_read_b32", reader_wave, "lane 0", "load into LDS at " + load,
                                  std::string("global_load_lds_dword"), std::string("wave 0 may still be writing")})
    expect_contains(warned.stderr_text, part);
  expect_contains(warned.stderr_text, "1 LDS-DMA hazard ");

  Launch faulted = launch(true, [&] { hazard(b); });
  EXPECT_EQ(faulted.error, hipErrorLaunchFailure) << hipGetErrorName(faulted.error);
  EXPECT_EQ(faulted.info.racecheck, 1);
  const std::string text = hipGetErrorString(hipErrorLaunchFailure);
  for (const std::string& part : std::vector<std::string>{std::string("LDS-DMA hazard in kernel "), kernel, "at " + reader, reader_wave,
                                  "load into LDS at " + load, std::string("HK_VGPU_RACECHECK=1")})
    expect_contains(text, part);
}

// The fixed kernel: right data, no hazard, silent, in both modes.
void check_clean(const std::function<void(Buffers&)>& fixed) {
  for (bool racecheck : {false, true}) {
    SCOPED_TRACE(racecheck ? "race check" : "default");
    Buffers b;
    Launch r = launch(racecheck, [&] { fixed(b); });
    ASSERT_EQ(r.error, hipSuccess) << hipGetErrorString(r.error);
    EXPECT_EQ(r.info.lds_dma_hazards, 0u);
    EXPECT_EQ(r.info.lds_races, 0u);
    EXPECT_EQ(r.stderr_text.find("hazard"), std::string::npos) << r.stderr_text;
    EXPECT_EQ(b.result(), b.data);
  }
}

}  // namespace

TEST(LdsHazard, ReadBeforeTheLoadsWaitIsReportedWithBothPcs) {
  check_hazard([](Buffers& b) { dma_read_before_wait<<<1, kLanes, 4 * kLanes>>>(b.src.ptr, b.out.ptr); },
               "dma_read_before_wait", "wave 0");
}

TEST(LdsHazard, ReadAfterTheLoadsWaitIsClean) {
  check_clean([](Buffers& b) { dma_read_after_wait<<<1, kLanes, 4 * kLanes>>>(b.src.ptr, b.out.ptr); });
}

TEST(LdsHazard, OtherWavesReadWithoutABarrierAfterTheWaitIsReported) {
  check_hazard([](Buffers& b) { dma_other_wave_reads<<<1, 2 * kLanes, 4 * kLanes>>>(b.src.ptr, b.out.ptr, 0); },
               "dma_other_wave_reads", "wave 1");
}

TEST(LdsHazard, OtherWavesReadAfterWaitAndBarrierIsClean) {
  check_clean([](Buffers& b) { dma_other_wave_reads<<<1, 2 * kLanes, 4 * kLanes>>>(b.src.ptr, b.out.ptr, 1); });
}

TEST(LdsHazard, PlainRaceBetweenWavesIsFoundInRaceCheckMode) {
  Buffers b;
  set_profiling(true);
  Launch plain = launch(false, [&] { wave_writes_other_reads<<<1, 2 * kLanes, 4 * kLanes>>>(b.out.ptr, 0); });
  set_profiling(false);
  ASSERT_EQ(plain.error, hipSuccess) << "outside race-check mode races are not looked for";
  EXPECT_EQ(plain.info.lds_races, 0u);
  const std::string writer = pc_of("ds_write_b32"), reader = pc_of("ds_read_b32");

  Launch faulted = launch(true, [&] { wave_writes_other_reads<<<1, 2 * kLanes, 4 * kLanes>>>(b.out.ptr, 0); });
  EXPECT_EQ(faulted.error, hipErrorLaunchFailure) << hipGetErrorName(faulted.error);
  EXPECT_EQ(faulted.info.lds_races, 1u);
  const std::string text = hipGetErrorString(hipErrorLaunchFailure);
  for (const std::string& part : std::vector<std::string>{std::string("LDS race between waves in kernel "), std::string("wave_writes_other_reads"),
                                  "at " + reader, std::string("wave 1"), "that wave 0 wrote at " + writer,
                                  std::string("with no barrier between")})
    expect_contains(text, part);

  Launch fixed = launch(true, [&] { wave_writes_other_reads<<<1, 2 * kLanes, 4 * kLanes>>>(b.out.ptr, 1); });
  ASSERT_EQ(fixed.error, hipSuccess) << hipGetErrorString(fixed.error);
  EXPECT_EQ(fixed.info.lds_races, 0u);
  const std::vector<u32> got = b.result();
  for (int l = 0; l < kLanes; ++l) EXPECT_EQ(got[l], u32(l) * 3) << "lane " << l;
}

TEST(LdsRace, WavesLeaveABarrierTogether) {
  constexpr int kBlock = 4 * kLanes, kBlocks = 3;
  DeviceBuffer<u32> next(1), seen(kBlock * kBlocks);
  const u32 next_value = 42;
  ASSERT_EQ(hipMemcpy(next.ptr, &next_value, sizeof next_value, hipMemcpyHostToDevice), hipSuccess);
  Launch plain = launch(false, [&] { one_word_reused_after_barrier<<<kBlocks, kBlock>>>(next.ptr, seen.ptr); });
  ASSERT_EQ(plain.error, hipSuccess) << hipGetErrorString(plain.error);
  std::vector<u32> got(kBlock * kBlocks);
  ASSERT_EQ(hipMemcpy(got.data(), seen.ptr, seen.bytes(), hipMemcpyDeviceToHost), hipSuccess);
  for (int b = 0; b < kBlocks; ++b)
    for (int t = 0; t < kBlock; ++t)
      ASSERT_EQ(got[b * kBlock + t], (1000u + b) * 10000u + next_value) << "workgroup " << b << ", work-item " << t;

  Launch faulted = launch(true, [&] { one_word_reused_after_barrier<<<kBlocks, kBlock>>>(next.ptr, seen.ptr); });
  EXPECT_EQ(faulted.error, hipErrorLaunchFailure) << hipGetErrorName(faulted.error);
  EXPECT_EQ(faulted.info.lds_races, 1u);
}

TEST(LdsBounds, ReadPastTheAllocationReadsZeroOutsideRaceCheckMode) {
  DeviceBuffer<u32> out(kLanes);
  set_racecheck(false);
  read_left_neighbour<<<1, kLanes>>>(out.ptr);
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess) << hipGetErrorString(hipGetLastError());
  std::vector<u32> got(kLanes);
  ASSERT_EQ(hipMemcpy(got.data(), out.ptr, out.bytes(), hipMemcpyDeviceToHost), hipSuccess);
  EXPECT_EQ(got[0], 0u) << "the hardware's LDS range check returns 0";
  for (int l = 1; l < kLanes; ++l) EXPECT_EQ(got[l], u32(l - 1 + 100)) << "lane " << l;

  // Race-check mode treats it as the bug it usually is.
  set_racecheck(true);
  read_left_neighbour<<<1, kLanes>>>(out.ptr);
  EXPECT_EQ(hipGetLastError(), hipErrorIllegalAddress);
  EXPECT_EQ(hipDeviceSynchronize(), hipErrorIllegalAddress);
  expect_contains(hipGetErrorString(hipErrorIllegalAddress), "past the workgroup's 256-byte allocation");
}

TEST(GlobalBounds, ReadPastTheEndInsideThePageReadsZeroOutsideRaceCheckMode) {
  DeviceBuffer<u32> in(10), out(4);  // 40 bytes: a 16-byte load at element 8 reads 8 bytes past the end
  const std::vector<u32> values = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
  ASSERT_EQ(hipMemcpy(in.ptr, values.data(), in.bytes(), hipMemcpyHostToDevice), hipSuccess);
  set_racecheck(false);
  read_or_write_vector<<<1, kLanes>>>(in.ptr, out.ptr, 8, 0);
  ASSERT_EQ(hipDeviceSynchronize(), hipSuccess) << hipGetErrorString(hipGetLastError());
  std::vector<u32> got(4);
  ASSERT_EQ(hipMemcpy(got.data(), out.ptr, out.bytes(), hipMemcpyDeviceToHost), hipSuccess);
  EXPECT_EQ(got, (std::vector<u32>{18, 19, 0, 0})) << "the bytes past the end, inside the page, read 0";

  // Past the page, and any write past the end, still fault; race-check mode faults on the read too.
  read_or_write_vector<<<1, kLanes>>>(in.ptr, out.ptr, 1024, 0);
  EXPECT_EQ(hipDeviceSynchronize(), hipErrorIllegalAddress);
  expect_contains(hipGetErrorString(hipErrorIllegalAddress), "outside every allocation");
  read_or_write_vector<<<1, kLanes>>>(in.ptr, out.ptr, 8, 1);
  EXPECT_EQ(hipDeviceSynchronize(), hipErrorIllegalAddress);
  expect_contains(hipGetErrorString(hipErrorIllegalAddress), "its last 8 bytes lie past the end of the 40-byte allocation");
  set_racecheck(true);
  read_or_write_vector<<<1, kLanes>>>(in.ptr, out.ptr, 8, 0);
  EXPECT_EQ(hipDeviceSynchronize(), hipErrorIllegalAddress);
  expect_contains(hipGetErrorString(hipErrorIllegalAddress), "outside every allocation");
}
