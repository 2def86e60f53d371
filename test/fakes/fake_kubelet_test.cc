// The fake kubelet against a tiny in-test device plugin: registration, ListAndWatch, the calls it
// passes through, refusals the kubelet makes, and restarts that delete every socket.
#include "test/fakes/fake_kubelet.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace vfio_gpu::fakes {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr milliseconds kWait{5000};
constexpr char kResource[] = "vfio-gpu.test/gpu";

v1beta1::Device MakeDevice(const std::string& id, const std::string& health, int numa = -1) {
  v1beta1::Device device;
  device.set_id(id);
  device.set_health(health);
  if (numa >= 0) device.mutable_topology()->add_nodes()->set_id(numa);
  return device;
}

std::vector<std::string> Ids(const DeviceList& devices) {
  std::vector<std::string> ids;
  for (const auto& d : devices) ids.push_back(d.id());
  return ids;
}

bool IsSocket(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// A device plugin just big enough to drive the fake: serves DevicePlugin on a socket, streams
// whatever SetDevices() says, answers Allocate for known IDs with CDI names.
class TinyPlugin final : public v1beta1::DevicePlugin::Service {
 public:
  explicit TinyPlugin(std::string socket_path) : socket_path_(std::move(socket_path)) {}
  ~TinyPlugin() override { Stop(); }

  bool Start() {
    {
      std::lock_guard lock(mu_);
      stopping_ = false;
    }
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket_path_, grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    return server_ != nullptr;
  }

  void Stop() {
    if (!server_) return;
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    server_->Shutdown();
    server_->Wait();
    server_.reset();
  }

  void SetDevices(DeviceList devices) {
    {
      std::lock_guard lock(mu_);
      devices_ = std::move(devices);
      ++version_;
    }
    cv_.notify_all();
  }

  // Ends every ListAndWatch stream (as a plugin does when it shuts a resource down).
  void EndStreams() {
    {
      std::lock_guard lock(mu_);
      end_streams_ = true;
    }
    cv_.notify_all();
  }

  bool WaitForActiveStreams(int count) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kWait, [&] { return active_streams_ == count; });
  }

  v1beta1::PreferredAllocationRequest last_preferred_request() {
    std::lock_guard lock(mu_);
    return last_preferred_;
  }
  std::vector<std::string> prestarted() {
    std::lock_guard lock(mu_);
    return prestarted_;
  }

  grpc::Status GetDevicePluginOptions(grpc::ServerContext* /*context*/,
                                      const v1beta1::Empty* /*request*/,
                                      v1beta1::DevicePluginOptions* response) override {
    response->set_pre_start_required(true);
    response->set_get_preferred_allocation_available(true);
    return grpc::Status::OK;
  }

  grpc::Status ListAndWatch(grpc::ServerContext* /*context*/, const v1beta1::Empty* /*request*/,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override {
    std::unique_lock lock(mu_);
    ++active_streams_;
    cv_.notify_all();
    int sent = -1;
    grpc::Status result = grpc::Status::OK;
    while (!stopping_ && !end_streams_) {
      if (sent == version_) {
        cv_.wait(lock);
        continue;
      }
      v1beta1::ListAndWatchResponse response;
      for (const auto& d : devices_) *response.add_devices() = d;
      sent = version_;
      lock.unlock();
      const bool written = writer->Write(response);
      lock.lock();
      if (!written) {  // the kubelet went away
        result = grpc::Status(grpc::StatusCode::CANCELLED, "stream closed");
        break;
      }
    }
    --active_streams_;
    cv_.notify_all();
    return result;
  }

  grpc::Status GetPreferredAllocation(grpc::ServerContext* /*context*/,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* response) override {
    std::lock_guard lock(mu_);
    last_preferred_ = *request;
    for (const auto& container : request->container_requests()) {
      auto* out = response->add_container_responses();
      for (const auto& id : container.must_include_deviceids()) out->add_deviceids(id);
      for (const auto& id : container.available_deviceids()) {
        if (out->deviceids_size() >= container.allocation_size()) break;
        if (std::find(out->deviceids().begin(), out->deviceids().end(), id) ==
            out->deviceids().end()) {
          out->add_deviceids(id);
        }
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status Allocate(grpc::ServerContext* /*context*/, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override {
    std::lock_guard lock(mu_);
    for (const auto& container : request->container_requests()) {
      auto* out = response->add_container_responses();
      for (const auto& id : container.devices_ids()) {
        const bool known = std::any_of(devices_.begin(), devices_.end(),
                                       [&](const v1beta1::Device& d) { return d.id() == id; });
        if (!known) {
          return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "unknown device IDs: " + id);
        }
        out->add_cdi_devices()->set_name(std::string(kResource) + "=" + id);
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status PreStartContainer(grpc::ServerContext* /*context*/,
                                 const v1beta1::PreStartContainerRequest* request,
                                 v1beta1::PreStartContainerResponse* /*response*/) override {
    std::lock_guard lock(mu_);
    prestarted_.assign(request->devices_ids().begin(), request->devices_ids().end());
    return grpc::Status::OK;
  }

 private:
  const std::string socket_path_;
  std::unique_ptr<grpc::Server> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  DeviceList devices_;
  int version_ = 0;
  bool stopping_ = false;
  bool end_streams_ = false;
  int active_streams_ = 0;
  v1beta1::PreferredAllocationRequest last_preferred_;
  std::vector<std::string> prestarted_;
};

class FakeKubeletTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vfio-gpu-fk-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  static v1beta1::RegisterRequest Request(const std::string& endpoint,
                                          const std::string& version = "v1beta1",
                                          const std::string& resource = kResource) {
    v1beta1::RegisterRequest request;
    request.set_version(version);
    request.set_endpoint(endpoint);
    request.set_resource_name(resource);
    request.mutable_options()->set_pre_start_required(true);
    request.mutable_options()->set_get_preferred_allocation_available(true);
    return request;
  }

  // What a plugin does to register: call Registration.Register on kubelet.sock.
  grpc::Status Register(const v1beta1::RegisterRequest& request) {
    auto channel =
        grpc::CreateChannel("unix:" + Path("kubelet.sock"), grpc::InsecureChannelCredentials());
    auto stub = v1beta1::Registration::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kWait);
    v1beta1::Empty empty;
    return stub->Register(&context, request, &empty);
  }

  std::string dir_;
};

TEST_F(FakeKubeletTest, RegistersPluginAndFollowsItsDeviceList) {
  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.Start().ok());
  EXPECT_TRUE(IsSocket(kubelet.socket_path()));

  TinyPlugin plugin(Path("gpu.sock"));
  plugin.SetDevices(
      {MakeDevice("0000:17:00.0", "Healthy", 0), MakeDevice("0000:65:00.0", "Healthy")});
  ASSERT_TRUE(plugin.Start());
  ASSERT_TRUE(Register(Request("gpu.sock")).ok());

  std::optional<v1beta1::RegisterRequest> registered =
      kubelet.WaitForRegistration(kResource, kWait);
  ASSERT_TRUE(registered.has_value());
  EXPECT_EQ(registered->endpoint(), "gpu.sock");
  EXPECT_EQ(registered->version(), "v1beta1");
  EXPECT_TRUE(registered->options().pre_start_required());
  EXPECT_EQ(kubelet.RegistrationCount(kResource), 1);
  EXPECT_EQ(kubelet.TotalRegistrationCount(), 1);
  EXPECT_THAT(kubelet.Resources(), ElementsAre(kResource));
  std::optional<v1beta1::DevicePluginOptions> options = kubelet.PluginOptions(kResource);
  ASSERT_TRUE(options.has_value());
  EXPECT_TRUE(options->get_preferred_allocation_available());

  std::optional<DeviceList> devices = kubelet.WaitForDevices(
      kResource, [](const DeviceList& d) { return d.size() == 2; }, kWait);
  ASSERT_TRUE(devices.has_value());
  EXPECT_THAT(Ids(*devices), ElementsAre("0000:17:00.0", "0000:65:00.0"));
  ASSERT_EQ((*devices)[0].topology().nodes_size(), 1);
  EXPECT_EQ((*devices)[0].topology().nodes(0).id(), 0);
  EXPECT_FALSE((*devices)[1].has_topology());

  plugin.SetDevices({MakeDevice("0000:17:00.0", "Unhealthy", 0)});
  devices = kubelet.WaitForDevices(
      kResource, [](const DeviceList& d) { return d.size() == 1 && d[0].health() == "Unhealthy"; },
      kWait);
  ASSERT_TRUE(devices.has_value());
  EXPECT_GE(kubelet.ListAndWatchUpdates(kResource), 2);
}

TEST_F(FakeKubeletTest, WaitForDevicesTimesOutWhenPredicateNeverHolds) {
  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.Start().ok());
  TinyPlugin plugin(Path("gpu.sock"));
  plugin.SetDevices({MakeDevice("a", "Healthy")});
  ASSERT_TRUE(plugin.Start());
  ASSERT_TRUE(Register(Request("gpu.sock")).ok());
  EXPECT_FALSE(kubelet
                   .WaitForDevices(
                       kResource, [](const DeviceList& d) { return d.empty(); }, milliseconds(100))
                   .has_value());
  EXPECT_FALSE(kubelet.WaitForRegistration("other.test/gpu", milliseconds(50)).has_value());
}

TEST_F(FakeKubeletTest, RefusesUnsupportedVersionLikeTheKubelet) {
  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.Start().ok());
  TinyPlugin plugin(Path("gpu.sock"));
  ASSERT_TRUE(plugin.Start());

  grpc::Status status = Register(Request("gpu.sock", "v1alpha"));
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.error_message(), HasSubstr("\"v1alpha\" is not supported by kubelet"));
  EXPECT_EQ(kubelet.RejectedRegistrationCount(), 1);
  EXPECT_EQ(kubelet.RegistrationCount(kResource), 0);
  EXPECT_TRUE(kubelet.Resources().empty());
}

TEST_F(FakeKubeletTest, RefusesResourceNameWithoutDomain) {
  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.Start().ok());
  TinyPlugin plugin(Path("gpu.sock"));
  ASSERT_TRUE(plugin.Start());

  for (const char* name : {"gpu", "/gpu", "vendor.test/", "kubernetes.io/gpu"}) {
    grpc::Status status = Register(Request("gpu.sock", "v1beta1", name));
    EXPECT_FALSE(status.ok()) << name;
    EXPECT_THAT(status.error_message(), HasSubstr("is invalid")) << name;
  }
  EXPECT_EQ(kubelet.RejectedRegistrationCount(), 4);
}

TEST_F(FakeKubeletTest, RegisterFailsWhenPluginIsNotServing) {
  FakeKubelet::Options options;
  options.plugin_dial_timeout = milliseconds(200);
  FakeKubelet kubelet(dir_, options);
  ASSERT_TRUE(kubelet.Start().ok());

  grpc::Status status = Register(Request("absent.sock"));
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.error_message(), HasSubstr("absent.sock"));
  EXPECT_EQ(kubelet.RegistrationCount(kResource), 0);
}

TEST_F(FakeKubeletTest, PassesCallsThroughToThePlugin) {
  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.Start().ok());
  TinyPlugin plugin(Path("gpu.sock"));
  plugin.SetDevices(
      {MakeDevice("g0", "Healthy"), MakeDevice("g1", "Healthy"), MakeDevice("g2", "Healthy")});
  ASSERT_TRUE(plugin.Start());
  ASSERT_TRUE(Register(Request("gpu.sock")).ok());
  ASSERT_TRUE(kubelet.WaitForRegistration(kResource, kWait).has_value());

  v1beta1::AllocateResponse allocated;
  ASSERT_TRUE(kubelet.Allocate(kResource, {"g1"}, &allocated).ok());
  ASSERT_EQ(allocated.container_responses_size(), 1);
  ASSERT_EQ(allocated.container_responses(0).cdi_devices_size(), 1);
  EXPECT_EQ(allocated.container_responses(0).cdi_devices(0).name(), "vfio-gpu.test/gpu=g1");

  v1beta1::AllocateResponse refused;
  grpc::Status status = kubelet.Allocate(kResource, {"nope"}, &refused);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("nope"));

  v1beta1::PreferredAllocationResponse preferred;
  ASSERT_TRUE(
      kubelet.GetPreferredAllocation(kResource, {"g0", "g1", "g2"}, {"g2"}, 2, &preferred).ok());
  ASSERT_EQ(preferred.container_responses_size(), 1);
  EXPECT_THAT(preferred.container_responses(0).deviceids(), ElementsAre("g2", "g0"));
  const v1beta1::PreferredAllocationRequest seen = plugin.last_preferred_request();
  ASSERT_EQ(seen.container_requests_size(), 1);
  EXPECT_THAT(seen.container_requests(0).must_include_deviceids(), ElementsAre("g2"));
  EXPECT_EQ(seen.container_requests(0).allocation_size(), 2);

  v1beta1::PreStartContainerResponse prestart;
  ASSERT_TRUE(kubelet.PreStartContainer(kResource, {"g0", "g2"}, &prestart).ok());
  EXPECT_THAT(plugin.prestarted(), ElementsAre("g0", "g2"));

  status = kubelet.Allocate("other.test/gpu", {"g0"}, &allocated);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(FakeKubeletTest, RestartDeletesEverySocketAndForgetsPlugins) {
  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.Start().ok());
  auto plugin = std::make_unique<TinyPlugin>(Path("gpu.sock"));
  plugin->SetDevices({MakeDevice("g0", "Healthy")});
  ASSERT_TRUE(plugin->Start());
  ASSERT_TRUE(Register(Request("gpu.sock")).ok());
  ASSERT_TRUE(kubelet.WaitForDevices(
      kResource, [](const DeviceList& d) { return !d.empty(); }, kWait));
  ASSERT_TRUE(plugin->WaitForActiveStreams(1));
  std::ofstream(Path("kubelet_internal_checkpoint")) << "{}";

  ASSERT_TRUE(kubelet.Restart().ok());
  EXPECT_FALSE(std::filesystem::exists(Path("gpu.sock")));
  EXPECT_TRUE(IsSocket(kubelet.socket_path()));
  EXPECT_TRUE(std::filesystem::exists(Path("kubelet_internal_checkpoint")));
  EXPECT_TRUE(kubelet.Resources().empty());
  EXPECT_FALSE(kubelet.Devices(kResource).has_value());
  // The old stream was cancelled: the plugin's next write fails and its handler returns.
  plugin->SetDevices({MakeDevice("g0", "Healthy"), MakeDevice("g1", "Healthy")});
  EXPECT_TRUE(plugin->WaitForActiveStreams(0));

  // The plugin notices, serves a fresh socket and registers again.
  plugin->Stop();
  plugin = std::make_unique<TinyPlugin>(Path("gpu.sock"));
  plugin->SetDevices({MakeDevice("g0", "Healthy"), MakeDevice("g1", "Healthy")});
  ASSERT_TRUE(plugin->Start());
  ASSERT_TRUE(Register(Request("gpu.sock")).ok());
  EXPECT_TRUE(kubelet.WaitForRegistrationCount(kResource, 2, kWait));
  std::optional<DeviceList> devices = kubelet.WaitForDevices(
      kResource, [](const DeviceList& d) { return d.size() == 2; }, kWait);
  ASSERT_TRUE(devices.has_value());
  EXPECT_EQ(kubelet.RegistrationCount(kResource), 2);
}

TEST_F(FakeKubeletTest, StartDeletesStaleSocketsButNotOtherFiles) {
  const std::string stale = Path("stale.sock");
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", stale.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);
  ASSERT_TRUE(IsSocket(stale));
  std::ofstream(Path("notes.txt")) << "keep";

  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.Start().ok());
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(Path("notes.txt")));
}

TEST_F(FakeKubeletTest, NewRegistrationReplacesTheEndpoint) {
  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.Start().ok());
  TinyPlugin first(Path("a.sock"));
  first.SetDevices({MakeDevice("old", "Healthy")});
  ASSERT_TRUE(first.Start());
  ASSERT_TRUE(Register(Request("a.sock")).ok());
  ASSERT_TRUE(first.WaitForActiveStreams(1));

  TinyPlugin second(Path("b.sock"));
  second.SetDevices({MakeDevice("new", "Healthy")});
  ASSERT_TRUE(second.Start());
  ASSERT_TRUE(Register(Request("b.sock")).ok());
  EXPECT_EQ(kubelet.RegistrationCount(kResource), 2);
  std::optional<DeviceList> devices = kubelet.WaitForDevices(
      kResource, [](const DeviceList& d) { return d.size() == 1 && d[0].id() == "new"; }, kWait);
  ASSERT_TRUE(devices.has_value());
  EXPECT_EQ(kubelet.WaitForRegistration(kResource, kWait)->endpoint(), "b.sock");
  first.SetDevices({});
  EXPECT_TRUE(first.WaitForActiveStreams(0));
}

TEST_F(FakeKubeletTest, SeesThePluginEndItsStream) {
  FakeKubelet kubelet(dir_);
  ASSERT_TRUE(kubelet.Start().ok());
  TinyPlugin plugin(Path("gpu.sock"));
  plugin.SetDevices({MakeDevice("g0", "Healthy")});
  ASSERT_TRUE(plugin.Start());
  ASSERT_TRUE(Register(Request("gpu.sock")).ok());
  ASSERT_TRUE(kubelet.WaitForDevices(
      kResource, [](const DeviceList& d) { return !d.empty(); }, kWait));
  plugin.EndStreams();
  EXPECT_TRUE(kubelet.WaitForStreamEnd(kResource, kWait));
  // The last list stays readable.
  EXPECT_THAT(Ids(*kubelet.Devices(kResource)), ElementsAre("g0"));
}

TEST_F(FakeKubeletTest, StopsCleanlyWhileStreamsAreOpen) {
  auto kubelet = std::make_unique<FakeKubelet>(dir_);
  ASSERT_TRUE(kubelet->Start().ok());
  TinyPlugin plugin(Path("gpu.sock"));
  plugin.SetDevices({MakeDevice("g0", "Healthy")});
  ASSERT_TRUE(plugin.Start());
  ASSERT_TRUE(Register(Request("gpu.sock")).ok());
  ASSERT_TRUE(plugin.WaitForActiveStreams(1));
  kubelet->Stop();
  kubelet->Stop();  // idempotent
  EXPECT_TRUE(kubelet->Resources().empty());
  // Registering with a stopped kubelet fails instead of hanging.
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + milliseconds(300));
  auto stub = v1beta1::Registration::NewStub(
      grpc::CreateChannel("unix:" + Path("kubelet.sock"), grpc::InsecureChannelCredentials()));
  v1beta1::Empty empty;
  EXPECT_FALSE(stub->Register(&context, Request("gpu.sock"), &empty).ok());
  kubelet.reset();
}

}  // namespace
}  // namespace vfio_gpu::fakes
