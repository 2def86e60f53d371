// Health: a pure function from the host picture (Snapshot + quarantine marks) and what was
// advertised before, to what is advertised now.
//
// A unit is Unhealthy when its group node /dev/vfio/<N> is gone, its group is not viable (a member
// left vfio-pci for a host driver), a member left vfio-pci for no driver (VFIO still calls the
// group viable, but Kata passes every member and QEMU can't open that one), a GPU fell off the bus
// (config space reads 0xffff), or it is quarantined. A unit that was advertised and is no longer a
// unit stays listed, Unhealthy with the reason, so the kubelet never silently loses capacity it
// accounted for:
// - its GPU is still in sysfs (rebound to nvidia, broken entries): listed for as long as that
// holds;
// - its GPU vanished from sysfs: listed until it comes back, or dropped after `vanished_grace`.
// Everything clears by itself when the cause does: no restart after a rebind or a module reload.
#pragma once

#include <string>
#include <vector>

#include "hostmodel/snapshot.h"
#include "plugin/device_tree.h"
#include "plugin/quarantine.h"

namespace vfio_gpu::plugin {

struct HealthPolicy {
  Clock::duration vanished_grace = std::chrono::minutes(10);
};

// The health verdict of one unit of a Snapshot.
DeviceInfo DeviceFromUnit(const Unit& unit, const Quarantine& quarantine);

DeviceTree ComputeDeviceTree(const Snapshot& snapshot, const Quarantine& quarantine,
                             const DeviceTree& previous, Clock::time_point now,
                             const HealthPolicy& policy = {});

// One line's worth of change between two trees, for the decision log.
struct DeviceChange {
  enum Kind { kAdded, kRemoved, kBecameHealthy, kBecameUnhealthy, kReasonChanged };
  Kind kind;
  std::string resource;
  std::string id;
  std::string reason;  // the new reason (Unhealthy) or empty
};

std::vector<DeviceChange> DiffTrees(const DeviceTree& before, const DeviceTree& after);
std::string Describe(const DeviceChange& change);

}  // namespace vfio_gpu::plugin
