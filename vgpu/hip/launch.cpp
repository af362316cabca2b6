// Kernel launch: the call-configuration stack behind `kernel<<<...>>>`, hipLaunchKernel and its variants, the
// module launches, and the construction of the kernarg segment (explicit arguments plus the hidden ones the code
// object's metadata asks for).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "graph.h"
#include "stream_queue.h"
// After runtime.h, which brings in hip_runtime_api.h first.
#include <hip/hip_ext.h>

namespace vgpu::hiprt {
namespace {

// One `<<<grid, block, shared, stream>>>` (or hipConfigureCall), waiting for its launch.
struct CallConfig {
  dim3 grid;
  dim3 block;
  size_t shared = 0;
  hipStream_t stream = nullptr;
  std::vector<uint8_t> args;  // hipSetupArgument's packed arguments
};
thread_local std::vector<CallConfig> t_configs;

bool is_hidden(const KernelArg& a) { return a.value_kind.rfind("hidden_", 0) == 0; }

Dim3 to_dim3(dim3 d) { return Dim3{d.x, d.y, d.z}; }

// Writes the low `size` bytes of `value` at `offset`.
void put(std::vector<uint8_t>& segment, uint32_t offset, uint32_t size, uint64_t value) {
  if (uint64_t(offset) + size > segment.size()) return;
  std::memcpy(segment.data() + offset, &value, std::min<uint32_t>(size, sizeof value));
}

// The value of a hidden argument. Those not listed (printf/hostcall buffers, heap, queue pointers, multigrid sync)
// stay zero: vgpu has no host services behind them.
uint64_t hidden_value(const std::string& kind, const LaunchRequest& r) {
  const Dim3& g = r.grid;
  const Dim3& b = r.block;
  if (kind == "hidden_block_count_x") return g.x;
  if (kind == "hidden_block_count_y") return g.y;
  if (kind == "hidden_block_count_z") return g.z;
  if (kind == "hidden_group_size_x") return b.x;
  if (kind == "hidden_group_size_y") return b.y;
  if (kind == "hidden_group_size_z") return b.z;
  // hidden_remainder_*: every workgroup is full, since grids are counted in whole workgroups.
  // hidden_global_offset_*: HIP launches have no global offset.
  if (kind == "hidden_grid_dims") return 3;  // HIP launches are always three-dimensional
  if (kind == "hidden_dynamic_lds_size") return r.dynamic_shared;
  return 0;
}

const char* stringify(Dim3 d, char* buf, size_t n) {
  std::snprintf(buf, n, "(%u, %u, %u)", d.x, d.y, d.z);
  return buf;
}

}  // namespace

namespace {

// A launch checked and resolved, with its kernarg segment built (explicit and hidden arguments).
struct PreparedLaunch {
  ResolvedKernel kernel;
  std::vector<uint8_t> segment;
  uint32_t segment_size = 0;
};

// Everything a launch checks before it runs, and the kernarg segment. The stream is checked by the caller.
hipError_t prepare(const LaunchRequest& r, PreparedLaunch& p) {
  Runtime& rt = Runtime::get();
  // HIP's runtime launches report bad shapes as "invalid configuration", its module launches as "invalid value".
  const hipError_t bad_shape = r.module_api ? hipErrorInvalidValue : hipErrorInvalidConfiguration;
  char g[48], b[48];

  if (!r.function) return done(r.module_api ? hipErrorInvalidResourceHandle : hipErrorInvalidDeviceFunction);
  if (r.grid.count() == 0 || r.block.count() == 0)
    return fail(bad_shape, "launch of " + r.function->name + " with an empty grid " + stringify(r.grid, g, sizeof g) +
                               " or block " + stringify(r.block, b, sizeof b));
  if (r.block.count() > 1024 || r.block.x > 1024 || r.block.y > 1024 || r.block.z > 1024)
    return fail(bad_shape, "launch of " + r.function->name + " with block " + stringify(r.block, b, sizeof b) +
                               ": at most 1024 work-items per block");
  constexpr uint64_t kMaxWorkItems = std::numeric_limits<uint32_t>::max();
  if (uint64_t(r.grid.x) * r.block.x > kMaxWorkItems || uint64_t(r.grid.y) * r.block.y > kMaxWorkItems ||
      uint64_t(r.grid.z) * r.block.z > kMaxWorkItems)
    return fail(bad_shape, "launch of " + r.function->name + ": grid " + stringify(r.grid, g, sizeof g) +
                               " of blocks " + stringify(r.block, b, sizeof b) + " exceeds 2^32-1 work-items in a dimension");

  ResolvedKernel& k = p.kernel;
  if (hipError_t e = resolve(*r.function, k); e != hipSuccess) return e;
  const KernelInfo& info = *k.info;
  const uint32_t lds_bytes = rt.device().info().lds_bytes;

  if (info.max_flat_workgroup_size && r.block.count() > info.max_flat_workgroup_size)
    return fail(hipErrorLaunchFailure, "block " + std::string(stringify(r.block, b, sizeof b)) + " exceeds kernel " +
                                           info.name + "'s launch bound of " +
                                           std::to_string(info.max_flat_workgroup_size) + " work-items");
  if (uint64_t(info.group_segment_fixed_size) + r.dynamic_shared > lds_bytes)
    return fail(hipErrorInvalidValue, "kernel " + info.name + " needs " + std::to_string(info.group_segment_fixed_size) +
                                          " bytes of static and " + std::to_string(r.dynamic_shared) +
                                          " bytes of dynamic LDS; the device has " + std::to_string(lds_bytes));

  // The kernarg segment: explicit arguments in metadata order, then the hidden ones.
  uint32_t segment_size = info.kernarg_segment_size;
  size_t explicit_count = 0;
  for (const KernelArg& a : info.args) {
    segment_size = std::max(segment_size, a.offset + a.size);
    if (!is_hidden(a)) ++explicit_count;
  }
  // Padded so that a wide scalar load at the end of the segment stays inside registered memory.
  std::vector<uint8_t>& segment = p.segment;
  segment.assign((segment_size + 63) / 64 * 64 + 64, 0);
  if (explicit_count && !r.args && !r.arg_buffer)
    return fail(hipErrorInvalidValue, "kernel " + info.name + " takes " + std::to_string(explicit_count) +
                                          " arguments but none were passed");
  if (r.arg_buffer) {
    std::memcpy(segment.data(), r.arg_buffer, std::min<size_t>(r.arg_buffer_size, segment_size));
  } else if (r.args) {
    size_t i = 0;
    for (const KernelArg& a : info.args) {
      if (is_hidden(a)) continue;
      if (!r.args[i]) return fail(hipErrorInvalidValue, "argument " + std::to_string(i) + " of " + info.name + " is null");
      std::memcpy(segment.data() + a.offset, r.args[i], a.size);
      ++i;
    }
  }
  for (const KernelArg& a : info.args)
    if (is_hidden(a)) put(segment, a.offset, a.size, hidden_value(a.value_kind, r));

  p.segment_size = segment_size;
  return hipSuccess;
}

// The node a prepared launch becomes: its explicit arguments (the hidden ones are filled again at each launch).
void to_work(const LaunchRequest& r, const PreparedLaunch& p, KernelWork& out) {
  out.function = r.function;
  out.grid = r.grid;
  out.block = r.block;
  out.dynamic_shared = r.dynamic_shared;
  out.module_api = r.module_api;
  out.host_function = r.host_function ? r.host_function : r.function;
  out.args.assign(p.segment.begin(), p.segment.begin() + p.segment_size);
  out.arg_offsets.clear();
  for (const KernelArg& a : p.kernel.info->args)
    if (!is_hidden(a)) out.arg_offsets.push_back(a.offset);
}

}  // namespace

hipError_t pack_kernel(const LaunchRequest& r, KernelWork& out) {
  PreparedLaunch p;
  if (hipError_t e = prepare(r, p); e != hipSuccess) return e;
  to_work(r, p, out);
  return hipSuccess;
}

hipError_t run_kernel(const KernelWork& work, hipStream_t stream) {
  LaunchRequest r;
  r.function = work.function;
  r.grid = work.grid;
  r.block = work.block;
  r.dynamic_shared = work.dynamic_shared;
  r.module_api = work.module_api;
  r.host_function = work.host_function;
  r.stream = stream;
  static const uint8_t kNoArgs = 0;
  r.arg_buffer = work.args.empty() ? &kNoArgs : work.args.data();
  r.arg_buffer_size = work.args.size();
  return launch(r);
}

hipError_t launch(const LaunchRequest& r) {
  Runtime& rt = Runtime::get();
  if (!r.function) return done(r.module_api ? hipErrorInvalidResourceHandle : hipErrorInvalidDeviceFunction);
  ihipStream_t* stream = rt.stream(r.stream);
  if (!stream) return done(hipErrorInvalidHandle);
  PreparedLaunch p;
  if (hipError_t e = prepare(r, p); e != hipSuccess) return e;
  if (capturing(stream)) {
    KernelWork work;
    to_work(r, p, work);
    return capture_work(stream, hipGraphNodeTypeKernel, std::move(work));
  }
  if (behind_host_work(stream)) {
    KernelWork work;
    to_work(r, p, work);
    queue_work(stream, std::move(work));
    return hipSuccess;
  }
  const ResolvedKernel& k = p.kernel;
  const KernelInfo& info = *k.info;
  std::vector<uint8_t>& segment = p.segment;
  const uint32_t segment_size = p.segment_size;

  LaunchParams lp;
  lp.grid = r.grid;
  lp.block = r.block;
  lp.dynamic_lds = static_cast<uint32_t>(r.dynamic_shared);
  lp.kernarg = segment.data();
  lp.kernarg_size = segment_size;

  Device& dev = rt.device();
  dev.memory().add(segment.data(), segment.size(), MemoryKind::dispatch);
  Fault fault;
  DispatchStats stats;
  std::string error;
  try {
    fault = rt.dispatch(k, lp, &stats);
    remember_dispatch(info, dev.arch(), lp, stats);
  } catch (const std::exception& e) {
    error = e.what();
  }
  dev.memory().release(segment.data());

  if (!error.empty()) return fail(hipErrorLaunchFailure, "kernel " + info.name + ": " + error, true);
  if (!fault) return hipSuccess;
  hipError_t code = error_for(fault.kind);
  // A kernel that faulted stays reported until the next synchronisation of its stream, as a GPU fault
  // surfaces there; launch-time refusals are reported by the launch alone.
  if (fault.kind != FaultKind::bad_launch) rt.set_pending(stream, code);
  return fail(code, fault.message(), true);
}

}  // namespace vgpu::hiprt

using namespace vgpu;
using namespace vgpu::hiprt;

// --- `kernel<<<grid, block, shared, stream>>>(args...)` ------------------------------------------------------------

HK_HIP_API hipError_t __hipPushCallConfiguration(dim3 grid, dim3 block, size_t shared, hipStream_t stream) {
  t_configs.push_back(CallConfig{grid, block, shared, stream, {}});
  return hipSuccess;
}

HK_HIP_API hipError_t __hipPopCallConfiguration(dim3* grid, dim3* block, size_t* shared, hipStream_t* stream) {
  if (t_configs.empty()) return done(hipErrorMissingConfiguration);
  CallConfig c = std::move(t_configs.back());
  t_configs.pop_back();
  if (grid) *grid = c.grid;
  if (block) *block = c.block;
  if (shared) *shared = c.shared;
  if (stream) *stream = c.stream;
  return hipSuccess;
}

HK_HIP_API hipError_t hipLaunchKernel(const void* host_function, dim3 grid, dim3 block, void** args, size_t shared,
                                      hipStream_t stream) {
  LaunchRequest r;
  r.function = host_function ? Runtime::get().find_function(host_function) : nullptr;
  if (!r.function) {
    char address[32];
    std::snprintf(address, sizeof address, "%p", host_function);
    return fail(hipErrorInvalidDeviceFunction, std::string("no kernel is registered for host function ") + address);
  }
  r.host_function = host_function;
  r.grid = to_dim3(grid);
  r.block = to_dim3(block);
  r.dynamic_shared = shared;
  r.stream = stream;
  r.args = args;
  return launch(r);
}

HK_HIP_API hipError_t hipLaunchKernel_spt(const void* host_function, dim3 grid, dim3 block, void** args,
                                          size_t shared, hipStream_t stream) {
  return hipLaunchKernel(host_function, grid, block, args, shared, stream);
}

HK_HIP_API hipError_t hipExtLaunchKernel(const void* host_function, dim3 grid, dim3 block, void** args, size_t shared,
                                         hipStream_t stream, hipEvent_t start, hipEvent_t stop, int /*flags*/) {
  if (start && hipEventRecord(start, stream) != hipSuccess) return done(hipErrorInvalidHandle);
  hipError_t e = hipLaunchKernel(host_function, grid, block, args, shared, stream);
  if (stop) (void)hipEventRecord(stop, stream);
  return e;
}

// Cooperative launches run like ordinary ones: every workgroup of a vgpu dispatch can make progress, but vgpu
// gives no guarantee that all of them are resident at once.
HK_HIP_API hipError_t hipLaunchCooperativeKernel(const void* host_function, dim3 grid, dim3 block, void** args,
                                                 unsigned int shared, hipStream_t stream) {
  return hipLaunchKernel(host_function, grid, block, args, shared, stream);
}

HK_HIP_API hipError_t hipLaunchCooperativeKernel_spt(const void* host_function, dim3 grid, dim3 block, void** args,
                                                     uint32_t shared, hipStream_t stream) {
  return hipLaunchKernel(host_function, grid, block, args, shared, stream);
}

// --- the older configure / setup-argument / launch-by-pointer sequence ---------------------------------------------

HK_HIP_API hipError_t hipConfigureCall(dim3 grid, dim3 block, size_t shared, hipStream_t stream) {
  t_configs.push_back(CallConfig{grid, block, shared, stream, {}});
  return hipSuccess;
}

HK_HIP_API hipError_t hipSetupArgument(const void* arg, size_t size, size_t offset) {
  if (t_configs.empty()) return done(hipErrorMissingConfiguration);
  if (!arg && size) return done(hipErrorInvalidValue);
  auto& args = t_configs.back().args;
  if (args.size() < offset + size) args.resize(offset + size);
  if (size) std::memcpy(args.data() + offset, arg, size);
  return hipSuccess;
}

HK_HIP_API hipError_t hipLaunchByPtr(const void* host_function) {
  if (t_configs.empty()) return done(hipErrorMissingConfiguration);
  CallConfig c = std::move(t_configs.back());
  t_configs.pop_back();
  LaunchRequest r;
  r.function = host_function ? Runtime::get().find_function(host_function) : nullptr;
  if (!r.function) return done(hipErrorInvalidDeviceFunction);
  r.host_function = host_function;
  r.grid = to_dim3(c.grid);
  r.block = to_dim3(c.block);
  r.dynamic_shared = c.shared;
  r.stream = c.stream;
  r.arg_buffer = c.args.data();
  r.arg_buffer_size = c.args.size();
  static const uint8_t kNoArgs = 0;
  if (!r.arg_buffer) r.arg_buffer = &kNoArgs;
  return launch(r);
}

// --- module launches -------------------------------------------------------------------------------------------

namespace {

// Fills the argument source of `r` from hipModuleLaunchKernel's kernelParams / extra.
hipError_t module_arguments(LaunchRequest& r, void** params, void** extra) {
  if (params && extra) return hipErrorInvalidValue;  // only one form may be given
  if (!extra) {
    r.args = params;
    return hipSuccess;
  }
  // extra = { HIP_LAUNCH_PARAM_BUFFER_POINTER, buffer, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END }
  const void* buffer = nullptr;
  const size_t* size = nullptr;
  for (size_t i = 0; extra[i] != HIP_LAUNCH_PARAM_END; i += 2) {
    if (i > 64) return hipErrorInvalidValue;  // no terminator
    if (extra[i] == HIP_LAUNCH_PARAM_BUFFER_POINTER)
      buffer = extra[i + 1];
    else if (extra[i] == HIP_LAUNCH_PARAM_BUFFER_SIZE)
      size = static_cast<const size_t*>(extra[i + 1]);
    else
      return hipErrorInvalidValue;
  }
  if (!buffer || !size) return hipErrorInvalidValue;
  r.arg_buffer = buffer;
  r.arg_buffer_size = *size;
  return hipSuccess;
}

hipError_t module_launch(hipFunction_t f, Dim3 grid, Dim3 block, size_t shared, hipStream_t stream, void** params,
                         void** extra) {
  if (!f) return done(hipErrorInvalidResourceHandle);
  LaunchRequest r;
  r.function = f;
  r.grid = grid;
  r.block = block;
  r.dynamic_shared = shared;
  r.stream = stream;
  r.module_api = true;
  if (hipError_t e = module_arguments(r, params, extra); e != hipSuccess) return done(e);
  return launch(r);
}

}  // namespace

hipError_t vgpu::hiprt::global_size_launch(hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx, uint32_t by,
                              uint32_t bz, size_t shared, hipStream_t stream, void** params, void** extra,
                              hipEvent_t start, hipEvent_t stop) {
  if (!bx || !by || !bz || !gx || !gy || !gz) return done(hipErrorInvalidValue);
  if (gx % bx || gy % by || gz % bz)
    return fail(hipErrorInvalidValue, "vgpu runs whole workgroups only: the global work size must be a multiple of "
                                      "the block size");
  if (start && hipEventRecord(start, stream) != hipSuccess) return done(hipErrorInvalidHandle);
  hipError_t e = module_launch(f, Dim3{gx / bx, gy / by, gz / bz}, Dim3{bx, by, bz}, shared, stream, params, extra);
  if (stop) (void)hipEventRecord(stop, stream);
  return e;
}

HK_HIP_API hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gx, unsigned int gy, unsigned int gz,
                                            unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                                            hipStream_t stream, void** params, void** extra) {
  return module_launch(f, Dim3{gx, gy, gz}, Dim3{bx, by, bz}, shared, stream, params, extra);
}

HK_HIP_API hipError_t hipModuleLaunchCooperativeKernel(hipFunction_t f, unsigned int gx, unsigned int gy,
                                                       unsigned int gz, unsigned int bx, unsigned int by,
                                                       unsigned int bz, unsigned int shared, hipStream_t stream,
                                                       void** params) {
  return module_launch(f, Dim3{gx, gy, gz}, Dim3{bx, by, bz}, shared, stream, params, nullptr);
}

HK_HIP_API hipError_t hipExtModuleLaunchKernel(hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx,
                                               uint32_t by, uint32_t bz, size_t shared, hipStream_t stream,
                                               void** params, void** extra, hipEvent_t start, hipEvent_t stop,
                                               uint32_t /*flags*/) {
  return global_size_launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra, start, stop);
}

HK_HIP_API hipError_t hipHccModuleLaunchKernel(hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx,
                                               uint32_t by, uint32_t bz, size_t shared, hipStream_t stream,
                                               void** params, void** extra, hipEvent_t start, hipEvent_t stop) {
  return global_size_launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra, start, stop);
}
