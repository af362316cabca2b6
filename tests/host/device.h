// The device side of the host toolkit (HIP runtime, no googletest): which target the device is, device copies of
// host matrices in a device type, and plain device arrays.
#pragma once
#include <hip/hip_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hk/arch/target.h"
#include "matrix.h"

namespace hk_host {

// The target of device 0, from hk's lookup (hk/arch/target.h). Every test and tool asks here.
inline const hk::arch::target& device_target() {
  static const hk::arch::target* t = [] {
    const hk::arch::target* found = hk::arch::device_target(0);
    if (!found) {
      std::fprintf(stderr, "hk_host::device_target: no HIP device, or one hk is not built for\n");
      std::exit(2);
    }
    return found;
  }();
  return *t;
}
inline Arch device_arch() { return device_target().id; }
inline std::string device_arch_name() { return device_target().name; }

// Element type t as the device stores it.
inline Format device_format(Type t) { return {t, device_arch()}; }

// A matrix on the device in a format, and the host values it holds (exact in the format). It starts `offset`
// elements past the start of its allocation (which is 16-byte aligned), to test pointers that are not.
class DeviceMatrix {
 public:
  DeviceMatrix(Matrix m, Format f, long offset = 0) : host(std::move(m)), format(f) {
    status_ = hipMalloc(&base_, (std::max<size_t>(host.values.size(), 1) + offset) * format.bytes());
    dev_ = static_cast<char*>(base_) + offset * format.bytes();
    if (status_ == hipSuccess) status_ = upload();
  }
  ~DeviceMatrix() { (void)hipFree(base_); }
  DeviceMatrix(const DeviceMatrix&) = delete;
  DeviceMatrix& operator=(const DeviceMatrix&) = delete;

  hipError_t status() const { return status_; }  // of the allocation and the first upload
  void* data() const { return dev_; }
  // Copies `host` (rounded to the format) to the device.
  hipError_t upload() {
    const std::vector<uint8_t> raw = format.encode(host.values);
    return hipMemcpy(dev_, raw.data(), raw.size(), hipMemcpyHostToDevice);
  }
  // What the device holds now, as a matrix of the same shape (status: the copy's).
  Matrix download(hipError_t* status = nullptr) const {
    std::vector<uint8_t> raw(host.values.size() * format.bytes());
    const hipError_t e = hipMemcpy(raw.data(), dev_, raw.size(), hipMemcpyDeviceToHost);
    if (status) *status = e;
    Matrix m(host.rows, host.cols, host.ld);
    m.values = format.decode(raw);
    return m;
  }

  Matrix host;
  const Format format;

 private:
  void* base_ = nullptr;
  void* dev_ = nullptr;
  hipError_t status_;
};

// A device copy of a host vector (at least one element allocated, so that an empty vector still has an address).
// `p` is null when the allocation failed; status() is the allocation's and the upload's.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& v) {
    status_ = hipMalloc(&p, std::max<size_t>(1, v.size()) * sizeof(T));
    if (status_ != hipSuccess) p = nullptr;
    else if (!v.empty()) status_ = hipMemcpy(p, v.data(), v.size() * sizeof(T), hipMemcpyHostToDevice);
  }
  ~DeviceArray() { (void)hipFree(p); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  hipError_t status() const { return status_; }
  // The first n elements the device holds now (status: the copy's).
  std::vector<T> download(size_t n, hipError_t* status = nullptr) const {
    std::vector<T> out(n);
    const hipError_t e = hipMemcpy(out.data(), p, n * sizeof(T), hipMemcpyDeviceToHost);
    if (status) *status = e;
    return out;
  }

  T* p = nullptr;

 private:
  hipError_t status_ = hipSuccess;
};

}  // namespace hk_host
