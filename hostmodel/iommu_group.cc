#include "hostmodel/iommu_group.h"

#include <algorithm>

#include "common/files.h"
#include "common/strings.h"

namespace vfio_gpu {

Result<IommuGroup> ReadIommuGroup(const HostRoots& roots, int group) {
  std::string dir = roots.IommuGroupDevices(group);
  auto names = ListDir(dir);
  if (!names) {
    return Error("IOMMU group " + std::to_string(group) + " does not exist (" + dir + ")",
                 ErrorKind::kNotFound);
  }
  IommuGroup g;
  g.number = group;
  for (const auto& name : *names) {
    GroupMember m;
    m.bdf = name;
    std::string dev = dir + "/" + name;
    if (auto drv = LinkBasename(dev + "/driver"); drv.ok()) m.driver = *drv;
    auto cls = ReadAttr(dev + "/class");
    auto v = cls.ok() ? ParseHex(*cls) : std::nullopt;
    if (!v || *v > 0xffffff) {
      m.error = cls.ok() ? "class is malformed (" + Quote(*cls) + ")" : cls.error().message();
    } else {
      m.class_code = *v;
      uint32_t sub = *v >> 8;
      m.bridge = sub == 0x0604 || sub == 0x0607 || sub == 0x0609;
    }
    g.members.push_back(std::move(m));
  }
  std::sort(g.members.begin(), g.members.end(),
            [](const GroupMember& a, const GroupMember& b) { return a.bdf < b.bdf; });
  return g;
}

std::optional<int> IommuGroupOf(const HostRoots& roots, const std::string& bdf) {
  if (!IsBdf(bdf)) return std::nullopt;
  auto g = LinkBasename(roots.PciDevice(bdf) + "/iommu_group");
  if (!g) return std::nullopt;
  auto n = ParseInt(*g);
  if (!n || *n < 0) return std::nullopt;
  return static_cast<int>(*n);
}

Viability CheckViability(const IommuGroup& group) {
  std::string prefix = "IOMMU group " + std::to_string(group.number) + " is not viable: ";
  for (const auto& m : group.members) {
    if (m.bridge) continue;
    if (!m.error.empty()) {
      // We can't tell whether it's a bridge; VFIO would judge it by its driver alone.
      if (IsViableDriver(m.driver)) continue;
    }
    if (!IsViableDriver(m.driver)) {
      std::string what = m.error.empty() ? ClassName(m.class_code) : "unknown class";
      return {false,
              prefix + m.bdf + " (" + what + ") is bound to " + m.driver + "; bind it to vfio-pci"};
    }
  }
  if (group.members.empty()) return {false, prefix + "it has no devices"};
  return {true, ""};
}

std::string PassthroughBlocker(int group, const std::vector<GroupMember>& members) {
  for (const auto& m : members) {
    if (m.bridge || IsVfioDriver(m.driver)) continue;
    std::string what = m.error.empty() ? ClassName(m.class_code) : "unknown class";
    std::string state = m.driver.empty() ? "has no driver" : "is bound to " + m.driver;
    return "IOMMU group " + std::to_string(group) + ": " + m.bdf + " (" + what + ") " + state +
           "; Kata passes every function of the group into the VM and QEMU opens only "
           "vfio-pci-bound ones: bind it to vfio-pci";
  }
  return "";
}

}  // namespace vfio_gpu
