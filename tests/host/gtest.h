// googletest glue of the host toolkit: a comparison's misses become test failures.
#pragma once
#include <gtest/gtest.h>

#include "matrix.h"

namespace hk_host {

// Fails the test with the first misses and the count when the comparison found any.
inline void expect_ok(const Comparison& c) {
  for (const std::string& miss : c.first_misses()) ADD_FAILURE() << miss;
  EXPECT_TRUE(c.ok()) << c.summary();
}

// got[i] == want[i] within atol + rtol |want[i]| everywhere (NaN matches NaN).
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, double atol, double rtol,
                         const std::string& what) {
  expect_ok(compare(got, want, atol, rtol, what));
}

}  // namespace hk_host
