// Graphs and stream capture (graph.cpp): the work a graph node stands for, the graph and its instantiation, and the
// hooks through which launches, copies, fills, host functions and events on a capturing stream become nodes instead
// of running. Internal to vgpu/hip.
#pragma once

#include <memory>
#include <thread>
#include <variant>
#include <vector>

#include "runtime.h"

namespace vgpu::hiprt {

// A kernel launch with its arguments copied: the explicit part of the kernarg segment, packed at the metadata's
// offsets when the node is made (as HIP copies them), so the caller's argument storage may go away. The hidden
// arguments are filled again by every launch from the grid and block.
struct KernelWork {
  ihipModuleSymbol_t* function = nullptr;
  const void* host_function = nullptr;  // what hipGraphKernelNodeGetParams gives back as func
  Dim3 grid, block;
  size_t dynamic_shared = 0;
  bool module_api = false;
  std::vector<uint8_t> args;             // the packed explicit arguments
  std::vector<uint32_t> arg_offsets;     // of each explicit argument in `args`
  std::vector<void*> arg_pointers;       // built for hipGraphKernelNodeGetParams
};

// A copy of `depth` slices of `height` rows of `width` bytes between pitched memory (a 1D copy is one row).
struct CopyWork {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t dst_pitch = 0, dst_rows = 0;  // bytes per row, rows per slice
  size_t src_pitch = 0, src_rows = 0;
  size_t width = 0, height = 1, depth = 1;
  hipMemcpyKind kind = hipMemcpyDefault;
};

// A fill of `height` rows of `width` elements of `element_size` (1, 2 or 4) bytes, rows `pitch` bytes apart.
struct FillWork {
  void* dst = nullptr;
  size_t pitch = 0;
  uint32_t value = 0;
  uint32_t element_size = 1;
  size_t width = 0, height = 1;
};

struct HostWork {
  hipHostFn_t fn = nullptr;
  void* user_data = nullptr;
};
struct EventRecordWork {
  hipEvent_t event = nullptr;
};
struct EventWaitWork {
  hipEvent_t event = nullptr;
};
struct EmptyWork {};

using Work = std::variant<EmptyWork, KernelWork, CopyWork, FillWork, HostWork, EventRecordWork, EventWaitWork>;

// Runs one piece of work on `stream`, as the matching stream operation would (launch.cpp, memory.cpp, graph.cpp).
hipError_t run_step(const Work& work, hipStream_t stream);
hipError_t run_kernel(const KernelWork& work, hipStream_t stream);
hipError_t run_copy(const CopyWork& work);
hipError_t run_fill(const FillWork& work);
// Checks a copy or fill's ranges against the allocations, as the stream operations do (memory.cpp).
hipError_t check_copy(const CopyWork& work);
hipError_t check_fill(const FillWork& work);

// Validates a launch and packs its explicit arguments (launch.cpp): what hipGraphAddKernelNode and a launch on a
// capturing stream keep.
hipError_t pack_kernel(const LaunchRequest& request, KernelWork& out);

// One capture sequence: begun on `origin`, possibly joined by other streams through events.
struct CaptureSession {
  ihipGraph* graph = nullptr;
  hipStreamCaptureMode mode = hipStreamCaptureModeGlobal;
  unsigned long long id = 0;
  std::thread::id thread;  // the thread that began it
  ihipStream_t* origin = nullptr;
  std::vector<ihipStream_t*> members;  // every stream taking part, origin included
  bool invalidated = false;            // an illegal call happened during capture: hipStreamEndCapture fails
};

// Whether `s` is capturing (then its work must go to capture_work instead of running).
bool capturing(const ihipStream_t* s);
// Appends `work` to the capture of `s` as a node depending on the stream's current tail nodes, which it then
// replaces. Returns hipErrorStreamCaptureInvalidated if the capture was invalidated.
hipError_t capture_work(ihipStream_t* s, hipGraphNodeType type, Work work);
// For calls that are illegal while capturing under the calling thread's capture mode (synchronous copies, fills,
// allocation, device synchronisation): hipErrorStreamCaptureUnsupported, invalidating the captures concerned, or
// hipSuccess.
hipError_t check_unsafe_call();
// For a synchronisation or query of `s` itself: hipErrorStreamCaptureUnsupported (and the capture is invalidated)
// if `s` is capturing.
hipError_t check_stream_sync(ihipStream_t* s);
// hipEventRecord / hipStreamWaitEvent on a capturing stream, or a wait that makes `s` join a capture.
// They return false when the event or stream takes no part in a capture (the plain operation applies).
bool capture_event_record(ihipStream_t* s, ihipEvent_t* e);
bool capture_event_wait(ihipStream_t* s, ihipEvent_t* e);
// Whether `e` was recorded in a capture that is still under way.
bool event_in_capture(ihipEvent_t* e);
// A stream being destroyed leaves its capture.
void leave_capture(ihipStream_t* s);
// hipDeviceReset: every capture under way ends, its graph discarded.
void abandon_captures();

}  // namespace vgpu::hiprt

struct hipGraphNode {
  ihipGraph* graph = nullptr;
  hipGraphNodeType type = hipGraphNodeTypeEmpty;
  vgpu::hiprt::Work work;
  std::vector<hipGraphNode*> dependencies;  // in the order they were added
  std::vector<hipGraphNode*> dependents;
};

struct ihipGraph {
  std::vector<std::unique_ptr<hipGraphNode>> nodes;  // in the order they were added
  std::vector<const hipGraphNode*> cloned_from;      // for hipGraphNodeFindInClone (empty unless a clone)
};

// An instantiated graph: a copy of the nodes' work in one fixed topological order.
struct hipGraphExec {
  struct Step {
    const hipGraphNode* node;  // the graph node it was made from, for the hipGraphExec*SetParams calls
    hipGraphNodeType type;
    vgpu::hiprt::Work work;
  };
  std::vector<Step> steps;
};
