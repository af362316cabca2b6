// mma for bf16 and f16 with fp32 accumulation in both MFMA families (16x16: v_mfma_f32_16x16x16 on gfx942, 16x16x32
// on gfx950; 32x32: 32x32x8 on gfx942, 32x32x16 on gfx950): every orientation (AB, ABt, AtB, AtBt), operands from
// global memory and through shared tiles, C accumulated, and attention's P V, each against the host matmul
// (mma_cases.h). Families in [hk summary]: Mma (16x16), Mma32 (32x32).
#include "mma_cases.h"

using namespace hk;

// The 32x32 layout formulas themselves (host): the accumulator is the 32x32 MFMA's D (lane j + 32 ((i / 4) % 2),
// register 4 (i / 8) + i % 4), and an operand fragment holds k = (lane / 32) * E + e.
static_assert(rt_acc32<32, 32>::E == 16 && rt_acc32<32, 32>::base_rows == 32 && rt_acc32<32, 32>::base_cols == 32);
constexpr bool acc32_layout_ok() {
  for (int i = 0; i < 32; ++i)
    for (int j = 0; j < 32; ++j) {
      const int lane = j + 32 * ((i / 4) % 2), reg = 4 * (i / 8) + i % 4;
      if (rt_acc32<32, 32>::row_of(0, lane, reg) != i || rt_acc32<32, 32>::col_of(0, lane, reg) != j) return false;
    }
  return true;
}
static_assert(acc32_layout_ok(), "rt_acc32 must be the 32x32 MFMA's accumulator layout");
static_assert(rt<bf16, 32, 2 * arch::mfma32_elems, layout::row, mfma32>::row_of(0, 37, 1) == 5 &&
              rt<bf16, 32, 2 * arch::mfma32_elems, layout::row, mfma32>::col_of(0, 37, 1) == arch::mfma32_elems + 1);
static_assert(rt_acc<16, 16>::E == 4 && std::same_as<rt_acc<16, 16>, rt<float, 16, 16, layout::col, mfma16>>,
              "the default family is 16x16");

namespace {
const bool registered = [] {
  hkmma::add_mma_cases<bf16, bf16>(1.f);
  hkmma::add_mma_cases<half, half>(1.f);
  hkmma::add_pv_cases<bf16, bf16>();
  hkmma::add_pv_cases<half, half>();
  return true;
}();
}  // namespace
