#include "cdi/spec.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "common/files.h"
#include "common/json.h"
#include "common/strings.h"

namespace vfio_gpu {
namespace {

// Semantic versions we may emit, oldest first. Consumers in the field (Kata vendors specs-go 1.0.0)
// reject anything above 1.0.0, so we never go past what the content needs.
int VersionRank(const std::string& v) {
  if (v == "0.3.0") return 0;
  if (v == "0.5.0") return 1;
  if (v == "0.6.0") return 2;
  return 3;
}

void Require(std::string& version, const std::string& needed) {
  if (VersionRank(needed) > VersionRank(version)) version = needed;
}

Json DeviceNode(const std::string& path, const std::string& host_path) {
  Json node = Json::Object();
  node.Set("path", Json::String(path));
  if (!host_path.empty() && host_path != path) node.Set("hostPath", Json::String(host_path));
  return node;
}

}  // namespace

std::string CdiFileName(const std::string& kind) {
  std::string name = kind;
  std::replace(name.begin(), name.end(), '/', '-');
  return kCdiFilePrefix + name + ".json";
}

std::vector<CdiSpec> BuildCdiSpecs(const Snapshot& snapshot, const Selection& selection,
                                   const HostRoots& roots) {
  std::map<std::string, std::vector<const Unit*>> by_kind;
  for (const auto& u : snapshot.units) by_kind[u.resource].push_back(&u);
  bool custom_dev = roots.dev != "/dev";

  std::vector<CdiSpec> specs;
  for (const auto& [kind, units] : by_kind) {
    std::string version = "0.3.0";
    if (kind.substr(kind.find('/') + 1).find('.') != std::string::npos) Require(version, "0.6.0");
    Json devices = Json::Array();
    auto add_device = [&](const std::string& name, const Unit& u) {
      if (!name.empty() && std::isdigit(static_cast<unsigned char>(name.front())))
        Require(version, "0.5.0");
      Json nodes = Json::Array();
      std::string host = custom_dev ? roots.VfioGroupNode(u.iommu_group) : "";
      if (!host.empty()) Require(version, "0.5.0");
      nodes.Append(DeviceNode(u.GroupPath(), host));
      Json edits = Json::Object();
      edits.Set("deviceNodes", std::move(nodes));
      Json dev = Json::Object();
      dev.Set("name", Json::String(name));
      dev.Set("containerEdits", std::move(edits));
      devices.Append(std::move(dev));
    };
    for (const Unit* u : units) add_device(u->id, *u);
    if (selection.cdi_aliases) {
      // PCI-order index and group number, as NVIDIA's kata manager named them.
      for (size_t i = 0; i < units.size(); ++i) add_device(std::to_string(i), *units[i]);
      for (const Unit* u : units) add_device("group-" + std::to_string(u->iommu_group), *u);
    }
    Json common_nodes = Json::Array();
    common_nodes.Append(
        DeviceNode(kContainerVfioPath, custom_dev ? roots.VfioContainerNode() : ""));
    Json common = Json::Object();
    common.Set("deviceNodes", std::move(common_nodes));

    Json spec = Json::Object();
    spec.Set("cdiVersion", Json::String(version));
    spec.Set("kind", Json::String(kind));
    spec.Set("devices", std::move(devices));
    spec.Set("containerEdits", std::move(common));
    specs.push_back({kind, version, CdiFileName(kind), spec.Dump(true) + "\n"});
  }
  return specs;
}

Result<CdiSyncReport> SyncCdiSpecs(const std::string& dir, const std::vector<CdiSpec>& specs) {
  if (auto s = MakeDirs(dir); !s) return s.error().Wrap("cannot prepare CDI dir");
  CdiSyncReport report;
  for (const auto& spec : specs) {
    std::string path = JoinPath(dir, spec.file_name);
    if (FileHasContent(path, spec.content)) {
      report.unchanged.push_back(path);
      continue;
    }
    if (auto s = WriteFileAtomic(path, spec.content, 0644); !s)
      return s.error().Wrap("cannot write CDI spec for " + spec.kind);
    report.written.push_back(path);
  }
  auto names = ListDir(dir);
  if (!names) return names.error().Wrap("cannot list CDI dir");
  for (const auto& n : *names) {
    if (!StartsWith(n, kCdiFilePrefix) || !EndsWith(n, ".json")) continue;
    bool wanted =
        std::any_of(specs.begin(), specs.end(), [&](const CdiSpec& s) { return s.file_name == n; });
    if (wanted) continue;
    std::string path = JoinPath(dir, n);
    if (auto s = RemoveFile(path); !s) return s.error().Wrap("cannot remove stale CDI spec");
    report.removed.push_back(path);
  }
  return report;
}

}  // namespace vfio_gpu
