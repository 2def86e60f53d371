// The shell side of the hooks' host view: scans sysfs and reads exactly the groups, nodes and
// cdevs a spec (or a pod's allocation) refers to.
#pragma once

#include <set>

#include "common/result.h"
#include "hostmodel/selection.h"
#include "shim-hooks/hooks.h"

namespace vfio_gpu {

// The selection the shim scans with: GPUs of every vendor we know, so units exist whatever naming
// the plugin uses (governance of CDI kinds comes from the shim config's `resources`).
Selection ShimSelection();

// Reads facts for every VFIO node in `spec` plus `extra_groups`. `snapshot` comes from Scan.
HostFacts GatherHostFacts(const HostRoots& roots, Snapshot snapshot, const OciSpec& spec,
                          const std::set<int>& extra_groups);

// Adds a group's facts (existence, members, viability, node) to `facts`.
void AddGroupFacts(const HostRoots& roots, int group, HostFacts& facts);

}  // namespace vfio_gpu
