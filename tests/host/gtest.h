// googletest glue of the host toolkit: a comparison's misses become test failures, reported at the caller's line.
#pragma once
#include <gtest/gtest.h>

#include <source_location>

#include "matrix.h"

namespace hk_host {

// Fails the test with the first misses and the count when the comparison found any.
inline void expect_ok(const Comparison& c, std::source_location at = std::source_location::current()) {
  for (const std::string& miss : c.first_misses()) ADD_FAILURE_AT(at.file_name(), int(at.line())) << miss;
  if (!c.ok()) ADD_FAILURE_AT(at.file_name(), int(at.line())) << c.summary();
}

// got[i] == want[i] within atol + rtol |want[i]| everywhere (NaN matches NaN).
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, double atol, double rtol,
                         const std::string& what, std::source_location at = std::source_location::current()) {
  expect_ok(compare(got, want, atol, rtol, what), at);
}

}  // namespace hk_host
