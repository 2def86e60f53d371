#include "shim-hooks/oci_spec.h"

namespace vfio_gpu {

std::string SpecRoleName(SpecRole r) {
  switch (r) {
    case SpecRole::kSandbox:
      return "sandbox";
    case SpecRole::kContainer:
      return "container";
    case SpecRole::kPlain:
      return "plain";
  }
  return "?";
}

namespace {

std::string Ann(const std::map<std::string, std::string>& a, const char* key) {
  auto it = a.find(key);
  return it == a.end() ? "" : it->second;
}

Status Classify(OciSpec& spec, const std::string& what, const std::string& own_id) {
  const auto& a = spec.annotations;
  SpecIdentity id;
  std::string type = Ann(a, kCriContainerType);
  if (!type.empty()) {
    id.source = "containerd";
    id.pod_name = Ann(a, kCriSandboxName);
    id.pod_namespace = Ann(a, kCriSandboxNamespace);
    id.pod_uid = Ann(a, kCriSandboxUid);
    id.container_name = Ann(a, kCriContainerName);
    id.sandbox_id = Ann(a, kCriSandboxId);
  } else if (!(type = Ann(a, kCrioContainerType)).empty()) {
    id.source = "cri-o";
    id.pod_name = Ann(a, kCrioKubeName);
    if (id.pod_name.empty()) id.pod_name = Ann(a, kPodName);
    id.pod_namespace = Ann(a, kCrioNamespace);
    if (id.pod_namespace.empty()) id.pod_namespace = Ann(a, kPodNamespace);
    id.pod_uid = Ann(a, kPodUid);
    id.container_name = Ann(a, kContainerNameK8s);
    id.sandbox_id = Ann(a, kCrioSandboxId);
  }
  if (id.source.empty()) {
    id.role = SpecRole::kPlain;
    id.sandbox_id = own_id;
  } else if (type == "sandbox") {
    id.role = SpecRole::kSandbox;
    if (id.sandbox_id.empty()) id.sandbox_id = own_id;
  } else if (type == "container") {
    id.role = SpecRole::kContainer;
    if (id.sandbox_id.empty())
      return Error(what + ": annotation " +
                   std::string(id.source == "cri-o" ? kCrioSandboxId : kCriSandboxId) +
                   " is missing from a container spec; cannot tell which sandbox it belongs to");
  } else {
    return Error(what + ": container type \"" + type +
                 "\" is neither \"sandbox\" nor \"container\"");
  }
  spec.identity = std::move(id);
  return Status::Ok();
}

}  // namespace

Status Reindex(OciSpec& spec, const std::string& what, const std::string& own_id) {
  spec.devices.clear();
  spec.annotations.clear();
  Json ann = spec.root.Get("annotations");
  if (!ann.is_null()) {
    if (!ann.is_object()) return Error(what + ": \"annotations\" must be an object");
    for (const auto& k : ann.Keys()) {
      Json v = ann.Get(k);
      if (!v.is_string())
        return Error(what + ": annotation \"" + k + "\" must be a string, got " + v.Dump());
      spec.annotations[k] = v.AsString();
    }
  }
  Json linux = spec.root.Get("linux");
  if (!linux.is_null() && !linux.is_object()) return Error(what + ": \"linux\" must be an object");
  Json devs = linux.Get("devices");
  if (!devs.is_null()) {
    if (!devs.is_array()) return Error(what + ": \"linux.devices\" must be an array");
    for (size_t i = 0; i < devs.size(); ++i) {
      Json d = devs.At(i);
      std::string where = what + ": linux.devices[" + std::to_string(i) + "]";
      if (!d.is_object()) return Error(where + " must be an object");
      Json path = d.Get("path");
      if (!path.is_string() || path.AsString().empty())
        return Error(where + ": \"path\" must be a non-empty string");
      OciDevice dev;
      dev.index = i;
      dev.path = path.AsString();
      Json type = d.Get("type");
      if (!type.is_null() && !type.is_string()) return Error(where + ": \"type\" must be a string");
      dev.type = type.AsString();
      for (const char* key : {"major", "minor"}) {
        Json n = d.Get(key);
        if (n.is_null()) continue;
        if (!n.is_int() || n.AsInt() < 0 || n.AsInt() > 0xfffff)
          return Error(where + ": \"" + key + "\" must be a device number, got " + n.Dump());
        (std::string(key) == "major" ? dev.major : dev.minor) = n.AsInt();
      }
      spec.devices.push_back(std::move(dev));
    }
  }
  return Classify(spec, what, own_id);
}

Result<OciSpec> ReadOciSpec(std::string_view text, const std::string& what,
                            const std::string& own_id) {
  auto parsed = Json::Parse(text, what);
  if (!parsed) return parsed.error();
  if (!parsed->is_object()) return Error(what + ": the OCI spec must be a JSON object");
  OciSpec spec;
  spec.root = std::move(*parsed);
  if (auto s = Reindex(spec, what, own_id); !s) return s.error();
  return spec;
}

std::vector<Json> OciSpec::DeviceEntries() const {
  std::vector<Json> out;
  Json devs = root.Get("linux").Get("devices");
  for (size_t i = 0; i < devs.size(); ++i) out.push_back(devs.At(i));
  return out;
}

void OciSpec::SetDevices(const std::vector<Json>& entries) {
  Json linux = root.Get("linux");
  if (linux.is_null()) {
    root.Set("linux", Json::Object());
    linux = root.Get("linux");
  }
  Json arr = Json::Array();
  for (const auto& e : entries) arr.Append(e);
  linux.Set("devices", std::move(arr));  // linux shares the object with root
  dirty = true;
  devices.clear();
  for (size_t i = 0; i < entries.size(); ++i) {
    OciDevice d;
    d.index = i;
    d.path = entries[i].Get("path").AsString();
    d.type = entries[i].Get("type").AsString();
    if (entries[i].Get("major").is_int()) d.major = entries[i].Get("major").AsInt();
    if (entries[i].Get("minor").is_int()) d.minor = entries[i].Get("minor").AsInt();
    devices.push_back(std::move(d));
  }
}

void OciSpec::SetAnnotation(const std::string& key, const std::string& value) {
  Json ann = root.Get("annotations");
  if (ann.is_null()) {
    root.Set("annotations", Json::Object());
    ann = root.Get("annotations");
  }
  ann.Set(key, Json::String(value));
  annotations[key] = value;
  dirty = true;
}

void OciSpec::RemoveAnnotation(const std::string& key) {
  root.Get("annotations").Remove(key);
  annotations.erase(key);
  dirty = true;
}

std::string OciSpec::Dump() const {
  return root.Dump(false);
}

Json CharDeviceEntry(const std::string& path, int64_t major, int64_t minor) {
  Json d = Json::Object();
  d.Set("path", Json::String(path));
  d.Set("type", Json::String("c"));
  d.Set("major", Json::Int(major));
  d.Set("minor", Json::Int(minor));
  d.Set("fileMode", Json::Int(0666));
  d.Set("uid", Json::Int(0));
  d.Set("gid", Json::Int(0));
  return d;
}

}  // namespace vfio_gpu
