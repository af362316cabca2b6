// Dispatch: a kernel's launch checked against the device, its program decoded once (cached per code object and
// kernel), its kernarg segment and dispatch packet made visible, and its workgroups run on a pool of worker threads
// (HK_VGPU_THREADS), each reusing its register files and LDS between workgroups.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <thread>
#include <vector>

#include "host/printf_buffer.h"
#include "timing/model.h"
#include "timing/timeline.h"
#include "vgpu/device.h"
#include "workgroup.h"

namespace vgpu {
namespace {

// Buffered printf's buffer per dispatch: what a kernel prints beyond it is dropped (by the kernel's own check).
constexpr uint32_t kPrintfBufferBytes = 1u << 20;

// Workgroups run one at a time to the end. One still running after kLongWorkgroup wave instructions is checked: if its
// waves spin (workgroup_waits), it waits on another workgroup (a grid barrier, a flag another block sets) that
// hardware would be running beside it. From then on the worker keeps more workgroups in flight, up to its share of
// what the device holds at once, and runs them in turn, up to kSlice instructions per wave each time. Workgroups that
// wait on nobody give the same results either way.
constexpr uint64_t kLongWorkgroup = uint64_t(1) << 20;
constexpr uint64_t kSlice = uint64_t(1) << 10;
// The memory all of one dispatch's workgroups in flight may take (register files, LDS, private memory).
constexpr uint64_t kInFlightBytes = uint64_t(4) << 30;

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 0) : fallback;
}

// The HSA kernel dispatch packet some kernels read through the dispatch pointer (workgroup and grid sizes).
struct DispatchPacket {
  uint16_t header, setup, workgroup_size_x, workgroup_size_y, workgroup_size_z, reserved0;
  uint32_t grid_size_x, grid_size_y, grid_size_z, private_segment_size, group_segment_size;
  uint64_t kernel_object, kernarg_address, reserved2, completion_signal;
};
static_assert(sizeof(DispatchPacket) == 64);

// The fault for workgroups that wait on each other forever: named at the oldest one's first live wave.
void report_workgroup_deadlock(DispatchCtx& ctx, const std::deque<WorkerStorage*>& in_flight, uint64_t resident,
                               uint64_t stalled) {
  WorkerStorage* oldest = *std::min_element(in_flight.begin(), in_flight.end(), [](auto* a, auto* b) {
    return a->wg.linear < b->wg.linear;
  });
  Wave* w = &oldest->waves[0];
  for (int i = 0; i < oldest->nwaves; ++i)
    if (oldest->waves[i].state == WaveState::running || oldest->waves[i].state == WaveState::barrier) {
      w = &oldest->waves[i];
      break;
    }
  const Inst& at = ctx.prog->insts[size_t(std::max(w->pc, 1) - 1)];
  w->fault(at, FaultKind::workgroup_deadlock, -1,
           std::to_string(ctx.launch.grid.count()) + " workgroups, " + std::to_string(resident) +
               " resident at once on this device: the resident ones ran " + std::to_string(stalled) +
               " instructions and none ended (waiting for a workgroup that cannot start?)");
}

// Runs `worker` on `n` threads (on the calling thread when n <= 1) and waits for all of them.
template <class F>
void run_on_threads(unsigned n, F& worker) {
  if (n <= 1) return worker();
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < n; ++i) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
}

}  // namespace

Device::Device(const ProductInfo& product) : arch_(product.arch), product_(product) {
  threads_ = unsigned(env_u64("HK_VGPU_THREADS", std::max(1u, std::thread::hardware_concurrency())));
  profiling_ = env_u64("HK_VGPU_PROFILE", 0) != 0;
  racecheck_ = env_u64("HK_VGPU_RACECHECK", 0) != 0;
  if (threads_ == 0) threads_ = 1;
  // HK_VGPU_TIMING=PRODUCT turns the timing model on (a product of this device's arch; others are refused at launch).
  if (const char* t = std::getenv("HK_VGPU_TIMING"); t && *t) {
    timing_ = find_product(t);
    if (!timing_) std::fprintf(stderr, "vgpu: ignoring HK_VGPU_TIMING=%s (one of mi300x, mi325x, mi350x, mi355x)\n", t);
  }
  timing_sample_only_ = env_u64("HK_VGPU_TIMING_SAMPLE_ONLY", 0) != 0;
  if (const char* t = std::getenv("HK_VGPU_TIMING_TRACE"); t && *t) timing_trace_ = t;
}

Device::~Device() = default;

void Device::set_timing_trace(const std::string& path) {
  std::lock_guard lock(cache_mu_);
  timing_trace_ = path;
  timeline_file_.reset();
}

Fault Device::dispatch(const std::shared_ptr<const CodeObject>& co, const KernelInfo& kernel, const LaunchParams& lp,
                       DispatchStats* stats) {
  auto bad = [&](std::string why) {
    Fault f;
    f.kind = FaultKind::bad_launch;
    f.kernel = kernel.name;
    f.detail = std::move(why);
    return f;
  };
  if (co->arch != arch_)
    return bad("code object is for " + std::string(arch_info(co->arch).name) + ", device is " +
               std::string(info().name));
  const uint64_t items = lp.block.count();
  if (lp.grid.count() == 0 || items == 0) return bad("empty grid or block");
  if (items > kernel.max_flat_workgroup_size || items > 1024)
    return bad("block of " + std::to_string(items) + " work-items exceeds the kernel's maximum of " +
               std::to_string(std::min<uint32_t>(kernel.max_flat_workgroup_size, 1024)));
  const uint64_t lds = uint64_t(kernel.group_segment_fixed_size) + lp.dynamic_lds;
  if (lds > info().lds_bytes)
    return bad("needs " + std::to_string(lds) + " bytes of LDS, " + std::string(info().name) + " has " +
               std::to_string(info().lds_bytes));

  if (timing_ && timing_->arch != arch_)
    return bad("the timing model's product " + std::string(timing_->name) + " is not a " + std::string(info().name) +
               " device");

  std::shared_ptr<Program> prog;
  {
    std::lock_guard lock(cache_mu_);
    auto& slot = programs_[{co->serial, kernel.entry}];
    if (!slot) slot = decode_kernel(*co, kernel);
    prog = slot;
  }

  // Kernarg segment: at least the metadata's size, zero padded, visible to the kernel as global memory.
  std::vector<uint64_t> kernarg((std::max<size_t>(lp.kernarg_size, kernel.kernarg_segment_size) + 7) / 8 + 1, 0);
  if (lp.kernarg && lp.kernarg_size) std::memcpy(kernarg.data(), lp.kernarg, lp.kernarg_size);
  DispatchPacket packet{};
  packet.workgroup_size_x = uint16_t(lp.block.x), packet.workgroup_size_y = uint16_t(lp.block.y);
  packet.workgroup_size_z = uint16_t(lp.block.z);
  packet.grid_size_x = lp.grid.x * lp.block.x, packet.grid_size_y = lp.grid.y * lp.block.y;
  packet.grid_size_z = lp.grid.z * lp.block.z;
  packet.private_segment_size = kernel.private_segment_fixed_size;
  packet.group_segment_size = uint32_t(lds);
  packet.kernarg_address = uint64_t(kernarg.data());
  memory_.add(kernarg.data(), kernarg.size() * 8, MemoryKind::dispatch);
  memory_.add(&packet, sizeof packet, MemoryKind::dispatch);

  DispatchCtx ctx;
  ctx.prog = prog.get();
  ctx.memory = &memory_;
  ctx.arch = &info();
  ctx.product = &product_;
  ctx.clock_base = clock_.load();
  ctx.launch = lp;
  ctx.launch.kernarg_size = kernarg.size() * 8;
  ctx.kernarg_addr = uint64_t(kernarg.data());
  ctx.code_base = image_base(*co) + kernel.entry;
  ctx.dispatch_packet_addr = uint64_t(&packet);
  ctx.lds_bytes = uint32_t(lds);
  ctx.private_bytes = (kernel.private_segment_fixed_size + 15) / 16 * 16 + (kernel.uses_dynamic_stack ? 16384 : 0);
  ctx.watchdog = env_u64("HK_VGPU_BARRIER_WATCHDOG", 1ull << 24);
  ctx.instruction_limit = env_u64("HK_VGPU_INSTRUCTION_LIMIT", 0);
  ctx.profiling = profiling_;
  ctx.racecheck = racecheck_;
  if (profiling_) ctx.profile.resize(prog->insts.size());

  // The timing model records the workgroups it samples; in sample-only mode those are the only ones that run.
  TimingSample sample;
  std::vector<WorkgroupTrace> traces, probes;
  if (timing_) {
    sample = plan_timing_sample(*timing_, *prog, lp, uint32_t(lds));
    traces.resize(sample.workgroups.size());
    probes.resize(sample.probes.size());
  }
  const bool sample_only = timing_ && timing_sample_only_;
  const uint64_t groups = sample_only ? sample.workgroups.size() : lp.grid.count();
  auto group_id = [&](uint64_t i) { return sample_only ? sample.workgroups[i] : i; };
  auto find = [](const std::vector<uint64_t>& ids, std::vector<WorkgroupTrace>& out, uint64_t g) -> WorkgroupTrace* {
    auto it = std::lower_bound(ids.begin(), ids.end(), g);
    return it != ids.end() && *it == g ? &out[size_t(it - ids.begin())] : nullptr;
  };
  auto trace_of = [&](uint64_t g) -> WorkgroupTrace* {
    if (!timing_) return nullptr;
    WorkgroupTrace* t = find(sample.workgroups, traces, g);
    return t ? t : find(sample.probes, probes, g);
  };
  const unsigned nthreads = unsigned(std::min<uint64_t>(threads_, groups));
  // Workgroups in flight per worker (see kLongWorkgroup): its share of the device's resident workgroups, as many as
  // fit kInFlightBytes.
  const uint32_t waves_per_group = uint32_t((items + kLanes - 1) / kLanes);
  const uint64_t group_bytes =
      uint64_t(waves_per_group) * kLanes * (uint64_t(prog->vgprs) * 4 + ctx.private_bytes) + lds + 1;
  const uint64_t resident = std::max<uint64_t>(
      1, std::min<uint64_t>(uint64_t(info().workgroups_per_cu(waves_per_group, lds)) * product_.compute_units,
                            kInFlightBytes / group_bytes));
  const size_t in_flight_cap = size_t((resident + nthreads - 1) / nthreads);
  // printf and the other ockl services: a hostcall buffer with a packet for every wave that can wait at once.
  std::unique_ptr<HostcallBuffer> hostcall;
  for (const KernelArg& a : kernel.args)
    if (a.value_kind == "hidden_hostcall_buffer" && a.size == 8 && a.offset + 8 <= kernarg.size() * 8) {
      hostcall = std::make_unique<HostcallBuffer>(memory_, uint32_t(nthreads * in_flight_cap * waves_per_group));
      const uint64_t address = hostcall->device_address();
      std::memcpy(reinterpret_cast<uint8_t*>(kernarg.data()) + a.offset, &address, 8);
      ctx.hostcall = hostcall.get();
    }
  // Buffered printf: a buffer the kernel appends records to, printed when the dispatch ends.
  std::unique_ptr<PrintfBuffer> printf_buffer;
  for (const KernelArg& a : kernel.args)
    if (a.value_kind == "hidden_printf_buffer" && a.size == 8 && a.offset + 8 <= kernarg.size() * 8) {
      printf_buffer = std::make_unique<PrintfBuffer>(memory_, kPrintfBufferBytes);
      const uint64_t address = printf_buffer->device_address();
      std::memcpy(reinterpret_cast<uint8_t*>(kernarg.data()) + a.offset, &address, 8);
    }
  std::atomic<uint64_t> next{0};
  auto prepare = [&](WorkerStorage& st) {
    const int nwaves = int((items + kLanes - 1) / kLanes);
    st.vgprs.assign(size_t(nwaves) * prog->vgprs * kLanes, 0);
    st.lds.assign(lds, 0);
    st.priv.assign(size_t(nwaves) * kLanes * ctx.private_bytes, 0);
    st.waves.resize(nwaves);
    if (ctx.profiling) st.profile.resize(prog->insts.size());
  };
  std::atomic<uint64_t> finished{0};  // workgroups ended, for the deadlock check below
  auto worker = [&] {
    std::vector<std::unique_ptr<WorkerStorage>> slots;
    std::vector<WorkerStorage*> idle;
    std::deque<WorkerStorage*> in_flight;
    auto take_slot = [&] {
      if (idle.empty()) {
        slots.push_back(std::make_unique<WorkerStorage>());
        prepare(*slots.back());
        idle.push_back(slots.back().get());
      }
      WorkerStorage* st = idle.back();
      idle.pop_back();
      return st;
    };
    bool interleave = false, all_taken = false;  // all_taken: every workgroup of the grid has been handed out
    uint64_t stalled = 0, finished_seen = 0;  // instructions run since a workgroup of the dispatch last ended
    while (!ctx.faulted.load(std::memory_order_relaxed)) {
      if (!all_taken && (in_flight.empty() || (interleave && in_flight.size() < in_flight_cap))) {
        const uint64_t g = next.fetch_add(1);
        all_taken = g + 1 >= groups;
        if (g < groups) {
          WorkerStorage* st = take_slot();
          if (WorkgroupTrace* t = trace_of(group_id(g))) {
            run_workgroup(ctx, group_id(g), *st, t);  // a workgroup the timing model records runs alone
            idle.push_back(st);
            continue;
          }
          start_workgroup(ctx, group_id(g), *st);
          in_flight.push_back(st);
        }
      }
      if (in_flight.empty()) break;
      WorkerStorage* st = in_flight.front();
      in_flight.pop_front();
      uint64_t ran = 0;
      if (step_workgroup(ctx, *st, interleave ? kSlice : kLongWorkgroup, ran)) {
        idle.push_back(st);
        finished.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      if (!interleave && !workgroup_waits(ctx, *st)) {
        in_flight.push_front(st);  // long, not waiting: it keeps running alone
        continue;
      }
      interleave = true;
      in_flight.push_back(st);
      // Waits hardware would never satisfy either: every slot is taken by a workgroup waiting for one that cannot
      // start until some of them ends, and none has ended while each of their waves ran, on average, the barrier
      // watchdog's budget (HK_VGPU_BARRIER_WATCHDOG).
      if (const uint64_t f = finished.load(std::memory_order_relaxed); f != finished_seen) finished_seen = f, stalled = 0;
      stalled += ran;
      if (next.load(std::memory_order_relaxed) < groups && in_flight.size() >= in_flight_cap &&
          stalled > ctx.watchdog * waves_per_group * in_flight.size()) {
        report_workgroup_deadlock(ctx, in_flight, resident, stalled);
        break;
      }
    }
    if (ctx.profiling) {
      std::lock_guard lock(ctx.profile_mu);
      for (auto& st : slots) ctx.profile.add(st->profile);
    }
  };
  auto t0 = std::chrono::steady_clock::now();
  run_on_threads(nthreads, worker);
  // Sample-only: the probes run after the sample, one at a time; two that match the sample's work end them.
  if (sample_only && !probes.empty() && !ctx.faulted.load()) {
    WorkerStorage st;
    prepare(st);
    for (size_t i = 0; i < probes.size() && !ctx.faulted.load(); ++i) {
      if (i == 2 && probes_match_sample(traces, probes, 2)) break;
      run_workgroup(ctx, sample.probes[i], st, &probes[i]);
    }
    if (ctx.profiling) {
      std::lock_guard lock(ctx.profile_mu);
      ctx.profile.add(st.profile);
    }
  }
  auto t1 = std::chrono::steady_clock::now();
  memory_.release(kernarg.data());
  memory_.release(&packet);
  // Later dispatches read later clocks: every wave of this one read less than base + its instructions' cycles.
  clock_.fetch_add(kCyclesPerInstruction * ctx.instructions.load() + 1);
  summarize_lds_hazards(ctx);
  if (printf_buffer) printf_buffer->print(co->printf_formats);
  if (stats) {
    stats->wave_instructions = ctx.instructions.load();
    stats->workgroups = groups;
    stats->waves = groups * ((items + kLanes - 1) / kLanes);
    stats->wall_seconds = std::chrono::duration<double>(t1 - t0).count();
    stats->profiled = ctx.profiling;
    stats->lds_dma_hazards = ctx.lds_dma_hazards.load();
    stats->lds_races = ctx.lds_races.load();
    stats->racecheck = ctx.racecheck;
    report_profile(*prog, ctx.profile, *stats);  // empty unless profiled
    if (timing_ && !ctx.faulted.load()) {
      // The timeline is recorded only when a trace file is asked for (simulate_cu's traced instantiation).
      std::lock_guard lock(cache_mu_);
      Timeline timeline;
      const bool traced = !timing_trace_.empty();
      stats->timing = model_dispatch(*timing_, *prog, lp, sample, traces, probes, traced ? &timeline : nullptr);
      stats->timing.sample_only = sample_only;
      if (traced) {
        if (!timeline_file_) timeline_file_ = std::make_unique<TimelineFile>(timing_trace_);
        timeline_file_->append(*prog, stats->timing, timeline);
      }
    }
  }
  if (ctx.faulted.load()) return ctx.fault;
  return Fault{};
}

}  // namespace vgpu
