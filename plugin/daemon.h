// vfio-gpu-plugin as an object: the binary's main() and the CLI's `vfio-gpu demo` (against a fake
// tree and an in-process kubelet) both run it this way.
//
// One loop thread owns everything that changes: the watcher turns host changes into "rescan"; a
// rescan builds a new Snapshot, computes the device tree (health.h), syncs the CDI specs, and only
// then hands the tree to the manager, which updates the per-resource servers (so a device is never
// advertised before Kata can resolve its CDI name).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "hostmodel/node_config.h"
#include "plugin/device_tree.h"
#include "plugin/health.h"

namespace vfio_gpu::plugin {

struct DaemonOptions {
  NodeConfig config;
  // Handle SIGTERM/SIGINT through a signalfd (the binary; blocks them in the calling thread).
  bool handle_signals = false;
  HealthPolicy health;
  std::chrono::milliseconds register_backoff_initial{100};
  std::chrono::milliseconds register_backoff_max{10000};
  std::chrono::milliseconds register_timeout{5000};
};

class PluginDaemon {
 public:
  // Validates the configuration (directories, a first scan, the metrics address) and starts the
  // loop thread. Errors name what is wrong and what to do. The kubelet need not be up.
  static Result<std::unique_ptr<PluginDaemon>> Start(const NodeConfig& config);
  static Result<std::unique_ptr<PluginDaemon>> Start(DaemonOptions options);
  ~PluginDaemon();

  PluginDaemon(const PluginDaemon&) = delete;
  PluginDaemon& operator=(const PluginDaemon&) = delete;

  // Stops serving, removes our sockets, joins the loop. Idempotent; thread-safe.
  void Stop();
  // Blocks until the loop ends (a signal, or Stop() from another thread).
  void Wait();
  // Asks the loop for a rescan (a test hook and the CLI's: netlink uevents cannot be faked without
  // privileges, so tests mutate a fake tree and call this). Returns at once.
  void Rescan();
  // Rescans and waits until the result is published (or `timeout`); returns the published tree.
  std::shared_ptr<const DeviceTree> RescanAndWait(std::chrono::milliseconds timeout);

  std::shared_ptr<const DeviceTree> devices() const;
  // 0 when the metrics endpoint is off.
  int metrics_port() const { return metrics_port_; }
  std::string SocketPath(const std::string& resource) const;
  bool netlink_active() const { return netlink_active_; }

 private:
  class Loop;
  explicit PluginDaemon(DaemonOptions options);

  DaemonOptions options_;
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
  std::atomic<bool> stop_requested_{false};
  int metrics_port_ = 0;
  bool netlink_active_ = false;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<const DeviceTree> published_;
  uint64_t requested_gen_ = 0;
  uint64_t completed_gen_ = 0;
  bool finished_ = false;
  std::mutex stop_mu_;
};

}  // namespace vfio_gpu::plugin
