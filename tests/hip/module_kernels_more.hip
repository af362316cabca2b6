// A second source of module kernels: module_test links its assembly with module_kernels.hip's into one code object
// (module_linked.<arch>.hsaco), as Tensile links one assembled object per kernel, so that the code object carries one
// metadata note per input object and the kernels of the second note must be found too.
#include <hip/hip_runtime.h>

extern "C" __global__ void negate_sub(int* out, const int* in, int b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = b - in[i];
}
