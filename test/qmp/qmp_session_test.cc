// The QMP client against a real QEMU (greeting, capabilities, errors as QEMU sent them, events,
// a busy socket) and against scripted peers (silence, stale replies, garbage, hang-ups).
#include "qmp/qmp_session.h"

#include <gtest/gtest.h>

#include <chrono>

#include "common/files.h"
#include "test/qmp/fake_qmp_server.h"
#include "test/qmp/qemu_vm.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu::qmp {
namespace {

using namespace std::chrono_literals;
using testing::FakeQmpServer;
using testing::QemuVm;
using testing::TempDir;

std::string QemuLog(const QemuVm& vm) {
  auto log = ReadFile(vm.log_path());
  return log.ok() ? "qemu.log: " + *log : "no qemu.log";
}

class RealQemuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    vm_ = QemuVm::Start(tmp_.path());
    ASSERT_NE(vm_, nullptr) << "cannot start qemu-system-x86_64 (install qemu-system-x86)";
  }
  TempDir tmp_;
  std::unique_ptr<QemuVm> vm_;
};

TEST_F(RealQemuTest, GreetingThenCapabilitiesThenCommands) {
  auto s = QmpSession::Connect(vm_->socket_path(), 10s);
  ASSERT_TRUE(s.ok()) << s.error().message() << "\n" << QemuLog(*vm_);
  EXPECT_GE(s->greeting().Get("version").Get("qemu").Get("major").AsInt(), 7);
  auto status = s->Execute("query-status");
  ASSERT_TRUE(status.ok()) << status.error().message();
  EXPECT_EQ(status->Get("status").AsString(), "prelaunch");  // -S: the guest never ran
  EXPECT_FALSE(status->Get("running").AsBool());
}

TEST_F(RealQemuTest, ErrorsComeBackAsQemuSentThem) {
  auto s = QmpSession::Connect(vm_->socket_path(), 10s);
  ASSERT_TRUE(s.ok()) << s.error().message() << "\n" << QemuLog(*vm_);
  Json args =
      Json::Object().Set("driver", Json::String("no-such-gpu")).Set("id", Json::String("x"));
  auto reply = s->Call("device_add", args);
  ASSERT_TRUE(reply.ok()) << reply.error().message();
  EXPECT_FALSE(reply->ok);
  EXPECT_EQ(reply->error_class, "GenericError");
  EXPECT_EQ(reply->error_desc, "'no-such-gpu' is not a valid device model name");

  auto executed = s->Execute("device_add", args);
  ASSERT_FALSE(executed.ok());
  EXPECT_EQ(
      executed.error().message(),
      "device_add: QEMU answered GenericError: 'no-such-gpu' is not a valid device model name");
  EXPECT_EQ(executed.error().kind(), ErrorKind::kInvalid);

  auto missing = s->Execute("qom-list", Json::Object().Set("path", Json::String("/machine/nope")));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind(), ErrorKind::kNotFound);
  EXPECT_NE(missing.error().message().find("DeviceNotFound: Device '/machine/nope' not found"),
            std::string::npos)
      << missing.error().message();

  // Pcie.0 is not hot-pluggable: QEMU's refusal, word for word.
  auto cold = s->Execute("device_add", Json::Object()
                                           .Set("driver", Json::String("e1000e"))
                                           .Set("id", Json::String("n"))
                                           .Set("bus", Json::String("pcie.0")));
  ASSERT_FALSE(cold.ok());
  EXPECT_NE(cold.error().message().find("Bus 'pcie.0' does not support hotplugging"),
            std::string::npos)
      << cold.error().message();
  // The session is still usable after QEMU said no.
  EXPECT_TRUE(s->Execute("query-status").ok());
}

TEST_F(RealQemuTest, EventsAreSkippedWhileWaitingForTheReply) {
  auto s = QmpSession::Connect(vm_->socket_path(), 10s);
  ASSERT_TRUE(s.ok()) << s.error().message() << "\n" << QemuLog(*vm_);
  // `cont` emits RESUME before its return, `stop` emits STOP before its return.
  auto cont = s->Execute("cont");
  ASSERT_TRUE(cont.ok()) << cont.error().message();
  auto stop = s->Execute("stop");
  ASSERT_TRUE(stop.ok()) << stop.error().message();
  EXPECT_GE(s->events_skipped(), 2);
  auto status = s->Execute("query-status");
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->Get("status").AsString(), "paused");
}

TEST_F(RealQemuTest, BusySocketIsATransientErrorNotAHang) {
  auto first = QmpSession::Connect(vm_->socket_path(), 10s);
  ASSERT_TRUE(first.ok()) << first.error().message() << "\n" << QemuLog(*vm_);
  auto t0 = std::chrono::steady_clock::now();
  auto second = QmpSession::Connect(vm_->socket_path(), 300ms);
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().kind(), ErrorKind::kTransient);
  EXPECT_NE(second.error().message().find("busy"), std::string::npos) << second.error().message();
  EXPECT_NE(second.error().message().find(vm_->socket_path()), std::string::npos);
  EXPECT_LT(took, 5s);
  // Once the first client lets go, the next one is served: nobody holds the socket for long.
  first->Close();
  auto third = QmpSession::Connect(vm_->socket_path(), 10s);
  ASSERT_TRUE(third.ok()) << third.error().message();
  EXPECT_TRUE(third->Execute("query-status").ok());
}

TEST(QmpSessionTest, SilentPeerTimesOutAsBusy) {
  TempDir tmp;
  std::string sock = tmp / "silent.sock";
  FakeQmpServer server(sock, [](FakeQmpServer::Conn& c) { c.WaitStop(); });
  ASSERT_TRUE(server.ok());
  auto t0 = std::chrono::steady_clock::now();
  auto s = QmpSession::Connect(sock, 200ms);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind(), ErrorKind::kTransient);
  EXPECT_NE(s.error().message().find("no QMP greeting within 0.2 s"), std::string::npos)
      << s.error().message();
}

TEST(QmpSessionTest, CommandWithoutAnswerTimesOutAndClosesTheSession) {
  TempDir tmp;
  std::string sock = tmp / "mute.sock";
  FakeQmpServer server(sock, [](FakeQmpServer::Conn& c) {
    c.Greet();
    c.ReadLine();  // qmp_capabilities
    c.Send(R"({"return": {}})");
    c.ReadLine();  // the command we never answer
    c.WaitStop();
  });
  auto s = QmpSession::Connect(sock, 200ms);
  ASSERT_TRUE(s.ok()) << s.error().message();
  auto r = s->Execute("query-status");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kTransient);
  EXPECT_EQ(r.error().message(),
            "query-status: no answer within 0.2 s while waiting for the reply to query-status");
  // A late reply must never be taken for the next command's: the session is closed.
  auto again = s->Execute("query-status");
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message().find("closed"), std::string::npos);
}

TEST(QmpSessionTest, SkipsEventsAndStaleRepliesAndKeepsOrder) {
  TempDir tmp;
  std::string sock = tmp / "chatty.sock";
  FakeQmpServer server(sock, [](FakeQmpServer::Conn& c) {
    c.Greet();
    c.Send(
        R"({"event": "RTC_CHANGE", "data": {"offset": 0}, "timestamp": {"seconds": 1, "microseconds": 0}})");
    std::string caps = c.ReadLine();
    auto id = Json::Parse(caps, "caps")->Get("id").AsString();
    c.Send(R"({"return": {}, "id": ")" + id + R"("})");
    std::string cmd = c.ReadLine();
    id = Json::Parse(cmd, "cmd")->Get("id").AsString();
    c.Send(R"({"event": "DEVICE_DELETED", "data": {"device": "gpu0"}})");
    c.Send(R"({"return": "stale", "id": "someone-else"})");
    c.Send(R"({"event": "RESUME"})");
    c.Send(R"({"return": [{"name": "type", "type": "string"}], "id": ")" + id + R"("})");
    c.ReadLine();
  });
  auto s = QmpSession::Connect(sock, 2s);
  ASSERT_TRUE(s.ok()) << s.error().message();
  auto r = s->Execute("qom-list", Json::Object().Set("path", Json::String("/machine/peripheral")));
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->is_array());
  EXPECT_EQ(r->At(0).Get("name").AsString(), "type");
  EXPECT_EQ(s->events_skipped(), 3);
}

TEST(QmpSessionTest, PeerThatIsNotQmp) {
  TempDir tmp;
  std::string sock = tmp / "http.sock";
  FakeQmpServer server(sock, [](FakeQmpServer::Conn& c) {
    c.Send("HTTP/1.1 400 Bad Request");
    c.WaitStop();
  });
  auto s = QmpSession::Connect(sock, 2s);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind(), ErrorKind::kInvalid);
  EXPECT_NE(s.error().message().find("QMP socket " + sock), std::string::npos)
      << s.error().message();
  EXPECT_NE(s.error().message().find("invalid JSON"), std::string::npos) << s.error().message();
}

TEST(QmpSessionTest, JsonThatIsNotAGreeting) {
  TempDir tmp;
  std::string sock = tmp / "json.sock";
  FakeQmpServer server(sock, [](FakeQmpServer::Conn& c) {
    c.Send(R"({"hello": "world"})");
    c.WaitStop();
  });
  auto s = QmpSession::Connect(sock, 2s);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("not a QMP greeting"), std::string::npos)
      << s.error().message();
}

TEST(QmpSessionTest, PeerHangsUpMidCommand) {
  TempDir tmp;
  std::string sock = tmp / "gone.sock";
  FakeQmpServer server(sock, [](FakeQmpServer::Conn& c) {
    c.Greet();
    c.ReadLine();
    c.Send(R"({"return": {}})");
    c.ReadLine();  // and hang up without answering
  });
  auto s = QmpSession::Connect(sock, 2s);
  ASSERT_TRUE(s.ok()) << s.error().message();
  auto r = s->Execute("query-pci");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kTransient);
  EXPECT_NE(r.error().message().find("closed the socket"), std::string::npos)
      << r.error().message();
}

TEST(QmpSessionTest, CapabilitiesRefused) {
  TempDir tmp;
  std::string sock = tmp / "caps.sock";
  FakeQmpServer server(sock, [](FakeQmpServer::Conn& c) {
    c.Greet();
    c.ReadLine();
    c.Send(
        R"({"error": {"class": "CommandNotFound", "desc": "Capabilities negotiation is already complete, command ignored"}})");
    c.WaitStop();
  });
  auto s = QmpSession::Connect(sock, 2s);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("qmp_capabilities: QEMU answered CommandNotFound: "
                                     "Capabilities negotiation is already complete"),
            std::string::npos)
      << s.error().message();
}

TEST(QmpSessionTest, NoSocketNoListenerBadPath) {
  TempDir tmp;
  auto missing = QmpSession::Connect(tmp / "nope.sock", 1s);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind(), ErrorKind::kNotFound);
  EXPECT_NE(missing.error().message().find(tmp / "nope.sock"), std::string::npos);

  {
    // A socket file whose server is gone: QEMU exited.
    FakeQmpServer server(tmp / "dead.sock", [](FakeQmpServer::Conn&) {});
  }
  auto refused = QmpSession::Connect(tmp / "dead.sock", 1s);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind(), ErrorKind::kTransient);
  EXPECT_NE(refused.error().message().find("connection refused"), std::string::npos)
      << refused.error().message();

  auto too_long = QmpSession::Connect("/" + std::string(200, 'x'), 1s);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error().kind(), ErrorKind::kInvalid);
  EXPECT_NE(too_long.error().message().find("1 to 107 bytes"), std::string::npos);
}

}  // namespace
}  // namespace vfio_gpu::qmp
