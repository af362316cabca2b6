// hk: tile primitives for AMD CDNA3 (gfx942) and CDNA4 (gfx950).
#pragma once
#include "arch.h"
#include "ops/edges.h"
#include "ops/maps.h"
#include "ops/memory.h"
#include "ops/mma.h"
#include "ops/reduce.h"
#include "ops/scope.h"
#include "ops/sync.h"
#include "types/dtypes.h"
#include "types/gl.h"
#include "types/rt.h"
#include "types/st.h"
