// The shim's hooks: pure functions of (parsed spec, host facts, ledger state, pod allocation, Kata
// configuration) -> decisions and spec edits. Reading and writing files happens in the shell
// (wrapper.cc, host_facts.cc, ledger.cc); every hook here is unit-tested alone.
//
// Order of the pipeline: Collect -> GuardAnnotations -> PlanColdPlug -> Validate -> Authorize ->
// Deduplicate -> CheckRuntime. A refusal stops the pipeline; the shell prints its message.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cdi/registry.h"
#include "common/result.h"
#include "hostmodel/iommu_group.h"
#include "hostmodel/snapshot.h"
#include "shim-hooks/oci_spec.h"
#include "shim-hooks/shim_config.h"

namespace vfio_gpu {

// ---- what the hooks know about the host (gathered by host_facts.cc) ----
struct DevNum {
  int64_t major = 0, minor = 0;
  bool operator==(const DevNum&) const = default;
};

struct GroupFacts {
  bool exists = false;
  IommuGroup group;
  Viability viability;
  std::optional<DevNum> node;  // <dev_root>/vfio/<N> when it is a char device
  bool node_present = false;
};

// The host's VFIO nodes by device numbers: <dev_root>/vfio/<N> and <dev_root>/vfio/devices/vfioX.
// runc creates a spec's device from its major:minor whatever path the entry gives it, so a spec
// names a GPU by its numbers as much as by its path.
using DevKey = std::pair<int64_t, int64_t>;
struct VfioNodes {
  std::map<DevKey, int> groups;         // major:minor -> IOMMU group
  std::map<DevKey, std::string> cdevs;  // major:minor -> "vfio3"
  std::set<int64_t> majors;             // the majors of those nodes: VFIO's, on this host
  std::optional<DevKey> OfGroup(int group) const;
  std::optional<DevKey> OfCdev(const std::string& name) const;
};

struct HostFacts {
  Snapshot snapshot;
  VfioNodes nodes;
  std::map<int, GroupFacts> groups;          // every group referenced or allocated
  std::map<std::string, std::string> cdevs;  // "vfio3" -> BDF (via /sys/dev/char or sysfs)
  std::map<std::string, int> bdf_groups;     // BDF -> IOMMU group, for cdev BDFs
  // Referenced groups that no longer exist -> the unit they were (from our CDI specs), so the
  // GPU that vanished can be quarantined by its unit ID.
  std::map<int, std::string> vanished_units;
};

// ---- what a hook decided ----
struct Decision {
  std::string hook;    // collect, guard, cold-plug, validate, authorize, dedup, runtime
  std::string action;  // kept, removed, refused, switched, added, stripped, warned, claimed
  std::vector<std::string> bdfs;
  int group = -1;
  std::string unit;
  std::string reason;
  bool security = false;  // a tenant reached for something not theirs
};

struct Refusal {
  std::string message;  // one line: what is wrong and what to do
  ErrorKind kind = ErrorKind::kInvalid;
  // Permanent device faults: unit ID -> reason, written to <run_dir>/quarantine/<unit ID>.
  std::map<std::string, std::string> quarantine;
};

struct HookResult {
  std::vector<Decision> decisions;
  std::optional<Refusal> refusal;
};

// ---- Collect ----
// kAlias: a linux.devices entry at another path carrying a VFIO node's device numbers.
enum class RefSource { kGroupNode, kCdev, kAlias, kCdiAnnotation, kColdPlug };
std::string RefSourceName(RefSource s);

// One way a spec names a VFIO device.
struct VfioRef {
  RefSource source = RefSource::kGroupNode;
  std::string what;                    // the device path, or "cdi.k8s.io/x=nvidia.com/pgpu=0"
  std::optional<size_t> device_index;  // linux.devices index for devices
  std::string annotation_key;          // for CDI annotations
  std::string cdi_name;                // for CDI annotations
  int group = -1;                      // -1: unresolved
  std::vector<std::string> bdfs;       // endpoint members of the group (bridges excluded)
  std::string unit_id;                 // the governed unit, empty when none
  std::string error;                   // why it could not be resolved
};

struct CollectResult {
  std::vector<VfioRef> refs;
  std::vector<Decision> decisions;
};

// Which linux.devices paths are VFIO nodes: /dev/vfio/<N>, /dev/vfio/devices/vfioX, and the same
// under a dev root other than /dev. Returns the group number / cdev name.
std::optional<int> GroupOfDevicePath(const std::string& path, const HostRoots& roots);
std::optional<std::string> CdevOfDevicePath(const std::string& path, const HostRoots& roots);
// The cdi.k8s.io/* annotation values naming governed kinds, "key" -> names.
std::vector<std::pair<std::string, std::string>> CdiAnnotationNames(const OciSpec& spec,
                                                                    const ShimConfig& cfg);

CollectResult Collect(const OciSpec& spec, const HostFacts& host, const CdiRegistry& cdi,
                      const ShimConfig& cfg);

// ---- Guard annotations ----
inline constexpr const char* kKataHypervisorPrefix = "io.katacontainers.config.hypervisor.";
inline constexpr const char* kKataConfigPathAnnotation = "io.katacontainers.config_path";
// Strips (or refuses) tenant io.katacontainers.config.hypervisor.* annotations outside the
// allowlist, and io.katacontainers.config_path (only the runtime hook may choose a config).
HookResult GuardAnnotations(OciSpec& spec, const ShimConfig& cfg);
bool AllowlistMatches(const std::vector<std::string>& allowlist, const std::string& name);

// ---- Pod allocation (from the kubelet's pod resources API) ----
struct PodAllocation {
  bool found = false;           // the kubelet knows the pod
  std::string method;           // "Get" or "List"
  std::set<std::string> units;  // device IDs (= unit IDs) of governed resources
  std::map<std::string, std::set<std::string>> by_resource;
};

// ---- Cold-plug planning (Kata < 3.24) ----
// Names the pod's allocated GPUs in a sandbox spec so Kata cold-plugs them, and adds the matching
// refs so later hooks validate, authorize and claim them. A unit the spec already names (device,
// cdev or CDI annotation) is left alone, so every BDF is referenced exactly once. Form (config
// cold_plug_form): one CDI annotation per kind, `cdi.k8s.io/vfio-gpu_<kind with / as _>:
// <kind>=<unit ID>,...` (Kata without the pod resources socket cold-plugs from these), or
// /dev/vfio/<N> entries in linux.devices.
// In the annotation form every name must resolve through our CDI specs to the unit's group, or
// Kata fails later with "unresolvable CDI devices": the plan refuses first, saying why.
HookResult PlanColdPlug(OciSpec& spec, std::vector<VfioRef>& refs,
                        const std::optional<PodAllocation>& allocation, const HostFacts& host,
                        const CdiRegistry& cdi, const ShimConfig& cfg);

// ---- Validate ----
// The annotation key the plan uses for a CDI kind: CDI's AnnotationKey("vfio-gpu", kind): the
// name part is "vfio-gpu_" + kind with '/' as '_' (alphanumerics, '_', '-', '.'; <= 63 chars).
std::string ColdPlugAnnotationKey(const std::string& kind);

HookResult Validate(const std::vector<VfioRef>& refs, const HostFacts& host, const ShimConfig& cfg);

// ---- Authorize ----
// `allocation` is nullopt when it wasn't asked for (mode off, or not Kubernetes); the shell turns
// pod-resources errors into transient refusals before calling this.
HookResult Authorize(const std::vector<VfioRef>& refs, const SpecIdentity& id,
                     const std::optional<PodAllocation>& allocation, const ShimConfig& cfg);

// ---- Deduplicate ----
struct ClaimView {
  std::string sandbox_id;
  std::string bundle;
  int64_t pid = 0;
  int group = -1;
  std::optional<DevNum> node;
  bool stale = false;          // its sandbox is gone (the shell checked bundle and process)
  std::string authorized_pod;  // "ns/name" when claimed after the kubelet's allocation was checked
  std::string unit;            // the unit the BDF was claimed for
};
using LedgerView = std::map<std::string, ClaimView>;  // BDF -> claim

// A container whose every GPU is already claimed in the ledger by its own sandbox for its own pod,
// under authorize enforce (the kubelet's allocation was checked when the claim was made), is
// authorized by those claims: the kubelet need not be asked again (that question costs a process
// loading gRPC, ~20 ms, per container start). nullopt when any GPU is not so covered.
std::optional<HookResult> AuthorizedByClaims(const std::vector<VfioRef>& refs,
                                             const SpecIdentity& id, const LedgerView& ledger);

struct PlannedClaim {
  std::string bdf;
  std::string unit;
  int group = -1;
  std::optional<DevNum> node;
  bool reclaim = false;  // replaces a stale claim
};

struct DedupResult {
  HookResult result;
  std::vector<PlannedClaim> claims;  // BDFs this sandbox must claim in the ledger
};

// One entry per BDF within the spec (group node preferred; an alias or a cdev collapses into the
// group node;
// a CDI annotation naming a device already present is dropped), and across the node: a BDF claimed
// by another live sandbox is refused, one claimed by this sandbox keeps the claim's major:minor.
DedupResult Deduplicate(OciSpec& spec, std::vector<VfioRef>& refs, const HostFacts& host,
                        const LedgerView& ledger, const ShimConfig& cfg);

// ---- Runtime ----
struct KataConfigView {
  std::string path;            // the effective configuration file
  std::string error;           // could not be read
  std::string hypervisor;      // "qemu", "clh", "fc", "dragonball", "" when none found
  std::string cold_plug_vfio;  // as configured (drop-ins applied), "" when unset
  std::string hot_plug_vfio;
  bool GpuCapable() const;
  std::string Describe() const;
};

struct RuntimeResult {
  HookResult result;
  std::optional<std::string> switch_to;  // config path written to io.katacontainers.config_path
};

// A sandbox (or plain run) with GPUs must head for a QEMU configuration with VFIO ports. `gpus`
// are the sandbox's GPUs (BDFs or unit IDs; empty: none), named in its decisions. `target` is the
// configuration runtime_switch_config names, when set and readable.
RuntimeResult CheckRuntime(const SpecIdentity& id, const std::vector<std::string>& gpus,
                           const KataConfigView& kata, const std::optional<KataConfigView>& target,
                           const ShimConfig& cfg);
void ApplyRuntimeSwitch(OciSpec& spec, const std::string& config_path);

}  // namespace vfio_gpu
