// HK_VGPU_PRODUCT picks which product built on the device's arch the virtual device reports; a product of another
// arch is ignored and the arch's default stays. Registered once per case (see CMakeLists.txt), HK_EXPECT_PRODUCT
// naming the product the case must see. Expected figures are the data sheets' (../shared/reference/timing.md; the
// CDNA2 parts: AMD's launch figures, MI250X per die). The arch is checked through vgpu's lookup, which also knows
// gfx90a (hk's does not).
#include <cstdlib>
#include <cstring>
#include <string>

#include "hip_check.h"
#include "vgpu/arch.h"

namespace {

struct Expected {
  const char* name;
  vgpu::Arch arch;
  int major, minor;  // the compute capability HIP reports: the GFX version's major and minor
  int compute_units;
  int clock_khz;
  size_t hbm_gib;
  int memory_clock_khz;  // HBM pin rate / 4
  int pci_device_id;
};

constexpr Expected kProducts[] = {
    {"MI210", vgpu::Arch::gfx90a, 9, 0, 104, 1700000, 64, 800000, 0x740f},
    {"MI250X", vgpu::Arch::gfx90a, 9, 0, 110, 1700000, 64, 800000, 0x740c},
    {"MI300X", vgpu::Arch::gfx942, 9, 4, 304, 2100000, 192, 1300000, 0x74a1},
    {"MI325X", vgpu::Arch::gfx942, 9, 4, 304, 2100000, 256, 1500000, 0x74a5},
    {"MI350X", vgpu::Arch::gfx950, 9, 5, 256, 2200000, 288, 2000000, 0x75a3},
    {"MI355X", vgpu::Arch::gfx950, 9, 5, 256, 2400000, 288, 2000000, 0x75a3},
};

}  // namespace

TEST(ProductChoice, PropertiesAreTheChosenProducts) {
  const char* want = std::getenv("HK_EXPECT_PRODUCT");
  ASSERT_NE(want, nullptr) << "registered without HK_EXPECT_PRODUCT";
  const Expected* e = nullptr;
  for (const Expected& p : kProducts)
    if (std::strcmp(p.name, want) == 0) e = &p;
  ASSERT_NE(e, nullptr) << want;

  hipDeviceProp_t p;
  HIP_ASSERT(hipGetDeviceProperties(&p, 0));
  EXPECT_EQ(std::string(p.name), std::string("vgpu (") + e->name + ")");
  EXPECT_EQ(vgpu::parse_arch(p.gcnArchName), e->arch) << p.gcnArchName;
  EXPECT_NE(std::string(p.gcnArchName).find(":sramecc+:xnack-"), std::string::npos) << p.gcnArchName;
  EXPECT_EQ(p.major, e->major);
  EXPECT_EQ(p.minor, e->minor);
  EXPECT_EQ(p.multiProcessorCount, e->compute_units);
  EXPECT_EQ(p.clockRate, e->clock_khz);
  EXPECT_EQ(p.totalGlobalMem, e->hbm_gib << 30);
  EXPECT_EQ(p.memoryClockRate, e->memory_clock_khz);
  EXPECT_EQ(p.pciDeviceID, e->pci_device_id);
  size_t total = 0;
  HIP_ASSERT(hipDeviceTotalMem(&total, 0));
  EXPECT_EQ(total, e->hbm_gib << 30);
}
