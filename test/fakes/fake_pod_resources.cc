#include "test/fakes/fake_pod_resources.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/files.h"

namespace vfio_gpu::fakes {

v1::ContainerDevices ToProto(const FakeDevices& devices) {
  v1::ContainerDevices out;
  out.set_resource_name(devices.resource_name);
  for (const auto& id : devices.device_ids) out.add_device_ids(id);
  for (int64_t node : devices.numa_nodes) out.mutable_topology()->add_nodes()->set_id(node);
  return out;
}

v1::PodResources ToProto(const FakePod& pod) {
  v1::PodResources out;
  out.set_name(pod.name);
  out.set_namespace_(pod.ns);
  for (const auto& container : pod.containers) {
    v1::ContainerResources* c = out.add_containers();
    c->set_name(container.name);
    for (const auto& devices : container.devices) *c->add_devices() = ToProto(devices);
  }
  return out;
}

class FakePodResources::Service final : public v1::PodResourcesLister::Service {
 public:
  explicit Service(FakePodResources* owner) : owner_(owner) {}
  grpc::Status List(grpc::ServerContext* /*context*/,
                    const v1::ListPodResourcesRequest* /*request*/,
                    v1::ListPodResourcesResponse* response) override {
    return owner_->List(response);
  }
  grpc::Status GetAllocatableResources(grpc::ServerContext* /*context*/,
                                       const v1::AllocatableResourcesRequest* /*request*/,
                                       v1::AllocatableResourcesResponse* response) override {
    return owner_->GetAllocatable(response);
  }
  grpc::Status Get(grpc::ServerContext* /*context*/, const v1::GetPodResourcesRequest* request,
                   v1::GetPodResourcesResponse* response) override {
    return owner_->Get(*request, response);
  }

 private:
  FakePodResources* owner_;
};

FakePodResources::FakePodResources(std::string socket_path)
    : socket_path_(std::move(socket_path)) {}

FakePodResources::~FakePodResources() {
  Stop();
}

Status FakePodResources::Start() {
  std::lock_guard lifecycle(lifecycle_mu_);
  if (server_) return Status::Ok();
  if (Status made = MakeDirs(Dirname(socket_path_)); !made) {
    return made.error().Wrap("fake pod resources");
  }
  auto service = std::make_unique<Service>(this);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path_, grpc::InsecureServerCredentials());
  builder.RegisterService(service.get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    return Error("fake pod resources: cannot serve on " + socket_path_ +
                     ": gRPC could not bind it; check the directory is writable and the path is "
                     "shorter than 108 bytes",
                 ErrorKind::kInternal);
  }
  service_ = std::move(service);
  server_ = std::move(server);
  return Status::Ok();
}

void FakePodResources::Stop() {
  std::lock_guard lifecycle(lifecycle_mu_);
  if (!server_) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
  server_.reset();
  service_.reset();
  (void)RemoveFile(socket_path_);
}

void FakePodResources::SetPods(std::vector<FakePod> pods) {
  std::lock_guard lock(mu_);
  pods_ = std::move(pods);
}

void FakePodResources::AddPod(FakePod pod) {
  std::lock_guard lock(mu_);
  auto it = std::find_if(pods_.begin(), pods_.end(),
                         [&](const FakePod& p) { return p.ns == pod.ns && p.name == pod.name; });
  if (it != pods_.end()) {
    *it = std::move(pod);
  } else {
    pods_.push_back(std::move(pod));
  }
}

bool FakePodResources::RemovePod(const std::string& ns, const std::string& name) {
  std::lock_guard lock(mu_);
  return std::erase_if(pods_, [&](const FakePod& p) { return p.ns == ns && p.name == name; }) > 0;
}

void FakePodResources::SetAllocatable(std::vector<FakeDevices> devices) {
  std::lock_guard lock(mu_);
  allocatable_ = std::move(devices);
}

int FakePodResources::CallCount(const std::string& method) const {
  std::lock_guard lock(mu_);
  auto it = calls_.find(method);
  return it == calls_.end() ? 0 : it->second;
}

grpc::Status FakePodResources::List(v1::ListPodResourcesResponse* response) {
  std::lock_guard lock(mu_);
  ++calls_["List"];
  for (const FakePod& pod : pods_) *response->add_pod_resources() = ToProto(pod);
  return grpc::Status::OK;
}

grpc::Status FakePodResources::GetAllocatable(v1::AllocatableResourcesResponse* response) {
  std::lock_guard lock(mu_);
  ++calls_["GetAllocatableResources"];
  for (const FakeDevices& devices : allocatable_) *response->add_devices() = ToProto(devices);
  return grpc::Status::OK;
}

grpc::Status FakePodResources::Get(const v1::GetPodResourcesRequest& request,
                                   v1::GetPodResourcesResponse* response) {
  std::lock_guard lock(mu_);
  ++calls_["Get"];
  if (get_mode_ == GetMode::kGateOff)
    return grpc::Status(grpc::StatusCode::UNKNOWN, "PodResources API Get method disabled");
  if (get_mode_ == GetMode::kUnimplemented)
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                        "unknown method Get for service v1.PodResourcesLister");
  for (const FakePod& pod : pods_) {
    if (pod.ns == request.pod_namespace() && pod.name == request.pod_name()) {
      *response->mutable_pod_resources() = ToProto(pod);
      return grpc::Status::OK;
    }
  }
  // The kubelet's words for it.
  return grpc::Status(grpc::StatusCode::NOT_FOUND, "pod " + request.pod_name() + " in namespace " +
                                                       request.pod_namespace() + " not found");
}

void FakePodResources::SetGetMode(GetMode mode) {
  std::lock_guard lock(mu_);
  get_mode_ = mode;
}

}  // namespace vfio_gpu::fakes
