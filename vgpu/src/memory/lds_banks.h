// The LDS bank model behind the conflict profiler: which lanes of a DS instruction are serviced together (phases),
// how many 4-byte banks there are, and what a phase's addresses cost.
#pragma once
#include <cstdint>
#include <vector>

#include "vgpu/arch.h"

namespace vgpu {

struct BankModel {
  uint32_t banks = 32;
  std::vector<uint64_t> phases;  // lane masks, serviced one after another
};

// The model for a DS access of `bytes` per lane (4, 8, 12, 16) on `arch`; `write` selects the store tables.
const BankModel& bank_model(Arch arch, uint32_t bytes, bool write);

// Extra cycles of one DS instruction: in each phase, the bank with the most distinct dword addresses sets the
// phase's cycle count; a conflict-free phase costs 1. `dwords[l]` is lane l's first dword address, `count` dwords each.
uint64_t conflict_cycles(const BankModel& m, const uint32_t* dwords, uint32_t count, uint64_t active);

}  // namespace vgpu
