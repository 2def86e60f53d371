#include "hostmodel/naming.h"

#include <gtest/gtest.h>

namespace vfio_gpu {
namespace {

TEST(NamingTest, CuratedModelsGiveStableResourceNames) {
  EXPECT_EQ(ModelResourcePart(0x10de, 0x2236), "GA102GL_A10");
  EXPECT_EQ(ModelResourcePart(0x10de, 0x2330), "GH100_H100_SXM5_80GB");
  EXPECT_EQ(ModelResourcePart(0x10de, 0x20b2), "GA100_A100_SXM4_80GB");
  Selection per_model;
  per_model.naming = ResourceNaming::kPerModel;
  EXPECT_EQ(GpuResourceName(per_model, 0x10de, 0x2236), "nvidia.com/GA102GL_A10");
}

TEST(NamingTest, SingleNamingDefaultsPerVendorAndHonoursOverride) {
  Selection s;
  EXPECT_EQ(GpuResourceName(s, 0x10de, 0x2236), "nvidia.com/pgpu");
  EXPECT_EQ(GpuResourceName(s, 0x1002, 0x740c), "amd.com/pgpu");
  EXPECT_EQ(GpuResourceName(s, 0x8086, 0x0bd5), "intel.com/pgpu");
  EXPECT_EQ(GpuResourceName(s, 0x1234, 0x1111), "vfio-gpu.io/pgpu");
  s.resource_name = "example.com/gpu";
  EXPECT_EQ(GpuResourceName(s, 0x10de, 0x2236), "example.com/gpu");
}

TEST(NamingTest, UnknownModelsFallBackToAValidName) {
  // Not in the curated table nor (for this ID) in pci.ids.
  EXPECT_EQ(ModelResourcePart(0x10de, 0xfffe), "device-fffe");
}

TEST(NamingTest, EveryGeneratedNameIsValidAndShort) {
  Selection per_model;
  per_model.naming = ResourceNaming::kPerModel;
  // Every NVIDIA device ID, including the ones pci.ids names oddly (slashes, brackets, plus signs).
  for (uint32_t dev = 0; dev <= 0xffff; dev += 7) {
    std::string name = GpuResourceName(per_model, 0x10de, static_cast<uint16_t>(dev));
    ASSERT_TRUE(IsValidResourceName(name)) << name;
    ASSERT_TRUE(IsValidCdiKind(name)) << name;
    ASSERT_LE(name.size(), 40u) << name;  // room for an operator's prefix of 20
  }
}

TEST(NamingTest, CdiAndResourceNameRules) {
  EXPECT_TRUE(IsValidCdiDeviceName("0000:17:00.0"));
  EXPECT_TRUE(IsValidCdiDeviceName("0"));
  EXPECT_TRUE(IsValidCdiDeviceName("group-25"));
  EXPECT_FALSE(IsValidCdiDeviceName(":17"));
  EXPECT_FALSE(IsValidCdiDeviceName(""));
  EXPECT_TRUE(IsValidCdiKind("nvidia.com/pgpu"));
  EXPECT_FALSE(IsValidCdiKind("nvidia.com/1gpu"));
  EXPECT_FALSE(IsValidCdiKind("pgpu"));
  EXPECT_TRUE(IsValidResourceName("nvidia.com/GA102GL_A10"));
  EXPECT_FALSE(IsValidResourceName("nvidia.com/" + std::string(64, 'a')));
  EXPECT_FALSE(IsValidResourceName("NVIDIA.com/pgpu"));
}

}  // namespace
}  // namespace vfio_gpu
