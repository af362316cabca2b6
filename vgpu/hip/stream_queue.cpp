// Host functions and the stream work queued behind them (see stream_queue.h). One lock guards every stream's queue
// and the count of queued records per event: queues are short and rare (only host functions start one).
#include "stream_queue.h"

#include <condition_variable>
#include <deque>
#include <map>

namespace vgpu::hiprt {
namespace {

struct Queue {
  std::deque<Work> work;  // the front is the item running (it leaves the queue once it has run)
  bool running = false;   // a (detached) thread is running the queue; it touches nothing of it once this is false
};

// Never destroyed, so that a host function still running at exit finds them.
struct State {
  std::mutex mu;
  std::condition_variable changed;
  std::map<ihipStream_t*, Queue> queues;
  std::map<ihipEvent_t*, int> pending_records;
};
State& g = *new State;
std::mutex& g_mu = g.mu;
std::condition_variable& g_changed = g.changed;
std::map<ihipStream_t*, Queue>& g_queues = g.queues;
std::map<ihipEvent_t*, int>& g_pending_records = g.pending_records;
thread_local ihipStream_t* t_running_queue = nullptr;  // the queue this thread runs, if any

// Runs one queued item as the stream operation would have run it.
hipError_t run_queued(const Work& work, hipStream_t stream) {
  if (const auto* wait = std::get_if<EventWaitWork>(&work)) {
    wait_event(wait->event);
    return hipSuccess;
  }
  return run_step(work, stream);
}

void run_queue(ihipStream_t* s) {
  t_running_queue = s;
  const hipStream_t handle = s == Runtime::get().stream(nullptr) ? nullptr : s;  // the default stream's own
  std::unique_lock lock(g_mu);
  Queue& q = g_queues[s];
  while (!q.work.empty()) {
    Work work = q.work.front();
    lock.unlock();
    const hipError_t e = run_queued(work, handle);
    if (e != hipSuccess) Runtime::get().set_pending(s, e);  // reported by the stream's next synchronisation
    lock.lock();
    q.work.pop_front();
    if (const auto* record = std::get_if<EventRecordWork>(&work))
      if (--g_pending_records[record->event] == 0) g_pending_records.erase(record->event);
    g_changed.notify_all();
  }
  q.running = false;
  g_changed.notify_all();
}

bool idle(const Queue& q) { return q.work.empty() && !q.running; }

}  // namespace

bool behind_host_work(ihipStream_t* s) {
  if (t_running_queue == s) return false;
  std::lock_guard lock(g_mu);
  auto it = g_queues.find(s);
  return it != g_queues.end() && !idle(it->second);
}

void queue_work(ihipStream_t* s, Work work) {
  std::unique_lock lock(g_mu);
  Queue& q = g_queues[s];
  if (const auto* record = std::get_if<EventRecordWork>(&work)) ++g_pending_records[record->event];
  q.work.push_back(std::move(work));
  if (q.running) return;
  q.running = true;
  std::thread(run_queue, s).detach();
}

void drain(ihipStream_t* s) {
  if (t_running_queue == s) return;
  std::unique_lock lock(g_mu);
  auto it = g_queues.find(s);
  if (it == g_queues.end()) return;
  g_changed.wait(lock, [&] { return idle(it->second); });
}

void drain_all() {
  std::vector<ihipStream_t*> streams;
  {
    std::lock_guard lock(g_mu);
    for (auto& [s, q] : g_queues) streams.push_back(s);
  }
  for (ihipStream_t* s : streams) drain(s);
}

bool queue_busy(ihipStream_t* s) { return behind_host_work(s); }

bool event_pending(ihipEvent_t* e) {
  std::lock_guard lock(g_mu);
  return g_pending_records.count(e) > 0;
}

void wait_event(ihipEvent_t* e) {
  std::unique_lock lock(g_mu);
  g_changed.wait(lock, [&] { return g_pending_records.count(e) == 0; });
}

void forget_queue(ihipStream_t* s) {
  drain(s);
  std::lock_guard lock(g_mu);
  g_queues.erase(s);
}

}  // namespace vgpu::hiprt
