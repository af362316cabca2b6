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

namespace detail {

// `x` as a wave-uniform value the optimizer cannot see through (an empty asm on an SGPR). It is read from the first
// lane into the asm: a no-op where `x` already sits in an SGPR (the optimizer drops it), and where it does not (-O0,
// whose values come back from the stack per lane, or a kernel at its register limit that keeps it in a VGPR) the
// asm's SGPR operand would otherwise need a VGPR-to-SGPR copy, which the backend cannot emit ("illegal VGPR to SGPR
// copy").
__device__ inline int opaque_uniform(int x) {
  int r;
  asm("" : "=s"(r) : "0"(__builtin_amdgcn_readfirstlane(x)));
  return r;
}

// Where the data of load i of group wave `wave` comes from, for the lane whose slot starts at byte `lane_bytes` of
// the instruction: the instruction's first row of the tile (uniform), the lane's row below it, and the byte within
// the tile's row. Each instruction fills per_inst consecutive bytes of the swizzled image, so the lane's bytes hold
// chunk slot ^ swizzle(row) of its row.
struct async_source {
  int r_inst, r_lane, col_bytes;
};
template <class G, shared_tile ST>
__device__ inline async_source async_source_of(int i, int wave, int lane_bytes) {
  constexpr int per_inst = arch::current::lds_dma_bytes * 64, chunk = ST::chunk_bytes;
  constexpr int row_bytes = ST::cols * int(sizeof(typename ST::dtype));
  // Unsigned: the divisions by constants become shifts where the row is a power of two.
  const unsigned inst = unsigned(i * G::waves + wave) * per_inst;
  const unsigned r_inst = inst / row_bytes, bytes = inst % row_bytes + unsigned(lane_bytes);
  const unsigned r_lane = bytes / row_bytes, within = bytes % row_bytes;
  return {int(r_inst), int(r_lane), int(within / chunk ^ ST::swizzle(int(r_inst + r_lane))) * chunk + int(within % chunk)};
}

}  // namespace detail

// The wave's index within group G, read into a scalar register. It is the same for the whole wave, but the compiler
// cannot know that from threadIdx; as a scalar, every LDS address and row offset of load_async is scalar work, and a
// loop that reads it once, ahead of its loads, keeps their per-lane part in registers across the iterations.
template <class G>
struct async_wave {
  int index = __builtin_amdgcn_readfirstlane(G::wave());
};

// Whether the tile `ST` at `at` of `src` lies wholly inside the tensor: load_async's common path, which
// load_async_inside takes without a test.
template <shared_tile ST, class GL>
__device__ inline bool async_inside(const GL& src, coord at) {
  return at.r * ST::rows + ST::rows <= src.rows() && at.c * ST::cols + ST::cols <= src.cols();
}

namespace detail {

// The loads of shared tile `dst` <- the tile at `at` of `src`, whose buffer range is `num_records` bytes (both
// load_async_inside's straight-line body): loads [first, first + count) of the tile's (count -1: all of them).
//
// Every load's LDS address (M0) and the row part of its global offset (soffset) are wave-uniform, computed in SGPRs
// from the wave's index; only the lane's part of the offset is vector work. The tile's origin rides in soffset, so
// the lane parts do not change from one tile to the next (a K loop keeps them in registers).
template <class G, int first = 0, int count = -1, shared_tile ST, class GL>
__device__ inline void load_async_rows(ST& dst, const GL& src, coord at, async_wave<G> wave, int num_records) {
  using T = typename ST::dtype;
  const long ld = src.row_stride();
  const __amdgpu_buffer_rsrc_t rsrc = arch::current::buffer_rsrc(src.at(at.b, at.d, 0, 0), num_records);
  const int r0 = at.r * ST::rows, c0 = at.c * ST::cols;
  const int ld_bytes = int(ld * long(sizeof(T))), origin = int((r0 * ld + c0) * long(sizeof(T)));
  constexpr int unit = arch::current::lds_dma_bytes, per_inst = unit * 64, waves = G::waves, chunk = ST::chunk_bytes;
  constexpr int row_bytes = ST::cols * int(sizeof(T)), total = ST::rows * row_bytes;
  static_assert(total % (per_inst * waves) == 0, "load_async: the tile must split evenly over the group's loads");
  static_assert(chunk % unit == 0 || unit % chunk == 0, "load_async: DMA unit and swizzle granule");
  constexpr int end = count < 0 ? async_loads<G, ST> : first + count;
  static_assert(first >= 0 && end <= async_loads<G, ST>, "load_async: loads past the tile's");
  // An address-space cast (not a bit cast): the LDS offset of a generic pointer into shared memory.
  auto lds = [&](int i) __attribute__((always_inline)) {
    return (__attribute__((address_space(3))) void*)(reinterpret_cast<char*>(dst.data) + (i * waves + wave.index) * per_inst);
  };
  constexpr auto pow2 = [](int x) { return (x & (x - 1)) == 0; };
  if constexpr (pow2(row_bytes) && pow2(waves)) {
    // Tile byte p of load i is inst_i + wave_w + lane_l, three parts with no set bit in common (all powers of two),
    // and the row, the slot and the swizzle are all linear in p's bits: each part's share is separate. Load i's own
    // share is a constant, the wave's is scalar, and the lane's vector part is one register for every load whose
    // constant leaves the slot alone.
    const int lane_bytes = unit * lane_id(), wave_bytes = wave.index * per_inst;
    const int r_lane = lane_bytes / row_bytes, r_wave = wave_bytes / row_bytes;
    const int lane_slot = (lane_bytes % row_bytes / chunk ^ ST::swizzle(r_lane)) ^
                          (wave_bytes % row_bytes / chunk ^ ST::swizzle(r_wave));
    const int lane_part = r_lane * ld_bytes + lane_bytes % chunk;
    // The rows advance by a constant from one load to the next: a running sum, at most one scalar add per load.
    // (The empty asms make each sum opaque; the compiler would otherwise rebuild every offset from its factors.)
    constexpr auto inst_row = [](int i) { return i * waves * per_inst / row_bytes; };
    int uniform_offset = origin + (r_wave + inst_row(first)) * ld_bytes;
#pragma unroll
    for (int i = first; i < end; ++i) {
      const int inst_bytes = i * waves * per_inst;
      const int inst_slot = inst_bytes % row_bytes / chunk ^ ST::swizzle(inst_row(i));
      const int this_offset = uniform_offset;
      if (inst_row(i + 1) != inst_row(i)) {
        uniform_offset = opaque_uniform(uniform_offset + (inst_row(i + 1) - inst_row(i)) * ld_bytes);
      }
      arch::current::lds_dma(rsrc, lds(i), lane_part + (lane_slot ^ inst_slot) * chunk, this_offset);
    }
  } else {
    const int lane_bytes = unit * lane_id();
#pragma unroll
    for (int i = first; i < end; ++i) {
      const auto s = async_source_of<G, ST>(i, wave.index, lane_bytes);
      arch::current::lds_dma(rsrc, lds(i), s.r_lane * ld_bytes + s.col_bytes, origin + s.r_inst * ld_bytes);
    }
  }
}

}  // namespace detail

// Shared tile `dst` <- the tile at `at` of `src`, by the waves of group G, for a tile inside the tensor
// (async_inside): straight-line code without a branch, which a caller can interleave with other work (a K loop's
// MFMAs). `src` must satisfy async_loadable.
template <class G, shared_tile ST, class GL>
__device__ inline void load_async_inside(ST& dst, const GL& src, coord at, async_wave<G> wave) {
  using T = typename ST::dtype;
  const long rows = src.rows(), cols = src.cols(), ld = src.row_stride();
  detail::load_async_rows<G>(dst, src, at, wave, int(((rows - 1) * ld + cols) * long(sizeof(T))));
}

// load_async_inside for a loop's loads past its last step, with no branch: with `active` false the tile reads as zero,
// with no memory access (an empty buffer range). (The range read from the first lane: a loop's flag is often a lane
// mask to LLVM, and a resource built from it would take a loop over the lanes' values.) Rows past the tensor's end
// read as zero too, by GFX9's range check of the offsets' sum (arch::gfx9::lds_dma), where the tile's columns lie
// inside the tensor. load_async_inside_part: only its loads [first, first + count) of async_loads<G, ST> (count -1:
// the rest), so that a loop body can spread a tile's loads over the gaps between its MFMAs.
template <class G, int first, int count, shared_tile ST, class GL>
__device__ inline void load_async_inside_part(ST& dst, const GL& src, coord at, async_wave<G> wave, bool active) {
  using T = typename ST::dtype;
  const long rows = src.rows(), cols = src.cols(), ld = src.row_stride();
  detail::load_async_rows<G, first, count>(
      dst, src, at, wave, __builtin_amdgcn_readfirstlane(active ? int(((rows - 1) * ld + cols) * long(sizeof(T))) : 0));
}
template <class G, shared_tile ST, class GL>
__device__ inline void load_async_inside(ST& dst, const GL& src, coord at, async_wave<G> wave, bool active) {
  load_async_inside_part<G, 0, -1>(dst, src, at, wave, active);
}

// Shared tile `dst` <- the tile at `at` of `src`, by the waves of group G; parts outside the tensor read as zero (the
// buffer's range check). `src` must satisfy async_loadable. A tile inside the tensor (the common case) takes
// load_async_inside, with no per-lane test; an edge tile takes the checked path: a lane outside the tensor gets an
// offset past the buffer's range, which reads zeros.
template <class G, shared_tile ST, class GL>
__device__ inline void load_async(ST& dst, const GL& src, coord at, async_wave<G> wave) {
  if (async_inside<ST>(src, at)) return load_async_inside<G>(dst, src, at, wave);
  using T = typename ST::dtype;
  constexpr int unit = arch::current::lds_dma_bytes, per_inst = unit * 64, waves = G::waves;
  const long rows = src.rows(), cols = src.cols(), ld = src.row_stride();
  T* base = src.at(at.b, at.d, 0, 0);
  const int num_records = int(((rows - 1) * ld + cols) * long(sizeof(T)));
  __amdgpu_buffer_rsrc_t rsrc = arch::current::buffer_rsrc(base, num_records);
  const int r0 = at.r * ST::rows, c0 = at.c * ST::cols;
  auto lds = [&](int i) __attribute__((always_inline)) {
    return (__attribute__((address_space(3))) void*)(reinterpret_cast<char*>(dst.data) + (i * waves + wave.index) * per_inst);
  };
  // The lane index passes through an empty asm: nothing here is computed ahead of a loop around the call, so the
  // edge path holds no registers while the common path runs.
  int lane = lane_id();
  asm volatile("" : "+v"(lane));
  lane &= 63;  // (it is, but the compiler no longer sees it)
#pragma unroll
  for (int i = 0; i < async_loads<G, ST>; ++i) {
    const auto s = detail::async_source_of<G, ST>(i, wave.index, unit * lane);
    const long gr = r0 + s.r_inst + s.r_lane, gc = c0 + s.col_bytes / int(sizeof(T));
    const bool inside = gr < rows && gc < cols;
    arch::current::lds_dma(rsrc, lds(i), inside ? int((gr * ld + gc) * long(sizeof(T))) : num_records);  // past the range: zeros
  }
}

template <class G, shared_tile ST, class GL>
__device__ inline void load_async(ST& dst, const GL& src, coord at) {
  load_async<G>(dst, src, at, async_wave<G>{});
}

}  // namespace hk
