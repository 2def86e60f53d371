// The questions the webhook asks of a Pod, each a pure function of the pod's JSON and the config:
// does it ask for a GPU, which annotations try to pick devices or VM settings behind the
// scheduler's back, and why a given RuntimeClass cannot carry a GPU.
#pragma once

#include <json-c/json.h>

#include <optional>
#include <string>
#include <vector>

#include "webhook/config.h"

namespace vfio_gpu::webhook {

struct GovernedRequest {
  std::string resource;   // e.g. "nvidia.com/pgpu"
  std::string container;  // the (init) container asking for it; empty for pod-level resources
  bool init = false;
};

// The first governed resource requested (limits or requests) by any container, init container, or
// the pod-level `spec.resources`; nullopt for the common case of a pod that asks for none. Touches
// only the resource maps, allocates nothing unless it finds one.
std::optional<GovernedRequest> FindGovernedRequest(const Config& config, json_object* spec);

struct ForbiddenAnnotation {
  std::string key;
  std::string why;  // one clause: what is wrong with it
};

// Tenant annotations that would let a pod obtain devices or VM settings other than through
// `resources`: `cdi.k8s.io/*` whose value names one of our CDI kinds (checked on every pod, since
// Kata falls back to those annotations when it can't reach the pod resources API), and
// `io.katacontainers.*` outside the allowlist (checked when `vm_bound`: the pod will run in one of
// our GPU VMs).
std::vector<ForbiddenAnnotation> FindForbiddenAnnotations(const Config& config,
                                                          json_object* annotations, bool vm_bound);

// Why `cls` cannot carry a GPU, as a clause naming the class ("runtimeClassName \"runc\" runs
// ...").
std::string WhyClassCannotCarryGpu(const std::string& cls, const Config& config);

}  // namespace vfio_gpu::webhook
