#include "plugin/allocate.h"

#include <gtest/gtest.h>

#include <cctype>

namespace vfio_gpu::plugin {
namespace {

ResourceDevices Devices() {
  ResourceDevices r;
  auto add = [&](const std::string& id, int group, bool healthy, std::vector<std::string> gpus) {
    DeviceInfo d;
    d.id = id;
    d.resource = "nvidia.com/pgpu";
    d.iommu_group = group;
    d.healthy = healthy;
    d.reason =
        healthy ? "" : "IOMMU group 31 is not viable: 0000:31:00.1 is bound to snd_hda_intel";
    d.gpus = std::move(gpus);
    r[id] = d;
  };
  add("0000:17:00.0", 25, true, {"0000:17:00.0"});
  add("0000:31:00.0", 31, false, {"0000:31:00.0"});
  add("0000:b1:00.0", 182, true, {"0000:b1:00.0", "0000:b2:00.0"});
  return r;
}

TEST(Allocate, DefaultIsCdiDevicesOnly) {
  auto r =
      BuildContainerResponse("nvidia.com/pgpu", Devices(), {"0000:b1:00.0", "0000:17:00.0"}, {});
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->cdi_devices_size(), 2);
  EXPECT_EQ(r->cdi_devices(0).name(), "nvidia.com/pgpu=0000:17:00.0");
  EXPECT_EQ(r->cdi_devices(1).name(), "nvidia.com/pgpu=0000:b1:00.0");
  // One injection path: nothing else the runtime could attach a second time.
  EXPECT_EQ(r->devices_size(), 0);
  EXPECT_EQ(r->annotations_size(), 0);
  EXPECT_EQ(r->envs_size(), 0);
  EXPECT_EQ(r->mounts_size(), 0);
}

TEST(Allocate, CdiAnnotationsFollowTheCdiKeyRules) {
  AllocateOptions o;
  o.strategy = AllocateStrategy::kCdiAnnotations;
  auto r =
      BuildContainerResponse("nvidia.com/pgpu", Devices(), {"0000:17:00.0", "0000:b1:00.0"}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cdi_devices_size(), 0);
  ASSERT_EQ(r->annotations_size(), 1);
  const auto& [key, value] = *r->annotations().begin();
  EXPECT_EQ(value, "nvidia.com/pgpu=0000:17:00.0,nvidia.com/pgpu=0000:b1:00.0");
  ASSERT_EQ(key.rfind("cdi.k8s.io/", 0), 0u);
  std::string name = key.substr(11);
  EXPECT_LE(name.size(), 63u);
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  ASSERT_GE(name.size(), 2u);
  EXPECT_TRUE(alnum(name.front()) && alnum(name.back())) << name;
  for (char c : name) EXPECT_TRUE(alnum(c) || c == '_' || c == '.' || c == '-') << name;
  // Different resources (or device sets) in one container never share a key.
  EXPECT_NE(CdiAnnotationKey("nvidia.com/pgpu", {"0000:17:00.0"}),
            CdiAnnotationKey("nvidia.com/nvswitch", {"0000:17:00.0"}));
  EXPECT_NE(CdiAnnotationKey("nvidia.com/pgpu", {"0000:17:00.0"}),
            CdiAnnotationKey("nvidia.com/pgpu", {"0000:b1:00.0"}));
  std::string long_key = CdiAnnotationKey(std::string(100, 'a') + ".com/x", {"1"});
  EXPECT_LE(long_key.size() - 11, 63u);
}

TEST(Allocate, DeviceSpecsUseTheRealDevPaths) {
  AllocateOptions o;
  o.strategy = AllocateStrategy::kDeviceSpecs;
  auto r =
      BuildContainerResponse("nvidia.com/pgpu", Devices(), {"0000:17:00.0", "0000:b1:00.0"}, o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->devices_size(), 3);
  EXPECT_EQ(r->devices(0).host_path(), "/dev/vfio/vfio");
  EXPECT_EQ(r->devices(1).container_path(), "/dev/vfio/25");
  EXPECT_EQ(r->devices(1).host_path(), "/dev/vfio/25");
  EXPECT_EQ(r->devices(2).host_path(), "/dev/vfio/182");
  for (const auto& d : r->devices()) EXPECT_EQ(d.permissions(), "rw");
  EXPECT_EQ(r->cdi_devices_size(), 0);
}

TEST(Allocate, KubeVirtEnvListsEveryGpuOfTheUnits) {
  AllocateOptions o;
  o.kubevirt_env = true;
  auto r =
      BuildContainerResponse("nvidia.com/pgpu", Devices(), {"0000:b1:00.0", "0000:17:00.0"}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->envs().at("PCI_RESOURCE_NVIDIA_COM_PGPU"), "0000:17:00.0,0000:b1:00.0,0000:b2:00.0");
  EXPECT_EQ(KubeVirtEnvName("nvidia.com/GA102GL_A10"), "PCI_RESOURCE_NVIDIA_COM_GA102GL_A10");
}

TEST(Allocate, UnknownIdsAreInvalidArgumentNamingThem) {
  auto r = BuildContainerResponse("nvidia.com/pgpu", Devices(),
                                  {"0000:17:00.0", "0000:99:00.0", "gpu-7"}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kNotFound);
  EXPECT_NE(r.error().message().find("0000:99:00.0"), std::string::npos);
  EXPECT_NE(r.error().message().find("gpu-7"), std::string::npos);
}

TEST(Allocate, UnhealthyIsFailedPreconditionWithTheReason) {
  auto r = BuildContainerResponse("nvidia.com/pgpu", Devices(), {"0000:31:00.0"}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kTransient);
  EXPECT_NE(r.error().message().find("snd_hda_intel"), std::string::npos);
}

TEST(Allocate, EveryContainerGetsItsOwnAnswer) {
  v1beta1::AllocateRequest req;
  req.add_container_requests()->add_devices_ids("0000:17:00.0");
  req.add_container_requests()->add_devices_ids("0000:b1:00.0");
  auto r = BuildAllocateResponse("nvidia.com/pgpu", Devices(), req, {});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->container_responses_size(), 2);
  EXPECT_EQ(r->container_responses(1).cdi_devices(0).name(), "nvidia.com/pgpu=0000:b1:00.0");
}

}  // namespace
}  // namespace vfio_gpu::plugin
