#include "hostmodel/snapshot.h"

#include <algorithm>

#include "hostmodel/host_roots.h"

namespace vfio_gpu {

std::string Unit::GroupPath() const {
  return ContainerGroupPath(iommu_group);
}

const Unit* Snapshot::FindUnit(const std::string& id) const {
  auto it = std::lower_bound(units.begin(), units.end(), id,
                             [](const Unit& u, const std::string& key) { return u.id < key; });
  return it != units.end() && it->id == id ? &*it : nullptr;
}

const Unit* Snapshot::FindByGroup(int group) const {
  for (const auto& u : units)
    if (u.iommu_group == group) return &u;
  return nullptr;
}

const Unit* Snapshot::FindByBdf(const std::string& bdf) const {
  for (const auto& u : units)
    for (const auto& m : u.members)
      if (m.bdf == bdf) return &u;
  return nullptr;
}

std::vector<std::string> Snapshot::Resources() const {
  std::vector<std::string> out;
  for (const auto& u : units) out.push_back(u.resource);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace vfio_gpu
