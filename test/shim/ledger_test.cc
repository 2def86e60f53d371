// The ledger under contention and crashes: exactly one winner per BDF, no corrupt or orphaned
// claim after a claimant is killed mid-write, stale claims reclaimed.
#include "shim-hooks/ledger.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <thread>

#include "common/files.h"
#include "common/strings.h"
#include "test/support/temp_dir.h"

namespace vfio_gpu {
namespace {

ClaimRecord Claim(const std::string& bdf, const std::string& sandbox, const std::string& bundle) {
  ClaimRecord c;
  c.bdf = bdf;
  c.sandbox_id = sandbox;
  c.unit = bdf;
  c.group = 25;
  c.node = DevNum{241, 25};
  c.bundle = bundle;
  c.pid = ::getpid();
  c.pid_start = ProcessStartTicks(c.pid);
  c.time = 1;
  return c;
}

TEST(Ledger, FiftyConcurrentClaimersOneWinnerPerBdf) {
  testing::TempDir t;
  const std::vector<std::string> bdfs = {"0000:17:00.0", "0000:31:00.0", "0000:b1:00.0",
                                         "0000:ca:00.0"};
  // 50 forked processes, each claiming two overlapping BDFs all-or-nothing; their bundles exist,
  // so no claim is stale.
  ASSERT_TRUE(MakeDirs(t.path() + "/bundle").ok());
  std::vector<pid_t> kids;
  for (int i = 0; i < 50; ++i) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      Ledger l(t.path() + "/ledger");
      l.lock_timeout_ms = 30000;
      std::string sb = "sb" + std::to_string(i);
      std::vector<ClaimRecord> want = {Claim(bdfs[i % 4], sb, t.path() + "/bundle"),
                                       Claim(bdfs[(i + 1) % 4], sb, t.path() + "/bundle")};
      ::_exit(l.ClaimAll(want).ok() ? 0 : 1);
    }
    kids.push_back(pid);
  }
  int winners = 0;
  for (pid_t k : kids) {
    int status = 0;
    ::waitpid(k, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) ++winners;
  }
  Ledger l(t.path() + "/ledger");
  auto view = l.Load();
  ASSERT_TRUE(view.ok());
  ASSERT_EQ(view->size(), 4u);
  // Each winner holds two distinct BDFs; no BDF has two owners (one file per BDF).
  std::map<std::string, int> per_sandbox;
  for (const auto& [bdf, c] : *view) per_sandbox[c.sandbox_id]++;
  for (const auto& [sb, n] : per_sandbox) EXPECT_EQ(n, 2) << sb;
  EXPECT_EQ(winners, static_cast<int>(per_sandbox.size()));
  EXPECT_EQ(winners, 2);
}

TEST(Ledger, ConcurrentThreadsOneWinner) {
  testing::TempDir t;
  ASSERT_TRUE(MakeDirs(t.path() + "/bundle").ok());
  std::atomic<int> wins{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 50; ++i) {
    threads.emplace_back([&, i] {
      Ledger l(t.path() + "/ledger");
      l.lock_timeout_ms = 30000;
      if (l.ClaimAll({Claim("0000:17:00.0", "t" + std::to_string(i), t.path() + "/bundle")}).ok())
        ++wins;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wins.load(), 1);
}

void KilledAt(const std::string& dir, const std::string& point, const std::string& bundle) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Ledger l(dir);
    l.crash_point = [&](std::string_view p) {
      if (p == point) ::kill(::getpid(), SIGKILL);
    };
    (void)l.ClaimAll({Claim("0000:17:00.0", "victim", bundle)});
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
}

TEST(Ledger, ClaimantKilledMidWriteLeavesNoCorruptOrOrphanedClaim) {
  testing::TempDir t;
  std::string dir = t.path() + "/ledger";
  KilledAt(dir, "temp-half-written", t.path() + "/gone-bundle");
  EXPECT_FALSE(PathExists(dir + "/0000:17:00.0"));  // never a half-written claim
  Ledger l(dir);
  ASSERT_TRUE(l.ClaimAll({Claim("0000:17:00.0", "next", t.path())}).ok());
  auto names = ListDir(dir);
  ASSERT_TRUE(names.ok());
  for (const auto& n : *names) EXPECT_FALSE(EndsWith(n, ".tmp")) << n;  // orphan removed
  auto text = ReadFile(dir + "/0000:17:00.0");
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(ClaimRecord::FromJson(*text, "claim").ok());

  // Killed after the link: the claim is whole; its sandbox (bundle gone, process dead) is stale.
  testing::TempDir t2;
  std::string dir2 = t2.path() + "/ledger";
  KilledAt(dir2, "linked", t2.path() + "/gone-bundle");
  Ledger l2(dir2);
  auto view = l2.Load();
  ASSERT_TRUE(view.ok());
  ASSERT_EQ(view->count("0000:17:00.0"), 1u);
  EXPECT_TRUE(view->at("0000:17:00.0").stale);
  ASSERT_TRUE(l2.ClaimAll({Claim("0000:17:00.0", "next", t2.path())}).ok());
  EXPECT_EQ(l2.Load()->at("0000:17:00.0").sandbox_id, "next");
}

TEST(Ledger, LiveClaimIsKeptStaleClaimIsReclaimedReleaseFreesOnlyItsSandbox) {
  testing::TempDir t;
  ASSERT_TRUE(MakeDirs(t.path() + "/sb1").ok());
  Ledger l(t.path() + "/ledger");
  ASSERT_TRUE(l.ClaimAll({Claim("0000:17:00.0", "sb1", t.path() + "/sb1"),
                          Claim("0000:31:00.0", "sb1", t.path() + "/sb1")})
                  .ok());
  // Same sandbox again (a container of the pod): fine.
  EXPECT_TRUE(l.ClaimAll({Claim("0000:17:00.0", "sb1", t.path() + "/sb1")}).ok());
  // Another sandbox while sb1's bundle exists: refused, nothing of it claimed.
  Status s =
      l.ClaimAll({Claim("0000:ca:00.0", "sb2", t.path()), Claim("0000:17:00.0", "sb2", t.path())});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("sb1"), std::string::npos);
  EXPECT_FALSE(PathExists(t.path() + "/ledger/0000:ca:00.0"));
  // sb1's start failed: containerd removed the bundle and the claimant process is gone.
  l.sandbox_gone = [&](const ClaimRecord& c) { return !IsDir(c.bundle); };
  ASSERT_EQ(::rmdir((t.path() + "/sb1").c_str()), 0);
  EXPECT_TRUE(l.ClaimAll({Claim("0000:17:00.0", "sb2", t.path())}).ok());
  auto released = l.Release("sb1");
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(*released, std::vector<std::string>{"0000:31:00.0"});
  EXPECT_EQ(l.Load()->at("0000:17:00.0").sandbox_id, "sb2");
}

// Another start holding the ledger past the timeout is transient: the message says so, the kubelet
// retries, and nothing was claimed. Once the lock is free the same claim goes through.
TEST(Ledger, LockHeldTooLongIsTransientAndClaimsNothing) {
  testing::TempDir t;
  Ledger ledger(t.path() + "/ledger");
  ledger.lock_timeout_ms = 50;
  ASSERT_TRUE(MakeDirs(ledger.dir()).ok());
  int held = ::open((ledger.dir() + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  auto s = ledger.ClaimAll({Claim("0000:17:00.0", "sb", t.path())});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind(), ErrorKind::kTransient);
  EXPECT_NE(s.error().message().find("stayed locked for 50 ms"), std::string::npos)
      << s.error().message();
  EXPECT_NE(s.error().message().find("transient"), std::string::npos) << s.error().message();
  EXPECT_FALSE(PathExists(ledger.ClaimPath("0000:17:00.0")));
  ::close(held);
  EXPECT_TRUE(ledger.ClaimAll({Claim("0000:17:00.0", "sb", t.path())}).ok());
  EXPECT_TRUE(PathExists(ledger.ClaimPath("0000:17:00.0")));
}

TEST(Ledger, ProcessLiveness) {
  EXPECT_TRUE(ProcessAlive(::getpid(), ProcessStartTicks(::getpid())));
  EXPECT_FALSE(ProcessAlive(::getpid(), ProcessStartTicks(::getpid()) + 1));  // pid reused
  EXPECT_FALSE(ProcessAlive(0, 0));
}

}  // namespace
}  // namespace vfio_gpu
