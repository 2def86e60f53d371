// vfio-gpu-e2e-qmp, the e2e guest's QMP client, as its scenario runs it: through the binary,
// against a real QEMU (an e1000e NIC stands in for the vfio-pci device no build machine can attach)
// and against scripted peers for what is sent on the wire and for the peers that never answer.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "common/json.h"
#include "qmp/qmp_session.h"
#include "test/qmp/fake_qmp_server.h"
#include "test/qmp/qemu_vm.h"
#include "test/support/run_binary.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu::qmp {
namespace {

using namespace std::chrono_literals;
using testing::FakeQmpServer;
using testing::Outcome;
using testing::QemuVm;
using testing::TempDir;

// Single quotes for /bin/sh: the JSON arguments travel as one word, as a scenario passes them.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

Outcome RunTool(const TempDir& tmp, const std::string& args) {
  return testing::RunCommand(std::string(VFIO_GPU_E2E_QMP_BIN) + " " + args, tmp / "stderr");
}

class QmpToolQemuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    vm_ = QemuVm::Start(tmp_.path());
    ASSERT_NE(vm_, nullptr) << "cannot start qemu-system-x86_64 (install qemu-system-x86)";
  }
  Outcome Run(const std::string& command, const std::string& json_args = "") {
    std::string a = "--socket " + vm_->socket_path() + " --timeout 10 --execute " + command;
    if (!json_args.empty()) a += " --args " + Quote(json_args);
    return RunTool(tmp_, a);
  }
  TempDir tmp_;
  std::unique_ptr<QemuVm> vm_;
};

TEST_F(QmpToolQemuTest, PrintsTheReturnValueAsOneLineOfJson) {
  Outcome r = Run("query-status");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "");
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;
  auto j = Json::Parse(r.out, "stdout");
  ASSERT_TRUE(j.ok()) << r.out;
  EXPECT_EQ(j->Get("status").AsString(), "prelaunch");
}

TEST_F(QmpToolQemuTest, HotAddThenReadTheDeviceBack) {
  Outcome add =
      Run("device_add",
          R"({"driver":"e1000e","id":"nic0","bus":"rp0","failover_pair_id":"0000:01:00.0"})");
  EXPECT_EQ(add.code, 0) << add.out << add.err;
  EXPECT_EQ(add.out, "{}\n");

  Outcome host =
      Run("qom-get", R"({"path":"/machine/peripheral/nic0","property":"failover_pair_id"})");
  EXPECT_EQ(host.code, 0) << host.out << host.err;
  EXPECT_EQ(host.out, "\"0000:01:00.0\"\n");

  Outcome list = Run("qom-list", R"({"path":"/machine/peripheral"})");
  EXPECT_EQ(list.code, 0) << list.out << list.err;
  EXPECT_NE(list.out.find(R"("name":"nic0","type":"child<e1000e>")"), std::string::npos)
      << list.out;
}

TEST_F(QmpToolQemuTest, QemusRefusalVerbatimExitOne) {
  Outcome cold = Run("device_add", R"({"driver":"e1000e","id":"n","bus":"pcie.0"})");
  EXPECT_EQ(cold.code, 1) << cold.out << cold.err;
  EXPECT_EQ(cold.out, "Bus 'pcie.0' does not support hotplugging\n");
  EXPECT_EQ(cold.err, "");

  Outcome model = Run("device_add", R"({"driver":"no-such-gpu","id":"x"})");
  EXPECT_EQ(model.code, 1);
  EXPECT_EQ(model.out, "'no-such-gpu' is not a valid device model name\n");

  ASSERT_EQ(Run("device_add", R"({"driver":"e1000e","id":"nic0","bus":"rp0"})").code, 0);
  Outcome again = Run("device_add", R"({"driver":"e1000e","id":"nic0","bus":"rp1"})");
  EXPECT_EQ(again.code, 1);
  EXPECT_EQ(again.out, "Duplicate device ID 'nic0'\n");

  // vfio-pci itself, as far as a machine without a VFIO device goes.
  Outcome vfio =
      Run("device_add", R"({"driver":"vfio-pci","host":"0000:fe:1f.7","id":"gpu0","bus":"rp1"})");
  EXPECT_EQ(vfio.code, 1);
  EXPECT_EQ(vfio.out,
            "vfio /sys/bus/pci/devices/0000:fe:1f.7: no such host device: No such file or "
            "directory\n");

  Outcome missing = Run("qom-get", R"({"path":"/machine/peripheral/gpu0","property":"host"})");
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.out, "Device '/machine/peripheral/gpu0' not found\n");
}

TEST_F(QmpToolQemuTest, BusySocketIsExitThreeNotAHang) {
  auto holder = QmpSession::Connect(vm_->socket_path(), 10s);
  ASSERT_TRUE(holder.ok()) << holder.error().message();
  auto t0 = std::chrono::steady_clock::now();
  Outcome r =
      RunTool(tmp_, "--socket " + vm_->socket_path() + " --timeout 1 --execute query-status");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 8s);
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("no QMP greeting within 1.0 s: the socket is busy"), std::string::npos)
      << r.err;
}

// What goes on the wire: the command, our id, and `arguments` exactly when --args was given.
TEST(QmpToolTest, SendsTheCommandAndItsArguments) {
  TempDir tmp;
  std::string sock = tmp / "wire.sock";
  std::string caps, with_args;
  {
    FakeQmpServer server(sock, [&](FakeQmpServer::Conn& c) {
      c.Greet();
      caps = c.ReadLine();
      c.Send(R"({"return": {}})");
      with_args = c.ReadLine();
      c.Send(R"({"event": "DEVICE_DELETED", "data": {"device": "gpu9"}})");
      c.Send(R"({"return": {}})");
      c.ReadLine();
    });
    ASSERT_TRUE(server.ok());
    Outcome r = RunTool(tmp, "--socket " + sock + " --execute device_add --args " +
                                 Quote(R"({"driver":"vfio-pci","host":"0000:01:00.0"})"));
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(r.out, "{}\n");  // the event is not an answer
  }
  auto cap = Json::Parse(caps, "caps");
  ASSERT_TRUE(cap.ok()) << caps;
  EXPECT_EQ(cap->Get("execute").AsString(), "qmp_capabilities");
  EXPECT_FALSE(cap->Has("arguments"));
  auto m = Json::Parse(with_args, "command");
  ASSERT_TRUE(m.ok()) << with_args;
  EXPECT_EQ(m->Get("execute").AsString(), "device_add");
  EXPECT_EQ(m->Get("arguments").Dump(), R"({"driver":"vfio-pci","host":"0000:01:00.0"})");

  std::string bare;
  {
    FakeQmpServer server(tmp / "bare.sock", [&](FakeQmpServer::Conn& c) {
      c.Greet();
      c.ReadLine();
      c.Send(R"({"return": {}})");
      bare = c.ReadLine();
      c.Send(R"({"return": {"qemu": {"major": 7, "minor": 2, "micro": 0}, "package": ""}})");
      c.ReadLine();
    });
    Outcome r = RunTool(tmp, "--socket " + (tmp / "bare.sock") + " --execute query-version");
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_EQ(r.out, R"({"qemu":{"major":7,"minor":2,"micro":0},"package":""})"
                     "\n");
  }
  auto b = Json::Parse(bare, "bare");
  ASSERT_TRUE(b.ok()) << bare;
  EXPECT_EQ(b->Get("execute").AsString(), "query-version");
  EXPECT_FALSE(b->Has("arguments"));
}

TEST(QmpToolTest, ACommandWithoutAnswerTimesOut) {
  TempDir tmp;
  std::string sock = tmp / "mute.sock";
  FakeQmpServer server(sock, [](FakeQmpServer::Conn& c) {
    c.Greet();
    c.ReadLine();
    c.Send(R"({"return": {}})");
    c.ReadLine();  // never answered
    c.WaitStop();
  });
  auto t0 = std::chrono::steady_clock::now();
  Outcome r = RunTool(tmp, "--socket " + sock + " --timeout 1 --execute device_add --args '{}'");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 8s);
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("no answer within 1.0 s while waiting for the reply to device_add"),
            std::string::npos)
      << r.err;
}

TEST(QmpToolTest, NoSocketIsExitThree) {
  TempDir tmp;
  Outcome r = RunTool(tmp, "--socket " + (tmp / "nope.sock") + " --execute query-status");
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("QMP socket " + (tmp / "nope.sock") + " does not exist"), std::string::npos)
      << r.err;
}

TEST(QmpToolTest, BadUsageIsExitTwoBeforeAnyConnection) {
  TempDir tmp;
  std::string sock = "--socket " + (tmp / "nope.sock");
  struct Case {
    std::string args, says;
  } cases[] = {
      {"--execute query-status", "--socket and --execute are required"},
      {sock, "--socket and --execute are required"},
      {sock + " --execute device_add --args '[1]'", "--args must be a JSON object, not [1]"},
      {sock + " --execute device_add --args '{\"driver\":'", "--args"},
      {sock + " --execute query-status --timeout 0", "must be 1 to 600 seconds"},
      {sock + " --execute query-status --verbose", "unknown argument \"--verbose\""},
      {sock + " --execute", "--execute needs a value"},
  };
  for (const auto& c : cases) {
    Outcome r = RunTool(tmp, c.args);
    EXPECT_EQ(r.code, 2) << c.args;
    EXPECT_EQ(r.out, "") << c.args;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find("usage: vfio-gpu-e2e-qmp"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace vfio_gpu::qmp
