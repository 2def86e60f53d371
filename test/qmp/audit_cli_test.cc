// `vfio-gpu audit` as operators run it, through the binary, against a real QEMU. The VM's "GPUs"
// are e1000e NICs whose `failover_pair_id` holds a BDF (--device-type/--host-property point the
// audit at them); the ledger is a claim directory in the test's run dir.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "common/files.h"
#include "common/json.h"
#include "qmp/qmp_session.h"
#include "shim-hooks/ledger.h"
#include "test/qmp/qemu_vm.h"
#include "test/support/run_binary.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu::qmp {
namespace {

using namespace std::chrono_literals;
using testing::QemuVm;
using testing::TempDir;

using testing::Outcome;

class AuditCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    vm_ = QemuVm::Start(tmp_.path(), 3);
    ASSERT_NE(vm_, nullptr);
    Add("nic0", "rp0", "0000:01:00.0");
    Add("nic1", "rp1", "0000:02:00.0");
  }

  void Add(const std::string& id, const std::string& bus, const std::string& host) {
    auto s = QmpSession::Connect(vm_->socket_path(), 10s);
    ASSERT_TRUE(s.ok()) << s.error().message();
    auto r = s->Execute("device_add", Json::Object()
                                          .Set("driver", Json::String("e1000e"))
                                          .Set("id", Json::String(id))
                                          .Set("bus", Json::String(bus))
                                          .Set("failover_pair_id", Json::String(host)));
    ASSERT_TRUE(r.ok()) << r.error().message();
  }

  // Written by the shim's own Ledger, as on a node.
  void Claim(const std::string& bdf, const std::string& sandbox) {
    Ledger ledger(tmp_ / "run/ledger");
    ledger.sandbox_gone = [](const ClaimRecord&) { return false; };
    ClaimRecord c;
    c.bdf = bdf;
    c.sandbox_id = sandbox;
    c.bundle = tmp_ / ("bundles/" + sandbox);
    c.pid = 1;
    ASSERT_TRUE(ledger.ClaimAll({c}));
  }

  Outcome Run(const std::string& args) {
    return testing::RunCommand(std::string(VFIO_GPU_BIN) + " audit " + args, tmp_ / "stderr");
  }

  std::string Nics() const {
    return "--qmp " + vm_->socket_path() + " --device-type e1000e --host-property failover_pair_id";
  }

  TempDir tmp_;
  std::unique_ptr<QemuVm> vm_;
};

TEST_F(AuditCliTest, EveryDeviceOnceWithoutASandboxIsOk) {
  Outcome r = Run(Nics());
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("0000:01:00.0  present     nic0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0000:02:00.0  present     nic1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": OK\n"), std::string::npos) << r.out;
}

TEST_F(AuditCliTest, ADuplicateFailsTheAudit) {
  Add("nic2", "rp2", "0000:01:00.0");
  Outcome r = Run(Nics() + " --json");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto j = Json::Parse(r.out, "audit output");
  ASSERT_TRUE(j.ok()) << r.out;
  EXPECT_TRUE(j->Get("sandbox").is_null());
  EXPECT_FALSE(j->Get("ok").AsBool());
  Json d = j->Get("devices").At(0);
  EXPECT_EQ(d.Get("bdf").AsString(), "0000:01:00.0");
  EXPECT_EQ(d.Get("status").AsString(), "duplicated");
  ASSERT_EQ(d.Get("ids").size(), 2u);
  EXPECT_EQ(d.Get("ids").At(0).AsString(), "nic0");
  EXPECT_EQ(d.Get("ids").At(1).AsString(), "nic2");
}

TEST_F(AuditCliTest, ComparedWithTheLedger) {
  Claim("0000:01:00.0", "sb1");
  Claim("0000:03:00.0", "sb1");
  Claim("0000:02:00.0", "someone-else");
  Outcome r = Run(Nics() + " --sandbox sb1 --run-dir " + (tmp_ / "run") + " --json");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto j = Json::Parse(r.out, "audit output");
  ASSERT_TRUE(j.ok()) << r.out;
  EXPECT_EQ(j->Get("sandbox").AsString(), "sb1");
  Json devices = j->Get("devices");
  ASSERT_EQ(devices.size(), 3u);
  EXPECT_EQ(devices.At(0).Get("status").AsString(), "present");
  EXPECT_EQ(devices.At(1).Get("bdf").AsString(), "0000:02:00.0");
  EXPECT_EQ(devices.At(1).Get("status").AsString(), "unexpected");
  EXPECT_EQ(devices.At(2).Get("bdf").AsString(), "0000:03:00.0");
  EXPECT_EQ(devices.At(2).Get("status").AsString(), "missing");
}

TEST_F(AuditCliTest, LedgerAndVmAgree) {
  Claim("0000:01:00.0", "sb1");
  Claim("0000:02:00.0", "sb1");
  Outcome r = Run(Nics() + " --sandbox sb1 --run-dir " + (tmp_ / "run"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("sandbox sb1: 2 present: OK\n"), std::string::npos) << r.out;
}

TEST_F(AuditCliTest, NoVfioDevicesInThisVm) {
  Outcome r = Run("--qmp " + vm_->socket_path());
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("no vfio-pci devices in the VM"), std::string::npos) << r.out;
}

// A sandbox the ledger has no GPU for (a mistyped ID, or a pod without GPUs): the verdict stands on
// the VM alone, and the operator is told the ledger had nothing to compare with.
TEST_F(AuditCliTest, ASandboxWithoutClaimsIsSaid) {
  Claim("0000:01:00.0", "sb1");
  Outcome r = Run("--qmp " + vm_->socket_path() + " --sandbox sb-typo --run-dir " + (tmp_ / "run"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("holds no GPU for sandbox sb-typo"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("check the sandbox ID"), std::string::npos) << r.err;
}

TEST_F(AuditCliTest, BusySocketIsAClearErrorNotAHang) {
  auto holder = QmpSession::Connect(vm_->socket_path(), 10s);
  ASSERT_TRUE(holder.ok()) << holder.error().message();
  Outcome r = Run(Nics() + " --timeout 1");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.err.find("no QMP greeting within 1.0 s: the socket is busy"), std::string::npos)
      << r.err;
}

TEST_F(AuditCliTest, SandboxAloneUsesKatasSocket) {
  ASSERT_TRUE(MakeDirs(tmp_ / "run/ledger"));
  Outcome r = Run("--sandbox no-such-sandbox-4711 --run-dir " + (tmp_ / "run"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("QMP socket /run/vc/vm/no-such-sandbox-4711/qmp.sock does not exist"),
            std::string::npos)
      << r.err;
}

TEST_F(AuditCliTest, MissingLedgerWithSandbox) {
  Outcome r = Run(Nics() + " --sandbox sb1 --run-dir " + (tmp_ / "nowhere"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no ledger at " + (tmp_ / "nowhere/ledger")), std::string::npos) << r.err;
}

TEST_F(AuditCliTest, BadUsage) {
  EXPECT_EQ(Run("").code, 2);
  Outcome bad_id = Run("--sandbox ../../etc");
  EXPECT_EQ(bad_id.code, 2);
  EXPECT_NE(bad_id.err.find("is not a sandbox ID"), std::string::npos) << bad_id.err;
  EXPECT_EQ(Run("--qmp x.sock --timeout 0").code, 2);
  Outcome unknown = Run("--qmp x.sock --frobnicate");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("frobnicate"), std::string::npos) << unknown.err;
}

}  // namespace
}  // namespace vfio_gpu::qmp
