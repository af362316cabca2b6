// A second source file: a program linked from both has two offload bundles in its .hip_fatbin section.
#include <hip/hip_runtime.h>

extern "C" __global__ void other_fill(int* out, int value) { out[blockIdx.x * blockDim.x + threadIdx.x] = value; }
