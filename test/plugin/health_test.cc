#include "plugin/health.h"

#include <gtest/gtest.h>

#include "plugin/host_watcher.h"

namespace vfio_gpu::plugin {
namespace {

Unit MakeUnit(const std::string& id, int group, std::optional<int> numa = 0) {
  Unit u;
  u.id = id;
  u.resource = "nvidia.com/pgpu";
  u.iommu_group = group;
  u.numa_node = numa;
  u.gpus = {id};
  u.group_node_present = true;
  return u;
}

const Clock::time_point kT0 = Clock::time_point() + std::chrono::hours(1);

TEST(Health, ViableUnitWithGroupNodeIsHealthy) {
  Snapshot s;
  s.units = {MakeUnit("0000:17:00.0", 25)};
  auto tree = ComputeDeviceTree(s, {}, {}, kT0);
  const auto& d = tree.at("nvidia.com/pgpu").at("0000:17:00.0");
  EXPECT_TRUE(d.healthy);
  EXPECT_EQ(d.reason, "");
  EXPECT_EQ(d.numa_node, 0);
}

TEST(Health, EachCauseMakesItUnhealthyWithAReason) {
  Unit no_node = MakeUnit("0000:17:00.0", 25);
  no_node.group_node_present = false;
  Unit not_viable = MakeUnit("0000:31:00.0", 31);
  not_viable.viable = false;
  not_viable.reason =
      "IOMMU group 31 is not viable: 0000:31:00.1 (audio) is bound to snd_hda_intel";
  Unit off_bus = MakeUnit("0000:b1:00.0", 182);
  off_bus.present = false;
  Unit quarantined = MakeUnit("0000:ca:00.0", 188);
  Snapshot s;
  s.units = {no_node, not_viable, off_bus, quarantined};
  auto tree = ComputeDeviceTree(s, {{"0000:ca:00.0", "Xid 79: fell off the bus"}}, {}, kT0);
  const auto& r = tree.at("nvidia.com/pgpu");
  EXPECT_FALSE(r.at("0000:17:00.0").healthy);
  EXPECT_NE(r.at("0000:17:00.0").reason.find("/dev/vfio/25"), std::string::npos);
  EXPECT_NE(r.at("0000:31:00.0").reason.find("snd_hda_intel"), std::string::npos);
  EXPECT_NE(r.at("0000:b1:00.0").reason.find("0xffff"), std::string::npos);
  EXPECT_NE(r.at("0000:ca:00.0").reason.find("Xid 79: fell off the bus"), std::string::npos);
  for (const auto& [id, d] : r) EXPECT_FALSE(d.healthy) << id;
}

TEST(Health, AMemberThatLeftVfioForNoDriverMakesItUnhealthy) {
  Unit u = MakeUnit("0000:01:00.0", 14);
  u.members = {{"0000:00:01.0", "pcieport", 0x060400, true, ""},
               {"0000:01:00.0", "vfio-pci", 0x030000, false, ""},
               {"0000:01:00.1", "", 0x040300, false, ""}};
  Snapshot s;
  s.units = {u};
  auto tree = ComputeDeviceTree(s, {}, {}, kT0);
  const auto& d = tree.at("nvidia.com/pgpu").at("0000:01:00.0");
  EXPECT_FALSE(d.healthy);
  EXPECT_NE(d.reason.find("0000:01:00.1 (audio) has no driver"), std::string::npos) << d.reason;
  s.units[0].members[2].driver = "vfio-pci";
  EXPECT_TRUE(ComputeDeviceTree(s, {}, {}, kT0).at("nvidia.com/pgpu").at("0000:01:00.0").healthy);
}

TEST(Health, UnitReboundToAnotherDriverStaysListedUnhealthyWithTheReason) {
  Snapshot before;
  before.units = {MakeUnit("0000:17:00.0", 25)};
  auto t1 = ComputeDeviceTree(before, {}, {}, kT0);
  Snapshot after;
  after.skipped = {{"0000:17:00.0", "3D controller 0000:17:00.0 is bound to nvidia, not vfio-pci"}};
  auto t2 = ComputeDeviceTree(after, {}, t1, kT0 + std::chrono::hours(24));
  const auto& d = t2.at("nvidia.com/pgpu").at("0000:17:00.0");
  EXPECT_FALSE(d.healthy);
  EXPECT_NE(d.reason.find("bound to nvidia"), std::string::npos);
  EXPECT_FALSE(d.missing_since.has_value());  // still in sysfs: never dropped
  // Back on vfio-pci: Healthy by itself.
  auto t3 = ComputeDeviceTree(before, {}, t2, kT0 + std::chrono::hours(25));
  EXPECT_TRUE(t3.at("nvidia.com/pgpu").at("0000:17:00.0").healthy);
}

TEST(Health, DeviceThatFellOffTheBusKeepsTheProblemAsReason) {
  Snapshot before;
  before.units = {MakeUnit("0000:17:00.0", 25)};
  auto t1 = ComputeDeviceTree(before, {}, {}, kT0);
  Snapshot after;
  after.problems = {{"0000:17:00.0", "config space reads 0xffff: the device fell off the bus"}};
  auto t2 = ComputeDeviceTree(after, {}, t1, kT0);
  EXPECT_NE(t2.at("nvidia.com/pgpu").at("0000:17:00.0").reason.find("fell off the bus"),
            std::string::npos);
}

TEST(Health, VanishedUnitIsListedUntilTheGracePeriodEnds) {
  Snapshot before;
  before.units = {MakeUnit("0000:17:00.0", 25), MakeUnit("0000:31:00.0", 31)};
  auto t1 = ComputeDeviceTree(before, {}, {}, kT0);
  Snapshot after;
  after.units = {MakeUnit("0000:31:00.0", 31)};
  HealthPolicy p;
  p.vanished_grace = std::chrono::minutes(10);
  auto t2 = ComputeDeviceTree(after, {}, t1, kT0, p);
  const auto& d = t2.at("nvidia.com/pgpu").at("0000:17:00.0");
  EXPECT_FALSE(d.healthy);
  EXPECT_NE(d.reason.find("vanished"), std::string::npos);
  ASSERT_TRUE(d.missing_since.has_value());
  auto t3 = ComputeDeviceTree(after, {}, t2, kT0 + std::chrono::minutes(5), p);
  ASSERT_TRUE(t3.at("nvidia.com/pgpu").count("0000:17:00.0"));
  EXPECT_EQ(t3.at("nvidia.com/pgpu").at("0000:17:00.0").missing_since, kT0);
  auto t4 = ComputeDeviceTree(after, {}, t3, kT0 + std::chrono::minutes(11), p);
  EXPECT_FALSE(t4.at("nvidia.com/pgpu").count("0000:17:00.0"));
}

TEST(Health, AUnitAbsorbedIntoAnotherIsNotDuplicated) {
  Snapshot before;
  before.units = {MakeUnit("0000:17:00.0", 25)};
  auto t1 = ComputeDeviceTree(before, {}, {}, kT0);
  Unit merged = MakeUnit("0000:16:00.0", 7);
  merged.gpus = {"0000:16:00.0", "0000:17:00.0"};
  GroupMember m;
  m.bdf = "0000:17:00.0";
  merged.members = {m};
  Snapshot after;
  after.units = {merged};
  auto t2 = ComputeDeviceTree(after, {}, t1, kT0);
  EXPECT_EQ(t2.at("nvidia.com/pgpu").size(), 1u);
}

TEST(Health, DiffNamesEachDecision) {
  Snapshot s;
  s.units = {MakeUnit("0000:17:00.0", 25)};
  auto t1 = ComputeDeviceTree(s, {}, {}, kT0);
  auto t2 = ComputeDeviceTree(s, {{"0000:17:00.0", "bad"}}, t1, kT0);
  auto changes = DiffTrees(t1, t2);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, DeviceChange::kBecameUnhealthy);
  EXPECT_NE(Describe(changes[0]).find("0000:17:00.0"), std::string::npos);
  EXPECT_EQ(DiffTrees({}, t1)[0].kind, DeviceChange::kAdded);
  EXPECT_EQ(DiffTrees(t1, {})[0].kind, DeviceChange::kRemoved);
}

TEST(Uevent, OnlyPciBindsAndHotplugCount) {
  std::string bind = std::string("bind@/devices/pci0000:16/0000:16:01.0/0000:17:00.0") + '\0' +
                     "ACTION=bind" + '\0' +
                     "DEVPATH=/devices/pci0000:16/0000:16:01.0/0000:17:00.0" + '\0' +
                     "SUBSYSTEM=pci" + '\0' + "DRIVER=vfio-pci" + '\0';
  EXPECT_EQ(RelevantPciUevent(bind.data(), bind.size()),
            "bind /devices/pci0000:16/0000:16:01.0/0000:17:00.0");
  std::string usb =
      std::string("add@/devices/usb1") + '\0' + "ACTION=add" + '\0' + "SUBSYSTEM=usb" + '\0';
  EXPECT_EQ(RelevantPciUevent(usb.data(), usb.size()), "");
  std::string move = std::string("move@/x") + '\0' + "ACTION=move" + '\0' + "SUBSYSTEM=pci" + '\0';
  EXPECT_EQ(RelevantPciUevent(move.data(), move.size()), "");
}

}  // namespace
}  // namespace vfio_gpu::plugin
