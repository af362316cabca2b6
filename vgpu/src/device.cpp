// The virtual device: global memory bookkeeping, and dispatch of a kernel's workgroups over the CPU cores.
#include "vgpu/device.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "isa.h"
#include "wave.h"

namespace vgpu {

// --- Faults ------------------------------------------------------------------------------------------------------

const char* to_string(FaultKind k) {
  switch (k) {
    case FaultKind::none: return "no fault";
    case FaultKind::unknown_instruction: return "unknown instruction";
    case FaultKind::memory_out_of_bounds: return "out-of-bounds memory access";
    case FaultKind::lds_out_of_bounds: return "LDS access out of bounds";
    case FaultKind::barrier_deadlock: return "barrier deadlock";
    case FaultKind::private_out_of_bounds: return "private memory access out of bounds";
    case FaultKind::watchdog: return "instruction budget exhausted";
    case FaultKind::bad_launch: return "invalid launch";
  }
  return "fault";
}

std::string Fault::message() const {
  if (!*this) return "no fault";
  char buf[96];
  std::string m = std::string("vgpu: ") + to_string(kind) + " in kernel " + kernel;
  if (kind != FaultKind::bad_launch) {
    std::snprintf(buf, sizeof buf, " at pc 0x%llx", (unsigned long long)pc);
    m += buf;
    m += ": '" + instruction + "'";
    std::snprintf(buf, sizeof buf, " (workgroup (%u,%u,%u), wave %d", workgroup[0], workgroup[1], workgroup[2], wave);
    m += buf;
    if (lane >= 0) m += ", lane " + std::to_string(lane);
    m += ")";
  }
  if (!detail.empty()) m += ": " + detail;
  return m;
}

void Wave::fault(const Inst& at, FaultKind kind, int lane, std::string detail) {
  state = WaveState::faulted;
  std::lock_guard lock(ctx->fault_mu);
  if (ctx->faulted.load()) return;
  Fault& f = ctx->fault;
  f.kind = kind;
  f.kernel = ctx->prog->kernel;
  f.pc = at.pc;
  f.instruction = ctx->prog->texts[at.text];
  std::copy(std::begin(wg->id), std::end(wg->id), f.workgroup);
  f.wave = id;
  f.lane = lane;
  f.detail = std::move(detail);
  ctx->faulted.store(true);
}

void exec_unknown(Wave& w, const Inst& I) {
  w.fault(I, FaultKind::unknown_instruction, -1, "vgpu does not implement this instruction");
}

// --- Instruction table ---------------------------------------------------------------------------------------------

void IsaTable::add(std::string_view name, ExecFn fn, ImmType imm, uint8_t flags) {
  // Each mnemonic has one home: a second registration is a bug in the instruction tables, caught at start-up.
  if (!ops_.emplace(name, OpInfo{name, fn, imm, flags}).second)
    throw Error("vgpu: instruction " + std::string(name) + " is registered twice");
}

const OpInfo* IsaTable::find(std::string_view m) const {
  auto it = ops_.find(m);
  return it == ops_.end() ? nullptr : &it->second;
}

const IsaTable& isa_table() {
  static const IsaTable table = [] {
    IsaTable t;
    register_salu(t);
    register_sopp(t);
    register_smem(t);
    register_valu(t);
    register_vcmp(t);
    register_vmem(t);
    register_ds(t);
    register_mfma(t);
    register_mubuf(t);
    register_cvt(t);
    register_vop3p(t);
    register_xlane(t);
    return t;
  }();
  return table;
}

// --- Global memory -------------------------------------------------------------------------------------------------

void* MemoryMap::allocate(size_t bytes, size_t align) {
  size_t size = std::max<size_t>((bytes + align - 1) / align * align, align);
  void* p = std::aligned_alloc(align, size);
  if (!p) return nullptr;
  std::lock_guard lock(mu_);
  ranges_[uint64_t(p)] = bytes ? bytes : 1;
  owned_[uint64_t(p)] = p;
  return p;
}

bool MemoryMap::release(void* p) {
  std::lock_guard lock(mu_);
  auto it = owned_.find(uint64_t(p));
  if (it == owned_.end()) return false;
  std::free(it->second);
  owned_.erase(it);
  ranges_.erase(uint64_t(p));
  return true;
}

void MemoryMap::add(const void* p, size_t bytes) {
  std::lock_guard lock(mu_);
  ranges_[uint64_t(p)] = bytes;
}

void MemoryMap::remove(const void* p) {
  std::lock_guard lock(mu_);
  if (!owned_.count(uint64_t(p))) ranges_.erase(uint64_t(p));
}

std::pair<uint64_t, uint64_t> MemoryMap::find(uint64_t addr) const {
  std::lock_guard lock(mu_);
  auto it = ranges_.upper_bound(addr);
  if (it == ranges_.begin()) return {0, 0};
  --it;
  if (addr - it->first < it->second) return {it->first, it->second};
  return {0, 0};
}

bool MemoryMap::contains(uint64_t addr, uint64_t bytes) const {
  auto [base, size] = find(addr);
  return size && addr + bytes <= base + size;
}

size_t MemoryMap::bytes_in_use() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (auto& [b, s] : ranges_)
    if (owned_.count(b)) n += s;
  return n;
}

// --- Dispatch ------------------------------------------------------------------------------------------------------

namespace {

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

// Per worker thread storage reused across workgroups (register files are not cleared: hardware does not either).
struct WorkerStorage {
  Profile profile;
  std::vector<uint32_t> vgprs;
  std::vector<uint8_t> lds, priv;
  std::vector<Wave> waves;
};

void init_wave(Wave& w, const DispatchCtx& ctx, const Workgroup& wg, int index, uint32_t items) {
  const Program& p = *ctx.prog;
  const KernelDescriptor& kd = p.info.kd;
  std::fill(std::begin(w.s), std::end(w.s), 0u);
  w.scc = false;
  w.state = WaveState::running;
  w.pc = 0;
  w.id = index;
  w.insts = 0;
  w.gpr_idx = 0, w.gpr_idx_mode = 0;
  w.mem_lo = w.mem_hi = 0;
  w.vm_issued = 0;
  w.lds_in_flight.clear();
  // User SGPRs, packed from s0 in the order AMDGPUUsage lists them.
  uint32_t s = 0;
  auto put64 = [&](uint64_t x) { w.s[s++] = uint32_t(x), w.s[s++] = uint32_t(x >> 32); };
  if (kd.enable_private_segment_buffer()) s += 4;  // not used with architected flat scratch
  if (kd.enable_dispatch_ptr()) put64(ctx.dispatch_packet_addr);
  if (kd.enable_queue_ptr()) put64(0);
  if (kd.enable_kernarg_segment_ptr()) put64(ctx.kernarg_addr);
  if (kd.enable_dispatch_id()) put64(0);
  if (kd.enable_flat_scratch_init()) put64(0);
  // Preloaded kernel arguments (KERNARG_PRELOAD_SPEC: length in dwords, bits 6:0; offset, bits 15:7) follow.
  const uint32_t user = kd.user_sgpr_count();
  const uint32_t preload = kd.kernarg_preload & 0x7f, first = kd.kernarg_preload >> 7;
  for (uint32_t i = 0; i < preload && s < user; ++i)
    std::memcpy(&w.s[s++], (const uint8_t*)ctx.kernarg_addr + 4 * (first + i), 4);
  s = user;
  for (int d = 0; d < 3; ++d)
    if (kd.enable_wg_id(d)) w.s[s++] = wg.id[d];
  if (kd.enable_wg_info()) w.s[s++] = 0;
  if (kd.enable_private_segment()) w.s[s++] = 0;  // scratch wave offset: per-lane memory is separate here
  // v0: packed work-item ids; EXEC: the live lanes.
  const LaunchParams& lp = ctx.launch;
  uint64_t exec = 0;
  for (int l = 0; l < kLanes; ++l) {
    uint32_t flat = uint32_t(index) * kLanes + uint32_t(l);
    uint32_t x = flat % lp.block.x, y = flat / lp.block.x % lp.block.y, z = flat / (lp.block.x * lp.block.y);
    w.v[0][l] = x | y << 10 | z << 20;
    if (flat < items) exec |= 1ull << l;
  }
  w.set_exec(exec);
}

// Runs a wave until it blocks, ends, faults, or spends `budget` instructions.
template <bool profiled>
uint64_t run_wave_loop(Wave& w, const Inst* insts, uint64_t budget) {
  uint64_t n = 0;
  while (w.state == WaveState::running && n < budget) {
    const int pc = w.pc++;
    if constexpr (profiled) w.profile->executed[pc]++;
    insts[pc].fn(w, insts[pc]);
    ++n;
  }
  w.insts += n;
  return n;
}
inline uint64_t run_wave(Wave& w, const Inst* insts, uint64_t budget) {
  return w.profile ? run_wave_loop<true>(w, insts, budget) : run_wave_loop<false>(w, insts, budget);
}

void run_workgroup(DispatchCtx& ctx, uint64_t linear, WorkerStorage& st) {
  const Program& p = *ctx.prog;
  const LaunchParams& lp = ctx.launch;
  Workgroup wg;
  wg.id[0] = uint32_t(linear % lp.grid.x);
  wg.id[1] = uint32_t(linear / lp.grid.x % lp.grid.y);
  wg.id[2] = uint32_t(linear / (uint64_t(lp.grid.x) * lp.grid.y));
  wg.ctx = &ctx;
  wg.lds_bytes = ctx.lds_bytes;
  std::fill(st.lds.begin(), st.lds.end(), 0);
  wg.lds = st.lds.data();

  const uint32_t items = uint32_t(lp.block.count());
  const int nwaves = int((items + kLanes - 1) / kLanes);
  for (int i = 0; i < nwaves; ++i) {
    Wave& w = st.waves[i];
    w.v = reinterpret_cast<uint32_t(*)[kLanes]>(st.vgprs.data() + size_t(i) * p.vgprs * kLanes);
    w.priv = st.priv.data() + size_t(i) * kLanes * ctx.private_bytes;
    w.wg = &wg;
    w.ctx = &ctx;
    w.profile = ctx.profiling ? &st.profile : nullptr;
    init_wave(w, ctx, wg, i, items);
  }

  const Inst* insts = p.insts.data();
  constexpr uint64_t quantum = 2048;
  uint64_t spent_while_waiting = 0;  // instructions run while some wave waits at a barrier
  for (;;) {
    int running = 0, waiting = 0;
    uint64_t ran = 0;
    for (int i = 0; i < nwaves; ++i) {
      Wave& w = st.waves[i];
      if (w.state == WaveState::running) ran += run_wave(w, insts, quantum);
      if (w.state == WaveState::faulted) return;
      running += w.state == WaveState::running;
      waiting += w.state == WaveState::barrier;
    }
    if (ctx.faulted.load(std::memory_order_relaxed)) return;
    if (running == 0 && waiting == 0) break;
    if (running == 0) {
      // Every wave still alive has arrived: the barrier opens (ended waves do not count, as on hardware).
      for (int i = 0; i < nwaves; ++i)
        if (st.waves[i].state == WaveState::barrier) st.waves[i].state = WaveState::running;
      spent_while_waiting = 0;
      continue;
    }
    if (waiting > 0 && (spent_while_waiting += ran) > ctx.watchdog) {
      int waiter = 0, spinner = 0;
      for (int i = nwaves - 1; i >= 0; --i) {
        if (st.waves[i].state == WaveState::barrier) waiter = i;
        if (st.waves[i].state == WaveState::running) spinner = i;
      }
      Wave& w = st.waves[waiter];
      Wave& s = st.waves[spinner];
      w.fault(insts[w.pc - 1], FaultKind::barrier_deadlock, -1,
              "wave " + std::to_string(waiter) + " waits at s_barrier while wave " + std::to_string(spinner) +
                  " ran " + std::to_string(spent_while_waiting) + " instructions without reaching it (now at pc 0x" +
                  [&] { char b[32]; std::snprintf(b, sizeof b, "%x", insts[s.pc].pc); return std::string(b); }() +
                  ": '" + p.texts[insts[s.pc].text] + "')");
      return;
    }
  }
  uint64_t total = 0;
  for (int i = 0; i < nwaves; ++i) total += st.waves[i].insts;
  ctx.instructions.fetch_add(total, std::memory_order_relaxed);
}

}  // namespace

Device::Device(const ProductInfo& product) : arch_(product.arch), product_(product) {
  threads_ = unsigned(env_u64("HK_VGPU_THREADS", std::max(1u, std::thread::hardware_concurrency())));
  profiling_ = env_u64("HK_VGPU_PROFILE", 0) != 0;
  if (threads_ == 0) threads_ = 1;
}

Device::~Device() = default;

uint64_t Device::image_base(const CodeObject& co) {
  std::lock_guard lock(cache_mu_);
  auto [it, fresh] = images_.try_emplace(&co, 0);
  if (!fresh) return it->second;
  auto* base = static_cast<uint8_t*>(memory_.allocate(std::max<uint64_t>(co.image_size, 1), 4096));
  if (!base) throw Error("vgpu: cannot allocate the code object's image");
  std::memset(base, 0, co.image_size);
  for (const auto& seg : co.segments) std::memcpy(base + seg.vaddr, seg.bytes.data(), seg.bytes.size());
  for (const auto& r : co.relocations)
    if (r.vaddr + 8 <= co.image_size) {
      uint64_t v = uint64_t(base) + uint64_t(r.addend);
      std::memcpy(base + r.vaddr, &v, 8);
    }
  it->second = uint64_t(base);
  return it->second;
}

void* Device::global_address(const std::shared_ptr<const CodeObject>& co, std::string_view name, size_t* size) {
  auto it = co->variables.find(name);
  if (it == co->variables.end()) return nullptr;
  if (size) *size = it->second.size;
  return reinterpret_cast<void*>(image_base(*co) + it->second.vaddr);
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

  std::shared_ptr<Program> prog;
  {
    std::lock_guard lock(cache_mu_);
    auto& slot = programs_[{co.get(), kernel.entry}];
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
  memory_.add(kernarg.data(), kernarg.size() * 8);
  memory_.add(&packet, sizeof packet);

  DispatchCtx ctx;
  ctx.prog = prog.get();
  ctx.memory = &memory_;
  ctx.arch = &info();
  ctx.launch = lp;
  ctx.launch.kernarg_size = kernarg.size() * 8;
  ctx.kernarg_addr = uint64_t(kernarg.data());
  ctx.code_base = image_base(*co) + kernel.entry;
  ctx.dispatch_packet_addr = uint64_t(&packet);
  ctx.lds_bytes = uint32_t(lds);
  ctx.private_bytes = (kernel.private_segment_fixed_size + 15) / 16 * 16 + (kernel.uses_dynamic_stack ? 16384 : 0);
  ctx.watchdog = env_u64("HK_VGPU_BARRIER_WATCHDOG", 1ull << 24);
  ctx.profiling = profiling_;
  if (profiling_) ctx.profile.resize(prog->insts.size());

  const uint64_t groups = lp.grid.count();
  const unsigned nthreads = unsigned(std::min<uint64_t>(threads_, groups));
  std::atomic<uint64_t> next{0};
  auto worker = [&] {
    WorkerStorage st;
    const int nwaves = int((items + kLanes - 1) / kLanes);
    st.vgprs.assign(size_t(nwaves) * prog->vgprs * kLanes, 0);
    st.lds.assign(lds, 0);
    st.priv.assign(size_t(nwaves) * kLanes * ctx.private_bytes, 0);
    st.waves.resize(nwaves);
    if (ctx.profiling) st.profile.resize(prog->insts.size());
    for (uint64_t g; !ctx.faulted.load(std::memory_order_relaxed) && (g = next.fetch_add(1)) < groups;)
      run_workgroup(ctx, g, st);
    if (ctx.profiling) {
      std::lock_guard lock(ctx.profile_mu);
      for (size_t i = 0; i < st.profile.executed.size(); ++i) {
        ctx.profile.executed[i] += st.profile.executed[i];
        ctx.profile.lds_accesses[i] += st.profile.lds_accesses[i];
        ctx.profile.lds_conflicts[i] += st.profile.lds_conflicts[i];
      }
    }
  };
  auto t0 = std::chrono::steady_clock::now();
  if (nthreads <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (unsigned i = 0; i < nthreads; ++i) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }
  auto t1 = std::chrono::steady_clock::now();
  memory_.remove(kernarg.data());
  memory_.remove(&packet);
  if (stats) {
    stats->wave_instructions = ctx.instructions.load();
    stats->workgroups = groups;
    stats->waves = groups * ((items + kLanes - 1) / kLanes);
    stats->wall_seconds = std::chrono::duration<double>(t1 - t0).count();
    stats->profiled = ctx.profiling;
    stats->instructions.clear();
    stats->lds_accesses = stats->lds_conflict_cycles = 0;
    for (size_t i = 0; ctx.profiling && i < ctx.profile.executed.size(); ++i) {
      if (!ctx.profile.executed[i]) continue;
      const Inst& I = prog->insts[i];
      stats->instructions.push_back({uint64_t(int64_t(I.pc)), prog->texts[I.text], ctx.profile.executed[i], ctx.profile.lds_accesses[i],
                                     ctx.profile.lds_conflicts[i]});
      stats->lds_accesses += ctx.profile.lds_accesses[i];
      stats->lds_conflict_cycles += ctx.profile.lds_conflicts[i];
    }
  }
  if (ctx.faulted.load()) return ctx.fault;
  return Fault{};
}

}  // namespace vgpu
