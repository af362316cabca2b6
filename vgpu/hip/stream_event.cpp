// Streams and events. Every operation runs to completion when it is enqueued, so streams are trivially in order,
// queries find the work done, and an event's timestamp is the host time at which it was recorded. The exception is a
// host function and what is enqueued behind it on its stream (stream_queue.h): synchronisations wait for those,
// queries report them not ready, and an event recorded behind one is recorded when its queue reaches it.
#include "graph.h"
#include "stream_queue.h"

using namespace vgpu;
using namespace vgpu::hiprt;

namespace {

hipError_t create(hipStream_t* stream, unsigned flags, int priority) {
  if (!stream) return done(hipErrorInvalidValue);
  *stream = Runtime::get().create_stream(flags, priority);
  return hipSuccess;
}

}  // namespace

// --- streams ---------------------------------------------------------------------------------------------------

HK_HIP_API hipError_t hipStreamCreate(hipStream_t* stream) { return create(stream, 0, 0); }
HK_HIP_API hipError_t hipStreamCreateWithFlags(hipStream_t* stream, unsigned int flags) {
  return create(stream, flags, 0);
}
HK_HIP_API hipError_t hipStreamCreateWithPriority(hipStream_t* stream, unsigned int flags, int priority) {
  return create(stream, flags, priority);
}
HK_HIP_API hipError_t hipExtStreamCreateWithCUMask(hipStream_t* stream, uint32_t, const uint32_t*) {
  return create(stream, 0, 0);
}

HK_HIP_API hipError_t hipStreamDestroy(hipStream_t stream) {
  if (!stream || !Runtime::get().stream(stream)) return done(hipErrorInvalidHandle);
  leave_capture(stream);
  forget_queue(stream);  // as HIP: the work already enqueued still runs
  if (!Runtime::get().destroy_stream(stream)) return done(hipErrorInvalidHandle);
  return hipSuccess;
}

HK_HIP_API hipError_t hipStreamSynchronize(hipStream_t stream) {
  ihipStream_t* s = Runtime::get().stream(stream);
  if (!s) return done(hipErrorInvalidHandle);
  if (hipError_t e = check_stream_sync(s); e != hipSuccess) return e;
  // The default stream (legacy) waits for the other streams too.
  if (s == Runtime::get().stream(nullptr)) drain_all();
  else drain(s);
  return resurface(Runtime::get().take_pending(s));
}
HK_HIP_API hipError_t hipStreamSynchronize_spt(hipStream_t stream) { return hipStreamSynchronize(stream); }

HK_HIP_API hipError_t hipStreamQuery(hipStream_t stream) {
  ihipStream_t* s = Runtime::get().stream(stream);
  if (!s) return done(hipErrorInvalidHandle);
  if (hipError_t e = check_stream_sync(s); e != hipSuccess) return e;
  return queue_busy(s) ? hipErrorNotReady : hipSuccess;
}
HK_HIP_API hipError_t hipStreamQuery_spt(hipStream_t stream) { return hipStreamQuery(stream); }

HK_HIP_API hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event, unsigned int flags) {
  ihipStream_t* s = Runtime::get().stream(stream);
  if (!s || !Runtime::get().valid_event(event)) return done(hipErrorInvalidHandle);
  // On a capturing stream an external wait becomes a wait node; otherwise the wait joins the event's capture, or
  // is met at once (the event's work has finished).
  if (capturing(s) && (flags & hipEventWaitExternal)) return capture_work(s, hipGraphNodeTypeWaitEvent, EventWaitWork{event});
  if (capture_event_wait(s, event)) return hipSuccess;
  // A record still queued behind a host function: the stream's next work waits for it.
  if (event_pending(event)) {
    if (behind_host_work(s)) queue_work(s, EventWaitWork{event});
    else wait_event(event);
  }
  return hipSuccess;
}
HK_HIP_API hipError_t hipStreamWaitEvent_spt(hipStream_t stream, hipEvent_t event, unsigned int flags) {
  return hipStreamWaitEvent(stream, event, flags);
}

HK_HIP_API hipError_t hipStreamGetFlags(hipStream_t stream, unsigned int* flags) {
  ihipStream_t* s = Runtime::get().stream(stream);
  if (!flags) return done(hipErrorInvalidValue);
  if (!s) return done(hipErrorInvalidHandle);
  *flags = s->flags;
  return hipSuccess;
}
HK_HIP_API hipError_t hipStreamGetFlags_spt(hipStream_t stream, unsigned int* flags) {
  return hipStreamGetFlags(stream, flags);
}

HK_HIP_API hipError_t hipStreamGetPriority(hipStream_t stream, int* priority) {
  ihipStream_t* s = Runtime::get().stream(stream);
  if (!priority) return done(hipErrorInvalidValue);
  if (!s) return done(hipErrorInvalidHandle);
  *priority = s->priority;
  return hipSuccess;
}
HK_HIP_API hipError_t hipStreamGetPriority_spt(hipStream_t stream, int* priority) {
  return hipStreamGetPriority(stream, priority);
}

HK_HIP_API hipError_t hipStreamGetDevice(hipStream_t stream, hipDevice_t* device) {
  if (!device) return done(hipErrorInvalidValue);
  if (!Runtime::get().stream(stream)) return done(hipErrorInvalidHandle);
  *device = 0;
  return hipSuccess;
}

HK_HIP_API int hipGetStreamDeviceId(hipStream_t stream) { return Runtime::get().stream(stream) ? 0 : -1; }

namespace {

// A stream callback as a host function: it gets its stream and the stream's error status when it runs.
struct StreamCallback {
  hipStreamCallback_t callback;
  hipStream_t stream;
  void* user_data;
  static void run(void* self) {
    std::unique_ptr<StreamCallback> c(static_cast<StreamCallback*>(self));
    ihipStream_t* s = Runtime::get().stream(c->stream);
    c->callback(c->stream, s ? s->pending : hipErrorInvalidHandle, c->user_data);
  }
};

}  // namespace

// Host functions and callbacks run on another thread, after the stream's earlier work (stream_queue.h).
HK_HIP_API hipError_t hipStreamAddCallback(hipStream_t stream, hipStreamCallback_t callback, void* user_data,
                                           unsigned int flags) {
  ihipStream_t* s = Runtime::get().stream(stream);
  if (!callback || flags != 0) return done(hipErrorInvalidValue);
  if (!s) return done(hipErrorInvalidHandle);
  if (capturing(s)) return fail(hipErrorStreamCaptureUnsupported, "hipStreamAddCallback on a capturing stream");
  queue_work(s, HostWork{&StreamCallback::run, new StreamCallback{callback, stream, user_data}});
  return hipSuccess;
}
HK_HIP_API hipError_t hipStreamAddCallback_spt(hipStream_t stream, hipStreamCallback_t callback, void* user_data,
                                               unsigned int flags) {
  return hipStreamAddCallback(stream, callback, user_data, flags);
}

HK_HIP_API hipError_t hipLaunchHostFunc(hipStream_t stream, hipHostFn_t fn, void* user_data) {
  if (!fn) return done(hipErrorInvalidValue);
  ihipStream_t* s = Runtime::get().stream(stream);
  if (!s) return done(hipErrorInvalidHandle);
  if (capturing(s)) return capture_work(s, hipGraphNodeTypeHost, HostWork{fn, user_data});
  queue_work(s, HostWork{fn, user_data});
  return hipSuccess;
}
HK_HIP_API hipError_t hipLaunchHostFunc_spt(hipStream_t stream, hipHostFn_t fn, void* user_data) {
  return hipLaunchHostFunc(stream, fn, user_data);
}

// --- events ----------------------------------------------------------------------------------------------------

HK_HIP_API hipError_t hipEventCreateWithFlags(hipEvent_t* event, unsigned int flags) {
  if (!event) return done(hipErrorInvalidValue);
  *event = Runtime::get().create_event(flags);
  return hipSuccess;
}
HK_HIP_API hipError_t hipEventCreate(hipEvent_t* event) { return hipEventCreateWithFlags(event, 0); }

HK_HIP_API hipError_t hipEventDestroy(hipEvent_t event) {
  if (!event || !Runtime::get().destroy_event(event)) return done(hipErrorInvalidHandle);
  return hipSuccess;
}

HK_HIP_API hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream) {
  ihipStream_t* s = Runtime::get().stream(stream);
  if (!Runtime::get().valid_event(event) || !s) return done(hipErrorInvalidHandle);
  if (capture_event_record(s, event)) return hipSuccess;  // marks a point of the capture, no timestamp
  if (behind_host_work(s)) {
    queue_work(s, EventRecordWork{event});
    return hipSuccess;
  }
  event->time = std::chrono::steady_clock::now();
  event->recorded = true;
  return hipSuccess;
}
HK_HIP_API hipError_t hipEventRecord_spt(hipEvent_t event, hipStream_t stream) { return hipEventRecord(event, stream); }
// On a capturing stream, an external record becomes an event record node (the event is recorded at each launch).
HK_HIP_API hipError_t hipEventRecordWithFlags(hipEvent_t event, hipStream_t stream, unsigned int flags) {
  ihipStream_t* s = Runtime::get().stream(stream);
  if (!Runtime::get().valid_event(event) || !s) return done(hipErrorInvalidHandle);
  if (capturing(s) && (flags & hipEventRecordExternal))
    return capture_work(s, hipGraphNodeTypeEventRecord, EventRecordWork{event});
  return hipEventRecord(event, stream);
}

// An event recorded in a capture stands for work that has not run: waiting for it from the host is illegal.
HK_HIP_API hipError_t hipEventSynchronize(hipEvent_t event) {
  if (!Runtime::get().valid_event(event)) return done(hipErrorInvalidHandle);
  if (event_in_capture(event)) return done(hipErrorStreamCaptureUnsupported);
  wait_event(event);
  return hipSuccess;
}

HK_HIP_API hipError_t hipEventQuery(hipEvent_t event) {
  if (!Runtime::get().valid_event(event)) return done(hipErrorInvalidHandle);
  if (event_in_capture(event)) return done(hipErrorStreamCaptureUnsupported);
  return event_pending(event) ? hipErrorNotReady : hipSuccess;
}

HK_HIP_API hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop) {
  if (!ms) return done(hipErrorInvalidValue);
  Runtime& rt = Runtime::get();
  if (!rt.valid_event(start) || !rt.valid_event(stop)) return done(hipErrorInvalidHandle);
  if (event_pending(start) || event_pending(stop)) return hipErrorNotReady;
  // As HIP: both events must have been recorded and must keep timing.
  if (!start->recorded || !stop->recorded) return done(hipErrorInvalidHandle);
  if ((start->flags | stop->flags) & hipEventDisableTiming) return done(hipErrorInvalidHandle);
  *ms = std::chrono::duration<float, std::milli>(stop->time - start->time).count();
  return hipSuccess;
}
