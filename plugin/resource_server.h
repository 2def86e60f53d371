// One resource's kubelet-facing gRPC server (Intel's server.go): serves v1beta1.DevicePlugin on its
// own unix socket, streams the device list on every change, and answers Allocate,
// GetPreferredAllocation and PreStartContainer with the pure functions of allocate.h and
// preferred_allocation.h. Fed by the manager with immutable device lists.
#pragma once

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/result.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "plugin/allocate.h"
#include "plugin/device_tree.h"
#include "plugin/metrics.h"

namespace vfio_gpu::plugin {

// Socket file name for a resource: "vfio-gpu-nvidia.com_pgpu.sock" (unique per resource, at most
// kMaxSocketName characters).
inline constexpr size_t kMaxSocketName = 40;
std::string SocketName(const std::string& resource);

// The kubelet's view of a device list.
v1beta1::ListAndWatchResponse ToListAndWatch(const ResourceDevices& devices);

class ResourceServer final : public v1beta1::DevicePlugin::Service {
 public:
  // Re-checks units right before a container starts: returns the fresh devices of this resource.
  using FreshDevices = std::function<std::shared_ptr<const ResourceDevices>()>;

  ResourceServer(std::string resource, std::string socket_path, AllocateOptions options,
                 Metrics* metrics, FreshDevices fresh);
  ~ResourceServer() override;

  const std::string& resource() const { return resource_; }
  const std::string& socket_path() const { return socket_path_; }

  // Serves on the socket (replacing a stale file). Call Update() first.
  Status Start();
  // Ends every ListAndWatch stream, stops serving and removes the socket file. Idempotent.
  void Stop();
  // Publishes a new list; open ListAndWatch streams send it at once.
  void Update(std::shared_ptr<const ResourceDevices> devices);
  std::shared_ptr<const ResourceDevices> devices() const;

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* out) override;
  grpc::Status ListAndWatch(grpc::ServerContext* ctx, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                      const v1beta1::PreferredAllocationRequest* req,
                                      v1beta1::PreferredAllocationResponse* out) override;
  grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* req,
                        v1beta1::AllocateResponse* out) override;
  grpc::Status PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest* req,
                                 v1beta1::PreStartContainerResponse* out) override;

 private:
  const std::string resource_;
  const std::string socket_path_;
  const AllocateOptions options_;
  Metrics* metrics_;
  FreshDevices fresh_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<const ResourceDevices> devices_;
  uint64_t version_ = 0;
  bool stopping_ = false;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace vfio_gpu::plugin
