#include "hostmodel/scanner.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "common/files.h"
#include "hostmodel/fake_host.h"
#include "hostmodel/snapshot_json.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu {
namespace {

using testing::TempDir;

class ScannerTest : public ::testing::Test {
 protected:
  Snapshot ScanOk(const Selection& sel = {}) {
    auto s = Scan(host_.roots(), sel);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message());
    return s.ok() ? *s : Snapshot{};
  }

  TempDir dir_;
  FakeHost host_{dir_.path()};
};

TEST_F(ScannerTest, SeedA10HostHasFourSingleGpuUnits) {
  ASSERT_TRUE(BuildSeedA10Host(host_));
  Snapshot s = ScanOk();
  ASSERT_EQ(s.units.size(), 4u);
  const char* ids[] = {"0000:17:00.0", "0000:31:00.0", "0000:b1:00.0", "0000:ca:00.0"};
  int groups[] = {25, 31, 182, 188};
  int numa[] = {0, 0, 1, 1};
  for (int i = 0; i < 4; ++i) {
    const Unit& u = s.units[i];
    EXPECT_EQ(u.id, ids[i]);
    EXPECT_EQ(u.iommu_group, groups[i]);
    EXPECT_EQ(u.numa_node, numa[i]);
    EXPECT_EQ(u.resource, "nvidia.com/pgpu");
    EXPECT_EQ(u.CdiName(), std::string("nvidia.com/pgpu=") + ids[i]);
    EXPECT_TRUE(u.viable) << u.reason;
    EXPECT_TRUE(u.reason.empty());
    EXPECT_TRUE(u.group_node_present);
    EXPECT_TRUE(u.present);
    EXPECT_EQ(u.model, "GA102GL [A10]");
    EXPECT_EQ(u.vendor, 0x10de);
    EXPECT_EQ(u.device, 0x2236);
    ASSERT_EQ(u.members.size(), 1u);
    EXPECT_EQ(u.members[0].bdf, ids[i]);
    EXPECT_EQ(u.members[0].driver, "vfio-pci");
    EXPECT_EQ(u.members[0].class_code, 0x030200u);
    EXPECT_EQ(u.gpus, std::vector<std::string>{ids[i]});
    ASSERT_EQ(u.pcie_path.size(), 1u);  // the root port
    EXPECT_EQ(u.reset_method, "flr bus");
    EXPECT_TRUE(u.cdevs.empty());
  }
  EXPECT_EQ(s.units[0].root_complex, "pci0000:16");
  EXPECT_EQ(s.units[0].pcie_path[0], "0000:16:01.0");
  // The NIC and the NVMe drive are the host's: neither units nor skipped GPUs.
  EXPECT_TRUE(s.skipped.empty());
  EXPECT_TRUE(s.problems.empty());
  EXPECT_EQ(s.FindByGroup(182)->id, "0000:b1:00.0");
  EXPECT_EQ(s.FindUnit("0000:ca:00.0")->iommu_group, 188);
  EXPECT_EQ(s.FindByBdf("0000:4b:00.0"), nullptr);
}

TEST_F(ScannerTest, HgxHostHasGpuAndNvSwitchUnitsOnTwoNumaNodes) {
  ASSERT_TRUE(BuildHgxHost(host_));
  Snapshot s = ScanOk();
  int gpus = 0, switches = 0, numa1 = 0;
  for (const auto& u : s.units) {
    if (u.kind == UnitKind::kGpu) {
      ++gpus;
      EXPECT_EQ(u.resource, "nvidia.com/pgpu");
      EXPECT_EQ(u.pcie_path.size(), 3u) << u.id;  // root port, switch upstream, downstream port
      EXPECT_EQ(u.cdevs.size(), 1u) << u.id;
    } else {
      ++switches;
      EXPECT_EQ(u.resource, "nvidia.com/nvswitch");
      EXPECT_EQ(u.model, "GH100 [H100 NVSwitch]");
    }
    if (u.numa_node == 1) ++numa1;
    EXPECT_TRUE(u.viable) << u.id << ": " << u.reason;
  }
  EXPECT_EQ(gpus, 8);
  EXPECT_EQ(switches, 4);
  EXPECT_EQ(numa1, 4);
  EXPECT_EQ(s.Resources(), (std::vector<std::string>{"nvidia.com/nvswitch", "nvidia.com/pgpu"}));
}

TEST_F(ScannerTest, ConsumerGpuWithAudioOnVfioIsOneViableUnit) {
  ASSERT_TRUE(BuildConsumerGpuHost(host_, /*audio_on_vfio=*/true));
  Snapshot s = ScanOk();
  ASSERT_EQ(s.units.size(), 1u);
  const Unit& u = s.units[0];
  EXPECT_EQ(u.id, "0000:01:00.0");
  EXPECT_EQ(u.iommu_group, 14);
  ASSERT_EQ(u.members.size(), 2u);
  EXPECT_EQ(u.members[1].bdf, "0000:01:00.1");
  EXPECT_EQ(u.members[1].class_code, 0x040300u);
  EXPECT_TRUE(u.viable);
  EXPECT_EQ(u.gpus.size(), 1u);  // audio travels with the GPU but is not a GPU
}

TEST_F(ScannerTest, AudioOnHostDriverMakesTheGroupNotViableAndSaysWhy) {
  ASSERT_TRUE(BuildConsumerGpuHost(host_, /*audio_on_vfio=*/false));
  Snapshot s = ScanOk();
  ASSERT_EQ(s.units.size(), 1u);
  EXPECT_FALSE(s.units[0].viable);
  EXPECT_EQ(s.units[0].reason,
            "IOMMU group 14 is not viable: 0000:01:00.1 (audio) is bound to snd_hda_intel; bind it "
            "to vfio-pci");
}

TEST_F(ScannerTest, TwoGpusSharingAGroupFormOneUnit) {
  ASSERT_TRUE(BuildSharedGroupHost(host_));
  Snapshot s = ScanOk();
  ASSERT_EQ(s.units.size(), 1u);
  const Unit& u = s.units[0];
  EXPECT_EQ(u.id, "0000:03:00.0");  // the lowest GPU BDF
  EXPECT_EQ(u.gpus, (std::vector<std::string>{"0000:03:00.0", "0000:04:00.0"}));
  EXPECT_EQ(u.members.size(), 6u);    // root port, switch ports and both GPUs
  EXPECT_TRUE(u.viable) << u.reason;  // bridges on pcieport don't count
}

TEST_F(ScannerTest, GpuOnAnotherDriverIsSkippedWithTheReason) {
  ASSERT_TRUE(BuildMixedDriverHost(host_));
  Snapshot s = ScanOk();
  ASSERT_EQ(s.units.size(), 1u);
  EXPECT_EQ(s.units[0].id, "0000:41:00.0");
  ASSERT_EQ(s.skipped.size(), 1u);
  EXPECT_EQ(s.skipped[0].bdf, "0000:42:00.0");
  EXPECT_NE(s.skipped[0].reason.find("bound to nvidia"), std::string::npos) << s.skipped[0].reason;
  EXPECT_NE(s.skipped[0].reason.find("bind it to vfio-pci"), std::string::npos);
}

TEST_F(ScannerTest, NumaMinusOneMeansNoNode) {
  ASSERT_TRUE(BuildNoNumaHost(host_));
  Snapshot s = ScanOk();
  ASSERT_EQ(s.units.size(), 1u);
  EXPECT_FALSE(s.units[0].numa_node.has_value());
}

TEST_F(ScannerTest, BrokenEntriesAreReportedAndTheScanGoesOn) {
  ASSERT_TRUE(BuildBrokenHost(host_));
  Snapshot s = ScanOk();
  ASSERT_EQ(s.units.size(), 1u);
  EXPECT_EQ(s.units[0].id, "0000:41:00.0");
  auto problem = [&](const std::string& bdf) -> std::string {
    for (const auto& p : s.problems)
      if (p.bdf == bdf) return p.error;
    return "";
  };
  EXPECT_NE(problem("0000:42:00.0").find("class is malformed"), std::string::npos)
      << problem("0000:42:00.0");
  EXPECT_NE(problem("0000:43:00.0").find("dangling"), std::string::npos) << problem("0000:43:00.0");
  EXPECT_NE(problem("0000:44:00.0").find("vendor"), std::string::npos) << problem("0000:44:00.0");
  EXPECT_NE(problem("0000:45:00.0").find("class"), std::string::npos) << problem("0000:45:00.0");
  bool skipped43 = false;
  for (const auto& k : s.skipped)
    if (k.bdf == "0000:43:00.0")
      skipped43 = k.reason.find("broken iommu_group link") != std::string::npos;
  EXPECT_TRUE(skipped43);
}

TEST_F(ScannerTest, DeviceThatFellOffTheBusIsAProblemNotAUnit) {
  ASSERT_TRUE(BuildSeedA10Host(host_));
  ASSERT_TRUE(host_.SetAttr("0000:17:00.0", "vendor", "0xffff\n"));
  ASSERT_TRUE(host_.SetAttr("0000:17:00.0", "class", "0xffffff\n"));
  Snapshot s = ScanOk();
  EXPECT_EQ(s.units.size(), 3u);
  EXPECT_EQ(s.FindUnit("0000:17:00.0"), nullptr);
  ASSERT_EQ(s.problems.size(), 1u);
  EXPECT_EQ(s.problems[0].bdf, "0000:17:00.0");
  EXPECT_NE(s.problems[0].error.find("fell off the bus"), std::string::npos);
}

TEST_F(ScannerTest, MissingGroupNodeAndRebindAreSeenOnTheNextScan) {
  ASSERT_TRUE(BuildSeedA10Host(host_));
  ASSERT_TRUE(host_.RemoveGroupNode(25));
  Snapshot s = ScanOk();
  EXPECT_FALSE(s.FindUnit("0000:17:00.0")->group_node_present);
  ASSERT_TRUE(host_.SetDriver("0000:31:00.0", "nvidia"));
  s = ScanOk();
  EXPECT_EQ(s.FindUnit("0000:31:00.0"), nullptr);
  ASSERT_EQ(s.skipped.size(), 1u);
  ASSERT_TRUE(host_.SetDriver("0000:31:00.0", "vfio-pci"));
  s = ScanOk();
  EXPECT_NE(s.FindUnit("0000:31:00.0"), nullptr);
  EXPECT_TRUE(s.FindUnit("0000:31:00.0")->group_node_present);
  ASSERT_TRUE(host_.Remove("0000:b1:00.0"));
  s = ScanOk();
  EXPECT_EQ(s.FindUnit("0000:b1:00.0"), nullptr);
}

TEST_F(ScannerTest, SelectionPicksVendorsClassesAndAllowDeny) {
  ASSERT_TRUE(BuildSeedA10Host(host_));
  Selection deny;
  deny.deny = {"0000:17:00.0"};
  Snapshot s = ScanOk(deny);
  EXPECT_EQ(s.units.size(), 3u);
  ASSERT_EQ(s.skipped.size(), 1u);
  EXPECT_NE(s.skipped[0].reason.find("allow/deny"), std::string::npos);

  Selection allow;
  allow.allow = {"10de:2236"};
  EXPECT_EQ(ScanOk(allow).units.size(), 4u);
  allow.allow = {"10de:2330"};
  EXPECT_EQ(ScanOk(allow).units.size(), 0u);

  Selection amd;
  amd.vendors = {0x1002};
  EXPECT_TRUE(ScanOk(amd).units.empty());

  // The NIC becomes a "GPU" when its vendor and class are selected (how e2e uses emulated devices).
  Selection nic;
  nic.vendors = {0x15b3};
  nic.gpu_classes = {"0x02"};
  s = ScanOk(nic);
  ASSERT_EQ(s.skipped.size(), 1u);  // bound to mlx5_core, not vfio-pci
  EXPECT_EQ(s.skipped[0].bdf, "0000:4b:00.0");
  ASSERT_TRUE(host_.SetDriver("0000:4b:00.0", "vfio-pci"));
  s = ScanOk(nic);
  ASSERT_EQ(s.units.size(), 1u);
  EXPECT_EQ(s.units[0].resource, "vfio-gpu.io/pgpu");
}

TEST_F(ScannerTest, IgnoresEntriesThatAreNotPciAddresses) {
  ASSERT_TRUE(BuildSeedA10Host(host_));
  ASSERT_TRUE(MakeDirs(host_.roots().PciDevices() + "/0000:00:04.0:pcie001"));
  Snapshot s = ScanOk();
  EXPECT_EQ(s.units.size(), 4u);
  ASSERT_EQ(s.problems.size(), 1u);
  EXPECT_EQ(s.problems[0].bdf, "0000:00:04.0:pcie001");
}

// The plugin reacts to a change that names a function (uevent) or a group (/dev/vfio/<N>) by
// re-reading just those groups and merging them into its last snapshot. For every kind of change,
// that must equal a full scan, while reading only a few functions.
TEST_F(ScannerTest, TargetedRescanMergedEqualsAFullScan) {
  ASSERT_TRUE(BuildSeedA10Host(host_).ok());
  ASSERT_TRUE(BuildConsumerGpuHost(host_, /*audio_on_vfio=*/true).ok());
  struct Change {
    const char* what;
    std::function<Status()> apply;
    std::set<int> groups;
    std::set<std::string> bdfs;
  };
  FakeDevice late = MakeFakeDevice("0000:e1:00.0", "pci0000:e0", 200);
  const std::vector<Change> changes = {
      {"lone GPU unbound",
       [&] { return host_.SetDriver("0000:17:00.0", ""); },
       {},
       {"0000:17:00.0"}},
      {"rebound to nvidia",
       [&] { return host_.SetDriver("0000:17:00.0", "nvidia"); },
       {},
       {"0000:17:00.0"}},
      {"back on vfio-pci",
       [&] { return host_.SetDriver("0000:17:00.0", "vfio-pci"); },
       {},
       {"0000:17:00.0"}},
      {"audio member left for no driver",
       [&] { return host_.SetDriver("0000:01:00.1", ""); },
       {},
       {"0000:01:00.1"}},
      {"audio member on a host driver",
       [&] { return host_.SetDriver("0000:01:00.1", "snd_hda_intel"); },
       {},
       {"0000:01:00.1"}},
      {"group node removed", [&] { return host_.RemoveGroupNode(31); }, {31}, {}},
      {"group node back", [&] { return host_.AddGroupNode(31); }, {31}, {}},
      {"device removed", [&] { return host_.Remove("0000:ca:00.0"); }, {}, {"0000:ca:00.0"}},
      {"device added", [&] { return host_.Add(late); }, {}, {"0000:e1:00.0"}},
  };
  size_t functions = ListDir(host_.roots().PciDevices())->size();
  Snapshot prev = ScanOk();
  for (const auto& c : changes) {
    SCOPED_TRACE(c.what);
    ASSERT_TRUE(c.apply().ok());
    auto reread = FunctionsToReread(host_.roots(), prev, c.groups, c.bdfs);
    EXPECT_LT(reread.size(), functions / 2) << "not targeted";
    Snapshot merged = MergeRescan(prev, ScanDevices(host_.roots(), {}, reread), reread);
    Snapshot full = ScanOk();
    EXPECT_EQ(SnapshotToJson(merged).Dump(), SnapshotToJson(full).Dump());
    prev = merged;
  }
}

TEST_F(ScannerTest, MissingSysfsRootIsAClearError) {
  auto s = Scan(HostRoots{dir_.path() + "/nope", dir_.path() + "/dev"}, Selection{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("nope/bus/pci/devices"), std::string::npos)
      << s.error().message();
}

TEST_F(ScannerTest, DeviceReaderGivesIdentityAndLocality) {
  ASSERT_TRUE(BuildHgxHost(host_));
  auto d = ReadPciDevice(host_.roots(), "0000:18:00.0");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->vendor, 0x10de);
  EXPECT_EQ(d->device, 0x2330);
  EXPECT_EQ(d->subsystem_vendor, 0x10de);
  EXPECT_EQ(d->subsystem_device, 0x16c1);
  EXPECT_EQ(d->class_code, 0x030200u);
  EXPECT_EQ(d->driver, "vfio-pci");
  EXPECT_EQ(d->numa_node, 0);
  EXPECT_EQ(d->vfio_cdev, "vfio0");
  EXPECT_EQ(d->root_complex, "pci0000:15");
  EXPECT_EQ(d->upstream,
            (std::vector<std::string>{"0000:15:01.0", "0000:16:00.0", "0000:17:00.0"}));
  EXPECT_TRUE(d->error.empty()) << d->error;
  auto missing = ReadPciDevice(host_.roots(), "0000:ff:00.0");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind(), ErrorKind::kNotFound);
}

}  // namespace
}  // namespace vfio_gpu
