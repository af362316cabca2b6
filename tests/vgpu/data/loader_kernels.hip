// Kernels whose code objects the loader test reads. Each one pins something the loader reports.
#include <hip/hip_runtime.h>

// Arguments of several sizes and alignments: by_value offsets 16 (float), 20 (char), 24 (double), 32 (int).
extern "C" __global__ void scale_add(float* out, const float* in, float a, char c, double d, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * a + c + float(d);
}

// A static __shared__ array of 1024 floats: group segment 4096 bytes in the metadata and the descriptor.
extern "C" __global__ void lds_reverse(float* out) {
  __shared__ float tile[1024];
  tile[threadIdx.x] = out[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
}

// A dynamically indexed private array that must live in scratch: private segment > 0.
extern "C" __global__ void scratch_lookup(int* out, int k) {
  volatile int buf[64];
  for (int i = 0; i < 64; ++i) buf[i] = i * k;
  out[threadIdx.x] = buf[(threadIdx.x * 7 + k) & 63];
}

// A mangled name and a struct passed by value.
struct Pair {
  int a;
  double b;
};
template <typename T>
__global__ void from_pair(T* out, Pair p) {
  out[threadIdx.x] = T(p.a + p.b);
}
template __global__ void from_pair<float>(float*, Pair);

// Code whose last instruction is a branch back to its s_endpgm (nothing after the asm is reachable, so the compiler
// ends the function there), followed in .text by a kernel with many registers: the decoder must stop at the
// kernel's symbol, not take the next kernel's code (and registers) for this one's.
extern "C" __global__ void ends_in_a_branch(int* out) {
  out[threadIdx.x] = 0;
  asm volatile("s_branch 2f\n1:\n  s_endpgm\n2:\n  v_mov_b32 v1, 0\n  s_branch 1b" ::: "v1");
  __builtin_unreachable();
}
extern "C" __global__ void __launch_bounds__(64) wide_registers(float* out) {
  asm volatile("v_mov_b32 v200, 0" ::: "v200");
  out[threadIdx.x] = 1.f;
}
