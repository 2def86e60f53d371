// `vfio-gpu install --bind-gpus` on fake sysfs trees: which files get written, with what, in
// which order; and the pure pieces of the installer (marked blocks, diffs).
#include "cli/install_bind.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/install_containerd.h"
#include "cli/install_plan.h"
#include "common/files.h"
#include "hostmodel/fake_host.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu::cli {
namespace {

using vfio_gpu::testing::TempDir;

// Writes the files as the real writer does, records each write, and plays the kernel: a write to
// drivers_probe binds the device to its driver_override.
class KernelSim final : public SysfsWriter {
 public:
  explicit KernelSim(FakeHost& host) : host_(host) {}
  Status Write(const std::string& path, const std::string& value) override {
    std::string rel = path.substr(host_.roots().sysfs.size());
    writes.push_back(rel + " <- " + value);
    if (auto s = real_.Write(path, value); !s) return s;
    if (rel == "/bus/pci/drivers_probe") {
      auto o = ReadAttr(host_.roots().PciDevice(value) + "/driver_override");
      return host_.SetDriver(value, o.ok() ? *o : "");
    }
    if (rel.size() > 7 && rel.substr(rel.size() - 7) == "/unbind")
      return host_.SetDriver(value, "");
    return Status::Ok();
  }
  std::vector<std::string> writes;

 private:
  FakeHost& host_;
  FileSysfsWriter real_;
};

// Short for the fake host's builder, as these tests read best.
FakeDevice Dev(const std::string& bdf, const std::string& parent, int group, uint32_t cls,
               const std::string& driver, uint16_t vendor = 0x10de) {
  return MakeFakeDevice(bdf, parent, group, cls, driver, vendor);
}

class BindTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(BuildBindTestHost(host_)); }
  std::string Attr(const std::string& rel) { return *ReadFile(host_.roots().sysfs + rel); }

  TempDir tmp_;
  FakeHost host_{tmp_.path()};
  Selection selection_;
};

TEST_F(BindTest, BindsTheGpuAndItsGroupMatesWithTheKernelsThreeWrites) {
  KernelSim kernel(host_);
  auto actions = BindGpus(host_.roots(), selection_, kernel, /*dry_run=*/false);
  EXPECT_EQ(kernel.writes, (std::vector<std::string>{
                               "/bus/pci/devices/0000:01:00.0/driver_override <- vfio-pci",
                               "/bus/pci/devices/0000:01:00.0/driver/unbind <- 0000:01:00.0",
                               "/bus/pci/drivers_probe <- 0000:01:00.0",
                               "/bus/pci/devices/0000:01:00.1/driver_override <- vfio-pci",
                               "/bus/pci/devices/0000:01:00.1/driver/unbind <- 0000:01:00.1",
                               "/bus/pci/drivers_probe <- 0000:01:00.1",
                           }));
  // The files themselves hold what was written (the last write for shared ones).
  EXPECT_EQ(Attr("/bus/pci/devices/0000:01:00.0/driver_override"), "vfio-pci");
  EXPECT_EQ(Attr("/bus/pci/devices/0000:01:00.1/driver_override"), "vfio-pci");
  EXPECT_EQ(Attr("/bus/pci/drivers/nvidia/unbind"), "0000:01:00.0");
  EXPECT_EQ(Attr("/bus/pci/drivers/snd_hda_intel/unbind"), "0000:01:00.1");
  EXPECT_EQ(Attr("/bus/pci/drivers_probe"), "0000:01:00.1");
  EXPECT_EQ(Attr("/bus/pci/devices/0000:41:00.0/driver_override"), "(null)\n");  // left alone
  EXPECT_EQ(Attr("/bus/pci/drivers/mlx5_core/unbind"), "");  // the NIC is no GPU's mate

  ASSERT_EQ(actions.size(), 3u);
  EXPECT_EQ(Describe(actions[0]),
            "bound      0000:01:00.0 (GPU, IOMMU group 14) to vfio-pci (was nvidia)");
  EXPECT_EQ(Describe(actions[1]),
            "bound      0000:01:00.1 (group mate of 0000:01:00.0, IOMMU "
            "group 14) to vfio-pci (was snd_hda_intel)");
  EXPECT_EQ(Describe(actions[2]),
            "unchanged  0000:41:00.0 (GPU, IOMMU group 20) already on vfio-pci");

  // Bound now: a second run writes nothing.
  KernelSim again(host_);
  for (const auto& a : BindGpus(host_.roots(), selection_, again, false))
    EXPECT_EQ(a.result, BindAction::Result::kAlready) << Describe(a);
  EXPECT_TRUE(again.writes.empty());
}

TEST_F(BindTest, DryRunWritesNothingAndDenyIsHonoured) {
  KernelSim kernel(host_);
  selection_.deny = {"0000:01:00.0"};
  auto actions = BindGpus(host_.roots(), selection_, kernel, true);
  EXPECT_TRUE(kernel.writes.empty());
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].bdf, "0000:41:00.0");

  selection_.deny.clear();
  actions = BindGpus(host_.roots(), selection_, kernel, true);
  EXPECT_TRUE(kernel.writes.empty());
  ASSERT_EQ(actions.size(), 3u);
  EXPECT_EQ(Describe(actions[0]),
            "would bind 0000:01:00.0 (GPU, IOMMU group 14) to vfio-pci (now nvidia)");
}

TEST_F(BindTest, ANicInTheGpusGroupIsRefusedAndAFailedProbeIsReported) {
  ASSERT_TRUE(host_.Add(Dev("0000:71:00.0", "pci0000:70", 40, k3dController, "nvidia")));
  ASSERT_TRUE(host_.Add(Dev("0000:71:00.1", "pci0000:70", 40, 0x020000, "mlx5_core", 0x15b3)));
  FileSysfsWriter plain;  // writes the files but no kernel binds anything
  auto actions = BindGpus(host_.roots(), selection_, plain, false);
  std::string all;
  for (const auto& a : actions) all += Describe(a) + "\n";
  EXPECT_NE(all.find("REFUSED    0000:71:00.1 (group mate of 0000:71:00.0, IOMMU group 40): "
                     "ethernet controller on mlx5_core shares the IOMMU group"),
            std::string::npos)
      << all;
  EXPECT_EQ(Attr("/bus/pci/drivers/mlx5_core/unbind"), "");
  // The NIC keeps the group from passing through, so its GPU stays on nvidia: refused, naming it.
  EXPECT_NE(all.find("REFUSED    0000:71:00.0 (GPU, IOMMU group 40): not bound: 0000:71:00.1 "
                     "(ethernet controller on mlx5_core) shares IOMMU group 40"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("bind 0000:71:00.1 to vfio-pci yourself"), std::string::npos) << all;
  EXPECT_EQ(Attr("/bus/pci/devices/0000:71:00.0/driver_override"), "(null)\n");
  EXPECT_EQ(Attr("/bus/pci/drivers/nvidia/unbind"), "0000:01:00.0");
  EXPECT_NE(all.find("FAILED     0000:01:00.0 (GPU, IOMMU group 14): it is bound to nvidia after "
                     "drivers_probe; load vfio-pci (modprobe vfio-pci)"),
            std::string::npos)
      << all;
}

TEST_F(BindTest, AMissingSysfsAttributeIsAnErrorNamingIt) {
  ASSERT_TRUE(RemoveFile(host_.roots().sysfs + "/bus/pci/drivers_probe"));
  KernelSim kernel(host_);
  auto actions = BindGpus(host_.roots(), selection_, kernel, false);
  ASSERT_FALSE(actions.empty());
  EXPECT_EQ(actions[0].result, BindAction::Result::kFailed);
  EXPECT_NE(actions[0].message.find("cannot open " + host_.roots().sysfs +
                                    "/bus/pci/drivers_probe for writing"),
            std::string::npos)
      << actions[0].message;
}

TEST(MarkedBlocksTest, RoundTripsFilesWithoutATrailingNewlineAndNewFiles) {
  const std::string v2 = "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\n  x = 1";
  auto merged = MergeV2(v2,
                        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\nenable_cdi = true\n"
                        "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.vfio-gpu]\n"
                        "runtime_type = \"io.containerd.vfio-gpu.v2\"\n",
                        "c.toml");
  ASSERT_TRUE(merged.ok()) << merged.error().message();
  auto back = StripMarkedBlocks(*merged, "c.toml");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(**back, v2);

  auto created = EnsureImport(std::nullopt, "/etc/containerd/conf.d/50-vfio-gpu.toml",
                              ContainerdVersion{2, 1}, "c.toml");
  ASSERT_TRUE(created.ok());
  ASSERT_TRUE(created->has_value());
  auto gone = StripMarkedBlocks(*created, "c.toml");
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());

  auto unclosed = StripMarkedBlocks(std::string("a = 1\n# >>> vfio-gpu: x\nb = 2\n"), "c.toml");
  ASSERT_FALSE(unclosed.ok());
  EXPECT_NE(unclosed.error().message().find("c.toml:2: the vfio-gpu block opened here is never "
                                            "closed"),
            std::string::npos);
}

TEST(UnifiedDiffTest, HunksWithContext) {
  std::string a, b;
  for (int i = 1; i <= 20; ++i) {
    a += "line " + std::to_string(i) + "\n";
    b += (i == 10 ? "changed 10" : "line " + std::to_string(i)) + "\n";
  }
  EXPECT_EQ(UnifiedDiff("/f", a, b, false),
            "--- a/f\n+++ b/f\n@@ -7,7 +7,7 @@\n line 7\n line 8\n line 9\n-line 10\n+changed 10\n"
            " line 11\n line 12\n line 13\n");
  EXPECT_EQ(UnifiedDiff("/f", a, a, false), "");
  EXPECT_EQ(UnifiedDiff("/f", std::string("x\n"), std::nullopt, false),
            "--- a/f\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-x\n");
  // Content with a NUL byte is binary even when the caller did not say so.
  const std::string elf("\177ELF\0\1", 6);
  EXPECT_EQ(UnifiedDiff("/f", elf, std::nullopt, false),
            "--- a/f\n+++ /dev/null\nBinary files differ\n");
  EXPECT_EQ(UnifiedDiff("/f", std::string("x\n"), std::string("x\0", 2), false),
            "--- a/f\n+++ b/f\nBinary files differ\n");
}

TEST(ContainerdVersionTest, Parses) {
  EXPECT_EQ(ParseContainerdVersion("1.7.27")->minor, 7);
  EXPECT_EQ(ParseContainerdVersion("v2.2.0")->major, 2);
  EXPECT_EQ(ParseContainerdVersion("2.1.0-rc.1")->minor, 1);
  EXPECT_FALSE(ParseContainerdVersion("banana"));
  EXPECT_FALSE(ParseContainerdVersion("2"));
}

}  // namespace
}  // namespace vfio_gpu::cli
