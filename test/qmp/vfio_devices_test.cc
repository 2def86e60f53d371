// Listing a VM's devices over QMP: the QOM walk (/machine/peripheral and -anon, qom-get of the host
// property), the query-pci merge, the type filter. No VFIO device can be attached on this host, so
// the real-QEMU tests point the filter at e1000e NICs, whose string property `failover_pair_id`
// holds a BDF-shaped value just as vfio-pci's `host` does; real vfio-pci runs in the e2e guest.
#include "qmp/vfio_devices.h"

#include <gtest/gtest.h>

#include <chrono>

#include "common/files.h"
#include "test/qmp/qemu_vm.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu::qmp {
namespace {

using namespace std::chrono_literals;
using testing::QemuVm;
using testing::TempDir;

DeviceFilter NicFilter() {
  DeviceFilter f;
  f.types = {"e1000e"};
  f.host_property = "failover_pair_id";
  f.sysfsdev_property = "";
  return f;
}

Status HotAdd(QmpSession& s, const std::string& driver, const std::string& id,
              const std::string& bus, const std::string& host) {
  Json args = Json::Object()
                  .Set("driver", Json::String(driver))
                  .Set("id", Json::String(id))
                  .Set("bus", Json::String(bus));
  if (!host.empty()) args.Set("failover_pair_id", Json::String(host));
  auto r = s.Execute("device_add", args);
  if (!r) return r.error();
  return Status::Ok();
}

class ListingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Root ports take slots 1-3; cold0 is 00:04.0, the id-less NIC 00:05.0, td0 00:06.0.
    vm_ = QemuVm::Start(tmp_.path(), 3,
                        {"-device", "e1000e,id=cold0,failover_pair_id=0000:0a:00.0", "-device",
                         "e1000e,failover_pair_id=0000:0b:00.0", "-device", "pci-testdev,id=td0"});
    ASSERT_NE(vm_, nullptr);
    auto s = QmpSession::Connect(vm_->socket_path(), 10s);
    ASSERT_TRUE(s.ok()) << s.error().message() << "\n" << *ReadFile(vm_->log_path());
    // Hot-added behind root ports: under -S the guest never enumerates them (not in query-pci).
    ASSERT_TRUE(HotAdd(*s, "e1000e", "nic0", "rp0", "0000:01:00.0"));
    ASSERT_TRUE(HotAdd(*s, "e1000e", "nic1", "rp1", "0000:01:00.0"));  // the same "BDF" twice
    ASSERT_TRUE(HotAdd(*s, "e1000e", "nic2", "rp2", "01:00.1"));       // short form
  }
  TempDir tmp_;
  std::unique_ptr<QemuVm> vm_;
};

TEST_F(ListingTest, FindsEveryMatchingDeviceOnceWithItsHostAddress) {
  auto devices = ListVfioDevicesAt(vm_->socket_path(), 10s, NicFilter());
  ASSERT_TRUE(devices.ok()) << devices.error().message();
  ASSERT_EQ(devices->size(), 5u);
  const auto& d = *devices;
  EXPECT_EQ(d[0].host, "0000:01:00.0");
  EXPECT_EQ(d[0].id, "nic0");
  EXPECT_EQ(d[0].qom_path, "/machine/peripheral/nic0");
  EXPECT_EQ(d[0].guest_address, "");
  EXPECT_EQ(d[1].host, "0000:01:00.0");
  EXPECT_EQ(d[1].id, "nic1");
  EXPECT_EQ(d[2].host, "0000:01:00.1");  // canonicalized
  EXPECT_EQ(d[2].id, "nic2");
  // Cold-plugged on pcie.0: listed by both QOM and query-pci, counted once, with its guest address.
  EXPECT_EQ(d[3].host, "0000:0a:00.0");
  EXPECT_EQ(d[3].id, "cold0");
  EXPECT_EQ(d[3].guest_address, "00:04.0");
  // Added without an id: found under /machine/peripheral-anon.
  EXPECT_EQ(d[4].host, "0000:0b:00.0");
  EXPECT_EQ(d[4].qom_path, "/machine/peripheral-anon/device[0]");
  EXPECT_EQ(d[4].id, "device[0]");
}

TEST_F(ListingTest, DefaultFilterIsVfioPciOnly) {
  auto devices = ListVfioDevicesAt(vm_->socket_path(), 10s);
  ASSERT_TRUE(devices.ok()) << devices.error().message();
  EXPECT_TRUE(devices->empty());
}

TEST_F(ListingTest, FallsBackToSysfsdevWhenHostIsNotABdf) {
  DeviceFilter f = NicFilter();
  f.host_property = "mac";  // "52:54:00:...", not a BDF
  f.sysfsdev_property = "failover_pair_id";
  auto devices = ListVfioDevicesAt(vm_->socket_path(), 10s, f);
  ASSERT_TRUE(devices.ok()) << devices.error().message();
  ASSERT_EQ(devices->size(), 5u);
  EXPECT_EQ(devices->at(0).host, "0000:01:00.0");
}

TEST_F(ListingTest, AMissingHostPropertyIsAnErrorNamingTheDevice) {
  DeviceFilter f;
  f.types = {"pci-testdev"};
  auto devices = ListVfioDevicesAt(vm_->socket_path(), 10s, f);
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.error().message(),
            "QMP socket " + vm_->socket_path() +
                ": read host of /machine/peripheral/td0: qom-get: QEMU answered GenericError: "
                "Property 'pci-testdev.host' not found");
}

TEST_F(ListingTest, TheSocketIsFreeAsSoonAsTheListingReturns) {
  ASSERT_TRUE(ListVfioDevicesAt(vm_->socket_path(), 10s, NicFilter()).ok());
  // A short timeout: a listing that kept the socket would make this connect time out as busy.
  auto next = QmpSession::Connect(vm_->socket_path(), 2s);
  EXPECT_TRUE(next.ok()) << next.error().message();
}

// query-pci as QEMU 7.2 answers with a device behind a root port (trimmed to the fields we read).
constexpr const char* kQueryPci = R"([{"bus": 0, "devices": [
  {"bus": 0, "slot": 0, "function": 0, "qdev_id": ""},
  {"bus": 0, "slot": 1, "function": 0, "qdev_id": "rp0",
   "pci_bridge": {"bus": {"number": 1, "secondary": 1, "subordinate": 1},
                  "devices": [{"bus": 1, "slot": 0, "function": 0, "qdev_id": "gpu0"},
                              {"bus": 1, "slot": 0, "function": 1, "qdev_id": "gpu0-audio"}]}},
  {"bus": 0, "slot": 4, "function": 0, "qdev_id": "cold0"},
  {"bus": 0, "slot": 31, "function": 3, "qdev_id": ""}]}])";

TEST(QueryPciTest, FlattensBridges) {
  auto j = Json::Parse(kQueryPci, "query-pci");
  ASSERT_TRUE(j.ok()) << j.error().message();
  auto flat = FlattenQueryPci(*j);
  ASSERT_EQ(flat.size(), 6u);
  EXPECT_EQ(flat[1].qdev_id, "rp0");
  EXPECT_EQ(flat[1].address, "00:01.0");
  EXPECT_EQ(flat[2].qdev_id, "gpu0");
  EXPECT_EQ(flat[2].address, "01:00.0");
  EXPECT_EQ(flat[3].address, "01:00.1");
  EXPECT_EQ(flat[5].address, "00:1f.3");
}

TEST(QueryPciTest, MergeAddsAddressesAndNamesOnlyUnknownIds) {
  std::vector<VmDevice> devices = {
      {"gpu0", "/machine/peripheral/gpu0", "0000:17:00.0", ""},
      {"device[0]", "/machine/peripheral-anon/device[0]", "0000:18:00.0", ""},
  };
  auto flat = FlattenQueryPci(*Json::Parse(kQueryPci, "query-pci"));
  auto unknown = MergeGuestView(devices, flat);
  EXPECT_EQ(devices[0].guest_address, "01:00.0");
  EXPECT_EQ(devices[1].guest_address, "");
  // Everything else the guest lists with an id gets looked up by type, never counted blindly.
  EXPECT_EQ(unknown, (std::vector<std::string>{"rp0", "gpu0-audio", "cold0"}));
  ASSERT_EQ(devices.size(), 2u);
}

TEST(QueryPciTest, EmptyAnswers) {
  EXPECT_TRUE(FlattenQueryPci(Json::Array()).empty());
  EXPECT_TRUE(FlattenQueryPci(Json()).empty());
}

}  // namespace
}  // namespace vfio_gpu::qmp
