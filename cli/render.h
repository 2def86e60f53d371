// Human-readable output of a Snapshot.
#pragma once

#include <string>

#include "hostmodel/snapshot.h"

namespace vfio_gpu::cli {

// A table of units, then the skipped GPUs and broken entries, each with its reason.
std::string RenderTable(const Snapshot& snapshot);

}  // namespace vfio_gpu::cli
