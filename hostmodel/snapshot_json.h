// The JSON form of a Snapshot (`vfio-gpu scan --json`): the contract operators and tests rely on.
#pragma once

#include "common/json.h"
#include "hostmodel/snapshot.h"

namespace vfio_gpu {

// {"units": [{id, resource, cdi_device, iommu_group, numa_node, viable, reason, members: [{bdf,
// driver, class}], ...}], "skipped": [{bdf, reason}], "problems": [{bdf, error}]}
Json SnapshotToJson(const Snapshot& snapshot);
Json UnitToJson(const Unit& unit);

}  // namespace vfio_gpu
