#include "plugin/resource_server.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cctype>
#include <string_view>

#include "common/files.h"
#include "common/strings.h"
#include "plugin/preferred_allocation.h"

namespace vfio_gpu::plugin {
namespace {

grpc::Status ToGrpc(const Error& e) {
  return grpc::Status(e.kind() == ErrorKind::kNotFound || e.kind() == ErrorKind::kInvalid
                          ? grpc::StatusCode::INVALID_ARGUMENT
                          : grpc::StatusCode::FAILED_PRECONDITION,
                      e.message());
}

}  // namespace

std::string SocketName(const std::string& resource) {
  std::string s;
  for (char c : resource)
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
  // The whole name stays within kMaxSocketName (40) characters, so a prefix of 20 that tooling may
  // add never pushes it past 63 (seed 000); long names keep a unique 8-digit hash tail.
  const size_t room = kMaxSocketName - std::string_view("vfio-gpu-.sock").size();
  if (s.size() > room) {
    uint32_t h = 2166136261u;
    for (unsigned char c : resource) h = (h ^ c) * 16777619u;
    s = s.substr(0, room - 9) + "-" + Hex(h, 8);
  }
  return "vfio-gpu-" + s + ".sock";
}

v1beta1::ListAndWatchResponse ToListAndWatch(const ResourceDevices& devices) {
  v1beta1::ListAndWatchResponse r;
  for (const auto& [id, d] : devices) {
    auto* dev = r.add_devices();
    dev->set_id(id);
    dev->set_health(d.healthy ? kHealthy : kUnhealthy);
    // No NUMA node (sysfs -1) means no topology at all: never a made-up node 0.
    if (d.numa_node) dev->mutable_topology()->add_nodes()->set_id(*d.numa_node);
  }
  return r;
}

ResourceServer::ResourceServer(std::string resource, std::string socket_path,
                               AllocateOptions options, Metrics* metrics, FreshDevices fresh)
    : resource_(std::move(resource)),
      socket_path_(std::move(socket_path)),
      options_(options),
      metrics_(metrics),
      fresh_(std::move(fresh)),
      devices_(std::make_shared<ResourceDevices>()) {}

ResourceServer::~ResourceServer() {
  Stop();
}

Status ResourceServer::Start() {
  ::unlink(socket_path_.c_str());
  {
    std::lock_guard lk(mu_);
    stopping_ = false;
  }
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("unix:" + socket_path_, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(this);
  // One completion queue and few pollers: the kubelet is our only client, and idle threads cost
  // resident memory.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 2);
  // Pollers wake up when this expires even with nothing to do: idle must mean asleep.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::CQ_TIMEOUT_MSEC, 3600 * 1000);
  server_ = builder.BuildAndStart();
  if (!server_ || port == 0) {
    server_.reset();
    return Error("cannot serve " + resource_ + " on " + socket_path_ +
                     "; check that the directory exists and is writable",
                 ErrorKind::kTransient);
  }
  return Status::Ok();
}

void ResourceServer::Stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
    server_->Wait();
    server_.reset();
    ::unlink(socket_path_.c_str());
  }
}

void ResourceServer::Update(std::shared_ptr<const ResourceDevices> devices) {
  {
    std::lock_guard lk(mu_);
    devices_ = std::move(devices);
    ++version_;
  }
  cv_.notify_all();
}

std::shared_ptr<const ResourceDevices> ResourceServer::devices() const {
  std::lock_guard lk(mu_);
  return devices_;
}

grpc::Status ResourceServer::GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                                    v1beta1::DevicePluginOptions* out) {
  out->set_pre_start_required(true);
  out->set_get_preferred_allocation_available(true);
  return grpc::Status::OK;
}

grpc::Status ResourceServer::ListAndWatch(
    grpc::ServerContext* ctx, const v1beta1::Empty*,
    grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  SPDLOG_INFO("kubelet opened ListAndWatch for {}", resource_);
  uint64_t sent = 0;
  for (;;) {
    std::shared_ptr<const ResourceDevices> devices;
    {
      std::unique_lock lk(mu_);
      // Woken by Update() and Stop(); a stream whose kubelet went away ends at the next change or
      // when the server stops (the kubelet's restart deletes our socket, which restarts us).
      cv_.wait(lk, [&] { return stopping_ || version_ != sent; });
      if (stopping_) return grpc::Status::OK;
      devices = devices_;
      sent = version_;
    }
    if (ctx->IsCancelled() || !writer->Write(ToListAndWatch(*devices))) {
      SPDLOG_INFO("ListAndWatch for {} ended: the kubelet went away", resource_);
      return grpc::Status::CANCELLED;
    }
  }
}

grpc::Status ResourceServer::GetPreferredAllocation(grpc::ServerContext*,
                                                    const v1beta1::PreferredAllocationRequest* req,
                                                    v1beta1::PreferredAllocationResponse* out) {
  auto devices = this->devices();
  for (const auto& c : req->container_requests()) {
    std::vector<std::string> available(c.available_deviceids().begin(),
                                       c.available_deviceids().end());
    std::vector<std::string> must(c.must_include_deviceids().begin(),
                                  c.must_include_deviceids().end());
    auto chosen = PreferredAllocation(*devices, available, must, c.allocation_size());
    SPDLOG_INFO("preferred allocation for {}: {} of [{}] (must include [{}]) -> [{}]", resource_,
                c.allocation_size(), Join(available, ","), Join(must, ","), Join(chosen, ","));
    auto* r = out->add_container_responses();
    for (const auto& id : chosen) r->add_deviceids(id);
  }
  return grpc::Status::OK;
}

grpc::Status ResourceServer::Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* req,
                                      v1beta1::AllocateResponse* out) {
  auto devices = this->devices();
  auto r = BuildAllocateResponse(resource_, *devices, *req, options_);
  if (metrics_) metrics_->CountAllocate(resource_, r.ok());
  std::vector<std::string> ids;
  for (const auto& c : req->container_requests())
    ids.push_back("[" + Join({c.devices_ids().begin(), c.devices_ids().end()}, ",") + "]");
  if (!r) {
    SPDLOG_WARN("Allocate {} {} refused: {}", resource_, Join(ids, " "), r.error().message());
    return ToGrpc(r.error());
  }
  SPDLOG_INFO("Allocate {} {} granted ({})", resource_, Join(ids, " "),
              AllocateStrategyName(options_.strategy));
  *out = std::move(*r);
  return grpc::Status::OK;
}

grpc::Status ResourceServer::PreStartContainer(grpc::ServerContext*,
                                               const v1beta1::PreStartContainerRequest* req,
                                               v1beta1::PreStartContainerResponse*) {
  std::vector<std::string> ids(req->devices_ids().begin(), req->devices_ids().end());
  // A fresh look at the host: a unit may have broken between Allocate and now.
  auto devices = fresh_ ? fresh_() : this->devices();
  if (!devices) devices = this->devices();
  if (auto s = CheckDevices(*devices, ids); !s) {
    SPDLOG_WARN("PreStartContainer {} [{}] refused: {}", resource_, Join(ids, ","),
                s.error().message());
    return ToGrpc(s.error());
  }
  SPDLOG_INFO("PreStartContainer {} [{}]: units still viable", resource_, Join(ids, ","));
  return grpc::Status::OK;
}

}  // namespace vfio_gpu::plugin
