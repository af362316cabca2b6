// The online softmax of one wave's masked S^T tile (AttnWave, attention_common.h), in two parts that the pipelined
// forward runs in different phases: attn_rebase moves the running max, attn_exp makes P^T and the denominator.
//
// The running max m moves only when some query's max grew by more than 8 (log2 units; flash-attention 4's lazy
// rescale): otherwise p = exp2(s c - m) stays below 2^8, well inside fp32 and bf16, O^T and l need no rescale, and the
// wave skips it. Each lane tests the max of its own elements, and only when one grew (rare past the first tiles) does
// the wave reduce the columns across lanes, move m and scale l by alpha (the factor O^T takes in rescale). m starts
// finite (attn_no_max), so that a hidden score's p is exp2(-inf) = 0 with no test.
#pragma once

namespace hk::kernels {

// The running max of W's queries over S^T (its masks applied), alpha and stale for rescale, l scaled by alpha. Where
// Branch, the rare work runs under a branch (the pipelined kernel's memory phase); else it is selected, as a branch
// would split the compute phase's schedule.
template <bool Branch, class W>
__device__ __attribute__((always_inline)) inline void attn_rebase(W& w, typename W::s_tile& s, const AttnArgs& p) {
  using s_tile = typename W::s_tile;
  const float c = p.scale_log2;
  typename W::cols_vec top;
#pragma unroll
  for (int j = 0; j < s_tile::tiles_c; ++j) {
    float x = -INFINITY;  // (a known operand: no canonicalizing max of the first elements)
#pragma unroll
    for (int i = 0; i < s_tile::tiles_r; ++i)
#pragma unroll
      for (int e = 0; e < s_tile::E; ++e) x = fmaxf(x, s.data[i][j][e]);
    top.data[j][0] = x;
  }
  bool grow = false;
  vec_apply([c, &grow](float& mi, float& ti) { grow = grow || ti * c - mi > 8.f; }, w.m, top);
  w.stale = __builtin_amdgcn_ballot_w64(grow) != 0;
  auto move = [&](bool moved) __attribute__((always_inline)) {
#pragma unroll
    for (int j = 0; j < s_tile::tiles_c; ++j)
      top.data[j][0] = detail::lanes_reduce<detail::max_op>(top.data[j][0], W::shape::dim, 32);  // as col_max
    vec_apply(
        [c, moved](float& mi, float& ti, float& ai, float& li) {
          const float m_new = moved ? fmaxf(mi, ti * c) : mi;
          ai = moved ? __builtin_amdgcn_exp2f(mi - m_new) : 1.f;
          li *= ai, mi = m_new;
        },
        w.m, top, w.alpha, w.l);
  };
  if constexpr (Branch) {
    if (w.stale) move(true);
  } else {
    move(w.stale);
  }
}

// p = exp2(s c - m) and its column sums (into l), two elements per packed instruction, and P^T in acc order. In three
// passes over the tile (in place: no registers), so that no exp2 waits on the multiply-add just before it, nor a sum
// on its exp2.
template <class W>
__device__ __attribute__((always_inline)) inline void attn_exp(W& w, typename W::s_tile& s, typename W::p_tile& pt,
                                                               const AttnArgs& p) {
  using s_tile = typename W::s_tile;
  const float c = p.scale_log2;
  using f2 = float __attribute__((ext_vector_type(2)));
  auto pairs = [&](auto f) __attribute__((always_inline)) {
#pragma unroll
    for (int j = 0; j < s_tile::tiles_c; ++j)
#pragma unroll
      for (int i = 0; i < s_tile::tiles_r; ++i)
#pragma unroll
        for (int e = 0; e < s_tile::E; e += 2) {
          f2 x = {s.data[i][j][e], s.data[i][j][e + 1]};
          f(x, j);
          s.data[i][j][e] = x.x, s.data[i][j][e + 1] = x.y;
        }
  };
  pairs([&](f2& x, int j) { x = x * f2{c, c} + f2{-w.m.data[j][0], -w.m.data[j][0]}; });
  pairs([](f2& x, int) { x = f2{__builtin_amdgcn_exp2f(x.x), __builtin_amdgcn_exp2f(x.y)}; });
  f2 acc[s_tile::tiles_c];
  bool first[s_tile::tiles_c];
  for (bool& f : first) f = true;
  pairs([&](f2& x, int j) { acc[j] = first[j] ? x : acc[j] + x, first[j] = false; });
#pragma unroll
  for (int j = 0; j < s_tile::tiles_c; ++j)
    w.l.data[j][0] += detail::lanes_reduce<detail::sum_op>(acc[j].x + acc[j].y, W::shape::dim, 32);  // as col_sum
  // Dropout after the sums (l takes the whole P); its 1 / (1 - p) waits for finish. The seed and stream opaque
  // (recomputed at each call) in the 32x32 (ping-pong) kernel only, whose SGPRs the hoisted keys spilled; the 16x16 kernels
  // are faster with them hoisted (MI300X GQA D128 N8192 dropout 0.1: 478.4 -> 487.8 TFLOP/s).
  if (attn_dropout_on<W::variant>(p)) {
    constexpr bool opaque_keys = std::is_same_v<typename W::shape, mfma32>;
    attn_dropout_drop<s_tile, W::variant.dynamic, opaque_keys>(s, p, w.drop_b, w.drop_h, int(w.first), w.drop_k0);
    // Where one instruction converts a pair (bf16_convert), the selects in fp32 first: else LLVM converts each element
    // alone, selects the bf16 and packs the pairs (16 VALU a tile more). Without it (gfx942: a convert is ~5 VALU a
    // value either way) the barrier only costs: 487.8 -> 499.9.
    if constexpr (arch::current::bf16_convert) pairs([](f2& x, int) { asm volatile("" : "+v"(x.x), "+v"(x.y)); });
  }
  copy_acc_order(pt, s, AttnProbTo{});  // P^T: the accumulator itself, in acc order (attention_p.h)
}

}  // namespace hk::kernels
