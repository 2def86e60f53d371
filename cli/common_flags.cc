#include <cstdio>

#include "cli/commands.h"
#include "common/files.h"

namespace vfio_gpu::cli {

Result<NodeConfig> LoadConfig(Args& args) {
  // Every flag is taken before the file is read: returning early on a bad file would leave the
  // later flags unconsumed, and the caller would report one of them as unknown instead of the
  // file's own error.
  auto path = args.Value("config");
  auto sysfs = args.Value("sysfs-root");
  auto dev = args.Value("dev-root");
  NodeConfig config;
  if (path) {
    auto c = ReadNodeConfig(*path);
    if (!c) return c.error();
    config = std::move(*c);
  }
  if (sysfs) config.roots.sysfs = *sysfs;
  if (dev) config.roots.dev = *dev;
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
