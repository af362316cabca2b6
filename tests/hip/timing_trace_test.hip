// The timing model's timeline (HK_VGPU_TIMING_TRACE, docs/vgpu-timing.md "Timeline"): microkernels whose replayed
// round is known are traced, the Chrome trace JSON is parsed back, and its slices are checked against the cycle
// counts the model's own facts give (vgpu/arch.h TimingFacts):
//   - every wave's slices tile the round exactly, and their sums by cause are the report's wave-cycles;
//   - a chain of dependent 16x16 MFMAs: issue, then "matrix core busy" for the rest of the 4 passes, MFMA after MFMA;
//   - two waves meeting at a barrier: the early one waits from its arrival, both leave barrier_cycles after the last
//     arrives (the late one after its s_nop waits); the stall table's top entry is that s_barrier, by both waits;
//   - an LDS read waited on with s_waitcnt lgkmcnt(0): the wait ends the port's transfer plus lds_latency after the
//     read issued, and is charged to the s_waitcnt.
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "hip_check.h"
#include "hk/arch.h"
#include "host/json.h"
#include "vgpu/arch.h"
#include "vgpu/hip_ext.h"

namespace {
using target = hk::arch::current;
}  // namespace

__global__ void mfma_chain(float* out, int iters) {
  hk::arch::bf16_frag a, b;
  for (int i = 0; i < hk::arch::mfma_elems; ++i) a[i] = __bf16(float(threadIdx.x % 5)), b[i] = __bf16(0.25f);
  hk::arch::f32x4 c = {};
  for (int i = 0; i < iters; i += 16) {
#pragma unroll
    for (int j = 0; j < 16; ++j) c = target::mma16(a, b, c);
  }
  out[threadIdx.x] = c[0];
}

// Wave 0 spends four s_nop 7 before the barrier; wave 1 arrives at once.
__global__ void barrier_meet(int* out) {
  if (threadIdx.x < 64) asm volatile("s_nop 7\n s_nop 7\n s_nop 7\n s_nop 7");
  __syncthreads();
  out[threadIdx.x] = int(threadIdx.x);
}

// One wave: an LDS read (conflict-free: 64 consecutive dwords) waited on at once.
__global__ void lds_wait(float* out) {
  __shared__ float tile[64];
  tile[threadIdx.x] = float(threadIdx.x) * 2.f;
  __syncthreads();
  const unsigned addr = unsigned(reinterpret_cast<uintptr_t>(&tile[(threadIdx.x + 1) % 64]));
  float v;
  asm volatile("ds_read_b32 %0, %1\n s_waitcnt lgkmcnt(0)" : "=v"(v) : "v"(addr) : "memory");
  out[threadIdx.x] = v;
}

namespace {

template <class F>
F ext(const char* name) { return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name)); }

struct Slice {
  double ts, dur;
  std::string name, cat, pc;
  std::vector<std::string> insts;
  double end() const { return ts + dur; }
};

// One traced launch: the model's report and the trace's slices per wave (tid), in time order, and its counters.
struct Traced {
  vgpuTimingInfo info{};
  std::vector<vgpuTimingStall> stalls;  // the report's top stalls (vgpuGetTimingStalls)
  std::map<int, std::vector<Slice>> waves;
  std::map<std::string, double> counter_busy;  // per counter track: cycles at 1
};

template <class F>
Traced trace(const vgpu::ProductInfo& product, const std::string& path, F launch) {
  Traced t;
  auto set_trace = ext<int (*)(const char*)>("vgpuSetTimingTrace");
  auto set_timing = ext<int (*)(const char*, int)>("vgpuSetTiming");
  auto last = ext<int (*)(vgpuTimingInfo*)>("vgpuGetLastTiming");
  if (!set_trace || !set_timing || !last) return ADD_FAILURE() << "vgpu's timing extension is missing", t;
  std::remove(path.c_str());
  EXPECT_EQ(set_trace(path.c_str()), 0);
  EXPECT_EQ(set_timing(std::string(product.name).c_str(), 1), 0);
  launch();
  EXPECT_EQ(hipDeviceSynchronize(), hipSuccess);
  EXPECT_EQ(last(&t.info), 0);
  if (auto stalls = ext<int (*)(int, vgpuTimingStall*, int)>("vgpuGetTimingStalls")) {
    t.stalls.resize(size_t(stalls(-1, nullptr, 0)));
    stalls(-1, t.stalls.data(), int(t.stalls.size()));
  }
  set_timing(nullptr, 0);
  set_trace("");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const hk_host::Json events = hk_host::Json::parse(text.str());
  std::map<std::string, double> opened;
  for (const hk_host::Json& e : events.items) {
    EXPECT_EQ(e["pid"].num, 1) << "one dispatch, one process";
    if (e["ph"].str == "X") {
      Slice s{e["ts"].num, e["dur"].num, e["name"].str, e["cat"].str, e["args"]["pc"].str, {}};
      for (const hk_host::Json& i : e["args"]["insts"].items) s.insts.push_back(i.str);
      EXPECT_EQ(size_t(e["args"]["n"].num), s.cat == "issue" ? std::max(s.insts.size(), size_t(1)) : 1);
      t.waves[int(e["tid"].num)].push_back(s);
    } else if (e["ph"].str == "C") {
      if (e["args"]["busy"].num == 1) opened[e["name"].str] = e["ts"].num;
      else t.counter_busy[e["name"].str] += e["ts"].num - opened[e["name"].str];
    }
  }
  for (auto& [tid, slices] : t.waves)
    std::stable_sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) { return a.ts < b.ts; });
  return t;
}

// Every wave's slices tile [0, replayed round) with no gap or overlap, and sum by cause to the report's wave-cycles.
void expect_tiled(const Traced& t) {
  EXPECT_EQ(t.waves.size(), size_t(t.info.waves));
  std::map<std::string, double> by_name;
  double issued = 0;
  for (const auto& [tid, slices] : t.waves) {
    double at = 0;
    for (const Slice& s : slices) {
      EXPECT_EQ(s.ts, at) << "wave " << tid << ": slice " << s.name << " does not start where the last ended";
      EXPECT_GT(s.dur, 0) << s.name;
      at = s.end();
      (s.cat == "issue" ? issued : by_name[s.name]) += s.dur;
    }
    EXPECT_EQ(at, t.info.replayed_cycles) << "wave " << tid << " ends before the round";
  }
  auto name = ext<const char* (*)(int)>("vgpuStallCauseName");
  double all = 0;
  for (int c = 0; c < VGPU_STALL_CAUSES; ++c) {
    all += t.info.wave_cycles[c];
    const double traced = c == VGPU_STALL_ISSUED ? issued : by_name[name(c)];
    EXPECT_EQ(traced, t.info.wave_cycles[c]) << name(c);
  }
  EXPECT_EQ(all, t.info.waves * t.info.replayed_cycles) << "the causes add up to waves x round";
}

std::vector<const vgpu::ProductInfo*> products_of_device() {
  std::vector<const vgpu::ProductInfo*> out;
  for (const vgpu::ProductInfo& p : vgpu::all_products())
    if (vgpu::arch_info(p.arch).name == test_arch()) out.push_back(&p);
  return out;
}

// "0x1a4 v_mfma_..." -> "0x1a4": an instruction's PC as the slices' args list it.
std::string pc_of(const std::string& inst) { return inst.substr(0, inst.find(' ')); }

std::string trace_path(const char* what) { return "timing_trace_test." + test_arch() + "." + what + ".json"; }

TEST(TimingTrace, DependentMfmaChain) {
  for (const vgpu::ProductInfo* p : products_of_device()) {
    SCOPED_TRACE(std::string(p->name));
    const vgpu::TimingFacts& f = p->timing;
    const uint32_t simds = vgpu::arch_info(p->arch).simds_per_cu;
    const int iters = 128;
    DeviceBuffer<float> out(64);
    const Traced t = trace(*p, trace_path("mfma"), [&] { mfma_chain<<<1, 64>>>(out.ptr, iters); });
    expect_tiled(t);
    ASSERT_EQ(t.waves.size(), 1u);
    const std::vector<Slice>& w = t.waves.begin()->second;
    // A 16x16 MFMA is 4 passes (timing.md 3): its issue turn, then the matrix core busy for the rest, then the next.
    const double mfma_cycles = 4.0 * f.mfma_pass_cycles;
    int mfmas = 0, waits = 0;
    double last_issue = -1;  // the latest MFMA's issue cycle: the last cycle of its issued slice
    for (size_t i = 0; i < w.size(); ++i) {
      if (w[i].cat == "issue" && w[i].name == "MFMA") {
        mfmas += int(w[i].insts.size());
        EXPECT_EQ(w[i].insts.size(), 1u) << "dependent MFMAs never issue back to back";
        last_issue = w[i].end() - 1;
      }
      if (w[i].name != "matrix core busy") continue;
      ++waits;
      ASSERT_GE(last_issue, 0) << "a wait for the matrix core before any MFMA";
      ASSERT_LT(i + 1, w.size());
      // It ends where the SIMD's turn that issues the next MFMA begins, when the last one's passes are done.
      EXPECT_EQ(w[i].end(), last_issue + mfma_cycles + 1 - simds) << "at " << w[i].ts;
      EXPECT_EQ(w[i + 1].name, "MFMA");
      EXPECT_EQ(w[i + 1].dur, double(simds)) << "the next MFMA issues on the SIMD's first turn after the passes";
      EXPECT_EQ(w[i].pc, pc_of(w[i + 1].insts[0])) << "the wait is the waiting MFMA's";
    }
    EXPECT_EQ(mfmas, iters);
    EXPECT_GE(waits, iters - iters / 16) << "every MFMA but each unrolled block's first waits for the one before";
    EXPECT_EQ(t.counter_busy.at("SIMD0 matrix core"), iters * mfma_cycles);
  }
}

TEST(TimingTrace, TwoWavesMeetAtABarrier) {
  for (const vgpu::ProductInfo* p : products_of_device()) {
    SCOPED_TRACE(std::string(p->name));
    const vgpu::TimingFacts& f = p->timing;
    DeviceBuffer<int> out(128);
    const Traced t = trace(*p, trace_path("barrier"), [&] { barrier_meet<<<1, 128>>>(out.ptr); });
    expect_tiled(t);
    ASSERT_EQ(t.waves.size(), 2u);
    const std::vector<Slice>& late = t.waves.at(1);  // wave 0: the s_nops
    const std::vector<Slice>& early = t.waves.at(2);
    auto only = [](const std::vector<Slice>& w, const char* name) {
      std::vector<Slice> out;
      for (const Slice& s : w)
        if (s.name == name) out.push_back(s);
      return out;
    };
    const std::vector<Slice> b_late = only(late, "barrier"), b_early = only(early, "barrier");
    ASSERT_EQ(b_late.size(), 1u);
    ASSERT_EQ(b_early.size(), 1u);
    // Four s_nop 7: eight wait states each, the first cycle of each its issue.
    double nops = 0;
    for (const Slice& s : only(late, "s_nop/s_sleep")) nops += s.dur;
    EXPECT_EQ(nops, 4.0 * (8 * f.wait_state_cycles - 1));
    EXPECT_LT(b_early[0].ts, b_late[0].ts) << "wave 1 arrives first";
    EXPECT_EQ(b_early[0].end(), b_late[0].end()) << "both leave together";
    EXPECT_EQ(b_late[0].dur, double(f.barrier_cycles - 1)) << "barrier_cycles after the last arrival (its issue)";
    EXPECT_GT(b_early[0].dur, nops) << "the early wave waits out the late one's s_nops";
    // The stall table: the s_barrier (one PC, both waves) stalled most, by exactly the two waits.
    ASSERT_FALSE(t.stalls.empty());
    char pc[32];
    std::snprintf(pc, sizeof pc, "0x%llx", t.stalls[0].pc);
    EXPECT_EQ(pc, b_late[0].pc);
    EXPECT_EQ(t.stalls[0].cause, VGPU_STALL_BARRIER);
    EXPECT_EQ(t.stalls[0].cycles, b_early[0].dur + b_late[0].dur);
    EXPECT_EQ(t.stalls[0].issued, 2u);
  }
}

TEST(TimingTrace, LdsReadWaitedOnWithLgkmcnt) {
  for (const vgpu::ProductInfo* p : products_of_device()) {
    SCOPED_TRACE(std::string(p->name));
    const vgpu::TimingFacts& f = p->timing;
    const uint32_t simds = vgpu::arch_info(p->arch).simds_per_cu;
    DeviceBuffer<float> out(64);
    const Traced t = trace(*p, trace_path("lds"), [&] { lds_wait<<<1, 64>>>(out.ptr); });
    expect_tiled(t);
    ASSERT_EQ(t.waves.size(), 1u);
    const std::vector<Slice>& w = t.waves.begin()->second;
    size_t read = w.size();
    for (size_t i = 0; i < w.size(); ++i)
      if (w[i].name == "LDS" && w[i].insts.back().find("ds_read_b32") != std::string::npos) read = i;
    ASSERT_LT(read + 2, w.size()) << "no ds_read_b32 followed by its wait";
    const double issue = w[read].end() - 1;  // the run's last instruction issues in its last cycle
    EXPECT_EQ(w[read + 1].name, "s_waitcnt");
    EXPECT_EQ(w[read + 1].dur, double(simds)) << "s_waitcnt issues on the wave's next turn";
    const Slice& wait = w[read + 2];
    EXPECT_EQ(wait.name, "lgkmcnt wait");
    EXPECT_EQ(wait.pc, pc_of(w[read + 1].insts[0])) << "charged to the s_waitcnt";
    // 64 lanes x 4 bytes through one port, then the LDS latency.
    const double done = issue + std::ceil(64.0 * 4 / f.lds_port_bytes_per_clk) + f.lds_latency;
    EXPECT_EQ(wait.end(), done);
    EXPECT_EQ(t.counter_busy.count("LDS port 0"), 1u);
  }
}

}  // namespace
