#include "e2e/containerd/containerd_harness.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/files.h"
#include "common/json.h"

namespace vfio_gpu::e2e {

std::string MissingPrerequisites() {
  if (::geteuid() != 0) return "needs root to run containerd and runc";
  for (const char* p :
       {"/usr/bin/containerd", "/usr/bin/containerd-shim-runc-v2", "/usr/bin/ctr", "/bin/busybox"})
    if (!PathExists(p))
      return std::string("needs ") + p + " (Debian's containerd and busybox-static)";
  return "";
}

testing::Outcome Sh(const std::string& cmd) {
  return testing::RunCommand(cmd, "");
}

std::string Slurp(const std::string& path) {
  auto t = ReadFile(path);
  return t.ok() ? *t : "(" + t.error().message() + ")";
}

Status BuildE2eHost(FakeHost& host) {
  if (auto s = BuildSeedA10Host(host); !s) return s;
  if (auto s = BuildConsumerGpuHost(host, /*audio_on_vfio=*/false); !s) return s;  // group 14
  for (int g : {14, 25, 31, 61}) {
    std::string node = host.roots().VfioGroupNode(g);
    ::unlink(node.c_str());
    if (::mknod(node.c_str(), S_IFCHR | 0600, makedev(241, g)) != 0)
      return Error("mknod " + node + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Status MakeBusyboxRootfs(const std::string& dir) {
  if (auto s = MakeDirs(dir + "/bin"); !s) return s;
  auto busybox = ReadFile("/bin/busybox");
  if (!busybox) return busybox.error();
  if (auto s = WriteFileAtomic(dir + "/bin/busybox", *busybox, 0755); !s) return s;
  for (const char* c : {"sh", "true", "sleep", "ls", "echo"})
    if (::symlink("busybox", (dir + "/bin/" + c).c_str()) != 0 && errno != EEXIST)
      return Error("symlink " + dir + "/bin/" + c + ": " + std::strerror(errno));
  return Status::Ok();
}

std::string ContainerdConfig(const std::string& dir) {
  return "version = 2\nroot = \"" + dir + "/root\"\nstate = \"" + dir +
         "/state\"\n\n[grpc]\n  address = \"" + dir +
         "/containerd.sock\"\n\n[ttrpc]\n  address = \"" + dir +
         "/containerd.sock.ttrpc\"\n\n[debug]\n  level = \"debug\"\n\n"
         "[plugins]\n  [plugins.\"io.containerd.grpc.v1.cri\"]\n    disable_tcp_service = true\n";
}

int CountSpecDevices(const std::string& bundle, const std::string& path) {
  auto spec = Json::ParseFile(bundle + "/config.json");
  if (!spec) return -1;
  Json devices = spec->Get("linux").Get("devices");
  int count = 0;
  for (size_t i = 0; i < devices.size(); ++i)
    if (devices.At(i).Get("path").AsString() == path) ++count;
  return count;
}

Result<std::unique_ptr<Containerd>> Containerd::Start(const Options& options) {
  std::unique_ptr<Containerd> c(new Containerd(options));
  std::string log = options.dir + "/containerd.log";
  c->pid_ = ::fork();
  if (c->pid_ < 0) return Error(std::string("fork: ") + std::strerror(errno));
  if (c->pid_ == 0) {
    const char* path = std::getenv("PATH");
    std::string full = options.path_prefix.empty() ? "" : options.path_prefix + ":";
    full += path ? path : "/usr/sbin:/usr/bin:/sbin:/bin";
    ::setenv("PATH", full.c_str(), 1);
    for (const auto& [k, v] : options.env) ::setenv(k.c_str(), v.c_str(), 1);
    if (!std::freopen(log.c_str(), "w", stderr)) ::_exit(126);
    ::execl("/usr/bin/containerd", "containerd", "--config", options.config.c_str(), nullptr);
    ::_exit(127);
  }
  // Ready when the API answers; containerd starts in well under a second.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (c->Ctr("version").code != 0) {
    int status;
    if (::waitpid(c->pid_, &status, WNOHANG) == c->pid_) {
      c->pid_ = -1;
      return Error("containerd exited at start: " + Slurp(log));
    }
    if (std::chrono::steady_clock::now() > deadline)
      return Error("containerd did not answer within 30 s: " + Slurp(log));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return c;
}

Containerd::~Containerd() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status;
  ::waitpid(pid_, &status, 0);
  // Shims of failed tests may still run; their bundles and rootfs mounts live in our dir.
  Sh("umount -R " + options_.dir + "/state 2>/dev/null; umount -R " + options_.dir +
     "/root 2>/dev/null");
}

testing::Outcome Containerd::Ctr(const std::string& args) const {
  return Sh("ctr -a " + options_.dir + "/containerd.sock " + args);
}

std::string Containerd::Bundle(const std::string& id) const {
  return options_.dir + "/state/io.containerd.runtime.v2.task/default/" + id;
}

Status Containerd::Remove(const std::string& id) const {
  Ctr("task kill -s SIGKILL " + id);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (Ctr("task delete " + id).code != 0) {
    if (std::chrono::steady_clock::now() > deadline)
      return Error("task " + id + " did not stop within 20 s after SIGKILL");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto r = Ctr("container delete " + id);
  if (r.code != 0) return Error("ctr container delete " + id + ": " + r.out);
  return Status::Ok();
}

}  // namespace vfio_gpu::e2e
