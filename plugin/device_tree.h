// The plugin's picture of what it advertises: resource name -> device ID -> device info (Intel's
// DeviceTree). Plain data derived from a Snapshot (health.h), fed to one server per resource, and
// read by the pure allocation functions; tests build one by hand.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vfio_gpu::plugin {

using Clock = std::chrono::steady_clock;

struct DeviceInfo {
  std::string id;        // the unit ID, e.g. "0000:17:00.0"
  std::string resource;  // "nvidia.com/pgpu"
  bool healthy = false;
  std::string reason;  // why it is Unhealthy; empty when healthy
  std::optional<int> numa_node;
  int iommu_group = -1;
  std::vector<std::string> gpus;       // BDFs of the GPUs (or NVSwitches) of the unit
  std::vector<std::string> pcie_path;  // upstream bridges, root port first
  std::string root_complex;            // "pci0000:16"
  // Set while the unit's device is gone from sysfs altogether; it is dropped after a grace period.
  std::optional<Clock::time_point> missing_since;

  bool operator==(const DeviceInfo&) const = default;
};

using ResourceDevices = std::map<std::string, DeviceInfo>;  // by device ID (sorted)
using DeviceTree = std::map<std::string, ResourceDevices>;  // by resource name (sorted)

inline constexpr const char* kHealthy = "Healthy";
inline constexpr const char* kUnhealthy = "Unhealthy";

}  // namespace vfio_gpu::plugin
