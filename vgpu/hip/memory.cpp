// Memory: allocation, copies and fills. vgpu's global memory is host memory recorded in the device's MemoryMap (the
// one ledger of allocations), so every copy direction is a plain memcpy, and "async" copies complete before they
// return (unless queued behind a host function, stream_queue.h; the synchronous ones and frees wait for those).
#include <sys/sysinfo.h>

#include <algorithm>
#include <cstring>

#include "graph.h"
#include "stream_queue.h"

namespace vgpu::hiprt {
namespace {

hipError_t allocate(void** ptr, size_t size, hipMemoryType type, unsigned flags) {
  if (!ptr) return done(hipErrorInvalidValue);
  if (hipError_t e = check_unsafe_call(); e != hipSuccess) return e;
  *ptr = nullptr;
  if (size == 0) return hipSuccess;  // as HIP: a null pointer and success
  *ptr = Runtime::get().allocate(size, type, flags);
  if (!*ptr) return fail(hipErrorOutOfMemory, "cannot allocate " + std::to_string(size) + " bytes");
  return hipSuccess;
}

hipError_t free_memory(void* p) {
  if (!p) return hipSuccess;
  if (hipError_t e = check_unsafe_call(); e != hipSuccess) return e;
  drain_all();  // as HIP's free, it waits for the device: work queued behind a host function may use the memory
  return done(Runtime::get().release(p));
}

// A range that starts inside memory the runtime knows must also end inside it: copying past the end of a
// hipMalloc'd buffer would silently corrupt the host heap that backs it.
hipError_t check_range(const void* p, size_t bytes, const char* what) {
  const MemoryRange a = Runtime::get().find_allocation(p);
  if (!a) return hipSuccess;  // host memory we do not track
  uintptr_t start = reinterpret_cast<uintptr_t>(p);
  if (start + bytes > a.base + a.size)
    return fail(hipErrorInvalidValue, std::string(what) + " range of " + std::to_string(bytes) + " bytes at offset " +
                                          std::to_string(start - a.base) + " runs past the end of its " +
                                          std::to_string(a.size) + "-byte allocation");
  return hipSuccess;
}

bool valid_kind(hipMemcpyKind kind) {
  return (kind >= hipMemcpyHostToHost && kind <= hipMemcpyDefault) || kind == hipMemcpyDeviceToDeviceNoCU;
}

// The last byte past a pitched region of `depth` slices of `height` rows of `width` bytes.
size_t extent_of(size_t pitch, size_t rows, size_t width, size_t height, size_t depth) {
  return (depth - 1) * rows * pitch + (height - 1) * pitch + width;
}

}  // namespace

hipError_t check_copy(const CopyWork& w) {
  if (w.width == 0 || w.height == 0 || w.depth == 0) return hipSuccess;
  if (!w.dst || !w.src) return done(hipErrorInvalidValue);
  if (!valid_kind(w.kind)) return done(hipErrorInvalidMemcpyDirection);
  if (hipError_t e = check_range(w.dst, extent_of(w.dst_pitch, w.dst_rows, w.width, w.height, w.depth), "destination");
      e != hipSuccess)
    return e;
  return check_range(w.src, extent_of(w.src_pitch, w.src_rows, w.width, w.height, w.depth), "source");
}

hipError_t run_copy(const CopyWork& w) {
  if (hipError_t e = check_copy(w); e != hipSuccess) return e;
  if (w.width == 0) return hipSuccess;
  for (size_t z = 0; z < w.depth; ++z)
    for (size_t y = 0; y < w.height; ++y)
      std::memmove(static_cast<uint8_t*>(w.dst) + (z * w.dst_rows + y) * w.dst_pitch,
                   static_cast<const uint8_t*>(w.src) + (z * w.src_rows + y) * w.src_pitch, w.width);
  return hipSuccess;
}

hipError_t check_fill(const FillWork& w) {
  if (w.width == 0 || w.height == 0) return hipSuccess;
  if (!w.dst) return done(hipErrorInvalidValue);
  return check_range(w.dst, (w.height - 1) * w.pitch + w.width * w.element_size, "memset");
}

hipError_t run_fill(const FillWork& w) {
  if (hipError_t e = check_fill(w); e != hipSuccess) return e;
  for (size_t y = 0; y < w.height && w.width; ++y) {
    auto* p = static_cast<uint8_t*>(w.dst) + y * w.pitch;
    if (w.element_size == 1) {
      std::memset(p, int(w.value & 0xff), w.width);
    } else {
      for (size_t i = 0; i < w.width; ++i) std::memcpy(p + i * w.element_size, &w.value, w.element_size);
    }
  }
  return hipSuccess;
}

namespace {

// A copy or fill on a stream: checked, then run, or captured as a node when the stream is capturing.
hipError_t enqueue(const CopyWork& w, hipStream_t stream) {
  ihipStream_t* s = Runtime::get().stream(stream);
  if (!s) return done(hipErrorInvalidHandle);
  if (hipError_t e = check_copy(w); e != hipSuccess) return e;
  if (capturing(s)) return capture_work(s, hipGraphNodeTypeMemcpy, w);
  if (behind_host_work(s)) {
    queue_work(s, w);
    return hipSuccess;
  }
  return run_copy(w);
}
hipError_t enqueue(const FillWork& w, hipStream_t stream) {
  ihipStream_t* s = Runtime::get().stream(stream);
  if (!s) return done(hipErrorInvalidHandle);
  if (hipError_t e = check_fill(w); e != hipSuccess) return e;
  if (capturing(s)) return capture_work(s, hipGraphNodeTypeMemset, w);
  if (behind_host_work(s)) {
    queue_work(s, w);
    return hipSuccess;
  }
  return run_fill(w);
}

CopyWork linear_copy(void* dst, const void* src, size_t bytes, hipMemcpyKind kind) {
  CopyWork w;
  w.dst = dst;
  w.src = src;
  w.width = w.dst_pitch = w.src_pitch = bytes;
  w.dst_rows = w.src_rows = 1;
  w.kind = kind;
  return w;
}

// The synchronous operations are illegal while a capture forbids them (check_unsafe_call).
hipError_t copy(void* dst, const void* src, size_t bytes, hipMemcpyKind kind) {
  if (hipError_t e = check_unsafe_call(); e != hipSuccess) return e;
  drain_all();
  return enqueue(linear_copy(dst, src, bytes, kind), nullptr);
}

hipError_t copy_on(void* dst, const void* src, size_t bytes, hipMemcpyKind kind, hipStream_t stream) {
  return enqueue(linear_copy(dst, src, bytes, kind), stream);
}

FillWork fill_rows(void* dst, size_t pitch, uint32_t value, uint32_t size, size_t width, size_t height) {
  FillWork w;
  w.dst = dst;
  w.pitch = pitch;
  w.value = size == 1 ? (value & 0xff) : size == 2 ? (value & 0xffff) : value;
  w.element_size = size;
  w.width = width;
  w.height = height;
  return w;
}

// Fills `count` elements of `size` bytes with `value`, synchronously or on a stream.
hipError_t fill(void* dst, uint32_t value, uint32_t size, size_t count) {
  if (hipError_t e = check_unsafe_call(); e != hipSuccess) return e;
  drain_all();
  return enqueue(fill_rows(dst, count * size, value, size, count, 1), nullptr);
}
hipError_t fill_on(void* dst, uint32_t value, uint32_t size, size_t count, hipStream_t stream) {
  return enqueue(fill_rows(dst, count * size, value, size, count, 1), stream);
}

hipError_t copy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                   hipMemcpyKind kind, hipStream_t stream, bool sync) {
  if (sync) {
    if (hipError_t e = check_unsafe_call(); e != hipSuccess) return e;
    drain_all();
  }
  if (width == 0 || height == 0) return Runtime::get().stream(stream) ? hipSuccess : done(hipErrorInvalidHandle);
  if (width > dpitch || width > spitch) return done(hipErrorInvalidPitchValue);
  CopyWork w = linear_copy(dst, src, width, kind);
  w.dst_pitch = dpitch;
  w.src_pitch = spitch;
  w.dst_rows = w.src_rows = w.height = height;
  return enqueue(w, stream);
}

hipError_t pitched(void** ptr, size_t* pitch, size_t width, size_t height) {
  if (!ptr || !pitch) return done(hipErrorInvalidValue);
  *pitch = (width + 255) / 256 * 256;  // rows start on 256-byte boundaries, as HIP's allocator aligns them
  return allocate(ptr, *pitch * height, hipMemoryTypeDevice, 0);
}

// The device address of `offset` bytes into a registered variable, checking that `bytes` more fit.
hipError_t symbol_range(const void* symbol, size_t offset, size_t bytes, void** at) {
  if (!symbol) return done(hipErrorInvalidSymbol);
  void* base = nullptr;
  size_t size = 0;
  if (hipError_t e = Runtime::get().variable(symbol, &base, &size); e != hipSuccess) return e;
  if (offset > size || bytes > size - offset)
    return fail(hipErrorInvalidValue, "copy of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                                          " runs past the " + std::to_string(size) + "-byte variable");
  *at = static_cast<uint8_t*>(base) + offset;
  return hipSuccess;
}

}  // namespace
}  // namespace vgpu::hiprt

using namespace vgpu;
using namespace vgpu::hiprt;

// --- allocation ------------------------------------------------------------------------------------------------

HK_HIP_API hipError_t hipMalloc(void** ptr, size_t size) { return allocate(ptr, size, hipMemoryTypeDevice, 0); }
HK_HIP_API hipError_t hipExtMallocWithFlags(void** ptr, size_t size, unsigned int flags) {
  return allocate(ptr, size, hipMemoryTypeDevice, flags);
}
HK_HIP_API hipError_t hipMallocManaged(void** ptr, size_t size, unsigned int flags) {
  return allocate(ptr, size, hipMemoryTypeManaged, flags);
}
// Stream-ordered allocation is immediate. On a capturing stream the memory is allocated at capture time and lives
// on (a hipFreeAsync captured with it frees nothing), so that every launch of the graph finds it.
HK_HIP_API hipError_t hipMallocAsync(void** ptr, size_t size, hipStream_t stream) {
  ihipStream_t* s = Runtime::get().stream(stream);
  if (!s) return done(hipErrorInvalidHandle);
  if (!ptr) return done(hipErrorInvalidValue);
  *ptr = nullptr;
  if (size == 0) return hipSuccess;
  *ptr = Runtime::get().allocate(size, hipMemoryTypeDevice, 0);
  return *ptr ? hipSuccess : fail(hipErrorOutOfMemory, "cannot allocate " + std::to_string(size) + " bytes");
}
HK_HIP_API hipError_t hipHostMalloc(void** ptr, size_t size, unsigned int flags) {
  return allocate(ptr, size, hipMemoryTypeHost, flags);
}
HK_HIP_API hipError_t hipHostAlloc(void** ptr, size_t size, unsigned int flags) {
  return allocate(ptr, size, hipMemoryTypeHost, flags);
}
HK_HIP_API hipError_t hipMallocHost(void** ptr, size_t size) { return allocate(ptr, size, hipMemoryTypeHost, 0); }
HK_HIP_API hipError_t hipMemAllocHost(void** ptr, size_t size) { return allocate(ptr, size, hipMemoryTypeHost, 0); }
HK_HIP_API hipError_t hipMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
  return pitched(ptr, pitch, width, height);
}
HK_HIP_API hipError_t hipMemAllocPitch(hipDeviceptr_t* ptr, size_t* pitch, size_t width, size_t height,
                                       unsigned int /*element_size*/) {
  return pitched(ptr, pitch, width, height);
}

// Any pointer the runtime allocated may be freed with any of the free functions: they all name the same memory.
HK_HIP_API hipError_t hipFree(void* p) { return free_memory(p); }
HK_HIP_API hipError_t hipFreeAsync(void* p, hipStream_t stream) {
  ihipStream_t* s = Runtime::get().stream(stream);
  if (!s) return done(hipErrorInvalidHandle);
  if (!p || capturing(s)) return hipSuccess;
  drain(s);
  return done(Runtime::get().release(p));
}
HK_HIP_API hipError_t hipHostFree(void* p) { return free_memory(p); }
HK_HIP_API hipError_t hipFreeHost(void* p) { return free_memory(p); }

HK_HIP_API hipError_t hipHostRegister(void* p, size_t size, unsigned int flags) {
  if (!p || !size) return done(hipErrorInvalidValue);
  return done(Runtime::get().register_host(p, size, flags));
}
HK_HIP_API hipError_t hipHostUnregister(void* p) {
  if (!p) return done(hipErrorInvalidValue);
  return done(Runtime::get().unregister_host(p));
}
HK_HIP_API hipError_t hipHostGetDevicePointer(void** device_ptr, void* host_ptr, unsigned int /*flags*/) {
  if (!device_ptr || !host_ptr) return done(hipErrorInvalidValue);
  if (!Runtime::get().find_allocation(host_ptr)) return done(hipErrorInvalidValue);
  *device_ptr = host_ptr;  // one address space
  return hipSuccess;
}
HK_HIP_API hipError_t hipHostGetFlags(unsigned int* flags, void* host_ptr) {
  if (!flags || !host_ptr) return done(hipErrorInvalidValue);
  const MemoryRange a = Runtime::get().find_allocation(host_ptr);
  if (!a || memory_type(a.kind) != hipMemoryTypeHost) return done(hipErrorInvalidValue);
  *flags = a.flags;
  return hipSuccess;
}

HK_HIP_API hipError_t hipMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (!free_bytes || !total_bytes) return done(hipErrorInvalidValue);
  hipDeviceProp_t props;
  hipError_t e = hipGetDevicePropertiesR0600(&props, 0);
  if (e != hipSuccess) return e;
  *total_bytes = props.totalGlobalMem;
  // Device memory is host memory: what the host can still give is what is free.
  struct sysinfo si{};
  size_t host_free = sysinfo(&si) == 0 ? size_t(si.freeram + si.bufferram) * si.mem_unit : *total_bytes;
  *free_bytes = std::min(*total_bytes, host_free);
  return hipSuccess;
}

HK_HIP_API hipError_t hipMemPtrGetInfo(void* p, size_t* size) {
  if (!p || !size) return done(hipErrorInvalidValue);
  const MemoryRange a = Runtime::get().find_allocation(p);
  if (!a) return done(hipErrorInvalidValue);
  *size = a.size;
  return hipSuccess;
}

HK_HIP_API hipError_t hipMemGetAddressRange(hipDeviceptr_t* base_out, size_t* size, hipDeviceptr_t p) {
  const MemoryRange a = Runtime::get().find_allocation(p);
  if (!a) return done(hipErrorNotFound);
  if (base_out) *base_out = reinterpret_cast<void*>(a.base);
  if (size) *size = a.size;
  return hipSuccess;
}

HK_HIP_API hipError_t hipPointerGetAttributes(hipPointerAttribute_t* attr, const void* p) {
  if (!attr || !p) return done(hipErrorInvalidValue);
  *attr = hipPointerAttribute_t{};
  const MemoryRange a = Runtime::get().find_allocation(p);
  if (!a) {
    // As HIP 6 (and CUDA): memory the runtime does not know is reported as unregistered, without an error.
    attr->type = hipMemoryTypeUnregistered;
    attr->device = -1;
    attr->hostPointer = const_cast<void*>(p);
    return hipSuccess;
  }
  attr->type = memory_type(a.kind);
  attr->device = 0;
  attr->devicePointer = const_cast<void*>(p);
  attr->hostPointer = attr->type == hipMemoryTypeDevice ? nullptr : const_cast<void*>(p);
  attr->isManaged = attr->type == hipMemoryTypeManaged;
  attr->allocationFlags = a.flags;
  return hipSuccess;
}

// Hints about placement mean nothing when all memory is host memory.
HK_HIP_API hipError_t hipMemPrefetchAsync(const void* p, size_t, int, hipStream_t stream) {
  if (!p) return done(hipErrorInvalidValue);
  return Runtime::get().stream(stream) ? hipSuccess : done(hipErrorInvalidHandle);
}
HK_HIP_API hipError_t hipMemAdvise(const void* p, size_t, hipMemoryAdvise, int) {
  return p ? hipSuccess : done(hipErrorInvalidValue);
}

// --- copies ----------------------------------------------------------------------------------------------------

HK_HIP_API hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, hipMemcpyKind kind) {
  return copy(dst, src, bytes, kind);
}
HK_HIP_API hipError_t hipMemcpy_spt(void* dst, const void* src, size_t bytes, hipMemcpyKind kind) {
  return copy(dst, src, bytes, kind);
}
HK_HIP_API hipError_t hipMemcpyAsync(void* dst, const void* src, size_t bytes, hipMemcpyKind kind,
                                     hipStream_t stream) {
  return copy_on(dst, src, bytes, kind, stream);
}
HK_HIP_API hipError_t hipMemcpyAsync_spt(void* dst, const void* src, size_t bytes, hipMemcpyKind kind,
                                         hipStream_t stream) {
  return copy_on(dst, src, bytes, kind, stream);
}
HK_HIP_API hipError_t hipMemcpyWithStream(void* dst, const void* src, size_t bytes, hipMemcpyKind kind,
                                          hipStream_t stream) {
  return copy_on(dst, src, bytes, kind, stream);
}
HK_HIP_API hipError_t hipMemcpyHtoD(hipDeviceptr_t dst, void* src, size_t bytes) {
  return copy(dst, src, bytes, hipMemcpyHostToDevice);
}
HK_HIP_API hipError_t hipMemcpyDtoH(void* dst, hipDeviceptr_t src, size_t bytes) {
  return copy(dst, src, bytes, hipMemcpyDeviceToHost);
}
HK_HIP_API hipError_t hipMemcpyDtoD(hipDeviceptr_t dst, hipDeviceptr_t src, size_t bytes) {
  return copy(dst, src, bytes, hipMemcpyDeviceToDevice);
}
HK_HIP_API hipError_t hipMemcpyHtoDAsync(hipDeviceptr_t dst, void* src, size_t bytes, hipStream_t stream) {
  return copy_on(dst, src, bytes, hipMemcpyHostToDevice, stream);
}
HK_HIP_API hipError_t hipMemcpyDtoHAsync(void* dst, hipDeviceptr_t src, size_t bytes, hipStream_t stream) {
  return copy_on(dst, src, bytes, hipMemcpyDeviceToHost, stream);
}
HK_HIP_API hipError_t hipMemcpyDtoDAsync(hipDeviceptr_t dst, hipDeviceptr_t src, size_t bytes, hipStream_t stream) {
  return copy_on(dst, src, bytes, hipMemcpyDeviceToDevice, stream);
}
HK_HIP_API hipError_t hipMemcpyPeer(void* dst, int dst_device, const void* src, int src_device, size_t bytes) {
  if (dst_device != 0 || src_device != 0) return done(hipErrorInvalidDevice);
  return copy(dst, src, bytes, hipMemcpyDeviceToDevice);
}
HK_HIP_API hipError_t hipMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, size_t bytes,
                                         hipStream_t stream) {
  if (dst_device != 0 || src_device != 0) return done(hipErrorInvalidDevice);
  return copy_on(dst, src, bytes, hipMemcpyDeviceToDevice, stream);
}
HK_HIP_API hipError_t hipMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                  size_t height, hipMemcpyKind kind) {
  return copy_2d(dst, dpitch, src, spitch, width, height, kind, nullptr, true);
}
HK_HIP_API hipError_t hipMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                       size_t height, hipMemcpyKind kind, hipStream_t stream) {
  return copy_2d(dst, dpitch, src, spitch, width, height, kind, stream, false);
}

HK_HIP_API hipError_t hipMemcpyToSymbol(const void* symbol, const void* src, size_t bytes, size_t offset,
                                        hipMemcpyKind kind) {
  void* at;
  if (hipError_t e = symbol_range(symbol, offset, bytes, &at); e != hipSuccess) return e;
  return copy(at, src, bytes, kind == hipMemcpyDefault ? hipMemcpyDefault : hipMemcpyHostToDevice);
}
HK_HIP_API hipError_t hipMemcpyToSymbolAsync(const void* symbol, const void* src, size_t bytes, size_t offset,
                                             hipMemcpyKind kind, hipStream_t stream) {
  void* at;
  if (hipError_t e = symbol_range(symbol, offset, bytes, &at); e != hipSuccess) return e;
  return copy_on(at, src, bytes, kind == hipMemcpyDefault ? hipMemcpyDefault : hipMemcpyHostToDevice, stream);
}
HK_HIP_API hipError_t hipMemcpyFromSymbol(void* dst, const void* symbol, size_t bytes, size_t offset,
                                          hipMemcpyKind kind) {
  void* at;
  if (hipError_t e = symbol_range(symbol, offset, bytes, &at); e != hipSuccess) return e;
  return copy(dst, at, bytes, kind == hipMemcpyDefault ? hipMemcpyDefault : hipMemcpyDeviceToHost);
}
HK_HIP_API hipError_t hipMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t bytes, size_t offset,
                                               hipMemcpyKind kind, hipStream_t stream) {
  void* at;
  if (hipError_t e = symbol_range(symbol, offset, bytes, &at); e != hipSuccess) return e;
  return copy_on(dst, at, bytes, kind == hipMemcpyDefault ? hipMemcpyDefault : hipMemcpyDeviceToHost, stream);
}
HK_HIP_API hipError_t hipGetSymbolAddress(void** ptr, const void* symbol) {
  if (!ptr) return done(hipErrorInvalidValue);
  return Runtime::get().variable(symbol, ptr, nullptr);
}
HK_HIP_API hipError_t hipGetSymbolSize(size_t* size, const void* symbol) {
  if (!size) return done(hipErrorInvalidValue);
  return Runtime::get().variable(symbol, nullptr, size);
}

// --- fills -----------------------------------------------------------------------------------------------------

HK_HIP_API hipError_t hipMemset(void* dst, int value, size_t bytes) { return fill(dst, uint8_t(value), 1, bytes); }
HK_HIP_API hipError_t hipMemset_spt(void* dst, int value, size_t bytes) {
  return fill(dst, uint8_t(value), 1, bytes);
}
HK_HIP_API hipError_t hipMemsetAsync(void* dst, int value, size_t bytes, hipStream_t stream) {
  return fill_on(dst, uint8_t(value), 1, bytes, stream);
}
HK_HIP_API hipError_t hipMemsetAsync_spt(void* dst, int value, size_t bytes, hipStream_t stream) {
  return fill_on(dst, uint8_t(value), 1, bytes, stream);
}
HK_HIP_API hipError_t hipMemsetD8(hipDeviceptr_t dst, unsigned char value, size_t count) {
  return fill(dst, value, 1, count);
}
HK_HIP_API hipError_t hipMemsetD8Async(hipDeviceptr_t dst, unsigned char value, size_t count, hipStream_t stream) {
  return fill_on(dst, value, 1, count, stream);
}
HK_HIP_API hipError_t hipMemsetD16(hipDeviceptr_t dst, unsigned short value, size_t count) {
  return fill(dst, value, 2, count);
}
HK_HIP_API hipError_t hipMemsetD16Async(hipDeviceptr_t dst, unsigned short value, size_t count, hipStream_t stream) {
  return fill_on(dst, value, 2, count, stream);
}
HK_HIP_API hipError_t hipMemsetD32(hipDeviceptr_t dst, int value, size_t count) {
  return fill(dst, uint32_t(value), 4, count);
}
HK_HIP_API hipError_t hipMemsetD32Async(hipDeviceptr_t dst, int value, size_t count, hipStream_t stream) {
  return fill_on(dst, uint32_t(value), 4, count, stream);
}
HK_HIP_API hipError_t hipMemset2D(void* dst, size_t pitch, int value, size_t width, size_t height) {
  if (hipError_t e = check_unsafe_call(); e != hipSuccess) return e;
  if (height > 1 && pitch < width) return done(hipErrorInvalidValue);
  return enqueue(fill_rows(dst, pitch, uint32_t(value), 1, width, height), nullptr);
}
HK_HIP_API hipError_t hipMemset2DAsync(void* dst, size_t pitch, int value, size_t width, size_t height,
                                       hipStream_t stream) {
  if (height > 1 && pitch < width) return done(hipErrorInvalidValue);
  return enqueue(fill_rows(dst, pitch, uint32_t(value), 1, width, height), stream);
}

// Per-thread-default-stream variants: every stream is synchronous, so they are the same operations.
HK_HIP_API hipError_t hipMemcpy2D_spt(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                      size_t height, hipMemcpyKind kind) {
  return copy_2d(dst, dpitch, src, spitch, width, height, kind, nullptr, true);
}
HK_HIP_API hipError_t hipMemcpy2DAsync_spt(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                           size_t height, hipMemcpyKind kind, hipStream_t stream) {
  return copy_2d(dst, dpitch, src, spitch, width, height, kind, stream, false);
}
HK_HIP_API hipError_t hipMemset2D_spt(void* dst, size_t pitch, int value, size_t width, size_t height) {
  return hipMemset2D(dst, pitch, value, width, height);
}
HK_HIP_API hipError_t hipMemset2DAsync_spt(void* dst, size_t pitch, int value, size_t width, size_t height,
                                           hipStream_t stream) {
  return hipMemset2DAsync(dst, pitch, value, width, height, stream);
}
