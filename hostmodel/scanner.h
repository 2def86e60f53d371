// Builds a Snapshot from a sysfs root and a dev root.
#pragma once

#include <set>
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

// The same over the given PCI functions only (names under <sysfs>/bus/pci/devices; a name with no
// entry there is skipped, as a fresh listing would not have it). Units depend
// only on the functions of their own IOMMU group, so passing every member of some groups yields
// exactly the units Scan would build for those groups (the shim reads just the groups a spec
// names instead of the whole bus).
Snapshot ScanDevices(const HostRoots& roots, const Selection& selection,
                     const std::vector<std::string>& bdfs);

// A change that names IOMMU groups (/dev/vfio/<N> came or went) or PCI functions (a uevent) only
// touches those groups. What to read again: every current member of those groups and of the groups
// the named functions are in now, every member of `previous`'s units in any of them, and the named
// functions themselves, so that ScanDevices builds those groups' units whole. Sorted, unique.
std::vector<std::string> FunctionsToReread(const HostRoots& roots, const Snapshot& previous,
                                           const std::set<int>& groups,
                                           const std::set<std::string>& bdfs);

// `previous` with everything about the functions in `reread` replaced by `part`, a ScanDevices of
// exactly those functions: equal to a full Scan when nothing else changed.
Snapshot MergeRescan(const Snapshot& previous, Snapshot part,
                     const std::vector<std::string>& reread);

}  // namespace vfio_gpu
