// The pieces every real-containerd test needs: a fake host whose VFIO group nodes are real char
// devices (runc mknods them in the container), a busybox rootfs, and Debian's containerd started
// with its own config, root, state and socket in a temp dir, stopped and unmounted again at the
// end.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>

#include "common/result.h"
#include "hostmodel/fake_host.h"
#include "test/support/run_binary.h"

namespace vfio_gpu::e2e {

// Why this machine cannot run the tests ("" when it can): root, containerd, runc's shim, busybox.
std::string MissingPrerequisites();

// A shell command with stdout and stderr merged, as a user sees ctr's answer.
testing::Outcome Sh(const std::string& cmd);
// A file's content, or "(why it could not be read)": for failure messages.
std::string Slurp(const std::string& path);

// Seed 003's four A10s (groups 25, 31, 182, 188), its host NIC (61), and a consumer GPU whose
// audio function is on snd_hda_intel (group 14, not viable); the group nodes of 14, 25, 31 and 61
// are made real char devices.
Status BuildE2eHost(FakeHost& host);

// <dir>/bin/busybox and the applets the tests run.
Status MakeBusyboxRootfs(const std::string& dir);

// A containerd config (version 2) keeping root, state and both sockets under `dir`; CRI's TCP
// service off. Tests that install into a host root write it as that root's config.toml.
std::string ContainerdConfig(const std::string& dir);

// How many linux.devices entries of a bundle's config.json have this path (-1: unreadable).
int CountSpecDevices(const std::string& bundle, const std::string& path);

class Containerd {
 public:
  struct Options {
    std::string config;                      // containerd --config
    std::string dir;                         // root/, state/, containerd.sock, containerd.log
    std::string path_prefix;                 // put before PATH: where the shim is found
    std::map<std::string, std::string> env;  // more environment (VFIO_GPU_SHIM_CONFIG)
  };

  // Starts containerd and waits (bounded) until its API answers.
  static Result<std::unique_ptr<Containerd>> Start(const Options& options);
  ~Containerd();  // SIGTERM, wait, and unmount what failed shims may have left mounted
  Containerd(const Containerd&) = delete;
  Containerd& operator=(const Containerd&) = delete;

  // "ctr -a <socket> " + args, stdout and stderr merged.
  testing::Outcome Ctr(const std::string& args) const;
  // The bundle of a task in the default namespace (its rewritten config.json is read there).
  std::string Bundle(const std::string& id) const;
  std::string Log() const { return Slurp(options_.dir + "/containerd.log"); }
  // Kills a task and deletes it and its container (bounded wait for the task to stop).
  Status Remove(const std::string& id) const;

 private:
  explicit Containerd(Options options) : options_(std::move(options)) {}
  Options options_;
  pid_t pid_ = -1;
};

}  // namespace vfio_gpu::e2e
