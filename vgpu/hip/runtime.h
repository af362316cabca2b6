// State shared by the files of the HIP runtime over vgpu (libamdhip64.so.6): the virtual device, registered
// and loaded device code, allocations, streams and the error bookkeeping. Internal to vgpu/hip.
#pragma once

// Standard headers come before the HIP headers: those define __noinline__ as a macro, which breaks libstdc++
// headers (<chrono>, <format>) included after them.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "vgpu/code_object.h"
#include "vgpu/device.h"

#include <hip/hip_runtime_api.h>

// Every function the library exports is defined with C linkage and this attribute; the version script
// (libamdhip64.map) then decides the version node it is exported under.
#define HK_HIP_API extern "C" __attribute__((visibility("default")))

namespace vgpu::hiprt {

// ---------------------------------------------------------------------------------------------------------------
// Device code. Kernels come from fat binaries that host programs register (__hipRegisterFatBinary) or from modules
// loaded with hipModuleLoad*. Both are a set of code objects, one per arch.

struct CodeSet {
  std::string origin;  // for messages: "fat binary at 0x...", "module 'k.hsaco'"
  std::vector<std::shared_ptr<const CodeObject>> objects;
  std::string error;   // why loading failed (objects is then empty)

  std::shared_ptr<const CodeObject> for_arch(Arch arch) const;
  std::string arch_list() const;  // "gfx942, gfx950" (or "none")
};

// Something that can produce device code on demand.
class CodeSource {
 public:
  virtual ~CodeSource() = default;
  virtual const CodeSet& code() = 0;
};

// A registered fat binary: the offload bundle clang placed in the host program. Decoding is deferred to the
// first launch that needs it, so that programs start quickly and a broken bundle only fails its own launches.
class FatBinary final : public CodeSource {
 public:
  FatBinary(const uint8_t* bundle, size_t size);
  const CodeSet& code() override;
  std::span<const uint8_t> bytes() const { return bytes_; }

 private:
  std::span<const uint8_t> bytes_;
  std::once_flag once_;
  CodeSet code_;
};

}  // namespace vgpu::hiprt

// The opaque handle types of the HIP headers, completed here.

// A kernel: a name inside a code source. hipFunction_t for modules; registered host stubs map to one too.
struct ihipModuleSymbol_t {
  std::string name;                       // the kernel symbol, e.g. _Z6vecaddPfS_i
  vgpu::hiprt::CodeSource* source = nullptr;
  int max_dynamic_shared = -1;            // hipFuncAttributeMaxDynamicSharedMemorySize, -1 if never set
};

// A module: code objects loaded by hipModuleLoad / hipModuleLoadData.
struct ihipModule_t final : vgpu::hiprt::CodeSource {
  vgpu::hiprt::CodeSet set;
  std::map<std::string, std::unique_ptr<ihipModuleSymbol_t>, std::less<>> functions;
  const vgpu::hiprt::CodeSet& code() override { return set; }
};

namespace vgpu::hiprt {
struct CaptureSession;  // graph.h
}

// An in-order stream. Work runs to completion when it is enqueued, which is a valid in-order schedule.
struct ihipStream_t {
  unsigned flags = 0;
  int priority = 0;
  hipError_t pending = hipSuccess;  // a fault not yet reported by a synchronisation on this stream
  // While capturing: the capture sequence, and the nodes the stream's next captured work depends on.
  std::shared_ptr<vgpu::hiprt::CaptureSession> capture;
  std::vector<hipGraphNode*> capture_tail;
};

// An event: a host timestamp taken when it is recorded (all earlier work has finished by then).
struct ihipEvent_t {
  unsigned flags = 0;
  bool recorded = false;
  std::chrono::steady_clock::time_point time{};
  // Recorded on a capturing stream: the capture and that stream's tail nodes then, which a stream waiting on the
  // event depends on.
  std::shared_ptr<vgpu::hiprt::CaptureSession> capture;
  std::vector<hipGraphNode*> capture_nodes;
};

namespace vgpu::hiprt {

// A kernel resolved for the device's arch.
struct ResolvedKernel {
  std::shared_ptr<const CodeObject> object;
  const KernelInfo* info = nullptr;
};
// Finds `fn` in the code object of the device's arch. On failure records a detailed error and returns its code
// (hipErrorNoBinaryForGpu, hipErrorInvalidImage, hipErrorInvalidDeviceFunction or `missing` if the kernel is absent).
hipError_t resolve(ihipModuleSymbol_t& fn, ResolvedKernel& out, hipError_t missing = hipErrorInvalidDeviceFunction);

// The HIP memory type of a program's range of the device's memory map (the one ledger of allocations).
hipMemoryType memory_type(MemoryKind kind);

// ---------------------------------------------------------------------------------------------------------------
// The one virtual device and the process-wide state around it. Never destroyed: host programs unregister their
// fat binaries from atexit handlers that may run after our own static destructors would have.
class Runtime {
 public:
  static Runtime& get();

  // The device, created on first use with the arch chosen by choose_arch().
  Device& device();
  Arch arch();
  // HK_VGPU_ARCH if set; otherwise the arch of the first registered code (the newest when a binary carries
  // several); otherwise the newest arch vgpu models. Fixed from the first time the arch is asked for.
  void suggest_arch(const std::vector<Arch>& archs_in_binary);
  // The product the device stands in for: HK_VGPU_PRODUCT if it names one built on the device's arch, otherwise the
  // arch's default product (vgpu/arch.h). Fixes the arch.
  const ProductInfo& product();

  // Registered kernels and fat binaries.
  FatBinary* add_fat_binary(const uint8_t* bundle, size_t size);
  void remove_fat_binary(FatBinary* fb);
  ihipModuleSymbol_t* add_function(FatBinary* fb, const void* host_function, const char* name);
  ihipModuleSymbol_t* find_function(const void* host_function);
  void add_variable(FatBinary* fb, const void* host_var, const char* name, size_t size, bool constant);
  // Device address and size of a registered variable (__device__, __constant__) on this device's arch.
  hipError_t variable(const void* host_var, void** device_address, size_t* size);

  // Allocations: the program's ranges of the device's memory map, which is their only record.
  void* allocate(size_t size, hipMemoryType type, unsigned flags);
  hipError_t release(void* p);  // hipErrorInvalidValue if p was not allocated here
  hipError_t register_host(void* p, size_t size, unsigned flags);
  hipError_t unregister_host(void* p);
  // The program's allocation or registration containing p, or an empty range (memory the runtime does not know, or
  // the device's own: code images, kernarg segments).
  MemoryRange find_allocation(const void* p);

  // Streams and events (handles are checked so that a stale one gives an error, not a crash).
  ihipStream_t* create_stream(unsigned flags, int priority);
  bool destroy_stream(ihipStream_t* s);
  // Maps null / hipStreamLegacy / hipStreamPerThread to the default stream; nullptr if the handle is unknown.
  ihipStream_t* stream(hipStream_t s);
  ihipEvent_t* create_event(unsigned flags);
  bool destroy_event(ihipEvent_t* e);
  bool valid_event(ihipEvent_t* e);

  // Faults not yet reported by a synchronisation (sticky until then).
  void set_pending(ihipStream_t* s, hipError_t code);
  hipError_t take_pending(ihipStream_t* s);  // one stream
  hipError_t take_all_pending();             // the whole device

  // Runs one kernel; one dispatch at a time (a dispatch uses all worker threads of the device).
  Fault dispatch(const ResolvedKernel& k, const LaunchParams& lp, DispatchStats* stats);

  // hipDeviceReset: frees every allocation, destroys streams and events, forgets faults.
  void reset();

 private:
  Runtime() = default;
  Arch choose_arch_locked();
  const ProductInfo& product_locked(Arch arch);

  std::mutex mu_;
  std::unique_ptr<Device> device_;
  bool arch_suggested_ = false;
  Arch suggested_arch_{};
  const ProductInfo* product_ = nullptr;  // chosen with the arch

  std::vector<std::unique_ptr<FatBinary>> fat_binaries_;
  std::map<const void*, std::unique_ptr<ihipModuleSymbol_t>> functions_;  // host stub -> kernel
  struct Variable {
    FatBinary* fat_binary;
    std::string name;
    size_t size;
    bool constant;
  };
  std::map<const void*, Variable> variables_;

  ihipStream_t default_stream_;
  std::set<ihipStream_t*> streams_;
  std::set<ihipEvent_t*> events_;

  std::mutex dispatch_mu_;
};

// ---------------------------------------------------------------------------------------------------------------
// Errors (errors.cpp).

// Every exported function returns through one of these. done(): a failure becomes the calling thread's last error
// (hipGetLastError), as HIP does, and hipGetErrorString(code) goes back to the plain description.
hipError_t done(hipError_t code);
// Like done(), and remembers `detail` as the explanation hipGetErrorString(code) appends after ": ".
// `print` also writes it to stderr (unless HK_VGPU_QUIET=1).
hipError_t fail(hipError_t code, const std::string& detail, bool print = false);
// For an error reported again (a fault surfacing at a synchronisation): the last error, details kept.
hipError_t resurface(hipError_t code);
// The HIP error a fault of this kind is reported as.
hipError_t error_for(FaultKind kind);
const char* error_name(hipError_t code);
const char* error_description(hipError_t code);  // the standard text, without any detail
bool quiet();  // HK_VGPU_QUIET=1
// Bytes readable from `p` on: the process's mappings (/proc/self/maps) that hold p and follow it without a gap; 0 if
// none holds it. The registration ABI and hipModuleLoadData pass a pointer alone, and a damaged header may claim any
// size: this is what it is checked against.
uint64_t readable_extent(const void* p);
// For functions vgpu does not implement (unsupported.cpp and partial implementations).
hipError_t unsupported(const char* function);

// Launch (launch.cpp), shared by hipLaunchKernel, hipModuleLaunchKernel and the older entry points.
struct LaunchRequest {
  ihipModuleSymbol_t* function = nullptr;
  Dim3 grid;                 // workgroups
  Dim3 block;                // work-items per workgroup
  size_t dynamic_shared = 0;
  hipStream_t stream = nullptr;
  void** args = nullptr;             // one pointer per explicit argument, or
  const void* arg_buffer = nullptr;  // the explicit arguments already packed (the `extra` form)
  size_t arg_buffer_size = 0;
  bool module_api = false;   // hipModuleLaunchKernel reports bad dimensions as hipErrorInvalidValue
  const void* host_function = nullptr;  // the host stub or hipFunction_t launched, for graph kernel nodes
};
hipError_t launch(const LaunchRequest& request);
// The kernel a hipFunction_t from hipModuleGetFunction stands for, or nullptr if `handle` is none (module.cpp).
ihipModuleSymbol_t* module_function(const void* handle);
// Keeps the measurements of the latest dispatch for vgpuGetLastDispatch (dispatch_info.cpp).
void remember_dispatch(const KernelInfo& kernel, Arch arch, const LaunchParams& lp, const DispatchStats& stats);
// Adds a launch to the process's totals (HK_VGPU_TOTALS, totals.cpp); remember_dispatch calls it.
void count_dispatch(const DispatchStats& stats);
// hipExtModuleLaunchKernel / hipHccModuleLaunchKernel count the grid in work-items. vgpu runs whole workgroups
// only, so the global size must be a multiple of the block.
hipError_t global_size_launch(hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t bx, uint32_t by,
                              uint32_t bz, size_t shared, hipStream_t stream, void** params, void** extra,
                              hipEvent_t start, hipEvent_t stop);

}  // namespace vgpu::hiprt
