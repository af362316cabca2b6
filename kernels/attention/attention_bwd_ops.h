// The backward's product patterns (attention_bwd.h): a staged tile times a wave's registers, and a staged tile used
// transposed times an accumulator in acc order (ops/acc_order.h); and the exchange of an acc-order operand between
// the two waves of a pair through the LDS.
#pragma once
#include "attention_common.h"

namespace hk::kernels {

// A B^T, A a tile of the LDS read in row layout and B a register tile: S = Q K^T and dP = dO V^T (kernel 2), S^T =
// K Q^T and dP^T = V dO^T (kernel 3). `streamed`: A is read one k step (the MFMA's K columns) at a time, each used as
// it lands, so that no more of A is held than the reads in flight (kernel 3, whose 32-query waves need the registers,
// but in its plain kernel at D = 64: MI355X GQA N4096 dQ 6.22 -> 6.02 ms read whole;
// kernel 2's schedule is slower so: 118 against 75 ms on MI355X at GQA D128 N8192). Every element sums its k steps in
// the same order either way.
// `init` sets the accumulator the products add to (zero; dP's minus delta: attn_bwd_init).
// (R, r: rows r R .. r R + R - 1 of A only, R = 0 meaning all: kernel 3's key chunks at D = 128 on gfx950.)
struct attn_bwd_zero {
  template <class D>
  __device__ __attribute__((always_inline)) void operator()(D& d) const { zero(d); }
};
// (`ahead`, streamed: k step k + 1's read issued before k step k's MFMAs, two k steps' registers held.)
template <bool streamed = false, int R = 0, int r = 0, bool ahead = false, shared_tile ST, register_tile B,
          class Init = attn_bwd_zero>
__device__ inline rt_acc<(R ? R : ST::rows), B::rows> mma_ABt_lds(const ST& a, const B& b, Init init = {}) {
  using T = typename ST::dtype;
  constexpr int rows = R ? R : ST::rows;
  static_assert(ST::rows % rows == 0, "mma_ABt_lds: whole row chunks");
  rt_acc<rows, B::rows> d;
  init(d);
  if constexpr (streamed) {
    rt<T, rows, B::base_cols> ar[ahead ? 2 : 1];
    if constexpr (ahead) load(ar[0], a, {0, 0, r, 0});
#pragma unroll
    for (int k = 0; k < B::tiles_c; ++k) {
      if constexpr (ahead) {
        if (k + 1 < B::tiles_c) load(ar[(k + 1) % 2], a, {0, 0, r, k + 1});
      } else {
        load(ar[0], a, {0, 0, r, k});
      }
      rt<T, B::rows, B::base_cols> bk;  // B's k step: the same registers
#pragma unroll
      for (int j = 0; j < B::tiles_r; ++j)
#pragma unroll
        for (int e = 0; e < B::E; ++e) bk.data[j][0][e] = b.data[j][k][e];
      mma_ABt(d, ar[ahead ? k % 2 : 0], bk, d);
    }
  } else {
    rt<T, rows, ST::cols> ar;
    load(ar, a, {0, 0, r, 0});
    mma_ABt(d, ar, b, d);
  }
  return d;
}

// acc += X^T S, X a tile of the LDS (K rows of D) read in acc order and used transposed (the same registers), S an
// accumulator over the same K rows whose registers are the B operand as they stand: dV^T += dO^T P and dK^T += Q^T
// dS (kernel 2), dQ^T += K^T dS^T (kernel 3).
// (mma_AtB_col: with S already in the operand's form, acc order.)
// (`r`: X is rows r K .. r K + K - 1 of the staged tile: kernel 3's key chunks.)
template <int r = 0, int D, int N, int K, shared_tile ST>
__device__ inline void mma_AtB_col(rt_acc<D, N>& acc, const ST& x, const rt<typename ST::dtype, K, N, layout::col>& b) {
  using T = typename ST::dtype;
  static_assert(ST::rows % K == 0 && ST::cols == D, "mma_AtB_acc: X is K x D (of a tile of whole K-row chunks)");
  rt<T, K, D, layout::col> xc;
  load_acc_order(xc, x, {0, 0, r, 0});
  rt<T, D, K, layout::row> xt;
  transpose(xt, xc);
  mma_AB(acc, xt, b, acc);
}
template <int r = 0, int D, int N, int K, shared_tile ST>
__device__ inline void mma_AtB_acc(rt_acc<D, N>& acc, const ST& x, const rt_acc<K, N>& s) {
  rt<typename ST::dtype, K, N, layout::col> b;
  copy_acc_order(b, s);
  mma_AtB_col<r>(acc, x, b);
}

// mma_AtB_acc in chunks of C of X's columns (C of acc's rows) at a time: one chunk's acc-order reads held at once, not
// all of X's (wide heads without transposing LDS reads, whose reads hold an element a register before packing).
template <int C, int D, int N, int K, shared_tile ST>
__device__ inline void mma_AtB_acc_chunks(rt_acc<D, N>& acc, const ST& x, const rt_acc<K, N>& s) {
  using T = typename ST::dtype;
  using Part = rt_acc<C, N>;
  static_assert(D % C == 0 && ST::rows == K && ST::cols == D, "mma_AtB_acc_chunks: X is K x D, in chunks of C");
  rt<T, K, N, layout::col> b;
  copy_acc_order(b, s);
#pragma unroll
  for (int c = 0; c < D / C; ++c) {
    rt<T, K, C, layout::col> xc;
    load_acc_order(xc, x, {0, 0, 0, c});
    rt<T, C, K, layout::row> xt;
    transpose(xt, xc);
    Part part;  // acc's rows c C .. (c + 1) C - 1: its row tiles, the same registers
#pragma unroll
    for (int i = 0; i < Part::tiles_r; ++i)
      for (int j = 0; j < Part::tiles_c; ++j)
        for (int e = 0; e < Part::E; ++e) part.data[i][j][e] = acc.data[c * Part::tiles_r + i][j][e];
    mma_AB(part, xt, b, part);
#pragma unroll
    for (int i = 0; i < Part::tiles_r; ++i)
      for (int j = 0; j < Part::tiles_c; ++j)
        for (int e = 0; e < Part::E; ++e) acc.data[c * Part::tiles_r + i][j][e] = part.data[i][j][e];
  }
}

// Kernel 3's reads of its staged K and V on gfx942 at D = 128 (`st_lane`), their addresses made at each use from two
// lane values per layout, not held. A lane's element (r_c + r_l, c_c + c_l) of a swizzled st (r_c, r_l sharing no set
// bit, nor the chunk parts of c_c and c_l) sits at byte 2 (r_c C) + b + (x ^ K) where b holds the lane's rows and its
// column within the chunk, x the lane's chunk and swizzle (swizzle(r_l) ^ c_l's chunk, in bytes) and K the constant
// chunk (swizzle(r_c) ^ c_c's chunk): the XOR is linear in the row's bits. Split at the bits x can have, the K part
// above them is an addition the reads' offset field takes, and what is left is one v_xad_u32 per distinct low part
// (one a 16-column k step of the row reads, whose 4 row tiles pair into ds_read2st64_b64; 16 for the 64 x 128
// acc-order tile), made in the step from x passed through an empty asm (else the compiler hoists every address out of
// the loop: kernel 3's two stages of row and acc-order reads held 96 address VGPRs there, 251 VGPRs in all, and with
// them it read each k step into the same registers and waited for it before its MFMAs; 197 now).
struct st_lane {
  int x, b;  // bytes: the lane's chunk XOR; its rows and column within the chunk
};
namespace st_lane_detail {
// The bits a lane's chunk XOR can take, and the part of a constant chunk above them (an addition).
template <class ST, class F>
constexpr int lane_chunk_cover(F lane_chunk) {
  int any = 0;
  for (int lane = 0; lane < 64; ++lane) any |= lane_chunk(lane);
  int cover = 0;
  while (cover < any) cover = cover * 2 + 1;
  return cover;
}
template <class ST>
constexpr int row_lane_chunk(int lane) { return (lane / 16) ^ ST::swizzle(lane % 16); }
template <class ST>
constexpr int acc_lane_chunk(int lane) { return (lane % 16 / 4) ^ ST::swizzle(4 * (lane / 16)); }
// Byte offset of a read: the lane's parts (x laundered by the caller) and the constant chunk k and rows r.
template <class ST, int cover>
__device__ __attribute__((always_inline)) inline int st_lane_at(const st_lane& l, int k, int r) {
  constexpr int cb = ST::chunk_bytes;
  return l.b + ((l.x ^ ((k & cover) * cb)) + ((k & ~cover) * cb + r * ST::cols * int(sizeof(typename ST::dtype))));
}
}  // namespace st_lane_detail

// The lane parts of the row layout (16x16 family: lane row lane % 16, columns 4 (lane / 16) .. + 3 of each 16) and of
// the acc-order col layout (rows 4 (lane / 16) .. + 3, column lane % 16) of an st with 4-element chunks (gfx942).
template <class ST>
__device__ inline st_lane st_row_lane() {
  static_assert(ST::chunk_elems == 4, "st_row_lane: 4-element chunks (gfx942)");
  const int lane = lane_id();
  return {st_lane_detail::row_lane_chunk<ST>(lane) * ST::chunk_bytes, lane % 16 * ST::cols * int(sizeof(typename ST::dtype))};
}
template <class ST>
__device__ inline st_lane st_acc_lane() {
  static_assert(ST::chunk_elems == 4, "st_acc_lane: 4-element chunks (gfx942)");
  const int lane = lane_id();
  return {st_lane_detail::acc_lane_chunk<ST>(lane) * ST::chunk_bytes,
          (4 * (lane / 16) * ST::cols + lane % 4) * int(sizeof(typename ST::dtype))};
}

// mma_ABt_lds (streamed: one k step of A at a time) with st_lane addresses: S^T = K Q^T and dP^T = V dO^T. The read
// of k step k + ahead goes before k step k's MFMAs, pinned there by scheduling barriers (left alone, the scheduler
// reads each k step into the same registers and waits for it before its MFMAs, whatever the source's order).
// (RC, rc: rows rc RC .. rc RC + RC - 1 of A only, RC = 0 meaning all: the key chunks at 32 queries a wave.)
template <int ahead = 0, int RC = 0, int rc = 0, class T, int R, int C, register_tile B, class Init = attn_bwd_zero>
__device__ inline rt_acc<(RC ? RC : R), B::rows> mma_ABt_lds(const st<T, R, C>& a, const B& b, st_lane lane, Init init = {}) {
  using ST = st<T, R, C>;
  constexpr int rows = RC ? RC : R, r0 = rc * rows / 16;  // (r0: the chunk's first row tile)
  static_assert(R % rows == 0, "mma_ABt_lds(st_lane): whole row chunks");
  using A = rt<T, rows, B::base_cols>;
  static_assert(A::dim == 16 && A::E == 4 && B::base_cols == 16, "mma_ABt_lds(st_lane): the 16x16 family");
  constexpr int cover = ST::slot_mask;  // (k's every bit in the XOR: the reads' tile rows pair into ds_read2st64_b64)
  asm volatile("" : "+v"(lane.x));
  const char* bytes = reinterpret_cast<const char*>(a.data);
  rt_acc<rows, B::rows> d;
  init(d);
  auto read = [&](A& ar, int k) __attribute__((always_inline)) {
#pragma unroll
    for (int i = 0; i < A::tiles_r; ++i) {
      const int at = st_lane_detail::st_lane_at<ST, cover>(lane, (4 * k) ^ ST::swizzle(16 * (r0 + i)), 16 * (r0 + i));
      const auto c = *reinterpret_cast<const detail::chunk<T, 4>*>(bytes + at);
#pragma unroll
      for (int e = 0; e < 4; ++e) ar.data[i][0][e] = c.v[e];
    }
  };
  constexpr int n = ahead + 1;
  A ar[n];
#pragma unroll
  for (int k = 0; k < ahead && k < B::tiles_c; ++k) read(ar[k], k);
#pragma unroll
  for (int k = 0; k < B::tiles_c; ++k) {
    if (k + ahead < B::tiles_c) read(ar[(k + ahead) % n], k + ahead);
    if constexpr (ahead > 0) sched_barrier<sched::valu | sched::salu>();
    rt<T, B::rows, B::base_cols> bk;  // B's k step: the same registers
#pragma unroll
    for (int j = 0; j < B::tiles_r; ++j)
#pragma unroll
      for (int e = 0; e < B::E; ++e) bk.data[j][0][e] = b.data[j][k][e];
    mma_ABt(d, ar[k % n], bk, d);
    if constexpr (ahead > 0) sched_barrier<sched::valu | sched::salu>();
  }
  return d;
}

// mma_AtB_acc with st_lane addresses: dQ^T += K^T dS^T, K's acc-order operand an element a read (ds_read_u16).
// (r: X is rows r K .. r K + K - 1 of the staged tile: the key chunks at 32 queries a wave.)
template <int r = 0, int D, int N, int K, class T, int KS>
__device__ inline void mma_AtB_acc(rt_acc<D, N>& acc, const st<T, KS, D>& x, const rt_acc<K, N>& s, st_lane lane) {
  using ST = st<T, KS, D>;
  static_assert(KS % K == 0, "mma_AtB_acc(st_lane): whole row chunks");
  constexpr int r0 = r * K / 16;  // (the chunk's first row tile)
  using XC = rt<T, K, D, layout::col>;
  static_assert(XC::dim == 16 && XC::E == 4, "mma_AtB_acc(st_lane): the 16x16 family");
  constexpr int cover = st_lane_detail::lane_chunk_cover<ST>(st_lane_detail::acc_lane_chunk<ST>);
  asm volatile("" : "+v"(lane.x));
  const char* bytes = reinterpret_cast<const char*>(x.data);
  rt<T, K, N, layout::col> b;
  copy_acc_order(b, s);
  XC xc;
#pragma unroll
  for (int i = 0; i < XC::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < XC::tiles_c; ++j)
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const int at = st_lane_detail::st_lane_at<ST, cover>(lane, (4 * j) ^ ST::swizzle(16 * (r0 + i)) ^ ST::swizzle(t),
                                                             16 * (r0 + i) + t);
        xc.data[i][j][t] = *reinterpret_cast<const T*>(bytes + at);
      }
  rt<T, D, K, layout::row> xt;
  transpose(xt, xc);
  mma_AB(acc, xt, b, acc);
}

// Kernel 2's staged Q and dO tiles where the LDS has no transposing reads (gfx942): R x C (queries x D) in granules of
// 4 rows x 4 columns, 32 bytes, row-major within: the 8 bytes of row r, columns 4 gc .. 4 gc + 3 at byte (h gcols + g)
// 32 + ((r / 2 % 2) ^ (g / 4 % 2)) 16 + (r % 2) 8, h = r / 4, g = gc ^ (h % 4) (the swizzle below). The row-layout A
// operand of S = Q K^T and dP = dO V^T reads a row's 4 columns with one ds_read_b64 as before; the acc-order operand of
// dV^T += dO^T P and dK^T += Q^T dS, which needs 4 rows of one column per lane (an element a read in a row-major tile:
// 64 ds_read_u16 a step at 16 queries, their addresses and 32 v_perm), reads a whole granule with two ds_read_b128 and
// serves 4 MFMAs from it, one per column t of the granule: in the MFMA of column t, lane m's row is D column 4 m + t
// (of a block of 64), so the accumulators hold their D rows in that order (acc block 4 J + t, lane row m: D row 64 J +
// 4 m + t) and store_g4 writes them back in order. Swizzle: the granule slot of (h = r / 4, gc) is gc ^ (h % 4), its
// row pairs swapped where bit 2 of gc is set: both reads then touch every bank once per phase (16 lanes of ds_read_b64,
// 8 of ds_read_b128). Filled by LDS DMA like a row-major tile: a lane picks the global dword its LDS slot holds
// (load_async_g4); rows past the tensor read zeros (the buffer range).
template <class T, int R, int C>
struct st_g4 {
  using dtype = T;
  static constexpr int rows = R, cols = C, gcols = C / 4;
  static_assert(sizeof(T) == 2 && R % 16 == 0 && C % 64 == 0, "st_g4: 16-bit, 16-row tiles of 64-column blocks");
  __attribute__((aligned(16))) T data[R * C];
};

// dst <- the R-row tile `tile_r` of src by the waves of G (each LDS DMA instruction: 256 consecutive bytes). With
// `one_m0` (gfx942's dK/dV kernels at D = 128), one M0 a tile: load i of a wave writes at the wave's
// base plus i G::waves 256 bytes, the instruction's offset field, which the hardware adds to the global offset too;
// the lane's offset (loop-invariant registers, one a load) takes it back off, with the load's rows, so that the tile's
// origin is the one scalar (soffset) that changes from tile to tile. (Not at D = 64, whose dK/dV it made slower:
// MI300X GQA D64 N4096 20.47 -> 21.18 ms.)
template <bool one_m0 = false, class G, class T, int R, int C, class GL>
__device__ inline void load_async_g4(st_g4<T, R, C>& dst, const GL& src, int tile_r, async_wave<G> wave) {
  constexpr int per_inst = 64 * 4, span = C * 8, n_inst = R * C * int(sizeof(T)) / per_inst / G::waves;
  static_assert(arch::current::lds_dma_bytes == 4 && span % per_inst == 0, "load_async_g4: dword DMA, whole row groups");
  static_assert(R * C * int(sizeof(T)) % (per_inst * G::waves) == 0, "load_async_g4: the tile splits over the waves");
  const long ld = src.row_stride();
  const int num_records = int(((src.rows() - 1) * ld + C) * long(sizeof(T)));
  const auto rsrc = arch::current::buffer_rsrc(src.at(0, 0, 0, 0), num_records);
  const int ld_bytes = int(ld * long(sizeof(T))), lane = lane_id();
  // Load i of this wave: its group of 4 rows h and its lane's part, the row within the group and the column.
  auto source = [&](int i, int& h, int& lane_off) __attribute__((always_inline)) {
    const int n = i * G::waves + wave.index;  // uniform
    h = n * per_inst / span;
    const int slot = n * per_inst % span / 32 + lane / 8;
    const int gc = slot ^ (h & 3), half = ((lane / 4) & 1) ^ ((slot >> 2) & 1);
    lane_off = (2 * half + (lane / 2) % 2) * ld_bytes + (4 * gc + 2 * (lane % 2)) * int(sizeof(T));
  };
  if constexpr (one_m0) {
    static_assert((n_inst - 1) * G::waves * per_inst < 4096, "load_async_g4: the loads' LDS steps fit the offset field");
    auto* lds = (__attribute__((address_space(3))) void*)(reinterpret_cast<char*>(dst.data) + wave.index * per_inst);
    const int origin = tile_r * R * ld_bytes;
    [&]<int... i>(std::integer_sequence<int, i...>) __attribute__((always_inline)) {
      ([&] __attribute__((always_inline)) {
        constexpr int inst = i * G::waves * per_inst;  // the load's LDS step
        int h, lane_off;
        source(i, h, lane_off);
        arch::current::lds_dma<inst>(rsrc, lds, 4 * h * ld_bytes + lane_off - inst, origin);
      }(), ...);
    }(std::make_integer_sequence<int, n_inst>{});
  } else {
#pragma unroll
    for (int i = 0; i < n_inst; ++i) {
      int h, lane_off;
      source(i, h, lane_off);
      auto* lds = (__attribute__((address_space(3))) void*)(reinterpret_cast<char*>(dst.data) + (i * G::waves + wave.index) * per_inst);
      arch::current::lds_dma(rsrc, lds, lane_off, (tile_r * R + 4 * h) * ld_bytes);
    }
  }
}

// The row-layout register tile (16x16 family) of a whole st_g4: lane l reads row l % 16 of each 16-row tile, columns
// 16 j + 4 (l / 16) .. + 3, one ds_read_b64 each, from two lane offsets (even and odd j) and constants.
template <class T, int R, int C>
__device__ inline void load(rt<T, R, C, layout::row>& dst, const st_g4<T, R, C>& src) {
  using RT = rt<T, R, C, layout::row>;
  static_assert(RT::dim == 16 && RT::E == 4, "load(st_g4): the 16x16 family with 4 elements a lane");
  const int lane = lane_id(), q = lane % 16, g = lane / 16;
  const int base = (q >> 2) * st_g4<T, R, C>::gcols * 32 + (g ^ (q >> 2)) * 32 + (q & 1) * 8;
  const int off[2] = {base + ((q >> 1) & 1) * 16, base + (1 - ((q >> 1) & 1)) * 16};
  const char* bytes = reinterpret_cast<const char*>(src.data);
#pragma unroll
  for (int i = 0; i < RT::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < RT::tiles_c; ++j) {
      const auto c = *reinterpret_cast<const detail::chunk<T, 4>*>(bytes + i * 128 * st_g4<T, R, C>::gcols + j * 128 + off[j & 1]);
#pragma unroll
      for (int e = 0; e < 4; ++e) dst.data[i][j][e] = c.v[e];
    }
}

template <bool streamed = false, class T, int R, int C, register_tile B>
__device__ inline rt_acc<R, B::rows> mma_ABt_lds(const st_g4<T, R, C>& a, const B& b) {
  rt_acc<R, B::rows> d;
  zero(d);
  rt<T, R, C> ar;
  load(ar, a);
  mma_ABt(d, ar, b, d);
  return d;
}

// X^T for acc += X^T S with X an st_g4 (K x D), as one register tile: xt (D x K, row layout) holds in base tile (4 J
// + t, i) the A operand of column t of the granules of rows 16 i .. and columns 64 J .., so that mma_AB(acc, xt, b,
// acc) is that product with acc's D rows in st_g4's order (block 4 J + t, lane row m: D row 64 J + 4 m + t). Per 16
// rows of X and 64 of D a lane reads its granule (4 rows, 4 columns) with two ds_read_b128 and packs the 4 MFMAs' A
// operands (column t: rows 0, 1 and 2, 3 of the granule, 16 bits each) with 8 VALU ops.
template <class T, int D, int K>
__device__ inline void load_g4_t(rt<T, D, K, layout::row>& xt, const st_g4<T, K, D>& x) {
  using u32x4 = uint32_t __attribute__((ext_vector_type(4)));
  using u32x2 = uint32_t __attribute__((ext_vector_type(2)));
  static_assert(rt<T, D, K, layout::row>::dim == 16 && rt<T, D, K, layout::row>::E == 4, "load_g4_t: the 16x16 family");
  const int lane = lane_id(), m = lane % 16, g = lane / 16;
  const int base = g * st_g4<T, K, D>::gcols * 32 + (m ^ g) * 32;
  const int off[2] = {base + ((m >> 2) & 1) * 16, base + (1 - ((m >> 2) & 1)) * 16};
  const char* bytes = reinterpret_cast<const char*>(x.data);
#pragma unroll
  for (int i = 0; i < K / 16; ++i)
#pragma unroll
    for (int J = 0; J < D / 64; ++J) {
      const int at = i * 128 * st_g4<T, K, D>::gcols + J * 512;
      const u32x4 v = *reinterpret_cast<const u32x4*>(bytes + at + off[0]);
      const u32x4 w = *reinterpret_cast<const u32x4*>(bytes + at + off[1]);
      const u32x2 lo[4] = {{(v.x & 0xffffu) | (v.z << 16), (w.x & 0xffffu) | (w.z << 16)},
                           {(v.x >> 16) | (v.z & 0xffff0000u), (w.x >> 16) | (w.z & 0xffff0000u)},
                           {(v.y & 0xffffu) | (v.w << 16), (w.y & 0xffffu) | (w.w << 16)},
                           {(v.y >> 16) | (v.w & 0xffff0000u), (w.y >> 16) | (w.w & 0xffff0000u)}};
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const auto c = __builtin_bit_cast(detail::chunk<T, 4>, lo[t]);
#pragma unroll
        for (int e = 0; e < 4; ++e) xt.data[4 * J + t][i][e] = c.v[e];
      }
    }
}

// dst rows `tile` * N .. (N keys) = alpha acc^T, acc (D x N) in st_g4's row order: lane (key m, g) holds D columns
// 64 J + 16 g .. + 15 of its key, written as 32 contiguous bytes (the element type), rows past the tensor left alone.
template <class GL, int D, int N>
__device__ inline void store_g4(const GL& dst, const rt_acc<D, N>& acc, int tile, float alpha = 1.f) {
  using T = typename GL::dtype;
  using u32x4 = uint32_t __attribute__((ext_vector_type(4)));
  static_assert(sizeof(T) == 2, "store_g4: 16-bit outputs");
  const int lane = lane_id(), g = lane / 16;
#pragma unroll
  for (int jn = 0; jn < N / 16; ++jn) {
    const int r = tile * N + jn * 16 + lane % 16;
    if (r >= dst.rows()) continue;
#pragma unroll
    for (int J = 0; J < D / 64; ++J) {
      uint32_t w[8];
#pragma unroll
      for (int s = 0; s < 16; s += 2) {
        const T a = to<T>(acc.data[4 * J + s % 4][jn][s / 4] * alpha), b = to<T>(acc.data[4 * J + (s + 1) % 4][jn][(s + 1) / 4] * alpha);
        w[s / 2] = uint32_t(__builtin_bit_cast(uint16_t, a)) | uint32_t(__builtin_bit_cast(uint16_t, b)) << 16;
      }
      auto* out = reinterpret_cast<u32x4*>(dst.at(0, 0, r, 64 * J + 16 * g));
      out[0] = u32x4{w[0], w[1], w[2], w[3]};
      out[1] = u32x4{w[4], w[5], w[6], w[7]};
    }
  }
}

// The exchange of a col-layout operand tile between two waves: each lane writes its registers and the partner's same
// lane reads them, 16 bytes a lane at a time, lane-major (64 lanes x 16 bytes contiguous: no bank conflicts).
template <register_tile RT>
struct lane_regs {
  static constexpr int chunks = int(sizeof(RT)) / 16;
  static_assert(sizeof(RT) % 16 == 0, "lane_regs: whole 16-byte chunks");
  __attribute__((aligned(16))) char bytes[chunks * 64 * 16];

  __device__ void put(const RT& r) {
    const auto* src = reinterpret_cast<const uint32_t*>(&r);
    const int lane = lane_id();
#pragma unroll
    for (int c = 0; c < chunks; ++c) {
      using v4 = uint32_t __attribute__((ext_vector_type(4)));
      const v4 v = {src[4 * c], src[4 * c + 1], src[4 * c + 2], src[4 * c + 3]};
      *reinterpret_cast<v4*>(bytes + (c * 64 + lane) * 16) = v;
    }
  }
  __device__ void get(RT& r) const {
    auto* dst = reinterpret_cast<uint32_t*>(&r);
    const int lane = lane_id();
#pragma unroll
    for (int c = 0; c < chunks; ++c) {
      using v4 = uint32_t __attribute__((ext_vector_type(4)));
      const v4 v = *reinterpret_cast<const v4*>(bytes + (c * 64 + lane) * 16);
      dst[4 * c] = v.x, dst[4 * c + 1] = v.y, dst[4 * c + 2] = v.z, dst[4 * c + 3] = v.w;
    }
  }
};

// Softcapping in both backward kernels: the scores s capped (before the masks' -inf) and dp (dP - delta) times the
// cap's slope at them, so that dS = P dp after the masks: no tile of slopes held across the products.
template <class S, class Dp>
__device__ __attribute__((always_inline)) inline void attn_bwd_cap(const AttnArgs& p, S& s, Dp& dp) {
  p.cap.template apply<1>(s);
  map(dp, dp, s, [](float x, float t) { return x * AttnArgs::Softcap::slope(t); });
}

// dP - delta with -delta as the product's starting accumulator (the MFMAs' C operand: no subtraction after it), -delta
// per row (kernel 2's dP, queries along the rows) or per column (kernel 3's dP^T, queries along the columns).
template <bool per_col, class V>
__device__ __attribute__((always_inline)) inline auto attn_bwd_init(const V& neg_delta) {
  return [&neg_delta]<class D>(D& d) __attribute__((always_inline)) {
#pragma unroll
    for (int i = 0; i < D::tiles_r; ++i)
#pragma unroll
      for (int j = 0; j < D::tiles_c; ++j)
#pragma unroll
        for (int e = 0; e < D::E; ++e) {
          if constexpr (per_col) d.data[i][j][e] = neg_delta.data[j][0];
          else d.data[i][j][e] = neg_delta.data[i][e];
        }
  };
}

// s *= x elementwise, a pair of elements a packed multiply (the pairs the converts to the element type take).
template <class Tile>
__device__ __attribute__((always_inline)) inline void attn_bwd_mul_pairs(Tile& s, const Tile& x) {
  using f2 = float __attribute__((ext_vector_type(2)));
  static_assert(Tile::E % 2 == 0, "pairs of elements");
#pragma unroll
  for (int i = 0; i < Tile::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < Tile::tiles_c; ++j)
#pragma unroll
      for (int e = 0; e < Tile::E; e += 2) {
        const f2 y = f2{s.data[i][j][e], s.data[i][j][e + 1]} * f2{x.data[i][j][e], x.data[i][j][e + 1]};
        s.data[i][j][e] = y.x, s.data[i][j][e + 1] = y.y;
      }
}

// P = exp2(s c - lse) in place, lse per row (kernel 2: queries along the rows) or per column (kernel 3), a pair of
// elements a packed multiply-add (the same bits as one fmaf each: half the instructions).
template <bool per_col, class Tile, class V>
__device__ __attribute__((always_inline)) inline void attn_bwd_exp2(Tile& s, const V& lse, float c) {
  using f2 = float __attribute__((ext_vector_type(2)));
  static_assert(Tile::E % 2 == 0, "pairs of elements");
#pragma unroll
  for (int i = 0; i < Tile::tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < Tile::tiles_c; ++j)
#pragma unroll
      for (int e = 0; e < Tile::E; e += 2) {
        const f2 l = per_col ? f2{lse.data[j][0], lse.data[j][0]} : f2{lse.data[i][e], lse.data[i][e + 1]};
        const f2 x = __builtin_elementwise_fma(f2{s.data[i][j][e], s.data[i][j][e + 1]}, f2{c, c}, -l);
        s.data[i][j][e] = __builtin_amdgcn_exp2f(x.x), s.data[i][j][e + 1] = __builtin_amdgcn_exp2f(x.y);
      }
}

}  // namespace hk::kernels
