// Receives each new DeviceTree, diffs it per resource and starts, updates or stops one
// ResourceServer per resource (Intel's manager.go); keeps every resource registered with the
// kubelet: re-registers when kubelet.sock is re-created or our socket disappears, and retries
// failed registrations with exponential backoff forever. Runs on the daemon's loop thread only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "plugin/device_tree.h"
#include "plugin/metrics.h"
#include "plugin/resource_server.h"

namespace vfio_gpu::plugin {

class Manager {
 public:
  struct Options {
    std::string kubelet_dir;
    AllocateOptions allocate;
    std::chrono::milliseconds register_timeout{5000};
    std::chrono::milliseconds backoff_initial{100};
    std::chrono::milliseconds backoff_max{10000};
  };
  // `fresh` gives PreStartContainer a freshly scanned tree; `schedule_retry` arms the loop's retry
  // timer (the earliest pending attempt).
  Manager(Options options, Metrics* metrics,
          std::function<std::shared_ptr<const DeviceTree>()> fresh,
          std::function<void(std::chrono::milliseconds)> schedule_retry);
  ~Manager();

  void Apply(const DeviceTree& tree);
  void OnKubeletSocketCreated();
  void OnKubeletDirChanged();
  void OnRetryTimer();
  void StopAll();

  std::vector<std::string> Resources() const;
  std::string SocketPath(const std::string& resource) const;

 private:
  struct Entry {
    std::unique_ptr<ResourceServer> server;
    bool serving = false;
    bool registered = false;
    bool ever_registered = false;
    int failures = 0;
    Clock::time_point next_attempt{};
    // The kubelet.sock we registered with: a re-created one (new inode) means a new kubelet.
    ino_t kubelet_inode = 0;
  };
  void Serve(Entry& e);
  void RegisterPending();

  Options options_;
  Metrics* metrics_;
  std::function<std::shared_ptr<const DeviceTree>()> fresh_;
  std::function<void(std::chrono::milliseconds)> schedule_retry_;
  std::map<std::string, Entry> entries_;
};

}  // namespace vfio_gpu::plugin
