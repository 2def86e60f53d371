// Logging setup shared by the binaries: spdlog, one line per decision. `text` for people, `json`
// for log pipelines (one JSON object per line).
#pragma once

#include <spdlog/spdlog.h>

#include <string>

#include "common/result.h"

namespace vfio_gpu {

enum class LogFormat { kText, kJson };

Result<LogFormat> ParseLogFormat(const std::string& s);

// Installs the default logger writing to stderr (or to `file` when non-empty) in `format`.
Status SetupLogging(LogFormat format, const std::string& file = "", bool syslog = false);

// Silences logging entirely (used by the shim before it knows where to log, since containerd reads
// its stderr as protocol).
void SilenceLogging();

}  // namespace vfio_gpu
