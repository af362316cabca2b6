// hk's description of each target (include/hk/arch.h) and vgpu's table of arch and product facts
// (vgpu/include/vgpu/arch.h) are two homes for the same facts, kept apart because vgpu includes nothing of hk. This
// test holds them together: for each arch, the shared facts agree, with CUs and XCDs taken from the product vgpu
// stands in for by default (MI300X for gfx942, MI355X for gfx950). Host code only.
#include <gtest/gtest.h>

#include <string_view>

#include "hk/arch.h"
#include "vgpu/arch.h"

namespace {

template <class HkArch>
void expect_same_facts(vgpu::Arch arch) {
  const vgpu::ArchInfo& isa = vgpu::arch_info(arch);
  const vgpu::ProductInfo& product = vgpu::default_product(arch);
  EXPECT_EQ(std::string_view(HkArch::name), isa.name);
  EXPECT_EQ(uint64_t(HkArch::lds_bytes), isa.lds_bytes);
  EXPECT_EQ(uint64_t(HkArch::lds_banks), isa.lds_banks);
  EXPECT_EQ(uint64_t(HkArch::compute_units), product.compute_units) << product.name;
  EXPECT_EQ(uint64_t(HkArch::xcds), product.xcds) << product.name;
}

TEST(ArchFacts, Cdna3AgreesWithVgpuGfx942) { expect_same_facts<hk::arch::cdna3>(vgpu::Arch::gfx942); }
TEST(ArchFacts, Cdna4AgreesWithVgpuGfx950) { expect_same_facts<hk::arch::cdna4>(vgpu::Arch::gfx950); }

}  // namespace
