// The audit's verdict on hand-built inputs, its JSON and table, and the ledger's reading side.
#include "qmp/audit.h"

#include <gtest/gtest.h>

#include "common/files.h"
#include "qmp/ledger_claims.h"
#include "shim-hooks/ledger.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu::qmp {
namespace {

using testing::TempDir;

VmDevice Dev(const std::string& id, const std::string& host) {
  return VmDevice{id, "/machine/peripheral/" + id, host, ""};
}

std::string Statuses(const AuditReport& r) {
  std::string s;
  for (const auto& e : r.devices) s += e.bdf + "=" + std::string(StatusName(e.status)) + " ";
  return s;
}

TEST(CompareTest, EachExpectedBdfPresentOnceIsOk) {
  auto r = Compare({Dev("gpu0", "0000:17:00.0"), Dev("gpu1", "0000:18:00.0")},
                   std::vector<std::string>{"0000:18:00.0", "0000:17:00.0"}, "sb1");
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(Statuses(r), "0000:17:00.0=present 0000:18:00.0=present ");
  EXPECT_EQ(r.devices[0].ids, std::vector<std::string>{"gpu0"});
}

TEST(CompareTest, MissingDuplicatedUnexpected) {
  auto r = Compare(
      {Dev("gpu0", "0000:17:00.0"), Dev("gpu0b", "0000:17:00.0"), Dev("gpu9", "0000:99:00.0")},
      std::vector<std::string>{"0000:17:00.0", "0000:18:00.0"}, "sb1");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(Statuses(r), "0000:17:00.0=duplicated 0000:18:00.0=missing 0000:99:00.0=unexpected ");
  EXPECT_EQ(r.devices[0].ids, (std::vector<std::string>{"gpu0", "gpu0b"}));
  EXPECT_TRUE(r.devices[1].ids.empty());
  EXPECT_EQ(r.devices[2].ids, std::vector<std::string>{"gpu9"});
}

TEST(CompareTest, ADuplicateNobodyExpectedIsStillDuplicated) {
  auto r = Compare({Dev("a", "0000:20:00.0"), Dev("b", "0000:20:00.0")}, std::vector<std::string>{},
                   "sb1");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(Statuses(r), "0000:20:00.0=duplicated ");
}

TEST(CompareTest, OnlyMissing) {
  auto r = Compare({}, std::vector<std::string>{"0000:17:00.0"}, "sb1");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(Statuses(r), "0000:17:00.0=missing ");
}

TEST(CompareTest, WithoutALedgerOnlyDuplicatesAreProblems) {
  auto fine = Compare({Dev("gpu0", "0000:17:00.0"), Dev("gpu1", "0000:18:00.0")}, std::nullopt);
  EXPECT_TRUE(fine.ok);
  EXPECT_EQ(Statuses(fine), "0000:17:00.0=present 0000:18:00.0=present ");
  auto dup = Compare({Dev("gpu0", "0000:17:00.0"), Dev("x", "0000:17:00.0")}, std::nullopt);
  EXPECT_FALSE(dup.ok);
  EXPECT_TRUE(Compare({}, std::nullopt).ok);
}

TEST(CompareTest, AddressesAreComparedInCanonicalForm) {
  auto r = Compare({Dev("gpu0", "17:00.0"), Dev("gpu1", "0000:18:00.0")},
                   std::vector<std::string>{"0000:17:00.0", "18:00.0", "0000:18:00.0"}, "sb1");
  EXPECT_TRUE(r.ok) << Statuses(r);
  EXPECT_EQ(Statuses(r), "0000:17:00.0=present 0000:18:00.0=present ");
}

TEST(CompareTest, AnonymousDevicesAreNamedByTheirQomPath) {
  VmDevice anon{"", "/machine/peripheral-anon/device[2]", "0000:17:00.0", ""};
  auto r = Compare({anon}, std::nullopt);
  EXPECT_EQ(r.devices[0].ids, std::vector<std::string>{"/machine/peripheral-anon/device[2]"});
}

TEST(ReportTest, JsonHasTheContractFields) {
  auto r = Compare({Dev("gpu0", "0000:17:00.0"), Dev("gpu0b", "0000:17:00.0")},
                   std::vector<std::string>{"0000:17:00.0", "0000:18:00.0"}, "sb1");
  Json j = ReportToJson(r);
  EXPECT_EQ(j.Keys(), (std::vector<std::string>{"sandbox", "devices", "ok"}));
  EXPECT_EQ(j.Get("sandbox").AsString(), "sb1");
  EXPECT_FALSE(j.Get("ok").AsBool());
  ASSERT_EQ(j.Get("devices").size(), 2u);
  Json d = j.Get("devices").At(0);
  EXPECT_EQ(d.Keys(), (std::vector<std::string>{"bdf", "ids", "status"}));
  EXPECT_EQ(d.Get("bdf").AsString(), "0000:17:00.0");
  EXPECT_EQ(d.Get("ids").size(), 2u);
  EXPECT_EQ(d.Get("status").AsString(), "duplicated");
  EXPECT_EQ(j.Get("devices").At(1).Get("status").AsString(), "missing");
  EXPECT_EQ(j.Get("devices").At(1).Get("ids").size(), 0u);
  EXPECT_TRUE(j.Get("devices").At(1).Get("ids").is_array());

  Json none = ReportToJson(Compare({}, std::nullopt));
  EXPECT_TRUE(none.Has("sandbox"));
  EXPECT_TRUE(none.Get("sandbox").is_null());
  EXPECT_TRUE(none.Get("ok").AsBool());
}

TEST(ReportTest, TableListsEachBdfAndSummarizes) {
  auto r = Compare({Dev("gpu0", "0000:17:00.0"), Dev("gpu9", "0000:99:00.0")},
                   std::vector<std::string>{"0000:17:00.0", "0000:18:00.0"}, "sb1");
  std::string t = RenderReport(r);
  EXPECT_EQ(t,
            "BDF           STATUS      QEMU DEVICE IDS\n"
            "0000:17:00.0  present     gpu0\n"
            "0000:18:00.0  missing     -\n"
            "0000:99:00.0  unexpected  gpu9\n"
            "sandbox sb1: 1 present, 1 missing, 1 unexpected: NOT OK\n");
  EXPECT_EQ(RenderReport(Compare({}, std::nullopt)),
            "no vfio-pci devices in the VM\n"
            "VM: no devices (no sandbox given: only duplicates are checked): OK\n");
}

// Claims written by the shim's own Ledger: the reading side follows the writer's format.
class LedgerTest : public ::testing::Test {
 protected:
  void Claim(const std::string& bdf, const std::string& sandbox) {
    Ledger ledger(tmp_ / "ledger");
    ledger.sandbox_gone = [](const ClaimRecord&) { return false; };
    ClaimRecord c;
    c.bdf = bdf;
    c.sandbox_id = sandbox;
    c.unit = bdf;
    c.bundle = tmp_ / ("bundles/" + sandbox);
    c.pid = 1;
    ASSERT_TRUE(ledger.ClaimAll({c}));
  }
  void Write(const std::string& name, const std::string& content) {
    ASSERT_TRUE(MakeDirs(tmp_ / "ledger"));
    ASSERT_TRUE(WriteFileAtomic(tmp_ / ("ledger/" + name), content));
  }
  TempDir tmp_;
};

TEST_F(LedgerTest, ClaimsOfTheSandboxOnly) {
  Claim("0000:18:00.0", "sb1");
  Claim("0000:17:00.0", "sb1");
  Claim("0000:20:00.0", "other");
  Write(".0000:21:00.0.99.tmp", "{half");  // a claim being written
  auto bdfs = ClaimDirLedger(tmp_.path()).ExpectedBdfs("sb1");
  ASSERT_TRUE(bdfs.ok()) << bdfs.error().message();
  EXPECT_EQ(*bdfs, (std::vector<std::string>{"0000:17:00.0", "0000:18:00.0"}));
  auto none = ClaimDirLedger(tmp_.path()).ExpectedBdfs("sb2");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(LedgerTest, UnreadableClaimsAreSkippedLikeTheShimDoes) {
  Claim("0000:18:00.0", "sb1");
  Write("0000:19:00.0", "not json");
  Write("0000:1a:00.0", R"({"bdf": "0000:1a:00.0"})");
  auto r = ClaimDirLedger(tmp_.path()).ExpectedBdfs("sb1");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*r, std::vector<std::string>{"0000:18:00.0"});
}

TEST_F(LedgerTest, AClaimThatNamesNoPciAddressIsNamed) {
  Write("gpu", R"({"bdf": "gpu", "sandbox_id": "sb1"})");
  auto r = ClaimDirLedger(tmp_.path()).ExpectedBdfs("sb1");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find(tmp_ / "ledger/gpu"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("\"gpu\" is not a PCI address"), std::string::npos)
      << r.error().message();
}

TEST_F(LedgerTest, NoLedgerDirectorySaysWhatToPass) {
  auto r = ClaimDirLedger(tmp_ / "nowhere").ExpectedBdfs("sb1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kNotFound);
  EXPECT_NE(r.error().message().find("--run-dir"), std::string::npos);
}

}  // namespace
}  // namespace vfio_gpu::qmp
