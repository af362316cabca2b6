// Stream capture and graphs: work enqueued on a capturing stream (every launch path, async copies and fills, host
// functions, events) becomes graph nodes instead of running; graphs built by hand run their nodes in a deterministic
// topological order on the launch stream; kernel node arguments are copied when the node is made; calls that are
// illegal during capture fail with HIP's errors and invalidate the capture. Results are checked against host
// references computed here.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "hip_check.h"

namespace {

__global__ void scale(int* data, int n, int factor) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

__global__ void add(int* data, int n, int term) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += term;
}

constexpr int kN = 300;  // not a multiple of the block: the kernels' bounds checks matter
constexpr int kBlock = 128;
constexpr int kGrid = (kN + kBlock - 1) / kBlock;

void count_call(void* counter) { ++*static_cast<int*>(counter); }

struct Trace {
  std::vector<int> order;
};
struct TraceStep {
  Trace* trace;
  int id;
};
void record_step(void* step) {
  auto* s = static_cast<TraceStep*>(step);
  s->trace->order.push_back(s->id);
}

hipGraphNode_t add_trace_node(hipGraph_t g, std::vector<hipGraphNode_t> deps, TraceStep* step) {
  hipHostNodeParams p{record_step, step};
  hipGraphNode_t node = nullptr;
  EXPECT_EQ(hipGraphAddHostNode(&node, g, deps.data(), deps.size(), &p), hipSuccess);
  return node;
}

std::vector<int> iota_values(int first) {
  std::vector<int> v(kN);
  std::iota(v.begin(), v.end(), first);
  return v;
}

}  // namespace

TEST(Capture, WorkBecomesNodesAndRunsOnlyAtLaunch) {
  hipStream_t s;
  HIP_ASSERT(hipStreamCreate(&s));
  int* dev = nullptr;
  HIP_ASSERT(hipMalloc(&dev, kN * sizeof(int)));
  const std::vector<int> sentinel(kN, -7);
  HIP_ASSERT(hipMemcpy(dev, sentinel.data(), kN * sizeof(int), hipMemcpyHostToDevice));
  std::vector<int> in = iota_values(0), out(kN, 0);
  int host_calls = 0;

  hipStreamCaptureStatus status;
  HIP_ASSERT(hipStreamIsCapturing(s, &status));
  EXPECT_EQ(status, hipStreamCaptureStatusNone);
  HIP_ASSERT(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal));
  HIP_ASSERT(hipStreamIsCapturing(s, &status));
  EXPECT_EQ(status, hipStreamCaptureStatusActive);

  HIP_ASSERT(hipMemcpyAsync(dev, in.data(), kN * sizeof(int), hipMemcpyHostToDevice, s));
  scale<<<kGrid, kBlock, 0, s>>>(dev, kN, 3);  // <<<>>>
  HIP_ASSERT(hipGetLastError());
  int n = kN, term = 5;
  void* args[] = {&dev, &n, &term};
  HIP_ASSERT(hipLaunchKernel(reinterpret_cast<const void*>(add), dim3(kGrid), dim3(kBlock), args, 0, s));
  HIP_ASSERT(hipLaunchHostFunc(s, count_call, &host_calls));
  hipEvent_t marker;
  HIP_ASSERT(hipEventCreate(&marker));
  HIP_ASSERT(hipEventRecordWithFlags(marker, s, hipEventRecordExternal));  // a node: recorded at each launch
  HIP_ASSERT(hipMemcpyAsync(out.data(), dev, kN * sizeof(int), hipMemcpyDeviceToHost, s));

  unsigned long long id = 0;
  hipGraph_t seen = nullptr;
  const hipGraphNode_t* tail = nullptr;
  size_t tail_count = 0;
  HIP_ASSERT(hipStreamGetCaptureInfo_v2(s, &status, &id, &seen, &tail, &tail_count));
  EXPECT_EQ(status, hipStreamCaptureStatusActive);
  EXPECT_NE(id, 0u);
  EXPECT_NE(seen, nullptr);
  EXPECT_EQ(tail_count, 1u);  // a chain: the last node is the only tail
  unsigned long long id_again = 0;
  HIP_ASSERT(hipStreamGetCaptureInfo(s, &status, &id_again));
  EXPECT_EQ(id_again, id);

  hipGraph_t graph = nullptr;
  HIP_ASSERT(hipStreamEndCapture(s, &graph));
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(graph, seen);
  HIP_ASSERT(hipStreamIsCapturing(s, &status));
  EXPECT_EQ(status, hipStreamCaptureStatusNone);

  // Nothing ran during capture.
  EXPECT_EQ(host_calls, 0);
  EXPECT_EQ(hipEventQuery(marker), hipSuccess);  // an external record is not a capture point
  float ms = 0;
  EXPECT_EQ(hipEventElapsedTime(&ms, marker, marker), hipErrorInvalidHandle);  // never recorded yet
  (void)hipGetLastError();
  EXPECT_EQ(out, std::vector<int>(kN, 0));
  std::vector<int> now(kN);
  HIP_ASSERT(hipMemcpy(now.data(), dev, kN * sizeof(int), hipMemcpyDeviceToHost));
  EXPECT_EQ(now, sentinel);

  size_t count = 0;
  HIP_ASSERT(hipGraphGetNodes(graph, nullptr, &count));
  ASSERT_EQ(count, 6u);
  std::vector<hipGraphNode_t> nodes(count);
  HIP_ASSERT(hipGraphGetNodes(graph, nodes.data(), &count));
  const hipGraphNodeType expected_types[] = {hipGraphNodeTypeMemcpy, hipGraphNodeTypeKernel, hipGraphNodeTypeKernel,
                                             hipGraphNodeTypeHost, hipGraphNodeTypeEventRecord,
                                             hipGraphNodeTypeMemcpy};
  hipKernelNodeParams kp{};
  HIP_ASSERT(hipGraphKernelNodeGetParams(nodes[2], &kp));
  EXPECT_EQ(kp.func, reinterpret_cast<void*>(add));
  EXPECT_EQ(kp.blockDim.x, unsigned(kBlock));
  EXPECT_EQ(*static_cast<int*>(kp.kernelParams[2]), 5);
  for (size_t i = 0; i < count; ++i) {
    hipGraphNodeType type;
    HIP_ASSERT(hipGraphNodeGetType(nodes[i], &type));
    EXPECT_EQ(type, expected_types[i]) << "node " << i;
    size_t deps = 9;
    HIP_ASSERT(hipGraphNodeGetDependencies(nodes[i], nullptr, &deps));
    EXPECT_EQ(deps, i == 0 ? 0u : 1u);
  }

  hipGraphExec_t exec = nullptr;
  HIP_ASSERT(hipGraphInstantiate(&exec, graph, nullptr, nullptr, 0));
  // Each launch reads the host input as it is then: run twice with different inputs.
  for (int round = 0; round < 2; ++round) {
    const std::vector<int> next = iota_values(100 * round - 50);
    std::copy(next.begin(), next.end(), in.begin());  // same storage: the node holds its address
    HIP_ASSERT(hipGraphLaunch(exec, s));
    HIP_ASSERT(hipStreamSynchronize(s));
    for (int i = 0; i < kN; ++i) ASSERT_EQ(out[i], in[i] * 3 + 5) << "round " << round << " element " << i;
    EXPECT_EQ(host_calls, round + 1);
    HIP_ASSERT(hipEventElapsedTime(&ms, marker, marker));  // recorded by the graph's node
    EXPECT_EQ(ms, 0.0f);
  }
  HIP_ASSERT(hipEventDestroy(marker));
  HIP_ASSERT(hipGraphExecDestroy(exec));
  HIP_ASSERT(hipGraphDestroy(graph));
  HIP_ASSERT(hipFree(dev));
  HIP_ASSERT(hipStreamDestroy(s));
}

TEST(Capture, KernelArgumentsAreCopiedWhenCaptured) {
  hipStream_t s;
  HIP_ASSERT(hipStreamCreate(&s));
  DeviceBuffer<int> buf(kN);
  ASSERT_NE(buf.ptr, nullptr);
  const std::vector<int> in = iota_values(1);
  HIP_ASSERT(hipMemcpy(buf.ptr, in.data(), kN * sizeof(int), hipMemcpyHostToDevice));

  int factor = 4;
  int n = kN;
  int* p = buf.ptr;
  void* args[] = {&p, &n, &factor};
  HIP_ASSERT(hipStreamBeginCapture(s, hipStreamCaptureModeThreadLocal));
  HIP_ASSERT(hipExtLaunchKernel(reinterpret_cast<const void*>(scale), dim3(kGrid), dim3(kBlock), args, 0, s, nullptr,
                                nullptr, 0));
  hipGraph_t graph;
  HIP_ASSERT(hipStreamEndCapture(s, &graph));
  factor = 1000;  // too late: the node holds 4
  n = 0;
  hipGraphExec_t exec;
  HIP_ASSERT(hipGraphInstantiateWithFlags(&exec, graph, 0));
  HIP_ASSERT(hipGraphLaunch(exec, s));
  HIP_ASSERT(hipStreamSynchronize(s));
  std::vector<int> out(kN);
  HIP_ASSERT(hipMemcpy(out.data(), buf.ptr, kN * sizeof(int), hipMemcpyDeviceToHost));
  for (int i = 0; i < kN; ++i) ASSERT_EQ(out[i], in[i] * 4) << i;
  HIP_ASSERT(hipGraphExecDestroy(exec));
  HIP_ASSERT(hipGraphDestroy(graph));
  HIP_ASSERT(hipStreamDestroy(s));
}

TEST(Capture, FillsOfEveryWidthAreCaptured) {
  hipStream_t s;
  HIP_ASSERT(hipStreamCreate(&s));
  DeviceBuffer<uint8_t> buf(64);
  ASSERT_NE(buf.ptr, nullptr);
  HIP_ASSERT(hipMemset(buf.ptr, 0xEE, 64));
  HIP_ASSERT(hipStreamBeginCapture(s, hipStreamCaptureModeRelaxed));
  HIP_ASSERT(hipMemsetAsync(buf.ptr, 0x11, 8, s));
  HIP_ASSERT(hipMemsetD8Async(buf.ptr + 8, 0x22, 8, s));
  HIP_ASSERT(hipMemsetD16Async(buf.ptr + 16, 0x3344, 4, s));
  HIP_ASSERT(hipMemsetD32Async(buf.ptr + 24, 0x55667788, 4, s));
  HIP_ASSERT(hipMemset2DAsync(buf.ptr + 40, 8, 0x99, 4, 3, s));  // 3 rows of 4 bytes, 8 apart
  hipGraph_t graph;
  HIP_ASSERT(hipStreamEndCapture(s, &graph));
  std::vector<uint8_t> before(64);
  HIP_ASSERT(hipMemcpy(before.data(), buf.ptr, 64, hipMemcpyDeviceToHost));
  EXPECT_EQ(before, std::vector<uint8_t>(64, 0xEE));

  hipGraphExec_t exec;
  HIP_ASSERT(hipGraphInstantiate(&exec, graph, nullptr, nullptr, 0));
  HIP_ASSERT(hipGraphLaunch(exec, s));
  HIP_ASSERT(hipStreamSynchronize(s));
  std::vector<uint8_t> expected(64, 0xEE);
  std::memset(expected.data(), 0x11, 8);
  std::memset(expected.data() + 8, 0x22, 8);
  for (int i = 0; i < 4; ++i) {
    const uint16_t h = 0x3344;
    std::memcpy(expected.data() + 16 + 2 * i, &h, 2);
    const uint32_t w = 0x55667788;
    std::memcpy(expected.data() + 24 + 4 * i, &w, 4);
  }
  for (int row = 0; row < 3; ++row) std::memset(expected.data() + 40 + 8 * row, 0x99, 4);
  std::vector<uint8_t> after(64);
  HIP_ASSERT(hipMemcpy(after.data(), buf.ptr, 64, hipMemcpyDeviceToHost));
  EXPECT_EQ(after, expected);
  HIP_ASSERT(hipGraphExecDestroy(exec));
  HIP_ASSERT(hipGraphDestroy(graph));
  HIP_ASSERT(hipStreamDestroy(s));
}

TEST(Capture, ModuleLaunchesAreCaptured) {
  hipModule_t module;
  HIP_ASSERT(hipModuleLoad(&module, HK_MODULE_DIR "/module_kernels.co"));
  hipFunction_t scale_add;
  HIP_ASSERT(hipModuleGetFunction(&scale_add, module, "scale_add"));
  DeviceBuffer<float> in(kN), out(kN);
  std::vector<float> host(kN);
  for (int i = 0; i < kN; ++i) host[i] = 0.25f * float(i) - 3.0f;
  HIP_ASSERT(hipMemcpy(in.ptr, host.data(), kN * sizeof(float), hipMemcpyHostToDevice));
  hipStream_t s;
  HIP_ASSERT(hipStreamCreate(&s));
  float a = 2.0f;
  int n = kN;
  void* params[] = {&out.ptr, &in.ptr, &a, &n};
  HIP_ASSERT(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal));
  HIP_ASSERT(hipModuleLaunchKernel(scale_add, kGrid, 1, 1, kBlock, 1, 1, 0, s, params, nullptr));
  hipGraph_t graph;
  HIP_ASSERT(hipStreamEndCapture(s, &graph));
  hipGraphNode_t captured;
  size_t one = 1;
  HIP_ASSERT(hipGraphGetNodes(graph, &captured, &one));
  hipKernelNodeParams kp{};
  HIP_ASSERT(hipGraphKernelNodeGetParams(captured, &kp));
  EXPECT_EQ(kp.func, static_cast<void*>(scale_add));  // a module's kernel is named by its hipFunction_t
  // The same kernel as an explicit node, named the same way, with a = 3 (the captured node keeps a = 2).
  float a3 = 3.0f;
  void* params3[] = {&in.ptr, &in.ptr, &a3, &n};  // in place: in = 3 * in + 1, after the captured node
  kp.kernelParams = params3;
  hipGraphNode_t added;
  HIP_ASSERT(hipGraphAddKernelNode(&added, graph, &captured, 1, &kp));
  hipGraphExec_t exec;
  HIP_ASSERT(hipGraphInstantiate(&exec, graph, nullptr, nullptr, 0));
  HIP_ASSERT(hipGraphLaunch(exec, s));
  HIP_ASSERT(hipStreamSynchronize(s));
  std::vector<float> got(kN);
  HIP_ASSERT(hipMemcpy(got.data(), out.ptr, kN * sizeof(float), hipMemcpyDeviceToHost));
  std::vector<float> got_in(kN);
  HIP_ASSERT(hipMemcpy(got_in.data(), in.ptr, kN * sizeof(float), hipMemcpyDeviceToHost));
  for (int i = 0; i < kN; ++i) {  // exact: small binary fractions
    ASSERT_EQ(got[i], 2.0f * host[i] + 1.0f) << i;
    ASSERT_EQ(got_in[i], 3.0f * host[i] + 1.0f) << i;
  }
  HIP_ASSERT(hipGraphExecDestroy(exec));
  HIP_ASSERT(hipGraphDestroy(graph));
  HIP_ASSERT(hipStreamDestroy(s));
  HIP_ASSERT(hipModuleUnload(module));
}

TEST(Capture, EventsForkAndJoinOtherStreams) {
  hipStream_t main_stream, side;
  HIP_ASSERT(hipStreamCreate(&main_stream));
  HIP_ASSERT(hipStreamCreate(&side));
  hipEvent_t fork, join;
  HIP_ASSERT(hipEventCreate(&fork));
  HIP_ASSERT(hipEventCreate(&join));
  DeviceBuffer<int> a(kN), b(kN);
  const std::vector<int> in = iota_values(-10);
  HIP_ASSERT(hipMemcpy(a.ptr, in.data(), kN * sizeof(int), hipMemcpyHostToDevice));

  HIP_ASSERT(hipStreamBeginCapture(main_stream, hipStreamCaptureModeGlobal));
  HIP_ASSERT(hipEventRecord(fork, main_stream));
  EXPECT_EQ(hipEventQuery(fork), hipErrorStreamCaptureUnsupported);  // stands for work that has not run
  HIP_ASSERT(hipStreamWaitEvent(side, fork, 0));  // side joins the capture
  hipStreamCaptureStatus status;
  HIP_ASSERT(hipStreamIsCapturing(side, &status));
  EXPECT_EQ(status, hipStreamCaptureStatusActive);
  HIP_ASSERT(hipMemcpyAsync(b.ptr, a.ptr, kN * sizeof(int), hipMemcpyDeviceToDevice, side));
  scale<<<kGrid, kBlock, 0, side>>>(b.ptr, kN, -2);
  add<<<kGrid, kBlock, 0, main_stream>>>(a.ptr, kN, 1000);  // in parallel with the side branch
  HIP_ASSERT(hipEventRecord(join, side));
  HIP_ASSERT(hipStreamWaitEvent(main_stream, join, 0));
  add<<<kGrid, kBlock, 0, main_stream>>>(b.ptr, kN, 7);  // after both branches
  hipGraph_t graph;
  HIP_ASSERT(hipStreamEndCapture(main_stream, &graph));
  HIP_ASSERT(hipStreamIsCapturing(side, &status));
  EXPECT_EQ(status, hipStreamCaptureStatusNone);

  size_t roots = 0, count = 0;
  HIP_ASSERT(hipGraphGetRootNodes(graph, nullptr, &roots));
  HIP_ASSERT(hipGraphGetNodes(graph, nullptr, &count));
  EXPECT_EQ(roots, 2u);  // the side copy and the main add both start the graph
  EXPECT_EQ(count, 4u);
  std::vector<hipGraphNode_t> nodes(count);
  HIP_ASSERT(hipGraphGetNodes(graph, nodes.data(), &count));
  size_t last_deps = 0;
  HIP_ASSERT(hipGraphNodeGetDependencies(nodes.back(), nullptr, &last_deps));
  EXPECT_EQ(last_deps, 2u);

  hipGraphExec_t exec;
  HIP_ASSERT(hipGraphInstantiate(&exec, graph, nullptr, nullptr, 0));
  HIP_ASSERT(hipGraphLaunch(exec, main_stream));
  HIP_ASSERT(hipStreamSynchronize(main_stream));
  std::vector<int> ga(kN), gb(kN);
  HIP_ASSERT(hipMemcpy(ga.data(), a.ptr, kN * sizeof(int), hipMemcpyDeviceToHost));
  HIP_ASSERT(hipMemcpy(gb.data(), b.ptr, kN * sizeof(int), hipMemcpyDeviceToHost));
  for (int i = 0; i < kN; ++i) {
    ASSERT_EQ(ga[i], in[i] + 1000) << i;
    // The copy ran before the main branch's add (nodes added first run first among the ready ones).
    ASSERT_EQ(gb[i], in[i] * -2 + 7) << i;
  }
  HIP_ASSERT(hipGraphExecDestroy(exec));
  HIP_ASSERT(hipGraphDestroy(graph));
  HIP_ASSERT(hipEventDestroy(fork));
  HIP_ASSERT(hipEventDestroy(join));
  HIP_ASSERT(hipStreamDestroy(side));
  HIP_ASSERT(hipStreamDestroy(main_stream));
}

TEST(Capture, IllegalCallsFailAndInvalidateTheCapture) {
  hipStream_t s;
  HIP_ASSERT(hipStreamCreate(&s));
  DeviceBuffer<int> small(4);
  hipGraph_t graph = reinterpret_cast<hipGraph_t>(1);

  EXPECT_EQ(hipStreamBeginCapture(nullptr, hipStreamCaptureModeGlobal), hipErrorStreamCaptureUnsupported);
  EXPECT_EQ(hipStreamEndCapture(s, &graph), hipErrorIllegalState);  // not capturing

  // Synchronising the capturing stream.
  HIP_ASSERT(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal));
  EXPECT_EQ(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal), hipErrorIllegalState);
  EXPECT_EQ(hipStreamSynchronize(s), hipErrorStreamCaptureUnsupported);
  hipStreamCaptureStatus status;
  HIP_ASSERT(hipStreamIsCapturing(s, &status));
  EXPECT_EQ(status, hipStreamCaptureStatusInvalidated);
  EXPECT_EQ(hipMemsetAsync(small.ptr, 0, 16, s), hipErrorStreamCaptureInvalidated);
  EXPECT_EQ(hipStreamEndCapture(s, &graph), hipErrorStreamCaptureInvalidated);
  EXPECT_EQ(graph, nullptr);

  // Unsafe calls under global mode, and the thread's own exchange to relaxed mode allowing them.
  HIP_ASSERT(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal));
  EXPECT_EQ(hipStreamQuery(s), hipErrorStreamCaptureUnsupported);
  EXPECT_EQ(hipStreamEndCapture(s, &graph), hipErrorStreamCaptureInvalidated);

  HIP_ASSERT(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal));
  hipStreamCaptureMode mode = hipStreamCaptureModeRelaxed;
  HIP_ASSERT(hipThreadExchangeStreamCaptureMode(&mode));
  EXPECT_EQ(mode, hipStreamCaptureModeGlobal);  // the previous mode comes back
  void* p = nullptr;
  HIP_ASSERT(hipMalloc(&p, 64));  // relaxed: allowed
  HIP_ASSERT(hipFree(p));
  HIP_ASSERT(hipThreadExchangeStreamCaptureMode(&mode));
  EXPECT_EQ(mode, hipStreamCaptureModeRelaxed);
  EXPECT_EQ(hipMalloc(&p, 64), hipErrorStreamCaptureUnsupported);
  EXPECT_EQ(hipDeviceSynchronize(), hipErrorStreamCaptureUnsupported);
  EXPECT_EQ(hipStreamEndCapture(s, &graph), hipErrorStreamCaptureInvalidated);

  // A relaxed capture forbids none of them.
  HIP_ASSERT(hipStreamBeginCapture(s, hipStreamCaptureModeRelaxed));
  HIP_ASSERT(hipMalloc(&p, 64));
  HIP_ASSERT(hipMemset(p, 0, 64));
  HIP_ASSERT(hipFree(p));
  HIP_ASSERT(hipStreamEndCapture(s, &graph));
  size_t count = 1;
  HIP_ASSERT(hipGraphGetNodes(graph, nullptr, &count));
  EXPECT_EQ(count, 0u);
  HIP_ASSERT(hipGraphDestroy(graph));

  mode = hipStreamCaptureMode(7);
  EXPECT_EQ(hipThreadExchangeStreamCaptureMode(&mode), hipErrorInvalidValue);
  (void)hipGetLastError();
  HIP_ASSERT(hipStreamDestroy(s));
}

TEST(Graph, NodesRunInADeterministicTopologicalOrder) {
  hipGraph_t g;
  HIP_ASSERT(hipGraphCreate(&g, 0));
  Trace trace;
  TraceStep steps[5] = {{&trace, 0}, {&trace, 1}, {&trace, 2}, {&trace, 3}, {&trace, 4}};
  hipGraphNode_t n0 = add_trace_node(g, {}, &steps[0]);
  hipGraphNode_t n1 = add_trace_node(g, {}, &steps[1]);
  hipGraphNode_t n2 = add_trace_node(g, {n1}, &steps[2]);
  hipGraphNode_t empty;
  HIP_ASSERT(hipGraphAddEmptyNode(&empty, g, &n2, 1));
  hipGraphNode_t n3 = add_trace_node(g, {empty}, &steps[3]);
  hipGraphNode_t n4 = add_trace_node(g, {}, &steps[4]);
  // n0 now waits for n3; n4 for n0.
  const hipGraphNode_t from[] = {n3, n0};
  const hipGraphNode_t to[] = {n0, n4};
  HIP_ASSERT(hipGraphAddDependencies(g, from, to, 2));
  EXPECT_EQ(hipGraphAddDependencies(g, &n3, &n0, 1), hipErrorInvalidValue);  // already there
  (void)hipGetLastError();

  size_t roots = 0;
  HIP_ASSERT(hipGraphGetRootNodes(g, nullptr, &roots));
  ASSERT_EQ(roots, 1u);
  hipGraphNode_t root;
  HIP_ASSERT(hipGraphGetRootNodes(g, &root, &roots));
  EXPECT_EQ(root, n1);
  size_t dependents = 0;
  HIP_ASSERT(hipGraphNodeGetDependentNodes(n3, nullptr, &dependents));
  EXPECT_EQ(dependents, 1u);

  hipGraphExec_t exec;
  HIP_ASSERT(hipGraphInstantiate(&exec, g, nullptr, nullptr, 0));
  hipStream_t s;
  HIP_ASSERT(hipStreamCreate(&s));
  for (int round = 0; round < 3; ++round) HIP_ASSERT(hipGraphLaunch(exec, s));
  HIP_ASSERT(hipStreamSynchronize(s));
  const std::vector<int> once = {1, 2, 3, 0, 4};
  std::vector<int> expected;
  for (int round = 0; round < 3; ++round) expected.insert(expected.end(), once.begin(), once.end());
  EXPECT_EQ(trace.order, expected);

  // A cycle cannot be instantiated.
  HIP_ASSERT(hipGraphAddDependencies(g, &n4, &n1, 1));
  hipGraphExec_t cyclic = nullptr;
  EXPECT_EQ(hipGraphInstantiate(&cyclic, g, nullptr, nullptr, 0), hipErrorInvalidValue);
  (void)hipGetLastError();
  HIP_ASSERT(hipGraphExecDestroy(exec));
  HIP_ASSERT(hipGraphDestroy(g));
  HIP_ASSERT(hipStreamDestroy(s));
}

TEST(Graph, ExplicitNodesCopyFillAndLaunch) {
  DeviceBuffer<int> a(kN), b(kN);
  std::vector<int> in = iota_values(3), out(kN, 0);
  hipGraph_t g;
  HIP_ASSERT(hipGraphCreate(&g, 0));

  hipGraphNode_t fill, upload, kernel, download, host;
  hipMemsetParams fp{};
  fp.dst = b.ptr;
  fp.elementSize = 4;
  fp.width = kN;
  fp.height = 1;
  fp.value = 0xdeadbeef;
  HIP_ASSERT(hipGraphAddMemsetNode(&fill, g, nullptr, 0, &fp));
  HIP_ASSERT(hipGraphAddMemcpyNode1D(&upload, g, &fill, 1, a.ptr, in.data(), kN * sizeof(int),
                                     hipMemcpyHostToDevice));
  int* dst = a.ptr;
  int n = kN, factor = 6;
  void* args[] = {&dst, &n, &factor};
  hipKernelNodeParams kp{};
  kp.func = reinterpret_cast<void*>(scale);
  kp.gridDim = dim3(kGrid);
  kp.blockDim = dim3(kBlock);
  kp.kernelParams = args;
  HIP_ASSERT(hipGraphAddKernelNode(&kernel, g, &upload, 1, &kp));
  factor = -1;  // copied at add time
  // A 2D copy: the first 3 rows of 10 ints of a, into b with a row pitch of 16 ints.
  hipMemcpy3DParms cp{};
  cp.srcPtr = make_hipPitchedPtr(a.ptr, 10 * sizeof(int), 10, 3);
  cp.dstPtr = make_hipPitchedPtr(b.ptr, 16 * sizeof(int), 10, 3);
  cp.extent = make_hipExtent(10 * sizeof(int), 3, 1);
  cp.kind = hipMemcpyDeviceToDevice;
  hipGraphNode_t copy2d;
  HIP_ASSERT(hipGraphAddMemcpyNode(&copy2d, g, &kernel, 1, &cp));
  HIP_ASSERT(hipGraphAddMemcpyNode1D(&download, g, &copy2d, 1, out.data(), b.ptr, kN * sizeof(int),
                                     hipMemcpyDeviceToHost));
  int calls = 0;
  hipHostNodeParams hp{count_call, &calls};
  HIP_ASSERT(hipGraphAddHostNode(&host, g, &download, 1, &hp));

  hipKernelNodeParams back{};
  HIP_ASSERT(hipGraphKernelNodeGetParams(kernel, &back));
  EXPECT_EQ(back.func, kp.func);
  EXPECT_EQ(back.gridDim.x, unsigned(kGrid));
  EXPECT_EQ(*static_cast<int*>(back.kernelParams[2]), 6);

  auto expect_result = [&](int f) {
    std::vector<int> ref(kN, int(0xdeadbeef));
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 10; ++c) ref[r * 16 + c] = in[r * 10 + c] * f;
    for (int i = 0; i < kN; ++i) ASSERT_EQ(out[i], ref[i]) << "factor " << f << " element " << i;
  };

  hipStream_t s;
  HIP_ASSERT(hipStreamCreate(&s));
  hipGraphExec_t exec;
  HIP_ASSERT(hipGraphInstantiate(&exec, g, nullptr, nullptr, 0));
  HIP_ASSERT(hipGraphLaunch(exec, s));
  HIP_ASSERT(hipStreamSynchronize(s));
  expect_result(6);
  EXPECT_EQ(calls, 1);

  // New parameters for the instantiated graph only, then for the graph (seen by the next instantiation and a clone).
  factor = 2;
  HIP_ASSERT(hipGraphExecKernelNodeSetParams(exec, kernel, &kp));
  HIP_ASSERT(hipGraphLaunch(exec, s));
  HIP_ASSERT(hipStreamSynchronize(s));
  expect_result(2);
  HIP_ASSERT(hipGraphKernelNodeGetParams(kernel, &back));
  EXPECT_EQ(*static_cast<int*>(back.kernelParams[2]), 6);
  factor = -3;
  HIP_ASSERT(hipGraphKernelNodeSetParams(kernel, &kp));
  hipGraph_t clone;
  HIP_ASSERT(hipGraphClone(&clone, g));
  hipGraphNode_t kernel_in_clone;
  HIP_ASSERT(hipGraphNodeFindInClone(&kernel_in_clone, kernel, clone));
  HIP_ASSERT(hipGraphKernelNodeGetParams(kernel_in_clone, &back));
  EXPECT_EQ(*static_cast<int*>(back.kernelParams[2]), -3);
  HIP_ASSERT(hipGraphDestroy(g));  // the clone and the instantiated graph stand alone
  hipGraphExec_t exec2;
  HIP_ASSERT(hipGraphInstantiate(&exec2, clone, nullptr, nullptr, 0));
  HIP_ASSERT(hipGraphLaunch(exec2, s));
  HIP_ASSERT(hipStreamSynchronize(s));
  expect_result(-3);
  HIP_ASSERT(hipGraphLaunch(exec, s));
  HIP_ASSERT(hipStreamSynchronize(s));
  expect_result(2);
  EXPECT_EQ(calls, 4);

  // A graph launch is ordered with the other work on its stream.
  HIP_ASSERT(hipMemsetAsync(a.ptr, 0, kN * sizeof(int), s));
  std::fill(in.begin(), in.end(), 1);  // same storage: the upload node holds its address
  HIP_ASSERT(hipGraphLaunch(exec, s));
  std::vector<int> after(kN);
  HIP_ASSERT(hipMemcpyAsync(after.data(), a.ptr, kN * sizeof(int), hipMemcpyDeviceToHost, s));
  HIP_ASSERT(hipStreamSynchronize(s));
  EXPECT_EQ(after, std::vector<int>(kN, 2));

  HIP_ASSERT(hipGraphExecDestroy(exec));
  HIP_ASSERT(hipGraphExecDestroy(exec2));
  HIP_ASSERT(hipGraphDestroy(clone));
  HIP_ASSERT(hipStreamDestroy(s));
}

TEST(Graph, BadArgumentsAreRefused) {
  hipGraph_t g;
  HIP_ASSERT(hipGraphCreate(&g, 0));
  hipGraph_t other;
  HIP_ASSERT(hipGraphCreate(&other, 0));
  hipGraphNode_t foreign, node;
  HIP_ASSERT(hipGraphAddEmptyNode(&foreign, other, nullptr, 0));
  EXPECT_EQ(hipGraphAddEmptyNode(&node, g, &foreign, 1), hipErrorInvalidValue);
  EXPECT_EQ(hipGraphCreate(nullptr, 0), hipErrorInvalidValue);
  hipKernelNodeParams kp{};
  kp.func = reinterpret_cast<void*>(&count_call);  // not a kernel
  kp.gridDim = kp.blockDim = dim3(1);
  EXPECT_EQ(hipGraphAddKernelNode(&node, g, nullptr, 0, &kp), hipErrorInvalidDeviceFunction);
  kp.func = reinterpret_cast<void*>(scale);
  kp.blockDim = dim3(2048);
  int* p = nullptr;
  int n = 0, f = 0;
  void* args[] = {&p, &n, &f};
  kp.kernelParams = args;
  EXPECT_EQ(hipGraphAddKernelNode(&node, g, nullptr, 0, &kp), hipErrorInvalidConfiguration);
  DeviceBuffer<int> small(4);
  int host[8] = {};
  EXPECT_EQ(hipGraphAddMemcpyNode1D(&node, g, nullptr, 0, small.ptr, host, sizeof host, hipMemcpyHostToDevice),
            hipErrorInvalidValue);  // runs past the allocation
  hipMemsetParams mp{};
  mp.dst = small.ptr;
  mp.elementSize = 3;
  mp.width = 1;
  mp.height = 1;
  EXPECT_EQ(hipGraphAddMemsetNode(&node, g, nullptr, 0, &mp), hipErrorInvalidValue);
  size_t count = 0;
  HIP_ASSERT(hipGraphGetNodes(g, nullptr, &count));
  EXPECT_EQ(count, 0u);  // nothing was added by the refused calls
  EXPECT_EQ(hipGraphLaunch(nullptr, nullptr), hipErrorInvalidValue);
  (void)hipGetLastError();
  HIP_ASSERT(hipGraphDestroy(g));
  HIP_ASSERT(hipGraphDestroy(other));
}

// Last in the program: a device reset destroys every stream and allocation.
TEST(Capture, DeviceResetEndsCaptures) {
  hipStream_t s;
  HIP_ASSERT(hipStreamCreate(&s));
  HIP_ASSERT(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal));
  void* p = nullptr;
  EXPECT_EQ(hipMalloc(&p, 64), hipErrorStreamCaptureUnsupported);
  (void)hipGetLastError();
  HIP_ASSERT(hipDeviceReset());
  HIP_ASSERT(hipMalloc(&p, 64));  // no capture forbids it any more
  HIP_ASSERT(hipFree(p));
  hipStream_t fresh;
  HIP_ASSERT(hipStreamCreate(&fresh));
  hipStreamCaptureStatus status;
  HIP_ASSERT(hipStreamIsCapturing(fresh, &status));
  EXPECT_EQ(status, hipStreamCaptureStatusNone);
  HIP_ASSERT(hipStreamDestroy(fresh));
}
