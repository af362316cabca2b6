// Global -> shared without registers: buffer loads with the `lds` modifier ("LDS DMA"). Each instruction moves
// arch::current::lds_dma_bytes per lane (16 on gfx950, 4 on gfx942) into 64 consecutive slots at a wave-uniform LDS
// address, so the shared tile's swizzle is produced by choosing which global chunk each lane fetches. The loads fly
// while the wave goes on; wait_vmcnt<N>() (sync.h) waits until at most N of the wave's loads are outstanding.
#pragma once
#include "../types/gl.h"
#include "../types/st.h"
#include "scope.h"

namespace hk {

// Load instructions each wave of group G issues for one shared tile of type ST.
template <class G, shared_tile ST>
inline constexpr int async_loads = ST::rows * ST::cols * int(sizeof(typename ST::dtype)) /
                                   (arch::current::lds_dma_bytes * 64 * G::waves);

// True if `src` can feed load_async: rows start on DMA-unit boundaries and the columns are whole units (a unit that
// crossed the tensor's right edge could not be half zeroed), and the tensor is addressable by a buffer resource.
template <class GL>
__host__ __device__ inline bool async_loadable(const GL& src, int lds_dma_bytes) {
  using T = typename GL::dtype;
  const long unit = lds_dma_bytes / long(sizeof(T));
  const long bytes = ((long(src.rows()) - 1) * src.row_stride() + src.cols()) * long(sizeof(T));
  return src.cols() % unit == 0 && src.row_stride() % unit == 0 && reinterpret_cast<uintptr_t>(src.data) % lds_dma_bytes == 0 &&
         bytes < (1l << 31);
}

// Shared tile `dst` <- the tile at `at` of `src`, by the waves of group G; parts outside the tensor read as zero (the
// buffer's range check). `src` must satisfy async_loadable.
template <class G, shared_tile ST, class GL>
__device__ inline void load_async(ST& dst, const GL& src, coord at) {
  using T = typename ST::dtype;
  constexpr int unit = arch::current::lds_dma_bytes, per_inst = unit * 64;
  constexpr int row_bytes = ST::cols * int(sizeof(T)), total = ST::rows * row_bytes;
  static_assert(total % (per_inst * G::waves) == 0, "load_async: the tile must split evenly over the group's loads");
  static_assert(ST::chunk_bytes % unit == 0 || unit % ST::chunk_bytes == 0, "load_async: DMA unit and swizzle granule");
  const long rows = src.rows(), cols = src.cols(), ld = src.row_stride();
  T* base = src.at(at.b, at.d, 0, 0);
  const int num_records = int(((rows - 1) * ld + cols) * long(sizeof(T)));
  __amdgpu_buffer_rsrc_t rsrc = __builtin_amdgcn_make_buffer_rsrc(base, 0, num_records, 0x00020000);
  const int lane = lane_id(), wave = G::wave();
  const int r0 = at.r * ST::rows, c0 = at.c * ST::cols;
#pragma unroll
  for (int i = 0; i < async_loads<G, ST>; ++i) {
    const int inst = (i * G::waves + wave) * per_inst;  // this instruction's LDS bytes, the same for the whole wave
    // The lane's row: the instruction's first row plus the lane's row within it (none when a row spans more than one
    // instruction). With power-of-two rows the two share no set bit, so they are swizzled apart and only the lane's
    // part is vector work.
    const int r_inst = inst / row_bytes, lane_bytes = inst % row_bytes + unit * lane;
    const int r_lane = lane_bytes / row_bytes, r = r_inst + r_lane, within = lane_bytes % row_bytes;
    const int slot = within / ST::chunk_bytes, sub = within % ST::chunk_bytes;
    constexpr bool split = (row_bytes & (row_bytes - 1)) == 0;
    const int swz = split ? ST::swizzle(r_inst) ^ ST::swizzle(r_lane) : ST::swizzle(r);
    const int col = ((slot ^ swz) * ST::chunk_bytes + sub) / int(sizeof(T));
    const long gr = r0 + r, gc = c0 + col;
    const bool inside = gr < rows && gc < cols;
    const int offset = inside ? int((gr * ld + gc) * long(sizeof(T))) : num_records;  // past the range: zeros
    // An address-space cast (not a bit cast): the LDS offset of a generic pointer into shared memory.
    auto* lds = (__attribute__((address_space(3))) void*)(reinterpret_cast<char*>(dst.data) + inst);
    arch::current::lds_dma(rsrc, lds, offset);
  }
}

}  // namespace hk
