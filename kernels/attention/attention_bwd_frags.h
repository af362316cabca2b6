// Operand fragments read from the LDS by the one-wave-a-SIMD backward kernels (attention_bwd_keys64.h,
// attention_bwd_dq64.h), whose registers hold the lane parts of the reads' addresses through their loops.
#pragma once
#include <array>

#include "attention_common.h"
#include "hk/ops/schedule.h"

namespace hk::kernels {

// Fragments of swizzled shared tiles of D = 128 columns (16-byte granules of 8 elements) as 16x16x32 MFMA operands:
// a row fragment (16-row tile, D chunk: load's row layout) and an acc-order column fragment (D tile of 32 rows: two
// transposing reads, then the transpose, the same registers). A tile's element offset is (tile rows) C + (lane rows) C +
// (chunk ^ swizzle) 8 + within (st::idx), and the chunk XOR splits into a constant of the read and the lane's part: 4
// row parts (D chunks) and 8 column parts (D tiles) serve every read, each read one of these registers plus a constant
// the LDS read takes in its offset field (no vector work a read; found at each read, the addresses were 7 VALU a read,
// about a third of keys64's VALU budget a step). `ST` gives the swizzle of the lane rows: every tile read must repeat
// it from each 16-row tile read (rows 16 t + r share swizzle(16 t) ^ swizzle(r) terms: the callers assert the bits
// they rely on).
template <class T, class ST, class A = arch::current>
struct HeldFrags {
  static constexpr int D = ST::cols;
  using F = std::conditional_t<std::same_as<T, bf16>, arch::bf16_frag, arch::f16_frag>;  // (detail::frag's)
  static_assert(D == 128 && ST::chunk_elems == 8, "HeldFrags: 128 columns in 16-byte granules of 8 elements");
  int row_part[4], col_part[8];

  __device__ __attribute__((always_inline)) explicit HeldFrags(int lane) {
    const int r = lane % 16, x = (lane / 16) ^ ST::swizzle(r);  // row reads: chunk dc 4 + lane / 16
#pragma unroll
    for (int k = 0; k < 4; ++k) row_part[k] = (r * D + ((4 * k) ^ x) * 8) * int(sizeof(T));
    const int rl = 4 * (lane / 16) + (lane % 16) / 4, q = lane % 4, y = (q / 2) ^ ST::swizzle(rl);  // column reads
#pragma unroll
    for (int k = 0; k < 8; ++k) col_part[k] = (rl * D + ((2 * k) ^ y) * 8 + (q % 2) * 4) * int(sizeof(T));
  }
  template <class X>
  __device__ __attribute__((always_inline)) static const char* at(const X& x, int bytes) {
    return reinterpret_cast<const char*>(x.data) + bytes;
  }
  // Row fragment of tile x (16-row tile `tile` from byte `base`, D chunk dc): chunk 4 dc ^ swizzle(16 tile) ^ the lane's.
  template <class X>
  __device__ __attribute__((always_inline)) F row(const X& x, int tile, int dc, int base = 0) const {
    const int k = (4 * dc ^ X::swizzle(16 * tile)) / 4;
    const auto c = *reinterpret_cast<const detail::chunk<T, 8>*>(at(x, base + tile * 16 * D * int(sizeof(T)) + row_part[k]));
    return detail::frag(c.v);
  }
  // Column fragment of tile x (D tile dt, the 32 rows from row0), acc order: rows row0 + 16 hh + 4 (lane / 16) +
  // (lane % 16) / 4. (The halves joined as 64-bit words: joined element by element, LLVM left a no-op v_bfi_b32 a
  // fragment.)
  template <class X>
  __device__ __attribute__((always_inline)) F col(const X& x, int dt, int row0 = 0) const {
    std::array<uint64_t, 2> w;
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int k = (2 * dt ^ X::swizzle(16 * hh)) / 2;
      w[hh] = __builtin_bit_cast(uint64_t, A::lds_read_tr16_b64(at(x, (row0 + hh * 16) * D * int(sizeof(T)) + col_part[k])));
    }
    return __builtin_bit_cast(F, w);
  }
};

// TEMP (to fold into hk/ops/async.h's load_async_rows): loads [i0, i0 + n) of load_async_inside(dst, src, at, wave,
// active), so that a tile's loads spread over several MFMA gaps.
template <class G, int i0, int n, shared_tile ST, class GL>
__device__ __attribute__((always_inline)) inline void attn_fill_part(ST& dst, const GL& src, coord at, async_wave<G> wave, bool active) {
  using T = typename ST::dtype;
  const long rows = src.rows(), cols = src.cols(), ld = src.row_stride();
  const int num_records = __builtin_amdgcn_readfirstlane(active ? int(((rows - 1) * ld + cols) * long(sizeof(T))) : 0);
  const __amdgpu_buffer_rsrc_t rsrc = arch::current::buffer_rsrc(src.at(at.b, at.d, 0, 0), num_records);
  const int r0 = at.r * ST::rows, c0 = at.c * ST::cols;
  const int ld_bytes = int(ld * long(sizeof(T))), origin = int((r0 * ld + c0) * long(sizeof(T)));
  constexpr int unit = arch::current::lds_dma_bytes, per_inst = unit * 64, waves = G::waves, chunk = ST::chunk_bytes;
  constexpr int row_bytes = ST::cols * int(sizeof(T));
  auto lds = [&](int i) __attribute__((always_inline)) {
    return (__attribute__((address_space(3))) void*)(reinterpret_cast<char*>(dst.data) + (i * waves + wave.index) * per_inst);
  };
  const int lane_bytes = unit * lane_id(), wave_bytes = wave.index * per_inst;
  const int r_lane = lane_bytes / row_bytes, r_wave = wave_bytes / row_bytes;
  const int lane_slot = (lane_bytes % row_bytes / chunk ^ ST::swizzle(r_lane)) ^ (wave_bytes % row_bytes / chunk ^ ST::swizzle(r_wave));
  const int lane_part = r_lane * ld_bytes + lane_bytes % chunk;
  constexpr auto inst_row = [](int i) { return i * waves * per_inst / row_bytes; };
  int uniform_offset = origin + (r_wave + inst_row(i0)) * ld_bytes;
#pragma unroll
  for (int i = i0; i < i0 + n; ++i) {
    const int inst_bytes = i * waves * per_inst;
    const int inst_slot = inst_bytes % row_bytes / chunk ^ ST::swizzle(inst_row(i));
    const int this_offset = uniform_offset;
    if (i + 1 < i0 + n && inst_row(i + 1) != inst_row(i))
      uniform_offset = detail::opaque_uniform(uniform_offset + (inst_row(i + 1) - inst_row(i)) * ld_bytes);
    arch::current::lds_dma(rsrc, lds(i), lane_part + (lane_slot ^ inst_slot) * chunk, this_offset);
  }
}

// Two floats as a pair of T in one convert (v_cvt_pk_bf16_f32): element by element LLVM converts each alone and packs
// them (2.5 VALU a value, which the list schedules' costs do not hold).
template <class T>
__device__ __attribute__((always_inline)) inline uint32_t attn_pair(float x, float y) {
  using f2 = float __attribute__((ext_vector_type(2)));
  using t2 = T __attribute__((ext_vector_type(2)));
  return __builtin_bit_cast(uint32_t, __builtin_convertvector(f2{x, y}, t2));
}

// Softcapping's steps (AttnArgs::Softcap::apply's arithmetic) on a 16 x 16 tile's four scores of a lane, one step a
// task of keys64's and dq64's schedules: 0 y = k s (two packed multiplies, in place), 1-4 u = exp2(-|y|) of element
// step - 1, 5-10 f(u)'s Horner steps (a packed multiply-add for each pair: two chains), 11 t = sign(y) f(u) in place.
// u and f: the caller's (its tile's), pinned where each step runs. dS's slope: P (1 - t^2), a pair at a time.
struct AttnCapTile {
  using f2 = float __attribute__((ext_vector_type(2)));
  f2 u[2], f[2];
  static constexpr int steps = 12;
  template <int step>
  __device__ __attribute__((always_inline)) void run(arch::f32x4& s, float k) {
    using Cap = AttnArgs::Softcap;
    if constexpr (step == 0) {
      const f2 y0 = f2{s[0], s[1]} * f2{k, k}, y1 = f2{s[2], s[3]} * f2{k, k};
      s = arch::f32x4{y0.x, y0.y, y1.x, y1.y};
      pin(s);
    } else if constexpr (step < 5) {
      u[(step - 1) / 2][(step - 1) % 2] = __builtin_amdgcn_exp2f(-__builtin_fabsf(s[step - 1]));
      pin(u[(step - 1) / 2]);
    } else if constexpr (step < 11) {
      constexpr float cs[6] = {Cap::c5, Cap::c4, Cap::c3, Cap::c2, Cap::c1, 1.f};
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        f[h] = (step == 5 ? u[h] * f2{Cap::c6, Cap::c6} : f[h] * u[h]) + f2{cs[step - 5], cs[step - 5]};
        pin(f[h]);
      }
    } else {
      s = arch::f32x4{__builtin_copysignf(f[0].x, s[0]), __builtin_copysignf(f[0].y, s[1]),
                      __builtin_copysignf(f[1].x, s[2]), __builtin_copysignf(f[1].y, s[3])};
      pin(s);
    }
  }
  __device__ __attribute__((always_inline)) static f2 slope(f2 p, f2 t) {
    f2 y = p * (-t * t + f2{1.f, 1.f});
    pin(y);
    return y;
  }
};

}  // namespace hk::kernels
