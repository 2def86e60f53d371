// The shim part of `vfio-gpu demo`: runs the real containerd-shim-vfio-gpu-v2 from `bin_dir` as
// containerd would, against the demo host. Prints what it does; returns 0 unless the demo itself
// could not run (a refusal by the shim is part of the story, not a failure).
#pragma once

#include <string>

#include "hostmodel/host_roots.h"
#include "hostmodel/snapshot.h"

namespace vfio_gpu::cli {

int RunShimDemo(const std::string& root, const std::string& bin_dir, const HostRoots& roots,
                const Snapshot& snap, const std::string& cdi_dir);

}  // namespace vfio_gpu::cli
