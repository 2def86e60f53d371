#include "plugin/health.h"

#include <algorithm>

#include "hostmodel/host_roots.h"

namespace vfio_gpu::plugin {
namespace {

const DeviceProblem* FindProblem(const Snapshot& s, const std::vector<std::string>& bdfs) {
  for (const auto& p : s.problems)
    if (std::find(bdfs.begin(), bdfs.end(), p.bdf) != bdfs.end()) return &p;
  return nullptr;
}

const Skipped* FindSkipped(const Snapshot& s, const std::vector<std::string>& bdfs) {
  for (const auto& k : s.skipped)
    if (std::find(bdfs.begin(), bdfs.end(), k.bdf) != bdfs.end()) return &k;
  return nullptr;
}

}  // namespace

DeviceInfo DeviceFromUnit(const Unit& unit, const Quarantine& quarantine) {
  DeviceInfo d;
  d.id = unit.id;
  d.resource = unit.resource;
  d.numa_node = unit.numa_node;
  d.iommu_group = unit.iommu_group;
  d.gpus = unit.gpus;
  d.pcie_path = unit.pcie_path;
  d.root_complex = unit.root_complex;
  // The most specific cause first: an operator acts on the first reason they read.
  if (auto q = quarantine.find(unit.id); q != quarantine.end()) {
    d.reason = "quarantined (quarantine/" + unit.id + "): " + q->second +
               "; remove the quarantine file once the device is repaired";
  } else if (!unit.present) {
    d.reason = "config space of " + unit.id +
               " reads 0xffff: the device fell off the bus; check its link and power";
  } else if (!unit.viable) {
    d.reason = unit.reason;
  } else if (auto blocker = PassthroughBlocker(unit.iommu_group, unit.members); !blocker.empty()) {
    d.reason = std::move(blocker);
  } else if (!unit.group_node_present) {
    d.reason = "IOMMU group " + std::to_string(unit.iommu_group) + " has no device node (" +
               ContainerGroupPath(unit.iommu_group) +
               "); load vfio-pci (modprobe vfio-pci) or rebind the GPU to vfio-pci";
  }
  d.healthy = d.reason.empty();
  return d;
}

DeviceTree ComputeDeviceTree(const Snapshot& snapshot, const Quarantine& quarantine,
                             const DeviceTree& previous, Clock::time_point now,
                             const HealthPolicy& policy) {
  DeviceTree tree;
  for (const auto& u : snapshot.units) tree[u.resource][u.id] = DeviceFromUnit(u, quarantine);

  for (const auto& [resource, devices] : previous) {
    for (const auto& [id, old] : devices) {
      if (tree.count(resource) && tree[resource].count(id)) continue;  // still a unit
      // Its GPU now belongs to another unit (groups re-formed): that unit speaks for it.
      std::vector<std::string> bdfs = old.gpus.empty() ? std::vector<std::string>{id} : old.gpus;
      bool absorbed = std::any_of(bdfs.begin(), bdfs.end(),
                                  [&](const std::string& b) { return snapshot.FindByBdf(b); });
      if (absorbed) continue;
      DeviceInfo d = old;
      d.healthy = false;
      if (const auto* p = FindProblem(snapshot, bdfs)) {
        d.reason = p->bdf + ": " + p->error;
        d.missing_since.reset();
      } else if (const auto* k = FindSkipped(snapshot, bdfs)) {
        d.reason = k->reason;
        d.missing_since.reset();
      } else {
        d.missing_since = old.missing_since.value_or(now);
        if (now - *d.missing_since > policy.vanished_grace) continue;  // given up on it
        d.reason = id +
                   " vanished from the PCI bus (removed or hot-unplugged); it is listed "
                   "again as soon as the device is back";
      }
      tree[resource][id] = std::move(d);
    }
  }
  return tree;
}

std::vector<DeviceChange> DiffTrees(const DeviceTree& before, const DeviceTree& after) {
  std::vector<DeviceChange> out;
  static const ResourceDevices kEmpty;
  auto devices_of = [](const DeviceTree& t, const std::string& r) -> const ResourceDevices& {
    auto it = t.find(r);
    return it == t.end() ? kEmpty : it->second;
  };
  std::vector<std::string> resources;
  for (const auto& [r, _] : before) resources.push_back(r);
  for (const auto& [r, _] : after)
    if (!before.count(r)) resources.push_back(r);
  std::sort(resources.begin(), resources.end());
  for (const auto& r : resources) {
    const auto& b = devices_of(before, r);
    const auto& a = devices_of(after, r);
    for (const auto& [id, d] : a) {
      auto old = b.find(id);
      if (old == b.end()) {
        out.push_back({DeviceChange::kAdded, r, id, d.reason});
      } else if (old->second.healthy != d.healthy) {
        out.push_back({d.healthy ? DeviceChange::kBecameHealthy : DeviceChange::kBecameUnhealthy, r,
                       id, d.reason});
      } else if (old->second.reason != d.reason) {
        out.push_back({DeviceChange::kReasonChanged, r, id, d.reason});
      }
    }
    for (const auto& [id, d] : b)
      if (!a.count(id)) out.push_back({DeviceChange::kRemoved, r, id, ""});
  }
  return out;
}

std::string Describe(const DeviceChange& c) {
  std::string dev = "device " + c.id + " (" + c.resource + ")";
  switch (c.kind) {
    case DeviceChange::kAdded:
      return dev + " advertised " +
             (c.reason.empty() ? std::string("Healthy") : "Unhealthy: " + c.reason);
    case DeviceChange::kRemoved:
      return dev + " no longer advertised";
    case DeviceChange::kBecameHealthy:
      return dev + " is Healthy again";
    case DeviceChange::kBecameUnhealthy:
      return dev + " is Unhealthy: " + c.reason;
    case DeviceChange::kReasonChanged:
      return dev + " stays Unhealthy: " + c.reason;
  }
  return dev;
}

}  // namespace vfio_gpu::plugin
