// vfio-gpu-fake-kubelet, the program: its line contract (READY, REGISTERED before the first UPDATE,
// one UPDATE per changed list with both clocks, device=health tokens), with the real plugin daemon
// in-process against seed 003's fake host, and a clean exit on SIGTERM.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/files.h"
#include "hostmodel/fake_host.h"
#include "plugin/daemon.h"

namespace vfio_gpu::fakes {
namespace {

// The tool as a child process with its stdout on a pipe; lines are read with a deadline (poll),
// never by sleeping.
class Tool {
 public:
  explicit Tool(const std::vector<std::string>& args) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    std::vector<std::string> argv = {VFIO_GPU_FAKE_KUBELET_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    if (posix_spawn(&pid_, cargv[0], &fa, nullptr, cargv.data(), ::environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    ::close(p[1]);
    fd_ = p[0];
  }
  ~Tool() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) ::close(fd_);
  }
  bool running() const { return pid_ > 0; }

  // The next line, or "" on EOF / after `timeout`.
  std::string NextLine(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (auto nl = buf_.find('\n'); nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return "";
      pollfd pfd{fd_, POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) return "";
      char chunk[4096];
      ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n <= 0) return "";
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }
  // Lines until one starts with `prefix`; "" if none in time.
  std::string NextStartingWith(const std::string& prefix, std::chrono::milliseconds timeout,
                               std::vector<std::string>* seen = nullptr) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      std::string line = NextLine(left);
      if (line.empty()) return "";
      if (seen) seen->push_back(line);
      if (line.rfind(prefix, 0) == 0) return line;
    }
  }
  // SIGTERM, then the exit status (-1 if it did not exit normally).
  int Terminate() {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buf_;
};

std::string Field(const std::string& line, const std::string& key) {
  auto pos = line.find(" " + key + "=");
  if (pos == std::string::npos) return "";
  pos += key.size() + 2;
  return line.substr(pos, line.find(' ', pos) - pos);
}

double Seconds(const std::string& stamp) {
  return stamp.empty() ? -1 : std::strtod(stamp.c_str(), nullptr);
}

double RealNow() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

constexpr auto kWait = std::chrono::seconds(15);

TEST(FakeKubeletMain, UsageErrorsExitTwo) {
  Tool no_resource({"--dir", "/tmp/x"});
  ASSERT_TRUE(no_resource.running());
  EXPECT_EQ(no_resource.NextLine(kWait), "");  // nothing on stdout
  EXPECT_EQ(no_resource.Terminate(), 2);
}

TEST(FakeKubeletMain, ReportsRegistrationThenTimestampedHealthChanges) {
  char tmpl[] = "/tmp/fake-kubelet-main.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  FakeHost host(root + "/host");
  ASSERT_TRUE(BuildSeedA10Host(host).ok());
  NodeConfig config;
  config.roots = host.roots();
  config.kubelet_dir = root + "/kubelet";
  config.cdi_dir = root + "/cdi";
  config.run_dir = root + "/run";
  config.metrics_address = "";
  ASSERT_TRUE(MakeDirs(config.run_dir + "/quarantine").ok());

  Tool tool({"--dir", config.kubelet_dir, "--resource", "nvidia.com/pgpu"});
  ASSERT_TRUE(tool.running());
  std::string ready = tool.NextLine(kWait);
  ASSERT_EQ(ready.rfind("READY ", 0), 0u) << ready;
  EXPECT_EQ(Field(ready, "socket"), config.kubelet_dir + "/kubelet.sock");

  auto daemon = plugin::PluginDaemon::Start(config);
  ASSERT_TRUE(daemon.ok()) << daemon.error().message();

  std::vector<std::string> seen;
  std::string update = tool.NextStartingWith("UPDATE ", kWait, &seen);
  ASSERT_FALSE(update.empty());
  ASSERT_GE(seen.size(), 2u);
  EXPECT_EQ(seen[seen.size() - 2].rfind("REGISTERED ", 0), 0u) << "REGISTERED comes first";
  EXPECT_EQ(Field(seen[seen.size() - 2], "resource"), "nvidia.com/pgpu");
  EXPECT_EQ(Field(seen[seen.size() - 2], "count"), "1");
  EXPECT_EQ(Field(update, "registrations"), "1");
  EXPECT_EQ(Field(update, "devices"), "4");
  EXPECT_NE(update.find(" 0000:ca:00.0=Healthy"), std::string::npos) << update;
  EXPECT_GT(Seconds(Field(update, "mono")), 0);

  const double before = RealNow();
  ASSERT_TRUE(WriteFileAtomic(config.run_dir + "/quarantine/0000:ca:00.0", "test\n").ok());
  std::string changed = tool.NextStartingWith("UPDATE ", kWait);
  ASSERT_NE(changed.find(" 0000:ca:00.0=Unhealthy"), std::string::npos) << changed;
  const double stamped = Seconds(Field(changed, "real"));
  EXPECT_GE(stamped, before);
  EXPECT_LE(stamped, RealNow());
  EXPECT_GE(Seconds(Field(changed, "mono")), Seconds(Field(update, "mono")));

  (*daemon)->Stop();
  EXPECT_EQ(tool.Terminate(), 0);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace vfio_gpu::fakes
