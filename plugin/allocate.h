// Allocate and PreStartContainer decisions: pure functions of the advertised devices and the
// request, so each strategy is unit-tested without a socket.
//
// Errors carry the gRPC code they become through their kind: ErrorKind::kNotFound (unknown IDs)
// is INVALID_ARGUMENT, anything else (an Unhealthy unit) is FAILED_PRECONDITION.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "hostmodel/node_config.h"
#include "plugin/device_tree.h"

namespace vfio_gpu::plugin {

struct AllocateOptions {
  AllocateStrategy strategy = AllocateStrategy::kCdi;
  bool kubevirt_env = false;
};

// OK when every ID is advertised and Healthy; otherwise names every unknown ID, or every unhealthy
// one with its reason.
Status CheckDevices(const ResourceDevices& devices, const std::vector<std::string>& ids);

// One container's answer. Default: cdi_devices "<resource>=<unit ID>" and nothing else (one
// injection path). cdi-annotations: one "cdi.k8s.io/<name>" annotation whose value lists the same
// qualified names. device-specs: /dev/vfio/vfio once and /dev/vfio/<N> per unit, "rw". With
// kubevirt_env, also PCI_RESOURCE_<RESOURCE>=<BDFs of every GPU in the units>.
Result<v1beta1::ContainerAllocateResponse> BuildContainerResponse(
    const std::string& resource, const ResourceDevices& devices,
    const std::vector<std::string>& ids, const AllocateOptions& options);

Result<v1beta1::AllocateResponse> BuildAllocateResponse(const std::string& resource,
                                                        const ResourceDevices& devices,
                                                        const v1beta1::AllocateRequest& request,
                                                        const AllocateOptions& options);

// KubeVirt's variable name: "nvidia.com/pgpu" -> "PCI_RESOURCE_NVIDIA_COM_PGPU".
std::string KubeVirtEnvName(const std::string& resource);

// The CDI annotation key for one container's devices of `resource`: "cdi.k8s.io/vfio-gpu_<...>".
// The name after the prefix follows the CDI library's rules (at most 63 characters, alphanumeric at
// both ends, [A-Za-z0-9_.-] between) and is unique per resource and device set, so two resources
// allocated to one container never collide.
std::string CdiAnnotationKey(const std::string& resource, const std::vector<std::string>& ids);

}  // namespace vfio_gpu::plugin
