// IOMMU groups: the unit the kernel can hand to one VM, and the viability rule VFIO applies.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "hostmodel/host_roots.h"
#include "hostmodel/pci_device.h"

namespace vfio_gpu {

struct GroupMember {
  std::string bdf;
  std::string driver;  // empty when unbound
  uint32_t class_code = 0;
  bool bridge = false;
  std::string error;  // the member's sysfs was broken
};

struct IommuGroup {
  int number = -1;
  std::vector<GroupMember> members;  // sorted by BDF
};

// Reads /sys/kernel/iommu_groups/<N>/devices. NotFound when the group doesn't exist.
Result<IommuGroup> ReadIommuGroup(const HostRoots& roots, int group);
// The IOMMU group a PCI function is in now (its iommu_group link); nullopt when it has none.
std::optional<int> IommuGroupOf(const HostRoots& roots, const std::string& bdf);

struct Viability {
  bool viable = true;
  std::string reason;  // empty when viable; otherwise names the blocking member, driver and fix
};

// VFIO's rule: every endpoint member is bound to a vfio driver, to pci-stub, or to nothing; bridges
// and ports don't count. E.g. "IOMMU group 14 is not viable: 0000:01:00.1 (audio) is bound to
// snd_hda_intel; bind it to vfio-pci".
Viability CheckViability(const IommuGroup& group);

// What passthrough needs beyond viability: Kata hands every endpoint of the group to QEMU as a
// vfio-pci device, and QEMU can open only members bound to a vfio driver, so a member with no
// driver (or on pci-stub) fails the VM's start although VFIO calls the group viable. Empty when
// every endpoint is on a vfio driver; otherwise names the first that isn't and the fix, e.g. "IOMMU
// group 4: 0000:07:00.0 (ethernet) has no driver; Kata passes every function of the group into the
// VM and QEMU opens only vfio-pci-bound ones: bind it to vfio-pci".
std::string PassthroughBlocker(int group, const std::vector<GroupMember>& members);

}  // namespace vfio_gpu
