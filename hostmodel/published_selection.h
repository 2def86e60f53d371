// What the device plugin on a node publishes for the shim: the selection it discovers GPUs with and
// the resource names it serves. The shim scans with the same selection and governs the same names,
// so per-model naming, other vendors or allow/deny lists in the DaemonSet's ConfigMap reach the
// shim without anyone copying configuration onto the host.
//
// <run_dir>/plugin.json, written atomically by vfio-gpu-plugin whenever it changes:
//   {"selection": {<the selection keys of the node config>}, "resources": ["nvidia.com/pgpu", ...]}
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "hostmodel/selection.h"

namespace vfio_gpu {

inline constexpr const char* kPublishedSelectionFile = "plugin.json";

struct PublishedSelection {
  Selection selection;
  std::vector<std::string> resources;  // sorted
};

std::string PublishedSelectionPath(const std::string& run_dir);

// Writes the file when its content differs; returns whether it wrote.
Result<bool> WritePublishedSelection(const std::string& run_dir, const PublishedSelection& p);

// nullopt when the file does not exist; an error naming the file when it is malformed.
Result<std::optional<PublishedSelection>> ReadPublishedSelection(const std::string& run_dir);

}  // namespace vfio_gpu
