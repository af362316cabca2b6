// Phase groupings per arch and access width come from ../shared/reference/cdna.md (gfx942 from the ISA guide;
// gfx950 from hardware measurements). Where a row is not settled, the assumption is named below.
#include "memory/lds_banks.h"

#include <algorithm>
#include <initializer_list>

namespace vgpu {
namespace {

uint64_t lanes(std::initializer_list<std::pair<int, int>> ranges, int shift = 0) {
  uint64_t m = 0;
  for (auto [a, b] : ranges)
    for (int l = a; l <= b; ++l) m |= 1ull << (l + shift);
  return m;
}

// Consecutive groups of `size` lanes.
std::vector<uint64_t> consecutive(int size) {
  std::vector<uint64_t> v;
  for (int s = 0; s < 64; s += size) v.push_back(lanes({{s, s + size - 1}}));
  return v;
}

// The same lane sets in both halves of the wave.
std::vector<uint64_t> both_halves(std::initializer_list<std::initializer_list<std::pair<int, int>>> sets) {
  std::vector<uint64_t> v;
  for (int half = 0; half < 2; ++half)
    for (auto& s : sets) v.push_back(lanes(s, 32 * half));
  return v;
}

// One arch's models, by access width (b32, b64, b96, b128) and direction.
struct ArchBankModels {
  Arch arch;
  const BankModel* read[4];
  const BankModel* write[4];
};

const ArchBankModels& models_of(Arch arch) {
  // gfx942: 32 banks. b32: two phases; b64: four of 16 lanes; b96/b128 reads: eight phases of interleaved quads;
  // b128 writes: eight phases of 8 consecutive lanes. b96 writes are assumed to behave like b128 writes.
  static const BankModel g942_b32{32, consecutive(32)};
  static const BankModel g942_b64{32, consecutive(16)};
  static const BankModel g942_b128_read{32, both_halves({{{0, 3}, {20, 23}}, {{4, 7}, {16, 19}}, {{8, 11}, {28, 31}},
                                                         {{12, 15}, {24, 27}}})};
  static const BankModel g942_b128_write{32, consecutive(8)};
  // gfx950: 64 banks for b32/b64/b128 reads (one phase, two halves, four quad-sets); ds_read_b96 and ds_write_b64
  // behave as 32 banks (measured). Unsettled and assumed: b32 writes like b32 reads, b128/b96 writes like gfx942's.
  static const BankModel g950_b32{64, consecutive(64)};
  static const BankModel g950_b64_read{64, consecutive(32)};
  static const BankModel g950_b64_write{32, consecutive(16)};
  static const BankModel g950_b96_read{32, g942_b128_read.phases};
  static const BankModel g950_b128_read{64, both_halves({{{0, 3}, {12, 15}, {20, 27}}, {{4, 11}, {16, 19}, {28, 31}}})};
  // gfx90a: the 32 banks of CDNA1-3; the gfx942 phases are assumed for every width (no CDNA2 measurement).
  static const ArchBankModels table[] = {
      {Arch::gfx90a,
       {&g942_b32, &g942_b64, &g942_b128_read, &g942_b128_read},
       {&g942_b32, &g942_b64, &g942_b128_write, &g942_b128_write}},
      {Arch::gfx942,
       {&g942_b32, &g942_b64, &g942_b128_read, &g942_b128_read},
       {&g942_b32, &g942_b64, &g942_b128_write, &g942_b128_write}},
      {Arch::gfx950,
       {&g950_b32, &g950_b64_read, &g950_b96_read, &g950_b128_read},
       {&g950_b32, &g950_b64_write, &g942_b128_write, &g942_b128_write}},
  };
  for (const ArchBankModels& m : table)
    if (m.arch == arch) return m;
  return table[0];  // unreachable: every arch has a row
}

}  // namespace

const BankModel& bank_model(Arch arch, uint32_t bytes, bool write) {
  const int width = bytes <= 4 ? 0 : bytes <= 8 ? 1 : bytes <= 12 ? 2 : 3;
  const ArchBankModels& m = models_of(arch);
  return write ? *m.write[width] : *m.read[width];
}

uint64_t conflict_cycles(const BankModel& m, const uint32_t* dwords, uint32_t count, uint64_t active) {
  uint64_t extra = 0;
  for (uint64_t phase : m.phases) {
    uint64_t live = phase & active;
    if (!live) continue;
    // Distinct dword addresses per bank within the phase (at most 64 lanes x 4 dwords: small sort).
    uint32_t addr[256];
    int n = 0;
    for (int l = 0; l < 64; ++l)
      if (live >> l & 1)
        for (uint32_t i = 0; i < count; ++i) addr[n++] = dwords[l] + i;
    std::sort(addr, addr + n);
    n = int(std::unique(addr, addr + n) - addr);
    uint32_t per_bank[64] = {};
    uint32_t worst = 1;
    for (int i = 0; i < n; ++i) worst = std::max(worst, ++per_bank[addr[i] % m.banks]);
    extra += worst - 1;
  }
  return extra;
}

}  // namespace vgpu
