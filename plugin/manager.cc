#include "plugin/manager.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>

#include "plugin/registration.h"

namespace vfio_gpu::plugin {
namespace {

ino_t InodeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

bool SocketExists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

}  // namespace

Manager::Manager(Options options, Metrics* metrics,
                 std::function<std::shared_ptr<const DeviceTree>()> fresh,
                 std::function<void(std::chrono::milliseconds)> schedule_retry)
    : options_(std::move(options)),
      metrics_(metrics),
      fresh_(std::move(fresh)),
      schedule_retry_(std::move(schedule_retry)) {}

Manager::~Manager() {
  StopAll();
}

std::vector<std::string> Manager::Resources() const {
  std::vector<std::string> out;
  for (const auto& [r, _] : entries_) out.push_back(r);
  return out;
}

std::string Manager::SocketPath(const std::string& resource) const {
  return options_.kubelet_dir + "/" + SocketName(resource);
}

void Manager::Serve(Entry& e) {
  e.server->Stop();
  if (auto s = e.server->Start(); !s) {
    e.serving = false;
    SPDLOG_ERROR("resource {}: {}", e.server->resource(), s.error().message());
    if (metrics_) metrics_->SetLastError(s.error().message());
    return;
  }
  e.serving = true;
  SPDLOG_INFO("resource {}: serving on {}", e.server->resource(), e.server->socket_path());
}

void Manager::Apply(const DeviceTree& tree) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (tree.count(it->first) && !tree.at(it->first).empty()) {
      ++it;
      continue;
    }
    SPDLOG_INFO("resource {}: no units left; stopping its server and removing {}", it->first,
                it->second.server->socket_path());
    it->second.server->Stop();
    it = entries_.erase(it);
  }
  for (const auto& [resource, devices] : tree) {
    if (devices.empty()) continue;
    auto list = std::make_shared<const ResourceDevices>(devices);
    auto it = entries_.find(resource);
    if (it != entries_.end()) {
      if (*it->second.server->devices() != devices) it->second.server->Update(list);
      continue;
    }
    Entry e;
    std::string r = resource;
    e.server = std::make_unique<ResourceServer>(
        resource, SocketPath(resource), options_.allocate, metrics_,
        [this, r]() -> std::shared_ptr<const ResourceDevices> {
          auto t = fresh_ ? fresh_() : nullptr;
          if (!t) return nullptr;
          auto found = t->find(r);
          return std::make_shared<const ResourceDevices>(found == t->end() ? ResourceDevices{}
                                                                           : found->second);
        });
    e.server->Update(list);
    SPDLOG_INFO("resource {}: new, {} unit(s)", resource, devices.size());
    Serve(e);
    entries_[resource] = std::move(e);
  }
  RegisterPending();
}

void Manager::OnKubeletSocketCreated() {
  SPDLOG_INFO("kubelet.sock (re)created in {}: registering every resource again",
              options_.kubelet_dir);
  for (auto& [r, e] : entries_) {
    e.registered = false;
    e.failures = 0;
    e.next_attempt = {};
  }
  OnKubeletDirChanged();
}

void Manager::OnKubeletDirChanged() {
  for (auto& [r, e] : entries_) {
    if (e.serving && SocketExists(e.server->socket_path())) continue;
    if (e.serving)
      SPDLOG_INFO(
          "resource {}: socket {} was deleted (kubelet restart?); serving again and re-registering",
          r, e.server->socket_path());
    Serve(e);
    e.registered = false;
    e.failures = 0;
    e.next_attempt = {};
  }
  RegisterPending();
}

void Manager::OnRetryTimer() {
  RegisterPending();
}

void Manager::RegisterPending() {
  auto now = Clock::now();
  std::string kubelet_sock = options_.kubelet_dir + "/" + kKubeletSocket;
  std::optional<Clock::time_point> next;
  for (auto& [r, e] : entries_) {
    if (e.registered) continue;
    if (e.next_attempt > now) {
      next = std::min(next.value_or(e.next_attempt), e.next_attempt);
      continue;
    }
    if (!e.serving) Serve(e);
    Status s = e.serving
                   ? RegisterWithKubelet(kubelet_sock, SocketName(r), r, options_.register_timeout)
                   : Status(Error("not serving " + e.server->socket_path()));
    if (s) {
      SPDLOG_INFO("resource {}: registered with the kubelet (endpoint {}){}", r, SocketName(r),
                  e.ever_registered ? " again" : "");
      if (metrics_) metrics_->CountRegistration(r, true, e.ever_registered);
      e.registered = e.ever_registered = true;
      e.kubelet_inode = InodeOf(kubelet_sock);
      e.failures = 0;
      continue;
    }
    auto delay = std::min(options_.backoff_max,
                          std::chrono::milliseconds(options_.backoff_initial.count() *
                                                    (int64_t{1} << std::min(e.failures, 16))));
    ++e.failures;
    e.next_attempt = now + delay;
    SPDLOG_WARN("resource {}: {} (attempt {}); retrying in {} ms", r, s.error().message(),
                e.failures, delay.count());
    if (metrics_) {
      metrics_->CountRegistration(r, false, false);
      metrics_->SetLastError(s.error().message());
    }
    next = std::min(next.value_or(e.next_attempt), e.next_attempt);
  }
  if (next && schedule_retry_) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*next - Clock::now());
    schedule_retry_(std::max(ms, std::chrono::milliseconds(1)));
  }
}

void Manager::StopAll() {
  for (auto& [r, e] : entries_) e.server->Stop();
  entries_.clear();
}

}  // namespace vfio_gpu::plugin
