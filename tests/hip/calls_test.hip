// Device functions the compiler keeps out of line: kernels call them with s_swappc_b64 and they return with
// s_setpc_b64, passing arguments in registers and on the stack (scratch). vgpu decodes a code object's functions with
// each kernel, wherever they lie in .text (before or after it).
#include <vector>

#include "hip_check.h"

// Placed before the kernels in .text.
__device__ __noinline__ int mix(int x, int y) { return x * 31 + (y ^ 0x5a5a); }

struct Wide {
  float v[12];
};

// A struct by value and a result through memory: arguments beyond the registers go on the stack.
__device__ __noinline__ float weigh(Wide w, int k) {
  float s = 0.f;
  for (int i = 0; i < 12; ++i) s += w.v[(i + k) % 12] * float(i + 1);
  return s;
}

// Recursion: a call depth that depends on the lane (a dynamic stack).
__device__ __noinline__ int triangle(int n) { return n <= 0 ? 0 : n + triangle(n - 1); }

__device__ __noinline__ int later(int x);  // defined after the kernel

__global__ void calls(const int* in, int* out, float* wout) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int x = in[i];
  Wide w;
  for (int j = 0; j < 12; ++j) w.v[j] = float(x + j);
  out[3 * i] = mix(x, i);
  out[3 * i + 1] = later(x) + triangle(i % 23);
  out[3 * i + 2] = x & 1 ? mix(later(x), x) : -x;  // calls under divergent control flow
  wout[i] = weigh(w, i % 12);
}

__device__ __noinline__ int later(int x) { return mix(x, 7) - 3; }

TEST(Calls, OutOfLineDeviceFunctionsRecursionAndStackArguments) {
  constexpr int n = 256;
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = i * 7919 % 1000 - 300;
  int *din = nullptr, *dout = nullptr;
  float* dw = nullptr;
  HIP_ASSERT(hipMalloc(&din, n * sizeof(int)));
  HIP_ASSERT(hipMalloc(&dout, 3 * n * sizeof(int)));
  HIP_ASSERT(hipMalloc(&dw, n * sizeof(float)));
  HIP_ASSERT(hipMemcpy(din, in.data(), n * sizeof(int), hipMemcpyHostToDevice));
  hipLaunchKernelGGL(calls, dim3(n / 64), dim3(64), 0, 0, din, dout, dw);
  HIP_ASSERT(hipDeviceSynchronize());
  std::vector<int> out(3 * n);
  std::vector<float> wout(n);
  HIP_ASSERT(hipMemcpy(out.data(), dout, out.size() * sizeof(int), hipMemcpyDeviceToHost));
  HIP_ASSERT(hipMemcpy(wout.data(), dw, wout.size() * sizeof(float), hipMemcpyDeviceToHost));
  auto mix_ref = [](int x, int y) { return x * 31 + (y ^ 0x5a5a); };
  auto later_ref = [&](int x) { return mix_ref(x, 7) - 3; };
  for (int i = 0; i < n; ++i) {
    const int x = in[i], t = (i % 23) * (i % 23 + 1) / 2;
    EXPECT_EQ(out[3 * i], mix_ref(x, i)) << i;
    EXPECT_EQ(out[3 * i + 1], later_ref(x) + t) << i;
    EXPECT_EQ(out[3 * i + 2], x & 1 ? mix_ref(later_ref(x), x) : -x) << i;
    float s = 0.f;
    for (int j = 0; j < 12; ++j) s += float(x + (j + i % 12) % 12) * float(j + 1);
    EXPECT_EQ(wout[i], s) << i;
  }
  (void)hipFree(din);
  (void)hipFree(dout);
  (void)hipFree(dw);
}
