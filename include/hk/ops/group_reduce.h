// Sums over every thread of a group: a row statistic of a row held across the lanes (and waves) of a group, as the
// memory-bound row kernels (norms) hold theirs. Within a wave: xor shuffles, so every lane ends with the total.
// Across the waves of a group: one partial per wave through a shared vector, added in wave order, so the result is
// the same bit for bit in every lane and every run.
#pragma once
#include "../types/sv.h"
#include "scope.h"
#include "sync.h"

namespace hk {

// x[k] = sum of x[k] over the 64 lanes of the wave, in every lane.
template <int K>
__device__ inline void wave_sum(float (&x)[K]) {
#pragma unroll
  for (int o = 32; o >= 1; o >>= 1)
#pragma unroll
    for (int k = 0; k < K; ++k) x[k] += __shfl_xor(x[k], o);
}

// x[k] = sum of x[k] over the threads of group G, in every thread. Every thread of the workgroup must call it (it
// holds workgroup barriers when G spans more than one wave); `scratch` holds K floats per wave of the workgroup.
template <class G, int K, int N>
__device__ inline void group_sum(float (&x)[K], sv<float, N>& scratch) {
  wave_sum(x);
  if constexpr (G::waves > 1) {
    const int w = wave_id(), first = w - G::wave();
    if (lane_id() == 0)
#pragma unroll
      for (int k = 0; k < K; ++k) scratch[w * K + k] = x[k];
    barrier();
#pragma unroll
    for (int k = 0; k < K; ++k) {
      float s = scratch[first * K + k];
#pragma unroll
      for (int i = 1; i < G::waves; ++i) s += scratch[(first + i) * K + k];
      x[k] = s;
    }
    barrier();  // the scratch may be reused by the next call
  }
}

}  // namespace hk
