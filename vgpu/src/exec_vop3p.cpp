// Packed 16-bit math (VOP3P).
#include "isa.h"
#include "ops.h"

namespace vgpu {

void register_vop3p(IsaTable&) {}

}  // namespace vgpu
