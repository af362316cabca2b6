// Cross-lane moves beyond DPP: permlane swaps, transposing LDS reads.
#include "isa.h"
#include "ops.h"

namespace vgpu {

void register_xlane(IsaTable&) {}

}  // namespace vgpu
