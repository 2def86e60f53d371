// The shim's configuration: /etc/vfio-gpu/shim.json, or the file named by VFIO_GPU_SHIM_CONFIG
// (shims inherit containerd's environment). Unknown keys and bad values fail the start, naming the
// key, so a typo never silently weakens the node's defence.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "hostmodel/host_roots.h"
#include "hostmodel/selection.h"

namespace vfio_gpu {

inline constexpr const char* kShimConfigEnv = "VFIO_GPU_SHIM_CONFIG";
inline constexpr const char* kDefaultShimConfig = "/etc/vfio-gpu/shim.json";

enum class AuthorizeMode { kEnforce, kWarn, kOff };
enum class AnnotationPolicy { kStrip, kDeny };
// How the cold-plug plan (kata_pod_resources = false) names the pod's GPUs in the sandbox spec.
enum class ColdPlugForm {
  kCdiAnnotations,  // cdi.k8s.io/vfio-gpu_<kind>: <kind>=<unit ID>,...: what Kata < 3.24 reads
  kLinuxDevices,    // /dev/vfio/<N> entries in linux.devices
};

struct ShimConfig {
  // The real shim: a path, or a name looked up on PATH.
  std::string downstream_shim = "containerd-shim-kata-v2";
  HostRoots roots;  // sysfs_root, dev_root
  std::string run_dir = "/run/vfio-gpu";
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  // Resource names = CDI kinds this shim governs.
  std::vector<std::string> resources = {"nvidia.com/pgpu", "nvidia.com/nvswitch"};
  AuthorizeMode authorize = AuthorizeMode::kEnforce;

  // --- policy keys of the hooks ---
  // Named in refusals of GPU sandboxes headed for a configuration that can't pass GPUs through.
  std::string gpu_runtime_class = "kata-qemu-vfio-gpu";
  // Kata configuration assumed when the runtime options carry no ConfigPath (empty: Kata's own
  // search path: KATA_CONF_FILE, /etc/kata-containers, /opt/kata/share/defaults/kata-containers).
  std::string kata_config_path;
  // When set, a GPU sandbox headed for a non-GPU configuration is switched to this one through the
  // io.katacontainers.config_path annotation (Kata <= 3.32 honours it) instead of refused.
  std::string runtime_switch_config;
  // Tenant io.katacontainers.config.hypervisor.* annotations outside the allowlist: strip | deny.
  AnnotationPolicy annotation_policy = AnnotationPolicy::kStrip;
  // Names after "io.katacontainers.config.hypervisor." a tenant may set; '*' matches any run.
  std::vector<std::string> kata_annotation_allowlist;
  // Kata >= 3.24 asks the pod resources API itself; false plans the cold plug into the sandbox
  // spec.
  bool kata_pod_resources = true;
  // The form of that plan: "cdi-annotations" (default; what users wrote by hand,
  // `cdi.k8s.io/gpu: nvidia.com/pgpu=0`) or "linux-devices".
  ColdPlugForm cold_plug_form = ColdPlugForm::kCdiAnnotations;
  // CDI spec dirs, later wins.
  std::vector<std::string> cdi_dirs = {"/etc/cdi", "/var/run/cdi"};
  int pod_resources_timeout_ms = 2000;
  // A node config file (what `vfio-gpu --config` reads) whose selection the shim scans with, for
  // hosts without the device plugin (ctr-only). Empty: the plugin's publication in run_dir
  // (hostmodel/published_selection.h), else the built-in selection.
  std::string node_config;

  // Loaded, not keys: the selection the shim scans with (nullopt: the built-in one, every GPU of
  // NVIDIA, AMD and Intel) and where it came from.
  std::optional<Selection> selection;
  std::string selection_source = "built-in";
  // The gRPC pod resources client, a helper executable run only when a spec needs the pod's
  // allocation (loading libgrpc++ costs ~18 ms, more than the shim's whole budget for other
  // containers). Empty: vfio-gpu-shim-podresources beside the shim binary, then on PATH.
  std::string pod_resources_client;
  bool syslog = false;

  std::string LogPath() const { return run_dir + "/shim.log"; }
  std::string LedgerDir() const { return run_dir + "/ledger"; }
  std::string QuarantineDir() const { return run_dir + "/quarantine"; }
  bool Governs(const std::string& resource) const;
};

// Every key a shim.json may hold.
extern const std::vector<std::string> kShimConfigKeys;

// Reads `path`, then the node's selection: `node_config` when set, else the plugin's publication
// under run_dir, whose resource names join `resources`. When `must_exist` is false a missing file
// means all defaults (the default path on hosts that need none); a file named by the env var must
// exist.
Result<ShimConfig> ReadShimConfig(const std::string& path, bool must_exist);
// The node's selection step of ReadShimConfig, alone.
Status LoadNodeSelection(ShimConfig& cfg);
Result<ShimConfig> ShimConfigFromJson(const std::string& text, const std::string& source);
// The env var, else the default path.
Result<ShimConfig> LoadShimConfig();

std::string AuthorizeModeName(AuthorizeMode m);
std::string ColdPlugFormName(ColdPlugForm f);

}  // namespace vfio_gpu
