// A real containerd runs our shim: duplicated --device entries reach runc once, a non-viable
// group and a Cloud Hypervisor configuration are refused with our message, the ledger claim of a
// started container is released by `delete`, and nothing the wrapper printed broke the protocol.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "common/files.h"
#include "common/json.h"
#include "hostmodel/fake_host.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu {
namespace {

struct CmdResult {
  int code = -1;
  std::string output;
};

CmdResult Sh(const std::string& cmd) {
  CmdResult r;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string Slurp(const std::string& path) {
  auto t = ReadFile(path);
  return t.ok() ? *t : "(" + t.error().message() + ")";
}

class ContainerdE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to run containerd and runc";
    if (!PathExists("/usr/bin/containerd") || !PathExists("/usr/bin/containerd-shim-runc-v2") ||
        !PathExists("/bin/busybox"))
      GTEST_SKIP() << "needs Debian's containerd and busybox-static";
    t_ = std::make_unique<testing::TempDir>();
    const std::string T = t_->path();
    host_ = std::make_unique<FakeHost>(T + "/host");
    ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
    ASSERT_TRUE(BuildConsumerGpuHost(*host_, /*audio_on_vfio=*/false).ok());  // group 14
    // Real char devices for the groups the containers get (runc mknods them in the container).
    for (int g : {14, 25, 31, 61}) {
      std::string node = host_->roots().VfioGroupNode(g);
      ::unlink(node.c_str());
      ASSERT_EQ(::mknod(node.c_str(), S_IFCHR | 0600, makedev(241, g)), 0) << node;
    }
    // busybox rootfs
    ASSERT_TRUE(MakeDirs(T + "/rootfs/bin").ok());
    ASSERT_EQ(Sh("cp /bin/busybox " + T + "/rootfs/bin/busybox").code, 0);
    for (const char* c : {"sh", "true", "sleep", "ls"})
      ASSERT_EQ(::symlink("busybox", (T + "/rootfs/bin/" + c).c_str()), 0);
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
    ASSERT_TRUE(WriteFileAtomic(T + "/containerd.toml",
                                "version = 2\nroot = \"" + T + "/root\"\nstate = \"" + T +
                                    "/state\"\n[grpc]\n  address = \"" + T +
                                    "/containerd.sock\"\n[ttrpc]\n  address = \"" + T +
                                    "/containerd.sock.ttrpc\"\n[debug]\n  level = \"debug\"\n"
                                    "[plugins.\"io.containerd.grpc.v1.cri\"]\n"
                                    "  disable_tcp_service = true\n")
                    .ok());
    pid_ = ::fork();
    if (pid_ == 0) {
      std::string path =
          T + "/bin:" + std::string(std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
      ::setenv("PATH", path.c_str(), 1);
      ::setenv("VFIO_GPU_SHIM_CONFIG", (T + "/shim.json").c_str(), 1);
      FILE* log = std::freopen((T + "/containerd.log").c_str(), "w", stderr);
      (void)log;
      ::execl("/usr/bin/containerd", "containerd", "--config", (T + "/containerd.toml").c_str(),
              nullptr);
      ::_exit(127);
    }
    ctr_ = "ctr -a " + T + "/containerd.sock ";
    // Ready when the API answers (bounded; containerd starts in well under a second).
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (Sh(ctr_ + "version").code != 0) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << Slurp(T + "/containerd.log");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status;
      ::waitpid(pid_, &status, 0);
      // Shims of failed tests may still run; their bundles live in our temp dir.
      Sh("umount -R " + t_->path() + "/state 2>/dev/null; umount -R " + t_->path() +
         "/root 2>/dev/null");
    }
  }

  std::string Node(int g) const { return host_->roots().VfioGroupNode(g); }
  std::string Bundle(const std::string& id) const {
    return t_->path() + "/state/io.containerd.runtime.v2.task/default/" + id;
  }
  std::string Rootfs() const { return t_->path() + "/rootfs"; }

  std::unique_ptr<testing::TempDir> t_;
  std::unique_ptr<FakeHost> host_;
  pid_t pid_ = -1;
  std::string ctr_;
};

TEST_F(ContainerdE2E, DuplicatedDevicesReachRuncOnceAndTheClaimIsReleasedOnDelete) {
  CmdResult run = Sh(ctr_ + "run -d --rootfs --runtime io.containerd.vfio-gpu.v2 --device " +
                     Node(25) + " --device " + Node(25) + " " + Rootfs() + " dup1 /bin/sleep 60");
  ASSERT_EQ(run.code, 0) << run.output << Slurp(t_->path() + "/run/shim.log");
  // The task runs: containerd understood the downstream shim's reply through our wrapper.
  CmdResult tasks = Sh(ctr_ + "task ls");
  EXPECT_NE(tasks.output.find("dup1"), std::string::npos) << tasks.output;
  EXPECT_NE(tasks.output.find("RUNNING"), std::string::npos) << tasks.output;

  auto spec = Json::ParseFile(Bundle("dup1") + "/config.json");
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  Json devices = spec->Get("linux").Get("devices");
  int count = 0;
  for (size_t i = 0; i < devices.size(); ++i)
    if (devices.At(i).Get("path").AsString() == Node(25)) ++count;
  EXPECT_EQ(count, 1) << devices.Dump(true);
  // The ledger holds the GPU for this container (its own sandbox) while it runs.
  auto claim = Json::ParseFile(t_->path() + "/run/ledger/0000:17:00.0");
  ASSERT_TRUE(claim.ok());
  EXPECT_EQ(claim->Get("sandbox_id").AsString(), "dup1");

  // A second run naming the same GPU is refused: one GPU, one VM.
  CmdResult second = Sh(ctr_ + "run --rm --rootfs --runtime io.containerd.vfio-gpu.v2 --device " +
                        Node(25) + " " + Rootfs() + " dup2 /bin/true");
  EXPECT_NE(second.code, 0);
  EXPECT_NE(second.output.find("already attached to sandbox dup1"), std::string::npos)
      << second.output;

  EXPECT_EQ(Sh(ctr_ + "task kill -s SIGKILL dup1").code, 0);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (Sh(ctr_ + "task delete dup1").code != 0) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(Sh(ctr_ + "container delete dup1").code, 0);
  EXPECT_FALSE(PathExists(t_->path() + "/run/ledger/0000:17:00.0"))
      << "delete must release the claim";

  // The shim's own log holds the decisions, as JSON lines.
  auto log = ReadFile(t_->path() + "/run/shim.log");
  ASSERT_TRUE(log.ok());
  EXPECT_NE(log->find("\"hook\":\"dedup\",\"action\":\"removed\""), std::string::npos) << *log;
  EXPECT_NE(log->find("\"action\":\"released\""), std::string::npos) << *log;
}

TEST_F(ContainerdE2E, NonViableGroupIsRefusedWithOurMessageAndQuarantined) {
  CmdResult run = Sh(ctr_ + "run --rm --rootfs --runtime io.containerd.vfio-gpu.v2 --device " +
                     Node(14) + " " + Rootfs() + " bad1 /bin/true");
  EXPECT_NE(run.code, 0);
  EXPECT_NE(run.output.find("failed to start shim"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("IOMMU group 14 is not viable: 0000:01:00.1 (audio) is bound to "
                            "snd_hda_intel; bind it to vfio-pci"),
            std::string::npos)
      << run.output;
  EXPECT_TRUE(PathExists(t_->path() + "/run/quarantine/0000:01:00.0"));
  EXPECT_FALSE(PathExists(t_->path() + "/run/ledger/0000:01:00.0"));
}

TEST_F(ContainerdE2E, HostNicGroupIsRefused) {
  CmdResult run = Sh(ctr_ + "run --rm --rootfs --runtime io.containerd.vfio-gpu.v2 --device " +
                     Node(61) + " " + Rootfs() + " nic1 /bin/true");
  EXPECT_NE(run.code, 0);
  EXPECT_NE(run.output.find("IOMMU group 61"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("0000:4b:00.0 (ethernet, mlx5_core)"), std::string::npos) << run.output;
}

TEST_F(ContainerdE2E, CloudHypervisorConfigFromRuntimeOptionsIsRefused) {
  // ctr passes --runtime-config-path as runtimeoptions.v1.Options{config_path} on the shim's stdin.
  CmdResult run =
      Sh(ctr_ + "run --rm --rootfs --runtime io.containerd.vfio-gpu.v2 " +
         "--runtime-config-path " + t_->path() + "/kata-clh/configuration-clh.toml --device " +
         Node(31) + " " + Rootfs() + " clh1 /bin/true");
  EXPECT_NE(run.code, 0);
  EXPECT_NE(run.output.find("uses clh"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("RuntimeClass kata-qemu-vfio-gpu"), std::string::npos) << run.output;
}

TEST_F(ContainerdE2E, ContainerWithoutGpusPassesStraightThrough) {
  CmdResult run = Sh(ctr_ + "run --rm --rootfs --runtime io.containerd.vfio-gpu.v2 " + Rootfs() +
                     " plain1 /bin/sh -c 'echo hello'");
  EXPECT_EQ(run.code, 0) << run.output;
  EXPECT_EQ(run.output, "hello\n");
}

}  // namespace
}  // namespace vfio_gpu
