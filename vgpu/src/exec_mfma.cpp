// Matrix cores (MFMA).
#include "isa.h"
#include "ops.h"

namespace vgpu {

void register_mfma(IsaTable&) {}

}  // namespace vgpu
