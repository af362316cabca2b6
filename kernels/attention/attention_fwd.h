// The 4-wave attention forward kernel (8 waves where the LDS holds one workgroup per CU): one workgroup per (query
// tile, query head, sequence), each wave owning 16 queries (attention_common.h); K and V tiles of 64 keys loaded
// straight into LDS (buffer loads with the lds modifier), two stages deep, so the next tile's loads fly while the
// waves compute on the current one. Only the KV tiles some query of the tile sees are visited. It runs where the
// 8-wave ping-pong kernel does not (attn_pingpong_runs: gfx942 at D = 128, and every wide head).
//
// Two waves per SIMD in either shape: one wave's softmax (vector work) and LDS reads run while the other's MFMAs do.
// Where two workgroups' stages fit the LDS they are two workgroups of 4 waves; where one does (gfx942, D = 128: the
// stages take its 64 KiB) the workgroup has 8 waves, all reading the same stages (twice the reuse of each tile).
//
// One barrier per KV tile (the 8-wave V^T form below takes two): each wave waits for its own loads of tile t, then the barrier makes every wave's part of
// tile t visible and certifies that every wave has finished reading tile t-1's stage, which the loads of tile t+1,
// issued right after it, overwrite. Q goes from global memory straight into registers.
//
// V without transposing LDS reads (gfx942, 64-key tiles; AttnVtStage): O^T += V^T P^T needs V^T as the A operand, four
// consecutive keys of one column per lane, which a row-major V tile gives only element by element (128 ds_read_u16 and
// 64 v_perm per wave and tile, repeated by each of the 8 waves). So V's stages hold V^T instead, written once per
// tile by the workgroup: each lane loads its 4 keys x 4 columns of V into registers (4 buffer loads) and writes them,
// transposed by 8 v_perm, as four 8-byte rows of the stage; every wave then reads V^T as a plain row-layout A operand
// (ds_read_b64, conflict free like K). The running max's rare move runs under a branch (rebase<true>).
//
// There (8 waves, `vt`) the waves form two groups of four, one of each on every SIMD, one phase apart: with one
// barrier a tile both waves of a SIMD ran their softmax at once while the matrix core idled, and the first to finish
// waited a third of the tile at the barrier. Each tile kt takes two phases, each ending at a workgroup barrier:
//   M(kt)  S^T(kt) = K Q^T and O^T += V^T(kt-1) P^T(kt-1): the K and V^T reads and 64 MFMAs, at priority 1;
//   V(kt)  V^T(kt + g) from the registers into its stage, the loads of tile kt + 1 + g (this wave's eighth of K, its
//          part of V into the registers), the masks and the softmax of S^T(kt), O^T's rescale and P^T(kt);
// group g = 1 runs one phase behind (an extra barrier at the start), so one group's softmax runs under the other's
// MFMAs. A stage is rewritten only after both groups' last read: K(kt) in stage kt % 2 is read in the phases M(kt)
// of the two groups (slots 2kt and 2kt+1, counting slots between barriers) and its stage refilled (K(kt+2)) in slots
// 2kt+2 (group 1, V(kt+1)) and 2kt+3 (group 0, V(kt+2)), each waited for (vmcnt) before the barrier that ends the
// slot; V^T(kt), read in slots 2kt+2 and 2kt+3, is written in slots 2kt (group 1, V(kt-1)) and 2kt+1 (group 0, V(kt))
// over V^T(kt-2), last read in slot 2kt-1. The prologue gives group 1 V^T(kt_begin) and its part of K(kt_begin + 1).
// Modelled on MI300X, GQA D128 N8192: 499.7 -> 550.7 TFLOP/s (one barrier a tile before; the loads and V^T's writes in
// the M phase: 497.6; without the sched_barriers that keep each phase's work on its side of the barrier: 516.5). Each wave reads all of K and V^T a tile (16 queries a wave): the LDS's 128 bytes a clock per CU
// take as long as the MFMAs, so the M phase is bound by both.
//
// Wide heads (attention_heads.h): a wave takes 32 keys a step (16 on gfx942), so that it holds O^T (DV x 16 fp32, 64
// VGPRs at DV = 256), Q and one step's K or V (64 VGPRs at 256) within the 256 registers of two waves per SIMD. The LDS
// tiles (attn_fwd_keys) are 64 keys on gfx950 at D = 192 and 256 (one workgroup of 8 waves) and 32 at 192 / 128 (two
// of 4) and on gfx942, whose 64 KiB two stages of 32 keys fill at D = 256 (there one wave per SIMD: attn_fwd_simd_waves).
#pragma once
#include "attention_common.h"
#include "attention_fwd_pingpong.h"
#include "attention_heads.h"
#include "hk/ops/edges.h"

namespace hk::kernels {

// Waves per SIMD (host and device): two, so that one wave's softmax and LDS reads run under the other's MFMAs; declaring
// it lets the compiler keep the MFMA accumulators in arch VGPRs (it uses AGPRs when a wave may own all 512 registers,
// and then every rescale of O^T copies it out and back). One at D = 256 without transposing LDS reads (gfx942): there
// the lane parts of the LDS addresses (one per column block of K and V) and V's unpacked reads pass the 256 registers
// of two (23 VGPRs spilled).
__host__ __device__ constexpr int attn_fwd_simd_waves(bool lds_read_transpose, int d, int dv) {
  return d + dv > 384 && !lds_read_transpose ? 1 : 2;
}
// Keys of a KV tile (host and device): 64; 32 for wide heads (attn_tile_keys) without transposing LDS reads (gfx942:
// two stages of 64 keys at D = 256 would take twice its 64 KiB) and at 192 / 128, whose 147 VGPRs let three waves a
// SIMD run (two workgroups' stages fit at 32 keys, one at 64; modelled on MI355X at GQA N8192: 841 against 736
// TFLOP/s; at D = 192 and 256 64-key tiles gain 7% and 1%). A wide head's wave takes a tile 32 keys at a time (16 on
// gfx942).
__host__ __device__ constexpr int attn_fwd_keys(bool lds_read_transpose, int d, int dv) {
  return lds_read_transpose && d == dv ? AttnTiles::keys : attn_tile_keys(d, dv);
}
// Waves of a workgroup (host and device): 4 where the LDS holds two workgroups' stages (two of K and two of V tiles),
// else 8; half as many at one wave per SIMD.
__host__ __device__ constexpr int attn_waves(int lds_bytes, bool lds_read_transpose, int d, int dv) {
  return (lds_bytes / (2 * attn_fwd_keys(lds_read_transpose, d, dv) * (d + dv) * 2) >= 2 ? 4 : 8) *
         attn_fwd_simd_waves(lds_read_transpose, d, dv) / 2;
}
template <int D, int DV>
inline constexpr int attn_fwd_waves = attn_waves(arch::current::lds_bytes, arch::current::lds_read_transpose, D, DV);

// V^T staged through registers (targets without transposing LDS reads, 64-key tiles): each lane of the workgroup
// loads 4 keys x 4 columns of V (four 8-byte buffer loads, rows past the sequence's end read as zero), turns them into
// 4 columns x 4 keys with 8 v_perm and writes them as four 8-byte rows of the shared V^T tile (DV x 64: a row is a
// column of V, 128 bytes). The 16 lanes of a write phase take the 16 key chunks of one row, so the writes are
// conflict free under any swizzle, and every wave then reads V^T as a plain row-layout A operand (ds_read_b64).
template <class G, class T, int BK, int DV>
struct AttnVtStage {
  static_assert(sizeof(T) == 2 && BK == 64, "V^T staging: 16-bit elements, 64-key tiles");
  static constexpr int span = 16 * G::waves, groups = DV / span;  // columns of one pass of the workgroup; passes
  static_assert(DV % span == 0, "V^T staging: the columns split evenly over the waves");
  using u2 = uint32_t __attribute__((ext_vector_type(2)));
  u2 x[groups][4];  // keys 4c + kk, columns d0 + span n .. + 3
  int lane_off, c, d0;
  __device__ AttnVtStage(int wave) {
    const int lane = lane_id();
    c = lane % 16, d0 = 4 * (wave * 4 + lane / 16);
  }
  // V's tile kt (rows kt BK ...) into the registers: the whole offset in the lane's part, so that the buffer's range
  // check zeroes the rows past the end.
  template <class GL>
  __device__ __attribute__((always_inline)) void load(const GL& v, int kt) {
    const int ld = int(v.row_stride() * long(sizeof(T)));
    const int num_records = int(((long(v.rows()) - 1) * v.row_stride() + v.cols()) * long(sizeof(T)));
    const __amdgpu_buffer_rsrc_t rsrc = arch::current::buffer_rsrc(v.data, num_records);
    const int base = (4 * c) * ld + d0 * int(sizeof(T));
#pragma unroll
    for (int n = 0; n < groups; ++n)
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        x[n][kk] = __builtin_amdgcn_raw_buffer_load_b64(rsrc, base + (kt * BK + kk) * ld + n * span * int(sizeof(T)), 0, 0);
  }
  // The registers, transposed, into the shared V^T tile.
  template <class ST>
  __device__ __attribute__((always_inline)) void store(ST& s) const {
#pragma unroll
    for (int n = 0; n < groups; ++n)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t sel = j % 2 ? 0x07060302u : 0x05040100u;
        const u2 w = {__builtin_amdgcn_perm(x[n][1][j / 2], x[n][0][j / 2], sel),
                      __builtin_amdgcn_perm(x[n][3][j / 2], x[n][2][j / 2], sel)};
        *reinterpret_cast<u2*>(&s(n * span + j, d0, 4 * c)) = w;
      }
  }
};

template <class T, int D, AttnVariant V = AttnVariant{}, int DV = D>
__global__ __launch_bounds__((64 * attn_fwd_waves<D, DV>))
__attribute__((amdgpu_waves_per_eu(attn_fwd_simd_waves(arch::current::lds_read_transpose, D, DV)))) void attention_fwd(AttnArgs p) {
  // The instances the host launches: fp8's, and none where the ping-pong kernel runs instead (check_arch's rule:
  // gfx950 at D = 64 and 128, gfx942 at D = 64).
  if constexpr (attn_qk_fits<T, mfma16, D> && !(D == DV && attn_pingpong_fits<D>)) {
    // Keys of a tile, and of a wave's step: a wide head's tile in halves without transposing LDS reads (gfx942), whose
    // acc-order reads of V hold an element a register before packing (32 keys at D = 256: 83 VGPRs spilled).
    constexpr bool tr = arch::current::lds_read_transpose;
    constexpr int BK = attn_fwd_keys(tr, D, DV), WK = attn_wide(D, DV) ? attn_tile_keys(D, DV) / (tr ? 1 : 2) : BK;
    using W = AttnWave<T, D, mfma16, V, WK, DV>;
    using G = group<attn_fwd_waves<D, DV>>;
    constexpr int rows = G::waves * AttnTiles::wave_rows;  // queries per workgroup
    __shared__ st<attn_qk_t<T>, BK, attn_qk_cols<T>(D)> sk[2];  // two stages of K and V
    // V^T staged through registers where the LDS cannot transpose (AttnVtStage): V's stages hold V^T.
    using TV = attn_value_t<T>;
    // It runs the two groups' schedule below (8 waves: gfx942 at D = 128, its only 64-key tiles here).
    constexpr bool vt = !tr && WK == BK && BK == 64 && sizeof(TV) == 2;
    static_assert(!vt || G::waves == 8, "attention_fwd: V^T staging comes with the 8-wave two-group schedule");
    __shared__ std::conditional_t<vt, st<TV, DV, BK>, st<TV, BK, DV>> sv[2];

    const AttnView<T, D, DV> view(p, rows, BK);
    if (view.empty) return;  // past the end of a shorter sequence (varlen)
    attn_descale<T, V.softcap>(p, view.blk);
    const int kt_begin = view.kt_begin, kt_end = view.kt_end;
    // Tile kt's K and V into stage `stage`, zeros past the last key.
    const async_wave<G> dma_wave;  // read once: the loads' per-lane addressing stays out of the loop
    // K's stage and, on the edge path, the wave index pass through empty asms, so that the compiler does not hold every
    // load's LDS address (M0, two stages) and the edge tile's row offsets in SGPRs across the loop: with them the 8-wave
    // V^T form spilled 18 SGPRs on gfx942. Each M0 is then one add to the stage's base; the lane parts stay hoisted.
    using SK = std::remove_reference_t<decltype(sk[0])>;
    auto fill = [&](int kt, int stage) __attribute__((always_inline)) {
      auto lds = (__attribute__((address_space(3))) char*)&sk[stage];
      asm volatile("" : "+s"(lds));
      SK& dst = *(SK*)(char*)lds;
      const coord at{0, 0, kt, 0};
      if (async_inside<SK>(view.k, at)) {
        load_async_inside<G>(dst, view.k, at, dma_wave);
      } else {
        async_wave<G> w = dma_wave;
        asm volatile("" : "+s"(w.index));
        load_async<G>(dst, view.k, at, w);
      }
      if constexpr (!vt) load_async<G>(sv[stage], view.v, at, dma_wave);
    };
    struct none {
      __device__ explicit none(int) {}
    };
    std::conditional_t<vt, AttnVtStage<G, TV, BK, DV>, none> vs(dma_wave.index);
    // Two groups of four waves (one of each on every SIMD), one phase apart (see the top).
    auto pingpong = [&](W& me) __attribute__((always_inline)) {
     if constexpr (vt) {  // (vs is AttnVtStage)
      const int grp = __builtin_amdgcn_readfirstlane(wave_id()) / 4;
      // A wave of group g stores V^T(kt + g) and loads its part of K(kt + 1 + g) and V(kt + 1 + g) in V(kt); the
      // prologue gives group 1 V^T(kt_begin) and its part of K(kt_begin + 1).
      if (kt_begin < kt_end) {
        fill(kt_begin, 0);
        vs.load(view.v, kt_begin);
        if (grp) {
          wait_vmcnt<0>();
          vs.store(sv[0]);
          if (kt_begin + 1 < kt_end) {
            fill(kt_begin + 1, 1);
            vs.load(view.v, kt_begin + 1);
          }
        }
      }
      load_bounded(me.q, view.q, {0, 0, me.row_tile, 0});
      wait_vmcnt<0>();
      barrier();
      if (grp) barrier();  // group 1 runs one phase behind
      typename W::s_tile s;
      typename W::p_tile pt;
      // M: S^T(kt) (where qk) and O^T += V^T(kt-1) P^T(kt-1) (where pv); `st_of`: the stage of tile kt.
      auto mphase = [&](auto st_of, auto qk, auto pv) __attribute__((always_inline)) {
        constexpr int st = decltype(st_of)::value;
        set_priority<1>();
        if constexpr (decltype(qk)::value) {
          typename W::k_tile k;
          load(k, sk[st]);
          me.qk(s, k);
        }
        if constexpr (decltype(pv)::value) {
          rt<TV, DV, BK, layout::row, mfma16> vtile;  // V^T, a plain row-layout read
          load(vtile, sv[st ^ 1]);
          mma_AB(me.ot, vtile, pt, me.ot);
        }
        set_priority<0>();
        sched_barrier();
        barrier();
        sched_barrier();
      };
      // V: V^T(kt + g) into its stage, the loads of tile kt + 1 + g; the masks, the online softmax of S^T(kt), O^T's
      // rescale, P^T(kt).
      auto vphase = [&](int kt, auto st_of) __attribute__((always_inline)) {
        constexpr int st = decltype(st_of)::value;
        const int kn = kt + grp;
        auto io = [&](auto so) __attribute__((always_inline)) {
          constexpr int sn = decltype(so)::value;
          vs.store(sv[sn]);
          if (kn + 1 < kt_end) {
            fill(kn + 1, sn ^ 1);
            vs.load(view.v, kn + 1);
          }
        };
        if (kn < kt_end) {
          if (grp) io(std::integral_constant<int, st ^ 1>{});
          else io(std::integral_constant<int, st>{});
        }
        me.bias(s, view, p, kt);
        me.mask(s, view, p, kt);
        me.template rebase<true>(s, p);
        me.rescale();
        me.exp(s, pt, p);
        wait_vmcnt<0>();  // the loads of tile kt + 1 + g
        sched_barrier();  // P^T's conversion and l's sums stay here, off the MFMAs' phase
        barrier();
        sched_barrier();
      };
      using zero = std::integral_constant<int, 0>;
      using one = std::integral_constant<int, 1>;
      using yes = std::true_type;
      using no = std::false_type;
      if (kt_begin < kt_end) {
        mphase(zero{}, yes{}, no{});
        for (int kt = kt_begin;; kt += 2) {
          vphase(kt, zero{});
          if (kt + 1 == kt_end) {
            mphase(one{}, no{}, yes{});
            break;
          }
          mphase(one{}, yes{}, yes{});
          vphase(kt + 1, one{});
          if (kt + 2 == kt_end) {
            mphase(zero{}, no{}, yes{});
            break;
          }
          mphase(zero{}, yes{}, yes{});
        }
      }
      if (!grp) barrier();  // group 0 meets group 1's last barrier
      // The epilogue's arguments and view read again from the kernel's arguments (an opaque pointer to them), so that O's
      // and LSE's addresses are not held in SGPRs across the loop; only attn_descale's O factor (fp8) is carried over.
      auto args = (__attribute__((address_space(4))) const AttnArgs*)__builtin_amdgcn_kernarg_segment_ptr();
      asm volatile("" : "+s"(args));
      AttnArgs pe = *(const AttnArgs*)args;
      if constexpr (fp8_input<T>) pe.o_scale = p.o_scale;
      me.finish(AttnView<T, D, DV>(pe, rows, BK), pe);
     }
    };
    if (!vt && kt_begin < kt_end) fill(kt_begin, 0);
    W me(view, G::wave() * AttnTiles::wave_rows);
    if constexpr (vt) {  // the two groups' schedule (see the top): its own prologue and loop
      pingpong(me);
      return;
    }
    load_bounded(me.q, view.q, {0, 0, me.row_tile, 0});  // waited for with tile kt_begin

    // One KV tile in stage `stage_of` (0 or 1; a compile-time constant where the loop below takes the tiles in pairs, so
    // that every LDS address is a register fixed for the kernel plus an immediate offset).
    auto step = [&](int kt, auto stage_of) __attribute__((always_inline)) {
      const int stage = int(stage_of);
      wait_vmcnt<0>();
      barrier();  // tile kt is in; every wave is done with the other stage
      if (kt + 1 < kt_end) fill(kt + 1, stage ^ 1);
  #pragma unroll
      for (int h = 0; h < BK / WK; ++h) {
        typename W::k_tile k;
        load(k, sk[stage], {0, 0, h, 0});
        const auto pt = me.scores(view, p, kt * (BK / WK) + h, k);
        typename W::v_tile vc;
        load_acc_order(vc, sv[stage], {0, 0, h, 0});
        me.accumulate(pt, vc);
      }
    };
    // Pairs of tiles, each with its stage fixed: the addresses cost registers (gfx950 D = 128: 150 -> 196 VGPRs), which
    // the 256 of two waves per SIMD have room for.
    // Where a wave's step is half a tile (wide heads on gfx942) the registers have no such room: one tile a step, the
    // stage a runtime index.
    if constexpr (WK < BK) {
      for (int kt = kt_begin; kt < kt_end; ++kt) step(kt, (kt - kt_begin) & 1);
    } else {
      for (int kt = kt_begin; kt < kt_end; kt += 2) {
        step(kt, std::integral_constant<int, 0>{});
        if (kt + 1 < kt_end) step(kt + 1, std::integral_constant<int, 1>{});
      }
    }
    me.finish(view, p);
  }
}

}  // namespace hk::kernels
