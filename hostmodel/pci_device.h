// One PCI function as sysfs describes it, read without a vendor library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "hostmodel/host_roots.h"

namespace vfio_gpu {

inline constexpr uint32_t kClassVga = 0x030000;
inline constexpr uint32_t k3dController = 0x030200;
inline constexpr uint32_t kClassAudio = 0x040300;
inline constexpr uint32_t kClassPciBridge = 0x060400;
inline constexpr uint32_t kClassOtherBridge = 0x068000;  // NVSwitch
inline constexpr uint16_t kVendorNvidia = 0x10de;

struct PciDevice {
  std::string bdf;  // canonical "0000:17:00.0"
  uint16_t vendor = 0;
  uint16_t device = 0;
  uint16_t subsystem_vendor = 0;
  uint16_t subsystem_device = 0;
  uint32_t class_code = 0;            // 24-bit, e.g. 0x030200
  std::string driver;                 // basename of the driver link; empty when unbound
  std::optional<int> numa_node;       // none when sysfs says -1 or has no numa_node
  std::optional<int> iommu_group;     // none when the link is missing or dangling
  std::string reset_method;           // e.g. "flr bus"; empty when unknown
  std::string vfio_cdev;              // "vfio3" when vfio-dev/vfio3/dev exists (a real cdev)
  std::string root_complex;           // "pci0000:16"
  std::vector<std::string> upstream;  // bridge BDFs from the root port down to our parent
  bool present = true;  // false when config space reads back 0xffff (fell off the bus)
  std::string error;    // non-empty when an attribute was missing or malformed

  bool IsBridge() const;  // PCI-to-PCI / CardBus bridges and ports: ignored for viability
};

// Short human name for a class code: "3D controller", "VGA", "audio", "USB", "bridge", ...
std::string ClassName(uint32_t class_code);

// Reads one device. Never fails hard: problems land in PciDevice::error. The Result fails only when
// the device directory itself does not exist.
Result<PciDevice> ReadPciDevice(const HostRoots& roots, const std::string& bdf);

// Vendor and class only: what a scan looks at before reading everything else of a candidate.
struct PciIdentity {
  uint16_t vendor = 0;
  uint32_t class_code = 0;
  bool ok = false;
};

// Drivers that leave a group usable by VFIO: a vfio driver (vfio-pci or a vendor variant such as
// nvgrace_gpu_vfio_pci), pci-stub, or none.
bool IsVfioDriver(const std::string& driver);
bool IsViableDriver(const std::string& driver);

}  // namespace vfio_gpu
