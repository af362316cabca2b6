// The runtime's process-wide state: the lazily created virtual device and its arch, registered code, allocations,
// streams, events and faults waiting to be reported.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cctype>
#include <cstring>
#include <optional>
#include <span>
#include <tuple>

#include "runtime.h"

namespace vgpu::hiprt {

Runtime& Runtime::get() {
  static Runtime* r = new Runtime;  // never destroyed (see runtime.h)
  return *r;
}

namespace {

// Ordered by GFX version: a program built for several archs runs as the newest device it carries code for.
bool newer(Arch a, Arch b) {
  const ArchInfo &x = arch_info(a), &y = arch_info(b);
  return std::tie(x.version_major, x.version_minor, x.version_stepping) >
         std::tie(y.version_major, y.version_minor, y.version_stepping);
}

Arch newest(std::span<const Arch> archs) {
  Arch best = archs.front();
  for (Arch a : archs)
    if (newer(a, best)) best = a;
  return best;
}

Arch newest_modelled() {
  std::vector<Arch> all;
  for (const ArchInfo& a : all_archs()) all.push_back(a.arch);
  return newest(all);
}

// "gfx942, gfx950" or "mi300x, mi325x": what a variable may name, for its warning.
std::string choices(std::optional<Arch> of_arch) {
  std::string s;
  auto add = [&](std::string_view name) {
    if (!s.empty()) s += ", ";
    for (char c : name) s += char(std::tolower(static_cast<unsigned char>(c)));
  };
  if (!of_arch)
    for (const ArchInfo& a : all_archs()) add(a.name);
  else
    for (const ProductInfo& p : all_products())
      if (p.arch == *of_arch) add(p.name);
  return s;
}

}  // namespace

Arch Runtime::choose_arch_locked() {
  if (const char* env = std::getenv("HK_VGPU_ARCH"); env && *env) {
    if (auto a = parse_arch(env)) return *a;
    if (!quiet())
      std::fprintf(stderr, "vgpu: ignoring HK_VGPU_ARCH=%s (expected one of %s)\n", env, choices({}).c_str());
  }
  return arch_suggested_ ? suggested_arch_ : newest_modelled();
}

const ProductInfo& Runtime::product_locked(Arch arch) {
  if (product_ && product_->arch == arch) return *product_;
  product_ = &default_product(arch);
  if (const char* env = std::getenv("HK_VGPU_PRODUCT"); env && *env) {
    const ProductInfo* p = find_product(env);
    if (p && p->arch == arch)
      product_ = p;
    else if (!quiet())
      std::fprintf(stderr, "vgpu: ignoring HK_VGPU_PRODUCT=%s (the device is %s: one of %s)\n", env,
                   std::string(arch_info(arch).name).c_str(), choices(arch).c_str());
  }
  return *product_;
}

void Runtime::suggest_arch(const std::vector<Arch>& archs) {
  std::lock_guard lock(mu_);
  if (arch_suggested_ || device_ || archs.empty()) return;
  arch_suggested_ = true;
  suggested_arch_ = newest(archs);
}

Device& Runtime::device() {
  std::lock_guard lock(mu_);
  if (!device_) device_ = std::make_unique<Device>(product_locked(choose_arch_locked()));
  return *device_;
}

const ProductInfo& Runtime::product() {
  const Arch a = arch();
  std::lock_guard lock(mu_);
  return product_locked(a);
}

Arch Runtime::arch() {
  std::lock_guard lock(mu_);
  if (device_) return device_->arch();
  // Once a program has seen the arch (device properties, say), later registrations must not change it.
  suggested_arch_ = choose_arch_locked();
  arch_suggested_ = true;
  return suggested_arch_;
}

// --- registered code -------------------------------------------------------------------------------------------

FatBinary* Runtime::add_fat_binary(const uint8_t* bundle, size_t size) {
  std::lock_guard lock(mu_);
  fat_binaries_.push_back(std::make_unique<FatBinary>(bundle, size));
  return fat_binaries_.back().get();
}

void Runtime::remove_fat_binary(FatBinary* fb) {
  std::lock_guard lock(mu_);
  std::erase_if(functions_, [&](const auto& kv) { return kv.second->source == fb; });
  std::erase_if(variables_, [&](const auto& kv) { return kv.second.fat_binary == fb; });
  std::erase_if(fat_binaries_, [&](const auto& p) { return p.get() == fb; });
}

ihipModuleSymbol_t* Runtime::add_function(FatBinary* fb, const void* host_function, const char* name) {
  std::lock_guard lock(mu_);
  auto fn = std::make_unique<ihipModuleSymbol_t>();
  fn->name = name;
  fn->source = fb;
  auto& slot = functions_[host_function];
  slot = std::move(fn);
  return slot.get();
}

ihipModuleSymbol_t* Runtime::find_function(const void* host_function) {
  std::lock_guard lock(mu_);
  auto it = functions_.find(host_function);
  return it == functions_.end() ? nullptr : it->second.get();
}

void Runtime::add_variable(FatBinary* fb, const void* host_var, const char* name, size_t size, bool constant) {
  std::lock_guard lock(mu_);
  variables_[host_var] = Variable{fb, name ? name : "", size, constant};
}

hipError_t Runtime::variable(const void* host_var, void** device_address, size_t* size) {
  Variable v;
  {
    std::lock_guard lock(mu_);
    auto it = variables_.find(host_var);
    if (it == variables_.end()) return fail(hipErrorInvalidSymbol, "not a registered device variable");
    v = it->second;
  }
  auto co = v.fat_binary->code().for_arch(arch());
  if (!co) return fail(hipErrorNoBinaryForGpu, "no code object for " + std::string(arch_info(arch()).name));
  size_t n = 0;
  void* p = device().global_address(co, v.name, &n);
  if (!p) return fail(hipErrorInvalidSymbol, "device variable '" + v.name + "' is not in the code object");
  if (device_address) *device_address = p;
  if (size) *size = n;
  return hipSuccess;
}

// --- allocations -----------------------------------------------------------------------------------------------
// The device's memory map is the one ledger: a program's allocations and registrations are its ranges of the
// program's kinds; mu_ serialises the runtime's check-then-change sequences on it.

namespace {

MemoryKind kind_of(hipMemoryType type) {
  switch (type) {
    case hipMemoryTypeHost: return MemoryKind::host;
    case hipMemoryTypeManaged: return MemoryKind::managed;
    default: return MemoryKind::device;
  }
}

}  // namespace

hipMemoryType memory_type(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::host:
    case MemoryKind::registered_host: return hipMemoryTypeHost;
    case MemoryKind::managed: return hipMemoryTypeManaged;
    default: return hipMemoryTypeDevice;
  }
}

void* Runtime::allocate(size_t size, hipMemoryType type, unsigned flags) {
  Device& dev = device();
  try {
    return dev.memory().allocate(size, 256, kind_of(type), flags);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

hipError_t Runtime::release(void* p) {
  Device& dev = device();
  std::lock_guard lock(mu_);
  const MemoryRange r = dev.memory().at(p);
  if (!r || !belongs_to_program(r.kind) || !r.owned) return hipErrorInvalidValue;
  return dev.memory().release(p) ? hipSuccess : hipErrorInvalidValue;
}

hipError_t Runtime::register_host(void* p, size_t size, unsigned flags) {
  Device& dev = device();
  std::lock_guard lock(mu_);
  if (dev.memory().overlaps_program_range(reinterpret_cast<uintptr_t>(p), size))
    return hipErrorHostMemoryAlreadyRegistered;
  dev.memory().add(p, size, MemoryKind::registered_host, flags);
  return hipSuccess;
}

hipError_t Runtime::unregister_host(void* p) {
  Device& dev = device();
  std::lock_guard lock(mu_);
  const MemoryRange r = dev.memory().at(p);
  if (!r || r.kind != MemoryKind::registered_host) return hipErrorHostMemoryNotRegistered;
  dev.memory().release(p);
  return hipSuccess;
}

MemoryRange Runtime::find_allocation(const void* p) {
  const MemoryRange r = device().memory().find(reinterpret_cast<uintptr_t>(p));
  return r && belongs_to_program(r.kind) ? r : MemoryRange{};
}

// --- streams and events ----------------------------------------------------------------------------------------

ihipStream_t* Runtime::create_stream(unsigned flags, int priority) {
  auto* s = new ihipStream_t;
  s->flags = flags;
  s->priority = priority;
  std::lock_guard lock(mu_);
  streams_.insert(s);
  return s;
}

bool Runtime::destroy_stream(ihipStream_t* s) {
  std::lock_guard lock(mu_);
  if (!streams_.erase(s)) return false;
  delete s;
  return true;
}

ihipStream_t* Runtime::stream(hipStream_t s) {
  if (s == nullptr || s == hipStreamLegacy || s == hipStreamPerThread) return &default_stream_;
  std::lock_guard lock(mu_);
  return streams_.count(s) ? s : nullptr;
}

ihipEvent_t* Runtime::create_event(unsigned flags) {
  auto* e = new ihipEvent_t;
  e->flags = flags;
  std::lock_guard lock(mu_);
  events_.insert(e);
  return e;
}

bool Runtime::destroy_event(ihipEvent_t* e) {
  std::lock_guard lock(mu_);
  if (!events_.erase(e)) return false;
  delete e;
  return true;
}

bool Runtime::valid_event(ihipEvent_t* e) {
  std::lock_guard lock(mu_);
  return e && events_.count(e);
}

void Runtime::set_pending(ihipStream_t* s, hipError_t code) {
  std::lock_guard lock(mu_);
  if (s && s->pending == hipSuccess) s->pending = code;
}

hipError_t Runtime::take_pending(ihipStream_t* s) {
  std::lock_guard lock(mu_);
  if (!s) return hipSuccess;
  hipError_t e = s->pending;
  s->pending = hipSuccess;
  return e;
}

hipError_t Runtime::take_all_pending() {
  std::lock_guard lock(mu_);
  hipError_t first = default_stream_.pending;
  default_stream_.pending = hipSuccess;
  for (ihipStream_t* s : streams_) {
    if (first == hipSuccess) first = s->pending;
    s->pending = hipSuccess;
  }
  return first;
}

// --- dispatch and reset ----------------------------------------------------------------------------------------

Fault Runtime::dispatch(const ResolvedKernel& k, const LaunchParams& lp, DispatchStats* stats) {
  Device& dev = device();
  std::lock_guard lock(dispatch_mu_);
  return dev.dispatch(k.object, *k.info, lp, stats);
}

void Runtime::reset() {
  std::lock_guard dispatch_lock(dispatch_mu_);
  std::lock_guard lock(mu_);
  if (device_) device_->memory().release_program_ranges();
  for (ihipStream_t* s : streams_) delete s;
  streams_.clear();
  for (ihipEvent_t* e : events_) delete e;
  events_.clear();
  default_stream_.pending = hipSuccess;
  // The device itself (and its arch) stays: registered kernels remain valid, as after a reset on HIP.
}

}  // namespace vgpu::hiprt
