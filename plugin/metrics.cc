#include "plugin/metrics.h"

#include <cstdio>
#include <ctime>

namespace vfio_gpu::plugin {
namespace {

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void Header(std::string& o, const char* name, const char* type, const char* help) {
  o += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void PerResource(std::string& o, const char* name, const std::map<std::string, uint64_t>& m) {
  for (const auto& [r, v] : m)
    o += std::string(name) + "{resource=\"" + Escape(r) + "\"} " + std::to_string(v) + "\n";
}

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

void Metrics::CountAllocate(const std::string& resource, bool ok) {
  std::lock_guard lk(mu_);
  ++(ok ? allocations_ : allocation_failures_)[resource];
}

void Metrics::CountRegistration(const std::string& resource, bool ok, bool re_registration) {
  std::lock_guard lk(mu_);
  if (!ok)
    ++registration_failures_[resource];
  else
    ++(re_registration ? reregistrations_ : registrations_)[resource];
}

void Metrics::CountScan(double seconds) {
  std::lock_guard lk(mu_);
  ++scans_;
  scan_seconds_sum_ += seconds;
  last_scan_seconds_ = seconds;
}

void Metrics::SetLastError(const std::string& error) {
  std::lock_guard lk(mu_);
  last_error_ = error;
  last_error_time_ = static_cast<int64_t>(std::time(nullptr));
}

void Metrics::SetTree(const DeviceTree& tree) {
  std::lock_guard lk(mu_);
  units_.clear();
  for (const auto& [r, devices] : tree)
    for (const auto& [id, d] : devices) (d.healthy ? units_[r].first : units_[r].second)++;
}

std::string Metrics::Render() const {
  std::lock_guard lk(mu_);
  std::string o;
  Header(o, "vfio_gpu_plugin_units", "gauge", "Units advertised, by resource and health.");
  for (const auto& [r, hu] : units_) {
    o += "vfio_gpu_plugin_units{resource=\"" + Escape(r) + "\",health=\"Healthy\"} " +
         std::to_string(hu.first) + "\n";
    o += "vfio_gpu_plugin_units{resource=\"" + Escape(r) + "\",health=\"Unhealthy\"} " +
         std::to_string(hu.second) + "\n";
  }
  Header(o, "vfio_gpu_plugin_allocations_total", "counter",
         "Successful Allocate calls, by resource.");
  PerResource(o, "vfio_gpu_plugin_allocations_total", allocations_);
  Header(o, "vfio_gpu_plugin_allocation_failures_total", "counter",
         "Refused Allocate calls (unknown or unhealthy devices), by resource.");
  PerResource(o, "vfio_gpu_plugin_allocation_failures_total", allocation_failures_);
  Header(o, "vfio_gpu_plugin_registrations_total", "counter",
         "First registrations with the kubelet, by resource.");
  PerResource(o, "vfio_gpu_plugin_registrations_total", registrations_);
  Header(o, "vfio_gpu_plugin_reregistrations_total", "counter",
         "Registrations after a kubelet restart or a lost socket, by resource.");
  PerResource(o, "vfio_gpu_plugin_reregistrations_total", reregistrations_);
  Header(o, "vfio_gpu_plugin_registration_failures_total", "counter",
         "Failed registration attempts (retried with backoff), by resource.");
  PerResource(o, "vfio_gpu_plugin_registration_failures_total", registration_failures_);
  Header(o, "vfio_gpu_plugin_scan_duration_seconds", "summary", "Host scans and their duration.");
  o += "vfio_gpu_plugin_scan_duration_seconds_sum " + Num(scan_seconds_sum_) + "\n";
  o += "vfio_gpu_plugin_scan_duration_seconds_count " + std::to_string(scans_) + "\n";
  Header(o, "vfio_gpu_plugin_last_scan_duration_seconds", "gauge", "Duration of the last scan.");
  o += "vfio_gpu_plugin_last_scan_duration_seconds " + Num(last_scan_seconds_) + "\n";
  Header(o, "vfio_gpu_plugin_cdi_writes_total", "counter", "CDI spec files written or removed.");
  o += "vfio_gpu_plugin_cdi_writes_total " + std::to_string(cdi_writes_.load()) + "\n";
  Header(o, "vfio_gpu_plugin_last_error_timestamp_seconds", "gauge",
         "When the last error happened (0: none); the message is in the label.");
  o += "vfio_gpu_plugin_last_error_timestamp_seconds{error=\"" + Escape(last_error_) + "\"} " +
       std::to_string(last_error_time_) + "\n";
  return o;
}

}  // namespace vfio_gpu::plugin
