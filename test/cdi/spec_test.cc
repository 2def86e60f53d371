#include "cdi/spec.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>

#include "common/files.h"
#include "common/json.h"
#include "hostmodel/fake_host.h"
#include "hostmodel/scanner.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu {
namespace {

using testing::TempDir;

// Set VFIO_GPU_UPDATE_GOLDEN=1 to rewrite the golden files after an intended change.
void ExpectGolden(const std::string& name, const std::string& actual) {
  std::string path = std::string(VFIO_GPU_GOLDEN_DIR) + "/" + name;
  if (std::getenv("VFIO_GPU_UPDATE_GOLDEN")) {
    ASSERT_TRUE(WriteFileAtomic(path, actual));
  }
  auto expected = ReadFile(path);
  ASSERT_TRUE(expected.ok()) << expected.error().message();
  EXPECT_EQ(actual, *expected) << "golden file " << path << " differs";
}

class CdiSpecTest : public ::testing::Test {
 protected:
  std::vector<CdiSpec> Specs(const Selection& sel = {}, const HostRoots& out_roots = {}) {
    auto snap = Scan(host_.roots(), sel);
    EXPECT_TRUE(snap.ok());
    return BuildCdiSpecs(*snap, sel, out_roots);
  }
  TempDir dir_;
  FakeHost host_{dir_.path() + "/host"};
};

TEST_F(CdiSpecTest, SeedHostMatchesGolden) {
  ASSERT_TRUE(BuildSeedA10Host(host_));
  auto specs = Specs();
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].kind, "nvidia.com/pgpu");
  EXPECT_EQ(specs[0].file_name, "vfio-gpu-nvidia.com-pgpu.json");
  EXPECT_EQ(specs[0].version, "0.5.0");  // device names start with a digit
  ExpectGolden("seed_a10.json", specs[0].content);
}

TEST_F(CdiSpecTest, HgxHostHasOneSpecPerKindAndNeverTheCdev) {
  ASSERT_TRUE(BuildHgxHost(host_));
  auto specs = Specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].kind, "nvidia.com/nvswitch");
  EXPECT_EQ(specs[1].kind, "nvidia.com/pgpu");
  ExpectGolden("hgx_nvswitch.json", specs[0].content);
  ExpectGolden("hgx_pgpu.json", specs[1].content);
  for (const auto& s : specs) {
    // The GPUs have iommufd cdevs; returning them beside the group node makes Kata attach twice.
    EXPECT_EQ(s.content.find("/dev/vfio/devices/"), std::string::npos);
    auto j = Json::Parse(s.content, s.file_name);
    ASSERT_TRUE(j.ok());
    for (size_t i = 0; i < j->Get("devices").size(); ++i) {
      Json nodes = j->Get("devices").At(i).Get("containerEdits").Get("deviceNodes");
      ASSERT_EQ(nodes.size(), 1u);
    }
    // /dev/vfio/vfio once, at spec level.
    size_t first = s.content.find("/dev/vfio/vfio");
    ASSERT_NE(first, std::string::npos);
    EXPECT_EQ(s.content.find("/dev/vfio/vfio", first + 1), std::string::npos);
  }
}

TEST_F(CdiSpecTest, AliasesAddIndexAndGroupNamesWhenAskedFor) {
  ASSERT_TRUE(BuildSeedA10Host(host_));
  Selection sel;
  sel.cdi_aliases = true;
  auto specs = Specs(sel);
  ASSERT_EQ(specs.size(), 1u);
  ExpectGolden("seed_a10_aliases.json", specs[0].content);
  auto j = Json::Parse(specs[0].content, "spec");
  ASSERT_EQ(j->Get("devices").size(), 12u);
  EXPECT_EQ(j->Get("devices").At(4).Get("name").AsString(), "0");
  EXPECT_EQ(j->Get("devices").At(8).Get("name").AsString(), "group-25");
}

TEST_F(CdiSpecTest, PerModelNamingUsesTheModelAsKind) {
  ASSERT_TRUE(BuildSeedA10Host(host_));
  Selection sel;
  sel.naming = ResourceNaming::kPerModel;
  auto specs = Specs(sel);
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].kind, "nvidia.com/GA102GL_A10");
  EXPECT_EQ(specs[0].file_name, "vfio-gpu-nvidia.com-GA102GL_A10.json");
}

TEST_F(CdiSpecTest, DotInClassNeedsVersion060) {
  ASSERT_TRUE(BuildSeedA10Host(host_));
  Selection sel;
  sel.resource_name = "example.com/gpu.a10";
  EXPECT_EQ(Specs(sel)[0].version, "0.6.0");
}

TEST_F(CdiSpecTest, CustomDevRootSetsHostPath) {
  ASSERT_TRUE(BuildSeedA10Host(host_));
  auto specs = Specs({}, host_.roots());
  auto j = Json::Parse(specs[0].content, "spec");
  Json node = j->Get("devices").At(0).Get("containerEdits").Get("deviceNodes").At(0);
  EXPECT_EQ(node.Get("path").AsString(), "/dev/vfio/25");
  EXPECT_EQ(node.Get("hostPath").AsString(), host_.roots().dev + "/vfio/25");
}

TEST_F(CdiSpecTest, SyncWritesOnlyChangesAndRemovesOnlyOurStaleSpecs) {
  ASSERT_TRUE(BuildHgxHost(host_));
  std::string cdi = dir_.path() + "/cdi";
  ASSERT_TRUE(MakeDirs(cdi));
  ASSERT_TRUE(WriteFileAtomic(cdi + "/nvidia.com-gpu.yaml", "someone else's\n"));
  auto r = SyncCdiSpecs(cdi, Specs());
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->written.size(), 2u);
  struct stat before, after;
  ASSERT_EQ(::stat((cdi + "/vfio-gpu-nvidia.com-pgpu.json").c_str(), &before), 0);
  EXPECT_EQ(before.st_mode & 0777, 0644u);

  r = SyncCdiSpecs(cdi, Specs());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->written.empty());
  EXPECT_EQ(r->unchanged.size(), 2u);
  ASSERT_EQ(::stat((cdi + "/vfio-gpu-nvidia.com-pgpu.json").c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);  // not rewritten

  // The NVSwitches leave vfio-pci: their spec goes, the GPUs' stays, the foreign file is untouched.
  for (const char* sw : {"0000:06:00.0", "0000:07:00.0", "0000:08:00.0", "0000:09:00.0"})
    ASSERT_TRUE(host_.SetDriver(sw, "nvidia-nvswitch"));
  r = SyncCdiSpecs(cdi, Specs());
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->removed.size(), 1u);
  EXPECT_EQ(r->removed[0], cdi + "/vfio-gpu-nvidia.com-nvswitch.json");
  EXPECT_EQ(*ListDir(cdi),
            (std::vector<std::string>{"nvidia.com-gpu.yaml", "vfio-gpu-nvidia.com-pgpu.json"}));
}

}  // namespace
}  // namespace vfio_gpu
