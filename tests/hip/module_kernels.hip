// Kernels loaded at run time by module_test through the module API (not linked into the test program).
#include <hip/hip_runtime.h>

extern "C" __global__ void scale_add(float* out, const float* in, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * in[i] + 1.0f;
}

// Arguments of several sizes and alignments, so that their kernarg offsets are not simply consecutive.
extern "C" __global__ void mixed_args(long long* out, char c, double d, short s, float f, long long big) {
  if (threadIdx.x == 0) {
    out[0] = c;
    out[1] = static_cast<long long>(d * 4);
    out[2] = s;
    out[3] = static_cast<long long>(f * 8);
    out[4] = big;
  }
}
