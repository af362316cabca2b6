// How the virtual device's arch is chosen, seen from a program built for gfx942 only (see CMakeLists.txt):
// without HK_VGPU_ARCH the device takes the arch of the registered code; with HK_VGPU_ARCH=gfx950 the program's
// kernels have no code object for the device and launches fail with hipErrorNoBinaryForGpu. Built a second time for
// gfx908 and gfx90a (as Debian's ROCm test programs are): the device is gfx90a.
#include <cstdlib>
#include <string>

#include "hip_check.h"
#if __has_include("vgpu/arch.h")
#include "vgpu/arch.h"
#define HK_HAVE_VGPU_ARCH 1
#endif

__global__ void store_seven(int* out) { out[threadIdx.x] = 7; }

namespace {
std::string expectation() {
  const char* e = std::getenv("HK_EXPECT");
  return e ? e : "";
}
}  // namespace

TEST(ArchChoice, FollowsTheRegisteredCodeOrTheEnvironment) {
  hipDeviceProp_t props;
  HIP_ASSERT(hipGetDeviceProperties(&props, 0));
  std::string arch = props.gcnArchName;
  DeviceBuffer<int> d(64);
  store_seven<<<1, 64>>>(d.ptr);
  hipError_t launched = hipGetLastError();

  if (expectation() == "registered") {
    EXPECT_EQ(std::getenv("HK_VGPU_ARCH"), nullptr);
    ASSERT_NE(hk::arch::find_target(arch), nullptr) << arch;
    EXPECT_EQ(hk::arch::find_target(arch)->id, hk::arch::target_id::gfx942) << arch;
    HIP_ASSERT(launched);
    int host[64];
    HIP_ASSERT(hipMemcpy(host, d.ptr, sizeof host, hipMemcpyDeviceToHost));
    for (int v : host) ASSERT_EQ(v, 7);
#if defined(HK_HAVE_VGPU_ARCH)
  } else if (expectation() == "registered_gfx90a") {
    EXPECT_EQ(std::getenv("HK_VGPU_ARCH"), nullptr);
    EXPECT_EQ(vgpu::parse_arch(arch), vgpu::Arch::gfx90a) << arch;
    HIP_ASSERT(launched);
    int host[64];
    HIP_ASSERT(hipMemcpy(host, d.ptr, sizeof host, hipMemcpyDeviceToHost));
    for (int v : host) ASSERT_EQ(v, 7);
#endif
  } else if (expectation() == "no_binary") {
    ASSERT_NE(hk::arch::find_target(arch), nullptr) << arch;
    EXPECT_EQ(hk::arch::find_target(arch)->id, hk::arch::target_id::gfx950) << arch;
    EXPECT_EQ(launched, hipErrorNoBinaryForGpu);
    std::string text = hipGetErrorString(hipErrorNoBinaryForGpu);
    EXPECT_NE(text.find("store_seven"), std::string::npos) << text;
    EXPECT_NE(text.find("gfx950"), std::string::npos) << text;
    EXPECT_NE(text.find("gfx942"), std::string::npos) << text;  // what the binary does have
  } else {
    GTEST_SKIP() << "run through CTest, which sets HK_EXPECT";
  }
}
