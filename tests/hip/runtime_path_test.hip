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

// vgpu's extension, looked up the way a program that may also run on ROCm would.
TEST(RuntimePath, LastDispatchIsReported) {
  struct Info {  // vgpuDispatchInfo (vgpu/include/vgpu/hip_ext.h)
    char kernel[256];
    char arch[16];
    unsigned grid[3];
    unsigned block[3];
    unsigned long long waves, wave_instructions, lds_accesses, lds_conflict_cycles;
    double wall_seconds;
    int profiled;
  };
  using LastDispatch = int (*)(Info*);
  auto last = reinterpret_cast<LastDispatch>(dlsym(RTLD_DEFAULT, "vgpuGetLastDispatch"));
  ASSERT_NE(last, nullptr);
  DeviceBuffer<int> d(256);
  write_marker<<<dim3(2, 1, 1), dim3(128, 1, 1)>>>(d.ptr);
  HIP_ASSERT(hipGetLastError());
  Info info{};
  ASSERT_EQ(last(&info), 0);
  EXPECT_NE(std::string(info.kernel).find("write_marker"), std::string::npos) << info.kernel;
  EXPECT_EQ(std::string(info.arch), test_arch());
  EXPECT_EQ(info.grid[0], 2u);
  EXPECT_EQ(info.block[0], 128u);
  EXPECT_EQ(info.waves, 4u);
  EXPECT_GT(info.wave_instructions, 0u);
}
