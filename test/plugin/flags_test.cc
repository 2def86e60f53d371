#include "plugin/flags.h"

#include <gtest/gtest.h>

#include "common/files.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu::plugin {
namespace {

TEST(Flags, DefaultsMatchTheIssue) {
  auto f = ParseFlags({});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->config.roots.sysfs, "/sys");
  EXPECT_EQ(f->config.roots.dev, "/dev");
  EXPECT_EQ(f->config.kubelet_dir, "/var/lib/kubelet/device-plugins");
  EXPECT_EQ(f->config.cdi_dir, "/var/run/cdi");
  EXPECT_EQ(f->config.run_dir, "/run/vfio-gpu");
  EXPECT_EQ(f->config.metrics_address, ":9477");
  EXPECT_EQ(f->config.log_format, "text");
}

TEST(Flags, FlagsOverrideTheConfigFile) {
  testing::TempDir dir;
  std::string cfg = dir / "config.json";
  ASSERT_TRUE(WriteFileAtomic(cfg, R"({"sysfs_root": "/host/sys", "cdi_dir": "/etc/cdi",
                                      "log_format": "json", "allocate_strategy": "device-specs"})"));
  auto f = ParseFlags({"--config", cfg, "--cdi-dir=/tmp/cdi", "--metrics-address", ""});
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->config.roots.sysfs, "/host/sys");
  EXPECT_EQ(f->config.cdi_dir, "/tmp/cdi");
  EXPECT_EQ(f->config.metrics_address, "");
  EXPECT_EQ(f->config.log_format, "json");
  EXPECT_EQ(f->config.allocate_strategy, AllocateStrategy::kDeviceSpecs);
}

TEST(Flags, BadInputIsRefusedNamingIt) {
  auto f = ParseFlags({"--sysfs", "/x"});
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("--sysfs"), std::string::npos);
  f = ParseFlags({"--dev-root", "relative"});
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("--dev-root"), std::string::npos);
  f = ParseFlags({"--log-format", "xml"});
  ASSERT_FALSE(f.ok());
  f = ParseFlags({"--kubelet-dir"});
  ASSERT_FALSE(f.ok());
  testing::TempDir dir;
  std::string cfg = dir / "config.json";
  ASSERT_TRUE(WriteFileAtomic(cfg, R"({"sysfs_root": "/sys", "resync": 5})"));
  f = ParseFlags({"--config", cfg});
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("resync"), std::string::npos);
  // A bad metrics address is refused at start, naming the flag or the key, not when binding.
  f = ParseFlags({"--metrics-address", "9477"});
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("--metrics-address: \"9477\" has no port"), std::string::npos)
      << f.error().message();
  ASSERT_TRUE(WriteFileAtomic(cfg, R"({"metrics_address": "node:9477"})"));
  f = ParseFlags({"--config", cfg});
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("\"metrics_address\""), std::string::npos)
      << f.error().message();
  EXPECT_TRUE(ParseFlags({"--metrics-address", ""}).ok());  // off
  EXPECT_TRUE(ParseFlags({"--metrics-address", "[::1]:9477"}).ok());
}

}  // namespace
}  // namespace vfio_gpu::plugin
