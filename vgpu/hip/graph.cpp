// Graphs and stream capture. A graph is a list of nodes with dependencies; instantiating it fixes one topological
// order (among the nodes that are ready, the one added first runs first), so a graph launch is deterministic and
// runs its nodes one after the other on the launch stream, ordered with the other work on that stream.
// Stream capture turns the work enqueued on a capturing stream into nodes of a graph instead of running it.
#include "graph.h"
#include "stream_queue.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

namespace vgpu::hiprt {
namespace {

// Guards capture sessions and the capture fields of streams and events.
std::mutex g_capture_mu;
std::atomic<unsigned long long> g_next_capture_id{1};
// Captures in global mode under way in any thread.
std::atomic<int> g_global_captures{0};
// The calling thread's capture interaction mode (hipThreadExchangeStreamCaptureMode) and the non-relaxed captures
// it began that are still under way.
thread_local hipStreamCaptureMode t_mode = hipStreamCaptureModeGlobal;
thread_local int t_own_captures = 0;

// Sessions under way, for check_unsafe_call.
std::vector<std::shared_ptr<CaptureSession>>& sessions() {
  static auto* s = new std::vector<std::shared_ptr<CaptureSession>>;
  return *s;
}

// Ends a session: its streams stop capturing; the counters forget it. Caller holds g_capture_mu.
void finish_session(const std::shared_ptr<CaptureSession>& c) {
  for (ihipStream_t* m : c->members) {
    m->capture.reset();
    m->capture_tail.clear();
  }
  c->members.clear();
  if (c->mode == hipStreamCaptureModeGlobal) --g_global_captures;
  if (c->mode != hipStreamCaptureModeRelaxed && c->thread == std::this_thread::get_id()) --t_own_captures;
  auto& all = sessions();
  all.erase(std::remove(all.begin(), all.end(), c), all.end());
}

hipGraphNode* add_node(ihipGraph* g, hipGraphNodeType type, Work work, const std::vector<hipGraphNode*>& deps) {
  auto node = std::make_unique<hipGraphNode>();
  node->graph = g;
  node->type = type;
  node->work = std::move(work);
  for (hipGraphNode* d : deps) {
    if (std::find(node->dependencies.begin(), node->dependencies.end(), d) != node->dependencies.end()) continue;
    node->dependencies.push_back(d);
    d->dependents.push_back(node.get());
  }
  g->nodes.push_back(std::move(node));
  return g->nodes.back().get();
}

bool owns(const ihipGraph* g, const hipGraphNode* n) { return n && g && n->graph == g; }

// The common part of the hipGraphAdd*Node functions: checks the graph, the output and the dependencies.
hipError_t add_checked(hipGraphNode_t* out, hipGraph_t graph, const hipGraphNode_t* deps, size_t count,
                       hipGraphNodeType type, Work work) {
  if (!out || !graph || (count && !deps)) return done(hipErrorInvalidValue);
  std::vector<hipGraphNode*> list;
  for (size_t i = 0; i < count; ++i) {
    if (!owns(graph, deps[i])) return fail(hipErrorInvalidValue, "a dependency is not a node of this graph");
    list.push_back(deps[i]);
  }
  *out = add_node(graph, type, std::move(work), list);
  return hipSuccess;
}

// Graph launches and hipGraphExec*SetParams check kernel work the same way a launch does.
hipError_t kernel_from_params(const hipKernelNodeParams* p, KernelWork& out) {
  if (!p || !p->func) return done(hipErrorInvalidValue);
  LaunchRequest r;
  // func is a registered host stub, or a hipFunction_t from hipModuleGetFunction (HIP accepts both).
  r.function = Runtime::get().find_function(p->func);
  if (!r.function) {
    r.function = module_function(p->func);
    r.module_api = r.function != nullptr;
  }
  if (!r.function)
    return fail(hipErrorInvalidDeviceFunction, "the kernel node's func is neither a registered kernel nor a module's");
  r.grid = Dim3{p->gridDim.x, p->gridDim.y, p->gridDim.z};
  r.block = Dim3{p->blockDim.x, p->blockDim.y, p->blockDim.z};
  r.dynamic_shared = p->sharedMemBytes;
  if (p->kernelParams && p->extra) return done(hipErrorInvalidValue);
  r.args = p->kernelParams;
  if (p->extra) {
    // { HIP_LAUNCH_PARAM_BUFFER_POINTER, buffer, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END }
    for (size_t i = 0; p->extra[i] != HIP_LAUNCH_PARAM_END; i += 2) {
      if (i > 64) return done(hipErrorInvalidValue);
      if (p->extra[i] == HIP_LAUNCH_PARAM_BUFFER_POINTER) r.arg_buffer = p->extra[i + 1];
      else if (p->extra[i] == HIP_LAUNCH_PARAM_BUFFER_SIZE) r.arg_buffer_size = *static_cast<size_t*>(p->extra[i + 1]);
      else return done(hipErrorInvalidValue);
    }
    if (!r.arg_buffer) return done(hipErrorInvalidValue);
  }
  if (hipError_t e = pack_kernel(r, out); e != hipSuccess) return e;
  out.host_function = p->func;
  return hipSuccess;
}

hipError_t copy_from_3d(const hipMemcpy3DParms* p, CopyWork& out) {
  if (!p) return done(hipErrorInvalidValue);
  if (p->srcArray || p->dstArray)
    return fail(hipErrorNotSupported, "graph memcpy nodes over HIP arrays: vgpu has no arrays", true);
  if (!p->srcPtr.ptr || !p->dstPtr.ptr) return done(hipErrorInvalidValue);
  const size_t sp = p->srcPtr.pitch ? p->srcPtr.pitch : p->extent.width;
  const size_t dp = p->dstPtr.pitch ? p->dstPtr.pitch : p->extent.width;
  const size_t sr = p->srcPtr.ysize ? p->srcPtr.ysize : p->extent.height;
  const size_t dr = p->dstPtr.ysize ? p->dstPtr.ysize : p->extent.height;
  if (p->extent.width > sp || p->extent.width > dp) return done(hipErrorInvalidPitchValue);
  out.src = static_cast<const uint8_t*>(p->srcPtr.ptr) + (p->srcPos.z * sr + p->srcPos.y) * sp + p->srcPos.x;
  out.dst = static_cast<uint8_t*>(p->dstPtr.ptr) + (p->dstPos.z * dr + p->dstPos.y) * dp + p->dstPos.x;
  out.src_pitch = sp;
  out.dst_pitch = dp;
  out.src_rows = sr;
  out.dst_rows = dr;
  out.width = p->extent.width;
  out.height = p->extent.height;
  out.depth = p->extent.depth;
  out.kind = p->kind;
  return check_copy(out);
}

hipError_t fill_from_params(const hipMemsetParams* p, FillWork& out) {
  if (!p || !p->dst) return done(hipErrorInvalidValue);
  if (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) return done(hipErrorInvalidValue);
  if (p->height > 1 && p->pitch < p->width * p->elementSize) return done(hipErrorInvalidValue);
  out.dst = p->dst;
  out.element_size = p->elementSize;
  out.value = p->value;
  out.width = p->width;
  out.height = p->height ? p->height : 1;
  out.pitch = p->height > 1 ? p->pitch : p->width * p->elementSize;
  return check_fill(out);
}

// Every node once, each after its dependencies; among the nodes ready at a step, the one added first.
bool topological_order(const ihipGraph& g, std::vector<const hipGraphNode*>& order) {
  std::map<const hipGraphNode*, size_t> index;
  for (size_t i = 0; i < g.nodes.size(); ++i) index[g.nodes[i].get()] = i;
  std::vector<size_t> waiting(g.nodes.size());
  std::set<size_t> ready;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    waiting[i] = g.nodes[i]->dependencies.size();
    if (!waiting[i]) ready.insert(i);
  }
  order.clear();
  while (!ready.empty()) {
    const size_t i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(g.nodes[i].get());
    for (const hipGraphNode* d : g.nodes[i]->dependents)
      if (--waiting[index[d]] == 0) ready.insert(index[d]);
  }
  return order.size() == g.nodes.size();  // otherwise a cycle
}

hipError_t instantiate(hipGraphExec_t* out, hipGraph_t graph) {
  if (!out || !graph) return done(hipErrorInvalidValue);
  std::vector<const hipGraphNode*> order;
  if (!topological_order(*graph, order))
    return fail(hipErrorInvalidValue, "the graph's dependencies form a cycle");
  auto exec = std::make_unique<hipGraphExec>();
  for (const hipGraphNode* n : order) exec->steps.push_back({n, n->type, n->work});
  *out = exec.release();
  return hipSuccess;
}

}  // namespace

hipError_t run_step(const Work& work, hipStream_t stream) {
  return std::visit(
      [&](const auto& w) -> hipError_t {
        using T = std::decay_t<decltype(w)>;
        if constexpr (std::is_same_v<T, KernelWork>) return run_kernel(w, stream);
        else if constexpr (std::is_same_v<T, CopyWork>) return run_copy(w);
        else if constexpr (std::is_same_v<T, FillWork>) return run_fill(w);
        else if constexpr (std::is_same_v<T, HostWork>) {
          w.fn(w.user_data);
          return hipSuccess;
        } else if constexpr (std::is_same_v<T, EventRecordWork>) return hipEventRecord(w.event, stream);
        else return hipSuccess;  // empty nodes; event waits are met: every earlier operation has finished
      },
      work);
}

namespace {

hipError_t graph_launch(hipGraphExec_t exec, hipStream_t stream) {
  if (!exec) return done(hipErrorInvalidValue);
  ihipStream_t* s = Runtime::get().stream(stream);
  if (!s) return done(hipErrorInvalidHandle);
  // Each step goes through the ordinary stream operations, so a graph launched into a capturing stream is captured
  // node by node, in the same order.
  for (const hipGraphExec::Step& step : exec->steps) {
    if (capturing(s)) {
      if (hipError_t e = capture_work(s, step.type, step.work); e != hipSuccess) return e;
      continue;
    }
    if (behind_host_work(s)) {
      queue_work(s, step.work);
      continue;
    }
    if (hipError_t e = run_step(step.work, stream); e != hipSuccess) return e;
  }
  return hipSuccess;
}

template <class T>
hipError_t list_nodes(const std::vector<T>& nodes, hipGraphNode_t* out, size_t* count) {
  if (!count) return done(hipErrorInvalidValue);
  if (!out) {
    *count = nodes.size();
    return hipSuccess;
  }
  // As HIP: fills at most *count entries (the rest of a longer buffer is set to null) and reports the real number.
  for (size_t i = 0; i < *count; ++i) out[i] = i < nodes.size() ? nodes[i] : nullptr;
  *count = nodes.size();
  return hipSuccess;
}

hipError_t begin_capture(hipStream_t stream, hipStreamCaptureMode mode) {
  Runtime& rt = Runtime::get();
  ihipStream_t* s = rt.stream(stream);
  if (!s) return done(hipErrorInvalidHandle);
  if (mode < hipStreamCaptureModeGlobal || mode > hipStreamCaptureModeRelaxed) return done(hipErrorInvalidValue);
  // The legacy default stream synchronises with every other stream: it cannot be captured.
  if (stream == nullptr || stream == hipStreamLegacy)
    return fail(hipErrorStreamCaptureUnsupported, "the null stream cannot be captured");
  std::lock_guard lock(g_capture_mu);
  if (s->capture) return done(hipErrorIllegalState);
  auto c = std::make_shared<CaptureSession>();
  c->graph = new ihipGraph;
  c->mode = mode;
  c->id = g_next_capture_id++;
  c->thread = std::this_thread::get_id();
  c->origin = s;
  c->members.push_back(s);
  s->capture = c;
  s->capture_tail.clear();
  if (mode == hipStreamCaptureModeGlobal) ++g_global_captures;
  if (mode != hipStreamCaptureModeRelaxed) ++t_own_captures;
  sessions().push_back(c);
  return hipSuccess;
}

hipError_t end_capture(hipStream_t stream, hipGraph_t* graph) {
  if (!graph) return done(hipErrorInvalidValue);
  ihipStream_t* s = Runtime::get().stream(stream);
  if (!s) return done(hipErrorInvalidHandle);
  std::lock_guard lock(g_capture_mu);
  std::shared_ptr<CaptureSession> c = s->capture;
  if (!c) return done(hipErrorIllegalState);
  if (c->origin != s) return fail(hipErrorStreamCaptureUnmatched, "the capture was begun on another stream");
  if (c->mode != hipStreamCaptureModeRelaxed && c->thread != std::this_thread::get_id())
    return done(hipErrorStreamCaptureWrongThread);
  const bool invalidated = c->invalidated;
  finish_session(c);
  if (invalidated) {
    delete c->graph;
    *graph = nullptr;
    return done(hipErrorStreamCaptureInvalidated);
  }
  *graph = c->graph;
  return hipSuccess;
}

hipError_t capture_info(hipStream_t stream, hipStreamCaptureStatus* status, unsigned long long* id,
                        hipGraph_t* graph, const hipGraphNode_t** deps, size_t* count) {
  if (!status) return done(hipErrorInvalidValue);
  ihipStream_t* s = Runtime::get().stream(stream);
  if (!s) return done(hipErrorInvalidHandle);
  std::lock_guard lock(g_capture_mu);
  const CaptureSession* c = s->capture.get();
  *status = !c ? hipStreamCaptureStatusNone
               : c->invalidated ? hipStreamCaptureStatusInvalidated : hipStreamCaptureStatusActive;
  if (c && id) *id = c->id;
  if (graph) *graph = c ? c->graph : nullptr;
  if (deps) *deps = c ? s->capture_tail.data() : nullptr;
  if (count) *count = c ? s->capture_tail.size() : 0;
  return hipSuccess;
}

}  // namespace

// --- capture hooks ---------------------------------------------------------------------------------------------

bool capturing(const ihipStream_t* s) { return s && s->capture; }

hipError_t capture_work(ihipStream_t* s, hipGraphNodeType type, Work work) {
  std::lock_guard lock(g_capture_mu);
  CaptureSession* c = s->capture.get();
  if (!c) return done(hipErrorIllegalState);
  if (c->invalidated) return done(hipErrorStreamCaptureInvalidated);
  hipGraphNode* n = add_node(c->graph, type, std::move(work), s->capture_tail);
  s->capture_tail.assign(1, n);
  return hipSuccess;
}

hipError_t check_unsafe_call() {
  if (t_mode == hipStreamCaptureModeRelaxed) return hipSuccess;
  const bool global = t_mode == hipStreamCaptureModeGlobal && g_global_captures.load() > 0;
  if (!global && t_own_captures == 0) return hipSuccess;
  std::lock_guard lock(g_capture_mu);
  bool any = false;
  for (const auto& c : sessions()) {
    const bool own = c->mode != hipStreamCaptureModeRelaxed && c->thread == std::this_thread::get_id();
    if (own || (global && c->mode == hipStreamCaptureModeGlobal)) c->invalidated = any = true;
  }
  return any ? fail(hipErrorStreamCaptureUnsupported, "operation not permitted while a stream is capturing")
             : hipSuccess;
}

hipError_t check_stream_sync(ihipStream_t* s) {
  std::lock_guard lock(g_capture_mu);
  if (!s->capture) return hipSuccess;
  s->capture->invalidated = true;
  return fail(hipErrorStreamCaptureUnsupported, "synchronisation of a capturing stream");
}

bool capture_event_record(ihipStream_t* s, ihipEvent_t* e) {
  std::lock_guard lock(g_capture_mu);
  if (!s->capture) {
    e->capture.reset();
    e->capture_nodes.clear();
    return false;
  }
  e->capture = s->capture;
  e->capture_nodes = s->capture_tail;
  return true;
}

bool capture_event_wait(ihipStream_t* s, ihipEvent_t* e) {
  std::lock_guard lock(g_capture_mu);
  const std::shared_ptr<CaptureSession> c = e->capture;
  // An event recorded in a capture that has since ended is an ordinary event again.
  if (!c || c->members.empty()) return false;
  if (s->capture && s->capture != c) {
    // Waiting on another capture's event merges two captures, which HIP refuses too.
    s->capture->invalidated = true;
    return true;
  }
  if (!s->capture) {  // the stream joins the capture (fork)
    s->capture = c;
    s->capture_tail.clear();
    c->members.push_back(s);
  }
  for (hipGraphNode* n : e->capture_nodes)
    if (std::find(s->capture_tail.begin(), s->capture_tail.end(), n) == s->capture_tail.end())
      s->capture_tail.push_back(n);
  return true;
}

bool event_in_capture(ihipEvent_t* e) {
  std::lock_guard lock(g_capture_mu);
  return e->capture && !e->capture->members.empty();
}

void leave_capture(ihipStream_t* s) {
  std::lock_guard lock(g_capture_mu);
  if (!s->capture) return;
  std::shared_ptr<CaptureSession> c = s->capture;
  if (c->origin == s) {
    c->invalidated = true;
    delete c->graph;
    c->graph = nullptr;
    finish_session(c);
    return;
  }
  c->members.erase(std::remove(c->members.begin(), c->members.end(), s), c->members.end());
  s->capture.reset();
  s->capture_tail.clear();
}

void abandon_captures() {
  std::lock_guard lock(g_capture_mu);
  const std::vector<std::shared_ptr<CaptureSession>> all = sessions();
  for (const auto& c : all) {
    delete c->graph;
    c->graph = nullptr;
    finish_session(c);
  }
  // Captures another thread began in a strict mode counted in that thread's own tally; a reset ends them all.
  g_global_captures = 0;
}

}  // namespace vgpu::hiprt

using namespace vgpu;
using namespace vgpu::hiprt;

// --- stream capture --------------------------------------------------------------------------------------------

HK_HIP_API hipError_t hipStreamBeginCapture(hipStream_t stream, hipStreamCaptureMode mode) {
  return begin_capture(stream, mode);
}
HK_HIP_API hipError_t hipStreamBeginCapture_spt(hipStream_t stream, hipStreamCaptureMode mode) {
  return begin_capture(stream, mode);
}
HK_HIP_API hipError_t hipStreamEndCapture(hipStream_t stream, hipGraph_t* graph) { return end_capture(stream, graph); }
HK_HIP_API hipError_t hipStreamEndCapture_spt(hipStream_t stream, hipGraph_t* graph) {
  return end_capture(stream, graph);
}
HK_HIP_API hipError_t hipStreamIsCapturing(hipStream_t stream, hipStreamCaptureStatus* status) {
  return capture_info(stream, status, nullptr, nullptr, nullptr, nullptr);
}
HK_HIP_API hipError_t hipStreamIsCapturing_spt(hipStream_t stream, hipStreamCaptureStatus* status) {
  return capture_info(stream, status, nullptr, nullptr, nullptr, nullptr);
}
HK_HIP_API hipError_t hipStreamGetCaptureInfo(hipStream_t stream, hipStreamCaptureStatus* status,
                                              unsigned long long* id) {
  return capture_info(stream, status, id, nullptr, nullptr, nullptr);
}
HK_HIP_API hipError_t hipStreamGetCaptureInfo_spt(hipStream_t stream, hipStreamCaptureStatus* status,
                                                  unsigned long long* id) {
  return capture_info(stream, status, id, nullptr, nullptr, nullptr);
}
HK_HIP_API hipError_t hipStreamGetCaptureInfo_v2(hipStream_t stream, hipStreamCaptureStatus* status,
                                                 unsigned long long* id, hipGraph_t* graph,
                                                 const hipGraphNode_t** deps, size_t* count) {
  return capture_info(stream, status, id, graph, deps, count);
}
HK_HIP_API hipError_t hipStreamGetCaptureInfo_v2_spt(hipStream_t stream, hipStreamCaptureStatus* status,
                                                     unsigned long long* id, hipGraph_t* graph,
                                                     const hipGraphNode_t** deps, size_t* count) {
  return capture_info(stream, status, id, graph, deps, count);
}

HK_HIP_API hipError_t hipThreadExchangeStreamCaptureMode(hipStreamCaptureMode* mode) {
  if (!mode || *mode < hipStreamCaptureModeGlobal || *mode > hipStreamCaptureModeRelaxed)
    return done(hipErrorInvalidValue);
  std::swap(*mode, t_mode);
  return hipSuccess;
}

HK_HIP_API hipError_t hipStreamUpdateCaptureDependencies(hipStream_t stream, hipGraphNode_t* deps, size_t count,
                                                         unsigned int flags) {
  ihipStream_t* s = Runtime::get().stream(stream);
  if (!s) return done(hipErrorInvalidHandle);
  if ((count && !deps) || (flags != hipStreamAddCaptureDependencies && flags != hipStreamSetCaptureDependencies))
    return done(hipErrorInvalidValue);
  std::lock_guard lock(g_capture_mu);
  if (!s->capture) return done(hipErrorIllegalState);
  for (size_t i = 0; i < count; ++i)
    if (!owns(s->capture->graph, deps[i])) return done(hipErrorInvalidValue);
  if (flags == hipStreamSetCaptureDependencies) s->capture_tail.clear();
  for (size_t i = 0; i < count; ++i)
    if (std::find(s->capture_tail.begin(), s->capture_tail.end(), deps[i]) == s->capture_tail.end())
      s->capture_tail.push_back(deps[i]);
  return hipSuccess;
}

// --- graphs ----------------------------------------------------------------------------------------------------

HK_HIP_API hipError_t hipGraphCreate(hipGraph_t* graph, unsigned int flags) {
  if (!graph || flags != 0) return done(hipErrorInvalidValue);
  *graph = new ihipGraph;
  return hipSuccess;
}

HK_HIP_API hipError_t hipGraphDestroy(hipGraph_t graph) {
  if (!graph) return done(hipErrorInvalidValue);
  delete graph;
  return hipSuccess;
}

HK_HIP_API hipError_t hipGraphAddKernelNode(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps,
                                            size_t count, const hipKernelNodeParams* params) {
  KernelWork work;
  if (hipError_t e = kernel_from_params(params, work); e != hipSuccess) return e;
  return add_checked(node, graph, deps, count, hipGraphNodeTypeKernel, std::move(work));
}

HK_HIP_API hipError_t hipGraphAddMemcpyNode(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps,
                                            size_t count, const hipMemcpy3DParms* params) {
  CopyWork work;
  if (hipError_t e = copy_from_3d(params, work); e != hipSuccess) return e;
  return add_checked(node, graph, deps, count, hipGraphNodeTypeMemcpy, work);
}

HK_HIP_API hipError_t hipGraphAddMemcpyNode1D(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps,
                                              size_t count, void* dst, const void* src, size_t bytes,
                                              hipMemcpyKind kind) {
  if (!dst || !src) return done(hipErrorInvalidValue);
  CopyWork work;
  work.dst = dst;
  work.src = src;
  work.width = work.dst_pitch = work.src_pitch = bytes;
  work.dst_rows = work.src_rows = 1;
  work.kind = kind;
  if (hipError_t e = check_copy(work); e != hipSuccess) return e;
  return add_checked(node, graph, deps, count, hipGraphNodeTypeMemcpy, work);
}

HK_HIP_API hipError_t hipGraphAddMemsetNode(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps,
                                            size_t count, const hipMemsetParams* params) {
  FillWork work;
  if (hipError_t e = fill_from_params(params, work); e != hipSuccess) return e;
  return add_checked(node, graph, deps, count, hipGraphNodeTypeMemset, work);
}

HK_HIP_API hipError_t hipGraphAddHostNode(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps,
                                          size_t count, const hipHostNodeParams* params) {
  if (!params || !params->fn) return done(hipErrorInvalidValue);
  return add_checked(node, graph, deps, count, hipGraphNodeTypeHost, HostWork{params->fn, params->userData});
}

HK_HIP_API hipError_t hipGraphAddEmptyNode(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps,
                                           size_t count) {
  return add_checked(node, graph, deps, count, hipGraphNodeTypeEmpty, EmptyWork{});
}

HK_HIP_API hipError_t hipGraphAddEventRecordNode(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps,
                                                 size_t count, hipEvent_t event) {
  if (!Runtime::get().valid_event(event)) return done(hipErrorInvalidValue);
  return add_checked(node, graph, deps, count, hipGraphNodeTypeEventRecord, EventRecordWork{event});
}

HK_HIP_API hipError_t hipGraphAddEventWaitNode(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps,
                                               size_t count, hipEvent_t event) {
  if (!Runtime::get().valid_event(event)) return done(hipErrorInvalidValue);
  return add_checked(node, graph, deps, count, hipGraphNodeTypeWaitEvent, EventWaitWork{event});
}

HK_HIP_API hipError_t hipGraphAddDependencies(hipGraph_t graph, const hipGraphNode_t* from, const hipGraphNode_t* to,
                                              size_t count) {
  if (!graph || (count && (!from || !to))) return done(hipErrorInvalidValue);
  for (size_t i = 0; i < count; ++i) {
    if (!owns(graph, from[i]) || !owns(graph, to[i]) || from[i] == to[i]) return done(hipErrorInvalidValue);
    auto& deps = to[i]->dependencies;
    if (std::find(deps.begin(), deps.end(), from[i]) != deps.end()) return done(hipErrorInvalidValue);
  }
  for (size_t i = 0; i < count; ++i) {
    to[i]->dependencies.push_back(from[i]);
    from[i]->dependents.push_back(to[i]);
  }
  return hipSuccess;
}

HK_HIP_API hipError_t hipGraphGetNodes(hipGraph_t graph, hipGraphNode_t* nodes, size_t* count) {
  if (!graph) return done(hipErrorInvalidValue);
  std::vector<hipGraphNode_t> all;
  for (auto& n : graph->nodes) all.push_back(n.get());
  return list_nodes(all, nodes, count);
}

HK_HIP_API hipError_t hipGraphGetRootNodes(hipGraph_t graph, hipGraphNode_t* nodes, size_t* count) {
  if (!graph) return done(hipErrorInvalidValue);
  std::vector<hipGraphNode_t> roots;
  for (auto& n : graph->nodes)
    if (n->dependencies.empty()) roots.push_back(n.get());
  return list_nodes(roots, nodes, count);
}

HK_HIP_API hipError_t hipGraphNodeGetType(hipGraphNode_t node, hipGraphNodeType* type) {
  if (!node || !type) return done(hipErrorInvalidValue);
  *type = node->type;
  return hipSuccess;
}

HK_HIP_API hipError_t hipGraphNodeGetDependencies(hipGraphNode_t node, hipGraphNode_t* deps, size_t* count) {
  if (!node) return done(hipErrorInvalidValue);
  return list_nodes(node->dependencies, deps, count);
}

HK_HIP_API hipError_t hipGraphNodeGetDependentNodes(hipGraphNode_t node, hipGraphNode_t* deps, size_t* count) {
  if (!node) return done(hipErrorInvalidValue);
  return list_nodes(node->dependents, deps, count);
}

HK_HIP_API hipError_t hipGraphKernelNodeGetParams(hipGraphNode_t node, hipKernelNodeParams* params) {
  if (!node || !params || node->type != hipGraphNodeTypeKernel) return done(hipErrorInvalidValue);
  auto& k = std::get<KernelWork>(node->work);
  k.arg_pointers.clear();
  for (uint32_t offset : k.arg_offsets) k.arg_pointers.push_back(k.args.data() + offset);
  params->func = const_cast<void*>(k.host_function);
  params->gridDim = dim3(k.grid.x, k.grid.y, k.grid.z);
  params->blockDim = dim3(k.block.x, k.block.y, k.block.z);
  params->sharedMemBytes = static_cast<unsigned>(k.dynamic_shared);
  params->kernelParams = k.arg_pointers.data();
  params->extra = nullptr;
  return hipSuccess;
}

HK_HIP_API hipError_t hipGraphKernelNodeSetParams(hipGraphNode_t node, const hipKernelNodeParams* params) {
  if (!node || node->type != hipGraphNodeTypeKernel) return done(hipErrorInvalidValue);
  KernelWork work;
  if (hipError_t e = kernel_from_params(params, work); e != hipSuccess) return e;
  node->work = std::move(work);
  return hipSuccess;
}

HK_HIP_API hipError_t hipGraphMemcpyNodeGetParams(hipGraphNode_t node, hipMemcpy3DParms* params) {
  if (!node || !params || node->type != hipGraphNodeTypeMemcpy) return done(hipErrorInvalidValue);
  const auto& c = std::get<CopyWork>(node->work);
  *params = hipMemcpy3DParms{};
  params->srcPtr = make_hipPitchedPtr(const_cast<void*>(c.src), c.src_pitch, c.width, c.src_rows);
  params->dstPtr = make_hipPitchedPtr(c.dst, c.dst_pitch, c.width, c.dst_rows);
  params->extent = make_hipExtent(c.width, c.height, c.depth);
  params->kind = c.kind;
  return hipSuccess;
}

HK_HIP_API hipError_t hipGraphMemsetNodeGetParams(hipGraphNode_t node, hipMemsetParams* params) {
  if (!node || !params || node->type != hipGraphNodeTypeMemset) return done(hipErrorInvalidValue);
  const auto& f = std::get<FillWork>(node->work);
  params->dst = f.dst;
  params->elementSize = f.element_size;
  params->height = f.height;
  params->pitch = f.pitch;
  params->value = f.value;
  params->width = f.width;
  return hipSuccess;
}

HK_HIP_API hipError_t hipGraphHostNodeGetParams(hipGraphNode_t node, hipHostNodeParams* params) {
  if (!node || !params || node->type != hipGraphNodeTypeHost) return done(hipErrorInvalidValue);
  const auto& h = std::get<HostWork>(node->work);
  params->fn = h.fn;
  params->userData = h.user_data;
  return hipSuccess;
}

HK_HIP_API hipError_t hipGraphClone(hipGraph_t* clone, hipGraph_t original) {
  if (!clone || !original) return done(hipErrorInvalidValue);
  auto g = std::make_unique<ihipGraph>();
  std::map<const hipGraphNode*, hipGraphNode*> copy_of;
  for (auto& n : original->nodes) {
    std::vector<hipGraphNode*> deps;
    for (hipGraphNode* d : n->dependencies) deps.push_back(copy_of.at(d));
    copy_of[n.get()] = add_node(g.get(), n->type, n->work, deps);
    g->cloned_from.push_back(n.get());
  }
  *clone = g.release();
  return hipSuccess;
}

HK_HIP_API hipError_t hipGraphNodeFindInClone(hipGraphNode_t* node, hipGraphNode_t original, hipGraph_t clone) {
  if (!node || !original || !clone) return done(hipErrorInvalidValue);
  for (size_t i = 0; i < clone->cloned_from.size(); ++i)
    if (clone->cloned_from[i] == original) {
      *node = clone->nodes[i].get();
      return hipSuccess;
    }
  return done(hipErrorInvalidValue);
}

// --- executable graphs -----------------------------------------------------------------------------------------

HK_HIP_API hipError_t hipGraphInstantiate(hipGraphExec_t* exec, hipGraph_t graph, hipGraphNode_t* error_node,
                                          char* log, size_t log_size) {
  if (error_node) *error_node = nullptr;
  if (log && log_size) log[0] = '\0';
  return instantiate(exec, graph);
}

HK_HIP_API hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t* exec, hipGraph_t graph, unsigned long long) {
  return instantiate(exec, graph);
}

HK_HIP_API hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t stream) { return graph_launch(exec, stream); }
HK_HIP_API hipError_t hipGraphLaunch_spt(hipGraphExec_t exec, hipStream_t stream) {
  return graph_launch(exec, stream);
}

// Work is uploaded by being copied at instantiation: nothing more to do.
HK_HIP_API hipError_t hipGraphUpload(hipGraphExec_t exec, hipStream_t stream) {
  if (!exec) return done(hipErrorInvalidValue);
  return Runtime::get().stream(stream) ? hipSuccess : done(hipErrorInvalidHandle);
}

HK_HIP_API hipError_t hipGraphExecDestroy(hipGraphExec_t exec) {
  if (!exec) return done(hipErrorInvalidValue);
  delete exec;
  return hipSuccess;
}

HK_HIP_API hipError_t hipGraphExecKernelNodeSetParams(hipGraphExec_t exec, hipGraphNode_t node,
                                                      const hipKernelNodeParams* params) {
  if (!exec || !node || node->type != hipGraphNodeTypeKernel) return done(hipErrorInvalidValue);
  KernelWork work;
  if (hipError_t e = kernel_from_params(params, work); e != hipSuccess) return e;
  for (hipGraphExec::Step& step : exec->steps)
    if (step.node == node) {
      step.work = std::move(work);
      return hipSuccess;
    }
  return done(hipErrorInvalidValue);
}

HK_HIP_API hipError_t hipGraphExecHostNodeSetParams(hipGraphExec_t exec, hipGraphNode_t node,
                                                    const hipHostNodeParams* params) {
  if (!exec || !node || !params || !params->fn || node->type != hipGraphNodeTypeHost) return done(hipErrorInvalidValue);
  for (hipGraphExec::Step& step : exec->steps)
    if (step.node == node) {
      step.work = HostWork{params->fn, params->userData};
      return hipSuccess;
    }
  return done(hipErrorInvalidValue);
}
