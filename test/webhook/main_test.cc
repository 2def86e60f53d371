// The vfio-gpu-webhook binary itself: flags, config refusal at start, serving, and SIGTERM.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <regex>

#include "test/webhook/harness.h"

extern char** environ;

namespace vfio_gpu::webhook {
namespace {

using testing::Proc;
using testing::Run;
using testing::ScratchDir;

const std::string kBinary = WEBHOOK_BINARY;

class Binary : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir();
    testing::MakeCa(dir_->path(), "ca");
    testing::MakeServerCert(dir_->path(), "ca", "tls");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(*dir_ / name) << text;
    return *dir_ / name;
  }
  Proc Start(std::vector<std::string> args) {
    args.insert(args.begin(), kBinary);
    return testing::Run(args);
  }
  static ScratchDir* dir_;
};

ScratchDir* Binary::dir_ = nullptr;

TEST_F(Binary, UnknownConfigKeyIsRefusedAtStartNamingIt) {
  std::string cfg = Write("bad.json", R"({"resources":["nvidia.com/pgpu"],"gpu_class":"x"})");
  Proc p =
      Start({"--tls-cert", *dir_ / "tls.crt", "--tls-key", *dir_ / "tls.key", "--config", cfg});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.err.find("unknown key \"gpu_class\""), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("bad.json"), std::string::npos) << p.err;
}

TEST_F(Binary, FlagErrorsAreClear) {
  Proc none = Start({});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("--tls-cert and --tls-key are required"), std::string::npos) << none.err;
  Proc unknown = Start({"--port", "8443"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown argument \"--port\""), std::string::npos);
  Proc listen = Start(
      {"--listen", "nowhere", "--tls-cert", *dir_ / "tls.crt", "--tls-key", *dir_ / "tls.key"});
  EXPECT_EQ(listen.exit_code, 2);
  EXPECT_NE(listen.err.find("--listen \"nowhere\""), std::string::npos) << listen.err;
  Proc cert = Start({"--tls-cert", *dir_ / "missing.crt", "--tls-key", *dir_ / "tls.key"});
  EXPECT_EQ(cert.exit_code, 2);
  EXPECT_NE(cert.err.find("missing.crt"), std::string::npos) << cert.err;
  Proc help = Start({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--listen ADDR"), std::string::npos);
}

TEST_F(Binary, ServesOverHttpsAndStopsOnSigterm) {
  std::string cfg = Write("ok.json", R"({"annotation_policy":"strip"})");
  int err[2];
  ASSERT_EQ(pipe2(err, O_CLOEXEC), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  std::vector<std::string> args = {kBinary,           "--listen",
                                   "127.0.0.1:0",     "--tls-cert",
                                   *dir_ / "tls.crt", "--tls-key=" + (*dir_ / "tls.key"),
                                   "--config",        cfg};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, kBinary.c_str(), &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  close(err[1]);

  // Its first log line says where it listens; reading blocks until then (or EOF if it died).
  std::string log;
  std::smatch m;
  std::regex serving(R"(serving HTTPS on 127\.0\.0\.1:(\d+))");
  char c;
  while (!std::regex_search(log, m, serving) || log.back() != '\n') {
    if (read(err[0], &c, 1) != 1) break;
    log += c;
  }
  ASSERT_TRUE(std::regex_search(log, m, serving)) << log;
  int port = std::stoi(m[1]);
  EXPECT_NE(log.find("annotation policy strip"), std::string::npos) << log;

  testing::Reply r =
      testing::Curl(port, *dir_ / "ca.pem", "/mutate", testing::FixturePath("gpu-no-class.json"));
  EXPECT_EQ(r.status, 200) << r.err;
  EXPECT_NE(r.body.find("\"patchType\":\"JSONPatch\""), std::string::npos);

  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ssize_t n;
  char buf[4096];
  while ((n = read(err[0], buf, sizeof buf)) > 0) log.append(buf, static_cast<size_t>(n));
  close(err[0]);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log;
  // One line per decision, with the pod and the reason.
  EXPECT_NE(log.find("review patched team-a/train-0: requests nvidia.com/pgpu"), std::string::npos)
      << log;
  EXPECT_NE(log.find("shutting down"), std::string::npos) << log;
}

}  // namespace
}  // namespace vfio_gpu::webhook
