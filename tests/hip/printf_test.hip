// Device printf as HIP programs use it (the hostcall form clang emits by default; built again as printf_buffered_test
// with -mprintf-kind=buffered): from one lane, from every lane of several waves and workgroups, and with every
// conversion HIP supports. The output is captured from stdout and
// compared with what the host's own printf makes of the same format and values.
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "hip_check.h"

__global__ void hello(int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 5) printf("hello from lane %d of %d, %f\n", i, n, 1.5);
}

// Every work-item prints two lines; a wave's lines come out in its program order.
__global__ void every_lane(const int* values) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  printf("first %d: %d\n", i, values[i]);
  printf("second %d: %x\n", i, values[i] * 3);
}

struct Conversions {
  int i;
  unsigned u;
  long long ll;
  unsigned long long ull;
  float f;
  double d;
  char c;
  short s;
  signed char sc;
};

__global__ void conversions(const Conversions* in, const char* word) {
  const Conversions v = in[threadIdx.x];
  if (threadIdx.x != 1) return;
  printf("ints %d %i %+d %5d|%-5d|%05d %u %o %x %X %#x %lld %llu %llx %hd %hhd\n", v.i, v.i, v.i, v.i, v.i, v.i, v.u,
         v.u, v.u, v.u, v.u, v.ll, v.ull, v.ull, v.s, v.sc);
  printf("floats %f %.3f %10.2f %-10.1e| %e %E %g %G %a %08.3f %f\n", v.f, v.d, v.d, v.d, v.d, v.d, v.d, v.d, v.d, v.f,
         double(v.f) * 1e10);
  printf("chars %c%c%c strings [%s] [%10s] [%-6s] [%.2s] %% done\n", v.c, v.c + 1, v.c + 2, word, word, word, word);
  printf("star widths [%*d] [%-*d] [%.*f]\n", 6, v.i, 4, v.i, 2, v.d);
  printf("a long format string that is much longer than the fifty-six bytes one hostcall packet carries: %d, "
         "and a long string argument: %s\n", v.i, "the quick brown fox jumps over the lazy dog, twice: the quick "
         "brown fox jumps over the lazy dog");
  printf("no arguments at all\n");
}

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

template <class... A>
std::string host_format(const char* fmt, A... args) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

}  // namespace

TEST(Printf, OneLaneHello) {
  testing::internal::CaptureStdout();
  hello<<<2, 64>>>(128);
  hipError_t launched = hipGetLastError();
  hipError_t synced = hipDeviceSynchronize();
  std::string out = testing::internal::GetCapturedStdout();
  HIP_ASSERT(launched);
  HIP_ASSERT(synced);
  EXPECT_EQ(out, "hello from lane 5 of 128, 1.500000\n");
}

TEST(Printf, EveryLaneOfSeveralWavesInProgramOrder) {
  const int blocks = 3, threads = 192, n = blocks * threads;
  std::vector<int> values(n);
  for (int i = 0; i < n; ++i) values[i] = (i * 7919) % 1000 - 500;
  DeviceBuffer<int> d(n);
  HIP_ASSERT(hipMemcpy(d.ptr, values.data(), d.bytes(), hipMemcpyHostToDevice));
  testing::internal::CaptureStdout();
  every_lane<<<blocks, threads>>>(d.ptr);
  hipError_t launched = hipGetLastError();
  hipError_t synced = hipDeviceSynchronize();
  std::string out = testing::internal::GetCapturedStdout();
  HIP_ASSERT(launched);
  HIP_ASSERT(synced);
  std::vector<std::string> lines = lines_of(out);
  ASSERT_EQ(lines.size(), size_t(2 * n));
  std::map<std::string, size_t> position;
  for (size_t k = 0; k < lines.size(); ++k) position[lines[k]] = k;
  ASSERT_EQ(position.size(), lines.size()) << "duplicate lines";
  for (int i = 0; i < n; ++i) {
    const std::string first = host_format("first %d: %d", i, values[i]);
    const std::string second = host_format("second %d: %x", i, values[i] * 3);
    ASSERT_TRUE(position.count(first)) << first;
    ASSERT_TRUE(position.count(second)) << second;
    // A wave prints its first line from every lane before any second line.
    const int wave_first_lane = i / 64 * 64;
    for (int l = wave_first_lane; l < wave_first_lane + 64; ++l)
      EXPECT_LT(position[first], position[host_format("second %d: %x", l, values[l] * 3)]);
  }
}

TEST(Printf, EveryConversion) {
  std::vector<Conversions> in(64);
  Conversions v{-1234, 3000000000u, -9007199254740993ll, 18446744073709551000ull, 3.14159f, -2.718281828459045,
                'k', -12345, -100};
  in[1] = v;
  DeviceBuffer<Conversions> d(in.size());
  const char word[] = "vgpu";
  DeviceBuffer<char> dword(sizeof word);
  HIP_ASSERT(hipMemcpy(d.ptr, in.data(), d.bytes(), hipMemcpyHostToDevice));
  HIP_ASSERT(hipMemcpy(dword.ptr, word, sizeof word, hipMemcpyHostToDevice));
  testing::internal::CaptureStdout();
  conversions<<<1, 64>>>(d.ptr, dword.ptr);
  hipError_t launched = hipGetLastError();
  hipError_t synced = hipDeviceSynchronize();
  std::string out = testing::internal::GetCapturedStdout();
  HIP_ASSERT(launched);
  HIP_ASSERT(synced);
  std::string expected =
      host_format("ints %d %i %+d %5d|%-5d|%05d %u %o %x %X %#x %lld %llu %llx %hd %hhd\n", v.i, v.i, v.i, v.i, v.i,
                  v.i, v.u, v.u, v.u, v.u, v.u, v.ll, v.ull, v.ull, v.s, v.sc) +
      host_format("floats %f %.3f %10.2f %-10.1e| %e %E %g %G %a %08.3f %f\n", double(v.f), v.d, v.d, v.d, v.d, v.d,
                  v.d, v.d, v.d, double(v.f), double(v.f) * 1e10) +
      host_format("chars %c%c%c strings [%s] [%10s] [%-6s] [%.2s] %% done\n", v.c, v.c + 1, v.c + 2, word, word, word,
                  word) +
      host_format("star widths [%*d] [%-*d] [%.*f]\n", 6, v.i, 4, v.i, 2, v.d) +
      host_format("a long format string that is much longer than the fifty-six bytes one hostcall packet carries: %d, "
                  "and a long string argument: %s\n", v.i, "the quick brown fox jumps over the lazy dog, twice: the "
                  "quick brown fox jumps over the lazy dog") +
      "no arguments at all\n";
  EXPECT_EQ(out, expected);
}
