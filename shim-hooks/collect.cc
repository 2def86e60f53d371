// Collect: every way a spec names a VFIO device, resolved to IOMMU groups, BDFs and units.
#include <cctype>

#include "common/strings.h"
#include "shim-hooks/hooks.h"

namespace vfio_gpu {

std::string RefSourceName(RefSource s) {
  switch (s) {
    case RefSource::kGroupNode:
      return "group node";
    case RefSource::kCdev:
      return "iommufd cdev";
    case RefSource::kCdiAnnotation:
      return "CDI annotation";
    case RefSource::kColdPlug:
      return "cold-plug plan";
  }
  return "?";
}

namespace {

bool AllDigits(const std::string& s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// The part of `path` after "<root>/vfio/" for root /dev and the configured dev root.
std::optional<std::string> VfioRel(const std::string& path, const HostRoots& roots) {
  for (const std::string& root : {std::string("/dev"), roots.dev}) {
    std::string prefix = root + "/vfio/";
    if (StartsWith(path, prefix)) return path.substr(prefix.size());
  }
  return std::nullopt;
}

std::vector<std::string> Endpoints(const IommuGroup& g) {
  std::vector<std::string> out;
  for (const auto& m : g.members)
    if (!m.bridge) out.push_back(m.bdf);
  return out;
}

void ResolveGroup(VfioRef& ref, int group, const HostFacts& host) {
  ref.group = group;
  auto it = host.groups.find(group);
  if (it != host.groups.end() && it->second.exists) ref.bdfs = Endpoints(it->second.group);
  const Unit* u = host.snapshot.FindByGroup(group);
  if (u) {
    ref.unit_id = u->id;
    if (ref.bdfs.empty())
      for (const auto& m : u->members)
        if (!m.bridge) ref.bdfs.push_back(m.bdf);
  }
}

}  // namespace

std::optional<int> GroupOfDevicePath(const std::string& path, const HostRoots& roots) {
  auto rel = VfioRel(path, roots);
  if (!rel || !AllDigits(*rel)) return std::nullopt;
  return std::stoi(*rel);
}

std::optional<std::string> CdevOfDevicePath(const std::string& path, const HostRoots& roots) {
  auto rel = VfioRel(path, roots);
  if (!rel || !StartsWith(*rel, "devices/")) return std::nullopt;
  std::string name = rel->substr(8);
  if (!StartsWith(name, "vfio") || !AllDigits(name.substr(4))) return std::nullopt;
  return name;
}

std::vector<std::pair<std::string, std::string>> CdiAnnotationNames(const OciSpec& spec,
                                                                    const ShimConfig& cfg) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, value] : spec.annotations) {
    if (!StartsWith(key, "cdi.k8s.io/")) continue;
    for (const auto& raw : Split(value, ',')) {
      std::string name(Trim(raw));
      auto eq = name.find('=');
      if (eq == std::string::npos) continue;
      if (!cfg.Governs(name.substr(0, eq))) continue;
      out.emplace_back(key, name);
    }
  }
  return out;
}

CollectResult Collect(const OciSpec& spec, const HostFacts& host, const CdiRegistry& cdi,
                      const ShimConfig& cfg) {
  CollectResult out;
  for (const auto& d : spec.devices) {
    if (auto g = GroupOfDevicePath(d.path, cfg.roots)) {
      VfioRef ref;
      ref.source = RefSource::kGroupNode;
      ref.what = d.path;
      ref.device_index = d.index;
      ResolveGroup(ref, *g, host);
      out.refs.push_back(std::move(ref));
    } else if (auto name = CdevOfDevicePath(d.path, cfg.roots)) {
      VfioRef ref;
      ref.source = RefSource::kCdev;
      ref.what = d.path;
      ref.device_index = d.index;
      auto bdf = host.cdevs.find(*name);
      auto grp =
          bdf == host.cdevs.end() ? host.bdf_groups.end() : host.bdf_groups.find(bdf->second);
      if (grp == host.bdf_groups.end()) {
        ref.error = "iommufd cdev " + d.path + " does not lead to a PCI device in " +
                    cfg.roots.sysfs + "/dev/char or any unit's vfio-dev";
      } else {
        ResolveGroup(ref, grp->second, host);
      }
      out.refs.push_back(std::move(ref));
    }
  }
  for (const auto& [key, name] : CdiAnnotationNames(spec, cfg)) {
    VfioRef ref;
    ref.source = RefSource::kCdiAnnotation;
    ref.what = key + "=" + name;
    ref.annotation_key = key;
    ref.cdi_name = name;
    if (!ParseCdiName(name)) {
      ref.error = "annotation " + key + " names \"" + name + "\", which is not a CDI device name";
    } else if (const CdiDeviceEntry* e = cdi.Find(name)) {
      for (const auto& p : e->device_paths)
        if (auto g = VfioGroupOfPath(p)) ResolveGroup(ref, *g, host);
      if (ref.group < 0)
        ref.error = "CDI device " + name + " (" + e->file + ") has no /dev/vfio/<N> node";
    } else {
      ref.error = "CDI device " + name + " (annotation " + key + ") is in no CDI spec in " +
                  Join(cfg.cdi_dirs, ", ") + "; is vfio-gpu-plugin running on this node?";
    }
    out.refs.push_back(std::move(ref));
  }
  for (const auto& r : out.refs) {
    Decision d;
    d.hook = "collect";
    d.action = "found";
    d.bdfs = r.bdfs;
    d.group = r.group;
    d.unit = r.unit_id;
    d.reason = RefSourceName(r.source) + " " + r.what + (r.error.empty() ? "" : ": " + r.error);
    out.decisions.push_back(std::move(d));
  }
  return out;
}

}  // namespace vfio_gpu
