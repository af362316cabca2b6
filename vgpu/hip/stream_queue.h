// Host functions on a stream (hipLaunchHostFunc, hipStreamAddCallback) and the stream work queued behind them
// (stream_queue.cpp). Internal to vgpu/hip.
//
// vgpu runs every stream operation when it is enqueued, except a host function: as on HIP, the call that enqueues it
// returns at once and the function runs on another thread, so it may take a lock its caller still holds (rocRAND's
// Poisson generator on a non-blocking stream does: it enqueues the function that builds its table and the copies of
// that table under one lock the function also takes). From a host function on, the stream's later operations queue up
// behind it and that thread runs them in order until the queue is empty again; then the stream runs work at once
// again. Synchronisations wait for the queue.
#pragma once

#include "graph.h"

namespace vgpu::hiprt {

// Whether work on `s` must be queued (it has work queued, and the caller is not the thread running that queue).
bool behind_host_work(ihipStream_t* s);
// Queues checked work on `s` (a host function always is), starting the thread that runs the queue when it is idle.
// An event record counts as pending until the queue reaches it.
void queue_work(ihipStream_t* s, Work work);
// Waits until `s` has run everything queued on it. A no-op on the thread that runs that queue (a host function that
// synchronises its own stream).
void drain(ihipStream_t* s);
// Waits for every stream's queue (hipDeviceSynchronize, the synchronous copies and fills, frees).
void drain_all();
// Whether `s` has queued work left (hipStreamQuery).
bool queue_busy(ihipStream_t* s);
// Whether a record of `e` is still queued; waiting for it (hipEventSynchronize, hipStreamWaitEvent).
bool event_pending(ihipEvent_t* e);
void wait_event(ihipEvent_t* e);
// hipStreamDestroy: drains `s` and forgets its queue.
void forget_queue(ihipStream_t* s);

}  // namespace vgpu::hiprt
