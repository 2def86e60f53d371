// Writes realistic sysfs and /dev trees: the test fixtures of every part and the embedded demo
// host. The trees follow real sysfs: bus/pci/devices/<BDF> are relative symlinks into
// devices/pci0000:00/..., each device has vendor, device, class, subsystem_*, numa_node, a config
// file, and driver / iommu_group symlinks; kernel/iommu_groups/<N>/devices/ holds the members.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "hostmodel/host_roots.h"
#include "hostmodel/pci_device.h"

namespace vfio_gpu {

struct FakeDevice {
  std::string bdf;
  std::string parent;  // a root complex ("pci0000:16") or the BDF of a bridge added before
  uint16_t vendor = kVendorNvidia;
  uint16_t device = 0x2236;
  uint16_t subsystem_vendor = kVendorNvidia;
  uint16_t subsystem_device = 0x1482;
  uint32_t class_code = k3dController;
  std::string driver = "vfio-pci";  // "" = unbound
  int iommu_group = -1;             // -1 = no iommu_group link
  int numa_node = -1;
  std::string reset_method = "flr bus";
  int cdev = -1;     // >= 0: vfio-dev/vfio<cdev>/dev exists and /dev/vfio/devices/vfio<cdev> too
  bool pcie = true;  // config is 4096 bytes for PCIe functions, 256 for conventional ones
};

// A function at `bdf` behind `parent` in IOMMU group `group`, of the given class, driver and vendor
// (the rest as FakeDevice's defaults).
FakeDevice MakeFakeDevice(const std::string& bdf, const std::string& parent, int group,
                          uint32_t class_code = k3dController,
                          const std::string& driver = "vfio-pci", uint16_t vendor = kVendorNvidia);

class FakeHost {
 public:
  // Creates <root>/sys and <root>/dev.
  explicit FakeHost(const std::string& root);

  const HostRoots& roots() const { return roots_; }
  const std::string& root() const { return root_; }

  // Adds a device (and its root complex directory when new). Group nodes follow the kernel: a
  // group gets /dev/vfio/<N> while at least one member is bound to a vfio driver.
  Status Add(const FakeDevice& device);
  // Rebinds (or with "" unbinds) a device, like echo > unbind / drivers_probe would.
  Status SetDriver(const std::string& bdf, const std::string& driver);
  // Overwrites one attribute file (vendor, class, numa_node ...).
  Status SetAttr(const std::string& bdf, const std::string& name, const std::string& value);
  // Removes a device the way `echo 1 > remove` does: its directory, bus link and group link.
  Status Remove(const std::string& bdf);
  Status RemoveGroupNode(int group);
  Status AddGroupNode(int group);

  std::string DeviceDir(const std::string& bdf) const;  // the real (devices/...) directory

 private:
  Status SyncGroupNode(int group);

  std::string root_;
  HostRoots roots_;
  std::vector<FakeDevice> devices_;
};

// Seed 003's node: 4x A10 (10de:2236) at 0000:17:00.0, 0000:31:00.0, 0000:b1:00.0, 0000:ca:00.0 in
// IOMMU groups 25, 31, 182, 188 (two per NUMA node), plus root ports, a NIC and an NVMe drive.
Status BuildSeedA10Host(FakeHost& host);
// An 8x H100 SXM HGX-like board: two PCIe switches per socket, two GPUs and a NIC under each, four
// NVSwitches on vfio-pci, two NUMA nodes.
Status BuildHgxHost(FakeHost& host);
// A consumer GPU with its HDMI audio function in the same group (14), the audio on vfio-pci
// (viable) or on snd_hda_intel (not viable).
Status BuildConsumerGpuHost(FakeHost& host, bool audio_on_vfio);
// For binding tests: a consumer GPU on nvidia with its audio on snd_hda_intel (group 14) behind a
// root port, a GPU already on vfio-pci (group 20), a NIC in a group of its own (30), and the
// kernel's write-only driver attributes (`drivers/<name>/unbind`, `drivers_probe`).
Status BuildBindTestHost(FakeHost& host);
// Two GPUs behind a switch without ACS: one IOMMU group (7) holding the switch ports and both GPUs.
Status BuildSharedGroupHost(FakeHost& host);
// One GPU on vfio-pci (group 20) and one on the nvidia driver (group 21).
Status BuildMixedDriverHost(FakeHost& host);
// A GPU whose numa_node is -1.
Status BuildNoNumaHost(FakeHost& host);
// Broken entries beside a good GPU (group 40 at 0000:41:00.0): garbage class, a dangling
// iommu_group link, an unreadable vendor, a missing class.
Status BuildBrokenHost(FakeHost& host);
// `functions` PCI functions in all, 16 of them GPUs on vfio-pci, for benchmarks.
Status BuildLargeHost(FakeHost& host, int functions);

}  // namespace vfio_gpu
