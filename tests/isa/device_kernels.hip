// Kernels run through vgpu's C++ API directly (no HIP runtime): the core's own test subjects.
#include <hip/hip_runtime.h>

extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// Tree reduction through LDS: log2(block) barriers, one partial sum per workgroup.
extern "C" __global__ void block_sum(const int* in, int* out, int n) {
  __shared__ int s[1024];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? in[i] : 0;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// Every work-item writes its coordinates: checks work-item ids, workgroup ids and the hidden size arguments.
extern "C" __global__ void coords(unsigned* out) {
  unsigned x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y,
           z = blockIdx.z * blockDim.z + threadIdx.z;
  unsigned w = gridDim.x * blockDim.x, h = gridDim.y * blockDim.y;
  out[(z * h + y) * w + x] = threadIdx.x | threadIdx.y << 8 | threadIdx.z << 16 | blockIdx.x << 24 | blockIdx.y << 27 |
                             blockIdx.z << 30;
}

extern "C" __global__ void store_at(int* p, long index) { p[index] = 1; }

// One wave writes and reads LDS at a lane stride: stride 1 is conflict-free, large power-of-two strides put every
// lane of a phase in one bank.
extern "C" __global__ void lds_stride(float* out, int stride) {
  __shared__ float s[64 * 64];
  int t = threadIdx.x;
  s[t * stride] = float(t);
  __syncthreads();
  out[t] = s[t * stride];
}

// Device globals reached through PC-relative addressing: a constant table, a counter, and a pointer in data that
// the loader relocates.
__constant__ float scale_table[4] = {0.5f, 2.f, -1.f, 8.f};
__device__ unsigned hit_count;
__device__ float bias = 0.25f;
__device__ float* bias_ptr = &bias;
extern "C" __global__ void use_globals(float* out) {
  int t = threadIdx.x;
  out[t] = float(t) * scale_table[t % 4] + *bias_ptr;
  atomicAdd(&hit_count, 1u);
}
