// 2-D and 3-D grids of 2-D and 3-D blocks: every work-item records its built-in indices, and the host checks
// every record against the position it was written to.
#include <vector>

#include "hip_check.h"

struct Ids {
  unsigned thread[3], block[3], block_dim[3], grid_dim[3];
};

__global__ void record_ids(Ids* out) {
  unsigned tx = threadIdx.x + blockIdx.x * blockDim.x;
  unsigned ty = threadIdx.y + blockIdx.y * blockDim.y;
  unsigned tz = threadIdx.z + blockIdx.z * blockDim.z;
  unsigned width = gridDim.x * blockDim.x, height = gridDim.y * blockDim.y;
  Ids& r = out[(tz * height + ty) * width + tx];
  r.thread[0] = threadIdx.x, r.thread[1] = threadIdx.y, r.thread[2] = threadIdx.z;
  r.block[0] = blockIdx.x, r.block[1] = blockIdx.y, r.block[2] = blockIdx.z;
  r.block_dim[0] = blockDim.x, r.block_dim[1] = blockDim.y, r.block_dim[2] = blockDim.z;
  r.grid_dim[0] = gridDim.x, r.grid_dim[1] = gridDim.y, r.grid_dim[2] = gridDim.z;
}

namespace {

void check(dim3 grid, dim3 block) {
  SCOPED_TRACE(testing::Message() << "grid (" << grid.x << "," << grid.y << "," << grid.z << ") block (" << block.x
                                  << "," << block.y << "," << block.z << ")");
  const unsigned w = grid.x * block.x, h = grid.y * block.y, d = grid.z * block.z;
  const size_t n = size_t(w) * h * d;
  std::vector<Ids> out(n);
  DeviceBuffer<Ids> dout(n);
  HIP_ASSERT(hipMemset(dout.ptr, 0xff, dout.bytes()));
  record_ids<<<grid, block>>>(dout.ptr);
  HIP_ASSERT(hipGetLastError());
  HIP_ASSERT(hipMemcpy(out.data(), dout.ptr, dout.bytes(), hipMemcpyDeviceToHost));
  for (unsigned z = 0; z < d; ++z)
    for (unsigned y = 0; y < h; ++y)
      for (unsigned x = 0; x < w; ++x) {
        const Ids& r = out[(size_t(z) * h + y) * w + x];
        const unsigned pos[3] = {x, y, z}, bdim[3] = {block.x, block.y, block.z}, gdim[3] = {grid.x, grid.y, grid.z};
        for (int k = 0; k < 3; ++k) {
          ASSERT_EQ(r.thread[k], pos[k] % bdim[k]) << "threadIdx[" << k << "] at (" << x << "," << y << "," << z << ")";
          ASSERT_EQ(r.block[k], pos[k] / bdim[k]) << "blockIdx[" << k << "] at (" << x << "," << y << "," << z << ")";
          ASSERT_EQ(r.block_dim[k], bdim[k]) << "blockDim[" << k << "] at (" << x << "," << y << "," << z << ")";
          ASSERT_EQ(r.grid_dim[k], gdim[k]) << "gridDim[" << k << "] at (" << x << "," << y << "," << z << ")";
        }
      }
}

}  // namespace

TEST(GridIndex, OneDimensional) { check(dim3(3), dim3(100)); }
TEST(GridIndex, TwoDimensional) { check(dim3(3, 2), dim3(16, 4)); }
TEST(GridIndex, TwoDimensionalOddBlock) { check(dim3(2, 3), dim3(5, 13)); }  // 65 work-items: a wave and one lane
TEST(GridIndex, ThreeDimensional) { check(dim3(2, 3, 2), dim3(4, 4, 4)); }
TEST(GridIndex, ThreeDimensionalTallBlock) { check(dim3(1, 2, 3), dim3(2, 3, 20)); }
