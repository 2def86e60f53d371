// Builds a Snapshot from a sysfs root and a dev root.
#pragma once

#include "common/result.h"
#include "hostmodel/host_roots.h"
#include "hostmodel/selection.h"
#include "hostmodel/snapshot.h"

namespace vfio_gpu {

// Scans <sysfs>/bus/pci/devices. Broken entries become Snapshot::problems, never a failure; the
// Result fails only when the PCI device directory itself can't be listed.
Result<Snapshot> Scan(const HostRoots& roots, const Selection& selection);

}  // namespace vfio_gpu
