// `vfio-gpu install` / `uninstall` / `doctor --host-root` as an operator runs them: through the
// binary, against a temp host root.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/files.h"
#include "hostmodel/fake_host.h"
#include "test/support/run_binary.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu {
namespace {

using testing::TempDir;

using testing::Outcome;

Outcome Shell(const std::string& cmd, const TempDir& tmp) {
  return testing::RunCommand(cmd, tmp / "stderr");
}

// Every regular file under a directory with its content and mode: "did anything change?"
std::map<std::string, std::string> Tree(const std::string& root) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_symlink(ec)) continue;
    if (it->is_directory(ec)) {
      out[it->path().string() + "/"] = "";
      continue;
    }
    if (!it->is_regular_file(ec)) continue;
    struct stat st;
    ::stat(it->path().c_str(), &st);
    auto text = ReadFile(it->path().string());
    out[it->path().string()] = std::to_string(st.st_mode & 0777) + ":" + (text ? *text : "?");
  }
  return out;
}

bool Has(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// containerd 1.7's `containerd config default`, abridged: the CRI table is defined and sets
// enable_cdi = false with a multi-line cdi_spec_dirs, so both must be edited in place.
constexpr const char* kConfigV2 = R"(disabled_plugins = []
imports = []
oom_score = 0
root = "/var/lib/containerd"
state = "/run/containerd"
version = 2

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins]

  [plugins."io.containerd.grpc.v1.cri"]
    cdi_spec_dirs = [
      "/etc/cdi",
    ]
    enable_cdi = false
    sandbox_image = "registry.k8s.io/pause:3.8"

    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "runc"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
          runtime_type = "io.containerd.runc.v2"

          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
            SystemdCgroup = true
)";

constexpr const char* kConfigV3 = R"(version = 3
root = "/var/lib/containerd"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2")";  // no newline at the end, on purpose

constexpr const char* kKataGpu = R"([hypervisor.qemu]
path = "/opt/kata/bin/qemu-system-x86_64"
cold_plug_vfio = "no-port"

[runtime]
internetworking_model = "tcfilter"
)";

class InstallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(MakeDirs(root_ + "/etc/containerd"));
    ASSERT_TRUE(MakeDirs(root_ + "/opt/kata/share/defaults/kata-containers"));
    ASSERT_TRUE(WriteFileAtomic(Kata("configuration-qemu-nvidia-gpu.toml"), kKataGpu));
    ASSERT_TRUE(WriteFileAtomic(Kata("configuration-clh.toml"), "[hypervisor.clh]\n"));
    ASSERT_TRUE(WriteFileAtomic(shim_, "#!/bin/sh\n# a stand-in for the shim\n", 0755));
  }
  std::string Kata(const std::string& name) const {
    return root_ + "/opt/kata/share/defaults/kata-containers/" + name;
  }
  std::string Config() const { return root_ + "/etc/containerd/config.toml"; }
  Outcome Vfio(const std::string& args) {
    return Shell(std::string(VFIO_GPU_BIN) + " " + args, tmp_);
  }
  Outcome Install(const std::string& extra = "") {
    return Vfio("install --host-root " + root_ + " --shim-binary " + shim_ + " " + extra);
  }

  TempDir tmp_;
  std::string root_ = tmp_ / "host";
  std::string shim_ = tmp_ / "containerd-shim-vfio-gpu-v2";
};

TEST_F(InstallTest, FreshInstallThenNothingToDoThenUninstallRestoresTheBytes) {
  ASSERT_TRUE(WriteFileAtomic(Config(), kConfigV2, 0600));
  auto before = Tree(root_);

  Outcome r = Install();
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (const char* line : {
           "created    /usr/local/bin/containerd-shim-vfio-gpu-v2",
           "updated    /etc/containerd/config.toml",
           "created    /opt/kata/share/defaults/kata-containers/vfio-gpu/"
           "configuration-qemu-nvidia-gpu.toml",
           "created    /opt/kata/share/defaults/kata-containers/vfio-gpu/config.d/50-vfio-gpu.toml",
           "created    /etc/vfio-gpu/shim.json",
           "restart containerd to load the vfio-gpu runtime (systemctl restart containerd)",
       })
    EXPECT_TRUE(Has(r.out, line)) << line << "\n" << r.out;
  EXPECT_FALSE(Has(r.out, "crio")) << "no /etc/crio, no CRI-O drop-in";

  // The shim is executable, configs readable; the operator's 0600 config.toml keeps its mode.
  struct stat st;
  ASSERT_EQ(::stat((root_ + "/usr/local/bin/containerd-shim-vfio-gpu-v2").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  ASSERT_EQ(::stat((root_ + "/etc/vfio-gpu/shim.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  ASSERT_EQ(::stat(Config().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  std::string merged = *ReadFile(Config());
  EXPECT_TRUE(Has(merged, "#~     enable_cdi = false\n  enable_cdi = true")) << merged;
  EXPECT_TRUE(Has(merged, "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.vfio-gpu]"));
  EXPECT_TRUE(Has(merged,
                  "ConfigPath = \"/opt/kata/share/defaults/kata-containers/vfio-gpu/"
                  "configuration-qemu-nvidia-gpu.toml\""));
  // Kata's file is copied (with a header) beside our drop-in; Kata's shared config.d/ is untouched.
  std::string copy = *ReadFile(Kata("vfio-gpu/configuration-qemu-nvidia-gpu.toml"));
  EXPECT_TRUE(Has(copy, "Copied by `vfio-gpu install`"));
  EXPECT_TRUE(Has(copy, kKataGpu));
  EXPECT_FALSE(PathExists(Kata("config.d")));

  auto installed = Tree(root_);
  r = Install();
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(Has(r.out, "nothing to do")) << r.out;
  EXPECT_FALSE(Has(r.out, "restart containerd")) << r.out;
  EXPECT_EQ(Tree(root_), installed);

  // Kata upgraded: the next run refreshes the copy, and only the copy.
  ASSERT_TRUE(WriteFileAtomic(Kata("configuration-qemu-nvidia-gpu.toml"),
                              std::string(kKataGpu) + "# 3.26\n"));
  r = Install();
  EXPECT_TRUE(Has(r.out,
                  "updated    /opt/kata/share/defaults/kata-containers/vfio-gpu/"
                  "configuration-qemu-nvidia-gpu.toml"))
      << r.out;
  EXPECT_TRUE(Has(r.out, "1 change(s)")) << r.out;
  EXPECT_FALSE(Has(r.out, "restart containerd")) << r.out;
  ASSERT_TRUE(WriteFileAtomic(Kata("configuration-qemu-nvidia-gpu.toml"), kKataGpu));

  r = Vfio("uninstall --host-root " + root_);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(Has(r.out, "removed    /usr/local/bin/containerd-shim-vfio-gpu-v2")) << r.out;
  EXPECT_TRUE(Has(r.out, "removed    /opt/kata/share/defaults/kata-containers/vfio-gpu/")) << r.out;
  EXPECT_EQ(*ReadFile(Config()), kConfigV2);
  auto after = Tree(root_);
  // Directories install created on the way (usr/local/bin) may stay; every file is as before.
  for (auto it = after.begin(); it != after.end();)
    it = it->first.back() == '/' && !before.count(it->first) ? after.erase(it) : std::next(it);
  EXPECT_EQ(after, before);

  r = Vfio("uninstall --host-root " + root_);
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(Has(r.out, "nothing to do")) << r.out;
}

TEST_F(InstallTest, DryRunPrintsTheDiffAndWritesNothing) {
  ASSERT_TRUE(WriteFileAtomic(Config(), kConfigV2));
  auto before = Tree(root_);
  Outcome r = Install("--dry-run");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Tree(root_), before);
  for (const char* line : {
           "--- a/etc/containerd/config.toml\n+++ b/etc/containerd/config.toml\n@@ -11,10 +11,16 "
           "@@\n",
           "-    enable_cdi = false\n+# >>> vfio-gpu",
           "+#~     enable_cdi = false\n+  enable_cdi = true\n+# <<< vfio-gpu\n",
           "--- /dev/null\n+++ b/usr/local/bin/containerd-shim-vfio-gpu-v2\nBinary files differ\n",
           "--- /dev/null\n+++ b/etc/vfio-gpu/shim.json\n@@ -0,0 +1,9 @@\n+{\n",
           "dry run: 5 change(s) would be made; nothing was written",
       })
    EXPECT_TRUE(Has(r.out, line)) << line << "\n" << r.out;

  ASSERT_EQ(Install().code, 0);
  r = Install("--dry-run");
  EXPECT_TRUE(Has(r.out, "nothing to do")) << r.out;
  EXPECT_FALSE(Has(r.out, "---")) << r.out;
}

// A real ELF binary as the shim (and its helper beside it): the shell-script stand-ins of the
// other tests are text, which hid that uninstall's dry run printed the shim's bytes as a diff
// (cut at the first NUL) instead of saying the binary goes.
TEST_F(InstallTest, DryRunUninstallSaysTheBinariesGoWithoutPrintingThem) {
  ASSERT_TRUE(WriteFileAtomic(Config(), kConfigV2));
  auto elf = ReadFile("/bin/true");
  ASSERT_TRUE(elf.ok());
  ASSERT_NE(elf->find('\0'), std::string::npos);
  ASSERT_TRUE(WriteFileAtomic(shim_, *elf, 0755));
  ASSERT_TRUE(WriteFileAtomic(tmp_ / "vfio-gpu-shim-podresources", *elf, 0755));
  Outcome r = Install();
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(Has(r.out, "created    /usr/local/bin/vfio-gpu-shim-podresources")) << r.out;

  auto installed = Tree(root_);
  r = Vfio("uninstall --dry-run --host-root " + root_);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(Tree(root_), installed);
  for (const char* bin : {"containerd-shim-vfio-gpu-v2", "vfio-gpu-shim-podresources"})
    EXPECT_TRUE(Has(r.out, std::string("--- a/usr/local/bin/") + bin +
                               "\n+++ /dev/null\nBinary files differ\n"))
        << bin << "\n"
        << r.out;
  EXPECT_FALSE(Has(r.out, "ELF")) << r.out;
  EXPECT_EQ(r.out.find('\0'), std::string::npos);
  // The text files are still shown line by line.
  EXPECT_TRUE(Has(r.out, "--- a/etc/vfio-gpu/shim.json\n+++ /dev/null\n@@ -1,9 +0,0 @@\n-{\n"))
      << r.out;
  EXPECT_TRUE(Has(r.out, "dry run: ")) << r.out;

  // Install's dry run over an installed binary that differs says so the same way.
  ASSERT_TRUE(WriteFileAtomic(shim_, *elf + std::string("\0x", 2), 0755));
  r = Install("--dry-run");
  EXPECT_TRUE(Has(r.out,
                  "--- a/usr/local/bin/containerd-shim-vfio-gpu-v2\n"
                  "+++ b/usr/local/bin/containerd-shim-vfio-gpu-v2\nBinary files differ\n"))
      << r.out;
  EXPECT_FALSE(Has(r.out, "ELF")) << r.out;
}

TEST_F(InstallTest, MalformedContainerdConfigIsReportedAndNothingIsWritten) {
  std::string broken = "version = 2\n\n[plugins.\"io.containerd.grpc.v1.cri\"\n  x = 1\n";
  ASSERT_TRUE(WriteFileAtomic(Config(), broken));
  auto before = Tree(root_);
  Outcome r = Install();
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Has(r.err, Config() + ":3: table header")) << r.err;
  EXPECT_TRUE(Has(r.err, "fix the file by hand")) << r.err;
  EXPECT_TRUE(Has(r.err, "nothing was changed")) << r.err;
  EXPECT_EQ(Tree(root_), before);

  // A hand-made vfio-gpu runtime outside our block, and config version 1, are refused alike.
  ASSERT_TRUE(WriteFileAtomic(
      Config(),
      "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.vfio-gpu]\n"
      "runtime_type = \"io.containerd.kata.v2\"\n"));
  r = Install();
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Has(r.err, "config.toml:2: runtime \"vfio-gpu\" is already defined here")) << r.err;
  ASSERT_TRUE(WriteFileAtomic(Config(), "[plugins.cri]\n"));
  r = Install();
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Has(r.err, "has no `version` key")) << r.err;
}

TEST_F(InstallTest, ContainerdV3GetsTheConfDFileAndAnImport) {
  ASSERT_TRUE(WriteFileAtomic(Config(), kConfigV3));
  Outcome r = Install();
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(Has(r.out, "created    /etc/containerd/conf.d/50-vfio-gpu.toml")) << r.out;
  EXPECT_TRUE(Has(r.out, "updated    /etc/containerd/config.toml")) << r.out;
  std::string dropin = *ReadFile(root_ + "/etc/containerd/conf.d/50-vfio-gpu.toml");
  EXPECT_TRUE(Has(dropin, "version = 3"));
  EXPECT_TRUE(
      Has(dropin, "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.vfio-gpu]"));
  std::string config = *ReadFile(Config());
  EXPECT_TRUE(Has(config, "version = 3\n# >>> vfio-gpu")) << config;
  EXPECT_TRUE(Has(config, "imports = [\"/etc/containerd/conf.d/50-vfio-gpu.toml\"]")) << config;
  EXPECT_TRUE(Has(Install().out, "nothing to do"));
  ASSERT_EQ(Vfio("uninstall --host-root " + root_).code, 0);
  EXPECT_EQ(*ReadFile(Config()), kConfigV3);
  EXPECT_FALSE(PathExists(root_ + "/etc/containerd/conf.d/50-vfio-gpu.toml"));

  // An import that already covers conf.d: config.toml stays as it is.
  std::string globbed = "version = 3\nimports = [\"conf.d/*.toml\"]\n";
  ASSERT_TRUE(WriteFileAtomic(Config(), globbed));
  r = Install();
  EXPECT_TRUE(Has(r.out, "unchanged  /etc/containerd/config.toml")) << r.out;
  EXPECT_EQ(*ReadFile(Config()), globbed);
  // Another import: ours is added beside it, and uninstall puts the line back.
  std::string other = "version = 3\nimports = [\"/etc/containerd/other.toml\"]\n";
  ASSERT_TRUE(WriteFileAtomic(Config(), other));
  ASSERT_EQ(Install().code, 0);
  EXPECT_TRUE(Has(*ReadFile(Config()),
                  "#~ imports = [\"/etc/containerd/other.toml\"]\nimports = "
                  "[\"/etc/containerd/other.toml\", \"/etc/containerd/conf.d/50-vfio-gpu.toml\"]"));
  ASSERT_EQ(Vfio("uninstall --host-root " + root_).code, 0);
  EXPECT_EQ(*ReadFile(Config()), other);
}

TEST_F(InstallTest, WithoutConfigTomlTheContainerdVersionDecides) {
  Outcome r = Install();
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Has(r.err, "config.toml does not exist")) << r.err;
  EXPECT_TRUE(Has(r.err, "--containerd-version")) << r.err;

  // 2.2 imports conf.d/*.toml by default when there is no config.toml: none is needed.
  r = Install("--containerd-version v2.2.0");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(PathExists(Config()));
  EXPECT_TRUE(PathExists(root_ + "/etc/containerd/conf.d/50-vfio-gpu.toml"));
  ASSERT_EQ(Vfio("uninstall --host-root " + root_).code, 0);

  // An existing config.toml replaces 2.2's built-in default imports, so even on 2.2 it must
  // import the drop-in (containerd loads only what the imports of the files it loads name): one
  // without `imports`, and an empty one.
  ASSERT_TRUE(WriteFileAtomic(Config(), kConfigV3));
  r = Install("--containerd-version v2.2.0");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "updated    /etc/containerd/config.toml")) << r.out;
  EXPECT_TRUE(Has(*ReadFile(Config()),
                  "version = 3\n# >>> vfio-gpu: added by `vfio-gpu install`, removed by `vfio-gpu "
                  "uninstall`\nimports = [\"/etc/containerd/conf.d/50-vfio-gpu.toml\"]\n"))
      << *ReadFile(Config());
  ASSERT_EQ(Vfio("uninstall --host-root " + root_).code, 0);
  EXPECT_EQ(*ReadFile(Config()), kConfigV3);
  ASSERT_TRUE(WriteFileAtomic(Config(), ""));
  r = Install("--containerd-version 2.3.0");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Has(*ReadFile(Config()),
                  "version = 3\nimports = "
                  "[\"/etc/containerd/conf.d/50-vfio-gpu.toml\"]\n"))
      << *ReadFile(Config());
  ASSERT_EQ(Vfio("uninstall --host-root " + root_).code, 0);
  EXPECT_EQ(*ReadFile(Config()), "");
  ASSERT_TRUE(RemoveFile(Config()));

  // 1.7: a minimal config.toml of ours, which uninstall removes again.
  r = Install("--containerd-version 1.7.27");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "created    /etc/containerd/config.toml")) << r.out;
  EXPECT_TRUE(Has(*ReadFile(Config()), "version = 2"));
  r = Vfio("uninstall --host-root " + root_);
  EXPECT_TRUE(Has(r.out, "removed    /etc/containerd/config.toml")) << r.out;
  EXPECT_FALSE(PathExists(Config()));
}

TEST_F(InstallTest, MergedV2ConfigLoadsInARealContainerd) {
  if (::access("/usr/bin/containerd", X_OK) != 0) GTEST_SKIP() << "containerd is not installed";
  // The config containerd itself generates, as a kubeadm node has it.
  Outcome gen = Shell("containerd config default", tmp_);
  ASSERT_EQ(gen.code, 0) << gen.err;
  ASSERT_TRUE(WriteFileAtomic(Config(), gen.out));
  ASSERT_EQ(Install().code, 0);
  Outcome dump = Shell("containerd --config " + Config() + " config dump", tmp_);
  ASSERT_EQ(dump.code, 0) << dump.err;
  EXPECT_TRUE(Has(dump.out, "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.vfio-gpu]"))
      << dump.out;
  EXPECT_TRUE(Has(dump.out, "runtime_type = \"io.containerd.vfio-gpu.v2\""));
  EXPECT_TRUE(Has(dump.out,
                  "ConfigPath = \"/opt/kata/share/defaults/kata-containers/vfio-gpu/"
                  "configuration-qemu-nvidia-gpu.toml\""));
  // The operator's runc runtime and CRI settings survive the merge.
  EXPECT_TRUE(Has(dump.out, "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]"));
  EXPECT_TRUE(Has(dump.out, "sandbox_image = "));

  // The abridged 1.7 config with its enable_cdi replaced in place loads too.
  ASSERT_EQ(Vfio("uninstall --host-root " + root_).code, 0);
  ASSERT_TRUE(WriteFileAtomic(Config(), kConfigV2));
  ASSERT_EQ(Install().code, 0);
  dump = Shell("containerd --config " + Config() + " config dump", tmp_);
  ASSERT_EQ(dump.code, 0) << dump.err;
  EXPECT_TRUE(Has(dump.out, "runtime_type = \"io.containerd.vfio-gpu.v2\""));
  EXPECT_TRUE(Has(dump.out, "SystemdCgroup = true"));
}

TEST_F(InstallTest, OperatorFilesAndMissingPiecesAreReported) {
  ASSERT_TRUE(WriteFileAtomic(Config(), kConfigV2));
  ASSERT_TRUE(MakeDirs(root_ + "/etc/crio"));
  ASSERT_TRUE(MakeDirs(root_ + "/etc/vfio-gpu"));
  std::string edited = "{\"authorize\": \"warn\"}\n";
  ASSERT_TRUE(WriteFileAtomic(root_ + "/etc/vfio-gpu/shim.json", edited));
  ASSERT_TRUE(RemoveFile(Kata("configuration-qemu-nvidia-gpu.toml")));
  Outcome r = Install();
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "unchanged  /etc/vfio-gpu/shim.json (kept: edited by the operator)"))
      << r.out;
  EXPECT_EQ(*ReadFile(root_ + "/etc/vfio-gpu/shim.json"), edited);
  EXPECT_TRUE(Has(r.out, "created    /etc/crio/crio.conf.d/50-vfio-gpu.conf")) << r.out;
  EXPECT_TRUE(Has(r.out, "restart CRI-O to load the vfio-gpu runtime (systemctl restart crio)"));
  EXPECT_TRUE(Has(r.out, "WARNING: Kata's GPU configuration is not installed")) << r.out;

  // A local drop-in in our Kata dir survives uninstall, and so does the directory.
  ASSERT_TRUE(WriteFileAtomic(Kata("vfio-gpu/config.d/60-local.toml"), "[hypervisor.qemu]\n"));
  r = Vfio("uninstall --host-root " + root_);
  EXPECT_TRUE(Has(r.out, "kept: edited by the operator")) << r.out;
  EXPECT_TRUE(Has(r.out, "holds files vfio-gpu did not write: 60-local.toml")) << r.out;
  EXPECT_TRUE(PathExists(Kata("vfio-gpu/config.d/60-local.toml")));
  EXPECT_FALSE(PathExists(root_ + "/etc/crio/crio.conf.d/50-vfio-gpu.conf"));
}

TEST_F(InstallTest, RestartsContainerdOnlyWhenAskedAndOnlyOnAChange) {
  ASSERT_TRUE(WriteFileAtomic(Config(), kConfigV2));
  std::string marker = tmp_ / "restarted";
  std::string env = "VFIO_GPU_RESTART_CMD='echo restart >> " + marker + "' ";
  Outcome r = Shell(env + VFIO_GPU_BIN + " install --host-root " + root_ + " --shim-binary " +
                        shim_ + " --restart-containerd",
                    tmp_);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(Has(r.out, "restarted containerd (/bin/sh -c echo restart >> ")) << r.out;
  EXPECT_EQ(*ReadFile(marker), "restart\n");
  r = Shell(env + VFIO_GPU_BIN + " install --host-root " + root_ + " --shim-binary " + shim_ +
                " --restart-containerd",
            tmp_);
  EXPECT_TRUE(Has(r.out, "nothing to do"));
  EXPECT_EQ(*ReadFile(marker), "restart\n");  // not restarted again

  ASSERT_TRUE(WriteFileAtomic(Config(), std::string(kConfigV2) + "# touched\n"));
  r = Shell("VFIO_GPU_RESTART_CMD=false " + std::string(VFIO_GPU_BIN) + " install --host-root " +
                root_ + " --shim-binary " + shim_ + " --restart-containerd",
            tmp_);
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Has(r.out, "FAILED: restarting containerd: /bin/sh -c false failed (exit status 1)"))
      << r.out;
}

TEST_F(InstallTest, KataRootPortsFollowTheNodesInventory) {
  ASSERT_TRUE(WriteFileAtomic(Config(), kConfigV2));
  FakeHost host(root_);  // <host root>/sys: what install reads
  ASSERT_TRUE(BuildHgxHost(host));
  std::string dropin = Kata("vfio-gpu/config.d/50-vfio-gpu.toml");
  Outcome r = Install();
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_FALSE(Has(r.out, "WARNING: pcie_root_port")) << r.out;
  std::string text = *ReadFile(dropin);
  EXPECT_TRUE(Has(text,
                  "8 GPU unit(s) and 4 NVSwitch unit(s), 12 device(s) to pass through\n"
                  "# (their IOMMU groups' non-bridge functions), at least 8 (Kata's own default): "
                  "12. The next install run resizes it when the inventory changes.\n"
                  "pcie_root_port = 12\n"))
      << text;
  EXPECT_TRUE(Has(Install().out, "nothing to do"));

  // Two GPUs gone (pulled for repair): the next run resizes, and only the drop-in changes.
  ASSERT_TRUE(host.Remove("0000:18:00.0"));
  ASSERT_TRUE(host.Remove("0000:2a:00.0"));
  r = Install();
  EXPECT_TRUE(Has(r.out,
                  "updated    /opt/kata/share/defaults/kata-containers/vfio-gpu/config.d/"
                  "50-vfio-gpu.toml"))
      << r.out;
  EXPECT_TRUE(Has(r.out, "1 change(s)")) << r.out;
  EXPECT_TRUE(Has(*ReadFile(dropin), "6 GPU unit(s) and 4 NVSwitch unit(s), 10 device(s)"));
  EXPECT_TRUE(Has(*ReadFile(dropin), "\npcie_root_port = 10\n"));
}

TEST_F(InstallTest, WithoutSysfsTheShippedRootPortsStayWithAWarning) {
  ASSERT_TRUE(WriteFileAtomic(Config(), kConfigV2));
  Outcome r = Install();
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(Has(r.out,
                  "WARNING: pcie_root_port in "
                  "/opt/kata/share/defaults/kata-containers/vfio-gpu/config.d/"
                  "50-vfio-gpu.toml keeps the shipped value: "))
      << r.out;
  EXPECT_TRUE(
      Has(*ReadFile(Kata("vfio-gpu/config.d/50-vfio-gpu.toml")), "\npcie_root_port = 12\n"));
}

TEST_F(InstallTest, UsageErrors) {
  Outcome r = Vfio("install");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "--host-root DIR is required")) << r.err;
  r = Install("--containerd-version banana");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "\"banana\" is not a version")) << r.err;
  r = Vfio("install --host-root " + root_ + " --shim-binary " + tmp_ / "nope");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Has(r.err, "pass --shim-binary PATH")) << r.err;
}

// `install --bind-gpus` through the binary on a fake host root. Nothing binds in a fake sysfs by
// itself, so FifoKernel plays the kernel from a thread of the test, in lockstep with the binary
// through FIFOs, whose open() waits for the other end. The host drivers' `unbind` files are FIFOs
// it reads: a BDF written there unbinds the device. Once a device waits with driver_override
// "vfio-pci" and no driver, the binary is on its way to `drivers_probe`, a FIFO whose reader the
// sim opens only after it has bound that device: when the binary's probe write returns, the device
// is bound, as drivers_probe does in the real kernel. While the sim is in drivers_probe, no unbind
// file has a reader, so the binary cannot reach the next device's probe before the sim is back.
// A device the test did not expect is bound all the same (and shows in the log), so a wrong
// binary fails the test instead of hanging it. (Devices with no driver skip `unbind`; none here.)
// Every FIFO end is opened O_CLOEXEC: the binary (popen) would otherwise inherit the unbind
// readers, and its opens would never wait.
class FifoKernel {
 public:
  explicit FifoKernel(FakeHost& host) : host_(host) {}
  ~FifoKernel() { Finish(); }

  ::testing::AssertionResult Start(const std::vector<std::string>& host_drivers) {
    for (const auto& drv : host_drivers) {
      std::string f = host_.roots().sysfs + "/bus/pci/drivers/" + drv + "/unbind";
      ::unlink(f.c_str());
      if (::mkfifo(f.c_str(), 0600) != 0)
        return ::testing::AssertionFailure() << "mkfifo " << f << ": " << std::strerror(errno);
      unbind_.push_back({f, -1, ""});
      if (!Reopen(unbind_.back()))
        return ::testing::AssertionFailure() << "open " << f << ": " << std::strerror(errno);
    }
    ::unlink(Probe().c_str());
    if (::mkfifo(Probe().c_str(), 0600) != 0)
      return ::testing::AssertionFailure() << "mkfifo " << Probe() << ": " << std::strerror(errno);
    thread_ = std::thread([this] { Run(); });
    return ::testing::AssertionSuccess();
  }
  // After the binary exited. Returns what it wrote, in order: "unbind <BDF>", "probe <BDF>".
  std::vector<std::string> Finish() {
    stop_ = true;
    while (thread_.joinable() && !done_) {  // the sim may wait for a probe that will not come
      int fd = ::open(Probe().c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) ::close(fd);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (thread_.joinable()) thread_.join();
    for (auto& u : unbind_) Close(u);
    return log_;
  }

 private:
  struct Fifo {
    std::string path;
    int fd;
    std::string data;
  };
  std::string Probe() const { return host_.roots().sysfs + "/bus/pci/drivers_probe"; }
  static bool Reopen(Fifo& f) {
    Close(f);
    f.fd = ::open(f.path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // never waits
    return f.fd >= 0;
  }
  static void Close(Fifo& f) {
    if (f.fd >= 0) ::close(f.fd);
    f.fd = -1;
  }
  std::string Attr(const std::string& bdf, const std::string& name) {
    auto v = ReadFile(host_.roots().PciDevice(bdf) + "/" + name);
    return v ? *v : "";
  }
  std::string DriverOf(const std::string& bdf) {
    auto d = LinkBasename(host_.roots().PciDevice(bdf) + "/driver");
    return d ? *d : "";
  }
  // A write to an unbind file is complete once its writer closed it (read() says end of file).
  void ServeUnbinds() {
    for (auto& u : unbind_)
      if (u.fd < 0) (void)Reopen(u);
    std::vector<pollfd> fds;
    for (const auto& u : unbind_) fds.push_back({u.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), 5) <= 0) return;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      Fifo& u = unbind_[i];
      char buf[256];
      ssize_t n;
      while ((n = ::read(u.fd, buf, sizeof buf)) > 0) u.data.append(buf, static_cast<size_t>(n));
      if (n != 0) continue;  // the writer is still there
      if (!u.data.empty()) {
        log_.push_back("unbind " + u.data);
        (void)host_.SetDriver(u.data, "");
        u.data.clear();
      }
      (void)Reopen(u);  // forget the writer that left, or poll says so forever
    }
  }
  void Run() {
    while (!stop_) {
      ServeUnbinds();
      auto names = ListDir(host_.roots().PciDevices());
      if (!names) continue;
      for (const auto& bdf : *names) {
        if (stop_ || Attr(bdf, "driver_override") != "vfio-pci" || !DriverOf(bdf).empty()) continue;
        // The binary is on its way to drivers_probe (or waits in its open): bind, then let it in.
        for (auto& u : unbind_) Close(u);
        (void)host_.SetDriver(bdf, "vfio-pci");
        std::string got;
        int fd = ::open(Probe().c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
          char buf[256];
          ssize_t n;
          while (got.size() < bdf.size() && (n = ::read(fd, buf, sizeof buf)) > 0)
            got.append(buf, static_cast<size_t>(n));
          ::close(fd);
        }
        log_.push_back("probe " + got);
      }
    }
    done_ = true;
  }

  FakeHost& host_;
  std::vector<Fifo> unbind_;
  std::vector<std::string> log_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// Short for the fake host's builder, as these tests read best.
FakeDevice Dev(const std::string& bdf, const std::string& parent, int group, uint32_t cls,
               const std::string& driver, uint16_t vendor = 0x10de) {
  return MakeFakeDevice(bdf, parent, group, cls, driver, vendor);
}

class BindGpusTest : public InstallTest {
 protected:
  void SetUp() override {
    InstallTest::SetUp();
    ASSERT_TRUE(WriteFileAtomic(Config(), kConfigV2));
    ASSERT_TRUE(BuildBindTestHost(host_));
  }
  // A GPU sharing IOMMU group 40 with a NIC (no ACS between them).
  void AddGpuBesideANic() {
    ASSERT_TRUE(host_.Add(Dev("0000:71:00.0", "pci0000:70", 40, k3dController, "nvidia")));
    ASSERT_TRUE(host_.Add(Dev("0000:71:00.1", "pci0000:70", 40, 0x020000, "mlx5_core", 0x15b3)));
  }
  std::string Driver(const std::string& bdf) {
    auto d = LinkBasename(host_.roots().PciDevice(bdf) + "/driver");
    return d ? *d : "";
  }
  std::string Override(const std::string& bdf) {
    auto o = ReadFile(host_.roots().PciDevice(bdf) + "/driver_override");
    return o ? *o : "?";
  }

  FakeHost host_{root_};
};

TEST_F(BindGpusTest, BindsTheGpusAndTheirGroupMatesThenHasNothingToDo) {
  // The dry run says what it would bind and writes nothing.
  auto before = Tree(root_);
  Outcome r = Install("--bind-gpus --dry-run");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(Tree(root_), before);
  for (const char* line : {
           "  would bind 0000:01:00.0 (GPU, IOMMU group 14) to vfio-pci (now nvidia)\n",
           "  would bind 0000:01:00.1 (group mate of 0000:01:00.0, IOMMU group 14) to vfio-pci "
           "(now snd_hda_intel)\n",
           "  unchanged  0000:41:00.0 (GPU, IOMMU group 20) already on vfio-pci\n",
       })
    EXPECT_TRUE(Has(r.out, line)) << line << "\n" << r.out;
  EXPECT_FALSE(Has(r.out, "0000:61:00.0")) << "the NIC is no GPU's group mate\n" << r.out;

  FifoKernel kernel(host_);
  ASSERT_TRUE(kernel.Start({"nvidia", "snd_hda_intel", "mlx5_core"}));
  r = Install("--bind-gpus");
  auto writes = kernel.Finish();
  ASSERT_EQ(r.code, 0) << r.out << r.err << ::testing::PrintToString(writes);
  EXPECT_EQ(writes, (std::vector<std::string>{"unbind 0000:01:00.0", "probe 0000:01:00.0",
                                              "unbind 0000:01:00.1", "probe 0000:01:00.1"}));
  for (const char* line : {
           "  bound      0000:01:00.0 (GPU, IOMMU group 14) to vfio-pci (was nvidia)\n",
           "  bound      0000:01:00.1 (group mate of 0000:01:00.0, IOMMU group 14) to vfio-pci "
           "(was snd_hda_intel)\n",
           "  unchanged  0000:41:00.0 (GPU, IOMMU group 20) already on vfio-pci\n",
           "created    /usr/local/bin/containerd-shim-vfio-gpu-v2",
           "restart containerd to load the vfio-gpu runtime",
       })
    EXPECT_TRUE(Has(r.out, line)) << line << "\n" << r.out;
  EXPECT_EQ(Driver("0000:01:00.0"), "vfio-pci");
  EXPECT_EQ(Driver("0000:01:00.1"), "vfio-pci");
  EXPECT_EQ(Override("0000:01:00.0"), "vfio-pci");
  EXPECT_EQ(Driver("0000:61:00.0"), "mlx5_core");
  EXPECT_EQ(Override("0000:61:00.0"), "(null)\n");
  EXPECT_TRUE(PathExists(host_.roots().VfioGroupNode(14)));

  // Everything bound and installed: the next run changes nothing and says so.
  auto installed = Tree(root_);
  r = Install("--bind-gpus");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(Has(r.out, "  unchanged  0000:01:00.0 (GPU, IOMMU group 14) already on vfio-pci\n"))
      << r.out;
  EXPECT_TRUE(Has(r.out,
                  "  unchanged  0000:01:00.1 (group mate of 0000:01:00.0, IOMMU group 14) "
                  "already on vfio-pci\n"))
      << r.out;
  EXPECT_TRUE(Has(r.out, "\nnothing to do\n")) << r.out;
  EXPECT_FALSE(Has(r.out, "bound      ")) << r.out;
  EXPECT_FALSE(Has(r.out, "restart containerd")) << r.out;
  EXPECT_EQ(Tree(root_), installed);
}

// A GPU whose IOMMU group holds a NIC: the NIC is never unbound (the node could lose its network),
// so the group cannot be passed through and its GPU stays on its driver. Both are reported, the
// GPU naming the NIC that blocks it; the rest of the run still happens and is reported, with the
// restart hint, before the command fails.
TEST_F(BindGpusTest, AGroupWithANicIsRefusedNamingItAndTheRestIsStillReported) {
  AddGpuBesideANic();
  FifoKernel kernel(host_);
  ASSERT_TRUE(kernel.Start({"nvidia", "snd_hda_intel", "mlx5_core"}));
  Outcome r = Install("--bind-gpus");
  kernel.Finish();
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  for (const char* line : {
           "  bound      0000:01:00.0 (GPU, IOMMU group 14) to vfio-pci (was nvidia)\n",
           "  REFUSED    0000:71:00.0 (GPU, IOMMU group 40): not bound: 0000:71:00.1 (ethernet "
           "controller on mlx5_core) shares IOMMU group 40",
           "bind 0000:71:00.1 to vfio-pci yourself",
           "  REFUSED    0000:71:00.1 (group mate of 0000:71:00.0, IOMMU group 40): ethernet "
           "controller on mlx5_core shares the IOMMU group; not unbinding it automatically",
       })
    EXPECT_TRUE(Has(r.out, line)) << line << "\n" << r.out;
  EXPECT_EQ(Driver("0000:71:00.0"), "nvidia");
  EXPECT_EQ(Override("0000:71:00.0"), "(null)\n");
  EXPECT_EQ(Driver("0000:71:00.1"), "mlx5_core");
  EXPECT_EQ(Override("0000:71:00.1"), "(null)\n");
  EXPECT_EQ(Driver("0000:01:00.0"), "vfio-pci");

  // What was changed and what containerd needs is said although the command fails: a second run
  // finds config.toml unchanged and would never say it again.
  EXPECT_TRUE(Has(r.out, "updated    /etc/containerd/config.toml")) << r.out;
  EXPECT_TRUE(Has(r.out, " change(s)\n")) << r.out;
  EXPECT_TRUE(Has(r.out,
                  "restart containerd to load the vfio-gpu runtime (systemctl restart "
                  "containerd)\n"))
      << r.out;
  EXPECT_LT(r.out.find("REFUSED"), r.out.find("restart containerd")) << r.out;
  EXPECT_TRUE(Has(r.err,
                  "vfio-gpu install: not finished: 0000:71:00.0 not bound (REFUSED), "
                  "0000:71:00.1 not bound (REFUSED)"))
      << r.err;
  EXPECT_TRUE(Has(r.err, "the changes listed were made")) << r.err;

  // Run again: nothing left to change, the refusal still fails the command.
  r = Install("--bind-gpus");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(Has(r.out, "REFUSED    0000:71:00.0")) << r.out;
  EXPECT_TRUE(Has(r.out, "\nnothing changed\n")) << r.out;
  EXPECT_FALSE(Has(r.out, "nothing to do")) << r.out;
}

TEST_F(BindGpusTest, RestartContainerdIsHonouredWhenALaterStepFails) {
  AddGpuBesideANic();
  FifoKernel kernel(host_);
  ASSERT_TRUE(kernel.Start({"nvidia", "snd_hda_intel", "mlx5_core"}));
  std::string marker = tmp_ / "restarted";
  Outcome r = Shell("VFIO_GPU_RESTART_CMD='echo restart >> " + marker + "' " + VFIO_GPU_BIN +
                        " install --host-root " + root_ + " --shim-binary " + shim_ +
                        " --bind-gpus --restart-containerd",
                    tmp_);
  kernel.Finish();
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(Has(r.out, "restarted containerd (/bin/sh -c echo restart >> ")) << r.out;
  auto restarted = ReadFile(marker);
  EXPECT_TRUE(restarted.ok() && *restarted == "restart\n") << r.out;
  EXPECT_TRUE(Has(r.err, "0000:71:00.0 not bound (REFUSED)")) << r.err;
}

// containerd reads config.toml and what its `imports` reach (2.2's default conf.d/*.toml import
// only without a config.toml): a drop-in nothing imports is reported, naming it and the entry to
// add.
TEST_F(InstallTest, DoctorReportsAContainerdDropInNoImportReaches) {
  ASSERT_TRUE(MakeDirs(root_ + "/sys"));
  ASSERT_TRUE(WriteFileAtomic(Config(), kConfigV3));
  ASSERT_EQ(Install().code, 0);  // conf.d/50-vfio-gpu.toml and its import
  std::string dropin = "/etc/containerd/conf.d/50-vfio-gpu.toml";
  auto doctor = [&](const std::string& extra = "") {
    return Vfio("doctor --host-root " + root_ + " " + extra);
  };
  Outcome r = doctor();
  for (const char* line : {
           "ok    containerd reads /etc/containerd/conf.d/50-vfio-gpu.toml\n",
           "ok    containerd runtime vfio-gpu with runtime_type io.containerd.vfio-gpu.v2 "
           "(/etc/containerd/conf.d/50-vfio-gpu.toml)\n",
       })
    EXPECT_TRUE(Has(r.out, line)) << line << "\n" << r.out;

  // config.toml without the import (2.2's default does not apply: config.toml exists).
  std::string no_import = "version = 3\nroot = \"/var/lib/containerd\"\n";
  ASSERT_TRUE(WriteFileAtomic(Config(), no_import));
  r = doctor("--containerd-version 2.2.0");
  EXPECT_EQ(r.code, 1);
  for (const char* line : {
           "FAIL  containerd reads /etc/containerd/conf.d/50-vfio-gpu.toml\n      fix: no "
           "`imports` entry of /etc/containerd/config.toml reaches it, so containerd never reads "
           "it",
           "add it to `imports` in /etc/containerd/config.toml (imports = "
           "[\"/etc/containerd/conf.d/*.toml\"] covers every drop-in there) and restart containerd",
           "FAIL  containerd runtime vfio-gpu with runtime_type io.containerd.vfio-gpu.v2\n      "
           "fix: no file containerd reads defines it; /etc/containerd/conf.d/50-vfio-gpu.toml "
           "does, but containerd does not read it",
       })
    EXPECT_TRUE(Has(r.out, line)) << line << "\n" << r.out;
  EXPECT_FALSE(Has(r.out, "ok    containerd runtime")) << r.out;

  // An import of another file does not reach it; a relative glob does; a missing file is named.
  ASSERT_TRUE(WriteFileAtomic(Config(), "version = 3\nimports = [\"/etc/containerd/x.toml\"]\n"));
  ASSERT_TRUE(WriteFileAtomic(root_ + "/etc/containerd/x.toml", "version = 3\n"));
  r = doctor();
  EXPECT_TRUE(Has(r.out, "FAIL  containerd reads " + dropin)) << r.out;
  ASSERT_TRUE(WriteFileAtomic(Config(), "version = 3\nimports = [\"conf.d/*.toml\"]\n"));
  r = doctor();
  EXPECT_TRUE(Has(r.out, "ok    containerd reads " + dropin)) << r.out;
  EXPECT_TRUE(Has(r.out, "ok    containerd runtime vfio-gpu")) << r.out;
  ASSERT_TRUE(WriteFileAtomic(Config(),
                              "version = 3\nimports = [\"/etc/containerd/gone.toml\", "
                              "\"/etc/containerd/conf.d/50-vfio-gpu.toml\"]\n"));
  r = doctor();
  EXPECT_TRUE(Has(r.out, "ok    containerd reads " + dropin)) << r.out;
  EXPECT_TRUE(Has(r.out,
                  "FAIL  containerd import /etc/containerd/gone.toml exists\n      fix: "
                  "an imports entry names it but it cannot be read"))
      << r.out;
  EXPECT_TRUE(Has(r.out, "containerd will not start: create it or remove the entry")) << r.out;

  // No config.toml: only containerd 2.2 and later read conf.d/, so the version decides.
  ASSERT_TRUE(RemoveFile(Config()));
  r = doctor();
  EXPECT_TRUE(Has(r.out, "FAIL  containerd reads " + dropin +
                             "\n      fix: there is no /etc/containerd/config.toml, and only "
                             "containerd 2.2 and later read conf.d/*.toml without one: on 2.2 or "
                             "later pass --containerd-version"))
      << r.out;
  r = doctor("--containerd-version 2.1.4");
  EXPECT_TRUE(Has(r.out, "FAIL  containerd reads " + dropin +
                             "\n      fix: there is no /etc/containerd/config.toml, and containerd "
                             "2.1 reads conf.d/ only through one"))
      << r.out;
  EXPECT_TRUE(Has(r.out,
                  "create it with version = 3 and imports = "
                  "[\"/etc/containerd/conf.d/*.toml\"]"))
      << r.out;
  r = doctor("--containerd-version v2.2.1");
  EXPECT_TRUE(Has(r.out, "ok    containerd reads " + dropin)) << r.out;
  EXPECT_TRUE(Has(r.out, "ok    containerd runtime vfio-gpu")) << r.out;
  r = doctor("--containerd-version banana");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "--containerd-version \"banana\" is not a version")) << r.err;
}

// The device plugin answers with CDI names, which containerd resolves only with enable_cdi: off by
// default on containerd 1.7, on by default on 2.x, where the last file read that sets it decides.
TEST_F(InstallTest, DoctorReportsCdiTurnedOffInContainerd) {
  ASSERT_TRUE(MakeDirs(root_ + "/sys"));
  auto doctor = [&](const std::string& extra = "") {
    return Vfio("doctor --host-root " + root_ + " " + extra);
  };
  // 1.7, a config.toml that names our runtime (by hand) but leaves enable_cdi at its default.
  std::string v2 =
      "version = 2\n"
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.vfio-gpu]\n"
      "  runtime_type = \"io.containerd.vfio-gpu.v2\"\n"
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
      "  runtime_type = \"io.containerd.runc.v2\"\n";
  ASSERT_TRUE(WriteFileAtomic(Config(), v2));
  Outcome r = doctor();
  EXPECT_EQ(r.code, 1);
  for (const char* line : {
           "FAIL  containerd CDI on: enable_cdi in [plugins.\"io.containerd.grpc.v1.cri\"] (not "
           "set: containerd 1.7's default, false)\n      fix: containerd cannot resolve the CDI "
           "devices the device plugin allocates, so GPU containers fail to start: set enable_cdi = "
           "true in [plugins.\"io.containerd.grpc.v1.cri\"] of /etc/containerd/config.toml and "
           "restart containerd (`vfio-gpu install --host-root /` sets it)",
           "containerd 1.6 has no CDI: run the plugin with allocate_strategy \"device-specs\" "
           "there",
       })
    EXPECT_TRUE(Has(r.out, line)) << line << "\n" << r.out;
  // Set to false: named with its line.
  ASSERT_TRUE(WriteFileAtomic(
      Config(), v2 + "[plugins.\"io.containerd.grpc.v1.cri\"]\n  enable_cdi = false\n"));
  r = doctor();
  EXPECT_TRUE(Has(r.out,
                  "FAIL  containerd CDI on: enable_cdi in [plugins.\"io.containerd.grpc.v1.cri\"] "
                  "(false in /etc/containerd/config.toml:7)\n"))
      << r.out;
  // A plugin that does not use CDI (device-specs) does not need it.
  ASSERT_TRUE(WriteFileAtomic(tmp_ / "ds.json", R"({"allocate_strategy": "device-specs"})"));
  r = doctor("--config " + tmp_ / "ds.json");
  EXPECT_FALSE(Has(r.out, "containerd CDI")) << r.out;
  // install turns it on (the abridged 1.7 config sets it false): doctor agrees.
  ASSERT_TRUE(WriteFileAtomic(Config(), kConfigV2));
  r = doctor();
  EXPECT_TRUE(Has(r.out, "FAIL  containerd CDI on")) << r.out;
  ASSERT_EQ(Install().code, 0);
  r = doctor();
  EXPECT_TRUE(Has(r.out,
                  "ok    containerd CDI on: enable_cdi in [plugins.\"io.containerd.grpc.v1.cri\"] "
                  "(true in /etc/containerd/config.toml:"))
      << r.out;
  ASSERT_EQ(Vfio("uninstall --host-root " + root_).code, 0);

  // 2.x: a false in the only file that sets it.
  std::string v3 =
      "version = 3\n"
      "[plugins.\"io.containerd.cri.v1.runtime\"]\n"
      "  enable_cdi = false\n"
      "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.vfio-gpu]\n"
      "  runtime_type = \"io.containerd.vfio-gpu.v2\"\n";
  ASSERT_TRUE(WriteFileAtomic(Config(), v3));
  r = doctor();
  EXPECT_TRUE(
      Has(r.out,
          "FAIL  containerd CDI on: enable_cdi in [plugins.\"io.containerd.cri.v1.runtime\"] "
          "(false in /etc/containerd/config.toml:3)\n      fix: containerd cannot resolve "
          "the CDI devices"))
      << r.out;
  // Our drop-in, read after config.toml, turns it back on...
  ASSERT_TRUE(WriteFileAtomic(Config(),
                              "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\"]\n"
                              "  enable_cdi = false\n"));
  ASSERT_EQ(Install().code, 0);
  r = doctor();
  EXPECT_TRUE(
      Has(r.out,
          "ok    containerd CDI on: enable_cdi in [plugins.\"io.containerd.cri.v1.runtime\"] "
          "(true in /etc/containerd/conf.d/50-vfio-gpu.toml:"))
      << r.out;
  // ... and an operator's drop-in read after ours turns it off again.
  ASSERT_TRUE(WriteFileAtomic(root_ + "/etc/containerd/conf.d/60-local.toml",
                              "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\"]\n"
                              "  enable_cdi = false\n"));
  ASSERT_TRUE(WriteFileAtomic(Config(), "version = 3\nimports = [\"conf.d/*.toml\"]\n"));
  r = doctor();
  EXPECT_TRUE(
      Has(r.out,
          "FAIL  containerd CDI on: enable_cdi in [plugins.\"io.containerd.cri.v1.runtime\"] "
          "(false in /etc/containerd/conf.d/60-local.toml:3)\n      fix: containerd cannot "
          "resolve the CDI devices the device plugin allocates, so GPU containers fail to "
          "start: set enable_cdi = true in [plugins.\"io.containerd.cri.v1.runtime\"] of "
          "/etc/containerd/conf.d/60-local.toml and restart containerd"))
      << r.out;
  // Not set anywhere: 2.x's default is on.
  ASSERT_TRUE(RemoveFile(root_ + "/etc/containerd/conf.d/60-local.toml"));
  ASSERT_TRUE(RemoveFile(root_ + "/etc/containerd/conf.d/50-vfio-gpu.toml"));
  r = doctor();
  EXPECT_TRUE(
      Has(r.out,
          "ok    containerd CDI on: enable_cdi in [plugins.\"io.containerd.cri.v1.runtime\"] "
          "(not set: containerd 2.x's default, true)"))
      << r.out;
}

// doctor --host-root on a host that install prepared, then broken one piece at a time.
TEST_F(InstallTest, DoctorOnAGoodAndABrokenHostRoot) {
  FakeHost host(root_);
  ASSERT_TRUE(BuildConsumerGpuHost(host, true));
  for (const char* m : {"vfio", "vfio_pci", "vfio_iommu_type1"})
    ASSERT_TRUE(MakeDirs(host.roots().sysfs + "/module/" + m));
  ASSERT_TRUE(WriteFileAtomic(host.roots().VfioContainerNode(), ""));
  ASSERT_TRUE(WriteFileAtomic(Config(), kConfigV2));
  ASSERT_EQ(Install().code, 0);
  ASSERT_TRUE(MakeDirs(root_ + "/var/run/cdi"));
  ASSERT_TRUE(WriteFileAtomic(root_ + "/var/run/cdi/vfio-gpu-nvidia.com-pgpu.json", "{}"));
  ASSERT_TRUE(MakeDirs(root_ + "/var/lib/kubelet/pod-resources"));
  std::string sock = root_ + "/var/lib/kubelet/pod-resources/kubelet.sock";
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock.size(), sizeof addr.sun_path);
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);

  Outcome r = Vfio("doctor --host-root " + root_);
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* line : {
           "ok    containerd runtime vfio-gpu with runtime_type io.containerd.vfio-gpu.v2 "
           "(/etc/containerd/config.toml)",
           "ok    containerd default runtime \"runc\" is defined beside vfio-gpu "
           "(/etc/containerd/config.toml)",
           "ok    shim binary containerd-shim-vfio-gpu-v2 (/usr/local/bin/",
           "ok    Kata VFIO ports: cold_plug_vfio = \"root-port\" "
           "(/opt/kata/share/defaults/kata-containers/vfio-gpu/config.d/50-vfio-gpu.toml)",
           "ok    CDI dir /var/run/cdi holds vfio-gpu's specs (1 vfio-gpu-*)",
           "ok    kubelet pod resources socket /var/lib/kubelet/pod-resources/kubelet.sock",
           "node is ready for GPU passthrough",
       })
    EXPECT_TRUE(Has(r.out, line)) << line << "\n" << r.out;

  // A local drop-in turns cold plug off; the shim is gone; the socket is gone; CDI specs gone.
  ASSERT_TRUE(WriteFileAtomic(Kata("vfio-gpu/config.d/60-local.toml"),
                              "[hypervisor.qemu]\ncold_plug_vfio = \"no-port\"\n"));
  ASSERT_TRUE(RemoveFile(root_ + "/usr/local/bin/containerd-shim-vfio-gpu-v2"));
  ::close(fd);
  ASSERT_TRUE(RemoveFile(sock));
  ASSERT_TRUE(RemoveFile(root_ + "/var/run/cdi/vfio-gpu-nvidia.com-pgpu.json"));
  r = Vfio("doctor --host-root " + root_);
  EXPECT_EQ(r.code, 1);
  for (const char* line : {
           "FAIL  Kata VFIO ports: cold_plug_vfio = \"no-port\" "
           "(/opt/kata/share/defaults/kata-containers/vfio-gpu/config.d/60-local.toml)",
           "fix: GPUs get no PCIe port in the VM: set cold_plug_vfio = \"root-port\"",
           "FAIL  shim binary containerd-shim-vfio-gpu-v2 on containerd's PATH",
           "FAIL  kubelet pod resources socket",
           "FAIL  CDI dir /var/run/cdi holds vfio-gpu's specs (0 vfio-gpu-*)",
           "4 problem(s) found",
       })
    EXPECT_TRUE(Has(r.out, line)) << line << "\n" << r.out;

  // A config.toml merged by an installer that did not add runc (containerd 1.x drops CRI).
  ASSERT_EQ(Vfio("uninstall --host-root " + root_).code, 0);
  ASSERT_TRUE(WriteFileAtomic(Config(), "version = 2\n"));
  ASSERT_EQ(Install().code, 0);
  std::string merged = *ReadFile(Config());
  std::string runc =
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
      "  runtime_type = \"io.containerd.runc.v2\"\n";
  ASSERT_TRUE(Has(merged, runc)) << merged;
  merged.erase(merged.find(runc), runc.size());
  ASSERT_TRUE(WriteFileAtomic(Config(), merged));
  r = Vfio("doctor --host-root " + root_);
  EXPECT_TRUE(Has(r.out,
                  "FAIL  containerd default runtime \"runc\" is defined beside vfio-gpu "
                  "(/etc/containerd/config.toml)"))
      << r.out;
  EXPECT_TRUE(Has(r.out, "(it adds runc's entry)")) << r.out;

  // No runtime entry, no Kata configuration.
  ASSERT_EQ(Vfio("uninstall --host-root " + root_).code, 0);
  ASSERT_TRUE(RemoveFile(Kata("vfio-gpu/config.d/60-local.toml")));
  r = Vfio("doctor --host-root " + root_);
  EXPECT_TRUE(Has(r.out, "FAIL  containerd runtime vfio-gpu")) << r.out;
  EXPECT_TRUE(Has(r.out, "run `vfio-gpu install --host-root /` and restart containerd")) << r.out;
  EXPECT_TRUE(Has(r.out,
                  "FAIL  Kata configuration /opt/kata/share/defaults/kata-containers/"
                  "vfio-gpu/configuration-qemu-nvidia-gpu.toml (ConfigPath) exists"))
      << r.out;
}

}  // namespace
}  // namespace vfio_gpu
