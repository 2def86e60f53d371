#include <gtest/gtest.h>

#include "cdi/registry.h"
#include "shim-hooks/shim_config.h"
#include "shim-hooks/wrapper.h"

namespace vfio_gpu {
namespace {

TEST(ShimConfig, DefaultsAndKeys) {
  auto c = ShimConfigFromJson("{}", "shim.json");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->downstream_shim, "containerd-shim-kata-v2");
  EXPECT_EQ(c->run_dir, "/run/vfio-gpu");
  EXPECT_EQ(c->LogPath(), "/run/vfio-gpu/shim.log");
  EXPECT_EQ(c->resources, (std::vector<std::string>{"nvidia.com/pgpu", "nvidia.com/nvswitch"}));
  EXPECT_EQ(c->authorize, AuthorizeMode::kEnforce);
  EXPECT_EQ(c->cold_plug_form, ColdPlugForm::kCdiAnnotations);
  auto dev = ShimConfigFromJson(R"({"cold_plug_form":"linux-devices"})", "shim.json");
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(dev->cold_plug_form, ColdPlugForm::kLinuxDevices);
  EXPECT_EQ(ColdPlugFormName(dev->cold_plug_form), "linux-devices");
  auto shipped = ShimConfigFromJson(R"({"downstream_shim":"/opt/kata/bin/containerd-shim-kata-v2",
    "sysfs_root":"/sys","dev_root":"/dev","run_dir":"/run/vfio-gpu",
    "pod_resources_socket":"/var/lib/kubelet/pod-resources/kubelet.sock",
    "resources":["nvidia.com/pgpu","nvidia.com/nvswitch"],"authorize":"warn","annotation_policy":"deny",
    "kata_annotation_allowlist":["default_memory"],"kata_pod_resources":false,"syslog":true})",
                                    "shim.json");
  ASSERT_TRUE(shipped.ok()) << shipped.error().message();
  EXPECT_EQ(shipped->authorize, AuthorizeMode::kWarn);
}

TEST(ShimConfig, UnknownKeysAndBadValuesNameTheKey) {
  auto u = ShimConfigFromJson(R"({"authorise":"off"})", "shim.json");
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.error().message().find("\"authorise\""), std::string::npos);
  auto b = ShimConfigFromJson(R"({"authorize":"maybe"})", "shim.json");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message().find("\"authorize\""), std::string::npos);
  EXPECT_FALSE(ShimConfigFromJson(R"({"resources":["pgpu"]})", "s").ok());
  auto f = ShimConfigFromJson(R"({"cold_plug_form":"devices"})", "shim.json");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("\"cold_plug_form\""), std::string::npos);
  EXPECT_FALSE(ShimConfigFromJson(R"({"run_dir":"relative"})", "s").ok());
  EXPECT_TRUE(ReadShimConfig("/nonexistent/shim.json", false).ok());
  EXPECT_FALSE(ReadShimConfig("/nonexistent/shim.json", true).ok());
}

TEST(ShimArgs, ParsesContainerdArgv) {
  auto a =
      ParseShimArgs({"shim", "-namespace", "k8s.io", "-address", "/run/containerd/containerd.sock",
                     "-publish-binary", "/usr/bin/containerd", "-id", "5f1c", "-debug", "start"});
  EXPECT_EQ(a.command, "start");
  EXPECT_EQ(a.id, "5f1c");
  EXPECT_EQ(a.ns, "k8s.io");
  auto d = ParseShimArgs({"shim", "--namespace=default", "-id", "c1", "-bundle", "/b", "delete"});
  EXPECT_EQ(d.command, "delete");
  EXPECT_EQ(d.bundle, "/b");
}

TEST(CdiRegistry, ParsesQualifiedNames) {
  EXPECT_TRUE(ParseCdiName("nvidia.com/pgpu=0000:17:00.0"));
  EXPECT_TRUE(ParseCdiName("nvidia.com/pgpu=0"));
  EXPECT_FALSE(ParseCdiName("nvidia.com/pgpu"));
  EXPECT_FALSE(ParseCdiName("nvidia.com/pgpu=:x"));
  EXPECT_FALSE(ParseCdiName("1vendor/c=d"));
  EXPECT_EQ(VfioGroupOfPath("/dev/vfio/25"), 25);
  EXPECT_FALSE(VfioGroupOfPath("/dev/vfio/vfio"));
}

}  // namespace
}  // namespace vfio_gpu
