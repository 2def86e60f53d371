#include <gtest/gtest.h>

#include "hostmodel/iommu_group.h"

namespace vfio_gpu {
namespace {

IommuGroup Group(std::vector<GroupMember> members) {
  IommuGroup g;
  g.number = 8;
  g.members = std::move(members);
  return g;
}

GroupMember M(const char* bdf, const char* driver, uint32_t cls, bool bridge = false) {
  return GroupMember{bdf, driver, cls, bridge, ""};
}

TEST(ViabilityTest, VfioStubAndUnboundMembersAreViable) {
  EXPECT_TRUE(CheckViability(
                  Group({M("0000:07:00.0", "vfio-pci", 0x030200),
                         M("0000:07:00.1", "pci-stub", 0x040300), M("0000:07:00.2", "", 0x0c0330),
                         M("0000:07:00.3", "nvgrace_gpu_vfio_pci", 0x030200)}))
                  .viable);
}

TEST(ViabilityTest, BridgesDoNotCount) {
  EXPECT_TRUE(CheckViability(Group({M("0000:00:01.0", "pcieport", 0x060400, true),
                                    M("0000:01:00.0", "vfio-pci", 0x030000)}))
                  .viable);
}

TEST(ViabilityTest, AnEndpointOnAHostDriverBlocksTheGroupAndIsNamed) {
  Viability v = CheckViability(
      Group({M("0000:07:00.0", "vfio-pci", 0x030000), M("0000:07:00.1", "e1000e", 0x020000)}));
  EXPECT_FALSE(v.viable);
  EXPECT_EQ(v.reason,
            "IOMMU group 8 is not viable: 0000:07:00.1 (ethernet) is bound to e1000e; bind it to "
            "vfio-pci");
}

TEST(ViabilityTest, NvSwitchIsAnEndpointNotABridge) {
  // Class 0x0680 ("other bridge") is what NVSwitch uses; it must be on vfio-pci like any endpoint.
  Viability v = CheckViability(Group({M("0000:06:00.0", "nvidia-nvswitch", 0x068000)}));
  EXPECT_FALSE(v.viable);
}

TEST(ViabilityTest, EmptyGroupIsNotViable) {
  EXPECT_FALSE(CheckViability(Group({})).viable);
}

}  // namespace
}  // namespace vfio_gpu
