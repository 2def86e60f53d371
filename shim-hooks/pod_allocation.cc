#include "shim-hooks/pod_allocation.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/files.h"
#include "common/json.h"
#include "common/strings.h"

extern char** environ;

namespace vfio_gpu {

Result<PodAllocation> PodAllocationFromJson(const std::string& text, const ShimConfig& cfg) {
  auto j = Json::Parse(text, "pod resources answer");
  if (!j) return j.error();
  PodAllocation a;
  a.found = j->Get("found").AsBool();
  a.method = j->Get("method").AsString();
  Json containers = j->Get("containers");
  for (size_t i = 0; i < containers.size(); ++i) {
    Json devices = containers.At(i).Get("devices");
    for (size_t k = 0; k < devices.size(); ++k) {
      std::string resource = devices.At(k).Get("resource_name").AsString();
      if (!cfg.Governs(resource)) continue;
      Json ids = devices.At(k).Get("device_ids");
      for (size_t n = 0; n < ids.size(); ++n) {
        a.units.insert(ids.At(n).AsString());
        a.by_resource[resource].insert(ids.At(n).AsString());
      }
    }
  }
  return a;
}

std::string FindPodResourcesClient(const ShimConfig& cfg) {
  if (!cfg.pod_resources_client.empty()) return cfg.pod_resources_client;
  if (auto exe = RealPath("/proc/self/exe")) {
    std::string beside = JoinPath(Dirname(*exe), kPodResourcesClientName);
    if (::access(beside.c_str(), X_OK) == 0) return beside;
  }
  const char* path = std::getenv("PATH");
  for (const auto& dir : Split(path ? path : "/usr/local/bin:/usr/bin", ':')) {
    std::string c = JoinPath(dir, kPodResourcesClientName);
    if (!dir.empty() && ::access(c.c_str(), X_OK) == 0) return c;
  }
  return kPodResourcesClientName;
}

Result<PodAllocation> QueryPodAllocation(const ShimConfig& cfg, const std::string& ns,
                                         const std::string& name) {
  std::string client = FindPodResourcesClient(cfg);
  std::vector<std::string> args = {client,
                                   "--socket",
                                   cfg.pod_resources_socket,
                                   "--namespace",
                                   ns,
                                   "--name",
                                   name,
                                   "--timeout-ms",
                                   std::to_string(cfg.pod_resources_timeout_ms)};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0)
    return Error("pipe: " + std::string(std::strerror(errno)), ErrorKind::kTransient);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return Error("pipe: " + std::string(std::strerror(errno)), ErrorKind::kTransient);
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, client.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  ::close(err[1]);
  auto drain = [](int fd) {
    std::string s;
    char buf[8192];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0)
        s.append(buf, static_cast<size_t>(n));
      else if (n < 0 && errno == EINTR)
        continue;
      else
        break;
    }
    ::close(fd);
    return s;
  };
  if (rc != 0) {
    ::close(out[0]);
    ::close(err[0]);
    return Error("cannot run the pod resources client " + client + ": " + std::strerror(rc) +
                     "; install it beside containerd-shim-vfio-gpu-v2 or set pod_resources_client",
                 ErrorKind::kInternal);
  }
  // The answer is small; read stdout fully, then stderr (the client writes one or the other).
  std::string o = drain(out[0]);
  std::string e = drain(err[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 2;
  std::string why(Trim(e));
  if (code == 1) return Error(why, ErrorKind::kTransient);
  if (code != 0)
    return Error(why.empty() ? "pod resources client " + client + " failed" : why,
                 ErrorKind::kTransient);
  return PodAllocationFromJson(o, cfg);
}

}  // namespace vfio_gpu
