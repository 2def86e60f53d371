// An in-process kubelet stand-in for plugin tests: the device manager's side of the device plugin
// protocol, spoken over real unix sockets in a directory of the test's choosing.
//
// What it does, as the kubelet does it:
// - serves v1beta1.Registration on <dir>/kubelet.sock;
// - Register: refuses a version other than "v1beta1" and a resource name without a domain (the
//   RPC fails, as the kubelet's does); otherwise dials the plugin at <dir>/<endpoint>, calls
//   GetDevicePluginOptions (both inside the Register call, so a plugin must serve its socket before
//   registering), then opens ListAndWatch in the background and keeps the latest device list;
// - a new Register for a resource already known replaces the old endpoint;
// - Start() and Restart() delete every socket file in the directory first (the kubelet does, and
//   forgets every plugin): a plugin must notice and register again.
//
// Every Wait* blocks on a condition variable until the condition holds or the timeout passes; none
// of them polls. All methods are thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace vfio_gpu::fakes {

using DeviceList = std::vector<v1beta1::Device>;
using DevicePredicate = std::function<bool(const DeviceList&)>;

class FakeKubelet {
 public:
  struct Options {
    // How long Register waits for the plugin's socket to accept and answer GetDevicePluginOptions.
    std::chrono::milliseconds plugin_dial_timeout{5000};
    // Delete every socket file in the directory on Start(), as a starting kubelet does.
    bool cleanup_sockets_on_start = true;
    // Called on the reader thread the moment a ListAndWatch update arrives, before it is stored:
    // what the node may do with a device from then on (allocate it, hand it to the runtime) can be
    // checked against the host at exactly that moment.
    std::function<void(const std::string& resource, const DeviceList& devices)> on_update;
  };

  // `dir` is the device plugin directory (created if missing). Nothing is served until Start().
  explicit FakeKubelet(std::string dir);
  FakeKubelet(std::string dir, Options options);
  ~FakeKubelet();  // Stop()s.

  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  // Serves Registration on <dir>/kubelet.sock.
  Status Start();
  // Stops serving and drops every plugin connection (ListAndWatch streams are cancelled). Socket
  // files are left as a killed kubelet leaves them. Idempotent.
  void Stop();
  // A kubelet restart: Stop(), delete every socket file in the directory, Start() again. Everything
  // known about plugins is forgotten (registration counts are kept: they are cumulative).
  Status Restart();

  const std::string& dir() const { return dir_; }
  std::string socket_path() const;  // <dir>/kubelet.sock

  // Blocks until `resource` is registered (and its GetDevicePluginOptions answered) since the last
  // Start/Restart. Returns its RegisterRequest, or nullopt on timeout.
  std::optional<v1beta1::RegisterRequest> WaitForRegistration(const std::string& resource,
                                                              std::chrono::milliseconds timeout);
  // Blocks until RegistrationCount(resource) >= count (re-registration tests).
  bool WaitForRegistrationCount(const std::string& resource, int count,
                                std::chrono::milliseconds timeout);
  // Blocks until `resource` is registered and its latest ListAndWatch list satisfies `predicate`
  // (evaluated on every update). Returns that list, or nullopt on timeout.
  std::optional<DeviceList> WaitForDevices(const std::string& resource,
                                           const DevicePredicate& predicate,
                                           std::chrono::milliseconds timeout);
  // Blocks until the ListAndWatch stream of the current endpoint of `resource` has ended (the
  // plugin stopped or closed it). False on timeout.
  bool WaitForStreamEnd(const std::string& resource, std::chrono::milliseconds timeout);

  // Successful Register calls for `resource` since construction (across restarts).
  int RegistrationCount(const std::string& resource) const;
  int TotalRegistrationCount() const;
  // Register calls refused (bad version, bad name, plugin unreachable), since construction.
  int RejectedRegistrationCount() const;
  // Currently registered resources, sorted.
  std::vector<std::string> Resources() const;
  // The latest device list / options of a registered resource (nullopt when not registered).
  std::optional<DeviceList> Devices(const std::string& resource) const;
  std::optional<v1beta1::DevicePluginOptions> PluginOptions(const std::string& resource) const;
  // How many ListAndWatch messages the current endpoint of `resource` has sent.
  int ListAndWatchUpdates(const std::string& resource) const;

  // Calls into the registered plugin of `resource`, like the kubelet's device manager does.
  // FAILED_PRECONDITION when `resource` is not registered. Allocate with a zero timeout sets no
  // deadline, as the kubelet does.
  grpc::Status Allocate(const std::string& resource, const v1beta1::AllocateRequest& request,
                        v1beta1::AllocateResponse* response,
                        std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // One container asking for `device_ids`.
  grpc::Status Allocate(const std::string& resource, const std::vector<std::string>& device_ids,
                        v1beta1::AllocateResponse* response,
                        std::chrono::milliseconds timeout = std::chrono::seconds(5));
  grpc::Status GetPreferredAllocation(const std::string& resource,
                                      const v1beta1::PreferredAllocationRequest& request,
                                      v1beta1::PreferredAllocationResponse* response,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // One container: choose `size` of `available`, including `must_include`.
  grpc::Status GetPreferredAllocation(const std::string& resource,
                                      const std::vector<std::string>& available,
                                      const std::vector<std::string>& must_include, int size,
                                      v1beta1::PreferredAllocationResponse* response,
                                      std::chrono::milliseconds timeout = std::chrono::seconds(5));
  grpc::Status PreStartContainer(const std::string& resource,
                                 const std::vector<std::string>& device_ids,
                                 v1beta1::PreStartContainerResponse* response,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(5));

 private:
  class RegistrationService;
  struct Endpoint;

  grpc::Status HandleRegister(const v1beta1::RegisterRequest& request);
  void ReadListAndWatch(const std::shared_ptr<Endpoint>& endpoint);
  std::shared_ptr<Endpoint> CurrentEndpoint(const std::string& resource) const;
  // Cancels and joins the readers of `endpoints`; the lock must not be held.
  static void Retire(std::vector<std::shared_ptr<Endpoint>> endpoints);

  const std::string dir_;
  const Options options_;

  std::mutex lifecycle_mu_;  // serialises Start/Stop/Restart
  std::unique_ptr<RegistrationService> service_;
  std::unique_ptr<grpc::Server> server_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool serving_ = false;
  std::map<std::string, std::shared_ptr<Endpoint>> endpoints_;  // by resource name
  std::map<std::string, int> registration_counts_;
  int rejected_registrations_ = 0;
  std::set<grpc::ClientContext*> dialing_;  // Register calls waiting for a plugin
};

// Deletes every unix socket file directly inside `dir` (what a starting kubelet does).
Status RemoveSocketsIn(const std::string& dir);

}  // namespace vfio_gpu::fakes
