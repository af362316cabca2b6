// Proves the LD_LIBRARY_PATH arrangement: this program is linked against libamdhip64 the ordinary way (as against
// ROCm), yet at run time the HIP runtime that answers is vgpu's, loaded from the build tree.
#include <dlfcn.h>

#include <string>

#include "hip_check.h"

__global__ void write_marker(int* out) { out[threadIdx.x] = 1000 + threadIdx.x; }

TEST(RuntimePath, TheLoadedRuntimeIsVgpu) {
  hipDeviceProp_t props;
  HIP_ASSERT(hipGetDeviceProperties(&props, 0));
  EXPECT_EQ(std::string(props.name).rfind("vgpu", 0), 0u) << "device name " << props.name;
}

TEST(RuntimePath, TheLibraryComesFromTheBuildTree) {
  hipError_t (*runtime_function)(int*) = hipGetDeviceCount;  // resolved through the dynamic linker
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(runtime_function), &info), 0);
  ASSERT_NE(info.dli_fname, nullptr);
  std::string path = info.dli_fname;
  EXPECT_NE(path.find("libamdhip64.so.6"), std::string::npos) << path;
#ifdef HK_VGPU_HIP_DIR
  EXPECT_EQ(path.rfind(HK_VGPU_HIP_DIR, 0), 0u) << path << " is not under " << HK_VGPU_HIP_DIR;
#endif
}

TEST(RuntimePath, AKernelRunsOnTheVirtualDevice) {
  DeviceBuffer<int> d(64);
  write_marker<<<1, 64>>>(d.ptr);
  HIP_ASSERT(hipGetLastError());
  int host[64];
  HIP_ASSERT(hipMemcpy(host, d.ptr, sizeof host, hipMemcpyDeviceToHost));
  for (int i = 0; i < 64; ++i) ASSERT_EQ(host[i], 1000 + i);
}
