// The block-scaled (MX) GEMM kernels of hk::gemm_mx (gfx950): C = alpha * A_s * B_s^T + beta * C with A (M x K) and
// B (N x K) in OCP MX element formats and one E8M0 scale per 32 k of each row, on gfx950's scaled MFMAs.
//
// Where A and B are of one width (both 8-bit, both fp6 or both e2m1, the formats mixed or not), K is whole steps and
// the LDS DMA can feed the operands and the scales, hk::gemm_mx runs the MX form of the 8-wave ping-pong kernel
// (gemm_pingpong.h, GemmMxStagedForm below, whose prose says how each width lies in the 16-bit stages). Where it
// cannot, both 8-bit or both e2m1 run the MX form of the 4-wave fp8 kernel (gemm_fp8.h, GemmMxForm), as follows.
// The 4-wave fp8 kernel's MX form: the fp8 kernel's LDS stages hold the operands' bytes (K steps of 128
// bytes: 128 k of 8-bit, 256 of e2m1) fed straight by the LDS DMA (through registers where it cannot feed), and the
// form reads the fragments, loads the scales and runs v_mfma_scale_f32_16x16x128_f8f6f4. The instruction takes lane
// l's scale as that of row l mod 16 and k-block l / 16 of its own K, so each logical block of 32 k must be one block
// of the format in memory:
//   - 8-bit: the instruction deals k in 16-byte chunks (lane group g: k 16g..16g+15 in registers 0-3, 64+16g.. in
//     4-7), so the kernel holds the bytes as 16-bit elements (its stages then take the 16-bit swizzle, whose
//     fragments, two of 8 elements a lane, are exactly those chunks, read without bank conflicts): logical k is memory
//     k, and lane (r, g) takes the scale of block 4 kt + g of step kt;
//   - e2m1: a lane's 32 contiguous bytes (64 k: blocks 2g and 2g+1 of the step) are two instructions' operands of 16
//     bytes (registers 0-3, then 4-7), each instruction's logical block g is one memory block, and the lane's two
//     scale bytes sit side by side: the instructions pick byte 0 and byte 1 (op_sel). e2m1 runs at twice the 8-bit
//     rate, so a step's two instructions take the time of one 8-bit one.
// The scales of step kt + 1 are loaded during step kt (before the step's operand loads, so that they fly under its
// MFMAs); rows past M read row M - 1's scales and blocks past K scale 127 (their operands are zeros; never stored).
//
// Other pairs (operands of different widths, or fp6 where the ping-pong kernel cannot run) run the direct kernel below, a first correct version:
// 128x128 tiles of C per workgroup of 4 waves (2 x 2, each 64 x 64 as 2 x 2 MFMA tiles of 32 x 32), workgroups in
// chiplet order. Each K step of 64 every lane loads its own operand registers straight from memory, in exactly the
// MFMA's register layout, so no LDS and no barriers: lane l serves row (l mod 32) and k-group g = l / 32 of each
// 32-row fragment; an 8-bit format fills registers 0-3 with k0 + 16g .. +15 and 4-7 with k0 + 32 + 16g .. +15 (the
// instruction's 16-k chunks), a 6- or 4-bit one registers 0-5 / 0-3 with the 32 consecutive k0 + 32g .. +31, which are
// exactly the 24 / 16 bytes of that block in memory. The lane's scale is the block's: row l mod 32, block k0/32 + g
// (the instruction reads the scale of row r, block b from lane r + 32 b). Rows past M, columns past N and the k-block
// past K (K a multiple of 32, not of 64) load zeros and scale 127 and are never stored; it is bound by its loads.
#pragma once
#include <utility>

#include "gemm_common.h"

namespace hk::kernels {

struct GemmMxArgs {
  int m, n, k;
  const uint8_t* a;
  long lda_bytes;
  const uint8_t* b;
  long ldb_bytes;
  const uint8_t* scale_a;
  long ld_scale_a;
  const uint8_t* scale_b;
  long ld_scale_b;
  void* c;
  long ldc;
  int c_type;  // 0 fp32, 1 bf16, 2 f16
  float alpha, beta;
};

constexpr int mx_bits(int format) { return format <= 1 ? 8 : format <= 3 ? 6 : 4; }

namespace mx {

using i32x8 = arch::i32x8;

// One lane's operand registers for row `row` (zeros past `rows`) and k0 .. k0 + 63, k-group g; see the schedule.
template <int Bits>
__device__ inline i32x8 fragment(const uint8_t* base, long ld_bytes, int row, int rows, int k0, int K, int g) {
  i32x8 v = {};
  if (row >= rows) return v;
  const uint8_t* r = base + long(row) * ld_bytes;
  if constexpr (Bits == 8) {
    const uint32_t* lo = reinterpret_cast<const uint32_t*>(r + k0 + 16 * g);
    for (int i = 0; i < 4; ++i) v[i] = int(lo[i]);
    if (k0 + 32 < K) {
      const uint32_t* hi = reinterpret_cast<const uint32_t*>(r + k0 + 32 + 16 * g);
      for (int i = 0; i < 4; ++i) v[4 + i] = int(hi[i]);
    }
  } else if (k0 + 32 * g < K) {
    const uint32_t* p = reinterpret_cast<const uint32_t*>(r + (k0 + 32 * g) * Bits / 8);
    for (int i = 0; i < Bits; ++i) v[i] = int(p[i]);  // 32 elements of Bits bits: Bits dwords
  }
  return v;
}

__device__ inline int scale(const uint8_t* s, long ld, int row, int rows, int block, int blocks) {
  return row < rows && block < blocks ? int(s[long(row) * ld + block]) : 127;
}

// acc += the step's MFMAs of a wave's block: A's and B's 16-row tiles of 128 bytes of a row each, with the lane's
// scales of each tile (8-bit: one byte; e2m1: its two blocks in consecutive bytes, one per instruction: registers
// 0-3, then 4-7), Pack tiles' to a scale register (tile t in register t / Pack, from byte (t mod Pack) * bytes: the
// instructions' op_sel). The form exists for gfx950 (elsewhere its kernels compile to nothing useful and hk::gemm_mx
// never launches them).
template <int FA, int FB, int Pack, class Acc, class A, class B, int SA, int SB>
__device__ __attribute__((always_inline)) inline void mma(Acc& acc, const A& a, const B& b, const int (&sa)[SA], const int (&sb)[SB]) {
  if constexpr (arch::current::id == arch::target_id::gfx950) {
    constexpr int bytes = mx_bits(FA) == 4 ? 2 : 1;  // a tile's scale bytes
    static_assert(A::tiles_r == SA * Pack && B::tiles_r == SB * Pack && sizeof(a.data[0]) == 32 && Pack * bytes <= 4,
                  "MX form: 128 bytes of a row per tile, Pack tiles' scales to a register");
    // e2m1: every tile's first instruction, then every tile's second (each tile's sum in the same order), so that
    // each accumulates in place: a tile's two back to back took a temporary tile and rotated the accumulators'
    // registers (copies at the loop's end, and spills).
    constexpr int tiles = A::tiles_r * B::tiles_r, passes = mx_bits(FA) == 4 ? 2 : 1;
    [&]<int... N>(std::integer_sequence<int, N...>) __attribute__((always_inline)) {
      ([&] __attribute__((always_inline)) {
        constexpr int T = N % tiles, half = N / tiles;
        constexpr int i = T / B::tiles_r, j = T % B::tiles_r, oa = i % Pack * bytes, ob = j % Pack * bytes;
        arch::f32x4 c = {acc.data[i][j][0], acc.data[i][j][1], acc.data[i][j][2], acc.data[i][j][3]};
        const arch::i32x8 x = __builtin_bit_cast(arch::i32x8, a.data[i]), y = __builtin_bit_cast(arch::i32x8, b.data[j]);
        if constexpr (arch::device_pass) {
          if constexpr (mx_bits(FA) == 8) {
            c = __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(x, y, c, FA, FB, oa, sa[i / Pack], ob, sb[j / Pack]);
          } else if constexpr (mx_bits(FA) == 6) {  // a block's 24 bytes in registers 0-5
            const arch::i32x8 x6 = {x[0], x[1], x[2], x[3], x[4], x[5], 0, 0}, y6 = {y[0], y[1], y[2], y[3], y[4], y[5], 0, 0};
            c = __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(x6, y6, c, FA, FB, oa, sa[i / Pack], ob, sb[j / Pack]);
          } else {  // registers 0-3 (half 0) or 4-7 (half 1), the scales' byte 0 or 1 of the tile's pair
            constexpr int h = 4 * half;
            const arch::i32x8 xh = {x[h], x[h + 1], x[h + 2], x[h + 3], 0, 0, 0, 0}, yh = {y[h], y[h + 1], y[h + 2], y[h + 3], 0, 0, 0, 0};
            c = __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(xh, yh, c, FA, FB, oa + half, sa[i / Pack], ob + half, sb[j / Pack]);
          }
        }
#pragma unroll
        for (int e = 0; e < 4; ++e) acc.data[i][j][e] = c[e];
      }(), ...);
    }(std::make_integer_sequence<int, tiles * passes>{});
  }
}

__device__ inline void store(const GemmMxArgs& p, int row, int col, float acc) {
  if (row >= p.m || col >= p.n) return;
  const long at = long(row) * p.ldc + col;
  float v = p.alpha * acc;
  if (p.c_type == 0) {
    float* c = static_cast<float*>(p.c) + at;
    if (p.beta != 0.f) v += p.beta * *c;
    *c = v;
  } else if (p.c_type == 1) {
    uint16_t* c = static_cast<uint16_t*>(p.c) + at;
    if (p.beta != 0.f) v += p.beta * __builtin_bit_cast(float, uint32_t(*c) << 16);
    uint32_t u = __builtin_bit_cast(uint32_t, v);
    *c = v != v ? uint16_t(u >> 16 | 0x40) : uint16_t((u + 0x7fff + (u >> 16 & 1)) >> 16);  // nearest even
  } else {
    _Float16* c = static_cast<_Float16*>(p.c) + at;
    if (p.beta != 0.f) v += p.beta * float(*c);
    *c = _Float16(v);
  }
}

// C's block `at` from the accumulators, in the output type c_type names (0 fp32, 1 bf16, 2 f16): a runtime choice,
// so that the kernels are one instance per format pair rather than three (the epilogue alone differs).
template <class View, class Acc>
__device__ __attribute__((always_inline)) inline void store_c(const GemmArgs& p, int c_type, const View& v, const Acc& acc, coord at) {
  auto to = [&](auto* c) __attribute__((always_inline)) {
    using T = std::remove_pointer_t<decltype(c)>;
    store_bounded(gl<T, 1, 1>(c, 1, 1, v.c.rows(), v.c.cols(), p.ldc), acc, at, p.alpha, p.beta);
  };
  if (c_type == 1) to(static_cast<bf16*>(p.c));
  else if (c_type == 2) to(static_cast<half*>(p.c));
  else to(static_cast<float*>(p.c));
}

}  // namespace mx

// The MX forms' arguments: the kernel's (K in its elements), the scales' bytes, rows ld_scale_*8 apart, and C's type.
struct GemmMxFormArgs : GemmArgs {
  const uint8_t* scale_a8;
  long ld_scale_a8;
  const uint8_t* scale_b8;
  long ld_scale_b8;
  int blocks;      // K / 32
  int c_type = 0;  // 0 fp32, 1 bf16, 2 f16 (mx::store_c)
};

// The MX form of the 4-wave fp8 kernel (see the top of this file), for A and B both 8-bit or both e2m1 (FA, FB: the
// f8f6f4 codes). The kernel's K is in bytes.
template <int FA, int FB>
struct GemmMxForm {
  static constexpr int bits = mx_bits(FA);
  static_assert(bits == mx_bits(FB) && (bits == 8 || bits == 4), "MX form: both operands 8-bit, or both e2m1");
  static constexpr int blocks_per_step = 128 * 8 / bits / 32;  // 4 (8-bit) or 8 (e2m1) blocks of 32 k per step
  using Args = GemmMxFormArgs;
  template <int WM, int WN>
  struct wave {
    static constexpr int TA = WM / 16, TB = WN / 16;  // 16-row MFMA tiles of A and of B
    // Offsets of this lane's rows of scales (row 16 i + l % 16 of the block; past M: the last) from scale_a8 / _b8.
    unsigned row_a[TA], row_b[TB];
    // Step kt's scales (cur: ready for the MFMAs), and step kt + 1's as loaded (next: raw bytes, fixed up when they
    // become current, a step later, so that nothing waits for them before).
    int cur_a[TA], cur_b[TB], next_a[TA][bits == 8 ? 1 : 2] = {}, next_b[TB][bits == 8 ? 1 : 2] = {}, next_block = 0;
    __device__ wave(const Args& p, int row0, int col0) {
      const int lane = lane_id();
#pragma unroll
      for (int i = 0; i < TA; ++i) {
        const int r = row0 + 16 * i + lane % 16;
        row_a[i] = unsigned(r < p.m ? r : p.m - 1) * unsigned(p.ld_scale_a8);
      }
#pragma unroll
      for (int j = 0; j < TB; ++j) {
        const int r = col0 + 16 * j + lane % 16;
        row_b[j] = unsigned(r < p.n ? r : p.n - 1) * unsigned(p.ld_scale_b8);
      }
    }
    // The scale bytes as the MFMA takes them: block b (127 past K); e2m1: blocks b and b + 1 in bytes 0 and 1.
    __device__ __attribute__((always_inline)) static int fix(const int (&raw)[bits == 8 ? 1 : 2], int b, int blocks) {
      if constexpr (bits == 8) return b < blocks ? raw[0] : 127;
      else return (b < blocks ? raw[0] : 127) | (b + 1 < blocks ? raw[1] : 127) << 8;
    }
    // Step kt's scales are loaded; step kt - 1's become current.
    __device__ __attribute__((always_inline)) void prefetch(const Args& p, int kt) {
#pragma unroll
      for (int i = 0; i < TA; ++i) cur_a[i] = fix(next_a[i], next_block, p.blocks);
#pragma unroll
      for (int j = 0; j < TB; ++j) cur_b[j] = fix(next_b[j], next_block, p.blocks);
      const int b = blocks_per_step * kt + (bits == 8 ? 1 : 2) * (lane_id() / 16);
      // Past K the loads read the row's last block (inside the matrix; replaced by 127 when fixed).
      const unsigned at = unsigned(b < p.blocks ? b : p.blocks - 1), at1 = unsigned(b + 1 < p.blocks ? b + 1 : p.blocks - 1);
      next_block = b;
#pragma unroll
      for (int i = 0; i < TA; ++i) {
        next_a[i][0] = p.scale_a8[row_a[i] + at];
        if constexpr (bits == 4) next_a[i][1] = p.scale_a8[row_a[i] + at1];
      }
#pragma unroll
      for (int j = 0; j < TB; ++j) {
        next_b[j][0] = p.scale_b8[row_b[j] + at];
        if constexpr (bits == 4) next_b[j][1] = p.scale_b8[row_b[j] + at1];
      }
    }
    template <class R, class S>
    __device__ __attribute__((always_inline)) void read(R& r, const S& s, coord at) { load(r, s, at); }
    template <class Acc, class A, class B>
    __device__ __attribute__((always_inline)) void mma(Acc& acc, const A& a, const B& b) {
      mx::mma<FA, FB, 1>(acc, a, b, cur_a, cur_b);
    }
    template <class View, class Acc>
    __device__ __attribute__((always_inline)) void store(const Args& p, const View& v, const Acc& acc, coord at) {
      mx::store_c(p, p.c_type, v, acc, at);
    }
  };
};

// The MX form of the 8-wave ping-pong kernel (gemm_pingpong.h), for A and B of one width (8-bit, fp6 or e2m1), K
// whole steps and scales aligned to 4 bytes. The stages are the kernel's 16-bit ones, 128 bytes of a row a step, and
// every format takes the same fragment read, conflict free under the 16-bit swizzle: lane (r, g) of 16-row tile t
// reads chunk g (16 bytes) and chunk g + 4 of row 16 t + r. What the chunks hold:
//   - 8-bit: the row's 128 bytes as they are (128 k): the instruction's k 16g.. and 64 + 16g.. (see GemmMxForm);
//   - e2m1: the row's 128 bytes (256 k): two instructions, chunk g's 32 k (block g of the step) then chunk g + 4's
//     (block 4 + g), each its lane group's block;
//   - fp6: 128 k = four blocks of 24 bytes, laid out apart by the form's own fill: chunk b < 4 holds block b's bytes
//     0-15 and chunk 4 + b its bytes 8-23, so the lane's block g is chunk g and the upper half of chunk g + 4 (two
//     ds_read_b128, as the other widths: a ds_read_b64 of the upper halves alone uses half of the banks, 2-way
//     conflicts): registers 0-5, exactly the instruction's operand. The fill is the stages' own
//     LDS DMA (lane l of a load fills slot l mod 8 of a row, the chunk that slot holds under the swizzle) with each
//     lane's source moved to its chunk's bytes in memory: 96 bytes of each row a step, read a third more through the
//     L2 than they hold (every chunk is 16 bytes).
// All the reads of a wave derive from two lane registers (its row's chunk slots g and g ^ 4 in a tile at row 0; the
// tiles' rows and the stage are immediates or one uniform add): the swizzle of a tile's first row only swaps them.
// The scales are staged through LDS beside the tiles, so that the loop holds no scale addresses and no loads of its
// own and a lane keeps only the step's scales, four tiles' bytes to a register (two tiles' pairs for e2m1), the MFMAs
// picking theirs by op_sel. A step's scales of a row are 4 bytes (8-bit, fp6: blocks 4kt .. 4kt + 3) or 8 (e2m1: 8kt
// .. 8kt + 7) in memory, one or two dwords: each wave of the group that loads A (or B) moves its 64 rows' dwords with
// one LDS DMA load per dword (64 lanes, one row each), with its tile loads, and the stages hold them as [dword][row].
// In its memory phase a lane (r, g) reads byte g of its rows' dword (e2m1: of each dword) with ds_read_u8 and packs
// them. The 64 lanes of a read touch 16 consecutive dwords: no bank conflicts. Rows past M or N read zeros (the
// buffer's range; fp6: row M - 1 or N - 1 again; never stored). e2m1's 24 bytes are packed at the end of the memory
// phase, and its MFMAs run every tile's first instruction before every tile's second: 253 VGPRs, no spills.
template <int FA, int FB>
struct GemmMxStagedForm {
  static constexpr int bits = mx_bits(FA), words = bits == 4 ? 2 : 1;  // a row's scale dwords per step
  static_assert(bits == mx_bits(FB), "MX ping-pong form: A and B of one width");
  using Args = GemmMxFormArgs;
  // (Elsewhere than gfx950, whose kernels hk::gemm_mx never launches, nothing is staged: the tiles fill gfx942's LDS.)
  static constexpr bool cdna4 = arch::current::id == arch::target_id::gfx950;
  static constexpr int rows = cdna4 ? 256 : 1;
  struct shared {
    uint32_t a[2][words][rows], b[2][words][rows];
  };
  static constexpr int loads_b = words;
  static constexpr bool fills_tiles = bits == 6;
  static constexpr bool compiled = cdna4;  // (gemm_pingpong.h: an empty kernel elsewhere)
  template <int WM, int WN>
  struct wave {
    static constexpr int pack = 4 / (bits == 4 ? 2 : 1);  // tiles' scales to a register
    int cur_a[WM / 16 / pack], cur_b[WN / 16 / pack];      // the step's scales, as the MFMAs take them
    // The lane's first scale's byte in a stage: its row's part (lane) plus the wave's block's (uniform: row0, col0 are
    // scalars), added in the loop so that one register serves A and B.
    unsigned part;
    int off_a, off_b;
    // row0, col0: the wave's block's origin in C, in the kernel's 256 x 256 tiles.
    __device__ __attribute__((always_inline)) wave(const Args&, int row0, int col0) {
      part = unsigned(4 * (lane_id() % 16) + lane_id() / 16), off_a = row0 % 256 * 4, off_b = col0 % 256 * 4;
    }
    __device__ __attribute__((always_inline)) void prefetch(const Args&, int) {}
    template <class View, class G>
    __device__ __attribute__((always_inline)) void fill_a(const Args& p, shared& s, const View& v, int kt, int stage, async_wave<G> w) {
      dma(p.scale_a8, p.ld_scale_a8, p.m, 256 * v.tile_m + 64 * w.index, kt, s.a[stage]);
    }
    template <class View, class G>
    __device__ __attribute__((always_inline)) void fill_b(const Args& p, shared& s, const View& v, int kt, int stage, async_wave<G> w) {
      dma(p.scale_b8, p.ld_scale_b8, p.n, 256 * v.tile_n + 64 * w.index, kt, s.b[stage]);
    }
    // fp6: A's (or B's) tile of step kt with its scales, every tile row laid out as the top of the form says.
    template <bool IsA, bool Inside, class Stages, class View, class G>
    __device__ __attribute__((always_inline)) void fill_tiles(const Args& p, Stages& s, shared& fs, const View& v, int kt, int stage,
                                                              async_wave<G> w) {
      if constexpr (IsA) {
        fill6<Inside>(s.a[stage], static_cast<const uint8_t*>(p.a), 2 * int(p.lda), p.m, 256 * v.tile_m, p.blocks, kt, w);
        fill_a(p, fs, v, kt, stage, w);
      } else {
        fill6<Inside>(s.b[stage], static_cast<const uint8_t*>(p.b), 2 * int(p.ldb), p.n, 256 * v.tile_n, p.blocks, kt, w);
        fill_b(p, fs, v, kt, stage, w);
      }
    }
    // Rows row0 .. row0 + 255 of step kt (bytes 96 kt ..) into the 16-bit stage dst: wave w's load i fills rows
    // 32 i + 8 w .. + 7, lane l slot l mod 8 of row l / 8 of them, which holds chunk q = slot ^ swizzle(row): bytes
    // 24 (q mod 4) + 8 (q / 4) of the step's row. Rows 32 apart swizzle alike, so one lane register serves every load;
    // a tile crossing the matrix's last row (not Inside) reads row count - 1 in the place of those past it.
    template <bool Inside, class ST, class G>
    __device__ __attribute__((always_inline)) static void fill6(ST& dst, const uint8_t* base, int ld, int count, int row0, int blocks,
                                                                int kt, async_wave<G> w) {
      if constexpr (cdna4 && bits == 6) {
        constexpr int per_inst = arch::current::lds_dma_bytes * 64, row_bytes = ST::cols * int(sizeof(typename ST::dtype));
        static_assert(per_inst == 1024 && row_bytes == 128 && G::waves == 4 && ST::rows == 256 && ST::swizzle(32) == 0 &&
                          ST::swizzle(64) == 0 && ST::swizzle(128) == 0,
                      "fp6 fill: 8 rows a load, rows 32 apart swizzled alike");
        const auto rsrc = arch::current::buffer_rsrc(base, (count - 1) * ld + 24 * blocks);  // the host keeps it under 2^31
        auto lds = [&](int i) __attribute__((always_inline)) {
          return (__attribute__((address_space(3))) void*)(reinterpret_cast<char*>(dst.data) + (4 * i + w.index) * per_inst);
        };
        if (Inside || row0 + 256 <= count) {
          const int lane = lane_id(), r = lane / 8, q = (lane % 8) ^ ST::swizzle(8 * w.index + r);
          const int part = r * ld + 24 * (q % 4) + 8 * (q / 4);
#pragma unroll
          for (int i = 0; i < 256 * 128 / (per_inst * 4); ++i)
            arch::current::lds_dma(rsrc, lds(i), part, hk::detail::opaque_uniform((row0 + 32 * i + 8 * w.index) * ld + 96 * kt));
        } else {
          int lane = lane_id();
          asm volatile("" : "+v"(lane));  // (nothing of the edge path computed ahead of the loop)
          lane &= 63;
          const int r = lane / 8, q = (lane % 8) ^ ST::swizzle(8 * w.index + r), col = 24 * (q % 4) + 8 * (q / 4) + 96 * kt;
#pragma unroll
          for (int i = 0; i < 256 * 128 / (per_inst * 4); ++i) {
            const int row = row0 + 32 * i + 8 * w.index + r;
            arch::current::lds_dma(rsrc, lds(i), (row < count ? row : count - 1) * ld + col);
          }
        }
      }
    }
    // Rows row0 .. row0 + 63's dwords of step kt into dst[.][row0 % 256 ..].
    __device__ __attribute__((always_inline)) static void dma(const uint8_t* scales, long ld, int count, int row0, int kt,
                                                              uint32_t (&dst)[words][rows]) {
      if constexpr (!cdna4) return;
      const auto rsrc = arch::current::buffer_rsrc(scales, int(count * ld));  // the host keeps it under 2^31
      const int lane_offset = lane_id() * int(ld), uniform = row0 * int(ld) + 4 * words * kt;
#pragma unroll
      for (int h = 0; h < words; ++h)  // buffer_load_dword ... lds: lane l's dword to dst[h][row0 % 256 + l]
        if constexpr (arch::device_pass)
          __builtin_amdgcn_raw_ptr_buffer_load_lds(rsrc, (__attribute__((address_space(3))) void*)(&dst[h][row0 % rows]), 4,
                                                   lane_offset, uniform + 4 * h, 0, 0);
    }
    __device__ __attribute__((always_inline)) void read_staged(const shared& s, int stage) {
      if constexpr (!cdna4) return;
      const uint8_t* a = reinterpret_cast<const uint8_t*>(s.a[stage]) + hk::detail::opaque_uniform(off_a) + part;
      const uint8_t* b = reinterpret_cast<const uint8_t*>(s.b[stage]) + hk::detail::opaque_uniform(off_b) + part;
      // Tiles t .. t + pack - 1 (rows 16 apart: 64 bytes) into one register; e2m1: dword 0's byte, then dword 1's.
      auto packed = [](const uint8_t* at) __attribute__((always_inline)) {
        unsigned r = 0;
#pragma unroll
        for (int t = 0; t < pack; ++t) {
          if constexpr (bits == 4) r |= (unsigned(at[64 * t]) | unsigned(at[4 * rows + 64 * t]) << 8) << 16 * t;
          else r |= unsigned(at[64 * t]) << 8 * t;
        }
        return int(r);
      };
#pragma unroll
      for (int i = 0; i < WM / 16 / pack; ++i) cur_a[i] = packed(a + 64 * pack * i);
#pragma unroll
      for (int j = 0; j < WN / 16 / pack; ++j) cur_b[j] = packed(b + 64 * pack * j);
      // e2m1: packed here, where the memory phase waits for its reads anyway, not next to the MFMAs that take them:
      // the compiler put it there, which kept its 24 bytes in registers through the barrier (16 spills).
      if constexpr (bits == 4) {
#pragma unroll
        for (int i = 0; i < WM / 16 / pack; ++i) asm volatile("" : "+v"(cur_a[i]));
#pragma unroll
        for (int j = 0; j < WN / 16 / pack; ++j) asm volatile("" : "+v"(cur_b[j]));
      }
    }
    // The fragments of the wave's rows at.r * R::rows .. (see the top): chunk g into tile t's first 8 elements, chunk
    // g + 4 (fp6: its upper 8 bytes) into its second. Within a tile only bit 2 of the slot may differ from row 0's (the
    // swizzle of row 16 t, asserted), which swaps the two registers' roles.
    template <class R, class S>
    __device__ __attribute__((always_inline)) void read(R& r, const S& s, coord at) {
      if constexpr (cdna4) {
        static_assert(sizeof(typename S::dtype) == 2 && S::cols == 64 && R::tiles_c == 2 && R::E == 8, "MX read: 16-bit stages");
        static_assert(S::swizzle(R::rows) == 0 && S::swizzle(2 * R::rows) == 0 && S::swizzle(3 * R::rows) == 0,
                      "MX read: the waves' blocks start at rows swizzled as row 0");
        const int lane = lane_id(), rl = lane % 16, g = lane / 16;
        const unsigned p0 = unsigned(rl * 128 + ((g ^ S::swizzle(rl)) * 16)), p1 = p0 ^ 64u;
        const char* base = reinterpret_cast<const char*>(s.data) + hk::detail::opaque_uniform(at.r * R::rows * 128);
        using v4 = uint32_t __attribute__((ext_vector_type(4)));
        using v2 = uint32_t __attribute__((ext_vector_type(2)));
        [&]<int... T>(std::integer_sequence<int, T...>) __attribute__((always_inline)) {
          ([&] __attribute__((always_inline)) {
            constexpr int sw = S::swizzle(16 * T);
            static_assert(sw == 0 || sw == 4, "MX read: a tile's first row swaps slots g and g ^ 4 at most");
            const char* row = base + 16 * T * 128;
            const v4 x = *reinterpret_cast<const v4*>(row + (sw ? p1 : p0));
            __builtin_memcpy(&r.data[T][0][0], &x, 16);
            if constexpr (bits == 6) {  // the whole chunk (a read of its upper half alone would meet 2-way conflicts)
              v4 y = *reinterpret_cast<const v4*>(row + (sw ? p0 : p1));
              asm volatile("" : "+v"(y));
              const v2 h = {y[2], y[3]};
              __builtin_memcpy(&r.data[T][1][0], &h, 8);
            } else {
              const v4 y = *reinterpret_cast<const v4*>(row + (sw ? p0 : p1));
              __builtin_memcpy(&r.data[T][1][0], &y, 16);
            }
          }(), ...);
        }(std::make_integer_sequence<int, R::tiles_r>{});
      }
    }
    template <class Acc, class A, class B>
    __device__ __attribute__((always_inline)) void mma(Acc& acc, const A& a, const B& b) {
      mx::mma<FA, FB, pack>(acc, a, b, cur_a, cur_b);
    }
    template <class View, class Acc>
    __device__ __attribute__((always_inline)) void store(const Args& p, const View& v, const Acc& acc, coord at) {
      mx::store_c(p, p.c_type, v, acc, at);
    }
  };
};

// The body exists for gfx950 only, the one target with the instruction (elsewhere an empty kernel hk::gemm_mx never
// launches).
template <int FA, int FB>
__global__ __launch_bounds__(256) void gemm_mx(GemmMxArgs p) {
  if constexpr (arch::current::id == arch::target_id::gfx950) {
    constexpr int BA = mx_bits(FA), BB = mx_bits(FB);
    const int tiles_n = (p.n + 127) / 128, tiles_m = (p.m + 127) / 128;
    const int id = xcd_remap(int(blockIdx.x), tiles_m * tiles_n);
    const int tm = id / tiles_n, tn = id % tiles_n;
    const int w = int(threadIdx.x) / 64, l = int(threadIdx.x) % 64, g = l / 32, lr = l % 32;
    const int row0 = tm * 128 + (w / 2) * 64, col0 = tn * 128 + (w % 2) * 64, blocks = p.k / 32;
    arch::f32x16 acc[2][2] = {};
    for (int k0 = 0; k0 < p.k; k0 += 64) {
      mx::i32x8 a[2], b[2];
      int sa[2], sb[2];
      for (int i = 0; i < 2; ++i) {
        a[i] = mx::fragment<BA>(p.a, p.lda_bytes, row0 + 32 * i + lr, p.m, k0, p.k, g);
        sa[i] = mx::scale(p.scale_a, p.ld_scale_a, row0 + 32 * i + lr, p.m, k0 / 32 + g, blocks);
        b[i] = mx::fragment<BB>(p.b, p.ldb_bytes, col0 + 32 * i + lr, p.n, k0, p.k, g);
        sb[i] = mx::scale(p.scale_b, p.ld_scale_b, col0 + 32 * i + lr, p.n, k0 / 32 + g, blocks);
      }
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) acc[i][j] = arch::cdna4::mma_scale32<FA, FB>(a[i], b[j], acc[i][j], sa[i], sb[j]);
    }
    // D[i][j] of a 32x32 tile: lane j + 32 * ((i / 4) mod 2), register 4 * (i / 8) + i mod 4.
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        for (int r = 0; r < 16; ++r)
          mx::store(p, row0 + 32 * i + 8 * (r / 4) + 4 * g + r % 4, col0 + 32 * j + lr, acc[i][j][r]);
  }
}

}  // namespace hk::kernels
