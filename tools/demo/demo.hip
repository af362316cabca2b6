// The main job's first form: ordinary HIP programs run on the virtual device, each result checked on the host,
// with what vgpu measured for every kernel. Built for gfx942 and gfx950; run once per arch (HK_VGPU_ARCH).
#include <hip/hip_runtime.h>

#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "vgpu/hip_ext.h"

#define CHECK_HIP(x)                                                                       \
  do {                                                                                     \
    hipError_t e_ = (x);                                                                   \
    if (e_ != hipSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, hipGetErrorString(e_)); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void block_sum(const float* in, float* out, int n) {
  __shared__ float s[256];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? in[i] : 0.f;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// 64x64 tile transpose through LDS, with and without a padding column: the padded layout is bank-conflict free.
template <int Pad>
__global__ void transpose(const float* in, float* out, int n) {
  __shared__ float tile[64][64 + Pad];
  int x = blockIdx.x * 64 + threadIdx.x, y0 = blockIdx.y * 64;
  for (int r = threadIdx.y; r < 64; r += blockDim.y) tile[r][threadIdx.x] = in[(y0 + r) * n + x];
  __syncthreads();
  int ox = blockIdx.y * 64 + threadIdx.x, oy0 = blockIdx.x * 64;
  for (int r = threadIdx.y; r < 64; r += blockDim.y) out[(oy0 + r) * n + ox] = tile[threadIdx.x][r];
}

__global__ void histogram(const unsigned* in, unsigned* bins, int n) {
  __shared__ unsigned local[64];
  if (threadIdx.x < 64) local[threadIdx.x] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) atomicAdd(&local[in[i] % 64], 1u);
  __syncthreads();
  if (threadIdx.x < 64) atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

namespace {

using LastDispatchFn = int (*)(vgpuDispatchInfo*);
LastDispatchFn last_dispatch = nullptr;  // present when the runtime is vgpu

int failures = 0;

void row(const char* name, bool ok, const std::string& detail) {
  vgpuDispatchInfo d{};
  std::printf("  %-20s", name);
  if (last_dispatch && last_dispatch(&d) == 0) {
    char grid[40], block[32];
    std::snprintf(grid, sizeof grid, "%ux%ux%u", d.grid[0], d.grid[1], d.grid[2]);
    std::snprintf(block, sizeof block, "%ux%ux%u", d.block[0], d.block[1], d.block[2]);
    std::printf(" %-7s %-10s %-9s %6llu %12llu %9.2f %12llu", d.arch, grid, block, d.waves, d.wave_instructions,
                d.wall_seconds * 1e3, d.lds_conflict_cycles);
  }
  std::printf("  %s%s\n", ok ? "ok" : "FAILED", detail.c_str());
  failures += !ok;
}

template <class T>
T* device_copy(const std::vector<T>& h) {
  T* d;
  CHECK_HIP(hipMalloc(&d, h.size() * sizeof(T)));
  CHECK_HIP(hipMemcpy(d, h.data(), h.size() * sizeof(T), hipMemcpyHostToDevice));
  return d;
}
template <class T>
std::vector<T> host_copy(const T* d, size_t n) {
  std::vector<T> h(n);
  CHECK_HIP(hipMemcpy(h.data(), d, n * sizeof(T), hipMemcpyDeviceToHost));
  return h;
}

}  // namespace

int main() {
  last_dispatch = reinterpret_cast<LastDispatchFn>(dlsym(RTLD_DEFAULT, "vgpuGetLastDispatch"));
  hipDeviceProp_t prop;
  CHECK_HIP(hipGetDeviceProperties(&prop, 0));
  std::printf("%s (%s), %d CUs, %zu KiB LDS per workgroup\n", prop.name, prop.gcnArchName, prop.multiProcessorCount,
              prop.sharedMemPerBlock / 1024);
  std::printf("  %-20s %-7s %-10s %-9s %6s %12s %9s %12s  %s\n", "kernel", "arch", "grid", "block", "waves",
              "instructions", "wall ms", "LDS conflict", "check");
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-1.f, 1.f);

  {  // vector add with a ragged tail
    const int n = 100003;
    std::vector<float> a(n), b(n);
    for (int i = 0; i < n; ++i) a[i] = u(rng), b[i] = u(rng);
    float *da = device_copy(a), *db = device_copy(b), *dc;
    CHECK_HIP(hipMalloc(&dc, n * sizeof(float)));
    vector_add<<<(n + 255) / 256, 256>>>(da, db, dc, n);
    CHECK_HIP(hipDeviceSynchronize());
    auto c = host_copy(dc, n);
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += c[i] != a[i] + b[i];
    row("vector_add", bad == 0, bad ? " (" + std::to_string(bad) + " wrong)" : "");
    CHECK_HIP(hipFree(da));
    CHECK_HIP(hipFree(db));
    CHECK_HIP(hipFree(dc));
  }
  {  // block sums through LDS with eight barriers
    const int n = 65536, groups = n / 256;
    std::vector<float> in(n);
    for (auto& x : in) x = float(int(rng() % 17) - 8);  // small integers: every order of summation is exact
    float *din = device_copy(in), *dout;
    CHECK_HIP(hipMalloc(&dout, groups * sizeof(float)));
    block_sum<<<groups, 256>>>(din, dout, n);
    CHECK_HIP(hipDeviceSynchronize());
    auto out = host_copy(dout, groups);
    int bad = 0;
    for (int g = 0; g < groups; ++g) {
      float s = 0;
      for (int i = 0; i < 256; ++i) s += in[g * 256 + i];
      bad += out[g] != s;
    }
    row("block_sum", bad == 0, "");
    CHECK_HIP(hipFree(din));
    CHECK_HIP(hipFree(dout));
  }
  {  // LDS transposes: the profile shows the padded tile is conflict free
    const int n = 256;
    std::vector<float> in(n * n);
    for (auto& x : in) x = u(rng);
    float *din = device_copy(in), *dout;
    CHECK_HIP(hipMalloc(&dout, n * n * sizeof(float)));
    auto check = [&](const char* name) {
      auto out = host_copy(dout, n * n);
      int bad = 0;
      for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x) bad += out[x * n + y] != in[y * n + x];
      row(name, bad == 0, "");
    };
    transpose<0><<<dim3(n / 64, n / 64), dim3(64, 4)>>>(din, dout, n);
    CHECK_HIP(hipDeviceSynchronize());
    check("transpose (64x64)");
    transpose<1><<<dim3(n / 64, n / 64), dim3(64, 4)>>>(din, dout, n);
    CHECK_HIP(hipDeviceSynchronize());
    check("transpose (64x65)");
    CHECK_HIP(hipFree(din));
    CHECK_HIP(hipFree(dout));
  }
  {  // LDS and global atomics
    const int n = 200000;
    std::vector<unsigned> in(n);
    for (auto& x : in) x = unsigned(rng());
    unsigned *din = device_copy(in), *dbins;
    CHECK_HIP(hipMalloc(&dbins, 64 * sizeof(unsigned)));
    CHECK_HIP(hipMemset(dbins, 0, 64 * sizeof(unsigned)));
    histogram<<<64, 256>>>(din, dbins, n);
    CHECK_HIP(hipDeviceSynchronize());
    auto bins = host_copy(dbins, 64);
    std::vector<unsigned> want(64, 0);
    for (unsigned x : in) want[x % 64]++;
    row("histogram", bins == want, "");
    CHECK_HIP(hipFree(din));
    CHECK_HIP(hipFree(dbins));
  }
  if (!last_dispatch) std::printf("(not running on vgpu: per-kernel measurements are vgpu's)\n");
  return failures ? 1 : 0;
}
