#include <gtest/gtest.h>

#include "hostmodel/node_config.h"
#include "hostmodel/selection.h"

namespace vfio_gpu {
namespace {

Result<NodeConfig> FromText(const std::string& text) {
  auto j = Json::Parse(text, "test.json");
  if (!j) return j.error();
  return NodeConfigFromJson(*j, "test.json");
}

TEST(NodeConfigTest, DefaultsWhenEmpty) {
  auto c = FromText("{}");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->roots.sysfs, "/sys");
  EXPECT_EQ(c->roots.dev, "/dev");
  EXPECT_EQ(c->kubelet_dir, "/var/lib/kubelet/device-plugins");
  EXPECT_EQ(c->cdi_dir, "/var/run/cdi");
  EXPECT_EQ(c->run_dir, "/run/vfio-gpu");
  EXPECT_EQ(c->metrics_address, ":9477");
  EXPECT_EQ(c->selection.vendors, std::vector<uint16_t>{0x10de});
  EXPECT_EQ(c->selection.gpu_classes, (std::vector<std::string>{"0x0300", "0x0302"}));
  EXPECT_EQ(c->allocate_strategy, AllocateStrategy::kCdi);
  EXPECT_EQ(c->reconcile_interval_seconds, 30);  // the safety-net rescan
  EXPECT_EQ(c->log_format, "text");
}

TEST(NodeConfigTest, ReadsEveryKey) {
  auto c = FromText(R"({"sysfs_root": "/host/sys", "dev_root": "/host/dev", "kubelet_dir": "/k",
    "cdi_dir": "/c", "run_dir": "/r", "metrics_address": "", "log_format": "json",
    "vendors": ["0x10de", "0x1002"], "gpu_classes": ["0x0302"], "resource_naming": "per-model",
    "resource_name": "example.com/gpu", "nvswitch_resource_name": "example.com/sw",
    "allow": ["0000:17:00.0"], "deny": ["10de:2237"], "cdi_aliases": true,
    "allocate_strategy": "device-specs", "kubevirt_env": true, "reconcile_interval_seconds": 5})");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->roots.sysfs, "/host/sys");
  EXPECT_EQ(c->metrics_address, "");
  EXPECT_EQ(c->selection.vendors, (std::vector<uint16_t>{0x10de, 0x1002}));
  EXPECT_EQ(c->selection.naming, ResourceNaming::kPerModel);
  EXPECT_TRUE(c->selection.cdi_aliases);
  EXPECT_EQ(c->allocate_strategy, AllocateStrategy::kDeviceSpecs);
  EXPECT_TRUE(c->kubevirt_env);
  EXPECT_EQ(c->reconcile_interval_seconds, 5);
}

void ExpectRefused(const std::string& text, const std::string& key) {
  auto c = FromText(text);
  ASSERT_FALSE(c.ok()) << text;
  EXPECT_NE(c.error().message().find("\"" + key + "\""), std::string::npos) << c.error().message();
  EXPECT_NE(c.error().message().find("test.json"), std::string::npos) << c.error().message();
}

TEST(NodeConfigTest, RefusesUnknownKeysAndBadValuesNamingTheKey) {
  ExpectRefused(R"({"vendor": ["0x10de"]})", "vendor");
  ExpectRefused(R"({"vendors": ["nvidia"]})", "vendors");
  ExpectRefused(R"({"vendors": []})", "vendors");
  ExpectRefused(R"({"gpu_classes": ["0x3"]})", "gpu_classes");
  ExpectRefused(R"({"resource_naming": "fancy"})", "resource_naming");
  ExpectRefused(R"({"resource_name": "pgpu"})", "resource_name");
  ExpectRefused(R"({"allow": ["gpu0"]})", "allow");
  ExpectRefused(R"({"sysfs_root": "relative"})", "sysfs_root");
  ExpectRefused(R"({"log_format": "xml"})", "log_format");
  ExpectRefused(R"({"allocate_strategy": "envvar"})", "allocate_strategy");
  ExpectRefused(R"({"reconcile_interval_seconds": 0})", "reconcile_interval_seconds");
  ExpectRefused(R"({"cdi_aliases": "yes"})", "cdi_aliases");
}

// The plugin publishes its selection for the shim: what it writes reads back to the same selection.
TEST(SelectionTest, JsonRoundTrips) {
  for (const char* text : {"{}", R"({"vendors": ["0x10de", "0x1234"], "gpu_classes": ["0x00ff00",
      "0x03"], "resource_naming": "per-model", "nvswitch_resource_name": "example.com/sw",
      "allow": ["0000:17:00.0", "10de:2236"], "deny": ["10de:2330"], "cdi_aliases": true})",
                           R"({"resource_name": "vfio-gpu.io/pgpu"})"}) {
    auto in = Json::Parse(text, "in");
    ASSERT_TRUE(in.ok());
    StrictObject o(*in, "in");
    auto a = ReadSelection(o);
    ASSERT_TRUE(a.ok() && o.Finish().ok()) << text;
    StrictObject back(SelectionToJson(*a), "out");
    auto b = ReadSelection(back);
    ASSERT_TRUE(b.ok()) << text;
    EXPECT_TRUE(back.Finish().ok()) << SelectionToJson(*a).Dump();
    EXPECT_EQ(a->vendors, b->vendors) << text;
    EXPECT_EQ(a->gpu_classes, b->gpu_classes);
    EXPECT_EQ(a->naming, b->naming);
    EXPECT_EQ(a->resource_name, b->resource_name);
    EXPECT_EQ(a->nvswitch_resource_name, b->nvswitch_resource_name);
    EXPECT_EQ(a->allow, b->allow);
    EXPECT_EQ(a->deny, b->deny);
    EXPECT_EQ(a->cdi_aliases, b->cdi_aliases);
  }
}

TEST(NodeConfigTest, MalformedJsonNamesTheFile) {
  auto c = FromText("{\"vendors\": [");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message().find("test.json"), std::string::npos);
  auto missing = ReadNodeConfig("/nonexistent/vfio-gpu.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("/nonexistent/vfio-gpu.json"), std::string::npos);
}

}  // namespace
}  // namespace vfio_gpu
