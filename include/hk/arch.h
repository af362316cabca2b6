// The targets hk is built for, each described once with its facts and its instruction wrappers (arch/cdna3.h for
// gfx942, arch/cdna4.h for gfx950, arch/gfx9.h for what they share), and `arch::current`, the one the code being
// compiled runs on. Everything else in hk is written against `arch::current`; this is the only arch test in hk.
// Host code asks arch/target.h which target a device is.
#pragma once
#include "arch/target.h"

namespace hk::arch {

#if defined(__gfx950__)
using current = cdna4;
#elif defined(__gfx942__)
using current = cdna3;
#else
// The host pass of a HIP file compiles device code only for its types and sizes, never runs it; host code asks
// target.h for the device's target instead of reading `current`.
using current = cdna4;
#endif

// The current target's MFMA operand vectors and their widths (see gfx9.h), as the tile types name them.
inline constexpr int mfma_elems = current::mfma_elems(), mfma32_elems = current::mfma32_elems();
inline constexpr int fp8_elems = current::fp8_elems(), fp8_elems32 = current::fp8_elems32();
using bf16_frag = current::bf16_frag;
using f16_frag = current::f16_frag;
using bf16_frag32 = current::bf16_frag32;
using f16_frag32 = current::f16_frag32;
template <fp8_format F>
inline constexpr float fp8_format_max = current::fp8_format_max<F>;

}  // namespace hk::arch
