// `vfio-gpu install` and `vfio-gpu uninstall`: plan, report (or diff), apply, and say what must be
// restarted. See install_host.h for what is written where.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/install_bind.h"
#include "cli/install_host.h"
#include "cli/install_paths.h"
#include "common/files.h"
#include "common/strings.h"

extern char** environ;

namespace vfio_gpu::cli {
namespace {

// The command that restarts the host's containerd. From inside a container (host root not "/")
// it enters PID 1's namespaces, which needs the pod to share the host's PID namespace.
std::vector<std::string> RestartCommand(const std::string& root) {
  if (const char* cmd = std::getenv("VFIO_GPU_RESTART_CMD"); cmd && *cmd)
    return {"/bin/sh", "-c", cmd};
  if (root.empty() || root == "/") return {"systemctl", "restart", "containerd"};
  return {"nsenter", "-t", "1", "-m", "-u", "-i", "-n", "-p", "systemctl", "restart", "containerd"};
}

Status Run(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(stdout);
  pid_t pid;
  int rc = ::posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ);
  std::string shown = Join(argv, " ");
  if (rc != 0) return Error("cannot run " + shown + ": " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Error("waiting for " + shown + ": " + std::strerror(errno));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Error(shown + " failed (" +
                 (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                    : std::string("killed by a signal")) +
                 ")");
  return Status::Ok();
}

std::string DefaultShimBinary() {
  auto self = ReadLink("/proc/self/exe");
  return (self ? Dirname(*self) : std::string(".")) + "/" + kShimBinaryName;
}

struct Outcome {
  int changes = 0;  // made (or, in a dry run, that would be made)
  std::vector<std::string>
      failed;  // what did not happen, short: "0000:71:00.0 not bound (REFUSED)"
  bool restart_containerd = false;  // a change made needs it
  bool restart_crio = false;
};

// Prints every file's status (or, in a dry run, the diff of each change) and applies the plan.
Outcome ReportAndApply(const Plan& plan, const std::string& root, bool dry_run) {
  Outcome o;
  auto changed = [&o](const FileChange& f) {
    ++o.changes;
    o.restart_containerd |= f.restart == Restart::kContainerd;
    o.restart_crio |= f.restart == Restart::kCrio;
  };
  for (const auto& f : plan.files) {
    if (dry_run && f.Changes()) {
      changed(f);
      std::printf("%s", UnifiedDiff(f.host_path, f.before, f.after, f.binary).c_str());
      continue;
    }
    if (dry_run || (!f.before && !f.after)) continue;
    Status s = ApplyChange(f);
    if (!s) {
      o.failed.push_back(f.host_path + " not written");
      std::printf("  FAILED     %s: %s\n", f.host_path.c_str(), s.error().message().c_str());
      continue;
    }
    if (f.Changes()) changed(f);
    std::printf("  %-10s %s%s\n", f.Status().c_str(), f.host_path.c_str(),
                f.note.empty() ? "" : (" (" + f.note + ")").c_str());
  }
  for (const auto& dir : plan.remove_dirs) {
    if (!IsDir(UnderRoot(root, dir))) continue;
    std::vector<std::string> left;
    if (!DirEmptyAfter(dir, plan, root, &left)) {
      std::printf("  %-10s %s/ (holds files vfio-gpu did not write: %s)\n", "kept", dir.c_str(),
                  Join(left, ", ").c_str());
      continue;
    }
    if (dry_run) {
      ++o.changes;
      std::printf("rmdir %s\n", dir.c_str());
    } else if (::rmdir(UnderRoot(root, dir).c_str()) != 0) {
      o.failed.push_back("rmdir " + dir);
      std::printf("  FAILED     rmdir %s: %s\n", dir.c_str(), std::strerror(errno));
    } else {
      ++o.changes;
      std::printf("  %-10s %s/\n", "removed", dir.c_str());
    }
  }
  return o;
}

// What was changed and what must be restarted is said (and the restart done, when asked) whatever
// failed on the way: the next run finds those files unchanged and would never say it again. The
// failure is reported last, and makes the exit code.
int Finish(const char* command, const char* verb, const std::string& root, Outcome o, bool dry_run,
           bool restart) {
  if (o.changes == 0) {
    std::printf(o.failed.empty() ? "nothing to do\n" : "nothing changed\n");
  } else if (dry_run) {
    std::printf("dry run: %d change(s) would be made; nothing was written\n", o.changes);
  } else {
    std::printf("%d change(s)\n", o.changes);
    if (o.restart_containerd) {
      if (restart) {
        auto cmd = RestartCommand(root);
        if (Status s = Run(cmd); !s) {
          std::printf("FAILED: restarting containerd: %s\n", s.error().message().c_str());
          o.failed.push_back(
              "containerd not restarted (restart it yourself: systemctl restart "
              "containerd)");
        } else {
          std::printf("restarted containerd (%s)\n", Join(cmd, " ").c_str());
        }
      } else {
        std::printf(
            "restart containerd to %s the vfio-gpu runtime (systemctl restart containerd)\n", verb);
      }
    }
    if (o.restart_crio)
      std::printf("restart CRI-O to %s the vfio-gpu runtime (systemctl restart crio)\n", verb);
  }
  if (o.failed.empty()) return kExitOk;
  std::fflush(stdout);
  std::fprintf(stderr,
               "vfio-gpu %s: not finished: %s; %s: fix what the lines above say and run it "
               "again\n",
               command, Join(o.failed, ", ").c_str(),
               o.changes == 0 ? "nothing was changed"
               : dry_run      ? "nothing was written"
                              : "the changes listed were made");
  return kExitProblems;
}

}  // namespace

int Install(Args& args) {
  InstallOptions options;
  auto root = args.Value("host-root");
  bool dry_run = args.Flag("dry-run");
  bool restart = args.Flag("restart-containerd");
  bool bind = args.Flag("bind-gpus");
  auto config_path = args.Value("config");
  auto shim = args.Value("shim-binary");
  auto version = args.Value("containerd-version");
  if (auto bad = args.Leftover()) return UsageError("install", *bad);
  if (!root) return UsageError("install", "--host-root DIR is required (/ on the host itself)");
  if (!IsDir(*root)) return UsageError("install", "host root " + *root + " is not a directory");
  options.root = *root;
  options.shim_binary = shim ? *shim : DefaultShimBinary();
  if (version) {
    options.containerd_version = ParseContainerdVersion(*version);
    if (!options.containerd_version)
      return UsageError("install", "--containerd-version \"" + *version +
                                       "\" is not a version like 1.7.27 or 2.1.4");
  }
  NodeConfig config;
  if (config_path) {
    auto c = ReadNodeConfig(*config_path);
    if (!c) return UsageError("install", c.error().message());
    config = std::move(*c);
  }
  // The host's sysfs under the host root, whatever the config file says for the plugin.
  config.roots.sysfs = UnderRoot(*root, "/sys");
  config.roots.dev = UnderRoot(*root, "/dev");
  options.roots = config.roots;
  options.selection = config.selection;

  auto plan = PlanInstall(options);
  if (!plan) {
    std::fprintf(stderr, "vfio-gpu install: %s\nnothing was changed\n",
                 plan.error().message().c_str());
    return kExitProblems;
  }
  std::printf("vfio-gpu install%s: host root %s\n", dry_run ? " --dry-run" : "", root->c_str());
  Outcome o = ReportAndApply(*plan, *root, dry_run);
  if (bind && !o.failed.empty()) {
    std::printf("  %-10s --bind-gpus: a file above was not written\n", "skipped");
    o.failed.push_back("GPUs not bound (--bind-gpus skipped)");
  } else if (bind) {
    FileSysfsWriter writer;
    for (const auto& a : BindGpus(config.roots, config.selection, writer, dry_run)) {
      std::printf("  %s\n", Describe(a).c_str());
      if (a.result == BindAction::Result::kBound || a.result == BindAction::Result::kWouldBind)
        ++o.changes;
      if (a.result == BindAction::Result::kFailed)
        o.failed.push_back((a.bdf.empty() ? std::string("GPUs") : a.bdf) + " not bound (FAILED)");
      if (a.result == BindAction::Result::kRefused)
        o.failed.push_back(a.bdf + " not bound (REFUSED)");
    }
  }
  for (const auto& w : plan->warnings) std::printf("WARNING: %s\n", w.c_str());
  return Finish("install", "load", *root, o, dry_run, restart);
}

int Uninstall(Args& args) {
  auto root = args.Value("host-root");
  bool dry_run = args.Flag("dry-run");
  bool restart = args.Flag("restart-containerd");
  if (auto bad = args.Leftover()) return UsageError("uninstall", *bad);
  if (!root) return UsageError("uninstall", "--host-root DIR is required (/ on the host itself)");
  if (!IsDir(*root)) return UsageError("uninstall", "host root " + *root + " is not a directory");
  auto plan = PlanUninstall(*root);
  if (!plan) {
    std::fprintf(stderr, "vfio-gpu uninstall: %s\nnothing was changed\n",
                 plan.error().message().c_str());
    return kExitProblems;
  }
  std::printf("vfio-gpu uninstall%s: host root %s\n", dry_run ? " --dry-run" : "", root->c_str());
  Outcome o = ReportAndApply(*plan, *root, dry_run);
  return Finish("uninstall", "unload", *root, o, dry_run, restart);
}

}  // namespace vfio_gpu::cli
