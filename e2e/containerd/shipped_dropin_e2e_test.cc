// The files we ship, installed the way an operator installs them, loaded by a real containerd:
// `vfio-gpu install --host-root <tmp>/host` writes the shim, merges runtimeclasses/containerd/v2
// into <tmp>/host/etc/containerd/config.toml (Debian's containerd 1.6 reads config version 2),
// copies Kata's GPU configuration into our private dir and puts the Kata drop-in beside it. Then
// containerd runs on that config.toml with the installed shim found on its PATH, and `ctr run`
// goes through the runtime type and ConfigPath read back from what install wrote.
//
// What is not as on a node: Kata cannot run here (no KVM, no Kata packages), so the shim's
// downstream is containerd-shim-runc-v2, set through VFIO_GPU_SHIM_CONFIG (a copy of the installed
// shim.json with the downstream, the fake sysfs/dev roots, a temp run dir and authorize off, as
// there is no kubelet). ctr does not use the CRI plugin's runtime table (only the kubelet's CRI
// calls do), so the table is checked as containerd's CRI plugin parsed it (it logs its config) and
// ctr runs with the table's runtime type. The table's ConfigPath reaches the shim as the shim
// config's kata_config_path: on a node the CRI plugin sends it as runtime options, which runc's
// shim, the downstream here, refuses (Kata's options type); ctr's `--runtime-config-path` (the same
// options) is used only where our shim refuses the start before runc would see them.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/files.h"
#include "common/json.h"
#include "common/strings.h"
#include "common/toml.h"
#include "e2e/containerd/containerd_harness.h"
#include "hostmodel/fake_host.h"
#include "test/support/run_binary.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu::e2e {
namespace {

bool Has(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

constexpr const char* kKataDefaults = "/opt/kata/share/defaults/kata-containers";

class ShippedDropInE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string missing = MissingPrerequisites(); !missing.empty()) GTEST_SKIP() << missing;
    t_ = std::make_unique<testing::TempDir>();
    const std::string T = t_->path();
    host_ = std::make_unique<FakeHost>(Host(""));  // <host>/sys and <host>/dev
    ASSERT_TRUE(BuildE2eHost(*host_).ok());
    ASSERT_TRUE(MakeBusyboxRootfs(T + "/rootfs").ok());
    // Kata older than 3.25: its GPU configuration has no VFIO ports, so only our config.d drop-in
    // makes it GPU-capable.
    ASSERT_TRUE(MakeDirs(Host(kKataDefaults)).ok());
    ASSERT_TRUE(MakeDirs(Host("/etc/containerd")).ok());
    ASSERT_TRUE(WriteFileAtomic(Host(kKataDefaults) + "/configuration-qemu-nvidia-gpu.toml",
                                "[hypervisor.qemu]\npath = \"/opt/kata/bin/qemu-system-x86_64\"\n"
                                "cold_plug_vfio = \"no-port\"\n\n[runtime]\n")
                    .ok());
    // Like Debian's own /etc/containerd/config.toml (version 2, no runtime named), with root,
    // state and sockets in the temp dir.
    ASSERT_TRUE(WriteFileAtomic(Host("/etc/containerd/config.toml"), ContainerdConfig(T)).ok());

    testing::Outcome install =
        testing::RunCommand(std::string(VFIO_GPU_BIN) + " install --host-root " + Host("") +
                                " --shim-binary " + SHIM_BINARY,
                            T + "/install.err");
    ASSERT_EQ(install.code, 0) << install.out << install.err;
    install_output_ = install.out;

    // What containerd will read, as install wrote it.
    auto text = ReadFile(Host("/etc/containerd/config.toml"));
    ASSERT_TRUE(text.ok());
    auto doc = ParseToml(*text, "installed config.toml");
    ASSERT_TRUE(doc.ok()) << doc.error().message();
    const TomlValue* rt =
        doc->Find({"plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes", "vfio-gpu"});
    ASSERT_NE(rt, nullptr) << *text;
    ASSERT_NE(rt->Find("runtime_type"), nullptr);
    runtime_type_ = rt->Find("runtime_type")->str;
    const TomlValue* cp = rt->Find({"options", "ConfigPath"});
    ASSERT_NE(cp, nullptr) << *text;
    config_path_ = cp->str;

    // The installed shim.json with what differs on this machine.
    auto shim_json = Json::ParseFile(Host("/etc/vfio-gpu/shim.json"));
    ASSERT_TRUE(shim_json.ok()) << shim_json.error().message();
    Json cfg = *shim_json;
    cfg.Set("downstream_shim", Json::String("containerd-shim-runc-v2"));
    cfg.Set("sysfs_root", Json::String(host_->roots().sysfs));
    cfg.Set("dev_root", Json::String(host_->roots().dev));
    cfg.Set("run_dir", Json::String(T + "/run"));
    cfg.Set("authorize", Json::String("off"));  // plain ctr runs: no kubelet to ask
    // The installed ConfigPath (under the fake root) as the shim's fallback: on a node the CRI
    // plugin sends it as runtime options, but runc's shim, our downstream here, refuses Kata's
    // options type ("type with url runtimeoptions.v1.Options: not found"), so a container that
    // must start gets none; the refusal test passes them with --runtime-config-path.
    cfg.Set("kata_config_path", Json::String(Host(config_path_)));
    ASSERT_TRUE(WriteFileAtomic(T + "/shim.json", cfg.Dump(true)).ok());

    auto c =
        Containerd::Start({.config = Host("/etc/containerd/config.toml"),
                           .dir = T,
                           .path_prefix = Host("/usr/local/bin"),  // where install put the shim
                           .env = {{"VFIO_GPU_SHIM_CONFIG", T + "/shim.json"}}});
    ASSERT_TRUE(c.ok()) << c.error().message();
    containerd_ = std::move(*c);
  }

  // A host path under the fake host root.
  std::string Host(const std::string& path) const { return t_->path() + "/host" + path; }
  std::string Node(int g) const { return host_->roots().VfioGroupNode(g); }
  std::string Rootfs() const { return t_->path() + "/rootfs"; }

  std::unique_ptr<testing::TempDir> t_;
  std::unique_ptr<FakeHost> host_;
  std::unique_ptr<Containerd> containerd_;  // stopped before the temp dir goes
  std::string install_output_;
  std::string runtime_type_;
  std::string config_path_;
};

TEST_F(ShippedDropInE2E, ContainerdLoadsTheInstalledRuntimeTable) {
  EXPECT_TRUE(Has(install_output_, "created    /usr/local/bin/containerd-shim-vfio-gpu-v2"))
      << install_output_;
  EXPECT_TRUE(Has(install_output_, "updated    /etc/containerd/config.toml")) << install_output_;
  // The names that tie the chain together: the type names the binary containerd looks for.
  EXPECT_EQ(runtime_type_, "io.containerd.vfio-gpu.v2");
  EXPECT_TRUE(PathExists(Host("/usr/local/bin/containerd-shim-vfio-gpu-v2")));
  EXPECT_EQ(config_path_,
            std::string(kKataDefaults) + "/vfio-gpu/configuration-qemu-nvidia-gpu.toml");

  // The Kata drop-in was sized from this fake host: seed 003's four A10s and the consumer GPU
  // with its audio function.
  EXPECT_TRUE(Has(Slurp(Host(kKataDefaults) + "/vfio-gpu/config.d/50-vfio-gpu.toml"),
                  "5 GPU unit(s) and 0 NVSwitch unit(s), 6 device(s) to pass through"));

  // The CRI plugin loaded: a config.toml naming only our runtimes would have disabled it.
  testing::Outcome plugins = containerd_->Ctr("plugins ls");
  ASSERT_EQ(plugins.code, 0) << plugins.out;
  bool cri_ok = false;
  for (const auto& line : Split(plugins.out, '\n'))
    if (Has(line, "io.containerd.grpc.v1") && Has(line, " cri ")) cri_ok = Has(line, " ok");
  EXPECT_TRUE(cri_ok) << plugins.out << containerd_->Log();

  // The runtime entry as containerd 1.6's CRI plugin parsed it (it logs its config with %+v).
  std::string log = containerd_->Log();
  for (const std::string& part : {
           std::string("vfio-gpu:{Type:io.containerd.vfio-gpu.v2 "),
           std::string("PodAnnotations:[io.katacontainers.* vfio-gpu.io/*] "
                       "ContainerAnnotations:[io.katacontainers.* vfio-gpu.io/*]"),
           "Options:map[ConfigPath:" + config_path_ + "] PrivilegedWithoutHostDevices:true",
           std::string("vfio-gpu-snp:{Type:io.containerd.vfio-gpu.v2 "),
           std::string("vfio-gpu-tdx:{Type:io.containerd.vfio-gpu.v2 "),
           std::string("runc:{Type:io.containerd.runc.v2 "),
       })
    EXPECT_TRUE(Has(log, part)) << part << "\n" << log;
}

TEST_F(ShippedDropInE2E, CtrRunsThroughTheRuntimeAndTheGroupReachesTheSpecOnce) {
  testing::Outcome run =
      containerd_->Ctr("run -d --rootfs --runtime " + runtime_type_ + " --device " + Node(25) +
                       " --device " + Node(25) + " " + Rootfs() + " gpu1 /bin/sleep 60");
  ASSERT_EQ(run.code, 0) << run.out << Slurp(t_->path() + "/run/shim.log");
  testing::Outcome tasks = containerd_->Ctr("task ls");
  EXPECT_TRUE(Has(tasks.out, "gpu1")) << tasks.out;
  EXPECT_TRUE(Has(tasks.out, "RUNNING")) << tasks.out;
  EXPECT_EQ(CountSpecDevices(containerd_->Bundle("gpu1"), Node(25)), 1)
      << Slurp(containerd_->Bundle("gpu1") + "/config.json");
  // The container has the group node (runc made it from the spec's single entry).
  testing::Outcome ls = containerd_->Ctr("task exec --exec-id ls1 gpu1 /bin/ls -l " + Node(25));
  EXPECT_EQ(ls.code, 0) << ls.out;
  EXPECT_TRUE(!ls.out.empty() && ls.out[0] == 'c') << ls.out;

  // The shim judged the Kata configuration install wrote: Kata's file (no ports) plus our
  // config.d drop-in (root-port) beside the copy.
  std::string shim_log = Slurp(t_->path() + "/run/shim.log");
  EXPECT_TRUE(Has(shim_log, "\"hook\":\"runtime\",\"action\":\"kept\"")) << shim_log;
  EXPECT_TRUE(Has(shim_log, "GPU-capable: " + Host(config_path_))) << shim_log;
  EXPECT_TRUE(Has(shim_log, "\"hook\":\"dedup\",\"action\":\"removed\"")) << shim_log;

  ASSERT_TRUE(containerd_->Remove("gpu1").ok());
  EXPECT_FALSE(PathExists(t_->path() + "/run/ledger/0000:17:00.0")) << "delete releases the claim";
}

TEST_F(ShippedDropInE2E, WithoutOurKataDropInTheOldKataConfigIsRefused) {
  // Kata's own file, which has no config.d/ of ours beside it: the shim refuses the GPU sandbox.
  testing::Outcome run =
      containerd_->Ctr("run --rm --rootfs --runtime " + runtime_type_ + " --runtime-config-path " +
                       Host(kKataDefaults) + "/configuration-qemu-nvidia-gpu.toml --device " +
                       Node(31) + " " + Rootfs() + " gpu2 /bin/true");
  EXPECT_NE(run.code, 0);
  EXPECT_TRUE(Has(run.out, "failed to start shim")) << run.out;
  EXPECT_TRUE(Has(run.out, "cold_plug_vfio=\"no-port\"")) << run.out;
  EXPECT_TRUE(Has(run.out, "RuntimeClass kata-qemu-vfio-gpu")) << run.out;
}

}  // namespace
}  // namespace vfio_gpu::e2e
