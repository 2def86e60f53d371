#include "plugin/allocate.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <set>

#include "common/strings.h"
#include "hostmodel/host_roots.h"

namespace vfio_gpu::plugin {
namespace {

std::vector<std::string> Unique(const std::vector<std::string>& ids) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& id : ids)
    if (seen.insert(id).second) out.push_back(id);
  return out;
}

uint32_t Fnv1a(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

bool IsAlnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

}  // namespace

Status CheckDevices(const ResourceDevices& devices, const std::vector<std::string>& ids) {
  if (ids.empty()) return Error("no device IDs in the request", ErrorKind::kNotFound);
  std::vector<std::string> unknown;
  std::vector<std::string> unhealthy;
  for (const auto& id : Unique(ids)) {
    auto it = devices.find(id);
    if (it == devices.end())
      unknown.push_back(id);
    else if (!it->second.healthy)
      unhealthy.push_back(id + ": " + it->second.reason);
  }
  if (!unknown.empty())
    return Error("unknown device IDs: " + Join(unknown, ", ") +
                     "; they are not units of this resource (see vfio-gpu scan)",
                 ErrorKind::kNotFound);
  if (!unhealthy.empty())
    return Error("device not usable: " + Join(unhealthy, "; "), ErrorKind::kTransient);
  return Status::Ok();
}

std::string KubeVirtEnvName(const std::string& resource) {
  std::string name = "PCI_RESOURCE_";
  for (char c : resource)
    name += (c == '.' || c == '/') ? '_'
                                   : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

std::string CdiAnnotationKey(const std::string& resource, const std::vector<std::string>& ids) {
  std::vector<std::string> sorted = Unique(ids);
  std::sort(sorted.begin(), sorted.end());
  char hash[9];
  std::snprintf(hash, sizeof hash, "%08x", Fnv1a(resource + "|" + Join(sorted, ",")));
  std::string res;
  for (char c : resource) res += (IsAlnum(c) || c == '.' || c == '-' || c == '_') ? c : '_';
  // "vfio-gpu_" + res + "-" + hash <= 63
  const size_t room = 63 - std::string("vfio-gpu_").size() - 1 - 8;
  if (res.size() > room) res.resize(room);
  return "cdi.k8s.io/vfio-gpu_" + res + "-" + hash;
}

Result<v1beta1::ContainerAllocateResponse> BuildContainerResponse(
    const std::string& resource, const ResourceDevices& devices,
    const std::vector<std::string>& ids, const AllocateOptions& options) {
  if (auto s = CheckDevices(devices, ids); !s) return s.error();
  std::vector<std::string> unique = Unique(ids);
  std::sort(unique.begin(), unique.end());

  v1beta1::ContainerAllocateResponse r;
  std::vector<std::string> qualified;
  for (const auto& id : unique) qualified.push_back(resource + "=" + id);
  switch (options.strategy) {
    case AllocateStrategy::kCdi:
      for (const auto& q : qualified) r.add_cdi_devices()->set_name(q);
      break;
    case AllocateStrategy::kCdiAnnotations:
      (*r.mutable_annotations())[CdiAnnotationKey(resource, unique)] = Join(qualified, ",");
      break;
    case AllocateStrategy::kDeviceSpecs: {
      auto add = [&](const std::string& path) {
        auto* d = r.add_devices();
        d->set_container_path(path);
        d->set_host_path(path);
        d->set_permissions("rw");
      };
      add(kContainerVfioPath);
      for (const auto& id : unique) add(ContainerGroupPath(devices.at(id).iommu_group));
      break;
    }
  }
  if (options.kubevirt_env) {
    std::vector<std::string> bdfs;
    for (const auto& id : unique) {
      const auto& d = devices.at(id);
      if (d.gpus.empty()) bdfs.push_back(id);
      for (const auto& b : d.gpus) bdfs.push_back(b);
    }
    (*r.mutable_envs())[KubeVirtEnvName(resource)] = Join(bdfs, ",");
  }
  return r;
}

Result<v1beta1::AllocateResponse> BuildAllocateResponse(const std::string& resource,
                                                        const ResourceDevices& devices,
                                                        const v1beta1::AllocateRequest& request,
                                                        const AllocateOptions& options) {
  v1beta1::AllocateResponse out;
  for (const auto& c : request.container_requests()) {
    std::vector<std::string> ids(c.devices_ids().begin(), c.devices_ids().end());
    auto r = BuildContainerResponse(resource, devices, ids, options);
    if (!r) return r.error();
    *out.add_container_responses() = std::move(*r);
  }
  return out;
}

}  // namespace vfio_gpu::plugin
