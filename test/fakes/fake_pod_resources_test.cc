// The fake pod resources server, asked the way Kata asks it: List, GetAllocatableResources, Get.
#include "test/fakes/fake_pod_resources.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace vfio_gpu::fakes {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class FakePodResourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vfio-gpu-pr-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    socket_ = dir_ + "/pod-resources/kubelet.sock";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<v1::PodResourcesLister::Stub> Client() const {
    return v1::PodResourcesLister::NewStub(
        grpc::CreateChannel("unix:" + socket_, grpc::InsecureChannelCredentials()));
  }
  static void Bound(grpc::ClientContext* context) {
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  }

  static FakePod GpuPod() {
    return FakePod{.name = "trainer-0",
                   .ns = "tenant-a",
                   .containers = {{.name = "main",
                                   .devices = {{.resource_name = "nvidia.com/pgpu",
                                                .device_ids = {"0000:17:00.0", "0000:65:00.0"},
                                                .numa_nodes = {0}}}},
                                  {.name = "sidecar", .devices = {}}}};
  }

  std::string dir_;
  std::string socket_;
};

TEST_F(FakePodResourcesTest, GetAnswersAKnownPod) {
  FakePodResources server(socket_);
  ASSERT_TRUE(server.Start().ok());
  server.SetPods({GpuPod()});

  auto client = Client();
  grpc::ClientContext context;
  Bound(&context);
  v1::GetPodResourcesRequest request;
  request.set_pod_name("trainer-0");
  request.set_pod_namespace("tenant-a");
  v1::GetPodResourcesResponse response;
  ASSERT_TRUE(client->Get(&context, request, &response).ok());

  const v1::PodResources& pod = response.pod_resources();
  EXPECT_EQ(pod.name(), "trainer-0");
  EXPECT_EQ(pod.namespace_(), "tenant-a");
  ASSERT_EQ(pod.containers_size(), 2);
  EXPECT_EQ(pod.containers(0).name(), "main");
  ASSERT_EQ(pod.containers(0).devices_size(), 1);
  const v1::ContainerDevices& devices = pod.containers(0).devices(0);
  EXPECT_EQ(devices.resource_name(), "nvidia.com/pgpu");
  EXPECT_THAT(devices.device_ids(), ElementsAre("0000:17:00.0", "0000:65:00.0"));
  ASSERT_EQ(devices.topology().nodes_size(), 1);
  EXPECT_EQ(devices.topology().nodes(0).id(), 0);
  EXPECT_EQ(pod.containers(1).devices_size(), 0);
  EXPECT_EQ(server.CallCount("Get"), 1);
}

TEST_F(FakePodResourcesTest, GetOfAnUnknownPodIsNotFound) {
  FakePodResources server(socket_);
  ASSERT_TRUE(server.Start().ok());
  server.SetPods({GpuPod()});

  auto client = Client();
  grpc::ClientContext context;
  Bound(&context);
  v1::GetPodResourcesRequest request;
  request.set_pod_name("trainer-0");
  request.set_pod_namespace("tenant-b");  // right name, wrong namespace
  v1::GetPodResourcesResponse response;
  grpc::Status status = client->Get(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("pod trainer-0 in namespace tenant-b not found"));
}

TEST_F(FakePodResourcesTest, ListAndAllocatableFollowWhatTheTestSet) {
  FakePodResources server(socket_);
  ASSERT_TRUE(server.Start().ok());
  FakePod other{.name = "web", .ns = "tenant-b", .containers = {{.name = "c", .devices = {}}}};
  server.SetPods({GpuPod()});
  server.AddPod(other);
  server.SetAllocatable(
      {{.resource_name = "nvidia.com/pgpu", .device_ids = {"0000:17:00.0"}, .numa_nodes = {}}});

  auto client = Client();
  {
    grpc::ClientContext context;
    Bound(&context);
    v1::ListPodResourcesResponse response;
    ASSERT_TRUE(client->List(&context, v1::ListPodResourcesRequest(), &response).ok());
    ASSERT_EQ(response.pod_resources_size(), 2);
    EXPECT_EQ(response.pod_resources(0).name(), "trainer-0");
    EXPECT_EQ(response.pod_resources(1).name(), "web");
  }
  {
    grpc::ClientContext context;
    Bound(&context);
    v1::AllocatableResourcesResponse response;
    ASSERT_TRUE(
        client->GetAllocatableResources(&context, v1::AllocatableResourcesRequest(), &response)
            .ok());
    ASSERT_EQ(response.devices_size(), 1);
    EXPECT_EQ(response.devices(0).resource_name(), "nvidia.com/pgpu");
    EXPECT_FALSE(response.devices(0).has_topology());
  }
  EXPECT_TRUE(server.RemovePod("tenant-a", "trainer-0"));
  EXPECT_FALSE(server.RemovePod("tenant-a", "trainer-0"));
  {
    grpc::ClientContext context;
    Bound(&context);
    v1::ListPodResourcesResponse response;
    ASSERT_TRUE(client->List(&context, v1::ListPodResourcesRequest(), &response).ok());
    ASSERT_EQ(response.pod_resources_size(), 1);
    EXPECT_EQ(response.pod_resources(0).namespace_(), "tenant-b");
  }
  EXPECT_EQ(server.CallCount("List"), 2);
  EXPECT_EQ(server.CallCount("GetAllocatableResources"), 1);
}

TEST_F(FakePodResourcesTest, StopRemovesTheSocketAndStartServesAgain) {
  FakePodResources server(socket_);
  ASSERT_TRUE(server.Start().ok());
  server.Stop();
  server.Stop();
  EXPECT_FALSE(std::filesystem::exists(socket_));
  ASSERT_TRUE(server.Start().ok());
  auto client = Client();
  grpc::ClientContext context;
  Bound(&context);
  v1::ListPodResourcesResponse response;
  EXPECT_TRUE(client->List(&context, v1::ListPodResourcesRequest(), &response).ok());
}

TEST(FakePodResourcesProto, ToProtoCarriesEveryField) {
  const v1::ContainerDevices d = ToProto(
      FakeDevices{.resource_name = "r.test/x", .device_ids = {"a", "b"}, .numa_nodes = {1, 3}});
  EXPECT_EQ(d.resource_name(), "r.test/x");
  EXPECT_THAT(d.device_ids(), ElementsAre("a", "b"));
  ASSERT_EQ(d.topology().nodes_size(), 2);
  EXPECT_EQ(d.topology().nodes(1).id(), 3);
}

}  // namespace
}  // namespace vfio_gpu::fakes
