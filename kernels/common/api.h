// What every hk kernel's host API shares: the element types callers name, the status a call returns, and the checks
// every entry point makes before it launches (the device's target, pointers inside device allocations).
#pragma once
#include <hip/hip_runtime.h>

#include <cstddef>
#include <string>

namespace hk {
namespace arch {
struct target;  // hk/arch/target.h: not included here, so host-only C++ that calls hk's kernels needs no device headers
}

// Element types of tensors passed to hk's host APIs (the tiles' own element types are C++ types: bf16, half, ...).
enum class scalar_type { bf16, f16, fp32, fp8_e4m3, fp8_e5m2 };
const char* to_string(scalar_type t);
size_t size_of(scalar_type t);

struct Status {
  hipError_t code = hipSuccess;
  std::string message;  // empty on success
  explicit operator bool() const { return code == hipSuccess; }
};

namespace api {

// A failed Status whose message starts with the entry point's name ("hk::gemm: ...").
inline Status error(const char* entry, hipError_t code, const std::string& message) {
  return {code, std::string(entry) + ": " + message};
}

// The target of the current device, or null with `status` saying why (no device, or one hk has no kernels for).
const arch::target* current_target(const char* entry, Status& status);

// Whether bytes [p, p + bytes) lie inside one allocation of the runtime.
bool inside_allocation(const void* p, size_t bytes);

// Bytes spanned by a row-major matrix of `rows` rows of `cols` elements, `ld` elements apart.
inline size_t matrix_bytes(long rows, long cols, long ld, size_t elem) {
  return rows <= 0 || cols <= 0 ? 0 : (size_t(rows - 1) * size_t(ld) + size_t(cols)) * elem;
}

}  // namespace api
}  // namespace hk
