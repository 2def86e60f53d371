// vfio-gpu-plugin: the DaemonSet's process. Parses flags, sets up logging and runs the daemon until
// SIGTERM/SIGINT; exits 0 after removing its sockets, 2 on bad usage or configuration, 1 when it
// cannot start.
#include <malloc.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/log.h"
#include "plugin/daemon.h"
#include "plugin/flags.h"

int main(int argc, char** argv) {
  using namespace vfio_gpu;
  // gRPC's threads would each get a malloc arena; a daemon this small needs two, and the resident
  // memory stays low (the DaemonSet's budget is 12 MB).
  mallopt(M_ARENA_MAX, 2);
  std::vector<std::string> args(argv + 1, argv + argc);
  auto flags = plugin::ParseFlags(args);
  if (!flags) {
    std::fprintf(stderr, "vfio-gpu-plugin: %s\n", flags.error().message().c_str());
    return 2;
  }
  if (flags->help) {
    std::fputs(plugin::kUsage, stdout);
    return 0;
  }
  auto format = ParseLogFormat(flags->config.log_format);
  if (!format || !SetupLogging(*format)) {
    std::fprintf(stderr, "vfio-gpu-plugin: cannot set up logging\n");
    return 2;
  }
  plugin::DaemonOptions options;
  options.config = flags->config;
  options.handle_signals = true;
  auto daemon = plugin::PluginDaemon::Start(std::move(options));
  if (!daemon) {
    SPDLOG_CRITICAL("vfio-gpu-plugin cannot start: {}", daemon.error().message());
    return 1;
  }
  SPDLOG_INFO("vfio-gpu-plugin running: sysfs {}, dev {}, kubelet dir {}, CDI dir {}, strategy {}",
              flags->config.roots.sysfs, flags->config.roots.dev, flags->config.kubelet_dir,
              flags->config.cdi_dir, AllocateStrategyName(flags->config.allocate_strategy));
  (*daemon)->Wait();
  (*daemon)->Stop();
  SPDLOG_INFO("vfio-gpu-plugin stopped");
  return 0;
}
