// A loop body's instruction order made at compile time, for kernels at one wave per SIMD, where no other wave's VALU
// work hides this wave's: the wave issues in order, an MFMA holds the SIMD's VALU/MFMA issue for a quarter of the
// matrix core's time (4 of 16 cycles for a 16x16x32 MFMA), so the matrix core stays fed only where the VALU work
// between two MFMAs fits the rest (12 cycles). The body's MFMAs run in their order; its VALU work is a list of tasks,
// each with a cost (cycles of issue) and the MFMA after which its inputs are ready; after each MFMA the ready tasks
// follow, in their order, while a credit (`budget` cycles a MFMA, capped at `cap`) covers their cost, and the tasks an
// MFMA needs go before it whatever the credit. The order is a table of events (MFMA m: m; task t: M + t) that
// `run_schedule` issues as straight-line code, each event a call of `f.template operator()<event>()` with a
// scheduling barrier after it (LLVM does not know an asm MFMA's latency: left to it, the order is lost).
#pragma once
#include <utility>

namespace hk {

template <int M, int T>
struct schedule {
  static constexpr int mfmas = M, tasks = T;
  int n = 0;
  short ev[M + T] = {};
};

// cost(t), ready(t) (the MFMA count issued before t may go), needs(m) (the tasks that must precede MFMA m: a count).
// A task costing `solo` cycles or more (a transcendental, whose 16 cycles hold the SIMD's vector unit past the next
// MFMA's issue: any VALU work after it in the same gap waits for it, and the MFMA after that) goes only first after an
// MFMA, and ends the gap.
template <int M, int T, class Cost, class Ready, class Needs>
constexpr schedule<M, T> make_schedule(Cost cost, Ready ready, Needs needs, int budget, int cap, int solo = 1 << 30) {
  schedule<M, T> s{};
  int t = 0, credit = 0;
  for (int m = 0; m < M; ++m) {
    while (t < needs(m)) s.ev[s.n++] = short(M + t++);
    s.ev[s.n++] = short(m);
    credit = credit + budget > cap ? cap : credit + budget;
    for (bool first = true; t < T && ready(t) <= m + 1 && cost(t) <= credit && (first || cost(t) < solo);) {
      credit -= cost(t), s.ev[s.n++] = short(M + t++), first = false;
      if (cost(t - 1) >= solo) break;
    }
  }
  while (t < T) s.ev[s.n++] = short(M + t++);
  return s;
}

// A task's result held where its task ran: LLVM sinks pure arithmetic into the block after a branch that follows it
// (a masked tile's test, a guarded load or store), undoing the order; an empty volatile asm that takes and gives the
// value keeps its computation before that point (no instruction).
template <class X, class... Y>
__device__ __attribute__((always_inline)) inline void pin(X& x, Y&... y) {
  asm volatile("" : "+v"(x));
  if constexpr (sizeof...(Y) > 0) pin(y...);
}

// A wave-uniform int pinned where it is made, in an SGPR (read from the first lane: an SGPR asm on a value LLVM holds
// in a VGPR does not compile): nothing computed from it moves above this point, and LLVM cannot see it as a bool to
// keep as a lane mask.
__device__ __attribute__((always_inline)) inline void pin_uniform(int& x) {
  x = __builtin_amdgcn_readfirstlane(x);
  asm volatile("" : "+s"(x));
}

template <const auto& Plan, class F>
__device__ __attribute__((always_inline)) inline void run_schedule(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) __attribute__((always_inline)) {
    ((f.template operator()<Plan.ev[I]>(), __builtin_amdgcn_sched_barrier(0)), ...);
  }(std::make_integer_sequence<int, Plan.n>{});
}

}  // namespace hk
