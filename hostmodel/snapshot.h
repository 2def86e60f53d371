// The host picture: immutable, plain data, built by one scan. Everything downstream (CLI, CDI
// specs, the plugin's servers, the shim's hooks) is a function of a Snapshot, so tests build one by
// hand or from a fake tree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hostmodel/iommu_group.h"

namespace vfio_gpu {

enum class UnitKind { kGpu, kNvSwitch };

// One IOMMU group that holds at least one vfio-bound GPU (or NVSwitch): what a tenant gets.
struct Unit {
  std::string id;        // lowest GPU BDF, e.g. "0000:17:00.0"; a valid CDI device name
  std::string resource;  // "nvidia.com/pgpu": the kubelet resource name and the CDI kind
  UnitKind kind = UnitKind::kGpu;
  int iommu_group = -1;
  std::optional<int> numa_node;
  bool viable = true;
  std::string reason;                // empty when viable
  std::vector<GroupMember> members;  // the whole group, bridges included, sorted by BDF
  std::vector<std::string> gpus;     // BDFs of the GPUs (or NVSwitches) in the unit, sorted
  uint16_t vendor = 0;
  uint16_t device = 0;
  std::string model;                   // "GA102GL [A10]", from the curated table or pci.ids
  bool group_node_present = false;     // /dev/vfio/<group> exists under the dev root
  std::vector<std::string> cdevs;      // iommufd cdevs ("vfio3") of the members that have one
  std::string root_complex;            // "pci0000:16"
  std::vector<std::string> pcie_path;  // upstream bridges of the lowest GPU, root port first
  std::string reset_method;
  bool present = true;  // false when a GPU's config space reads 0xffff

  std::string CdiName() const { return resource + "=" + id; }
  // The group node as a container sees it.
  std::string GroupPath() const;
};

struct Skipped {
  std::string bdf;
  std::string reason;
};

struct DeviceProblem {
  std::string bdf;
  std::string error;
};

struct Snapshot {
  std::vector<Unit> units;              // sorted by id
  std::vector<Skipped> skipped;         // GPUs that are not units, with why
  std::vector<DeviceProblem> problems;  // devices whose sysfs entries were broken

  const Unit* FindUnit(const std::string& id) const;
  const Unit* FindByGroup(int group) const;
  const Unit* FindByBdf(const std::string& bdf) const;  // any member
  std::vector<std::string> Resources() const;           // sorted, unique
};

}  // namespace vfio_gpu
