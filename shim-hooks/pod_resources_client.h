// The kubelet's pod resources API, asked which devices a pod was allocated: `Get` by name and
// namespace, falling back to `List` (Get is beta and on by default only from Kubernetes 1.34).
// This is the only code of the shim that needs gRPC; it is built into a helper executable
// (vfio-gpu-shim-podresources) the shim runs only when a spec needs it, because loading
// libgrpc++ costs ~18 ms per process start.
#pragma once

#include <string>

namespace vfio_gpu {

// Asks the kubelet at `socket`. Returns 0 with `out` a JSON object {"found": bool, "method":
// "Get"|"List", "containers": [{"name": .., "devices": [{"resource_name": .., "device_ids":
// [..]}]}]}; 1 when the kubelet is unavailable (transient); 2 on other errors, with `err` set.
int QueryPodResourcesJson(const std::string& socket, const std::string& ns, const std::string& name,
                          int timeout_ms, std::string& out, std::string& err);

}  // namespace vfio_gpu
