// Cold-plug planning for Kata < 3.24, which does not ask the pod resources API itself: the pod's
// allocated GPU groups go into the sandbox spec, as users once did by hand with
// `cdi.k8s.io/gpu: nvidia.com/pgpu=0`.
#include <algorithm>

#include "shim-hooks/hooks.h"

namespace vfio_gpu {

HookResult PlanColdPlug(OciSpec& spec, std::vector<VfioRef>& refs,
                        const std::optional<PodAllocation>& allocation, const HostFacts& host,
                        const ShimConfig& cfg) {
  HookResult out;
  if (cfg.kata_pod_resources || spec.identity.role != SpecRole::kSandbox || !allocation ||
      !allocation->found)
    return out;
  std::vector<Json> entries = spec.DeviceEntries();
  bool changed = false;
  for (const auto& unit_id : allocation->units) {
    bool present = std::any_of(refs.begin(), refs.end(),
                               [&](const VfioRef& r) { return r.unit_id == unit_id; });
    if (present) continue;
    const Unit* u = host.snapshot.FindUnit(unit_id);
    if (!u) {
      out.refusal = Refusal{"vfio-gpu: the kubelet allocated GPU " + unit_id + " to pod " +
                                spec.identity.Pod() +
                                " but this node has no such unit (it was removed or renamed); "
                                "delete the pod so it is scheduled again",
                            ErrorKind::kPermanent,
                            {{unit_id, "allocated but no longer present on the node"}}};
      out.decisions.push_back(
          {"cold-plug", "refused", {}, -1, unit_id, out.refusal->message, false});
      return out;
    }
    auto gf = host.groups.find(u->iommu_group);
    std::optional<DevNum> node = gf == host.groups.end() ? std::nullopt : gf->second.node;
    DevNum num = node.value_or(DevNum{0, 0});
    entries.push_back(CharDeviceEntry(u->GroupPath(), num.major, num.minor));
    changed = true;
    VfioRef ref;
    ref.source = RefSource::kColdPlug;
    ref.what = u->GroupPath();
    ref.device_index = entries.size() - 1;
    ref.group = u->iommu_group;
    ref.unit_id = u->id;
    for (const auto& m : u->members)
      if (!m.bridge) ref.bdfs.push_back(m.bdf);
    out.decisions.push_back(
        {"cold-plug", "added", ref.bdfs, ref.group, u->id,
         "allocated by the kubelet; Kata < 3.24 cold-plugs it from the sandbox spec", false});
    refs.push_back(std::move(ref));
  }
  if (changed) spec.SetDevices(entries);
  return out;
}

}  // namespace vfio_gpu
