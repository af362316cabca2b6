// The 8-wave ping-pong GEMM kernel: 256x256 tiles of C per workgroup of 8 waves (each 64 x 128 or 128 x 64), two LDS
// stages fed by buffer loads straight into LDS. A and B are bf16, f16, or fp8 (e4m3 or e5m2 in the arch's format, with
// B given N x K: the col-layout fp8 B fragments of A * B would not fit the registers). Forms (gemm_common.h) bring
// other MFMAs and epilogues on the same feed: hk::gemm_int8's int8 (gemm_int8_kernel.h). K steps are 128 bytes of each
// row deep where two stages of 256-row A and B tiles fit the LDS (gfx950's 160 KiB: 64 16-bit elements, two MFMAs deep,
// or 128 fp8, one) and 64 bytes on gfx942 (32 or 64 elements, two stages fill its 64 KiB).
//
// The schedule: the waves form two groups of four, half a step apart, so that one group's MFMAs run while the other
// group reads LDS and issues loads. Group 1 enters the loop one barrier late; every step is then a memory phase
// (LDS -> registers for the step's A and B fragments) and a compute phase (the step's MFMAs, at raised priority), each
// closed by a workgroup barrier, and while group 0 computes, group 1 is in its memory phase and vice versa.
// Group 0 fills A, group 1 fills B. With b(j) the j-th barrier, group 0's memory phase of step t ends at b(2t) and
// group 1's at b(2t+1); a stage holding step t is free once both have read it, after b(2t+1). Hence:
//   - group 0 issues A(t+1) in its memory phase of step t (stage (t+1)&1, free since b(2t-1)) and waits for it at
//     the end of its compute phase, before b(2t+1): the first reader starts after it;
//   - group 1 issues B(t+2) in its compute phase of step t (stage t&1, free since b(2t+1)) and waits for it at the
//     end of its memory phase of step t+1, before b(2t+3), which group 0's reads of step t+2 follow.
// Each load so flies for a whole phase of the other group. The memory phases end with their LDS reads complete
// (the barrier waits for them), so no stage is refilled under a read.
// The matrix cores idle only between one group's last MFMA and the other's first, so nothing else sits there: the
// priority is raised before the barrier that opens a compute phase and lowered after the one that closes it, group
// 0 waits for A(t+1) after its MFMAs, and where every B tile of the workgroup lies inside B (all but edge tiles and
// a K that is not whole steps) group 1's B loads are straight-line code, one issued after each of its first MFMAs
// (they cost ~190 cycles of branches and address work ahead of the MFMAs, 8% of the loop, when issued first). Before
// the loop the accumulators are zeroed while the first loads fly, not behind the barriers. After it each role hands
// its accumulators back and the form's epilogue follows the role branch once (inlined into each of the three roles it
// was most of the code to compile: gemm_mx.hip's gfx950 pass 205 -> 78 s).
#pragma once
#include "gemm_common.h"
#include "hk/ops/async.h"

namespace hk::kernels {

// A form may stage data of its own through LDS beside the tiles (hk::gemm_mx's scales): its `shared` struct lives
// in LDS, its wave's fill_a / fill_b issue LDS DMA loads with each A / B fill (`loads_b` of them per wave with B's,
// which the B group's waits count), waited for with the tiles, and read_staged reads a step's share out of its stage
// after the fragments. A staging form with `fills_tiles` fills the A and B stages itself too (fill_tiles, in the
// place of the stages' own fill; hk::gemm_mx's fp6, whose blocks are laid out apart in LDS).
template <class Form>
concept staging_form = requires { typename Form::shared; };
struct no_staging {};
template <class Form>
struct form_staging {
  using shared = no_staging;
  static constexpr int loads_b = 0;
  static constexpr bool fills_tiles = false;
};
template <staging_form Form>
struct form_staging<Form> {
  using shared = typename Form::shared;
  static constexpr int loads_b = Form::loads_b;
  static constexpr bool fills_tiles = Form::fills_tiles;
};
template <class Form>
using form_shared = typename form_staging<Form>::shared;
// A form whose instructions the arch lacks (hk::gemm_mx's elsewhere than gfx950, never launched there) says so with
// `compiled = false`: its kernel is then empty rather than compiled for nothing.
template <class Form>
constexpr bool form_compiled = [] {
  if constexpr (requires { Form::compiled; }) return bool(Form::compiled);
  else return true;
}();

namespace detail {

// A staging form takes the wave's place as scalars (readfirstlane), so that what derives from it stays out of the
// VGPRs kept across the loop.
template <class Form>
__device__ __attribute__((always_inline)) inline int wave_place() {
  return staging_form<Form> ? __builtin_amdgcn_readfirstlane(wave_id()) : wave_id();
}

// One wave group's side of the schedule, with its role fixed at compile time: each side's code keeps only its own
// loads' addresses live, which is what keeps the accumulators, fragments and addresses within the registers. It
// leaves the step's sums in acc (gemm_pingpong writes them).

template <bool LoadsA, bool InsideB, class TIn, bool BIsNK, int BM, int BN, int BK, int WM, int WN, class Form, class Stages,
          class View>
__device__ __attribute__((always_inline)) inline void pingpong(const typename Form::Args& p, Stages& s, form_shared<Form>& fs,
                                                               const View& v, rt_acc<WM, WN>& acc) {
  constexpr int waves_n = BN / WN;
  using Half = group<4>;
  constexpr int b_loads = async_loads<Half, typename Stages::BTile> + form_staging<Form>::loads_b;
  const async_wave<Half> wave;
  const int wave_s = wave_place<Form>();
  const int wr = wave_s / waves_n, wc = wave_s % waves_n;
  const int steps = (p.k + BK - 1) / BK;
  typename Form::template wave<WM, WN> form(p, BM * v.tile_m + WM * wr, BN * v.tile_n + WN * wc);
  auto fill = [&](int kt) __attribute__((always_inline)) {
    if constexpr (form_staging<Form>::fills_tiles) form.template fill_tiles<LoadsA, false>(p, s, fs, v, kt, kt & 1, wave);
    else if constexpr (LoadsA) s.template fill_a<true>(v, kt, kt & 1, wave);
    else s.template fill_b<true>(v, kt, kt & 1, wave);
    if constexpr (form_staging<Form>::fills_tiles) return;
    else if constexpr (staging_form<Form> && LoadsA) form.fill_a(p, fs, v, kt, kt & 1, wave);
    else if constexpr (staging_form<Form>) form.fill_b(p, fs, v, kt, kt & 1, wave);
  };
  auto fill_b_inside = [&](int kt, int stage) __attribute__((always_inline)) {
    if constexpr (form_staging<Form>::fills_tiles) {
      form.template fill_tiles<false, true>(p, s, fs, v, kt, stage, wave);
    } else {
      s.template fill_b<true, true>(v, kt, stage, wave);
      if constexpr (staging_form<Form>) form.fill_b(p, fs, v, kt, stage, wave);
    }
  };
  form.prefetch(p, 0);
  // The first loads, then the accumulators zeroed while they fly (the empty asms keep the compiler from moving
  // the zeroing, a cycle per register, behind the barriers, where it delayed the first MFMAs).
  if constexpr (InsideB) {  // straight-line: B(1) is B(0) again where K is one step
    fill_b_inside(0, 0);
    fill_b_inside(steps > 1 ? 1 : 0, 1);
  } else {
    fill(0);
    if (!LoadsA && steps > 1) fill(1);
  }
  zero(acc);
#pragma unroll
  for (int i = 0; i < acc.tiles_r; ++i)
#pragma unroll
    for (int j = 0; j < acc.tiles_c; ++j)
#pragma unroll
      for (int e = 0; e < acc.E; ++e) asm volatile("" : "+v"(acc.data[i][j][e]));
  if constexpr (LoadsA) {
    wait_vmcnt<0>();
  } else if (InsideB || steps > 1) {
    wait_vmcnt<b_loads>();
  } else {
    wait_vmcnt<0>();
  }
  barrier();
  if constexpr (!LoadsA) barrier();  // group 1 runs half a step behind
  for (int kt = 0; kt < steps; ++kt) {
    const int stage = kt & 1;
    // Memory phase: this step's fragments into registers; group 0 issues the next A, group 1 waits for its B.
    rt<TIn, WM, BK> ra;
    std::conditional_t<BIsNK, rt<TIn, WN, BK>, rt<TIn, BK, WN, layout::col>> rb;
    form.read(ra, s.a[stage], {0, 0, wr, 0});
    form.read(rb, s.b[stage], BIsNK ? coord{0, 0, wc, 0} : coord{0, 0, 0, wc});
    form.prefetch(p, kt + 1);
    if constexpr (LoadsA) {
      if (kt + 1 < steps) fill(kt + 1);
    } else {
      wait_vmcnt<0>();
    }
    if constexpr (staging_form<Form>) form.read_staged(fs, stage);  // after the fill: its registers free under it
    // Compute phase: the MFMAs, at raised priority (raised before the barrier and lowered after the next, so that
    // nothing but the barrier lies between one group's last MFMA and the other's first); group 1 issues B two steps
    // ahead, group 0 waits for its A after its MFMAs.
    sched_barrier();
    set_priority<1>();
    barrier();
    auto mma = [&]() __attribute__((always_inline)) { form.mma(acc, ra, rb); };
    if constexpr (LoadsA) {
      mma();
      sched_barrier();
      wait_vmcnt<0>();
    } else if constexpr (InsideB) {
      // Every B tile inside the operand: the loads without a branch, one after each of the first MFMAs, so that the
      // matrix cores start at once and the loads issue in the shadow of the multiplies. Past the last step they
      // load the last step's tile again, into the stage this step has consumed (nobody reads it again).
      fill_b_inside(kt + 2 < steps ? kt + 2 : steps - 1, stage);
      mma();
      interleave_mfma<b_loads, 1, sched::vmem>();
    } else {
      if (kt + 2 < steps) fill(kt + 2);
      mma();
    }
    sched_barrier();
    barrier();
    set_priority<0>();
  }
  if constexpr (LoadsA) barrier();  // group 0 meets group 1's last barrier
}

}  // namespace detail

// Form: the fragment reads, MFMAs and epilogue (GemmPlainForm, gemm_common.h; hk::gemm_int8 brings its own).
template <class TIn, class TOut, bool BIsNK, int BM = 256, class Form = GemmPlainForm>
__global__ __launch_bounds__(512) void gemm_pingpong(typename Form::Args p) {
  // Each wave owns a WM x WN block of C. With B in the col layout (A * B) the wide side goes to A, whose row-layout
  // reads are the cheap ones: that keeps gfx942's 256 VGPRs free of spills. The half-height form (BM = 128, in
  // logical 256-row units of two: GemmView's Pieces) gives every wave 64 x 64; hk::gemm runs it for a last round of
  // tiles that would fill under half the CUs, where two half tiles per 256 x 256 tile take about half the time.
  static_assert(BM == 256 || BM == 128, "gemm_pingpong: 256- or 128-row tiles");
  if constexpr (form_compiled<Form>) {
    constexpr int BN = 256, WM = BM == 128 ? 64 : BIsNK ? 64 : 128, WN = BM == 128 ? 64 : BIsNK ? 128 : 64;
    // K steps of 128 bytes of each row where two stages of 256-row A and B tiles fit (gfx950), 64 bytes on gfx942.
    constexpr int BK = (arch::current::lds_bytes >= 128 * 1024 ? 128 : 64) / int(sizeof(TIn));
    using Stages = GemmStages<TIn, BM, BN, BK, BIsNK, group<4>>;
    __shared__ Stages s;
    __shared__ form_shared<Form> fs;  // (none for a form without staging: the unused variable takes no LDS)
    const GemmView<TIn, TOut, BIsNK, BM, BN, 256 / BM> v(p);
    if (!v.live) return;  // a grouped grid's workgroup without a tile
    // Group 0 loads A; group 1 loads B, without a per-step test where every B tile of the workgroup lies inside B (the
    // last K step's does). The roles hand back their accumulators and the epilogue follows once, not inlined into each
    // role (it was most of the code the compiler had to schedule).
    rt_acc<WM, WN> acc;
    if (wave_id() < 4) detail::pingpong<true, false, TIn, BIsNK, BM, BN, BK, WM, WN, Form>(p, s, fs, v, acc);
    else if (Stages::b_inside(v, (p.k + BK - 1) / BK - 1)) detail::pingpong<false, true, TIn, BIsNK, BM, BN, BK, WM, WN, Form>(p, s, fs, v, acc);
    else detail::pingpong<false, false, TIn, BIsNK, BM, BN, BK, WM, WN, Form>(p, s, fs, v, acc);
    const int wave_s = detail::wave_place<Form>(), wr = wave_s / (BN / WN), wc = wave_s % (BN / WN);
    typename Form::template wave<WM, WN> form(p, BM * v.tile_m + WM * wr, BN * v.tile_n + WN * wc);
    form.store(p, v, acc, v.template out_block<WM, WN>(wr, wc));
  }
}

}  // namespace hk::kernels
