// A real containerd runs our shim: duplicated --device entries reach runc once, a non-viable
// group and a Cloud Hypervisor configuration are refused with our message, the ledger claim of a
// started container is released by `delete`, and nothing the wrapper printed broke the protocol.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/files.h"
#include "common/json.h"
#include "e2e/containerd/containerd_harness.h"
#include "hostmodel/fake_host.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu::e2e {
namespace {

class ContainerdE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string missing = MissingPrerequisites(); !missing.empty()) GTEST_SKIP() << missing;
    t_ = std::make_unique<testing::TempDir>();
    const std::string T = t_->path();
    host_ = std::make_unique<FakeHost>(T + "/host");
    ASSERT_TRUE(BuildE2eHost(*host_).ok());
    ASSERT_TRUE(MakeBusyboxRootfs(T + "/rootfs").ok());
    // Our shim on containerd's PATH under the name containerd derives from the runtime type.
    ASSERT_TRUE(MakeDirs(T + "/bin").ok());
    ASSERT_EQ(::symlink(SHIM_BINARY, (T + "/bin/containerd-shim-vfio-gpu-v2").c_str()), 0);
    ASSERT_TRUE(MakeDirs(T + "/kata").ok());
    ASSERT_TRUE(WriteFileAtomic(T + "/kata/configuration-qemu-nvidia-gpu.toml",
                                "[hypervisor.qemu]\npath = \"/usr/bin/qemu-system-x86_64\"\n"
                                "cold_plug_vfio = \"root-port\" # GPUs\n[runtime]\n")
                    .ok());
    ASSERT_TRUE(MakeDirs(T + "/kata-clh").ok());
    ASSERT_TRUE(WriteFileAtomic(T + "/kata-clh/configuration-clh.toml",
                                "[hypervisor.clh]\npath = \"/usr/bin/cloud-hypervisor\"\n")
                    .ok());
    Json cfg = Json::Object();
    cfg.Set("downstream_shim", Json::String("containerd-shim-runc-v2"));
    cfg.Set("sysfs_root", Json::String(host_->roots().sysfs));
    cfg.Set("dev_root", Json::String(host_->roots().dev));
    cfg.Set("run_dir", Json::String(T + "/run"));
    cfg.Set("authorize", Json::String("off"));  // no kubelet here: plain ctr runs
    cfg.Set("kata_config_path", Json::String(T + "/kata/configuration-qemu-nvidia-gpu.toml"));
    ASSERT_TRUE(WriteFileAtomic(T + "/shim.json", cfg.Dump(true)).ok());
    ASSERT_TRUE(WriteFileAtomic(T + "/containerd.toml", ContainerdConfig(T)).ok());
    auto c = Containerd::Start({.config = T + "/containerd.toml",
                                .dir = T,
                                .path_prefix = T + "/bin",
                                .env = {{"VFIO_GPU_SHIM_CONFIG", T + "/shim.json"}}});
    ASSERT_TRUE(c.ok()) << c.error().message();
    containerd_ = std::move(*c);
  }

  testing::Outcome Ctr(const std::string& args) const { return containerd_->Ctr(args); }
  std::string Node(int g) const { return host_->roots().VfioGroupNode(g); }
  std::string Bundle(const std::string& id) const { return containerd_->Bundle(id); }
  std::string Rootfs() const { return t_->path() + "/rootfs"; }

  std::unique_ptr<testing::TempDir> t_;
  std::unique_ptr<FakeHost> host_;
  std::unique_ptr<Containerd> containerd_;  // stopped before the temp dir goes
};

TEST_F(ContainerdE2E, DuplicatedDevicesReachRuncOnceAndTheClaimIsReleasedOnDelete) {
  testing::Outcome run =
      Ctr("run -d --rootfs --runtime io.containerd.vfio-gpu.v2 --device " + Node(25) +
          " --device " + Node(25) + " " + Rootfs() + " dup1 /bin/sleep 60");
  ASSERT_EQ(run.code, 0) << run.out << Slurp(t_->path() + "/run/shim.log");
  // The task runs: containerd understood the downstream shim's reply through our wrapper.
  testing::Outcome tasks = Ctr("task ls");
  EXPECT_NE(tasks.out.find("dup1"), std::string::npos) << tasks.out;
  EXPECT_NE(tasks.out.find("RUNNING"), std::string::npos) << tasks.out;

  EXPECT_EQ(CountSpecDevices(Bundle("dup1"), Node(25)), 1)
      << Slurp(Bundle("dup1") + "/config.json");
  // The ledger holds the GPU for this container (its own sandbox) while it runs.
  auto claim = Json::ParseFile(t_->path() + "/run/ledger/0000:17:00.0");
  ASSERT_TRUE(claim.ok());
  EXPECT_EQ(claim->Get("sandbox_id").AsString(), "dup1");

  // A second run naming the same GPU is refused: one GPU, one VM.
  testing::Outcome second = Ctr("run --rm --rootfs --runtime io.containerd.vfio-gpu.v2 --device " +
                                Node(25) + " " + Rootfs() + " dup2 /bin/true");
  EXPECT_NE(second.code, 0);
  EXPECT_NE(second.out.find("already attached to sandbox dup1"), std::string::npos) << second.out;

  ASSERT_TRUE(containerd_->Remove("dup1").ok());
  EXPECT_FALSE(PathExists(t_->path() + "/run/ledger/0000:17:00.0"))
      << "delete must release the claim";

  // The shim's own log holds the decisions, as JSON lines.
  auto log = ReadFile(t_->path() + "/run/shim.log");
  ASSERT_TRUE(log.ok());
  EXPECT_NE(log->find("\"hook\":\"dedup\",\"action\":\"removed\""), std::string::npos) << *log;
  EXPECT_NE(log->find("\"action\":\"released\""), std::string::npos) << *log;
}

TEST_F(ContainerdE2E, NonViableGroupIsRefusedWithOurMessageAndQuarantined) {
  testing::Outcome run = Ctr("run --rm --rootfs --runtime io.containerd.vfio-gpu.v2 --device " +
                             Node(14) + " " + Rootfs() + " bad1 /bin/true");
  EXPECT_NE(run.code, 0);
  EXPECT_NE(run.out.find("failed to start shim"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("IOMMU group 14 is not viable: 0000:01:00.1 (audio) is bound to "
                         "snd_hda_intel; bind it to vfio-pci"),
            std::string::npos)
      << run.out;
  EXPECT_TRUE(PathExists(t_->path() + "/run/quarantine/0000:01:00.0"));
  EXPECT_FALSE(PathExists(t_->path() + "/run/ledger/0000:01:00.0"));
}

TEST_F(ContainerdE2E, HostNicGroupIsRefused) {
  testing::Outcome run = Ctr("run --rm --rootfs --runtime io.containerd.vfio-gpu.v2 --device " +
                             Node(61) + " " + Rootfs() + " nic1 /bin/true");
  EXPECT_NE(run.code, 0);
  EXPECT_NE(run.out.find("IOMMU group 61"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("0000:4b:00.0 (ethernet, mlx5_core)"), std::string::npos) << run.out;
}

TEST_F(ContainerdE2E, CloudHypervisorConfigFromRuntimeOptionsIsRefused) {
  // ctr passes --runtime-config-path as runtimeoptions.v1.Options{config_path} on the shim's stdin.
  testing::Outcome run = Ctr(
      "run --rm --rootfs --runtime io.containerd.vfio-gpu.v2 --runtime-config-path " + t_->path() +
      "/kata-clh/configuration-clh.toml --device " + Node(31) + " " + Rootfs() + " clh1 /bin/true");
  EXPECT_NE(run.code, 0);
  EXPECT_NE(run.out.find("uses clh"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("RuntimeClass kata-qemu-vfio-gpu"), std::string::npos) << run.out;
}

TEST_F(ContainerdE2E, ContainerWithoutGpusPassesStraightThrough) {
  testing::Outcome run = Ctr("run --rm --rootfs --runtime io.containerd.vfio-gpu.v2 " + Rootfs() +
                             " plain1 /bin/sh -c 'echo hello'");
  EXPECT_EQ(run.code, 0) << run.out;
  EXPECT_EQ(run.out, "hello\n");
}

}  // namespace
}  // namespace vfio_gpu::e2e
