#include <gtest/gtest.h>

#include "cdi/registry.h"
#include "common/files.h"
#include "hostmodel/published_selection.h"
#include "shim-hooks/shim_config.h"
#include "shim-hooks/wrapper.h"
#include "test/support/temp_dir.h"

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
  // Paths the shim opens must be absolute (a shim's working directory is the bundle) and given.
  for (const char* bad : {R"({"kata_config_path":"kata.toml"})", R"({"runtime_switch_config":""})",
                          R"({"cdi_dirs":["cdi"]})", R"({"cdi_dirs":[]})",
                          R"({"pod_resources_client":"podres"})", R"({"node_config":"c.json"})"}) {
    auto r = ShimConfigFromJson(bad, "shim.json");
    ASSERT_FALSE(r.ok()) << bad;
    std::string key = std::string(bad).substr(2, std::string(bad).find('"', 2) - 2);
    EXPECT_NE(r.error().message().find("\"" + key + "\""), std::string::npos)
        << bad << " -> " << r.error().message();
  }
  auto defaults = ReadShimConfig("/nonexistent/shim.json", false);
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->selection_source, "built-in");
  EXPECT_FALSE(ReadShimConfig("/nonexistent/shim.json", true).ok());
}

// The plugin publishes its selection and resource names under the run dir; the shim scans with
// that selection and governs those names too, so per-model naming needs no host edit.
TEST(ShimConfig, ThePluginsPublicationJoinsTheConfig) {
  testing::TempDir tmp;
  std::string run = tmp.path() + "/run";
  PublishedSelection pub;
  pub.selection.naming = ResourceNaming::kPerModel;
  pub.selection.vendors = {0x10de, 0x1234};
  pub.resources = {"nvidia.com/GA102GL_A10", "nvidia.com/nvswitch"};
  ASSERT_TRUE(WritePublishedSelection(run, pub).ok());
  ASSERT_TRUE(WriteFileAtomic(tmp.path() + "/shim.json", R"({"run_dir":")" + run + R"("})").ok());
  auto c = ReadShimConfig(tmp.path() + "/shim.json", true);
  ASSERT_TRUE(c.ok()) << c.error().message();
  ASSERT_TRUE(c->selection.has_value());
  EXPECT_EQ(c->selection->naming, ResourceNaming::kPerModel);
  EXPECT_EQ(c->selection->vendors, (std::vector<uint16_t>{0x10de, 0x1234}));
  EXPECT_TRUE(c->Governs("nvidia.com/GA102GL_A10"));
  EXPECT_TRUE(c->Governs("nvidia.com/pgpu"));  // the configured names stay
  EXPECT_EQ(c->selection_source, run + "/plugin.json");

  // Malformed: the start fails (transient) naming the file and what to do.
  ASSERT_TRUE(
      WriteFileAtomic(run + "/plugin.json", R"({"selection":{"vendors":["nvidia"]}})").ok());
  auto bad = ReadShimConfig(tmp.path() + "/shim.json", true);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind(), ErrorKind::kTransient);
  EXPECT_NE(bad.error().message().find(run + "/plugin.json"), std::string::npos)
      << bad.error().message();
  EXPECT_NE(bad.error().message().find("\"vendors\""), std::string::npos) << bad.error().message();
}

// Without the plugin (a ctr-only host), node_config names the node's config file instead.
TEST(ShimConfig, NodeConfigGivesTheSelectionWithoutThePlugin) {
  testing::TempDir tmp;
  ASSERT_TRUE(WriteFileAtomic(tmp.path() + "/config.json",
                              R"({"vendors":["0x1002"],"resource_name":"example.com/gpu"})")
                  .ok());
  ASSERT_TRUE(WriteFileAtomic(tmp.path() + "/shim.json", R"({"run_dir":")" + tmp.path() +
                                                             R"(/run","node_config":")" +
                                                             tmp.path() + R"(/config.json"})")
                  .ok());
  auto c = ReadShimConfig(tmp.path() + "/shim.json", true);
  ASSERT_TRUE(c.ok()) << c.error().message();
  ASSERT_TRUE(c->selection.has_value());
  EXPECT_EQ(c->selection->vendors, std::vector<uint16_t>{0x1002});
  EXPECT_TRUE(c->Governs("example.com/gpu"));
  ASSERT_TRUE(WriteFileAtomic(tmp.path() + "/config.json", R"({"vendor":["0x1002"]})").ok());
  auto bad = ReadShimConfig(tmp.path() + "/shim.json", true);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("node_config"), std::string::npos) << bad.error().message();
  EXPECT_NE(bad.error().message().find("\"vendor\""), std::string::npos) << bad.error().message();
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
