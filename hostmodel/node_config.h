// The node's JSON configuration, read by both `vfio-gpu` and `vfio-gpu-plugin` (--config FILE), so
// an operator writes one file (the DaemonSet's ConfigMap) and both tools see the same host.
#pragma once

#include <string>

#include "common/result.h"
#include "hostmodel/host_roots.h"
#include "hostmodel/selection.h"

namespace vfio_gpu {

enum class AllocateStrategy {
  kCdi,             // ContainerAllocateResponse.cdi_devices only (default: one injection path)
  kCdiAnnotations,  // cdi.k8s.io/<name> annotations, for kubelets before 1.29
  kDeviceSpecs,     // DeviceSpecs for /dev/vfio/vfio and /dev/vfio/<N>, for stacks without CDI
};

struct NodeConfig {
  HostRoots roots;
  Selection selection;
  std::string kubelet_dir = "/var/lib/kubelet/device-plugins";
  std::string cdi_dir = "/var/run/cdi";
  std::string run_dir = "/run/vfio-gpu";
  std::string metrics_address = ":9477";  // empty turns the endpoint off
  std::string log_format = "text";        // text | json
  AllocateStrategy allocate_strategy = AllocateStrategy::kCdi;
  bool kubevirt_env = false;  // also set PCI_RESOURCE_<RESOURCE>=<BDFs> (KubeVirt's convention)
  int reconcile_interval_seconds = 30;
};

// Every key a config file may hold; anything else is refused with its name.
// sysfs_root dev_root kubelet_dir cdi_dir run_dir metrics_address log_format allocate_strategy
// kubevirt_env reconcile_interval_seconds + the Selection keys (vendors, gpu_classes, ...).
Result<NodeConfig> ReadNodeConfig(const std::string& path);
// Same, from an already-parsed object (tests).
Result<NodeConfig> NodeConfigFromJson(const Json& object, const std::string& source);

std::string AllocateStrategyName(AllocateStrategy s);

}  // namespace vfio_gpu
