#include <gtest/gtest.h>

#include "shim-hooks/pod_allocation.h"
#include "shim-hooks/pod_resources_client.h"
#include "test/fakes/fake_pod_resources.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu {
namespace {

TEST(PodResources, GetThroughTheHelperFiltersGovernedResources) {
  testing::TempDir t;
  fakes::FakePodResources kubelet(t.path() + "/pod-resources/kubelet.sock");
  ASSERT_TRUE(kubelet.Start().ok());
  kubelet.AddPod({"train-0",
                  "tenant-a",
                  {{"trainer",
                    {{"nvidia.com/pgpu", {"0000:17:00.0", "0000:31:00.0"}, {}},
                     {"example.com/nic", {"vf1"}, {}}}}}});
  ShimConfig cfg;
  cfg.pod_resources_socket = kubelet.socket_path();
  cfg.pod_resources_client = PODRES_CLIENT;
  auto a = QueryPodAllocation(cfg, "tenant-a", "train-0");
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_TRUE(a->found);
  EXPECT_EQ(a->method, "Get");
  EXPECT_EQ(a->units, (std::set<std::string>{"0000:17:00.0", "0000:31:00.0"}));
  auto none = QueryPodAllocation(cfg, "tenant-a", "other");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->found);  // Get said NOT_FOUND, List does not know it either
  EXPECT_GE(kubelet.CallCount("List"), 1);
  kubelet.Stop();
  auto down = QueryPodAllocation(cfg, "tenant-a", "train-0");
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().kind(), ErrorKind::kTransient);
}

// Kubelets before 1.34 answer Get with an error unless a feature gate is on, and older ones don't
// have it at all: the pod's allocation then comes from List, found by namespace and name.
TEST(PodResources, ListFindsThePodWhenGetIsDisabledOrMissing) {
  testing::TempDir t;
  fakes::FakePodResources kubelet(t.path() + "/pod-resources/kubelet.sock");
  ASSERT_TRUE(kubelet.Start().ok());
  kubelet.SetPods({{"other", "tenant-a", {{"c", {{"nvidia.com/pgpu", {"0000:31:00.0"}, {}}}}}},
                   {"train-0", "tenant-b", {{"c", {{"nvidia.com/pgpu", {"0000:b1:00.0"}, {}}}}}},
                   {"train-0", "tenant-a", {{"c", {{"nvidia.com/pgpu", {"0000:17:00.0"}, {}}}}}}});
  ShimConfig cfg;
  cfg.pod_resources_socket = kubelet.socket_path();
  cfg.pod_resources_client = PODRES_CLIENT;
  for (auto mode : {fakes::FakePodResources::GetMode::kGateOff,
                    fakes::FakePodResources::GetMode::kUnimplemented}) {
    kubelet.SetGetMode(mode);
    int lists = kubelet.CallCount("List");
    auto a = QueryPodAllocation(cfg, "tenant-a", "train-0");
    ASSERT_TRUE(a.ok()) << a.error().message();
    EXPECT_TRUE(a->found);
    EXPECT_EQ(a->method, "List");
    EXPECT_EQ(a->units, std::set<std::string>{"0000:17:00.0"});  // this namespace's pod only
    EXPECT_EQ(kubelet.CallCount("List"), lists + 1);
  }
}

}  // namespace
}  // namespace vfio_gpu
