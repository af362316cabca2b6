// The device side of the host toolkit (HIP runtime, no googletest): which target the device is, and device copies of
// host matrices in a device type.
#pragma once
#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "matrix.h"

namespace hk_host {

// The target of device 0. Every test and tool asks this one function (hk's own lookup can replace its body).
inline Arch device_arch() {
  static const Arch arch = [] {
    hipDeviceProp_t p;
    if (hipGetDeviceProperties(&p, 0) != hipSuccess) {
      std::fprintf(stderr, "hk_host::device_arch: no HIP device\n");
      std::exit(2);
    }
    if (const std::optional<Arch> a = arch_named(p.gcnArchName)) return *a;
    std::fprintf(stderr, "hk_host::device_arch: the device is %s, neither gfx942 nor gfx950\n", p.gcnArchName);
    std::exit(2);
  }();
  return arch;
}

// Element type t as the device stores it.
inline Format device_format(Type t) { return {t, device_arch()}; }

// A matrix on the device in a format, and the host values it holds (exact in the format).
class DeviceMatrix {
 public:
  DeviceMatrix(Matrix m, Format f) : host(std::move(m)), format(f) {
    status_ = hipMalloc(&dev_, std::max<size_t>(host.values.size(), 1) * format.bytes());
    if (status_ == hipSuccess) status_ = upload();
  }
  ~DeviceMatrix() { (void)hipFree(dev_); }
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
  void* dev_ = nullptr;
  hipError_t status_;
};

}  // namespace hk_host
