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

// Dropout's keep decisions (attn_dropout_words' walk, the forward's bits) in steps for keys64's and dq64's list
// schedules: two of a lane's Philox calls at a time (two groups of attn_dropout_words, or two tiles' calls), each
// started (start: the counter), then their rounds side by side (round<r>: two chains, one key a round: Keys), the
// 4x4 byte transpose where keys run along the columns (spread, 6 v_perm a call), the quad's transpose of both calls in
// four phases (quad<ph>: attn_quad_transpose's DPP selects, each vcc mask set once for both calls), so that x[t] is run
// 4 grp + t's word as attn_dropout_words gives it; then keep(word) (byte t of x[t]: element t of the run): bit 7 of
// byte t set where the element is kept (attn_dropout_drop's majority, 3 VALU a word). gfx950 (v_bitop3).
template <bool keys_are_rows, class Tile>
struct AttnDropCall {
  uint32_t x[4];
  // The stream's words (attn_dropout_words' s_lo, s_hi) of sequence b, query head h.
  __device__ __attribute__((always_inline)) static void stream(const AttnArgs& p, int b, int h, uint32_t& s_lo, uint32_t& s_hi) {
    const uint64_t s = (uint64_t(p.drop.offset_hi) << 32 | p.drop.offset_lo) + uint64_t(b) * uint32_t(p.heads_q) + uint32_t(h);
    s_lo = uint32_t(s), s_hi = uint32_t(s >> 32);
  }
  // The rounds' keys held in VGPRs (made once, before a kernel's loop: each round's two SALU adds of the seed's, through an
  // empty asm so that LLVM does not hoist them into 12 SGPRs, which spilled), rounds 1 ..
  struct Keys {
    uint32_t k[attn_dropout_rounds][2];
    __device__ __attribute__((always_inline)) explicit Keys(const AttnArgs& p) {
#pragma unroll
      for (int r = 1; r < attn_dropout_rounds; ++r) {
        k[r][0] = p.drop.seed_lo + uint32_t(r) * detail::philox_w0, k[r][1] = p.drop.seed_hi + uint32_t(r) * detail::philox_w1;
        asm volatile("" : "+v"(k[r][0]), "+v"(k[r][1]));
      }
    }
    template <int r>
    __device__ __attribute__((always_inline)) void get(const AttnArgs& p, uint32_t& k0, uint32_t& k1) const {
      if constexpr (r == 0) k0 = p.drop.seed_lo, k1 = p.drop.seed_hi;
      else k0 = k[r][0], k1 = k[r][1];
    }
  };
  // The counter of this lane's call (the tile's element (0, 0): query q0, key k0, multiples of 4).
  __device__ __attribute__((always_inline)) void start(uint32_t s_lo, uint32_t s_hi, int q0, int k0, int grp) {
    constexpr int per = Tile::E / 4;
    const int lane = lane_id(), u = lane & 3, rl = Tile::row_lane_part(lane), cl = Tile::col_lane_part(lane) & ~3;
    auto run_row = [](int n) { return Tile::row_tile_part(n / per % Tile::tiles_r, 4 * (n % per)); };
    auto run_col = [](int n) { return Tile::col_tile_part(n / per / Tile::tiles_r, 0); };
    auto pick = [u](int v0, int v1, int v2, int v3) { return u & 2 ? (u & 1 ? v3 : v2) : (u & 1 ? v1 : v0); };
    const int n = 4 * grp;
    const int row = pick(run_row(n), run_row(n + 1), run_row(n + 2), run_row(n + 3)) + rl;
    const int col = pick(run_col(n), run_col(n + 1), run_col(n + 2), run_col(n + 3)) + cl;
    const uint32_t key = uint32_t(keys_are_rows ? k0 + row : k0 + col), query = uint32_t(keys_are_rows ? q0 + col : q0 + row);
    x[0] = key >> 2, x[1] = query >> 2, x[2] = s_lo, x[3] = s_hi;
  }
  template <int r>
  __device__ __attribute__((always_inline)) void round(uint32_t k0, uint32_t k1) {
    const uint64_t p0 = uint64_t(detail::philox_m0) * x[0], p1 = uint64_t(detail::philox_m1) * x[2];
    x[0] = philox_xor3(uint32_t(p1 >> 32), x[1], k0), x[1] = uint32_t(p1);
    x[2] = philox_xor3(uint32_t(p0 >> 32), x[3], k1), x[3] = uint32_t(p0);
    if constexpr (r > 0) pin(x[0], x[1], x[2], x[3]);
  }
  __device__ __attribute__((always_inline)) void spread() {
    if constexpr (!keys_are_rows) {  // x[v] byte t = x[t] byte v
      const uint32_t a = __builtin_amdgcn_perm(x[1], x[0], 0x06020400u), bq = __builtin_amdgcn_perm(x[1], x[0], 0x07030501u);
      const uint32_t c2 = __builtin_amdgcn_perm(x[3], x[2], 0x06020400u), d = __builtin_amdgcn_perm(x[3], x[2], 0x07030501u);
      x[0] = __builtin_amdgcn_perm(c2, a, 0x05040100u), x[2] = __builtin_amdgcn_perm(c2, a, 0x07060302u);
      x[1] = __builtin_amdgcn_perm(d, bq, 0x05040100u), x[3] = __builtin_amdgcn_perm(d, bq, 0x07060302u);
      pin(x[0], x[1], x[2], x[3]);
    }
  }
  // Phase ph of attn_quad_transpose for calls c and d (the same selects; t: their first swaps' results): 0 and 1 the
  // swaps at distance 2 (into t), 2 and 3 those at 1 (into x). (Each phase's vcc moves give its DPP reads the 2 wait
  // states after the VALU that wrote their registers.)
  template <int ph>
  __device__ __attribute__((always_inline)) static void quad(AttnDropCall& c, AttnDropCall& d, uint32_t (&t)[2][4]) {
    // (operands %4-%7: the first call's inputs, %8-%11 the second's; each select's pair for both calls)
#define HK_QUAD_PHASE(MASK, PERM, A, B, C, D, A2, B2, C2, D2)                                                          \
  asm("s_mov_b32 vcc_lo, " MASK "\n s_mov_b32 vcc_hi, " MASK "\n"                                                     \
      " v_cndmask_b32_dpp %0, " A ", " B ", vcc quad_perm:" PERM " row_mask:0xf bank_mask:0xf\n"                     \
      " v_cndmask_b32_dpp %1, " C ", " D ", vcc quad_perm:" PERM " row_mask:0xf bank_mask:0xf\n"                     \
      " v_cndmask_b32_dpp %2, " A2 ", " B2 ", vcc quad_perm:" PERM " row_mask:0xf bank_mask:0xf\n"                   \
      " v_cndmask_b32_dpp %3, " C2 ", " D2 ", vcc quad_perm:" PERM " row_mask:0xf bank_mask:0xf"                     \
      : "=&v"(o[0]), "=&v"(o[1]), "=&v"(o[2]), "=&v"(o[3])                                                            \
      : "v"(i[0][0]), "v"(i[0][1]), "v"(i[0][2]), "v"(i[0][3]), "v"(i[1][0]), "v"(i[1][1]), "v"(i[1][2]), "v"(i[1][3]) \
      : "vcc")
    uint32_t o[4];
    if constexpr (ph < 2) {
      const uint32_t i[2][4] = {{c.x[0], c.x[1], c.x[2], c.x[3]}, {d.x[0], d.x[1], d.x[2], d.x[3]}};
      if constexpr (ph == 0) {  // t0 = (x2 from lane ^ 2, x0), t1 = (x3, x1)
        HK_QUAD_PHASE("0x33333333", "[2,3,0,1]", "%6", "%4", "%7", "%5", "%10", "%8", "%11", "%9");
        t[0][0] = o[0], t[0][1] = o[1], t[1][0] = o[2], t[1][1] = o[3];
      } else {  // t2 = (x0, x2), t3 = (x1, x3)
        HK_QUAD_PHASE("0xcccccccc", "[2,3,0,1]", "%4", "%6", "%5", "%7", "%8", "%10", "%9", "%11");
        t[0][2] = o[0], t[0][3] = o[1], t[1][2] = o[2], t[1][3] = o[3];
      }
    } else {
      const uint32_t(&i)[2][4] = t;
      if constexpr (ph == 2) {  // x0 = (t1 from lane ^ 1, t0), x2 = (t3, t2)
        HK_QUAD_PHASE("0x55555555", "[1,0,3,2]", "%5", "%4", "%7", "%6", "%9", "%8", "%11", "%10");
        c.x[0] = o[0], c.x[2] = o[1], d.x[0] = o[2], d.x[2] = o[3];
      } else {  // x1 = (t0, t1), x3 = (t2, t3)
        HK_QUAD_PHASE("0xaaaaaaaa", "[1,0,3,2]", "%4", "%5", "%6", "%7", "%8", "%9", "%10", "%11");
        c.x[1] = o[0], c.x[3] = o[1], d.x[1] = o[2], d.x[3] = o[3];
      }
    }
#undef HK_QUAD_PHASE
  }
  // c_low, c_all: attn_dropout_drop's (255 - keep_max) & 0x7f and 255 - keep_max in every byte.
  __device__ __attribute__((always_inline)) static uint32_t keep(uint32_t w, uint32_t c_low, uint32_t c_all) {
    uint32_t k = arch::current::maj_not(w, (w & 0x7f7f7f7fu) + c_low, c_all);
    pin(k);
    return k;
  }
};
// (An instance without dropout: AttnDropCall::Keys' stand-in.)
struct AttnDropNoKeys {
  template <int r>
  __device__ void get(const AttnArgs&, uint32_t&, uint32_t&) const {}
};
// A pair of T (lo: element 2 i of a keep word's four, hi: 2 i + 1) with its dropped elements 0: the word and the word
// shifted a byte give the elements' bits 7 to v_perm's sign selectors (8-11: the sign of byte 1, 3, 5, 7 of the pair
// of operands), each spread over its half (2 VALU, the shift shared by a word's two pairs).
template <int i>
__device__ __attribute__((always_inline)) inline uint32_t attn_drop_pair(uint32_t pair, uint32_t k) {
  return pair & __builtin_amdgcn_perm(k, k << 8, i == 0 ? 0x0a0a0808u : 0x0b0b0909u);
}
// Element t of a keep word's four, x >= +0 (P): x where kept, else a denormal below 2^-142 (attn_dropout_drop's
// unsigned minimum with the byte sign-extended: one v_min_u32 with an SDWA operand).
template <int t>
__device__ __attribute__((always_inline)) inline float attn_drop_min(float x, uint32_t k) {
  const uint32_t m = uint32_t(int32_t(int8_t(uint8_t(k >> 8 * t)))), b = __builtin_bit_cast(uint32_t, x);
  return __builtin_bit_cast(float, __builtin_elementwise_min(b, m));
}
// dS / (1 - p) of a pair (dq64's), Pd dP + P nd: P and P dropped (Pd), dP from 0 (dO V^T), nd = -delta (1 - p): P (keep dP / (1 -
// p) - delta) / (1 - p) (a packed multiply and a packed multiply-add).
__device__ __attribute__((always_inline)) inline void attn_drop_ds(float (&y)[2], const float (&pw)[2], const float (&pd)[2],
                                                                 const float (&dp)[2], const float (&nd)[2]) {
  using f2 = float __attribute__((ext_vector_type(2)));
  const f2 r = __builtin_elementwise_fma(f2{pd[0], pd[1]}, f2{dp[0], dp[1]}, f2{pw[0], pw[1]} * f2{nd[0], nd[1]});
  y[0] = r.x, y[1] = r.y;
}

}  // namespace hk::kernels
