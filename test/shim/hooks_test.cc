// Each hook alone, on realistic specs and fake hosts.
#include "shim-hooks/hooks.h"

#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <set>

#include "common/files.h"
#include "hostmodel/fake_host.h"
#include "hostmodel/scanner.h"
#include "shim-hooks/host_facts.h"
#include "shim-hooks/kata_config.h"
#include "shim-hooks/runtime_options.h"
#include "test/shim/spec_fixtures.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu {
namespace {

using testing::ContainerSpec;
using testing::Dev;
using testing::SandboxSpec;

class HooksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    host_ = std::make_unique<FakeHost>(tmp_.path());
    ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
    ASSERT_TRUE(BuildConsumerGpuHost(*host_, false).ok());
    cfg_.roots = host_->roots();
  }
  OciSpec Spec(const std::string& text, const std::string& id = "c1") {
    auto s = ReadOciSpec(text, "config.json", id);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message());
    return s.ok() ? std::move(*s) : OciSpec{};
  }
  HostFacts Facts(const OciSpec& spec, std::set<int> extra = {},
                  std::optional<VfioNodes> nodes = std::nullopt) {
    auto snap = Scan(host_->roots(), ShimSelection());
    EXPECT_TRUE(snap.ok());
    return GatherHostFacts(host_->roots(), *snap, spec, extra, std::move(nodes));
  }
  // The fake tree's group nodes are plain files; on a node they are character devices of VFIO's
  // major (here 241, minor = group), which is what ReadVfioNodes indexes.
  static VfioNodes SeedNodes() {
    VfioNodes n;
    for (int g : {14, 25, 31, 182, 188}) n.groups[{241, g}] = g;
    n.majors = {241};
    return n;
  }
  // The plugin's CDI spec of the seed host's four A10s (names = unit IDs).
  CdiRegistry Cdi() {
    std::string dir = tmp_.path() + "/cdi-plugin";
    std::string devices;
    for (auto [bdf, group] : std::vector<std::pair<std::string, int>>{{"0000:17:00.0", 25},
                                                                      {"0000:31:00.0", 31},
                                                                      {"0000:b1:00.0", 182},
                                                                      {"0000:ca:00.0", 188}})
      devices += std::string(devices.empty() ? "" : ",") + R"({"name":")" + bdf +
                 R"(","containerEdits":{"deviceNodes":[{"path":"/dev/vfio/)" +
                 std::to_string(group) + R"("}]}})";
    EXPECT_TRUE(MakeDirs(dir).ok());
    EXPECT_TRUE(WriteFileAtomic(dir + "/vfio-gpu-nvidia.com-pgpu.json",
                                R"({"cdiVersion":"0.5.0","kind":"nvidia.com/pgpu","devices":[)" +
                                    devices + "]}")
                    .ok());
    return CdiRegistry::Load({dir}, cfg_.resources);
  }
  std::vector<VfioRef> Refs(const OciSpec& spec, const HostFacts& f) {
    return Collect(spec, f, CdiRegistry(), cfg_).refs;
  }

  vfio_gpu::testing::TempDir tmp_;
  std::unique_ptr<FakeHost> host_;
  ShimConfig cfg_;
};

TEST_F(HooksTest, ClassifiesContainerdAndCrioSpecs) {
  OciSpec sb = Spec(SandboxSpec(), "5f1c");
  EXPECT_EQ(sb.identity.role, SpecRole::kSandbox);
  EXPECT_EQ(sb.identity.Pod(), "tenant-a/train-0");
  OciSpec c = Spec(ContainerSpec("[]"), "c9");
  EXPECT_EQ(c.identity.role, SpecRole::kContainer);
  EXPECT_EQ(c.identity.sandbox_id, "5f1c");
  EXPECT_EQ(c.identity.container_name, "trainer");
  OciSpec crio = Spec(R"({"annotations":{"io.kubernetes.cri-o.ContainerType":"container",
    "io.kubernetes.cri-o.SandboxID":"abc","io.kubernetes.pod.name":"p","io.kubernetes.pod.namespace":"n"}})");
  EXPECT_EQ(crio.identity.role, SpecRole::kContainer);
  EXPECT_EQ(crio.identity.Pod(), "n/p");
  OciSpec plain = Spec(R"({"process":{"args":["sh"]}})", "ctr1");
  EXPECT_EQ(plain.identity.role, SpecRole::kPlain);
  EXPECT_EQ(plain.identity.sandbox_id, "ctr1");
  EXPECT_FALSE(
      ReadOciSpec(R"({"annotations":{"io.kubernetes.cri.container-type":"container"}})", "x", "i")
          .ok());
  EXPECT_FALSE(ReadOciSpec(R"({"linux":{"devices":[{"path":1}]}})", "x", "i").ok());
}

TEST_F(HooksTest, CollectResolvesGroupNodesAndCdevs) {
  OciSpec s = Spec(ContainerSpec("[" + Dev("/dev/vfio/vfio", 10, 196) + "," +
                                 Dev("/dev/vfio/25", 241, 25) + "]"));
  HostFacts f = Facts(s);
  auto refs = Refs(s, f);
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(refs[0].group, 25);
  EXPECT_EQ(refs[0].unit_id, "0000:17:00.0");
  EXPECT_EQ(refs[0].bdfs, std::vector<std::string>{"0000:17:00.0"});
}

TEST_F(HooksTest, SameNodeTwiceKeepsOneEntry) {
  OciSpec s =
      Spec(ContainerSpec("[" + Dev("/dev/vfio/25", 241, 25) + "," + Dev("/dev/vfio/25", 241, 25) +
                         "," + Dev("/dev/vfio/31", 241, 31) + "]"));
  HostFacts f = Facts(s);
  auto refs = Refs(s, f);
  ASSERT_FALSE(Validate(refs, f, cfg_).refusal);
  DedupResult d = Deduplicate(s, refs, f, {}, cfg_);
  ASSERT_FALSE(d.result.refusal);
  ASSERT_EQ(s.devices.size(), 2u);
  EXPECT_EQ(s.devices[0].path, "/dev/vfio/25");
  EXPECT_EQ(s.devices[1].path, "/dev/vfio/31");
  EXPECT_TRUE(s.dirty);
  EXPECT_EQ(d.claims.size(), 2u);
}

TEST_F(HooksTest, GroupNodeAndCdevCollapseToTheGroupNode) {
  FakeHost hgx(tmp_.path() + "/hgx");
  ASSERT_TRUE(BuildHgxHost(hgx).ok());
  cfg_.roots = hgx.roots();
  auto snap = Scan(hgx.roots(), ShimSelection());
  ASSERT_TRUE(snap.ok());
  const Unit* found = nullptr;
  for (const auto& unit : snap->units)
    if (!found && !unit.cdevs.empty()) found = &unit;
  ASSERT_NE(found, nullptr);
  const Unit& u = *found;
  std::string cdev = "/dev/vfio/devices/" + u.cdevs.front();
  int minor = std::stoi(u.cdevs.front().substr(4));
  OciSpec s = Spec(ContainerSpec("[" + Dev(cdev, 511, minor) + "," +
                                 Dev(u.GroupPath(), 241, u.iommu_group) + "]"));
  HostFacts f = GatherHostFacts(hgx.roots(), *snap, s, {});
  auto refs = Refs(s, f);
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0].group, u.iommu_group) << refs[0].error;
  DedupResult d = Deduplicate(s, refs, f, {}, cfg_);
  ASSERT_FALSE(d.result.refusal);
  ASSERT_EQ(s.devices.size(), 1u);
  EXPECT_EQ(s.devices[0].path, u.GroupPath());
  // Only a cdev: rewritten to the group node.
  OciSpec only = Spec(ContainerSpec("[" + Dev(cdev, 511, minor) + "]"));
  HostFacts f2 = GatherHostFacts(hgx.roots(), *snap, only, {});
  auto refs2 = Refs(only, f2);
  ASSERT_FALSE(Deduplicate(only, refs2, f2, {}, cfg_).result.refusal);
  ASSERT_EQ(only.devices.size(), 1u);
  EXPECT_EQ(only.devices[0].path, u.GroupPath());
}

// The cdev first, the group node second: the entry that stays must still be checked against the
// ledger and claimed (the dropped cdev must not stand for the unit).
TEST_F(HooksTest, CdevBeforeGroupNodeIsStillClaimedAndRefusedWhenTaken) {
  FakeHost hgx(tmp_.path() + "/hgx");
  ASSERT_TRUE(BuildHgxHost(hgx).ok());
  cfg_.roots = hgx.roots();
  auto snap = Scan(hgx.roots(), ShimSelection());
  ASSERT_TRUE(snap.ok());
  const Unit* u = nullptr;
  for (const auto& unit : snap->units)
    if (!u && !unit.cdevs.empty()) u = &unit;
  ASSERT_NE(u, nullptr);
  std::string cdev = "/dev/vfio/devices/" + u->cdevs.front();
  int minor = std::stoi(u->cdevs.front().substr(4));
  std::string devices =
      "[" + Dev(cdev, 511, minor) + "," + Dev(u->GroupPath(), 241, u->iommu_group) + "]";
  OciSpec s = Spec(ContainerSpec(devices));
  HostFacts f = GatherHostFacts(hgx.roots(), *snap, s, {});
  auto refs = Refs(s, f);
  DedupResult d = Deduplicate(s, refs, f, {}, cfg_);
  ASSERT_FALSE(d.result.refusal);
  ASSERT_FALSE(d.claims.empty());
  EXPECT_EQ(d.claims[0].unit, u->id);

  OciSpec s2 = Spec(ContainerSpec(devices));
  auto refs2 = Refs(s2, f);
  LedgerView taken{{u->gpus.front(), {"other-sb", "/b", 42, u->iommu_group, {}, false, "", u->id}}};
  DedupResult d2 = Deduplicate(s2, refs2, f, taken, cfg_);
  ASSERT_TRUE(d2.result.refusal);
  EXPECT_NE(d2.result.refusal->message.find("already attached to sandbox other-sb"),
            std::string::npos)
      << d2.result.refusal->message;
}

// runc creates a device from its numbers, Kata reads the group from its path: a spec whose
// /dev/vfio/182 carries /dev/vfio/25's numbers would reach one GPU while every check looked at
// the other.
TEST_F(HooksTest, PathAndNumbersNamingDifferentGroupsAreRefused) {
  OciSpec s = Spec(ContainerSpec("[" + Dev("/dev/vfio/182", 241, 25) + "]"));
  HostFacts f = Facts(s, {}, SeedNodes());
  auto v = Validate(Refs(s, f), f, cfg_);
  ASSERT_TRUE(v.refusal);
  EXPECT_NE(
      v.refusal->message.find("linux.devices entry /dev/vfio/182 carries device numbers "
                              "241:25 (on this node: " +
                              cfg_.roots.VfioGroupNode(25) + "), but /dev/vfio/182 is 241:182"),
      std::string::npos)
      << v.refusal->message;
  EXPECT_TRUE(v.refusal->quarantine.empty());
  // Matching numbers pass.
  OciSpec ok = Spec(ContainerSpec("[" + Dev("/dev/vfio/182", 241, 182) + "]"));
  HostFacts g = Facts(ok, {}, SeedNodes());
  EXPECT_FALSE(Validate(Refs(ok, g), g, cfg_).refusal);
}

// A VFIO node's numbers at another path are the same GPU: collected, validated, authorized,
// claimed, and collapsed into the group node Kata expects.
TEST_F(HooksTest, AliasPathIsAGpuReferenceLikeAnyOther) {
  OciSpec s = Spec(
      ContainerSpec("[" + Dev("/dev/gpu0", 241, 25) + "," + Dev("/dev/vfio/25", 241, 25) + "]"));
  HostFacts f = Facts(s, {}, SeedNodes());
  auto refs = Refs(s, f);
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0].source, RefSource::kAlias);
  EXPECT_EQ(refs[0].unit_id, "0000:17:00.0");
  ASSERT_FALSE(Validate(refs, f, cfg_).refusal);
  PodAllocation other;
  other.found = true;
  other.units = {"0000:31:00.0"};
  auto a = Authorize(refs, s.identity, other, cfg_);
  ASSERT_TRUE(a.refusal);
  EXPECT_NE(a.refusal->message.find("GPU 0000:17:00.0"), std::string::npos) << a.refusal->message;
  DedupResult d = Deduplicate(s, refs, f, {}, cfg_);
  ASSERT_FALSE(d.result.refusal);
  ASSERT_EQ(s.devices.size(), 1u);
  EXPECT_EQ(s.devices[0].path, "/dev/vfio/25");
  EXPECT_EQ(d.claims.size(), 1u);

  // Alone, the alias is rewritten to the group node with its numbers.
  OciSpec alone = Spec(ContainerSpec("[" + Dev("/dev/gpu0", 241, 25) + "]"));
  HostFacts g = Facts(alone, {}, SeedNodes());
  auto refs2 = Refs(alone, g);
  DedupResult d2 = Deduplicate(alone, refs2, g, {}, cfg_);
  ASSERT_FALSE(d2.result.refusal);
  ASSERT_EQ(alone.devices.size(), 1u);
  EXPECT_EQ(alone.devices[0].path, "/dev/vfio/25");
  EXPECT_EQ(*alone.devices[0].major, 241);
  EXPECT_EQ(*alone.devices[0].minor, 25);

  // Numbers of VFIO's major that no node has: refused, not ignored.
  OciSpec unknown = Spec(ContainerSpec("[" + Dev("/dev/gpu9", 241, 77) + "]"));
  HostFacts h = Facts(unknown, {}, SeedNodes());
  auto v = Validate(Refs(unknown, h), h, cfg_);
  ASSERT_TRUE(v.refusal);
  EXPECT_NE(v.refusal->message.find("/dev/gpu9 carries device numbers 241:77 of VFIO's major 241"),
            std::string::npos)
      << v.refusal->message;
  // Other character devices are none of our business.
  OciSpec null = Spec(ContainerSpec("[" + Dev("/dev/null2", 1, 3) + "]"));
  HostFacts n = Facts(null, {}, SeedNodes());
  EXPECT_TRUE(Refs(null, n).empty());
}

TEST_F(HooksTest, DeviceAndCdiAnnotationForTheSameGpuKeepTheDevice) {
  std::string cdi = tmp_.path() + "/cdi";
  ASSERT_TRUE(MakeDirs(cdi).ok());
  ASSERT_TRUE(WriteFileAtomic(cdi + "/vfio-gpu-nvidia.com-pgpu.json",
                              R"({"cdiVersion":"0.5.0","kind":"nvidia.com/pgpu",
    "devices":[{"name":"0000:17:00.0","containerEdits":{"deviceNodes":[{"path":"/dev/vfio/25"}]}},
               {"name":"0","containerEdits":{"deviceNodes":[{"path":"/dev/vfio/25"}]}}],
    "containerEdits":{"deviceNodes":[{"path":"/dev/vfio/vfio"}]}})")
                  .ok());
  cfg_.cdi_dirs = {cdi};
  OciSpec s = Spec(ContainerSpec("[" + Dev("/dev/vfio/25", 241, 25) + "]",
                                 R"("cdi.k8s.io/gpu":"nvidia.com/pgpu=0,vendor.com/x=y",)"));
  HostFacts f = Facts(s, {25});
  CdiRegistry reg = CdiRegistry::Load(cfg_.cdi_dirs, cfg_.resources);
  auto refs = Collect(s, f, reg, cfg_).refs;
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[1].unit_id, "0000:17:00.0");
  ASSERT_FALSE(Deduplicate(s, refs, f, {}, cfg_).result.refusal);
  EXPECT_EQ(s.devices.size(), 1u);
  EXPECT_EQ(s.annotations["cdi.k8s.io/gpu"], "vendor.com/x=y");  // other kinds untouched
}

TEST_F(HooksTest, UnknownCdiDeviceIsRefused) {
  OciSpec s = Spec(SandboxSpec("[]", R"("cdi.k8s.io/gpu":"nvidia.com/pgpu=7",)"), "5f1c");
  HostFacts f = Facts(s);
  auto refs = Collect(s, f, CdiRegistry(), cfg_).refs;
  auto v = Validate(refs, f, cfg_);
  ASSERT_TRUE(v.refusal);
  EXPECT_NE(v.refusal->message.find("nvidia.com/pgpu=7"), std::string::npos);
}

TEST_F(HooksTest, NonViableGroupIsRefusedAndQuarantined) {
  OciSpec s = Spec(ContainerSpec("[" + Dev("/dev/vfio/14", 241, 14) + "]"));
  HostFacts f = Facts(s);
  auto v = Validate(Refs(s, f), f, cfg_);
  ASSERT_TRUE(v.refusal);
  EXPECT_EQ(v.refusal->kind, ErrorKind::kPermanent);
  EXPECT_NE(v.refusal->message.find(
                "IOMMU group 14 is not viable: 0000:01:00.1 (audio) is bound to snd_hda_intel"),
            std::string::npos)
      << v.refusal->message;
  EXPECT_EQ(v.refusal->quarantine.count("0000:01:00.0"), 1u);
}

// The audio function left with no driver: viable by VFIO's rule, but Kata would hand it to QEMU,
// which can't open it. Refused before the VM is built, naming the member; no quarantine (the device
// is fine, and the plugin reports the unit Unhealthy only while the member is unbound).
TEST_F(HooksTest, DriverlessGroupMemberIsRefusedWithoutQuarantine) {
  ASSERT_TRUE(host_->SetDriver("0000:01:00.1", "").ok());
  OciSpec s = Spec(ContainerSpec("[" + Dev("/dev/vfio/14", 241, 14) + "]"));
  HostFacts f = Facts(s);
  auto v = Validate(Refs(s, f), f, cfg_);
  ASSERT_TRUE(v.refusal);
  EXPECT_NE(v.refusal->message.find("cannot attach GPU 0000:01:00.0: IOMMU group 14: 0000:01:00.1 "
                                    "(audio) has no driver"),
            std::string::npos)
      << v.refusal->message;
  EXPECT_NE(v.refusal->message.find("bind it to vfio-pci"), std::string::npos);
  EXPECT_TRUE(v.refusal->quarantine.empty());
  ASSERT_TRUE(host_->SetDriver("0000:01:00.1", "vfio-pci").ok());
  HostFacts ok = Facts(s);
  EXPECT_FALSE(Validate(Refs(s, ok), ok, cfg_).refusal);
}

TEST_F(HooksTest, UnknownAndForeignGroupsAreRefused) {
  OciSpec nic = Spec(ContainerSpec("[" + Dev("/dev/vfio/61", 241, 61) + "]"));
  HostFacts f = Facts(nic);
  auto v = Validate(Refs(nic, f), f, cfg_);
  ASSERT_TRUE(v.refusal);
  EXPECT_NE(v.refusal->message.find("0000:4b:00.0 (ethernet, mlx5_core)"), std::string::npos)
      << v.refusal->message;
  EXPECT_TRUE(v.refusal->quarantine.empty());
  OciSpec gone = Spec(ContainerSpec("[" + Dev("/dev/vfio/999", 241, 999) + "]"));
  HostFacts g = Facts(gone);
  auto w = Validate(Refs(gone, g), g, cfg_);
  ASSERT_TRUE(w.refusal);
  EXPECT_NE(w.refusal->message.find("IOMMU group 999 "), std::string::npos);
}

TEST_F(HooksTest, UnallocatedGpuIsRefusedAsASecurityEvent) {
  OciSpec s = Spec(
      ContainerSpec("[" + Dev("/dev/vfio/25", 241, 25) + "," + Dev("/dev/vfio/31", 241, 31) + "]"));
  HostFacts f = Facts(s);
  auto refs = Refs(s, f);
  PodAllocation a;
  a.found = true;
  a.units = {"0000:17:00.0"};
  auto r = Authorize(refs, s.identity, a, cfg_);
  ASSERT_TRUE(r.refusal);
  EXPECT_NE(r.refusal->message.find("GPU 0000:31:00.0"), std::string::npos);
  EXPECT_NE(r.refusal->message.find("tenant-a/train-0"), std::string::npos);
  EXPECT_TRUE(r.decisions.back().security);
  cfg_.authorize = AuthorizeMode::kWarn;
  EXPECT_FALSE(Authorize(refs, s.identity, a, cfg_).refusal);
  cfg_.authorize = AuthorizeMode::kOff;
  EXPECT_TRUE(Authorize(refs, s.identity, std::nullopt, cfg_).decisions.empty());
  a.units.insert("0000:31:00.0");
  cfg_.authorize = AuthorizeMode::kEnforce;
  EXPECT_FALSE(Authorize(refs, s.identity, a, cfg_).refusal);
}

TEST_F(HooksTest, LedgerDecidesAcrossSandboxes) {
  OciSpec s = Spec(ContainerSpec("[" + Dev("/dev/vfio/25", 241, 99) + "]"));
  HostFacts f = Facts(s);
  auto refs = Refs(s, f);
  LedgerView other{
      {"0000:17:00.0", {"other-sb", "/b", 42, 25, DevNum{241, 25}, false, "", "0000:17:00.0"}}};
  auto d = Deduplicate(s, refs, f, other, cfg_);
  ASSERT_TRUE(d.result.refusal);
  EXPECT_NE(d.result.refusal->message.find("already attached to sandbox other-sb"),
            std::string::npos);
  other["0000:17:00.0"].stale = true;
  auto refs2 = Refs(s, f);
  auto d2 = Deduplicate(s, refs2, f, other, cfg_);
  ASSERT_FALSE(d2.result.refusal);
  ASSERT_EQ(d2.claims.size(), 1u);
  EXPECT_TRUE(d2.claims[0].reclaim);
  // Own sandbox: no new claim, and the entry takes the claim's major:minor.
  LedgerView mine{
      {"0000:17:00.0", {"5f1c", "/b", 42, 25, DevNum{241, 25}, false, "", "0000:17:00.0"}}};
  auto refs3 = Refs(s, f);
  auto d3 = Deduplicate(s, refs3, f, mine, cfg_);
  ASSERT_FALSE(d3.result.refusal);
  EXPECT_TRUE(d3.claims.empty());
  EXPECT_EQ(*s.devices[0].minor, 25);
}

TEST_F(HooksTest, ClaimsAuthorizeOnlyTheirOwnPodsLiveEnforcedGpus) {
  OciSpec s = Spec(ContainerSpec("[" + Dev("/dev/vfio/25", 241, 25) + "]"));
  HostFacts f = Facts(s);
  auto refs = Refs(s, f);
  ClaimView mine{"5f1c", "/b", 42, 25, DevNum{241, 25}, false, "tenant-a/train-0", "0000:17:00.0"};
  auto ok = AuthorizedByClaims(refs, s.identity, {{"0000:17:00.0", mine}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->decisions.size(), 1u);
  EXPECT_FALSE(ok->refusal);
  ClaimView unchecked = mine;
  unchecked.authorized_pod.clear();  // claimed under warn/off
  EXPECT_FALSE(AuthorizedByClaims(refs, s.identity, {{"0000:17:00.0", unchecked}}));
  ClaimView other_pod = mine;
  other_pod.authorized_pod = "tenant-b/x";
  EXPECT_FALSE(AuthorizedByClaims(refs, s.identity, {{"0000:17:00.0", other_pod}}));
  ClaimView other_sandbox = mine;
  other_sandbox.sandbox_id = "9999";
  EXPECT_FALSE(AuthorizedByClaims(refs, s.identity, {{"0000:17:00.0", other_sandbox}}));
  ClaimView stale = mine;
  stale.stale = true;
  EXPECT_FALSE(AuthorizedByClaims(refs, s.identity, {{"0000:17:00.0", stale}}));
  EXPECT_FALSE(AuthorizedByClaims(refs, s.identity, {}));
  OciSpec sb = Spec(SandboxSpec("[" + Dev("/dev/vfio/25", 241, 25) + "]"), "5f1c");
  EXPECT_FALSE(AuthorizedByClaims(Refs(sb, Facts(sb)), sb.identity, {{"0000:17:00.0", mine}}));
}

TEST_F(HooksTest, GuardStripsOrRefusesHypervisorAnnotations) {
  std::string ann = R"("io.katacontainers.config.hypervisor.path":"/tmp/evil-qemu",
    "io.katacontainers.config.hypervisor.default_memory":"4096","io.katacontainers.config_path":"/x.toml",)";
  cfg_.kata_annotation_allowlist = {"default_*"};
  OciSpec s = Spec(SandboxSpec("[]", ann), "5f1c");
  auto g = GuardAnnotations(s, cfg_);
  EXPECT_FALSE(g.refusal);
  EXPECT_EQ(s.annotations.count("io.katacontainers.config.hypervisor.path"), 0u);
  EXPECT_EQ(s.annotations.count("io.katacontainers.config_path"), 0u);
  EXPECT_EQ(s.annotations.count("io.katacontainers.config.hypervisor.default_memory"), 1u);
  EXPECT_EQ(s.root.Get("annotations").Has("io.katacontainers.config.hypervisor.path"), false);
  cfg_.annotation_policy = AnnotationPolicy::kDeny;
  OciSpec d = Spec(SandboxSpec("[]", ann), "5f1c");
  auto r = GuardAnnotations(d, cfg_);
  ASSERT_TRUE(r.refusal);
  EXPECT_NE(r.refusal->message.find("kata_annotation_allowlist"), std::string::npos);
}

// Every BDF the later hooks see, with how often: the exactly-once property of a spec.
std::map<std::string, int> BdfCounts(const std::vector<VfioRef>& refs) {
  std::map<std::string, int> n;
  for (const auto& r : refs)
    if (!r.unit_id.empty())
      for (const auto& b : r.bdfs) ++n[b];
  return n;
}

PodAllocation Allocated(std::set<std::string> units) {
  PodAllocation a;
  a.found = true;
  a.method = "Get";
  a.units = units;
  a.by_resource["nvidia.com/pgpu"] = std::move(units);
  return a;
}

TEST_F(HooksTest, ColdPlugPlanNamesAllocatedGpusInCdiAnnotationsByDefault) {
  cfg_.kata_pod_resources = false;
  ASSERT_EQ(cfg_.cold_plug_form, ColdPlugForm::kCdiAnnotations);
  OciSpec s = Spec(SandboxSpec(), "5f1c");
  PodAllocation a = Allocated({"0000:b1:00.0", "0000:17:00.0"});
  HostFacts f = Facts(s, {182, 25});
  std::vector<VfioRef> refs;
  auto r = PlanColdPlug(s, refs, a, f, Cdi(), cfg_);
  ASSERT_FALSE(r.refusal);
  EXPECT_TRUE(s.devices.empty());  // nothing in linux.devices: Kata cold-plugs from CDI names
  const std::string key = "cdi.k8s.io/vfio-gpu_nvidia.com_pgpu";
  EXPECT_EQ(s.annotations[key], "nvidia.com/pgpu=0000:17:00.0,nvidia.com/pgpu=0000:b1:00.0");
  EXPECT_EQ(s.root.Get("annotations").Get(key).AsString(), s.annotations[key]);
  EXPECT_TRUE(s.dirty);
  // CDI's annotation key rules: name part <= 63 chars of [A-Za-z0-9_.-], alphanumeric at the ends.
  std::string name = key.substr(std::string("cdi.k8s.io/").size());
  EXPECT_LE(name.size(), 63u);
  for (char c : name)
    EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')
        << name;
  // The names parse as the annotations the Collect hook reads (so a re-run is a no-op) ...
  auto names = CdiAnnotationNames(s, cfg_);
  ASSERT_EQ(names.size(), 2u);
  for (const auto& [k, n] : names) EXPECT_TRUE(ParseCdiName(n)) << n;
  // ... and the later hooks see each BDF once, allocated, claimed once.
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_FALSE(Validate(refs, f, cfg_).refusal);
  EXPECT_FALSE(Authorize(refs, s.identity, a, cfg_).refusal);
  DedupResult d = Deduplicate(s, refs, f, {}, cfg_);
  ASSERT_FALSE(d.result.refusal);
  ASSERT_EQ(d.claims.size(), 2u);
  EXPECT_NE(d.claims[0].bdf, d.claims[1].bdf);
  for (const auto& [bdf, n] : BdfCounts(refs)) EXPECT_EQ(n, 1) << bdf;
  EXPECT_EQ(s.annotations[key], "nvidia.com/pgpu=0000:17:00.0,nvidia.com/pgpu=0000:b1:00.0");
  EXPECT_TRUE(s.devices.empty());

  // A name Kata could not resolve (no CDI spec, or one naming another group) is refused now,
  // not as Kata's "unresolvable CDI devices" later.
  OciSpec t = Spec(SandboxSpec(), "5f1c");
  std::vector<VfioRef> none;
  auto missing = PlanColdPlug(t, none, a, f, CdiRegistry(), cfg_);
  ASSERT_TRUE(missing.refusal);
  EXPECT_EQ(missing.refusal->kind, ErrorKind::kTransient);
  EXPECT_NE(missing.refusal->message.find("is in no CDI spec"), std::string::npos)
      << missing.refusal->message;
  std::string stale = tmp_.path() + "/cdi-stale";
  ASSERT_TRUE(MakeDirs(stale).ok());
  ASSERT_TRUE(WriteFileAtomic(stale + "/s.json", R"({"cdiVersion":"0.5.0","kind":"nvidia.com/pgpu",
    "devices":[{"name":"0000:17:00.0","containerEdits":{"deviceNodes":[{"path":"/dev/vfio/31"}]}}]})")
                  .ok());
  OciSpec u = Spec(SandboxSpec(), "5f1c");
  std::vector<VfioRef> none2;
  auto wrong = PlanColdPlug(u, none2, Allocated({"0000:17:00.0"}), f,
                            CdiRegistry::Load({stale}, cfg_.resources), cfg_);
  ASSERT_TRUE(wrong.refusal);
  EXPECT_NE(wrong.refusal->message.find("another IOMMU group than 25"), std::string::npos)
      << wrong.refusal->message;
}

// A sandbox spec that already names allocated GPUs (a device entry, a hand-written annotation with
// the plugin's alias) gets only the missing one planned: no GPU twice, whatever named it.
TEST_F(HooksTest, ColdPlugPlanSkipsGpusTheSandboxAlreadyNames) {
  std::string cdi = tmp_.path() + "/cdi";
  ASSERT_TRUE(MakeDirs(cdi).ok());
  ASSERT_TRUE(WriteFileAtomic(cdi + "/vfio-gpu-nvidia.com-pgpu.json",
                              R"({"cdiVersion":"0.5.0","kind":"nvidia.com/pgpu",
    "devices":[{"name":"0000:31:00.0","containerEdits":{"deviceNodes":[{"path":"/dev/vfio/31"}]}},
               {"name":"1","containerEdits":{"deviceNodes":[{"path":"/dev/vfio/31"}]}}]})")
                  .ok());
  cfg_.cdi_dirs = {cdi};
  cfg_.kata_pod_resources = false;
  OciSpec s = Spec(SandboxSpec("[" + Dev("/dev/vfio/25", 241, 25) + "]",
                               R"("cdi.k8s.io/gpu":"nvidia.com/pgpu=1",)"),
                   "5f1c");
  PodAllocation a = Allocated({"0000:17:00.0", "0000:31:00.0", "0000:b1:00.0"});
  HostFacts f = Facts(s, {25, 31, 182});
  CdiRegistry reg = CdiRegistry::Load(cfg_.cdi_dirs, cfg_.resources);
  auto refs = Collect(s, f, reg, cfg_).refs;
  ASSERT_EQ(refs.size(), 2u);
  auto r = PlanColdPlug(s, refs, a, f, Cdi(), cfg_);
  ASSERT_FALSE(r.refusal);
  ASSERT_EQ(refs.size(), 3u);
  EXPECT_EQ(refs[2].unit_id, "0000:b1:00.0");
  EXPECT_EQ(s.annotations["cdi.k8s.io/vfio-gpu_nvidia.com_pgpu"], "nvidia.com/pgpu=0000:b1:00.0");
  EXPECT_EQ(s.annotations["cdi.k8s.io/gpu"], "nvidia.com/pgpu=1");
  ASSERT_EQ(s.devices.size(), 1u);
  EXPECT_FALSE(Validate(refs, f, cfg_).refusal);
  EXPECT_FALSE(Authorize(refs, s.identity, a, cfg_).refusal);
  DedupResult d = Deduplicate(s, refs, f, {}, cfg_);
  ASSERT_FALSE(d.result.refusal);
  EXPECT_EQ(d.claims.size(), 3u);
  auto counts = BdfCounts(refs);
  EXPECT_EQ(counts.size(), 3u);
  for (const auto& [bdf, n] : counts) EXPECT_EQ(n, 1) << bdf;
  ASSERT_EQ(s.devices.size(), 1u);
  EXPECT_EQ(s.devices[0].path, "/dev/vfio/25");
}

// The plan's annotation for a GPU a device entry of the same spec also names is dropped by dedup
// (the device stays, in the form Kata expects), so the GPU is attached once.
TEST_F(HooksTest, ColdPlugAnnotationAndDeviceForTheSameGpuCollapse) {
  cfg_.kata_pod_resources = false;
  OciSpec s = Spec(SandboxSpec(), "5f1c");
  PodAllocation a = Allocated({"0000:17:00.0"});
  HostFacts f = Facts(s, {25});
  std::vector<VfioRef> refs;
  ASSERT_FALSE(PlanColdPlug(s, refs, a, f, Cdi(), cfg_).refusal);
  // Something after planning (another path) names the same GPU as a device.
  s.SetDevices({CharDeviceEntry("/dev/vfio/25", 241, 25)});
  VfioRef dev = Refs(s, Facts(s, {25})).front();
  refs.insert(refs.begin(), dev);
  DedupResult d = Deduplicate(s, refs, f, {}, cfg_);
  ASSERT_FALSE(d.result.refusal);
  EXPECT_EQ(d.claims.size(), 1u);
  EXPECT_EQ(s.annotations.count("cdi.k8s.io/vfio-gpu_nvidia.com_pgpu"), 0u);
  EXPECT_EQ(s.devices.size(), 1u);
  for (const auto& [bdf, n] : BdfCounts(refs)) EXPECT_EQ(n, 1) << bdf;
}

TEST_F(HooksTest, ColdPlugPlanInLinuxDevicesFormAndWhenKataAsksItself) {
  cfg_.kata_pod_resources = false;
  cfg_.cold_plug_form = ColdPlugForm::kLinuxDevices;
  OciSpec s = Spec(SandboxSpec(), "5f1c");
  PodAllocation a = Allocated({"0000:b1:00.0"});
  HostFacts f = Facts(s, {182});
  std::vector<VfioRef> refs;
  auto r = PlanColdPlug(s, refs, a, f, Cdi(), cfg_);
  ASSERT_FALSE(r.refusal);
  ASSERT_EQ(s.devices.size(), 1u);
  EXPECT_EQ(s.devices[0].path, "/dev/vfio/182");
  EXPECT_EQ(s.annotations.count("cdi.k8s.io/vfio-gpu_nvidia.com_pgpu"), 0u);
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(refs[0].unit_id, "0000:b1:00.0");
  DedupResult d = Deduplicate(s, refs, f, {}, cfg_);
  ASSERT_FALSE(d.result.refusal);
  EXPECT_EQ(d.claims.size(), 1u);
  // Kata >= 3.24 asks the pod resources API itself: no plan.
  cfg_.kata_pod_resources = true;
  OciSpec t = Spec(SandboxSpec(), "5f1c");
  std::vector<VfioRef> none;
  EXPECT_TRUE(PlanColdPlug(t, none, a, f, Cdi(), cfg_).decisions.empty());
  EXPECT_FALSE(t.dirty);
  // A unit the kubelet allocated but the node no longer has: permanent, quarantined.
  cfg_.kata_pod_resources = false;
  OciSpec u = Spec(SandboxSpec(), "5f1c");
  auto gone = PlanColdPlug(u, none, Allocated({"0000:ee:00.0"}), f, Cdi(), cfg_);
  ASSERT_TRUE(gone.refusal);
  EXPECT_EQ(gone.refusal->kind, ErrorKind::kPermanent);
  EXPECT_EQ(gone.refusal->quarantine.count("0000:ee:00.0"), 1u);
}

TEST(ColdPlug, AnnotationKeysAreShortValidAndUniquePerKind) {
  EXPECT_EQ(ColdPlugAnnotationKey("nvidia.com/pgpu"), "cdi.k8s.io/vfio-gpu_nvidia.com_pgpu");
  EXPECT_EQ(ColdPlugAnnotationKey("nvidia.com/nvswitch"),
            "cdi.k8s.io/vfio-gpu_nvidia.com_nvswitch");
  EXPECT_NE(ColdPlugAnnotationKey("nvidia.com/GA102GL_A10"),
            ColdPlugAnnotationKey("nvidia.com/pgpu"));
  std::string longer(80, 'a');
  std::string k = ColdPlugAnnotationKey("example.com/" + longer);
  EXPECT_LE(k.size() - std::string("cdi.k8s.io/").size(), 63u);
  EXPECT_NE(k, ColdPlugAnnotationKey("example.com/" + longer + "b"));
}

TEST(KataConfig, QemuWithPortsIsGpuCapableClhIsNot) {
  auto qemu = ParseToml(R"(# Kata
[hypervisor.qemu]
path = "/opt/kata/bin/qemu-system-x86_64"
kernel_params = "a=b # not a comment"
enable_annotations = ["enable_iommu",
  "default_memory"]
cold_plug_vfio = "no-port"
[runtime]
pod_resource_api_sock = "/var/lib/kubelet/pod-resources/kubelet.sock"
)",
                        "q.toml");
  ASSERT_TRUE(qemu.ok()) << qemu.error().message();
  EXPECT_EQ(qemu->Find({"hypervisor", "qemu", "kernel_params"})->str, "a=b # not a comment");
  auto dropin = ParseToml("[hypervisor.qemu]\ncold_plug_vfio = \"root-port\"\n", "50.toml");
  ASSERT_TRUE(dropin.ok());
  KataConfigView base = KataViewFromDocs("q.toml", {*qemu});
  EXPECT_FALSE(base.GpuCapable());
  EXPECT_EQ(base.hypervisor, "qemu");
  EXPECT_EQ(base.cold_plug_vfio, "no-port");
  KataConfigView with = KataViewFromDocs("q.toml", {*qemu, *dropin});
  EXPECT_TRUE(with.GpuCapable());
  auto clh = ParseToml("[hypervisor.clh]\npath = \"/opt/kata/bin/cloud-hypervisor\"\n", "c.toml");
  ASSERT_TRUE(clh.ok());
  KataConfigView c = KataViewFromDocs("c.toml", {*clh, *dropin});
  EXPECT_FALSE(c.GpuCapable());  // a QEMU drop-in never makes CLH GPU-capable
  EXPECT_NE(c.error.find("several hypervisors (clh, qemu)"), std::string::npos) << c.error;

  ShimConfig cfg;
  SpecIdentity sb;
  sb.role = SpecRole::kSandbox;
  auto r = CheckRuntime(sb, {"0000:17:00.0"}, c, std::nullopt, cfg);
  ASSERT_TRUE(r.result.refusal);
  EXPECT_NE(r.result.refusal->message.find("RuntimeClass kata-qemu-vfio-gpu"), std::string::npos);
  auto sw = CheckRuntime(sb, {"0000:17:00.0"}, c, with, cfg);
  ASSERT_FALSE(sw.result.refusal);
  EXPECT_EQ(*sw.switch_to, "q.toml");
  EXPECT_FALSE(CheckRuntime(sb, {}, c, std::nullopt, cfg).result.refusal);
}

TEST(KataConfig, ReadsDropInsBesideTheFile) {
  vfio_gpu::testing::TempDir t;
  ASSERT_TRUE(MakeDirs(t.path() + "/config.d").ok());
  ASSERT_TRUE(WriteFileAtomic(t.path() + "/configuration-qemu-nvidia-gpu.toml",
                              "[hypervisor.qemu]\nhot_plug_vfio = \"no-port\"\n")
                  .ok());
  EXPECT_FALSE(ReadKataConfig(t.path() + "/configuration-qemu-nvidia-gpu.toml").GpuCapable());
  ASSERT_TRUE(WriteFileAtomic(t.path() + "/config.d/50-vfio-gpu.toml",
                              "[hypervisor.qemu]\ncold_plug_vfio = \"root-port\"\n")
                  .ok());
  EXPECT_TRUE(ReadKataConfig(t.path() + "/configuration-qemu-nvidia-gpu.toml").GpuCapable());
  EXPECT_FALSE(ReadKataConfig(t.path() + "/missing.toml").error.empty());
}

// The shared TOML reader's strictness reaches the runtime hook: a malformed or doubly-defined
// key in a drop-in is an error naming the file and line, never a silently GPU-capable view.
TEST(KataConfig, BadTomlIsAnErrorNamingFileAndLine) {
  vfio_gpu::testing::TempDir t;
  ASSERT_TRUE(MakeDirs(t.path() + "/config.d").ok());
  std::string base = t.path() + "/configuration.toml";
  ASSERT_TRUE(WriteFileAtomic(base, "[hypervisor.qemu]\ncold_plug_vfio = \"root-port\"\n").ok());
  EXPECT_TRUE(ReadKataConfig(base).GpuCapable());
  ASSERT_TRUE(WriteFileAtomic(t.path() + "/config.d/10-bad.toml",
                              "[hypervisor.qemu]\nhot_plug_vfio = \"root-port\"\n"
                              "hot_plug_vfio = \"no-port\"\n")
                  .ok());
  KataConfigView v = ReadKataConfig(base);
  EXPECT_FALSE(v.GpuCapable());
  EXPECT_NE(v.error.find("10-bad.toml:3"), std::string::npos) << v.error;
  KataConfigView body = KataViewFromText("runtime options ConfigBody", "[hypervisor.qemu\n");
  EXPECT_FALSE(body.GpuCapable());
  EXPECT_NE(body.error.find("runtime options ConfigBody:1"), std::string::npos) << body.error;
  EXPECT_TRUE(
      KataViewFromText("b", "[hypervisor.qemu]\nhot_plug_vfio = 'bridge-port'\n").GpuCapable());
}

TEST(RuntimeOptions, DecodesAnyAndBootstrapParams) {
  RuntimeOptions o;
  o.config_path = "/opt/kata/share/defaults/kata-containers/configuration-qemu-nvidia-gpu.toml";
  auto any = DecodeRuntimeOptions(EncodeRuntimeOptionsAny(o));
  ASSERT_TRUE(any);
  EXPECT_EQ(any->config_path, o.config_path);
  auto boot = DecodeRuntimeOptions(EncodeBootstrapParams("5f1c", "k8s.io", o));
  ASSERT_TRUE(boot);
  EXPECT_EQ(boot->config_path, o.config_path);
  EXPECT_FALSE(DecodeRuntimeOptions(""));
  EXPECT_FALSE(DecodeRuntimeOptions("\xff\xff\xff"));
  // Hand-made bytes of a real runtimeoptions Any (type.googleapis.com prefix).
  std::string url = "type.googleapis.com/runtimeoptions.v1.Options";
  std::string inner = std::string("\x12\x05/a.tm", 7);
  std::string bytes = std::string("\x0a") + static_cast<char>(url.size()) + url + "\x12" +
                      static_cast<char>(inner.size()) + inner;
  auto hand = DecodeRuntimeOptions(bytes);
  ASSERT_TRUE(hand);
  EXPECT_EQ(hand->config_path, "/a.tm");
}

}  // namespace
}  // namespace vfio_gpu
