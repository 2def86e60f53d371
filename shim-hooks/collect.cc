// Collect: every way a spec names a VFIO device, resolved to IOMMU groups, BDFs and units.
#include <cctype>

#include "common/strings.h"
#include "shim-hooks/hooks.h"
#include "shim-hooks/host_facts.h"

namespace vfio_gpu {

std::string RefSourceName(RefSource s) {
  switch (s) {
    case RefSource::kGroupNode:
      return "group node";
    case RefSource::kCdev:
      return "iommufd cdev";
    case RefSource::kAlias:
      return "alias";
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
  if (!u)
    if (auto v = host.vanished_units.find(group); v != host.vanished_units.end())
      ref.unit_id = v->second;
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

namespace {

std::string Numbers(const DevKey& k) {
  return std::to_string(k.first) + ":" + std::to_string(k.second);
}

// What device numbers are on this host, for messages: "/dev/vfio/31", "the iommufd cdev vfio3".
std::string NodeOfNumbers(const DevKey& k, const HostFacts& host, const HostRoots& roots) {
  if (auto g = host.nodes.groups.find(k); g != host.nodes.groups.end())
    return roots.VfioGroupNode(g->second);
  if (auto c = host.nodes.cdevs.find(k); c != host.nodes.cdevs.end())
    return roots.VfioCdevNode(c->second);
  return "no VFIO node";
}

// runc creates the entry from its numbers, Kata reads the group from its path: both must name the
// same node, or the two would reach different GPUs.
std::string NumbersMismatch(const OciDevice& d, const std::optional<DevKey>& host_node,
                            const HostFacts& host, const HostRoots& roots) {
  auto num = NumbersOf(d);
  if (!num || (host_node && *num == *host_node)) return "";
  // Unknown numbers at a path whose node isn't a character device here (a fake tree): nothing
  // says they differ. Numbers of another VFIO node, or of VFIO's major, do.
  bool vfio = host.nodes.groups.count(*num) || host.nodes.cdevs.count(*num) ||
              host.nodes.majors.count(num->first);
  if (!host_node && !vfio) return "";
  return "linux.devices entry " + d.path + " carries device numbers " + Numbers(*num) +
         " (on this node: " + NodeOfNumbers(*num, host, roots) + "), but " + d.path + " is " +
         (host_node ? Numbers(*host_node) : std::string("not a VFIO node on this node")) +
         ": the path and the numbers name different devices; remove the entry and request the "
         "GPU through the pod's resources";
}

void ResolveCdev(VfioRef& ref, const std::string& name, const HostFacts& host,
                 const HostRoots& roots) {
  auto bdf = host.cdevs.find(name);
  auto grp = bdf == host.cdevs.end() ? host.bdf_groups.end() : host.bdf_groups.find(bdf->second);
  if (grp == host.bdf_groups.end()) {
    ref.error = "iommufd cdev " + ref.what + " does not lead to a PCI device in " + roots.sysfs +
                "/dev/char or any unit's vfio-dev";
  } else {
    ResolveGroup(ref, grp->second, host);
  }
}

}  // namespace

CollectResult Collect(const OciSpec& spec, const HostFacts& host, const CdiRegistry& cdi,
                      const ShimConfig& cfg) {
  CollectResult out;
  for (const auto& d : spec.devices) {
    VfioRef ref;
    ref.what = d.path;
    ref.device_index = d.index;
    auto num = NumbersOf(d);
    if (auto g = GroupOfDevicePath(d.path, cfg.roots)) {
      ref.source = RefSource::kGroupNode;
      ResolveGroup(ref, *g, host);
      ref.error = NumbersMismatch(d, host.nodes.OfGroup(*g), host, cfg.roots);
    } else if (auto name = CdevOfDevicePath(d.path, cfg.roots)) {
      ref.source = RefSource::kCdev;
      ResolveCdev(ref, *name, host, cfg.roots);
      if (auto m = NumbersMismatch(d, host.nodes.OfCdev(*name), host, cfg.roots); !m.empty())
        ref.error = m;
    } else if (!num) {
      continue;
    } else if (auto ng = host.nodes.groups.find(*num); ng != host.nodes.groups.end()) {
      ref.source = RefSource::kAlias;
      ref.what = d.path + " (" + Numbers(*num) + " = " + cfg.roots.VfioGroupNode(ng->second) + ")";
      ResolveGroup(ref, ng->second, host);
    } else if (auto nc = host.nodes.cdevs.find(*num); nc != host.nodes.cdevs.end()) {
      ref.source = RefSource::kAlias;
      ref.what = d.path + " (" + Numbers(*num) + " = " + cfg.roots.VfioCdevNode(nc->second) + ")";
      ResolveCdev(ref, nc->second, host, cfg.roots);
    } else if (host.nodes.majors.count(num->first)) {
      ref.source = RefSource::kAlias;
      ref.error = "linux.devices entry " + d.path + " carries device numbers " + Numbers(*num) +
                  " of VFIO's major " + std::to_string(num->first) + ", but no node under " +
                  cfg.roots.dev +
                  "/vfio has them; remove the entry and request the GPU through the pod's "
                  "resources";
    } else {
      continue;  // not a VFIO device
    }
    out.refs.push_back(std::move(ref));
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
