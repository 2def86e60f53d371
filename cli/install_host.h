// The whole of what `vfio-gpu install` writes on a host and `vfio-gpu uninstall` takes back: the
// shim binary, containerd's configuration, Kata's private GPU configuration directory, the CRI-O
// drop-in and the shim's configuration. Planning only reads; nothing is written here.
#pragma once

#include <optional>
#include <string>

#include "cli/install_containerd.h"
#include "cli/install_plan.h"
#include "common/result.h"

namespace vfio_gpu::cli {

struct InstallOptions {
  std::string root = "/";                               // the host's root as we see it
  std::string shim_binary;                              // the containerd-shim-vfio-gpu-v2 to copy
  std::optional<ContainerdVersion> containerd_version;  // needed only without a config.toml
};

Result<Plan> PlanInstall(const InstallOptions& options);
Result<Plan> PlanUninstall(const std::string& root);

// The header put on our copies of Kata's configurations.
std::string KataCopyHeader(const std::string& name);

}  // namespace vfio_gpu::cli
