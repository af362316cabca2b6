// HK_VGPU_TOTALS=FILE: the process's running totals (kernel launches, wave instructions, emulation seconds), rewritten
// in place after every launch, so a program killed mid-run (a test runner's time budget) still leaves what it did.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "runtime.h"

namespace vgpu::hiprt {
namespace {

struct Totals {
  std::mutex mu;
  int fd = -1;
  uint64_t launches = 0, wave_instructions = 0;
  double seconds = 0;
  Totals() {
    if (const char* path = std::getenv("HK_VGPU_TOTALS"); path && *path)
      fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  }
  ~Totals() {
    if (fd >= 0) ::close(fd);
  }
};

Totals& totals() {
  static Totals t;
  return t;
}

}  // namespace

void count_dispatch(const DispatchStats& stats) {
  Totals& t = totals();
  if (t.fd < 0) return;
  std::lock_guard lock(t.mu);
  ++t.launches;
  t.wave_instructions += stats.wave_instructions;
  t.seconds += stats.wall_seconds;
  // Fixed-width fields: every rewrite covers the previous one completely.
  char line[96];
  const int n = std::snprintf(line, sizeof line, "launches %20llu wave_instructions %20llu seconds %14.3f\n",
                              (unsigned long long)t.launches, (unsigned long long)t.wave_instructions, t.seconds);
  if (n > 0 && ::pwrite(t.fd, line, size_t(n), 0) != n) {
    ::close(t.fd);  // an unwritable file stops the counting, not the program
    t.fd = -1;
  }
}

}  // namespace vgpu::hiprt
