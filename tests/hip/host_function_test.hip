// Host functions on a stream (hipLaunchHostFunc, hipStreamAddCallback) run on another thread after the stream's
// earlier work, and the stream's later work waits for them, as on HIP: a function may take a lock its caller holds
// while it enqueues more work behind the function (rocRAND's Poisson generator on a non-blocking stream builds its
// table in such a function and copies it to the device behind it), queries see the queued work as not ready, and
// synchronisations wait for it.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "hip_check.h"

namespace {

__global__ void twice_plus(const unsigned* in, unsigned* out, unsigned add, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2u * in[i] + add;
}

constexpr int kCount = 1000;

// What rocRAND's generator does: under its lock, enqueue the function that fills a host table (it takes the same
// lock), the copy of that table to the device and a kernel reading it; then unlock.
struct TableBuilder {
  std::mutex mutex;
  unsigned* table = nullptr;  // pinned host memory
  unsigned seed = 0;
  static void build(void* self) {
    auto& b = *static_cast<TableBuilder*>(self);
    std::lock_guard lock(b.mutex);
    for (int i = 0; i < kCount; ++i) b.table[i] = b.seed * 7u + unsigned(i);
  }
};

// A host function that holds its stream until released.
struct Gate {
  std::mutex mutex;
  std::condition_variable opened;
  bool open = false;
  static void wait(void* self) {
    auto& g = *static_cast<Gate*>(self);
    std::unique_lock lock(g.mutex);
    g.opened.wait(lock, [&] { return g.open; });
  }
  void release() {
    std::lock_guard lock(mutex);
    open = true;
    opened.notify_all();
  }
};

void expect_table_results(const unsigned* device_out, unsigned seed, unsigned add) {
  std::vector<unsigned> got(kCount);
  ASSERT_EQ(hipMemcpy(got.data(), device_out, kCount * sizeof(unsigned), hipMemcpyDeviceToHost), hipSuccess);
  for (int i = 0; i < kCount; ++i) ASSERT_EQ(got[i], 2u * (seed * 7u + unsigned(i)) + add) << "element " << i;
}

}  // namespace

TEST(HostFunction, MayTakeALockItsCallerHoldsWhileEnqueuingBehindIt) {
  for (unsigned flags : {unsigned(hipStreamNonBlocking), unsigned(hipStreamDefault)}) {
    hipStream_t stream;
    HIP_ASSERT(hipStreamCreateWithFlags(&stream, flags));
    TableBuilder builder;
    HIP_ASSERT(hipHostMalloc(&builder.table, kCount * sizeof(unsigned)));
    DeviceBuffer<unsigned> table(kCount), out(kCount);
    for (unsigned round = 1; round <= 3; ++round) {
      {
        std::lock_guard lock(builder.mutex);
        builder.seed = round;
        HIP_ASSERT(hipLaunchHostFunc(stream, &TableBuilder::build, &builder));
        HIP_ASSERT(hipMemcpyAsync(table.ptr, builder.table, table.bytes(), hipMemcpyHostToDevice, stream));
        twice_plus<<<(kCount + 255) / 256, 256, 0, stream>>>(table.ptr, out.ptr, round, kCount);
        HIP_ASSERT(hipGetLastError());
      }
      HIP_ASSERT(hipStreamSynchronize(stream));
      expect_table_results(out.ptr, round, round);
    }
    HIP_ASSERT(hipHostFree(builder.table));
    HIP_ASSERT(hipStreamDestroy(stream));
  }
}

TEST(HostFunction, QueriesSeeWorkQueuedBehindItAndSynchronisationsWait) {
  hipStream_t stream;
  HIP_ASSERT(hipStreamCreateWithFlags(&stream, hipStreamNonBlocking));
  hipEvent_t done;
  HIP_ASSERT(hipEventCreate(&done));
  Gate gate;
  DeviceBuffer<unsigned> in(kCount), out(kCount);
  HIP_ASSERT(hipMemset(in.ptr, 0, in.bytes()));
  HIP_ASSERT(hipLaunchHostFunc(stream, &Gate::wait, &gate));
  HIP_ASSERT(hipMemsetAsync(out.ptr, 0xff, out.bytes(), stream));
  twice_plus<<<(kCount + 255) / 256, 256, 0, stream>>>(in.ptr, out.ptr, 5, kCount);
  HIP_ASSERT(hipEventRecord(done, stream));
  EXPECT_EQ(hipStreamQuery(stream), hipErrorNotReady);
  EXPECT_EQ(hipEventQuery(done), hipErrorNotReady);

  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gate.release();
  });
  HIP_ASSERT(hipEventSynchronize(done));
  EXPECT_EQ(hipEventQuery(done), hipSuccess);
  EXPECT_EQ(hipStreamQuery(stream), hipSuccess);
  opener.join();
  std::vector<unsigned> got(kCount);
  HIP_ASSERT(hipMemcpy(got.data(), out.ptr, out.bytes(), hipMemcpyDeviceToHost));
  for (int i = 0; i < kCount; ++i) ASSERT_EQ(got[i], 5u) << "element " << i;
  HIP_ASSERT(hipEventDestroy(done));
  HIP_ASSERT(hipStreamDestroy(stream));
}

TEST(HostFunction, RunInStreamOrderAndCallbacksGetTheirStream) {
  hipStream_t stream;
  HIP_ASSERT(hipStreamCreate(&stream));
  struct Log {
    std::mutex mutex;
    std::vector<int> order;
    hipStream_t callback_stream = nullptr;
    hipError_t callback_status = hipErrorUnknown;
  } log;
  auto append = [](Log& l, int v) {
    std::lock_guard lock(l.mutex);
    l.order.push_back(v);
  };
  struct Step {
    Log* log;
    int value;
    void (*append)(Log&, int);
  };
  std::vector<Step> steps;
  for (int i = 0; i < 4; ++i) steps.push_back({&log, i, +append});
  auto run_step = [](void* p) {
    auto* s = static_cast<Step*>(p);
    s->append(*s->log, s->value);
  };
  HIP_ASSERT(hipLaunchHostFunc(stream, run_step, &steps[0]));
  HIP_ASSERT(hipLaunchHostFunc(stream, run_step, &steps[1]));
  HIP_ASSERT(hipStreamAddCallback(
      stream,
      [](hipStream_t s, hipError_t status, void* p) {
        auto* l = static_cast<Log*>(p);
        std::lock_guard lock(l->mutex);
        l->order.push_back(100);
        l->callback_stream = s;
        l->callback_status = status;
      },
      &log, 0));
  HIP_ASSERT(hipLaunchHostFunc(stream, run_step, &steps[2]));
  HIP_ASSERT(hipDeviceSynchronize());
  HIP_ASSERT(hipLaunchHostFunc(stream, run_step, &steps[3]));
  HIP_ASSERT(hipStreamSynchronize(stream));
  EXPECT_EQ(log.order, (std::vector<int>{0, 1, 100, 2, 3}));
  EXPECT_EQ(log.callback_stream, stream);
  EXPECT_EQ(log.callback_status, hipSuccess);
  HIP_ASSERT(hipStreamDestroy(stream));
}
