// Every path that touches the host comes from here, so every behaviour can run on a fake tree.
#pragma once

#include <string>

namespace vfio_gpu {

struct HostRoots {
  std::string sysfs = "/sys";  // holds bus/pci/devices, kernel/iommu_groups, dev/char
  std::string dev = "/dev";    // holds vfio/vfio, vfio/<group>, vfio/devices/vfioX

  std::string PciDevices() const { return sysfs + "/bus/pci/devices"; }
  std::string PciDevice(const std::string& bdf) const { return PciDevices() + "/" + bdf; }
  std::string IommuGroups() const { return sysfs + "/kernel/iommu_groups"; }
  std::string IommuGroupDevices(int group) const {
    return IommuGroups() + "/" + std::to_string(group) + "/devices";
  }
  std::string DevChar(unsigned major, unsigned minor) const {
    return sysfs + "/dev/char/" + std::to_string(major) + ":" + std::to_string(minor);
  }
  // Host-side device nodes (under the dev root) ...
  std::string VfioGroupNode(int group) const { return dev + "/vfio/" + std::to_string(group); }
  std::string VfioContainerNode() const { return dev + "/vfio/vfio"; }
  std::string VfioCdevNode(const std::string& name) const { return dev + "/vfio/devices/" + name; }
};

// ... and the paths a container sees, which are always the real ones: CDI specs and OCI specs carry
// these, whatever the dev root is.
inline std::string ContainerGroupPath(int group) {
  return "/dev/vfio/" + std::to_string(group);
}
inline constexpr const char* kContainerVfioPath = "/dev/vfio/vfio";
inline std::string ContainerCdevPath(const std::string& name) {
  return "/dev/vfio/devices/" + name;
}

}  // namespace vfio_gpu
