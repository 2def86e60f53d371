// Quarantine marks: the shim writes <run-dir>/quarantine/<unit ID> (atomically) when a device
// failed permanently; the file's content is the reason. The plugin keeps such units Unhealthy until
// the file is removed.
#pragma once

#include <map>
#include <string>

namespace vfio_gpu::plugin {

using Quarantine = std::map<std::string, std::string>;  // unit ID -> reason

std::string QuarantineDir(const std::string& run_dir);

// Reads every mark in `dir`. Temp files of atomic writers (names starting with '.') are ignored; a
// missing directory means nothing is quarantined; an empty or unreadable file still quarantines.
Quarantine ReadQuarantine(const std::string& dir);

}  // namespace vfio_gpu::plugin
