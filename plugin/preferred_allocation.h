// GetPreferredAllocation's choice: a pure, deterministic function of the advertised devices.
//
// Always includes must_include. Then prefers, in this order: units on one NUMA node, units under
// one PCIe switch (a shared upstream path below the root port), units under one root complex (for
// peer-to-peer), and finally best fit (take from the smallest locality domain that holds the
// request) so large contiguous domains stay free for large requests. Ties break on device IDs.
// Unknown or Unhealthy candidates are ignored: it never fails, it may just return fewer (the
// kubelet fills the rest).
#pragma once

#include <string>
#include <vector>

#include "plugin/device_tree.h"

namespace vfio_gpu::plugin {

std::vector<std::string> PreferredAllocation(const ResourceDevices& devices,
                                             const std::vector<std::string>& available,
                                             const std::vector<std::string>& must_include,
                                             int size);

// The locality keys used above (exposed for tests).
std::string NumaKey(const DeviceInfo& d);
std::string SwitchKey(const DeviceInfo& d);

}  // namespace vfio_gpu::plugin
