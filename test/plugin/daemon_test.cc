// The daemon end to end: the in-process fake kubelet (Registration server + DevicePlugin client)
// over real unix sockets in a temp dir, the daemon on a fake sysfs/dev tree. No sleeps: every wait
// is on a condition with a timeout. Host changes reach the daemon by inotify (group nodes,
// quarantine marks) or, for driver binds and removals (netlink uevents need root to fake), by the
// daemon's Rescan() hook.
#include "plugin/daemon.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>

#include "common/files.h"
#include "hostmodel/fake_host.h"
#include "hostmodel/published_selection.h"
#include "plugin/resource_server.h"
#include "test/fakes/fake_kubelet.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu::plugin {
namespace {

using fakes::DeviceList;
using fakes::FakeKubelet;
using std::chrono::milliseconds;

constexpr milliseconds kWait{5000};
const std::string kPgpu = "nvidia.com/pgpu";

const v1beta1::Device* Find(const DeviceList& l, const std::string& id) {
  for (const auto& d : l)
    if (d.id() == id) return &d;
  return nullptr;
}

fakes::DevicePredicate HealthIs(const std::string& id, const std::string& health) {
  return [id, health](const DeviceList& l) {
    const auto* d = Find(l, id);
    return d && d->health() == health;
  };
}

bool IsSocket(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// GET over loopback: IPv4 (127.0.0.1) by default, IPv6 (::1) with `v6`.
std::string HttpGet(int port, const std::string& path, bool v6 = false) {
  int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_storage ss{};
  socklen_t len;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(port));
    a->sin6_addr = in6addr_loopback;
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(port));
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof *a;
  }
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    if (fd >= 0) close(fd);
    return "";
  }
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
  [[maybe_unused]] auto w = write(fd, req.data(), req.size());
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    host_ = std::make_unique<FakeHost>(dir_ / "host");
    config_.roots = host_->roots();
    config_.kubelet_dir = dir_ / "kubelet";
    config_.cdi_dir = dir_ / "cdi";
    config_.run_dir = dir_ / "run";
    config_.metrics_address = "127.0.0.1:0";
  }
  void TearDown() override {
    if (daemon_) daemon_->Stop();
    if (kubelet_) kubelet_->Stop();
  }

  void StartKubelet() {
    kubelet_ = std::make_unique<FakeKubelet>(config_.kubelet_dir);
    ASSERT_TRUE(kubelet_->Start().ok());
  }
  void StartDaemon() {
    DaemonOptions o;
    o.config = config_;
    o.register_backoff_initial = milliseconds(20);
    o.register_backoff_max = milliseconds(200);
    auto d = PluginDaemon::Start(std::move(o));
    ASSERT_TRUE(d.ok()) << d.error().message();
    daemon_ = std::move(*d);
  }
  void StartAll() {
    StartKubelet();
    StartDaemon();
  }
  // A GPU that appears while the plugin runs (hot-plug, or bound after start): 0000:e1:00.0 in
  // group 200 on NUMA node 1. Its group node appears with it, which inotify reports.
  void AddLateGpu() {
    FakeDevice gpu = MakeFakeDevice("0000:e1:00.0", "pci0000:e0", 200);
    gpu.numa_node = 1;
    ASSERT_TRUE(host_->Add(gpu).ok());
  }
  // Runs the real binary against the fake host, waits for its registration, sends `sig`.
  void ExpectCleanExitOn(int sig);
  DeviceList WaitHealth(const std::string& id, const std::string& health) {
    auto l = kubelet_->WaitForDevices(kPgpu, HealthIs(id, health), kWait);
    EXPECT_TRUE(l.has_value()) << id << " never became " << health;
    return l.value_or(DeviceList{});
  }

  testing::TempDir dir_;
  std::unique_ptr<FakeHost> host_;
  NodeConfig config_;
  std::unique_ptr<FakeKubelet> kubelet_;
  std::unique_ptr<PluginDaemon> daemon_;
};

TEST_F(DaemonTest, RegistersEachResourceWithTheRightRequest) {
  ASSERT_TRUE(BuildHgxHost(*host_).ok());
  StartAll();
  for (const std::string r : {"nvidia.com/pgpu", "nvidia.com/nvswitch"}) {
    auto req = kubelet_->WaitForRegistration(r, kWait);
    ASSERT_TRUE(req.has_value()) << r;
    EXPECT_EQ(req->version(), "v1beta1");
    EXPECT_EQ(req->endpoint(), SocketName(r));
    EXPECT_LT(req->endpoint().size(), 63u);
    EXPECT_TRUE(req->options().pre_start_required());
    EXPECT_TRUE(req->options().get_preferred_allocation_available());
    EXPECT_TRUE(IsSocket(config_.kubelet_dir + "/" + req->endpoint()));
  }
  auto gpus = kubelet_->WaitForDevices(
      kPgpu, [](const DeviceList& l) { return l.size() == 8; }, kWait);
  ASSERT_TRUE(gpus.has_value());
  auto switches = kubelet_->WaitForDevices(
      "nvidia.com/nvswitch", [](const DeviceList& l) { return l.size() == 4; }, kWait);
  ASSERT_TRUE(switches.has_value());
}

TEST_F(DaemonTest, ListAndWatchCarriesUnitIdsHealthAndNuma) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  StartAll();
  auto l = kubelet_->WaitForDevices(
      kPgpu, [](const DeviceList& d) { return d.size() == 4; }, kWait);
  ASSERT_TRUE(l.has_value());
  std::vector<std::string> ids;
  for (const auto& d : *l) {
    ids.push_back(d.id());
    EXPECT_EQ(d.health(), "Healthy");
    ASSERT_EQ(d.topology().nodes_size(), 1);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"0000:17:00.0", "0000:31:00.0", "0000:b1:00.0",
                                           "0000:ca:00.0"}));
  EXPECT_EQ(Find(*l, "0000:17:00.0")->topology().nodes(0).id(), 0);
  EXPECT_EQ(Find(*l, "0000:ca:00.0")->topology().nodes(0).id(), 1);
  // The CDI spec was there before the kubelet saw a device.
  auto spec = ReadFile(config_.cdi_dir + "/vfio-gpu-nvidia.com-pgpu.json");
  ASSERT_TRUE(spec.ok());
  EXPECT_NE(spec->find("0000:ca:00.0"), std::string::npos);
}

TEST_F(DaemonTest, NoNumaMeansNoTopology) {
  ASSERT_TRUE(BuildNoNumaHost(*host_).ok());
  StartAll();
  auto l = kubelet_->WaitForDevices(
      kPgpu, [](const DeviceList& d) { return !d.empty(); }, kWait);
  ASSERT_TRUE(l.has_value());
  for (const auto& d : *l) EXPECT_FALSE(d.has_topology()) << d.id();
}

TEST_F(DaemonTest, AllocateDefaultIsCdiDevicesOnly) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  StartAll();
  WaitHealth("0000:17:00.0", "Healthy");
  v1beta1::AllocateResponse resp;
  auto s = kubelet_->Allocate(kPgpu, {"0000:17:00.0", "0000:31:00.0"}, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(resp.container_responses_size(), 1);
  const auto& c = resp.container_responses(0);
  ASSERT_EQ(c.cdi_devices_size(), 2);
  EXPECT_EQ(c.cdi_devices(0).name(), "nvidia.com/pgpu=0000:17:00.0");
  EXPECT_EQ(c.devices_size() + c.annotations_size() + c.envs_size() + c.mounts_size(), 0);
}

TEST_F(DaemonTest, AllocateCdiAnnotationsStrategy) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  config_.allocate_strategy = AllocateStrategy::kCdiAnnotations;
  StartAll();
  WaitHealth("0000:17:00.0", "Healthy");
  v1beta1::AllocateResponse resp;
  ASSERT_TRUE(kubelet_->Allocate(kPgpu, {"0000:b1:00.0"}, &resp).ok());
  const auto& c = resp.container_responses(0);
  ASSERT_EQ(c.annotations_size(), 1);
  EXPECT_EQ(c.annotations().begin()->first.rfind("cdi.k8s.io/vfio-gpu_", 0), 0u);
  EXPECT_EQ(c.annotations().begin()->second, "nvidia.com/pgpu=0000:b1:00.0");
  EXPECT_EQ(c.cdi_devices_size(), 0);
}

TEST_F(DaemonTest, AllocateDeviceSpecsStrategyWithKubeVirtEnv) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  config_.allocate_strategy = AllocateStrategy::kDeviceSpecs;
  config_.kubevirt_env = true;
  StartAll();
  WaitHealth("0000:17:00.0", "Healthy");
  v1beta1::AllocateResponse resp;
  ASSERT_TRUE(kubelet_->Allocate(kPgpu, {"0000:31:00.0"}, &resp).ok());
  const auto& c = resp.container_responses(0);
  ASSERT_EQ(c.devices_size(), 2);
  EXPECT_EQ(c.devices(0).host_path(), "/dev/vfio/vfio");
  EXPECT_EQ(c.devices(1).host_path(), "/dev/vfio/31");
  EXPECT_EQ(c.devices(1).container_path(), "/dev/vfio/31");
  EXPECT_EQ(c.envs().at("PCI_RESOURCE_NVIDIA_COM_PGPU"), "0000:31:00.0");
}

TEST_F(DaemonTest, AllocateErrorsNameTheDevices) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  StartAll();
  WaitHealth("0000:17:00.0", "Healthy");
  v1beta1::AllocateResponse resp;
  auto s = kubelet_->Allocate(kPgpu, {"0000:17:00.0", "0000:99:00.0"}, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("0000:99:00.0"), std::string::npos);

  ASSERT_TRUE(host_->RemoveGroupNode(25).ok());  // inotify on <dev>/vfio
  WaitHealth("0000:17:00.0", "Unhealthy");
  s = kubelet_->Allocate(kPgpu, {"0000:17:00.0"}, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("/dev/vfio/25"), std::string::npos) << s.error_message();
}

TEST_F(DaemonTest, PreferredAllocationKeepsNumaAndHonoursMustInclude) {
  ASSERT_TRUE(BuildHgxHost(*host_).ok());
  StartAll();
  auto l = kubelet_->WaitForDevices(
      kPgpu, [](const DeviceList& d) { return d.size() == 8; }, kWait);
  ASSERT_TRUE(l.has_value());
  std::vector<std::string> all;
  for (const auto& d : *l) all.push_back(d.id());
  v1beta1::PreferredAllocationResponse resp;
  // The last GPU is on NUMA node 1: three more from node 1.
  ASSERT_TRUE(kubelet_->GetPreferredAllocation(kPgpu, all, {all.back()}, 4, &resp).ok());
  ASSERT_EQ(resp.container_responses_size(), 1);
  const auto& ids = resp.container_responses(0).deviceids();
  ASSERT_EQ(ids.size(), 4);
  EXPECT_EQ(ids[0], all.back());
  for (const auto& id : ids) {
    const auto* d = Find(*l, id);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->topology().nodes(0).id(), 1) << id;
  }
  // An unhealthy unit among the available ones never fails the call.
  ASSERT_TRUE(host_->RemoveGroupNode(104).ok());  // the first GPU's group (104 + 6 * i)
  ASSERT_TRUE(
      kubelet_->WaitForDevices(kPgpu, HealthIs(all.front(), "Unhealthy"), kWait).has_value());
  resp.Clear();
  std::vector<std::string> with_unknown = all;
  with_unknown.push_back("0000:ff:00.0");
  ASSERT_TRUE(kubelet_->GetPreferredAllocation(kPgpu, with_unknown, {}, 2, &resp).ok());
  ASSERT_EQ(resp.container_responses(0).deviceids_size(), 2);
  for (const auto& id : resp.container_responses(0).deviceids()) EXPECT_NE(id, all.front());
}

TEST_F(DaemonTest, KubeletRestartLeadsToReRegistration) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  StartAll();
  ASSERT_TRUE(kubelet_->WaitForRegistration(kPgpu, kWait).has_value());
  std::string sock = daemon_->SocketPath(kPgpu);
  ASSERT_TRUE(kubelet_->Restart().ok());  // deletes every socket, re-creates kubelet.sock
  // The bar is 1 s; the margin is for sanitizer builds on a busy machine.
  ASSERT_TRUE(kubelet_->WaitForRegistrationCount(kPgpu, 2, milliseconds(3000)));
  ASSERT_TRUE(kubelet_->WaitForRegistration(kPgpu, kWait).has_value());
  EXPECT_TRUE(IsSocket(sock));
  WaitHealth("0000:17:00.0", "Healthy");
  v1beta1::AllocateResponse resp;
  EXPECT_TRUE(kubelet_->Allocate(kPgpu, {"0000:17:00.0"}, &resp).ok());
  // Twice, to be sure the re-created server is itself watched.
  ASSERT_TRUE(kubelet_->Restart().ok());
  ASSERT_TRUE(kubelet_->WaitForRegistrationCount(kPgpu, 3, milliseconds(3000)));
  auto metrics = HttpGet(daemon_->metrics_port(), "/metrics");
  std::string line = "vfio_gpu_plugin_reregistrations_total{resource=\"nvidia.com/pgpu\"} ";
  auto at = metrics.find(line);
  ASSERT_NE(at, std::string::npos) << metrics;
  EXPECT_GE(std::stoi(metrics.substr(at + line.size())), 2);
}

TEST_F(DaemonTest, OurSocketDeletedAloneIsRecreated) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  StartAll();
  ASSERT_TRUE(kubelet_->WaitForRegistration(kPgpu, kWait).has_value());
  ASSERT_EQ(::unlink(daemon_->SocketPath(kPgpu).c_str()), 0);
  ASSERT_TRUE(kubelet_->WaitForRegistrationCount(kPgpu, 2, milliseconds(3000)));
  EXPECT_TRUE(IsSocket(daemon_->SocketPath(kPgpu)));
}

TEST_F(DaemonTest, KubeletAbsentAtStartIsWaitedFor) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  StartDaemon();  // no kubelet: registration fails and is retried, the daemon keeps running
  auto tree = daemon_->RescanAndWait(kWait);
  ASSERT_TRUE(tree);
  EXPECT_EQ(tree->at(kPgpu).size(), 4u);
  StartKubelet();
  auto req = kubelet_->WaitForRegistration(kPgpu, kWait);
  ASSERT_TRUE(req.has_value());
  auto l = kubelet_->WaitForDevices(
      kPgpu, [](const DeviceList& d) { return d.size() == 4; }, kWait);
  EXPECT_TRUE(l.has_value());
}

// The shim scans with the plugin's selection and governs its resource names: the plugin publishes
// both under its run dir before the kubelet hears of the resource.
TEST_F(DaemonTest, PublishesItsSelectionAndResourcesForTheShim) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  config_.selection.naming = ResourceNaming::kPerModel;
  config_.selection.deny = {"0000:ca:00.0"};
  StartAll();
  const std::string a10 = "nvidia.com/GA102GL_A10";
  ASSERT_TRUE(kubelet_->WaitForRegistration(a10, kWait).has_value());
  auto pub = ReadPublishedSelection(config_.run_dir);
  ASSERT_TRUE(pub.ok()) << pub.error().message();
  ASSERT_TRUE(pub->has_value());
  EXPECT_EQ((*pub)->resources, std::vector<std::string>{a10});
  EXPECT_EQ((*pub)->selection.naming, ResourceNaming::kPerModel);
  EXPECT_EQ((*pub)->selection.deny, std::vector<std::string>{"0000:ca:00.0"});
}

// Kata resolves <resource>=<device ID> through the CDI spec as soon as the kubelet can allocate the
// device: at the moment each ListAndWatch update arrives, every Healthy device in it must already
// be in the spec on disk, including a unit that appears later.
TEST_F(DaemonTest, CdiSpecIsOnDiskBeforeEachDeviceIsAdvertised) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  std::mutex mu;
  std::vector<std::string> missing;
  int updates = 0;
  FakeKubelet::Options o;
  o.on_update = [&](const std::string& resource, const DeviceList& devices) {
    auto spec = ReadFile(config_.cdi_dir + "/vfio-gpu-nvidia.com-pgpu.json");
    std::lock_guard lk(mu);
    ++updates;
    for (const auto& d : devices)
      if (d.health() == "Healthy" &&
          (!spec.ok() || spec->find("\"" + d.id() + "\"") == std::string::npos))
        missing.push_back(resource + "=" + d.id());
  };
  kubelet_ = std::make_unique<FakeKubelet>(config_.kubelet_dir, o);
  ASSERT_TRUE(kubelet_->Start().ok());
  StartDaemon();
  WaitHealth("0000:ca:00.0", "Healthy");
  AddLateGpu();
  WaitHealth("0000:e1:00.0", "Healthy");
  std::lock_guard lk(mu);
  EXPECT_GE(updates, 2);
  EXPECT_TRUE(missing.empty()) << "advertised before its CDI spec: " << missing.front();
}

// An event names one group, and only that group is read at once; a full scan follows within a
// second and catches what no event named (here a driver link changed behind the kernel's back),
// long before the 30 s reconcile.
TEST_F(DaemonTest, ATargetedRescanIsFollowedByAFullOne) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  StartAll();
  WaitHealth("0000:b1:00.0", "Healthy");
  std::string link = host_->roots().PciDevice("0000:b1:00.0") + "/driver";
  ASSERT_TRUE(MakeDirs(host_->roots().sysfs + "/bus/pci/drivers/nvidia").ok());
  ASSERT_EQ(::unlink(link.c_str()), 0);
  ASSERT_EQ(::symlink((host_->roots().sysfs + "/bus/pci/drivers/nvidia").c_str(), link.c_str()), 0);
  ASSERT_TRUE(host_->RemoveGroupNode(31).ok());  // inotify names group 31
  WaitHealth("0000:31:00.0", "Unhealthy");
  WaitHealth("0000:b1:00.0", "Unhealthy");
}

TEST_F(DaemonTest, GroupNodeRemovedAndBack) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  StartAll();
  WaitHealth("0000:31:00.0", "Healthy");
  ASSERT_TRUE(host_->RemoveGroupNode(31).ok());
  WaitHealth("0000:31:00.0", "Unhealthy");
  ASSERT_TRUE(host_->AddGroupNode(31).ok());
  WaitHealth("0000:31:00.0", "Healthy");
}

TEST_F(DaemonTest, MemberReboundToAnotherDriverAndBack) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  StartAll();
  WaitHealth("0000:b1:00.0", "Healthy");
  ASSERT_TRUE(host_->SetDriver("0000:b1:00.0", "nvidia").ok());
  // Stands in for the kernel's unbind/bind uevents.
  auto tree = daemon_->RescanAndWait(kWait);
  ASSERT_TRUE(tree);
  EXPECT_NE(tree->at(kPgpu).at("0000:b1:00.0").reason.find("nvidia"), std::string::npos);
  WaitHealth("0000:b1:00.0", "Unhealthy");
  ASSERT_TRUE(host_->SetDriver("0000:b1:00.0", "vfio-pci").ok());
  daemon_->Rescan();
  WaitHealth("0000:b1:00.0", "Healthy");
}

// The GPU's audio function unbound from vfio-pci and left with no driver: VFIO still calls the
// group viable, but Kata could not start the VM with it, so the unit is out of service until it is
// rebound.
TEST_F(DaemonTest, MemberLeftVfioForNoDriverAndBack) {
  ASSERT_TRUE(BuildConsumerGpuHost(*host_, /*audio_on_vfio=*/true).ok());
  StartAll();
  WaitHealth("0000:01:00.0", "Healthy");
  ASSERT_TRUE(host_->SetDriver("0000:01:00.1", "").ok());
  auto tree = daemon_->RescanAndWait(kWait);  // stands in for the kernel's unbind uevent
  ASSERT_TRUE(tree);
  EXPECT_NE(tree->at(kPgpu).at("0000:01:00.0").reason.find("0000:01:00.1 (audio) has no driver"),
            std::string::npos)
      << tree->at(kPgpu).at("0000:01:00.0").reason;
  WaitHealth("0000:01:00.0", "Unhealthy");
  ASSERT_TRUE(host_->SetDriver("0000:01:00.1", "vfio-pci").ok());
  daemon_->Rescan();
  WaitHealth("0000:01:00.0", "Healthy");
}

TEST_F(DaemonTest, DeviceRemovedStaysUnhealthyThenComesBack) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  StartAll();
  WaitHealth("0000:ca:00.0", "Healthy");
  ASSERT_TRUE(host_->Remove("0000:ca:00.0").ok());
  auto tree = daemon_->RescanAndWait(kWait);
  ASSERT_TRUE(tree);
  EXPECT_NE(tree->at(kPgpu).at("0000:ca:00.0").reason.find("vanished"), std::string::npos);
  WaitHealth("0000:ca:00.0", "Unhealthy");
  FakeDevice gpu;
  gpu.bdf = "0000:ca:00.0";
  gpu.parent = "pci0000:c9";
  gpu.iommu_group = 188;
  gpu.numa_node = 1;
  ASSERT_TRUE(host_->Add(gpu).ok());
  daemon_->Rescan();
  WaitHealth("0000:ca:00.0", "Healthy");
}

TEST_F(DaemonTest, FallenOffTheBusIsUnhealthy) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  StartAll();
  WaitHealth("0000:17:00.0", "Healthy");
  ASSERT_TRUE(host_->SetAttr("0000:17:00.0", "vendor", "0xffff").ok());
  daemon_->Rescan();
  WaitHealth("0000:17:00.0", "Unhealthy");
  ASSERT_TRUE(host_->SetAttr("0000:17:00.0", "vendor", "0x10de").ok());
  daemon_->Rescan();
  WaitHealth("0000:17:00.0", "Healthy");
}

TEST_F(DaemonTest, QuarantineFileMakesItUnhealthyWithItsReason) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  StartAll();
  WaitHealth("0000:17:00.0", "Healthy");
  std::string mark = config_.run_dir + "/quarantine/0000:17:00.0";
  ASSERT_TRUE(WriteFileAtomic(mark, "Xid 79: GPU has fallen off the bus\n").ok());  // inotify
  WaitHealth("0000:17:00.0", "Unhealthy");
  v1beta1::AllocateResponse resp;
  auto s = kubelet_->Allocate(kPgpu, {"0000:17:00.0"}, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("Xid 79"), std::string::npos) << s.error_message();
  ASSERT_TRUE(RemoveFile(mark).ok());
  WaitHealth("0000:17:00.0", "Healthy");
}

// An operator clears every mark with `rm -r` and the dir is made again (by hand or by the shim's
// next quarantine): a mark written then is seen at once, not at the next reconcile.
TEST_F(DaemonTest, QuarantineDirRemovedAndRecreatedIsStillWatched) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  StartAll();
  WaitHealth("0000:31:00.0", "Healthy");
  std::string dir = config_.run_dir + "/quarantine";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  ASSERT_FALSE(ec);
  ASSERT_TRUE(MakeDirs(dir).ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/0000:31:00.0", "Xid 48: double-bit ECC error\n").ok());
  WaitHealth("0000:31:00.0", "Unhealthy");
  std::filesystem::remove_all(dir, ec);
  WaitHealth("0000:31:00.0", "Healthy");
}

TEST_F(DaemonTest, PreStartContainerRechecksTheHost) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  StartAll();
  WaitHealth("0000:31:00.0", "Healthy");
  v1beta1::PreStartContainerResponse resp;
  EXPECT_TRUE(kubelet_->PreStartContainer(kPgpu, {"0000:31:00.0"}, &resp).ok());
  // Broken since Allocate, and no event told the daemon: PreStart looks for itself.
  ASSERT_TRUE(host_->SetDriver("0000:31:00.0", "nouveau").ok());
  auto s = kubelet_->PreStartContainer(kPgpu, {"0000:31:00.0"}, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(s.error_message().find("nouveau"), std::string::npos) << s.error_message();
}

TEST_F(DaemonTest, NewUnitsAppearWithoutRestart) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  StartAll();
  WaitHealth("0000:17:00.0", "Healthy");
  AddLateGpu();
  WaitHealth("0000:e1:00.0", "Healthy");
  auto spec = ReadFile(config_.cdi_dir + "/vfio-gpu-nvidia.com-pgpu.json");
  ASSERT_TRUE(spec.ok());
  EXPECT_NE(spec->find("0000:e1:00.0"), std::string::npos);
}

// The default form (":9477") listens on every address: IPv4 and, where the host has it, IPv6;
// "[::1]:port" on IPv6 loopback alone.
TEST_F(DaemonTest, MetricsListenOnIpv4AndIpv6) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  config_.metrics_address = ":0";
  StartAll();
  ASSERT_GT(daemon_->metrics_port(), 0);
  EXPECT_EQ(HttpGet(daemon_->metrics_port(), "/healthz").rfind("HTTP/1.1 200", 0), 0u);
  int probe = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe < 0) GTEST_SKIP() << "no IPv6 on this host";
  close(probe);
  EXPECT_EQ(HttpGet(daemon_->metrics_port(), "/healthz", true).rfind("HTTP/1.1 200", 0), 0u);
  daemon_->Stop();
  daemon_.reset();
  config_.metrics_address = "[::1]:0";
  StartDaemon();
  ASSERT_GT(daemon_->metrics_port(), 0);
  EXPECT_EQ(HttpGet(daemon_->metrics_port(), "/healthz", true).rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_EQ(HttpGet(daemon_->metrics_port(), "/healthz"), "");  // not on IPv4
}

TEST_F(DaemonTest, HealthzAndMetrics) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  StartAll();
  WaitHealth("0000:17:00.0", "Healthy");
  ASSERT_GT(daemon_->metrics_port(), 0);
  auto h = HttpGet(daemon_->metrics_port(), "/healthz");
  EXPECT_EQ(h.rfind("HTTP/1.1 200", 0), 0u) << h;
  v1beta1::AllocateResponse resp;
  ASSERT_TRUE(kubelet_->Allocate(kPgpu, {"0000:17:00.0"}, &resp).ok());
  auto m = HttpGet(daemon_->metrics_port(), "/metrics");
  EXPECT_NE(m.find("vfio_gpu_plugin_units{resource=\"nvidia.com/pgpu\",health=\"Healthy\"} 4"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("vfio_gpu_plugin_allocations_total{resource=\"nvidia.com/pgpu\"} 1"),
            std::string::npos);
  EXPECT_NE(m.find("vfio_gpu_plugin_registrations_total{resource=\"nvidia.com/pgpu\"} 1"),
            std::string::npos);
  EXPECT_NE(m.find("vfio_gpu_plugin_scan_duration_seconds_count"), std::string::npos);
  EXPECT_NE(m.find("vfio_gpu_plugin_cdi_writes_total 1"), std::string::npos);
  EXPECT_EQ(HttpGet(daemon_->metrics_port(), "/nope").rfind("HTTP/1.1 404", 0), 0u);
}

TEST_F(DaemonTest, StopRemovesOurSockets) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  StartAll();
  ASSERT_TRUE(kubelet_->WaitForRegistration(kPgpu, kWait).has_value());
  std::string sock = daemon_->SocketPath(kPgpu);
  ASSERT_TRUE(IsSocket(sock));
  daemon_->Stop();
  EXPECT_FALSE(PathExists(sock));
  EXPECT_TRUE(kubelet_->WaitForStreamEnd(kPgpu, kWait));
}

TEST_F(DaemonTest, BadSysfsRootIsRefusedAtStart) {
  config_.roots.sysfs = dir_ / "nowhere";
  DaemonOptions o;
  o.config = config_;
  auto d = PluginDaemon::Start(o);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message().find("--sysfs-root"), std::string::npos) << d.error().message();
}

TEST_F(DaemonTest, BinaryExitsZeroOnSigtermOrSigintAndRemovesItsSocket) {
  ASSERT_TRUE(BuildSeedA10Host(*host_).ok());
  StartKubelet();
  for (int sig : {SIGTERM, SIGINT}) {
    SCOPED_TRACE(strsignal(sig));
    ExpectCleanExitOn(sig);
    if (HasFatalFailure()) return;
  }
}

void DaemonTest::ExpectCleanExitOn(int sig) {
  int registrations = kubelet_->RegistrationCount(kPgpu);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl(VFIO_GPU_PLUGIN_BIN, "vfio-gpu-plugin", "--sysfs-root", config_.roots.sysfs.c_str(),
          "--dev-root", config_.roots.dev.c_str(), "--kubelet-dir", config_.kubelet_dir.c_str(),
          "--cdi-dir", config_.cdi_dir.c_str(), "--run-dir", config_.run_dir.c_str(),
          "--metrics-address", "", "--log-format", "json", static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_TRUE(kubelet_->WaitForRegistrationCount(kPgpu, registrations + 1, kWait));
  kill(pid, sig);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(PathExists(config_.kubelet_dir + "/" + SocketName(kPgpu)));
}

}  // namespace
}  // namespace vfio_gpu::plugin
