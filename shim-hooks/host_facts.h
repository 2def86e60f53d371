// The shell side of the hooks' host view: scans sysfs and reads exactly the groups, nodes and
// cdevs a spec (or a pod's allocation) refers to.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "common/result.h"
#include "hostmodel/selection.h"
#include "shim-hooks/hooks.h"

namespace vfio_gpu {

// The selection the shim scans with: GPUs of every vendor we know, so units exist whatever naming
// the plugin uses (governance of CDI kinds comes from the shim config's `resources`).
Selection ShimSelection();
// The node's selection when the config carries one (plugin publication or node_config), else the
// built-in one.
Selection ShimSelection(const ShimConfig& cfg);

// Lists <dev_root>/vfio and <dev_root>/vfio/devices and stats each node (a few syscalls).
VfioNodes ReadVfioNodes(const HostRoots& roots);
// Whether a spec has character-device entries with numbers outside the VFIO paths: only then can
// an alias (a VFIO node's numbers at another path) hide in it.
bool MayHoldAliases(const OciSpec& spec, const HostRoots& roots);
// The VFIO node a device entry's numbers are on this host, if any.
std::optional<DevKey> NumbersOf(const OciDevice& d);

// The IOMMU groups a start has to know: those of the /dev/vfio/<N> nodes and iommufd cdevs in
// `spec`, plus `extra_groups`. `complete` is false when a cdev could not be traced to its group
// through its device numbers (then only a scan of the whole bus finds its owner).
struct GroupsOfInterest {
  std::set<int> groups;
  bool complete = true;
};
// Aliases count through `nodes`.
GroupsOfInterest GroupsNamedBy(const HostRoots& roots, const OciSpec& spec,
                               const std::set<int>& extra_groups, const VfioNodes& nodes = {});
// The IOMMU group of a PCI function (a unit ID is its lowest GPU's BDF), from sysfs.
std::optional<int> GroupOfBdf(const HostRoots& roots, const std::string& bdf);
// A snapshot holding exactly the units of `interest` (every member of each group is read), or of
// the whole bus when the interest is not complete. A start never needs more, and a node has
// hundreds of PCI functions.
Result<Snapshot> ScanForStart(const HostRoots& roots, const GroupsOfInterest& interest,
                              const Selection& selection = ShimSelection());

// Reads facts for every VFIO node in `spec` (by path or, for aliases, by numbers) plus
// `extra_groups`. `snapshot` comes from Scan; `nodes` from ReadVfioNodes (read here when absent).
HostFacts GatherHostFacts(const HostRoots& roots, Snapshot snapshot, const OciSpec& spec,
                          const std::set<int>& extra_groups,
                          std::optional<VfioNodes> nodes = std::nullopt);

// Adds a group's facts (existence, members, viability, node) to `facts`.
void AddGroupFacts(const HostRoots& roots, int group, HostFacts& facts);

}  // namespace vfio_gpu
