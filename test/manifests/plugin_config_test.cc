// The plugin configurations shipped in deploy/ (the ConfigMap's config.json) are read by the same
// code vfio-gpu-plugin and vfio-gpu use, so a key or value the reader refuses fails here, not on a
// node.
#include <gtest/gtest.h>

#include <string>

#include "hostmodel/node_config.h"

namespace vfio_gpu {
namespace {

const std::string kSource = VFIO_GPU_SOURCE_DIR;

NodeConfig ReadOrFail(const std::string& rel) {
  auto config = ReadNodeConfig(kSource + "/" + rel);
  EXPECT_TRUE(config.ok()) << rel << ": " << (config.ok() ? "" : config.error().message());
  return config.ok() ? *config : NodeConfig{};
}

// The host paths the DaemonSet mounts (deploy/base/daemonset.yaml) are where the config says.
void ExpectDaemonSetPaths(const NodeConfig& c) {
  EXPECT_EQ(c.roots.sysfs, "/host/sys");
  EXPECT_EQ(c.roots.dev, "/dev");
  EXPECT_EQ(c.kubelet_dir, "/var/lib/kubelet/device-plugins");
  EXPECT_EQ(c.cdi_dir, "/var/run/cdi");
  EXPECT_EQ(c.run_dir, "/run/vfio-gpu");
  EXPECT_EQ(c.metrics_address, ":9477");
  EXPECT_EQ(c.log_format, "json");
  EXPECT_EQ(c.allocate_strategy, AllocateStrategy::kCdi);
}

TEST(DeployPluginConfig, BaseIsAcceptedWithSingleNaming) {
  NodeConfig c = ReadOrFail("deploy/base/plugin-config.json");
  ExpectDaemonSetPaths(c);
  EXPECT_EQ(c.selection.naming, ResourceNaming::kSingle);
  EXPECT_EQ(c.selection.resource_name, "nvidia.com/pgpu");
  EXPECT_EQ(c.selection.nvswitch_resource_name, "nvidia.com/nvswitch");
}

TEST(DeployPluginConfig, PerModelOverlayIsAccepted) {
  NodeConfig c = ReadOrFail("deploy/overlays/per-model/plugin-config.json");
  ExpectDaemonSetPaths(c);
  EXPECT_EQ(c.selection.naming, ResourceNaming::kPerModel);
}

}  // namespace
}  // namespace vfio_gpu
