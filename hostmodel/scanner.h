// Builds a Snapshot from a sysfs root and a dev root.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "hostmodel/host_roots.h"
#include "hostmodel/selection.h"
#include "hostmodel/snapshot.h"

namespace vfio_gpu {

// Scans <sysfs>/bus/pci/devices. Broken entries become Snapshot::problems, never a failure; the
// Result fails only when the PCI device directory itself can't be listed.
Result<Snapshot> Scan(const HostRoots& roots, const Selection& selection);

// The same over the given PCI functions only (names under <sysfs>/bus/pci/devices). Units depend
// only on the functions of their own IOMMU group, so passing every member of some groups yields
// exactly the units Scan would build for those groups (the shim reads just the groups a spec
// names instead of the whole bus).
Snapshot ScanDevices(const HostRoots& roots, const Selection& selection,
                     const std::vector<std::string>& bdfs);

}  // namespace vfio_gpu
