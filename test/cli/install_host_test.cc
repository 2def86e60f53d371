// pcie_root_port sized from the node's inventory: what Kata will cold-plug, counted on fake trees.
#include "cli/install_host.h"

#include <gtest/gtest.h>

#include <string>

#include "cli/install_embedded.h"
#include "common/toml.h"
#include "hostmodel/fake_host.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu::cli {
namespace {

using vfio_gpu::testing::TempDir;

bool Has(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// The value Kata will read, parsed as Kata would.
int64_t RootPorts(const std::string& dropin) {
  auto doc = ParseToml(dropin, "sized drop-in");
  if (!doc) return -1;
  const TomlValue* v = doc->Find({"hypervisor", "qemu", "pcie_root_port"});
  return v && v->type == TomlValue::Type::kInt ? v->integer : -1;
}

class PassThroughTest : public ::testing::Test {
 protected:
  TempDir tmp_;
  FakeHost host_{tmp_.path() + "/host"};
  Selection selection_;
  std::string shipped_{Embedded("kata/config.d/50-vfio-gpu.toml")};
};

TEST_F(PassThroughTest, HgxBoardNeedsTwelvePorts) {
  ASSERT_TRUE(BuildHgxHost(host_));
  PassThroughInventory inv = CountPassThrough(host_.roots(), selection_);
  EXPECT_EQ(inv.error, "");
  EXPECT_EQ(inv.gpu_units, 8);
  EXPECT_EQ(inv.nvswitch_units, 4);
  EXPECT_EQ(inv.devices, 12);
  std::string sized = SizeKataDropIn(shipped_, inv);
  EXPECT_EQ(RootPorts(sized), 12);
  EXPECT_TRUE(Has(sized,
                  "# Sized by `vfio-gpu install` from this node's PCI devices: 8 GPU unit(s) and 4 "
                  "NVSwitch unit(s), 12 device(s) to pass through\n"))
      << sized;
  // Same inventory, same bytes: a second install run plans "unchanged".
  EXPECT_EQ(SizeKataDropIn(shipped_, CountPassThrough(host_.roots(), selection_)), sized);
}

TEST_F(PassThroughTest, GroupMatesCount) {
  ASSERT_TRUE(BuildConsumerGpuHost(host_, /*audio_on_vfio=*/true));  // GPU + audio in group 14
  PassThroughInventory inv = CountPassThrough(host_.roots(), selection_);
  EXPECT_EQ(inv.gpu_units, 1);
  EXPECT_EQ(inv.nvswitch_units, 0);
  EXPECT_EQ(inv.devices, 2);
  EXPECT_EQ(RootPorts(SizeKataDropIn(shipped_, inv)), 8) << "never below Kata's own 8";
}

TEST_F(PassThroughTest, BridgesInTheGroupDoNotCount) {
  ASSERT_TRUE(BuildSharedGroupHost(host_));  // two GPUs and three switch ports in group 7
  PassThroughInventory inv = CountPassThrough(host_.roots(), selection_);
  EXPECT_EQ(inv.gpu_units, 1);
  EXPECT_EQ(inv.devices, 2);
}

TEST_F(PassThroughTest, GpusNotYetOnVfioCountSoBindingChangesNothing) {
  ASSERT_TRUE(BuildMixedDriverHost(host_));  // one GPU on vfio-pci, one on nvidia
  EXPECT_EQ(CountPassThrough(host_.roots(), selection_).gpu_units, 2);
  Selection amd_only;
  amd_only.vendors = {0x1002};
  EXPECT_EQ(CountPassThrough(host_.roots(), amd_only).gpu_units, 0) << "the selection decides";
}

TEST_F(PassThroughTest, ManyGpusRaiseThePortCount) {
  ASSERT_TRUE(BuildLargeHost(host_, 160));  // 16 GPUs on vfio-pci among 160 functions
  PassThroughInventory inv = CountPassThrough(host_.roots(), selection_);
  EXPECT_EQ(inv.gpu_units, 16);
  EXPECT_EQ(inv.devices, 16);
  EXPECT_EQ(RootPorts(SizeKataDropIn(shipped_, inv)), 16);
}

TEST_F(PassThroughTest, UnreadableInventoryKeepsTheShippedValueAndSaysWhy) {
  HostRoots nowhere{tmp_.path() + "/no-sys", tmp_.path() + "/no-dev"};
  PassThroughInventory inv = CountPassThrough(nowhere, selection_);
  EXPECT_FALSE(inv.error.empty());
  std::string sized = SizeKataDropIn(shipped_, inv);
  EXPECT_EQ(RootPorts(sized), RootPorts(shipped_));
  EXPECT_TRUE(Has(sized, "# Not sized by `vfio-gpu install`: the PCI devices could not be listed"))
      << sized;
}

TEST_F(PassThroughTest, OnlyThePortLineAndItsCommentChange) {
  ASSERT_TRUE(BuildHgxHost(host_));
  std::string sized = SizeKataDropIn(shipped_, CountPassThrough(host_.roots(), selection_));
  // Drop the two comment lines we add; the rest is the shipped file byte for byte.
  size_t at = sized.find("# Sized by");
  ASSERT_NE(at, std::string::npos);
  size_t end = sized.find("pcie_root_port = ", at);
  std::string unsized = sized.substr(0, at) + sized.substr(end);
  EXPECT_EQ(unsized, shipped_);  // the HGX count is the shipped 12
}

}  // namespace
}  // namespace vfio_gpu::cli
