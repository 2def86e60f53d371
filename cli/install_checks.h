// What `vfio-gpu doctor` checks of the runtime side that `vfio-gpu install` sets up: containerd's
// vfio-gpu runtime, the shim binary, the Kata configuration it points at (with config.d/ drop-ins),
// the CDI dir and the kubelet's pod resources socket. Every path is read under a host root.
#pragma once

#include <string>
#include <vector>

namespace vfio_gpu::cli {

struct DoctorCheck {
  bool ok;
  std::string what;
  std::string fix;  // empty when ok
};

std::vector<DoctorCheck> RuntimeChecks(const std::string& root, const std::string& cdi_dir);

}  // namespace vfio_gpu::cli
