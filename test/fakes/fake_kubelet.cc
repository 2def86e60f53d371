#include "test/fakes/fake_kubelet.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/files.h"

namespace vfio_gpu::fakes {
namespace {

constexpr char kVersion[] = "v1beta1";
constexpr char kKubeletSocket[] = "kubelet.sock";

std::chrono::system_clock::time_point DeadlineIn(std::chrono::milliseconds timeout) {
  return std::chrono::system_clock::now() + timeout;
}

// The kubelet accepts only extended resource names: "<domain>/<name>", outside kubernetes.io.
bool IsExtendedResourceName(const std::string& name) {
  const auto slash = name.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == name.size()) return false;
  if (name.find('/', slash + 1) != std::string::npos) return false;
  const std::string domain = name.substr(0, slash);
  if (domain == "kubernetes.io" || (domain.size() > 14 && domain.ends_with(".kubernetes.io"))) {
    return false;
  }
  return name.size() <= 253;
}

}  // namespace

// One registered plugin: its connection and what its ListAndWatch stream said last. Fields after
// `stub` are guarded by FakeKubelet::mu_.
struct FakeKubelet::Endpoint {
  v1beta1::RegisterRequest request;
  v1beta1::DevicePluginOptions options;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub;
  grpc::ClientContext list_and_watch;  // TryCancel()ed to end the reader
  std::thread reader;

  DeviceList devices;
  int updates = 0;
  bool stream_ended = false;
};

class FakeKubelet::RegistrationService final : public v1beta1::Registration::Service {
 public:
  explicit RegistrationService(FakeKubelet* kubelet) : kubelet_(kubelet) {}
  grpc::Status Register(grpc::ServerContext* /*context*/, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty* /*response*/) override {
    return kubelet_->HandleRegister(*request);
  }

 private:
  FakeKubelet* kubelet_;
};

FakeKubelet::FakeKubelet(std::string dir) : FakeKubelet(std::move(dir), Options{}) {}

FakeKubelet::FakeKubelet(std::string dir, Options options)
    : dir_(std::move(dir)), options_(options) {}

FakeKubelet::~FakeKubelet() {
  Stop();
}

std::string FakeKubelet::socket_path() const {
  return JoinPath(dir_, kKubeletSocket);
}

Status FakeKubelet::Start() {
  std::lock_guard lifecycle(lifecycle_mu_);
  if (server_) return Status::Ok();
  if (Status made = MakeDirs(dir_); !made) return made.error().Wrap("fake kubelet");
  if (options_.cleanup_sockets_on_start) {
    if (Status removed = RemoveSocketsIn(dir_); !removed) {
      return removed.error().Wrap("fake kubelet");
    }
  }
  auto service = std::make_unique<RegistrationService>(this);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path(), grpc::InsecureServerCredentials());
  builder.RegisterService(service.get());
  {
    std::lock_guard lock(mu_);
    serving_ = true;  // before the first Register can arrive
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::lock_guard lock(mu_);
    serving_ = false;
    return Error("fake kubelet: cannot serve on " + socket_path() +
                     ": gRPC could not bind it; check the directory is writable and the path is "
                     "shorter than 108 bytes",
                 ErrorKind::kInternal);
  }
  service_ = std::move(service);
  server_ = std::move(server);
  return Status::Ok();
}

void FakeKubelet::Stop() {
  std::lock_guard lifecycle(lifecycle_mu_);
  if (!server_) return;
  std::vector<std::shared_ptr<Endpoint>> dropped;
  {
    std::lock_guard lock(mu_);
    serving_ = false;
    for (auto& [name, endpoint] : endpoints_) dropped.push_back(std::move(endpoint));
    endpoints_.clear();
    for (grpc::ClientContext* dial : dialing_) dial->TryCancel();
  }
  cv_.notify_all();
  // In-flight Register handlers return promptly: their plugin calls were cancelled above.
  server_->Shutdown(DeadlineIn(std::chrono::seconds(1)));
  server_->Wait();
  server_.reset();
  service_.reset();
  Retire(std::move(dropped));
}

Status FakeKubelet::Restart() {
  Stop();
  if (Status removed = RemoveSocketsIn(dir_); !removed) {
    return removed.error().Wrap("fake kubelet restart");
  }
  return Start();
}

grpc::Status FakeKubelet::HandleRegister(const v1beta1::RegisterRequest& request) {
  // The kubelet answers a bad request with a plain error (gRPC code UNKNOWN) and these words.
  auto reject = [this](grpc::StatusCode code, const std::string& message) {
    std::lock_guard lock(mu_);
    ++rejected_registrations_;
    cv_.notify_all();
    return grpc::Status(code, message);
  };
  if (request.version() != kVersion) {
    return reject(grpc::StatusCode::UNKNOWN, "requested API version \"" + request.version() +
                                                 "\" is not supported by kubelet. Supported "
                                                 "versions are [\"v1beta1\"]");
  }
  if (!IsExtendedResourceName(request.resource_name())) {
    return reject(grpc::StatusCode::UNKNOWN,
                  "the ResourceName \"" + request.resource_name() + "\" is invalid");
  }
  if (request.endpoint().empty() || request.endpoint().find('/') != std::string::npos) {
    return reject(grpc::StatusCode::UNKNOWN,
                  "endpoint \"" + request.endpoint() + "\" is not a file name in " + dir_);
  }

  auto endpoint = std::make_shared<Endpoint>();
  endpoint->request = request;
  grpc::ChannelArguments args;
  // A fresh connection per registration (the plugin's socket is new after a restart), retried
  // quickly while the plugin is still coming up.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 200);
  endpoint->channel = grpc::CreateCustomChannel("unix:" + JoinPath(dir_, request.endpoint()),
                                                grpc::InsecureChannelCredentials(), args);
  endpoint->stub = v1beta1::DevicePlugin::NewStub(endpoint->channel);

  // Like the kubelet: dial (blocking, bounded) and ask for the options inside Register.
  grpc::ClientContext dial;
  dial.set_wait_for_ready(true);
  dial.set_deadline(DeadlineIn(options_.plugin_dial_timeout));
  {
    std::lock_guard lock(mu_);
    if (!serving_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "kubelet is stopping");
    dialing_.insert(&dial);
  }
  v1beta1::DevicePluginOptions options;
  const grpc::Status called =
      endpoint->stub->GetDevicePluginOptions(&dial, v1beta1::Empty(), &options);
  {
    std::lock_guard lock(mu_);
    dialing_.erase(&dial);
  }
  if (!called.ok()) {
    return reject(grpc::StatusCode::UNKNOWN,
                  "failed to dial device plugin " + request.endpoint() +
                      " for GetDevicePluginOptions: " + called.error_message());
  }
  endpoint->options = options;

  std::shared_ptr<Endpoint> replaced;
  {
    std::lock_guard lock(mu_);
    if (!serving_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "kubelet is stopping");
    auto& slot = endpoints_[request.resource_name()];
    replaced = std::move(slot);
    slot = endpoint;
    ++registration_counts_[request.resource_name()];
    endpoint->reader = std::thread([this, endpoint] { ReadListAndWatch(endpoint); });
  }
  cv_.notify_all();
  if (replaced) Retire({std::move(replaced)});
  return grpc::Status::OK;
}

void FakeKubelet::ReadListAndWatch(const std::shared_ptr<Endpoint>& endpoint) {
  std::unique_ptr<grpc::ClientReader<v1beta1::ListAndWatchResponse>> reader =
      endpoint->stub->ListAndWatch(&endpoint->list_and_watch, v1beta1::Empty());
  v1beta1::ListAndWatchResponse response;
  while (reader->Read(&response)) {
    if (options_.on_update)
      options_.on_update(endpoint->request.resource_name(),
                         DeviceList(response.devices().begin(), response.devices().end()));
    {
      std::lock_guard lock(mu_);
      endpoint->devices.assign(response.devices().begin(), response.devices().end());
      ++endpoint->updates;
    }
    cv_.notify_all();
  }
  (void)reader->Finish();
  {
    std::lock_guard lock(mu_);
    endpoint->stream_ended = true;
  }
  cv_.notify_all();
}

void FakeKubelet::Retire(std::vector<std::shared_ptr<Endpoint>> endpoints) {
  for (auto& endpoint : endpoints) endpoint->list_and_watch.TryCancel();
  for (auto& endpoint : endpoints) {
    if (endpoint->reader.joinable()) endpoint->reader.join();
  }
}

std::shared_ptr<FakeKubelet::Endpoint> FakeKubelet::CurrentEndpoint(
    const std::string& resource) const {
  std::lock_guard lock(mu_);
  auto it = endpoints_.find(resource);
  return it == endpoints_.end() ? nullptr : it->second;
}

std::optional<v1beta1::RegisterRequest> FakeKubelet::WaitForRegistration(
    const std::string& resource, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return endpoints_.contains(resource); })) {
    return std::nullopt;
  }
  return endpoints_.at(resource)->request;
}

bool FakeKubelet::WaitForRegistrationCount(const std::string& resource, int count,
                                           std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] {
    auto it = registration_counts_.find(resource);
    return it != registration_counts_.end() && it->second >= count;
  });
}

std::optional<DeviceList> FakeKubelet::WaitForDevices(const std::string& resource,
                                                      const DevicePredicate& predicate,
                                                      std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  std::optional<DeviceList> found;
  cv_.wait_for(lock, timeout, [&] {
    auto it = endpoints_.find(resource);
    if (it == endpoints_.end() || it->second->updates == 0) return false;
    if (!predicate(it->second->devices)) return false;
    found = it->second->devices;
    return true;
  });
  return found;
}

bool FakeKubelet::WaitForStreamEnd(const std::string& resource, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] {
    auto it = endpoints_.find(resource);
    return it != endpoints_.end() && it->second->stream_ended;
  });
}

int FakeKubelet::RegistrationCount(const std::string& resource) const {
  std::lock_guard lock(mu_);
  auto it = registration_counts_.find(resource);
  return it == registration_counts_.end() ? 0 : it->second;
}

int FakeKubelet::TotalRegistrationCount() const {
  std::lock_guard lock(mu_);
  int total = 0;
  for (const auto& [name, count] : registration_counts_) total += count;
  return total;
}

int FakeKubelet::RejectedRegistrationCount() const {
  std::lock_guard lock(mu_);
  return rejected_registrations_;
}

std::vector<std::string> FakeKubelet::Resources() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> names;
  for (const auto& [name, endpoint] : endpoints_) names.push_back(name);
  return names;
}

std::optional<DeviceList> FakeKubelet::Devices(const std::string& resource) const {
  std::lock_guard lock(mu_);
  auto it = endpoints_.find(resource);
  if (it == endpoints_.end()) return std::nullopt;
  return it->second->devices;
}

std::optional<v1beta1::DevicePluginOptions> FakeKubelet::PluginOptions(
    const std::string& resource) const {
  std::lock_guard lock(mu_);
  auto it = endpoints_.find(resource);
  if (it == endpoints_.end()) return std::nullopt;
  return it->second->options;
}

int FakeKubelet::ListAndWatchUpdates(const std::string& resource) const {
  std::lock_guard lock(mu_);
  auto it = endpoints_.find(resource);
  return it == endpoints_.end() ? 0 : it->second->updates;
}

namespace {

grpc::Status NotRegistered(const std::string& resource) {
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      "fake kubelet: resource " + resource + " is not registered");
}

}  // namespace

grpc::Status FakeKubelet::Allocate(const std::string& resource,
                                   const v1beta1::AllocateRequest& request,
                                   v1beta1::AllocateResponse* response,
                                   std::chrono::milliseconds timeout) {
  std::shared_ptr<Endpoint> endpoint = CurrentEndpoint(resource);
  if (!endpoint) return NotRegistered(resource);
  grpc::ClientContext context;
  // The kubelet's device manager calls Allocate with context.Background(): no deadline. Zero asks
  // for exactly that (the bench does); tests keep a deadline so that a hung plugin fails them.
  if (timeout.count() > 0) context.set_deadline(DeadlineIn(timeout));
  return endpoint->stub->Allocate(&context, request, response);
}

grpc::Status FakeKubelet::Allocate(const std::string& resource,
                                   const std::vector<std::string>& device_ids,
                                   v1beta1::AllocateResponse* response,
                                   std::chrono::milliseconds timeout) {
  v1beta1::AllocateRequest request;
  auto* container = request.add_container_requests();
  for (const auto& id : device_ids) container->add_devices_ids(id);
  return Allocate(resource, request, response, timeout);
}

grpc::Status FakeKubelet::GetPreferredAllocation(const std::string& resource,
                                                 const v1beta1::PreferredAllocationRequest& request,
                                                 v1beta1::PreferredAllocationResponse* response,
                                                 std::chrono::milliseconds timeout) {
  std::shared_ptr<Endpoint> endpoint = CurrentEndpoint(resource);
  if (!endpoint) return NotRegistered(resource);
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout));
  return endpoint->stub->GetPreferredAllocation(&context, request, response);
}

grpc::Status FakeKubelet::GetPreferredAllocation(const std::string& resource,
                                                 const std::vector<std::string>& available,
                                                 const std::vector<std::string>& must_include,
                                                 int size,
                                                 v1beta1::PreferredAllocationResponse* response,
                                                 std::chrono::milliseconds timeout) {
  v1beta1::PreferredAllocationRequest request;
  auto* container = request.add_container_requests();
  for (const auto& id : available) container->add_available_deviceids(id);
  for (const auto& id : must_include) container->add_must_include_deviceids(id);
  container->set_allocation_size(size);
  return GetPreferredAllocation(resource, request, response, timeout);
}

grpc::Status FakeKubelet::PreStartContainer(const std::string& resource,
                                            const std::vector<std::string>& device_ids,
                                            v1beta1::PreStartContainerResponse* response,
                                            std::chrono::milliseconds timeout) {
  std::shared_ptr<Endpoint> endpoint = CurrentEndpoint(resource);
  if (!endpoint) return NotRegistered(resource);
  v1beta1::PreStartContainerRequest request;
  for (const auto& id : device_ids) request.add_devices_ids(id);
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout));
  return endpoint->stub->PreStartContainer(&context, request, response);
}

Status RemoveSocketsIn(const std::string& dir) {
  Result<std::vector<std::string>> names = ListDir(dir);
  if (!names) return names.error().Wrap("remove sockets in " + dir);
  for (const std::string& name : *names) {
    const std::string path = JoinPath(dir, name);
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      return Error("remove socket " + path + ": " + std::strerror(errno), ErrorKind::kInternal);
    }
  }
  return Status::Ok();
}

}  // namespace vfio_gpu::fakes
