// The CLI as operators run it: through the binary, reading its stdout, stderr and exit code.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "common/files.h"
#include "common/json.h"
#include "hostmodel/fake_host.h"
#include "test/support/run_binary.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu {
namespace {

using testing::TempDir;

using testing::Outcome;

Outcome VfioGpu(const std::string& args, const TempDir& tmp) {
  return testing::RunCommand(std::string(VFIO_GPU_BIN) + " " + args, tmp / "stderr");
}

class CliTest : public ::testing::Test {
 protected:
  std::string Roots() const {
    return "--sysfs-root " + host_.roots().sysfs + " --dev-root " + host_.roots().dev;
  }
  TempDir tmp_;
  FakeHost host_{tmp_.path() + "/host"};
};

TEST_F(CliTest, ScanJsonHasTheContractFields) {
  ASSERT_TRUE(BuildConsumerGpuHost(host_, false));
  ASSERT_TRUE(BuildMixedDriverHost(host_));
  Outcome r = VfioGpu("scan --json " + Roots(), tmp_);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = Json::Parse(r.out, "scan output");
  ASSERT_TRUE(j.ok()) << r.out;
  Json units = j->Get("units");
  ASSERT_EQ(units.size(), 2u);
  Json u = units.At(0);
  EXPECT_EQ(u.Get("id").AsString(), "0000:01:00.0");
  EXPECT_EQ(u.Get("resource").AsString(), "nvidia.com/pgpu");
  EXPECT_EQ(u.Get("cdi_device").AsString(), "nvidia.com/pgpu=0000:01:00.0");
  EXPECT_EQ(u.Get("iommu_group").AsInt(), 14);
  EXPECT_TRUE(u.Get("numa_node").is_int());
  EXPECT_FALSE(u.Get("viable").AsBool());
  EXPECT_NE(u.Get("reason").AsString().find("snd_hda_intel"), std::string::npos);
  Json members = u.Get("members");
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(members.At(1).Get("bdf").AsString(), "0000:01:00.1");
  EXPECT_EQ(members.At(1).Get("driver").AsString(), "snd_hda_intel");
  EXPECT_EQ(members.At(1).Get("class").AsString(), "0x040300");
  EXPECT_TRUE(units.At(1).Get("viable").AsBool());
  EXPECT_EQ(units.At(1).Get("reason").AsString(), "");
  Json skipped = j->Get("skipped");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped.At(0).Get("bdf").AsString(), "0000:42:00.0");
  EXPECT_NE(skipped.At(0).Get("reason").AsString().find("nvidia"), std::string::npos);
}

TEST_F(CliTest, ScanJsonNumaNullWhenNone) {
  ASSERT_TRUE(BuildNoNumaHost(host_));
  Outcome r = VfioGpu("scan --json " + Roots(), tmp_);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = Json::Parse(r.out, "scan output");
  ASSERT_TRUE(j.ok());
  EXPECT_TRUE(j->Get("units").At(0).Has("numa_node"));
  EXPECT_TRUE(j->Get("units").At(0).Get("numa_node").is_null());
}

TEST_F(CliTest, ScanTableNamesUnitsAndReasons) {
  ASSERT_TRUE(BuildSeedA10Host(host_));
  ASSERT_TRUE(host_.SetDriver("0000:ca:00.0", "nvidia"));
  Outcome r = VfioGpu("scan " + Roots(), tmp_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("0000:17:00.0  nvidia.com/pgpu  25"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GA102GL [A10]"), std::string::npos);
  EXPECT_NE(r.out.find("0000:ca:00.0  3D controller 0000:ca:00.0 is bound to nvidia"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST_F(CliTest, ScanWithConfigSelectsVendors) {
  ASSERT_TRUE(BuildSeedA10Host(host_));
  ASSERT_TRUE(host_.SetDriver("0000:4b:00.0", "vfio-pci"));
  ASSERT_TRUE(
      WriteFileAtomic(tmp_ / "cfg.json", R"({"vendors": ["0x15b3"], "gpu_classes": ["0x0200"]})"));
  Outcome r = VfioGpu("scan --json --config " + tmp_ / "cfg.json" + " " + Roots(), tmp_);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = Json::Parse(r.out, "scan output");
  ASSERT_EQ(j->Get("units").size(), 1u);
  EXPECT_EQ(j->Get("units").At(0).Get("id").AsString(), "0000:4b:00.0");
}

TEST_F(CliTest, BadUsageExitsTwoAndNamesTheProblem) {
  Outcome r = VfioGpu("scan --bogus", tmp_);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
  r = VfioGpu("scan --sysfs-root", tmp_);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--sysfs-root needs a value"), std::string::npos) << r.err;
  r = VfioGpu("frobnicate", tmp_);
  EXPECT_EQ(r.code, 2);
  r = VfioGpu("", tmp_);
  EXPECT_EQ(r.code, 2);
  r = VfioGpu("scan --sysfs-root " + tmp_ / "nope", tmp_);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(tmp_ / "nope"), std::string::npos) << r.err;
  ASSERT_TRUE(WriteFileAtomic(tmp_ / "bad.json", R"({"vendorz": []})"));
  r = VfioGpu("scan --config " + tmp_ / "bad.json", tmp_);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("\"vendorz\""), std::string::npos) << r.err;
  r = VfioGpu("cdi", tmp_);
  EXPECT_EQ(r.code, 2);
}

// A bad --config beside --sysfs-root / --dev-root: the file's own error, naming the key, is what
// the operator sees (it used to be `unknown argument "--sysfs-root"`, the flags after --config
// never having been read).
TEST_F(CliTest, ABadConfigIsReportedByItsKeyWhateverFlagsFollow) {
  ASSERT_TRUE(BuildSeedA10Host(host_));
  std::string bad = tmp_ / "bad.json";
  ASSERT_TRUE(WriteFileAtomic(bad, R"({"bogus": 1})"));
  for (const std::string cmd : {"scan", "scan --json", "cdi generate"}) {
    Outcome r = VfioGpu(cmd + " --config " + bad + " " + Roots(), tmp_);
    EXPECT_EQ(r.code, 2) << cmd;
    EXPECT_NE(r.err.find("config " + bad + ": unknown key \"bogus\""), std::string::npos)
        << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("remove it or fix its spelling"), std::string::npos) << cmd << r.err;
    EXPECT_EQ(r.err.find("unknown argument"), std::string::npos) << cmd << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << cmd << ": " << r.out;
  }
  // A bad value is named the same way, and a genuinely unknown flag is still reported.
  ASSERT_TRUE(WriteFileAtomic(bad, R"({"log_format": "xml"})"));
  Outcome r = VfioGpu("cdi generate " + Roots() + " --config " + bad, tmp_);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("log_format"), std::string::npos) << r.err;
  r = VfioGpu("scan --config " + bad + " " + Roots() + " --bogus", tmp_);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown argument \"--bogus\""), std::string::npos) << r.err;
}

// Every subcommand takes --help (and -h) the way the top level does: its own usage on stdout,
// exit 0, even beside other flags or a missing required one.
TEST_F(CliTest, EverySubcommandPrintsItsUsageOnHelp) {
  const std::vector<std::pair<std::string, std::string>> commands = {
      {"scan", "usage: vfio-gpu scan [--sysfs-root DIR]"},
      {"cdi", "usage: vfio-gpu cdi generate ["},
      {"cdi generate", "usage: vfio-gpu cdi generate ["},
      {"doctor", "usage: vfio-gpu doctor [--host-root DIR]"},
      {"install", "usage: vfio-gpu install --host-root DIR [--dry-run]"},
      {"uninstall", "usage: vfio-gpu uninstall --host-root DIR"},
      {"demo", "usage: vfio-gpu demo "},
      {"audit", "usage: vfio-gpu audit --qmp SOCKET"},
  };
  for (const auto& [cmd, usage] : commands) {
    for (const std::string help : {"--help", "-h"}) {
      Outcome r = VfioGpu(cmd + " " + help, tmp_);
      EXPECT_EQ(r.code, 0) << cmd << " " << help << ": " << r.err;
      EXPECT_EQ(r.out.rfind(usage, 0), 0u) << cmd << " " << help << ":\n" << r.out;
      EXPECT_NE(r.out.find("Exit codes: 0 ok"), std::string::npos) << r.out;
      EXPECT_TRUE(r.err.empty()) << cmd << " " << help << ": " << r.err;
    }
  }
  // Only the command's own usage, not the whole list.
  Outcome r = VfioGpu("install --help", tmp_);
  EXPECT_EQ(r.out.find("audit"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--bind-gpus"), std::string::npos) << r.out;
  // Beside other flags (which are not acted on), and as `vfio-gpu help <command>`.
  r = VfioGpu("audit --sandbox x --help", tmp_);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("usage: vfio-gpu audit", 0), 0u) << r.out;
  r = VfioGpu("help uninstall", tmp_);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("usage: vfio-gpu uninstall", 0), 0u) << r.out;
  r = VfioGpu("help frobnicate", tmp_);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown command \"frobnicate\""), std::string::npos) << r.err;
  // The top level is unchanged: the whole list.
  r = VfioGpu("--help", tmp_);
  EXPECT_EQ(r.code, 0);
  for (const auto& [cmd, usage] : commands)
    EXPECT_NE(r.out.find("\n  " + usage.substr(std::string("usage: vfio-gpu ").size())),
              std::string::npos)
        << cmd << "\n"
        << r.out;
}

TEST_F(CliTest, CdiGeneratePrintsOrWritesSpecs) {
  ASSERT_TRUE(BuildSeedA10Host(host_));
  Outcome r = VfioGpu("cdi generate " + Roots(), tmp_);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = Json::Parse(r.out, "cdi output");
  ASSERT_TRUE(j.ok()) << r.out;
  EXPECT_EQ(j->Get("kind").AsString(), "nvidia.com/pgpu");
  EXPECT_EQ(j->Get("devices").size(), 4u);

  std::string out = tmp_ / "cdi";
  r = VfioGpu("cdi generate " + Roots() + " --output-dir " + out, tmp_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote " + out + "/vfio-gpu-nvidia.com-pgpu.json"), std::string::npos)
      << r.out;
  r = VfioGpu("cdi generate " + Roots() + " --output-dir " + out, tmp_);
  EXPECT_NE(r.out.find("unchanged"), std::string::npos) << r.out;
  auto written = Json::ParseFile(out + "/vfio-gpu-nvidia.com-pgpu.json");
  ASSERT_TRUE(written.ok());
  EXPECT_EQ(*written, *j);
}

TEST_F(CliTest, DoctorSaysWhatToFix) {
  ASSERT_TRUE(BuildConsumerGpuHost(host_, false));
  Outcome r = VfioGpu("doctor " + Roots(), tmp_);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("modprobe vfio-pci"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0000:01:00.1 (audio) is bound to snd_hda_intel"), std::string::npos)
      << r.out;

  // A ready node: modules loaded, audio on vfio-pci.
  for (const char* m : {"vfio", "vfio_pci", "vfio_iommu_type1"})
    ASSERT_TRUE(MakeDirs(host_.roots().sysfs + "/module/" + m));
  ASSERT_TRUE(host_.SetDriver("0000:01:00.1", "vfio-pci"));
  r = VfioGpu("doctor " + Roots(), tmp_);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("node is ready"), std::string::npos) << r.out;
}

TEST_F(CliTest, DemoShowsTheSeedNode) {
  Outcome r = VfioGpu("demo", tmp_);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* bdf : {"0000:17:00.0", "0000:31:00.0", "0000:b1:00.0", "0000:ca:00.0"})
    EXPECT_NE(r.out.find(bdf), std::string::npos) << bdf;
  EXPECT_NE(r.out.find("\"path\": \"/dev/vfio/188\""), std::string::npos) << r.out;
}

// The demo's second half runs the real shim: each of seed 003's failures is shown prevented.
TEST_F(CliTest, DemoRunsTheShimOnTheSeedsFailures) {
  Outcome r = VfioGpu("demo", tmp_);
  ASSERT_EQ(r.code, 0) << r.err;
  auto after = [&](const std::string& marker) {
    auto pos = r.out.find(marker);
    return pos == std::string::npos ? std::string() : r.out.substr(pos);
  };
  std::string shim = after("== containerd-shim-vfio-gpu-v2");
  ASSERT_FALSE(shim.empty()) << r.out;
  EXPECT_EQ(shim.find("is not built"), std::string::npos) << shim;
  // The GPU named three times reaches Kata's spec once, claimed by its sandbox.
  EXPECT_NE(shim.find("spec after the hooks: linux.devices [/dev/vfio/25]  cdi annotations []"),
            std::string::npos)
      << shim;
  EXPECT_NE(shim.find("\"sandbox_id\":\"sb-a\""), std::string::npos) << shim;
  // Another tenant's annotation for that GPU is refused, naming the GPU and the pod.
  EXPECT_NE(shim.find("exit 1: vfio-gpu: GPU 0000:17:00.0 (CDI annotation"), std::string::npos)
      << shim;
  EXPECT_NE(shim.find("is not allocated to pod tenant-b/notebook-1"), std::string::npos) << shim;
  // A GPU sandbox headed for Cloud Hypervisor is refused, naming the RuntimeClass to use.
  std::string clh = after("sandbox of GPU pod tenant-c/infer-2");
  EXPECT_NE(clh.find("exit 1: vfio-gpu: this pod has GPUs"), std::string::npos) << shim;
  EXPECT_NE(clh.find("RuntimeClass kata-qemu-vfio-gpu"), std::string::npos) << shim;
  EXPECT_NE(shim.find("ledger for 0000:17:00.0: released"), std::string::npos) << shim;
}

}  // namespace
}  // namespace vfio_gpu
