// vfio-gpu-plugin's command line: --config FILE first, then flags that override it.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "hostmodel/node_config.h"

namespace vfio_gpu::plugin {

struct Flags {
  NodeConfig config;
  bool help = false;
};

inline constexpr const char* kUsage =
    R"(usage: vfio-gpu-plugin [flags]

Advertises this node's vfio-pci GPUs (whole IOMMU groups) to the kubelet as device plugin
resources and answers Allocate with CDI device names.

  --config FILE            JSON config (keys: sysfs_root dev_root kubelet_dir cdi_dir run_dir
                           metrics_address log_format allocate_strategy kubevirt_env
                           reconcile_interval_seconds vendors gpu_classes resource_naming
                           resource_name nvswitch_resource_name allow deny cdi_aliases)
  --sysfs-root DIR         sysfs to read (default /sys)
  --dev-root DIR           device nodes to watch (default /dev)
  --kubelet-dir DIR        the kubelet's device plugin dir (default /var/lib/kubelet/device-plugins)
  --cdi-dir DIR            where CDI specs are written (default /var/run/cdi)
  --run-dir DIR            shared state with the shim, quarantine marks (default /run/vfio-gpu)
  --metrics-address ADDR   /healthz and /metrics (default :9477; empty turns it off)
  --log-format text|json   (default text)
Flags override the config file.
)";

// Errors name the flag or config key and say what to do.
Result<Flags> ParseFlags(const std::vector<std::string>& args);

}  // namespace vfio_gpu::plugin
