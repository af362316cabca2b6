// Helpers shared by the loader's source files (not part of the public interface).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "vgpu/error.h"

namespace vgpu {

// Every loader error reads "vgpu: <what went wrong>", like the rest of vgpu's errors.
constexpr std::string_view kErrorPrefix = "vgpu: ";
[[noreturn]] inline void loader_fail(const std::string& message) { throw Error(std::string(kErrorPrefix) + message); }
// The message of a caught loader error without the prefix, to put more context in front of it.
inline std::string error_detail(const Error& e) {
  std::string_view m = e.what();
  if (m.starts_with(kErrorPrefix)) m.remove_prefix(kErrorPrefix.size());
  return std::string(m);
}

// Bytes taken by the bundle (plain or compressed) at the start of `blob`, so that bundles placed back to back
// (one per HIP source in a linked .hip_fatbin section) can be walked. Throws if `blob` does not start with one.
size_t offload_bundle_extent(std::span<const uint8_t> blob);

}  // namespace vgpu
