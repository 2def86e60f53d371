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

TEST(PassthroughBlockerTest, EveryEndpointOnAVfioDriverPasses) {
  EXPECT_EQ(PassthroughBlocker(8, {M("0000:00:01.0", "pcieport", 0x060400, true),
                                   M("0000:07:00.0", "vfio-pci", 0x030000),
                                   M("0000:07:00.1", "nvgrace_gpu_vfio_pci", 0x040300)}),
            "");
}

// VFIO calls these groups viable; Kata, which hands every member to QEMU, can't use them.
TEST(PassthroughBlockerTest, ADriverlessOrStubbedMemberIsNamedWithTheFix) {
  EXPECT_EQ(PassthroughBlocker(
                4, {M("0000:06:00.0", "vfio-pci", 0x00ff00), M("0000:07:00.0", "", 0x020000)}),
            "IOMMU group 4: 0000:07:00.0 (ethernet) has no driver; Kata passes every function of "
            "the group into the VM and QEMU opens only vfio-pci-bound ones: bind it to vfio-pci");
  std::string stub = PassthroughBlocker(
      14, {M("0000:01:00.0", "vfio-pci", 0x030000), M("0000:01:00.1", "pci-stub", 0x040300)});
  EXPECT_NE(stub.find("0000:01:00.1 (audio) is bound to pci-stub"), std::string::npos) << stub;
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
