#include "plugin/preferred_allocation.h"

#include <gtest/gtest.h>

namespace vfio_gpu::plugin {
namespace {

void Add(ResourceDevices& r, const std::string& id, std::optional<int> numa, const std::string& rc,
         std::vector<std::string> path, bool healthy = true) {
  DeviceInfo d;
  d.id = id;
  d.healthy = healthy;
  d.numa_node = numa;
  d.root_complex = rc;
  d.pcie_path = std::move(path);
  r[id] = d;
}

// Two sockets; per socket one root complex with two switches of two GPUs each.
ResourceDevices Hgx() {
  ResourceDevices r;
  for (int i = 0; i < 8; ++i) {
    int numa = i / 4;
    int sw = i / 2;
    std::string id = "0000:" + std::to_string(10 + i) + ":00.0";
    std::string rc = "pci0000:" + std::to_string(numa);
    std::string rp = "0000:0" + std::to_string(numa) + ":01." + std::to_string(sw % 2);
    Add(r, id, numa, rc, {rp, "0000:0" + std::to_string(sw) + ":00.0", "down" + id});
  }
  return r;
}

std::vector<std::string> AllIds(const ResourceDevices& r) {
  std::vector<std::string> out;
  for (const auto& [id, _] : r) out.push_back(id);
  return out;
}

TEST(Preferred, PairComesFromOneSwitch) {
  auto r = Hgx();
  auto got = PreferredAllocation(r, AllIds(r), {}, 2);
  EXPECT_EQ(got, (std::vector<std::string>{"0000:10:00.0", "0000:11:00.0"}));
}

TEST(Preferred, FourComeFromOneNumaNode) {
  auto r = Hgx();
  std::vector<std::string> avail = {"0000:10:00.0", "0000:12:00.0", "0000:14:00.0",
                                    "0000:15:00.0", "0000:16:00.0", "0000:17:00.0"};
  auto got = PreferredAllocation(r, avail, {}, 4);
  EXPECT_EQ(got, (std::vector<std::string>{"0000:14:00.0", "0000:15:00.0", "0000:16:00.0",
                                           "0000:17:00.0"}));
}

TEST(Preferred, SwitchPartnerOfMustIncludeWins) {
  auto r = Hgx();
  auto got = PreferredAllocation(r, AllIds(r), {"0000:15:00.0"}, 2);
  EXPECT_EQ(got, (std::vector<std::string>{"0000:15:00.0", "0000:14:00.0"}));
}

TEST(Preferred, MustIncludeAlwaysComesFirstEvenWhenUnhealthyOrUnknown) {
  auto r = Hgx();
  r["0000:10:00.0"].healthy = false;
  auto got = PreferredAllocation(r, AllIds(r), {"0000:10:00.0", "0000:99:00.0"}, 3);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "0000:10:00.0");
  EXPECT_EQ(got[1], "0000:99:00.0");
  EXPECT_EQ(got[2], "0000:11:00.0");  // its switch partner
}

TEST(Preferred, BestFitKeepsWholeSwitchesFree) {
  auto r = Hgx();
  // Switch 0 has lost 0000:10:00.0; a single GPU should come from its leftover, not split a pair.
  std::vector<std::string> avail = AllIds(r);
  avail.erase(avail.begin());
  auto got = PreferredAllocation(r, avail, {}, 1);
  EXPECT_EQ(got, (std::vector<std::string>{"0000:11:00.0"}));
}

TEST(Preferred, UnhealthyCandidatesAreIgnoredNeverAnError) {
  auto r = Hgx();
  r["0000:11:00.0"].healthy = false;
  auto got = PreferredAllocation(r, AllIds(r), {}, 2);
  EXPECT_EQ(got, (std::vector<std::string>{"0000:12:00.0", "0000:13:00.0"}));
  for (auto& [id, d] : r) d.healthy = false;
  EXPECT_TRUE(PreferredAllocation(r, AllIds(r), {}, 2).empty());
}

TEST(Preferred, RootComplexBreaksTiesBetweenSwitches) {
  ResourceDevices r;
  Add(r, "a", 0, "pci0000:00", {"rp0", "sw0"});
  Add(r, "b", 0, "pci0000:80", {"rp1", "sw1"});
  Add(r, "c", 0, "pci0000:00", {"rp2", "sw2"});
  auto got = PreferredAllocation(r, AllIds(r), {"b"}, 2);
  EXPECT_EQ(got, (std::vector<std::string>{"b", "a"}));
  got = PreferredAllocation(r, AllIds(r), {"c"}, 2);
  EXPECT_EQ(got, (std::vector<std::string>{"c", "a"}));
  // The discriminating case: with "a" given, "b" comes first by ID but sits under another root
  // complex; "c" shares a's, so peer-to-peer between them stays inside one complex.
  got = PreferredAllocation(r, AllIds(r), {"a"}, 2);
  EXPECT_EQ(got, (std::vector<std::string>{"a", "c"}));
}

TEST(Preferred, NoNumaIsItsOwnDomainAndDeterministic) {
  ResourceDevices r;
  Add(r, "a", std::nullopt, "", {});
  Add(r, "b", std::nullopt, "", {});
  Add(r, "c", 1, "", {});
  auto got = PreferredAllocation(r, {"c", "b", "a"}, {}, 2);
  EXPECT_EQ(got, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(got, PreferredAllocation(r, {"a", "c", "b"}, {}, 2));
}

}  // namespace
}  // namespace vfio_gpu::plugin
