#include <cstdio>

#include "cli/commands.h"
#include "common/files.h"

namespace vfio_gpu::cli {

Result<NodeConfig> LoadConfig(Args& args) {
  NodeConfig config;
  if (auto path = args.Value("config")) {
    auto c = ReadNodeConfig(*path);
    if (!c) return c.error();
    config = std::move(*c);
  }
  if (auto v = args.Value("sysfs-root")) config.roots.sysfs = *v;
  if (auto v = args.Value("dev-root")) config.roots.dev = *v;
  if (!IsDir(config.roots.sysfs))
    return Error("sysfs root " + config.roots.sysfs + " is not a directory; pass --sysfs-root DIR");
  return config;
}

int UsageError(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "vfio-gpu %s: %s\nrun 'vfio-gpu --help' for usage\n", command.c_str(),
               message.c_str());
  return kExitUsage;
}

}  // namespace vfio_gpu::cli
