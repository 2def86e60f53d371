// What `vfio-gpu doctor` checks of the runtime side that `vfio-gpu install` sets up: containerd's
// vfio-gpu runtime in the files containerd actually reads (config.toml and what its `imports`
// reach), CDI turned on in containerd, the shim binary, the Kata configuration it points at (with
// config.d/ drop-ins), the CDI dir and the kubelet's pod resources socket. Every path is read
// under a host root.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/install_containerd.h"

namespace vfio_gpu::cli {

struct DoctorCheck {
  bool ok;
  std::string what;
  std::string fix;  // empty when ok
};

struct RuntimeCheckOptions {
  std::string root = "/";                // the host's root as we see it
  std::string cdi_dir = "/var/run/cdi";  // the plugin's cdi_dir
  bool needs_cdi = true;                 // the plugin answers with CDI names (not device-specs)
  // Which files containerd reads depends on it only without a config.toml (2.2+ then imports
  // conf.d/*.toml); nullopt: not known.
  std::optional<ContainerdVersion> containerd_version;
};

std::vector<DoctorCheck> RuntimeChecks(const RuntimeCheckOptions& options);

}  // namespace vfio_gpu::cli
