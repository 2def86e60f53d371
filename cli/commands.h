// The `vfio-gpu` subcommands. Each returns the process exit code: 0 ok, 1 problems found or the
// operation failed, 2 bad usage.
#pragma once

#include <string>
#include <vector>

#include "cli/args.h"
#include "common/result.h"
#include "hostmodel/node_config.h"

namespace vfio_gpu::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitProblems = 1;
inline constexpr int kExitUsage = 2;

// Reads --config, then applies --sysfs-root / --dev-root over it. Used by every host-reading
// command.
Result<NodeConfig> LoadConfig(Args& args);
// Prints "vfio-gpu <cmd>: <message>" plus a hint to stderr and returns kExitUsage.
int UsageError(const std::string& command, const std::string& message);

int Scan(Args& args);
int Cdi(Args& args);
int Doctor(Args& args);
int Demo(Args& args);
int Install(Args& args);
int Uninstall(Args& args);
int Audit(Args& args);

}  // namespace vfio_gpu::cli
