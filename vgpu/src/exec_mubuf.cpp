// Buffer memory (MUBUF) and LDS DMA.
#include "isa.h"
#include "ops.h"

namespace vgpu {

void register_mubuf(IsaTable&) {}

}  // namespace vgpu
