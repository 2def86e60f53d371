// A pod's allocation as the shim needs it: the unit IDs of governed resources the kubelet gave the
// pod. The gRPC client is a helper executable run on demand (pod_resources_client.h).
#pragma once

#include <string>

#include "common/result.h"
#include "shim-hooks/hooks.h"

namespace vfio_gpu {

inline constexpr const char* kPodResourcesClientName = "vfio-gpu-shim-podresources";

// Parses the client's JSON answer, keeping devices of governed resources only.
Result<PodAllocation> PodAllocationFromJson(const std::string& text, const ShimConfig& cfg);

// The config's pod_resources_client, else beside the shim's executable, else on PATH.
std::string FindPodResourcesClient(const ShimConfig& cfg);

// Asks the kubelet through the client. Unavailable kubelet -> kTransient.
Result<PodAllocation> QueryPodAllocation(const ShimConfig& cfg, const std::string& ns,
                                         const std::string& name);

}  // namespace vfio_gpu
