// Socket names are generated from resource names an operator chooses (per-model naming included):
// each stays within 40 characters (issue 5: room for a 20-character prefix under 63) and unique.
#include <gtest/gtest.h>

#include <set>

#include "plugin/resource_server.h"

namespace vfio_gpu::plugin {
namespace {

TEST(SocketName, ShortNamesReadAsTheResource) {
  EXPECT_EQ(SocketName("nvidia.com/pgpu"), "vfio-gpu-nvidia.com_pgpu.sock");
  EXPECT_EQ(SocketName("nvidia.com/nvswitch"), "vfio-gpu-nvidia.com_nvswitch.sock");
  EXPECT_EQ(SocketName("nvidia.com/GA102GL_A10"), "vfio-gpu-nvidia.com_GA102GL_A10.sock");
}

TEST(SocketName, LongNamesStayWithin40CharactersAndUnique) {
  const std::vector<std::string> resources = {
      "nvidia.com/GH100_H100_SXM5_80GB", "nvidia.com/GH100_H100_SXM5_94GB",
      "nvidia.com/GB100_B200_SXM6_180GB_PREVIEW_EDITION_LONG_NAME",
      "a-very-long-vendor.example/pgpu", std::string(253, 'x') + "/" + std::string(63, 'y')};
  std::set<std::string> seen;
  for (const auto& r : resources) {
    std::string s = SocketName(r);
    EXPECT_LE(s.size(), kMaxSocketName) << s;
    EXPECT_EQ(s.rfind("vfio-gpu-", 0), 0u) << s;
    EXPECT_EQ(s.substr(s.size() - 5), ".sock") << s;
    EXPECT_TRUE(seen.insert(s).second) << "two resources share " << s;
  }
  // The hash tail is a full 8 hex digits.
  std::string h100 = SocketName("nvidia.com/GH100_H100_SXM5_80GB");
  EXPECT_EQ(h100.size(), kMaxSocketName) << h100;
  EXPECT_EQ(h100.substr(0, 27), "vfio-gpu-nvidia.com_GH100_-") << h100;
}

}  // namespace
}  // namespace vfio_gpu::plugin
