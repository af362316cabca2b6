// The targets hk is built for, as a plain C++ enum: host code that must not include HIP (the host toolkit's
// numerics) names a target by it. Their facts live in cdna3.h and cdna4.h; target.h maps a device to one.
#pragma once

namespace hk::arch {

enum class target_id { gfx942, gfx950 };

}  // namespace hk::arch
