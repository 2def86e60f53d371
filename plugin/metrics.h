// What the daemon counts, rendered in the Prometheus text format for GET /metrics. Counters are
// atomics (bumped from gRPC threads); the gauges come from the last published device tree.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "plugin/device_tree.h"

namespace vfio_gpu::plugin {

class Metrics {
 public:
  void CountAllocate(const std::string& resource, bool ok);
  void CountRegistration(const std::string& resource, bool ok, bool re_registration);
  void CountScan(double seconds);
  void CountCdiWrites(uint64_t n) { cdi_writes_ += n; }
  void SetLastError(const std::string& error);
  void SetTree(const DeviceTree& tree);

  std::string Render() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> allocations_, allocation_failures_;
  std::map<std::string, uint64_t> registrations_, reregistrations_, registration_failures_;
  std::map<std::string, std::pair<int, int>> units_;  // resource -> (healthy, unhealthy)
  std::string last_error_;
  int64_t last_error_time_ = 0;
  uint64_t scans_ = 0;
  double scan_seconds_sum_ = 0, last_scan_seconds_ = 0;
  std::atomic<uint64_t> cdi_writes_{0};
};

}  // namespace vfio_gpu::plugin
