// Cold-plug planning for Kata < 3.24, which does not ask the pod resources API itself: the pod's
// allocated GPUs go into the sandbox spec in the form users once wrote by hand,
// `cdi.k8s.io/gpu: nvidia.com/pgpu=0` (Kata falls back to cdi.k8s.io/* annotations without the pod
// resources socket), or as linux.devices entries when configured so.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>

#include "common/strings.h"
#include "shim-hooks/hooks.h"

namespace vfio_gpu {
namespace {

constexpr const char* kCdiAnnotationPrefix = "cdi.k8s.io/";

bool KeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

struct Planned {
  const Unit* unit = nullptr;
  std::string kind;  // the resource name the kubelet allocated it under = the CDI kind
};

}  // namespace

std::string ColdPlugAnnotationKey(const std::string& kind) {
  std::string name = "vfio-gpu_";
  for (char c : kind) name += c == '/' ? '_' : (KeyChar(c) ? c : '-');
  while (!name.empty() && !std::isalnum(static_cast<unsigned char>(name.back()))) name.pop_back();
  if (name.size() > 63) {
    // Kinds we generate stay under 40 characters; a longer configured one keeps a stable,
    // unique and short key through a hash of the kind.
    uint32_t h = 2166136261u;
    for (char c : kind) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
    char hex[16];
    std::snprintf(hex, sizeof hex, "%08x", h);
    name = "vfio-gpu_" + std::string(hex);
  }
  return kCdiAnnotationPrefix + name;
}

HookResult PlanColdPlug(OciSpec& spec, std::vector<VfioRef>& refs,
                        const std::optional<PodAllocation>& allocation, const HostFacts& host,
                        const CdiRegistry& cdi, const ShimConfig& cfg) {
  HookResult out;
  if (cfg.kata_pod_resources || spec.identity.role != SpecRole::kSandbox || !allocation ||
      !allocation->found)
    return out;

  // Each allocated unit once, under the resource the kubelet allocated it as (the plugin's
  // resource name is the CDI kind of its specs).
  std::map<std::string, std::string> kind_of;  // unit ID -> kind
  for (const auto& [resource, ids] : allocation->by_resource)
    for (const auto& id : ids) kind_of.emplace(id, resource);
  std::vector<Planned> planned;
  for (const auto& unit_id : allocation->units) {
    bool present = std::any_of(refs.begin(), refs.end(),
                               [&](const VfioRef& r) { return r.unit_id == unit_id; });
    if (present) {
      out.decisions.push_back({"cold-plug",
                               "kept",
                               {},
                               -1,
                               unit_id,
                               "allocated by the kubelet and already named by the sandbox spec",
                               false});
      continue;
    }
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
    auto k = kind_of.find(unit_id);
    planned.push_back({u, k != kind_of.end() ? k->second : u->resource});
  }
  if (planned.empty()) return out;

  std::vector<Json> entries;
  if (cfg.cold_plug_form == ColdPlugForm::kLinuxDevices) entries = spec.DeviceEntries();
  std::map<std::string, std::vector<std::string>> names_by_key;
  for (const auto& p : planned) {
    const Unit& u = *p.unit;
    VfioRef ref;
    ref.source = RefSource::kColdPlug;
    ref.group = u.iommu_group;
    ref.unit_id = u.id;
    for (const auto& m : u.members)
      if (!m.bridge) ref.bdfs.push_back(m.bdf);
    std::string reason;
    if (cfg.cold_plug_form == ColdPlugForm::kLinuxDevices) {
      auto gf = host.groups.find(u.iommu_group);
      DevNum num = gf != host.groups.end() && gf->second.node ? *gf->second.node : DevNum{};
      entries.push_back(CharDeviceEntry(u.GroupPath(), num.major, num.minor));
      ref.what = u.GroupPath();
      ref.device_index = entries.size() - 1;
      reason = "linux.devices " + u.GroupPath();
    } else {
      // Dedup treats it like a tenant's CDI annotation: dropped if a device names the same GPU.
      ref.annotation_key = ColdPlugAnnotationKey(p.kind);
      ref.cdi_name = p.kind + "=" + u.id;
      const CdiDeviceEntry* e = cdi.Find(ref.cdi_name);
      bool leads_to_group = false;
      if (e)
        for (const auto& path : e->device_paths)
          leads_to_group = leads_to_group || VfioGroupOfPath(path) == u.iommu_group;
      if (!leads_to_group) {
        std::string why = e ? "the CDI spec " + e->file + " maps it to another IOMMU group than " +
                                  std::to_string(u.iommu_group) +
                                  " (stale: restart vfio-gpu-plugin)"
                            : "it is in no CDI spec in " + Join(cfg.cdi_dirs, ", ") +
                                  " (is vfio-gpu-plugin running on this node?)";
        out.refusal = Refusal{"vfio-gpu: cannot cold-plug GPU " + u.id + " into pod " +
                                  spec.identity.Pod() + ": Kata resolves CDI device " +
                                  ref.cdi_name + " through the CDI specs, but " + why,
                              ErrorKind::kTransient,
                              {}};
        out.decisions.push_back(
            {"cold-plug", "refused", ref.bdfs, u.iommu_group, u.id, out.refusal->message, false});
        return out;
      }
      ref.what = ref.annotation_key + "=" + ref.cdi_name;
      names_by_key[ref.annotation_key].push_back(ref.cdi_name);
      reason = "annotation " + ref.what;
    }
    out.decisions.push_back(
        {"cold-plug", "added", ref.bdfs, ref.group, u.id,
         "allocated by the kubelet; Kata < 3.24 cold-plugs it from the sandbox spec (" + reason +
             ")",
         false});
    refs.push_back(std::move(ref));
  }
  if (cfg.cold_plug_form == ColdPlugForm::kLinuxDevices) {
    spec.SetDevices(entries);
    return out;
  }
  for (const auto& [key, names] : names_by_key) {
    // Keep whatever the key already held (it is ours, but never lose a name silently).
    std::vector<std::string> value;
    auto existing = spec.annotations.find(key);
    if (existing != spec.annotations.end())
      for (const auto& raw : Split(existing->second, ','))
        if (std::string n(Trim(raw)); !n.empty()) value.push_back(n);
    for (const auto& n : names)
      if (std::find(value.begin(), value.end(), n) == value.end()) value.push_back(n);
    spec.SetAnnotation(key, Join(value, ","));
  }
  return out;
}

}  // namespace vfio_gpu
