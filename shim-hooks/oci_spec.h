// The OCI runtime spec (config.json) as the hooks see it: who it belongs to (sandbox, container,
// plain `ctr` run), its linux.devices and its annotations. Parsing is strict about the parts we
// read and leaves everything else untouched, so writing the spec back changes only what a hook
// decided to change.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "common/result.h"

namespace vfio_gpu {

enum class SpecRole {
  kSandbox,    // CRI pod sandbox (the pause container): the VM
  kContainer,  // a container inside a CRI pod sandbox
  kPlain,      // no CRI annotations (`ctr run`): its own sandbox
};
std::string SpecRoleName(SpecRole r);

struct SpecIdentity {
  SpecRole role = SpecRole::kPlain;
  std::string sandbox_id;  // the VM this spec runs in (own id for sandboxes and plain runs)
  std::string pod_name;    // empty outside Kubernetes
  std::string pod_namespace;
  std::string pod_uid;
  std::string container_name;
  std::string source;  // "containerd", "cri-o" or "" (plain)

  bool InKubernetes() const { return !pod_name.empty() && !pod_namespace.empty(); }
  std::string Pod() const { return InKubernetes() ? pod_namespace + "/" + pod_name : ""; }
};

struct OciDevice {
  size_t index = 0;  // position in linux.devices
  std::string path;
  std::string type;  // "c", "b", "u", "p"
  std::optional<int64_t> major, minor;
};

struct OciSpec {
  Json root;
  SpecIdentity identity;
  std::vector<OciDevice> devices;
  std::map<std::string, std::string> annotations;
  bool dirty = false;  // an edit was made: write the spec back

  // Rebuilds linux.devices keeping the entries whose index is in `keep`, in order, each possibly
  // replaced. `devices` is re-read afterwards.
  void SetDevices(const std::vector<Json>& entries);
  std::vector<Json> DeviceEntries() const;
  void SetAnnotation(const std::string& key, const std::string& value);
  void RemoveAnnotation(const std::string& key);
  std::string Dump() const;
};

// CRI annotation keys (containerd, then CRI-O).
inline constexpr const char* kCriContainerType = "io.kubernetes.cri.container-type";
inline constexpr const char* kCriSandboxId = "io.kubernetes.cri.sandbox-id";
inline constexpr const char* kCriSandboxName = "io.kubernetes.cri.sandbox-name";
inline constexpr const char* kCriSandboxNamespace = "io.kubernetes.cri.sandbox-namespace";
inline constexpr const char* kCriSandboxUid = "io.kubernetes.cri.sandbox-uid";
inline constexpr const char* kCriContainerName = "io.kubernetes.cri.container-name";
inline constexpr const char* kCrioContainerType = "io.kubernetes.cri-o.ContainerType";
inline constexpr const char* kCrioSandboxId = "io.kubernetes.cri-o.SandboxID";
inline constexpr const char* kCrioKubeName = "io.kubernetes.cri-o.KubeName";
inline constexpr const char* kCrioNamespace = "io.kubernetes.cri-o.Namespace";
inline constexpr const char* kPodName = "io.kubernetes.pod.name";
inline constexpr const char* kPodNamespace = "io.kubernetes.pod.namespace";
inline constexpr const char* kPodUid = "io.kubernetes.pod.uid";
inline constexpr const char* kContainerNameK8s = "io.kubernetes.container.name";

// Parses config.json text. `own_id` is the shim's -id (the container or sandbox ID). Errors name
// `what` (the file) and the field.
Result<OciSpec> ReadOciSpec(std::string_view text, const std::string& what,
                            const std::string& own_id);

// Re-reads devices/annotations/identity after edits to root.
Status Reindex(OciSpec& spec, const std::string& what, const std::string& own_id);

// A linux.devices entry for a char device.
Json CharDeviceEntry(const std::string& path, int64_t major, int64_t minor);

}  // namespace vfio_gpu
