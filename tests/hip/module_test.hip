// The module API: code objects built by CMake (module_kernels.hip) are loaded from a file (an offload bundle
// holding both archs) and from memory (a plain code object of the device's arch), and their kernels launched
// with kernelParams and with the `extra` argument buffer.
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "hip_check.h"

#ifndef HK_MODULE_DIR
#error "HK_MODULE_DIR must name the directory of the module code objects"
#endif

namespace {

std::string module_path(const std::string& name) { return std::string(HK_MODULE_DIR) + "/" + name; }

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A target other than the test's (hk builds for two).
std::string other_arch() {
  for (const hk::arch::target& t : hk::arch::targets)
    if (&t != test_target()) return t.name;
  return "";
}

// Runs scale_add on n elements through `f` with the given argument form and checks the result.
void check_scale_add(hipFunction_t f, bool use_extra) {
  const int n = 777;
  const float a = 2.5f;
  std::vector<float> in(n), out(n, 0.0f);
  for (int i = 0; i < n; ++i) in[i] = float(i) - 100.0f;
  DeviceBuffer<float> din(n), dout(n);
  HIP_ASSERT(hipMemcpy(din.ptr, in.data(), din.bytes(), hipMemcpyHostToDevice));
  const unsigned block = 128, grid = (n + block - 1) / block;
  if (use_extra) {
    // The explicit arguments packed as the kernel's ABI lays them out (natural alignment).
    struct {
      float* out;
      const float* in;
      float a;
      int n;
    } packed{dout.ptr, din.ptr, a, n};
    size_t size = sizeof packed;
    void* extra[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, &packed, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     HIP_LAUNCH_PARAM_END};
    HIP_ASSERT(hipModuleLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, nullptr, nullptr, extra));
  } else {
    int count = n;
    float scale = a;
    void* params[] = {&dout.ptr, &din.ptr, &scale, &count};
    HIP_ASSERT(hipModuleLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, nullptr, params, nullptr));
  }
  HIP_ASSERT(hipMemcpy(out.data(), dout.ptr, dout.bytes(), hipMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], a * in[i] + 1.0f) << "element " << i;
}

}  // namespace

TEST(Module, LoadBundleFileAndLaunchWithKernelParams) {
  hipModule_t m = nullptr;
  HIP_ASSERT(hipModuleLoad(&m, module_path("module_kernels.co").c_str()));
  hipFunction_t f = nullptr;
  HIP_ASSERT(hipModuleGetFunction(&f, m, "scale_add"));
  check_scale_add(f, /*use_extra=*/false);
  HIP_ASSERT(hipModuleUnload(m));
}

TEST(Module, LoadDataCodeObjectAndLaunchWithExtra) {
  std::vector<char> image = read_file(module_path("module_kernels." + test_arch() + ".hsaco"));
  ASSERT_FALSE(image.empty());
  hipModule_t m = nullptr;
  HIP_ASSERT(hipModuleLoadData(&m, image.data()));
  hipFunction_t f = nullptr;
  HIP_ASSERT(hipModuleGetFunction(&f, m, "scale_add"));
  check_scale_add(f, /*use_extra=*/true);
  HIP_ASSERT(hipModuleUnload(m));
}

TEST(Module, LoadDataBundleFromMemory) {
  std::vector<char> image = read_file(module_path("module_kernels.co"));
  ASSERT_FALSE(image.empty());
  hipModule_t m = nullptr;
  HIP_ASSERT(hipModuleLoadDataEx(&m, image.data(), 0, nullptr, nullptr));
  image.assign(image.size(), 0);  // the module must not depend on the caller's buffer after loading
  hipFunction_t f = nullptr;
  HIP_ASSERT(hipModuleGetFunction(&f, m, "scale_add"));
  check_scale_add(f, /*use_extra=*/false);
  HIP_ASSERT(hipModuleUnload(m));
}

TEST(Module, ArgumentsOfMixedSizes) {
  hipModule_t m = nullptr;
  HIP_ASSERT(hipModuleLoad(&m, module_path("module_kernels.co").c_str()));
  hipFunction_t f = nullptr;
  HIP_ASSERT(hipModuleGetFunction(&f, m, "mixed_args"));
  DeviceBuffer<long long> out(5);
  char c = -7;
  double d = 10.25;
  short s = -1234;
  float x = 3.5f;
  long long big = 0x123456789abcLL;
  void* params[] = {&out.ptr, &c, &d, &s, &x, &big};
  HIP_ASSERT(hipModuleLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr));
  long long host[5] = {};
  HIP_ASSERT(hipMemcpy(host, out.ptr, sizeof host, hipMemcpyDeviceToHost));
  EXPECT_EQ(host[0], -7);
  EXPECT_EQ(host[1], 41);
  EXPECT_EQ(host[2], -1234);
  EXPECT_EQ(host[3], 28);
  EXPECT_EQ(host[4], 0x123456789abcLL);
  HIP_ASSERT(hipModuleUnload(m));
}

// A code object linked from two assembled objects carries two metadata notes (as Tensile's libraries in rocBLAS,
// one per kernel): the kernels of both are found and run.
TEST(Module, LinkedCodeObjectWithOneMetadataNotePerObject) {
  std::vector<char> image = read_file(module_path("module_linked." + test_arch() + ".hsaco"));
  ASSERT_FALSE(image.empty());
  hipModule_t m = nullptr;
  HIP_ASSERT(hipModuleLoadData(&m, image.data()));
  hipFunction_t f = nullptr;
  HIP_ASSERT(hipModuleGetFunction(&f, m, "scale_add"));
  check_scale_add(f, /*use_extra=*/true);
  hipFunction_t g = nullptr;
  HIP_ASSERT(hipModuleGetFunction(&g, m, "negate_sub"));
  const int n = 300;
  std::vector<int> in(n), out(n, 0);
  for (int i = 0; i < n; ++i) in[i] = 3 * i - 450;
  DeviceBuffer<int> din(n), dout(n);
  HIP_ASSERT(hipMemcpy(din.ptr, in.data(), din.bytes(), hipMemcpyHostToDevice));
  int b = 17, count = n;
  void* params[] = {&dout.ptr, &din.ptr, &b, &count};
  HIP_ASSERT(hipModuleLaunchKernel(g, (n + 63) / 64, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr));
  HIP_ASSERT(hipMemcpy(out.data(), dout.ptr, dout.bytes(), hipMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], b - in[i]) << "element " << i;
  HIP_ASSERT(hipModuleUnload(m));
}

TEST(Module, FunctionAttributes) {
  hipModule_t m = nullptr;
  HIP_ASSERT(hipModuleLoad(&m, module_path("module_kernels.co").c_str()));
  hipFunction_t f = nullptr;
  HIP_ASSERT(hipModuleGetFunction(&f, m, "scale_add"));
  int value = 0;
  HIP_ASSERT(hipFuncGetAttribute(&value, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
  EXPECT_GE(value, 256);
  HIP_ASSERT(hipFuncGetAttribute(&value, HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f));
  EXPECT_EQ(value, 0);
  HIP_ASSERT(hipFuncGetAttribute(&value, HIP_FUNC_ATTRIBUTE_NUM_REGS, f));
  EXPECT_GT(value, 0);
  HIP_ASSERT(hipModuleUnload(m));
}

TEST(Module, Errors) {
  hipModule_t m = nullptr;
  EXPECT_EQ(hipModuleLoad(&m, module_path("no_such_file.co").c_str()), hipErrorFileNotFound);
  const char garbage[64] = "this is not a code object";
  EXPECT_EQ(hipModuleLoadData(&m, garbage), hipErrorInvalidImage);
  EXPECT_EQ(hipModuleLoadData(nullptr, garbage), hipErrorInvalidValue);

  // A code object of the other arch cannot run here.
  std::vector<char> foreign = read_file(module_path("module_kernels." + other_arch() + ".hsaco"));
  ASSERT_FALSE(foreign.empty());
  EXPECT_EQ(hipModuleLoadData(&m, foreign.data()), hipErrorNoBinaryForGpu);
  EXPECT_NE(std::string(hipGetErrorString(hipErrorNoBinaryForGpu)).find(other_arch()), std::string::npos);

  HIP_ASSERT(hipModuleLoad(&m, module_path("module_kernels.co").c_str()));
  hipFunction_t f = nullptr;
  EXPECT_EQ(hipModuleGetFunction(&f, m, "no_such_kernel"), hipErrorNotFound);
  HIP_ASSERT(hipModuleGetFunction(&f, m, "scale_add"));
  DeviceBuffer<float> buf(64);
  int n = 64;
  float a = 1.0f;
  void* params[] = {&buf.ptr, &buf.ptr, &a, &n};
  size_t size = 0;
  void* extra[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, params, HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END};
  EXPECT_EQ(hipModuleLaunchKernel(nullptr, 1, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr),
            hipErrorInvalidResourceHandle);
  EXPECT_EQ(hipModuleLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, nullptr, params, extra), hipErrorInvalidValue);
  EXPECT_EQ(hipModuleLaunchKernel(f, 0, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr), hipErrorInvalidValue);
  EXPECT_EQ(hipModuleLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, nullptr, params, nullptr), hipErrorInvalidValue);
  EXPECT_EQ(hipModuleLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr), hipErrorInvalidValue);
  HIP_ASSERT(hipModuleUnload(m));
  EXPECT_EQ(hipModuleUnload(m), hipErrorInvalidResourceHandle);
  (void)hipGetLastError();
}
