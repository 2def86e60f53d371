// The start pipeline (RunStart) on real bundles and fake hosts: when the kubelet is asked (the
// helper is a process of its own, loading gRPC: never for a start that doesn't need it), the
// cold-plug plan end to end, and the targeted host read.
#include "shim-hooks/wrapper.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <set>
#include <string>

#include "common/files.h"
#include "common/json.h"
#include "common/strings.h"
#include "hostmodel/fake_host.h"
#include "hostmodel/published_selection.h"
#include "hostmodel/scanner.h"
#include "shim-hooks/host_facts.h"
#include "shim-hooks/ledger.h"
#include "test/shim/spec_fixtures.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu {
namespace {

using testing::ContainerSpec;
using testing::Dev;
using testing::SandboxSpec;

constexpr const char* kGpuConfig =
    "[hypervisor.qemu]\npath = \"/opt/kata/bin/qemu-system-x86_64\"\n"
    "cold_plug_vfio = \"root-port\"\n";
constexpr const char* kClhConfig = "[hypervisor.clh]\npath = \"/opt/kata/bin/cloud-hypervisor\"\n";

class WrapperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    host_ = std::make_unique<FakeHost>(tmp_.path() + "/host");
    ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
    cfg_.roots = host_->roots();
    cfg_.run_dir = tmp_.path() + "/run";
    cfg_.cdi_dirs = {tmp_.path() + "/cdi"};
    ASSERT_TRUE(WriteFileAtomic(tmp_.path() + "/gpu.toml", kGpuConfig).ok());
    ASSERT_TRUE(WriteFileAtomic(tmp_.path() + "/clh.toml", kClhConfig).ok());
    cfg_.kata_config_path = tmp_.path() + "/gpu.toml";
    // A pod resources client that records each call and answers with answer.json.
    cfg_.pod_resources_client = tmp_.path() + "/podres";
    ASSERT_TRUE(WriteFileAtomic(cfg_.pod_resources_client,
                                "#!/bin/sh\necho called >> " + Marker() + "\ncat " + tmp_.path() +
                                    "/answer.json\n",
                                0755)
                    .ok());
    Answer({});
    // The plugin's CDI spec of the four A10s (names = unit IDs).
    ASSERT_TRUE(MakeDirs(tmp_.path() + "/cdi").ok());
    ASSERT_TRUE(WriteFileAtomic(tmp_.path() + "/cdi/vfio-gpu-nvidia.com-pgpu.json",
                                R"({"cdiVersion":"0.5.0","kind":"nvidia.com/pgpu","devices":[
      {"name":"0000:17:00.0","containerEdits":{"deviceNodes":[{"path":"/dev/vfio/25"}]}},
      {"name":"0000:31:00.0","containerEdits":{"deviceNodes":[{"path":"/dev/vfio/31"}]}},
      {"name":"0000:b1:00.0","containerEdits":{"deviceNodes":[{"path":"/dev/vfio/182"}]}},
      {"name":"0000:ca:00.0","containerEdits":{"deviceNodes":[{"path":"/dev/vfio/188"}]}}]})")
                    .ok());
  }
  std::string Marker() const { return tmp_.path() + "/podres.calls"; }
  int Calls() const {
    auto t = ReadFile(Marker());
    return t ? static_cast<int>(std::count(t->begin(), t->end(), '\n')) : 0;
  }
  void Answer(const std::vector<std::string>& units) {
    std::string ids;
    for (const auto& u : units) ids += (ids.empty() ? "\"" : ",\"") + u + "\"";
    ASSERT_TRUE(WriteFileAtomic(tmp_.path() + "/answer.json",
                                R"({"found":true,"method":"Get","containers":[{"name":"c",
      "devices":[{"resource_name":"nvidia.com/pgpu","device_ids":[)" +
                                    ids + "]}]}]}\n")
                    .ok());
  }
  // Runs a start of `spec` as `id` in a bundle of its own; returns the outcome.
  StartOutcome Start(const std::string& spec, const std::string& id) {
    bundle_ = tmp_.path() + "/tasks/" + id;
    EXPECT_TRUE(MakeDirs(bundle_).ok());
    EXPECT_TRUE(WriteFileAtomic(bundle_ + "/config.json", spec).ok());
    ShimArgs args;
    args.command = "start";
    args.id = id;
    args.ns = "k8s.io";
    std::string no_options;
    DecisionLog log(cfg_, args);
    return RunStart(
        cfg_, args, bundle_, [&]() -> const std::string& { return no_options; }, log);
  }
  OciSpec Written() {
    auto text = ReadFile(bundle_ + "/config.json");
    EXPECT_TRUE(text.ok());
    auto s = ReadOciSpec(text.ok() ? *text : "{}", "config.json", "x");
    EXPECT_TRUE(s.ok());
    return s.ok() ? std::move(*s) : OciSpec{};
  }

  vfio_gpu::testing::TempDir tmp_;
  std::unique_ptr<FakeHost> host_;
  ShimConfig cfg_;
  std::string bundle_;
};

TEST_F(WrapperTest, AuthorizeOffNeverAsksTheKubelet) {
  cfg_.authorize = AuthorizeMode::kOff;
  StartOutcome o = Start(SandboxSpec("[" + Dev("/dev/vfio/25", 241, 25) + "]"), "5f1c");
  EXPECT_FALSE(o.refused) << o.message;
  EXPECT_EQ(o.claimed, std::vector<std::string>{"0000:17:00.0"});
  EXPECT_EQ(Calls(), 0);
  StartOutcome c = Start(ContainerSpec("[" + Dev("/dev/vfio/25", 241, 25) + "]"), "c1");
  EXPECT_FALSE(c.refused) << c.message;
  EXPECT_EQ(Calls(), 0);
}

TEST_F(WrapperTest, ContainersWithoutGpusAndSandboxesOnAGpuConfigDoNotAskTheKubelet) {
  StartOutcome c = Start(ContainerSpec("[]"), "c1");
  EXPECT_FALSE(c.refused) << c.message;
  StartOutcome s = Start(SandboxSpec(), "5f1c");
  EXPECT_FALSE(s.refused) << s.message;
  EXPECT_EQ(Calls(), 0);
  EXPECT_FALSE(Written().dirty);
}

TEST_F(WrapperTest, SandboxOnANonGpuConfigAsksAndIsRefusedOnlyWithGpus) {
  cfg_.kata_config_path = tmp_.path() + "/clh.toml";
  StartOutcome none = Start(SandboxSpec(), "5f1c");
  EXPECT_FALSE(none.refused) << none.message;
  EXPECT_EQ(Calls(), 1);
  Answer({"0000:17:00.0"});
  StartOutcome gpu = Start(SandboxSpec(), "5f1c");
  ASSERT_TRUE(gpu.refused);
  EXPECT_NE(gpu.message.find("RuntimeClass kata-qemu-vfio-gpu"), std::string::npos) << gpu.message;
  EXPECT_EQ(Calls(), 2);
}

// With runtime_switch_config (Kata <= 3.32 honours io.katacontainers.config_path), a GPU pod's
// sandbox headed for Cloud Hypervisor is switched to the QEMU GPU configuration instead of refused;
// a tenant's own config_path annotation never survives, and a pod without GPUs is left alone.
TEST_F(WrapperTest, RuntimeSwitchWritesTheGpuConfigIntoTheSandboxSpec) {
  cfg_.kata_config_path = tmp_.path() + "/clh.toml";
  cfg_.runtime_switch_config = tmp_.path() + "/gpu.toml";
  const std::string tenant = R"("io.katacontainers.config_path":"/tmp/evil.toml",)";
  StartOutcome none = Start(SandboxSpec("[]", tenant), "5f1c");
  ASSERT_FALSE(none.refused) << none.message;
  EXPECT_EQ(Written().annotations.count("io.katacontainers.config_path"), 0u);
  Answer({"0000:17:00.0"});
  StartOutcome gpu = Start(SandboxSpec("[]", tenant), "5f1c");
  ASSERT_FALSE(gpu.refused) << gpu.message;
  EXPECT_EQ(Written().annotations["io.katacontainers.config_path"], tmp_.path() + "/gpu.toml");
}

// CRI-O's sandbox spec: the same classification and the same runtime check as containerd's.
TEST_F(WrapperTest, CrioSandboxIsClassifiedAndChecked) {
  cfg_.kata_config_path = tmp_.path() + "/clh.toml";
  Answer({"0000:17:00.0"});
  std::string crio =
      R"({"ociVersion":"1.0.2","process":{"args":["/pause"],"cwd":"/"},)"
      R"("root":{"path":"rootfs"},"annotations":{)"
      R"("io.kubernetes.cri-o.ContainerType":"sandbox",)"
      R"("io.kubernetes.cri-o.SandboxID":"c0ffee",)"
      R"("io.kubernetes.cri-o.KubeName":"train-0",)"
      R"("io.kubernetes.cri-o.Namespace":"tenant-a",)"
      R"("io.kubernetes.pod.name":"train-0","io.kubernetes.pod.namespace":"tenant-a"},)"
      R"("linux":{"devices":[]}})";
  StartOutcome o = Start(crio, "c0ffee");
  ASSERT_TRUE(o.refused);
  EXPECT_NE(o.message.find("RuntimeClass kata-qemu-vfio-gpu"), std::string::npos) << o.message;
  EXPECT_EQ(Calls(), 1);
}

TEST_F(WrapperTest, ContainerNamingAGpuIsAuthorizedThroughTheKubelet) {
  Answer({"0000:31:00.0"});
  StartOutcome o = Start(ContainerSpec("[" + Dev("/dev/vfio/25", 241, 25) + "]"), "c1");
  ASSERT_TRUE(o.refused);
  EXPECT_NE(o.message.find("is not allocated to pod tenant-a/train-0"), std::string::npos)
      << o.message;
  EXPECT_EQ(Calls(), 1);
}

// A GPU that vanished from the bus (its IOMMU group is gone from sysfs): the start is refused as a
// permanent device fault and the GPU is quarantined by its unit ID, which the plugin's CDI spec
// still knows, so the plugin takes it out of service. Both ways of naming it.
TEST_F(WrapperTest, AVanishedGpuIsQuarantinedByItsUnitId) {
  cfg_.authorize = AuthorizeMode::kOff;
  ASSERT_TRUE(host_->Remove("0000:31:00.0").ok());
  const std::string mark = cfg_.QuarantineDir() + "/0000:31:00.0";
  StartOutcome o = Start(ContainerSpec("[" + Dev("/dev/vfio/31", 241, 31) + "]"), "c1");
  ASSERT_TRUE(o.refused);
  EXPECT_EQ(o.kind, ErrorKind::kPermanent) << o.message;
  EXPECT_NE(o.message.find("IOMMU group 31"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("GPU 0000:31:00.0 is quarantined"), std::string::npos) << o.message;
  auto reason = ReadFile(mark);
  ASSERT_TRUE(reason.ok()) << "no quarantine file " << mark;
  EXPECT_NE(reason->find("IOMMU group 31 vanished"), std::string::npos) << *reason;

  ASSERT_TRUE(RemoveFile(mark).ok());
  StartOutcome a =
      Start(ContainerSpec("[]", R"("cdi.k8s.io/gpu":"nvidia.com/pgpu=0000:31:00.0",)"), "c2");
  ASSERT_TRUE(a.refused);
  EXPECT_EQ(a.kind, ErrorKind::kPermanent) << a.message;
  EXPECT_TRUE(PathExists(mark)) << a.message;
}

// Every decision is one log line naming the hook, the GPUs and the reason, including a refusal that
// comes from an error (the kubelet unreachable) rather than a hook's verdict, and the release of a
// sandbox's GPUs on delete.
TEST_F(WrapperTest, ErrorRefusalsAndReleasesAreLoggedWithHookGpusAndGroup) {
  ASSERT_TRUE(WriteFileAtomic(cfg_.pod_resources_client,
                              "#!/bin/sh\necho 'the kubelet is restarting' >&2\nexit 1\n", 0755)
                  .ok());
  StartOutcome o = Start(ContainerSpec("[" + Dev("/dev/vfio/25", 241, 25) + "]"), "c1");
  ASSERT_TRUE(o.refused);
  EXPECT_EQ(o.kind, ErrorKind::kTransient) << o.message;
  auto log = ReadFile(cfg_.LogPath());
  ASSERT_TRUE(log.ok());
  bool found = false;
  for (const auto& line : Split(*log, '\n')) {
    auto j = Json::Parse(line, "shim.log");
    if (!j || j->Get("hook").AsString() != "authorize" || j->Get("action").AsString() != "refused")
      continue;
    found = true;
    EXPECT_EQ(j->Get("bdfs").size(), 1u) << line;
    EXPECT_EQ(j->Get("bdfs").At(0).AsString(), "0000:17:00.0") << line;
    EXPECT_EQ(j->Get("group").AsInt(), 25) << line;
    EXPECT_EQ(j->Get("unit").AsString(), "0000:17:00.0") << line;
    EXPECT_EQ(j->Get("pod").AsString(), "tenant-a/train-0") << line;
  }
  EXPECT_TRUE(found) << *log;

  cfg_.authorize = AuthorizeMode::kOff;
  ASSERT_FALSE(Start(SandboxSpec("[" + Dev("/dev/vfio/31", 241, 31) + "]"), "5f1c").refused);
  ShimArgs del;
  del.command = "delete";
  del.id = "5f1c";
  {
    DecisionLog dlog(cfg_, del);
    RunDelete(cfg_, del, bundle_, dlog);
  }
  log = ReadFile(cfg_.LogPath());
  ASSERT_TRUE(log.ok());
  auto lines = Split(*log, '\n');
  std::string released;
  for (const auto& line : lines)
    if (line.find("\"released\"") != std::string::npos) released = line;
  EXPECT_NE(released.find("\"bdfs\":[\"0000:31:00.0\"]"), std::string::npos) << *log;
  EXPECT_NE(released.find("\"group\":31"), std::string::npos) << released;
  EXPECT_NE(released.find("\"unit\":\"0000:31:00.0\""), std::string::npos) << released;
}

// Per-model naming in the plugin's ConfigMap: the kubelet reports the pod's GPU under
// nvidia.com/GA102GL_A10. Without the plugin's publication the shim does not know that name and
// refuses the pod's own GPU; with it (written by the plugin under the run dir) the GPU is the
// pod's.
TEST_F(WrapperTest, PerModelResourcesAreGovernedThroughThePluginsPublication) {
  ASSERT_TRUE(WriteFileAtomic(tmp_.path() + "/answer.json",
                              R"({"found":true,"method":"Get","containers":[{"name":"c",
      "devices":[{"resource_name":"nvidia.com/GA102GL_A10","device_ids":["0000:17:00.0"]}]}]})"
                              "\n")
                  .ok());
  std::string spec = ContainerSpec("[" + Dev("/dev/vfio/25", 241, 25) + "]");
  StartOutcome before = Start(spec, "c1");
  ASSERT_TRUE(before.refused);
  EXPECT_NE(before.message.find("is not allocated to pod tenant-a/train-0"), std::string::npos)
      << before.message;

  PublishedSelection pub;
  pub.selection.naming = ResourceNaming::kPerModel;
  pub.resources = {"nvidia.com/GA102GL_A10"};
  ASSERT_TRUE(WritePublishedSelection(cfg_.run_dir, pub).ok());
  ASSERT_TRUE(LoadNodeSelection(cfg_).ok());
  StartOutcome after = Start(spec, "c2");
  EXPECT_FALSE(after.refused) << after.message;
}

// The first container of a pod to name a GPU is authorized by the kubelet and claims it for the
// pod; later containers of that pod naming the same GPU are authorized by that claim without a new
// question. Anything the claims don't cover (another GPU, another pod) is asked again.
TEST_F(WrapperTest, LaterContainersOfAPodAreAuthorizedByItsClaims) {
  Answer({"0000:17:00.0"});
  std::string gpu = "[" + Dev("/dev/vfio/25", 241, 25) + "]";
  StartOutcome first = Start(ContainerSpec(gpu), "c1");
  ASSERT_FALSE(first.refused) << first.message;
  EXPECT_EQ(Calls(), 1);
  auto claim = ReadFile(Ledger(cfg_.LedgerDir()).ClaimPath("0000:17:00.0"));
  ASSERT_TRUE(claim.ok());
  EXPECT_NE(claim->find(R"("authorized_pod":"tenant-a/train-0")"), std::string::npos) << *claim;
  StartOutcome second = Start(ContainerSpec(gpu), "c2");
  ASSERT_FALSE(second.refused) << second.message;
  EXPECT_EQ(Calls(), 1);
  StartOutcome other_gpu = Start(ContainerSpec("[" + Dev("/dev/vfio/31", 241, 31) + "]"), "c3");
  ASSERT_TRUE(other_gpu.refused);
  EXPECT_NE(other_gpu.message.find("is not allocated to pod tenant-a/train-0"), std::string::npos);
  EXPECT_EQ(Calls(), 2);
  std::string other_pod = ContainerSpec(gpu);
  other_pod.replace(other_pod.find(R"("train-0")"), 9, R"("evil-0")");
  StartOutcome evil = Start(other_pod, "c4");
  EXPECT_EQ(Calls(), 3);  // not covered by train-0's claim: asked
  (void)evil;
  // warn and off never write claims that could stand for an enforced check.
  cfg_.authorize = AuthorizeMode::kWarn;
  cfg_.run_dir = tmp_.path() + "/run-warn";
  ASSERT_FALSE(Start(ContainerSpec(gpu), "c5").refused);
  auto warned = ReadFile(Ledger(cfg_.LedgerDir()).ClaimPath("0000:17:00.0"));
  ASSERT_TRUE(warned.ok());
  EXPECT_EQ(warned->find("authorized_pod"), std::string::npos) << *warned;
}

// Kata < 3.24: the pod's GPUs go into the sandbox spec as CDI annotations, claimed once; a
// second start of the same sandbox (a retried start) neither duplicates nor refuses them.
TEST_F(WrapperTest, ColdPlugPlanWritesCdiAnnotationsAndClaimsOnce) {
  cfg_.kata_pod_resources = false;
  Answer({"0000:17:00.0", "0000:b1:00.0"});
  StartOutcome o = Start(SandboxSpec("[" + Dev("/dev/vfio/25", 241, 25) + "]"), "5f1c");
  ASSERT_FALSE(o.refused) << o.message;
  OciSpec w = Written();
  EXPECT_EQ(w.annotations["cdi.k8s.io/vfio-gpu_nvidia.com_pgpu"], "nvidia.com/pgpu=0000:b1:00.0");
  ASSERT_EQ(w.devices.size(), 1u);  // the GPU the spec named stays a device, once
  EXPECT_EQ(w.devices[0].path, "/dev/vfio/25");
  EXPECT_EQ(o.claimed, (std::vector<std::string>{"0000:17:00.0", "0000:b1:00.0"}));
  auto view = Ledger(cfg_.LedgerDir()).Load();
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->size(), 2u);
  // Retried start on the rewritten spec: no second annotation name, no new claim.
  std::string rewritten = *ReadFile(bundle_ + "/config.json");
  StartOutcome again = Start(rewritten, "5f1c");
  ASSERT_FALSE(again.refused) << again.message;
  EXPECT_TRUE(again.claimed.empty());
  EXPECT_EQ(Written().annotations["cdi.k8s.io/vfio-gpu_nvidia.com_pgpu"],
            "nvidia.com/pgpu=0000:b1:00.0");
  // The linux.devices form, configured.
  cfg_.cold_plug_form = ColdPlugForm::kLinuxDevices;
  cfg_.run_dir = tmp_.path() + "/run2";
  StartOutcome dev = Start(SandboxSpec(), "6a2d");
  ASSERT_FALSE(dev.refused) << dev.message;
  OciSpec d = Written();
  ASSERT_EQ(d.devices.size(), 2u);
  EXPECT_EQ(d.annotations.count("cdi.k8s.io/vfio-gpu_nvidia.com_pgpu"), 0u);
}

// The start reads only the groups a spec names, and builds the same units a whole-bus scan does.
TEST_F(WrapperTest, TargetedReadBuildsTheSameUnitsAsAWholeScan) {
  auto full = Scan(cfg_.roots, ShimSelection());
  ASSERT_TRUE(full.ok());
  auto spec = ReadOciSpec(ContainerSpec("[" + Dev("/dev/vfio/25", 241, 25) + "," +
                                        Dev("/dev/vfio/999", 241, 999) + "]"),
                          "config.json", "c1");
  ASSERT_TRUE(spec.ok());
  GroupsOfInterest g = GroupsNamedBy(cfg_.roots, *spec, {182});
  EXPECT_TRUE(g.complete);
  EXPECT_EQ(g.groups, (std::set<int>{25, 182, 999}));
  auto part = ScanForStart(cfg_.roots, g);
  ASSERT_TRUE(part.ok());
  ASSERT_EQ(part->units.size(), 2u);
  for (const auto& u : part->units) {
    const Unit* f = full->FindUnit(u.id);
    ASSERT_NE(f, nullptr) << u.id;
    EXPECT_EQ(u.iommu_group, f->iommu_group);
    EXPECT_EQ(u.gpus, f->gpus);
    EXPECT_EQ(u.members.size(), f->members.size());
    EXPECT_EQ(u.viable, f->viable);
    EXPECT_EQ(u.resource, f->resource);
  }
  EXPECT_EQ(GroupOfBdf(cfg_.roots, "0000:b1:00.0"), 182);
  EXPECT_FALSE(GroupOfBdf(cfg_.roots, "0000:ee:00.0"));
  EXPECT_FALSE(GroupOfBdf(cfg_.roots, "../../etc"));
}

}  // namespace
}  // namespace vfio_gpu
