#include <benchmark/benchmark.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/files.h"
#include "common/json.h"
#include "hostmodel/fake_host.h"
#include "test/support/temp_dir.h"

extern char** environ;

namespace vfio_gpu {
namespace {

// A containerd container spec padded to ~40 KB with env and mounts, like a real CUDA image's.
std::string BigSpec(bool gpu) {
  Json env = Json::Array();
  for (int i = 0; i < 400; ++i)
    env.Append(Json::String("VAR_" + std::to_string(i) + "=" + std::string(60, 'x')));
  Json proc = Json::Object();
  proc.Set("args", Json::Array().Append(Json::String("python")));
  proc.Set("env", std::move(env));
  Json ann = Json::Object();
  ann.Set("io.kubernetes.cri.container-type", Json::String("container"));
  ann.Set("io.kubernetes.cri.sandbox-id", Json::String("5f1c"));
  ann.Set("io.kubernetes.cri.sandbox-name", Json::String("train-0"));
  ann.Set("io.kubernetes.cri.sandbox-namespace", Json::String("tenant-a"));
  Json devices = Json::Array();
  if (gpu)
    for (int i = 0; i < 2; ++i) {
      Json d = Json::Object();
      d.Set("path", Json::String("/dev/vfio/25")).Set("type", Json::String("c"));
      d.Set("major", Json::Int(241)).Set("minor", Json::Int(25));
      devices.Append(std::move(d));
    }
  Json linux = Json::Object();
  linux.Set("devices", std::move(devices));
  Json spec = Json::Object();
  spec.Set("ociVersion", Json::String("1.1.0")).Set("process", std::move(proc));
  spec.Set("annotations", std::move(ann)).Set("linux", std::move(linux));
  return spec.Dump(true);
}

void RunOnce(const std::vector<std::string>& args, const std::string& cwd) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::execve(argv[0], argv.data(), environ);
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
}

struct Fixture {
  testing::TempDir t;
  std::string bundle;
  Fixture(bool gpu) {
    FakeHost host(t.path() + "/host");
    (void)BuildSeedA10Host(host);
    bundle = t.path() + "/bundle";
    (void)MakeDirs(bundle);
    (void)WriteFileAtomic(bundle + "/config.json", BigSpec(gpu));
    Json cfg = Json::Object();
    cfg.Set("downstream_shim", Json::String("/bin/true"));
    cfg.Set("sysfs_root", Json::String(host.roots().sysfs))
        .Set("dev_root", Json::String(host.roots().dev));
    cfg.Set("run_dir", Json::String(t.path() + "/run")).Set("authorize", Json::String("off"));
    (void)WriteFileAtomic(t.path() + "/shim.json", cfg.Dump());
    ::setenv("VFIO_GPU_SHIM_CONFIG", (t.path() + "/shim.json").c_str(), 1);
  }
};

const std::vector<std::string> kArgs = {"-namespace",
                                        "k8s.io",
                                        "-address",
                                        "/run/containerd/containerd.sock",
                                        "-publish-binary",
                                        "/usr/bin/containerd",
                                        "-id",
                                        "c1",
                                        "start"};

void BM_DownstreamDirect(benchmark::State& state) {
  Fixture f(false);
  std::vector<std::string> args = {"/bin/true"};
  args.insert(args.end(), kArgs.begin(), kArgs.end());
  for (auto _ : state) RunOnce(args, f.bundle);
}
BENCHMARK(BM_DownstreamDirect)->Unit(benchmark::kMillisecond)->MinTime(2);

void BM_ThroughShimNoGpu(benchmark::State& state) {
  Fixture f(false);
  std::vector<std::string> args = {SHIM_BINARY};
  args.insert(args.end(), kArgs.begin(), kArgs.end());
  for (auto _ : state) RunOnce(args, f.bundle);
}
BENCHMARK(BM_ThroughShimNoGpu)->Unit(benchmark::kMillisecond)->MinTime(2);

// A container with its (duplicated) GPU: scan, collect, validate, dedup, ledger, rewrite.
void BM_ThroughShimGpuContainer(benchmark::State& state) {
  Fixture f(true);
  std::vector<std::string> args = {SHIM_BINARY};
  args.insert(args.end(), kArgs.begin(), kArgs.end());
  std::string spec = BigSpec(true);
  for (auto _ : state) {
    state.PauseTiming();
    (void)WriteFileAtomic(f.bundle + "/config.json", spec);  // the shim rewrote it last time
    state.ResumeTiming();
    RunOnce(args, f.bundle);
  }
}
BENCHMARK(BM_ThroughShimGpuContainer)->Unit(benchmark::kMillisecond)->MinTime(2);

}  // namespace
}  // namespace vfio_gpu

BENCHMARK_MAIN();
