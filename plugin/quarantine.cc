#include "plugin/quarantine.h"

#include "common/files.h"
#include "common/strings.h"

namespace vfio_gpu::plugin {

std::string QuarantineDir(const std::string& run_dir) {
  return run_dir + "/quarantine";
}

Quarantine ReadQuarantine(const std::string& dir) {
  Quarantine out;
  auto names = ListDir(dir);
  if (!names) return out;
  for (const auto& name : *names) {
    if (name.empty() || name[0] == '.') continue;
    auto text = ReadFile(dir + "/" + name);
    std::string reason = text ? std::string(Trim(*text)) : "";
    if (reason.empty()) reason = "no reason given";
    out[name] = reason;
  }
  return out;
}

}  // namespace vfio_gpu::plugin
