// CDI specs derived from a Snapshot. The contract Kata's cold-plug relies on: CDI kind = the device
// plugin's resource name, CDI device name = the unit ID, so `<resource>=<device ID>` resolves.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "hostmodel/host_roots.h"
#include "hostmodel/selection.h"
#include "hostmodel/snapshot.h"

namespace vfio_gpu {

struct CdiSpec {
  std::string kind;       // "nvidia.com/pgpu"
  std::string version;    // the minimum cdiVersion the content needs
  std::string file_name;  // "vfio-gpu-nvidia.com-pgpu.json"
  std::string content;    // the JSON text written to disk
};

// Prefix of every spec file we own in a CDI dir, so we never touch anyone else's.
inline constexpr const char* kCdiFilePrefix = "vfio-gpu-";

std::string CdiFileName(const std::string& kind);

// One spec per resource kind, sorted by kind. Each device's edits hold only its group node
// (/dev/vfio/<N>) — never the iommufd cdev as well, which would make Kata attach the GPU twice —
// and /dev/vfio/vfio sits once at spec level. When the dev root is not /dev, hostPath points at it.
std::vector<CdiSpec> BuildCdiSpecs(const Snapshot& snapshot, const Selection& selection,
                                   const HostRoots& roots);

struct CdiSyncReport {
  std::vector<std::string> written;    // paths (re)written because content changed
  std::vector<std::string> unchanged;  // paths left alone
  std::vector<std::string> removed;    // our specs whose kind has no units left
};

// Makes `dir` hold exactly `specs` among our files: atomic writes (mode 0644), rewritten only when
// the content changes, our stale specs removed.
Result<CdiSyncReport> SyncCdiSpecs(const std::string& dir, const std::vector<CdiSpec>& specs);

}  // namespace vfio_gpu
