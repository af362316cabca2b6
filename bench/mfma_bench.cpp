// The cost of one MFMA's arithmetic on vgpu (host only, no HIP): nanoseconds of CPU time per instruction for the bf16
// and f16 forms hk's GEMM and attention use, per MFMA arithmetic this CPU has (sse4.1, avx2, avx512). Operands are
// uniform [-1, 1] values rounded to the element type, C a running sum (the instruction is applied to its own result,
// as a GEMM's k loop does, restarting from 0 every 1024 k), so the figures are those of the operand-cache-hit case
// the GEMM's inner loop runs. Two columns: the same A and B every time (C then grows linearly, 7-8 binades above the
// products late in the loop), and 4 A x 8 B operand sets in turn (still cache hits; C then moves like a GEMM's, a
// few binades above the products, which selects the same final-step paths as a GEMM).
//   mfma_bench [iterations]
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "isa/isa.h"
#include "wave.h"

namespace {

using namespace vgpu;

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// A uniform [-1, 1] value rounded (to nearest) to bf16 or f16 bits.
uint32_t element(std::mt19937_64& rng, bool bf16) {
  const float x = std::uniform_real_distribution<float>(-1.f, 1.f)(rng);
  if (bf16) {
    const uint32_t b = std::bit_cast<uint32_t>(x);
    return (b + 0x7fff + (b >> 16 & 1)) >> 16;
  }
  return std::bit_cast<uint16_t>(_Float16(x));
}

struct Form {
  const char* name;
  int m, n, k;
  bool bf16;
};

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20000;
  const Form forms[] = {{"v_mfma_f32_16x16x16_bf16", 16, 16, 16, true},
                        {"v_mfma_f32_16x16x32_bf16", 16, 16, 32, true},
                        {"v_mfma_f32_32x32x8_bf16", 32, 32, 8, true},
                        {"v_mfma_f32_16x16x16_f16", 16, 16, 16, false}};
  constexpr int kA = 0, kB = 8, kC = 16, kSetsA = 32, kSetsB = 64, kRegs = 128;  // sets: 4 A and 8 B of 8 registers
  std::vector<uint32_t> file(size_t(kRegs) * kLanes);
  Program prog;
  prog.arch = Arch::gfx950;
  DispatchCtx ctx;
  ctx.prog = &prog;
  ctx.arch = &arch_info(Arch::gfx950);
  Workgroup wg;
  wg.ctx = &ctx;
  Wave w;
  w.ctx = &ctx;
  w.wg = &wg;
  w.v = reinterpret_cast<uint32_t(*)[kLanes]>(file.data());
  const MfmaSimd before = mfma_simd();
  std::printf("%-28s %-8s %12s %12s\n", "form", "simd", "ns/inst", "varied ops");
  for (const Form& f : forms) {
    const OpInfo* op = isa_table().find(f.name);
    if (!op) {
      std::printf("%-28s (not in the instruction table)\n", f.name);
      continue;
    }
    const int in_regs = f.m * f.k * 16 / 32 / kLanes, c_regs = f.m * f.n / kLanes;
    for (MfmaSimd path : mfma_simd_supported()) {
      set_mfma_simd(path);
      std::mt19937_64 rng(42);
      for (int x = 0; x < 2 * 8 * kLanes; ++x) file[x] = element(rng, f.bf16) | element(rng, f.bf16) << 16;
      for (int x = kSetsA * kLanes; x < kRegs * kLanes; ++x) file[x] = element(rng, f.bf16) | element(rng, f.bf16) << 16;
      auto clear_c = [&] { std::fill(file.begin() + kC * kLanes, file.begin() + (kC + c_regs) * kLanes, 0u); };
      Inst I;
      I.name = f.name;
      I.nops = 4;
      for (int o = 0; o < 4; ++o) I.op[o].kind = OpKind::vgpr;
      I.op[0].reg = kC, I.op[3].reg = kC;
      I.op[0].width = I.op[3].width = uint8_t(c_regs);
      I.op[1].width = I.op[2].width = uint8_t(in_regs);
      const int restart = 1024 / f.k;
      double ns[2];
      for (int varied = 0; varied < 2; ++varied) {
        auto operands = [&](int t) {
          I.op[1].reg = uint16_t(varied ? kSetsA + t % 4 * 8 : kA);
          I.op[2].reg = uint16_t(varied ? kSetsB + t / 4 % 8 * 8 : kB);
        };
        clear_c();
        w.state = WaveState::running;
        for (int t = 0; t < 100; ++t) operands(t), op->fn(w, I);  // warm: operand decode, caches
        const double t0 = cpu_seconds();
        for (int t = 0; t < iterations; ++t) {
          if (t % restart == 0) clear_c();
          operands(t);
          op->fn(w, I);
        }
        ns[varied] = (cpu_seconds() - t0) * 1e9 / iterations;
        if (w.state != WaveState::running) {
          std::fprintf(stderr, "%s faulted\n", f.name);
          return 1;
        }
      }
      std::printf("%-28s %-8s %12.0f %12.0f\n", f.name, mfma_simd_name(path), ns[0], ns[1]);
    }
  }
  set_mfma_simd(before);
  return 0;
}
