// Error reporting: the per-thread last error, names and descriptions of hipError_t codes, and the detail text
// (for faults: vgpu::Fault::message()) that hipGetErrorString appends so unmodified programs show it.
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "runtime.h"

namespace vgpu::hiprt {
namespace {

struct ErrorText {
  hipError_t code;
  const char* name;
  const char* description;
};

// The descriptions follow the wording HIP and CUDA programs are used to seeing.
constexpr ErrorText kErrors[] = {
    {hipSuccess, "hipSuccess", "no error"},
    {hipErrorInvalidValue, "hipErrorInvalidValue", "invalid argument"},
    {hipErrorOutOfMemory, "hipErrorOutOfMemory", "out of memory"},
    {hipErrorNotInitialized, "hipErrorNotInitialized", "initialization error"},
    {hipErrorDeinitialized, "hipErrorDeinitialized", "driver shutting down"},
    {hipErrorProfilerDisabled, "hipErrorProfilerDisabled", "profiler disabled while using external profiling tool"},
    {hipErrorProfilerNotInitialized, "hipErrorProfilerNotInitialized", "profiler is not initialized"},
    {hipErrorProfilerAlreadyStarted, "hipErrorProfilerAlreadyStarted", "profiler already started"},
    {hipErrorProfilerAlreadyStopped, "hipErrorProfilerAlreadyStopped", "profiler already stopped"},
    {hipErrorInvalidConfiguration, "hipErrorInvalidConfiguration", "invalid configuration argument"},
    {hipErrorInvalidPitchValue, "hipErrorInvalidPitchValue", "invalid pitch argument"},
    {hipErrorInvalidSymbol, "hipErrorInvalidSymbol", "invalid device symbol"},
    {hipErrorInvalidDevicePointer, "hipErrorInvalidDevicePointer", "invalid device pointer"},
    {hipErrorInvalidMemcpyDirection, "hipErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {hipErrorInsufficientDriver, "hipErrorInsufficientDriver", "driver version is insufficient for runtime version"},
    {hipErrorMissingConfiguration, "hipErrorMissingConfiguration", "__global__ function call is not configured"},
    {hipErrorPriorLaunchFailure, "hipErrorPriorLaunchFailure", "unspecified launch failure in prior launch"},
    {hipErrorInvalidDeviceFunction, "hipErrorInvalidDeviceFunction", "invalid device function"},
    {hipErrorNoDevice, "hipErrorNoDevice", "no ROCm-capable device is detected"},
    {hipErrorInvalidDevice, "hipErrorInvalidDevice", "invalid device ordinal"},
    {hipErrorInvalidImage, "hipErrorInvalidImage", "device kernel image is invalid"},
    {hipErrorInvalidContext, "hipErrorInvalidContext", "invalid device context"},
    {hipErrorContextAlreadyCurrent, "hipErrorContextAlreadyCurrent", "context already current"},
    {hipErrorMapFailed, "hipErrorMapFailed", "mapping of buffer object failed"},
    {hipErrorUnmapFailed, "hipErrorUnmapFailed", "unmapping of buffer object failed"},
    {hipErrorArrayIsMapped, "hipErrorArrayIsMapped", "array is mapped"},
    {hipErrorAlreadyMapped, "hipErrorAlreadyMapped", "resource already mapped"},
    {hipErrorNoBinaryForGpu, "hipErrorNoBinaryForGpu", "no kernel image is available for execution on the device"},
    {hipErrorAlreadyAcquired, "hipErrorAlreadyAcquired", "resource already acquired"},
    {hipErrorNotMapped, "hipErrorNotMapped", "resource not mapped"},
    {hipErrorNotMappedAsArray, "hipErrorNotMappedAsArray", "resource not mapped as array"},
    {hipErrorNotMappedAsPointer, "hipErrorNotMappedAsPointer", "resource not mapped as pointer"},
    {hipErrorECCNotCorrectable, "hipErrorECCNotCorrectable", "uncorrectable ECC error encountered"},
    {hipErrorUnsupportedLimit, "hipErrorUnsupportedLimit", "limit is not supported on this architecture"},
    {hipErrorContextAlreadyInUse, "hipErrorContextAlreadyInUse", "exclusive-thread device already in use by a different thread"},
    {hipErrorPeerAccessUnsupported, "hipErrorPeerAccessUnsupported", "peer access is not supported between these two devices"},
    {hipErrorInvalidKernelFile, "hipErrorInvalidKernelFile", "invalid kernel file"},
    {hipErrorInvalidGraphicsContext, "hipErrorInvalidGraphicsContext", "invalid OpenGL or DirectX context"},
    {hipErrorInvalidSource, "hipErrorInvalidSource", "device kernel image is invalid"},
    {hipErrorFileNotFound, "hipErrorFileNotFound", "file not found"},
    {hipErrorSharedObjectSymbolNotFound, "hipErrorSharedObjectSymbolNotFound", "shared object symbol not found"},
    {hipErrorSharedObjectInitFailed, "hipErrorSharedObjectInitFailed", "shared object initialization failed"},
    {hipErrorOperatingSystem, "hipErrorOperatingSystem", "OS call failed or operation not supported on this OS"},
    {hipErrorInvalidHandle, "hipErrorInvalidHandle", "invalid resource handle"},
    {hipErrorIllegalState, "hipErrorIllegalState", "the operation cannot be performed in the present state"},
    {hipErrorNotFound, "hipErrorNotFound", "named symbol not found"},
    {hipErrorNotReady, "hipErrorNotReady", "device not ready"},
    {hipErrorIllegalAddress, "hipErrorIllegalAddress", "an illegal memory access was encountered"},
    {hipErrorLaunchOutOfResources, "hipErrorLaunchOutOfResources", "too many resources requested for launch"},
    {hipErrorLaunchTimeOut, "hipErrorLaunchTimeOut", "the launch timed out and was terminated"},
    {hipErrorPeerAccessAlreadyEnabled, "hipErrorPeerAccessAlreadyEnabled", "peer access is already enabled"},
    {hipErrorPeerAccessNotEnabled, "hipErrorPeerAccessNotEnabled", "peer access has not been enabled"},
    {hipErrorSetOnActiveProcess, "hipErrorSetOnActiveProcess", "cannot set while device is active in this process"},
    {hipErrorContextIsDestroyed, "hipErrorContextIsDestroyed", "context is destroyed"},
    {hipErrorAssert, "hipErrorAssert", "device-side assert triggered"},
    {hipErrorHostMemoryAlreadyRegistered, "hipErrorHostMemoryAlreadyRegistered", "part or all of the requested memory range is already mapped"},
    {hipErrorHostMemoryNotRegistered, "hipErrorHostMemoryNotRegistered", "pointer does not correspond to a registered memory region"},
    {hipErrorLaunchFailure, "hipErrorLaunchFailure", "unspecified launch failure"},
    {hipErrorCooperativeLaunchTooLarge, "hipErrorCooperativeLaunchTooLarge", "too many blocks in cooperative launch"},
    {hipErrorNotSupported, "hipErrorNotSupported", "operation not supported"},
    {hipErrorStreamCaptureUnsupported, "hipErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing"},
    {hipErrorStreamCaptureInvalidated, "hipErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture"},
    {hipErrorStreamCaptureMerge, "hipErrorStreamCaptureMerge", "operation would result in a merge of separate capture sequences"},
    {hipErrorStreamCaptureUnmatched, "hipErrorStreamCaptureUnmatched", "capture was not ended in the same stream as it began"},
    {hipErrorStreamCaptureUnjoined, "hipErrorStreamCaptureUnjoined", "capturing stream has unjoined work"},
    {hipErrorStreamCaptureIsolation, "hipErrorStreamCaptureIsolation", "dependency created on uncaptured work in another stream"},
    {hipErrorStreamCaptureImplicit, "hipErrorStreamCaptureImplicit", "operation would make the legacy stream depend on a capturing blocking stream"},
    {hipErrorCapturedEvent, "hipErrorCapturedEvent", "operation not permitted on an event last recorded in a capturing stream"},
    {hipErrorStreamCaptureWrongThread, "hipErrorStreamCaptureWrongThread", "attempt to terminate a thread-local capture sequence from another thread"},
    {hipErrorGraphExecUpdateFailure, "hipErrorGraphExecUpdateFailure", "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update"},
    {hipErrorInvalidChannelDescriptor, "hipErrorInvalidChannelDescriptor", "invalid channel descriptor"},
    {hipErrorInvalidTexture, "hipErrorInvalidTexture", "invalid texture"},
    {hipErrorUnknown, "hipErrorUnknown", "unknown error"},
    {hipErrorRuntimeMemory, "hipErrorRuntimeMemory", "runtime memory call returned error"},
    {hipErrorRuntimeOther, "hipErrorRuntimeOther", "runtime call other than memory returned error"},
};

const ErrorText* lookup(hipError_t code) {
  for (const ErrorText& e : kErrors)
    if (e.code == code) return &e;
  return nullptr;
}

thread_local hipError_t t_last_error = hipSuccess;

// Detail texts. hipGetErrorString returns pointers into `texts`, which only grows, so a pointer a program holds
// stays valid after later errors.
struct Details {
  std::mutex mu;
  std::deque<std::string> texts;
  std::map<hipError_t, const char*> latest;  // code -> "description: detail"
};
Details& details() {
  static Details* d = new Details;  // never destroyed: error strings may be asked for from atexit handlers
  return *d;
}

}  // namespace

bool quiet() {
  static const bool q = [] {
    const char* v = std::getenv("HK_VGPU_QUIET");
    return v && *v && std::string(v) != "0";
  }();
  return q;
}

// HK_VGPU_HIP_ERRORS=1: every failing HIP call prints its error (and detail) on stderr, including those a library
// expects and handles (a kernel looked up in each loaded module in turn), so that a library that turns one of them
// into its own status code can be traced to the call.
bool log_errors() {
  static const bool on = [] {
    const char* v = std::getenv("HK_VGPU_HIP_ERRORS");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

hipError_t resurface(hipError_t code) {
  // As HIP: a failing call becomes the thread's last error; success and "not ready" leave it alone.
  if (code != hipSuccess && code != hipErrorNotReady) t_last_error = code;
  return code;
}

hipError_t done(hipError_t code) {
  if (code != hipSuccess && code != hipErrorNotReady) {
    // A new error without details: an older detail for the same code no longer describes the latest error.
    Details& d = details();
    std::lock_guard lock(d.mu);
    d.latest.erase(code);
    if (log_errors()) std::fprintf(stderr, "vgpu: HIP call failed: %s\n", error_name(code));
  }
  return resurface(code);
}

hipError_t fail(hipError_t code, const std::string& detail, bool print) {
  {
    Details& d = details();
    std::lock_guard lock(d.mu);
    d.texts.push_back(std::string(error_description(code)) + ": " + detail);
    d.latest[code] = d.texts.back().c_str();
  }
  (void)resurface(code);
  if ((print && !quiet()) || log_errors()) {
    // Fault messages already start with "vgpu: ".
    const char* prefix = detail.rfind("vgpu: ", 0) == 0 ? "" : "vgpu: ";
    std::fprintf(stderr, "%s%s [%s]\n", prefix, detail.c_str(), error_name(code));
  }
  return code;
}

hipError_t error_for(FaultKind kind) {
  switch (kind) {
    case FaultKind::none: return hipSuccess;
    // Accesses outside memory the work-item may touch: what a GPU reports as an illegal address.
    case FaultKind::memory_out_of_bounds:
    case FaultKind::lds_out_of_bounds:
    case FaultKind::private_out_of_bounds: return hipErrorIllegalAddress;
    // A kernel that can never finish: on hardware the dispatch would hang until a timeout kills it.
    case FaultKind::barrier_deadlock:
    case FaultKind::workgroup_deadlock:
    case FaultKind::watchdog: return hipErrorLaunchTimeOut;
    // Launch parameters the kernel cannot take.
    case FaultKind::bad_launch: return hipErrorInvalidConfiguration;
    case FaultKind::trap: return hipErrorAssert;
    // An instruction vgpu cannot execute: HIP has no "illegal instruction" code; a device exception is this one.
    case FaultKind::unknown_instruction: return hipErrorLaunchFailure;
    // What race-check mode finds would give wrong results at some timing on hardware, not an exception: the kernel
    // failed as a launch.
    case FaultKind::lds_dma_hazard:
    case FaultKind::lds_race: return hipErrorLaunchFailure;
  }
  return hipErrorLaunchFailure;
}

const char* error_name(hipError_t code) {
  const ErrorText* e = lookup(code);
  return e ? e->name : "hipErrorUnknown";
}

const char* error_description(hipError_t code) {
  const ErrorText* e = lookup(code);
  return e ? e->description : "unknown error";
}

hipError_t unsupported(const char* function) {
  static std::mutex mu;
  static std::set<std::string>* reported = new std::set<std::string>;
  bool first;
  {
    std::lock_guard lock(mu);
    first = reported->insert(function).second;
  }
  std::string detail = std::string(function) + " is not implemented by the vgpu HIP runtime";
  return fail(hipErrorNotSupported, detail, first);
}

}  // namespace vgpu::hiprt

using namespace vgpu::hiprt;

HK_HIP_API hipError_t hipGetLastError() {
  hipError_t e = t_last_error;
  t_last_error = hipSuccess;
  return e;
}

HK_HIP_API hipError_t hipExtGetLastError() { return hipGetLastError(); }

HK_HIP_API hipError_t hipPeekAtLastError() { return t_last_error; }

HK_HIP_API const char* hipGetErrorName(hipError_t code) { return error_name(code); }

HK_HIP_API const char* hipGetErrorString(hipError_t code) {
  Details& d = details();
  std::lock_guard lock(d.mu);
  auto it = d.latest.find(code);
  return it != d.latest.end() ? it->second : error_description(code);
}

HK_HIP_API hipError_t hipDrvGetErrorName(hipError_t code, const char** name) {
  if (!name) return done(hipErrorInvalidValue);
  if (!lookup(code)) {
    *name = nullptr;
    return done(hipErrorInvalidValue);
  }
  *name = error_name(code);
  return hipSuccess;
}

HK_HIP_API hipError_t hipDrvGetErrorString(hipError_t code, const char** text) {
  if (!text) return done(hipErrorInvalidValue);
  if (!lookup(code)) {
    *text = nullptr;
    return done(hipErrorInvalidValue);
  }
  *text = hipGetErrorString(code);
  return hipSuccess;
}

namespace vgpu::hiprt {
int unsupported_stub(const char* function) { return unsupported(function); }
}  // namespace vgpu::hiprt
