// Conversions to and from bf16 and the fp8 formats.
#include "isa.h"
#include "ops.h"

namespace vgpu {

void register_cvt(IsaTable&) {}

}  // namespace vgpu
