// What containerd-shim-vfio-gpu-v2 adds to a shim start: each iteration execs the downstream shim
// directly and then the same start through our shim (which execs that downstream), on a ~40 KB
// config.json, and reports both and the difference (`added_ms`; target < 3 ms).
//
// Like a real node, everything the shim touches lives on tmpfs: the bundle (containerd keeps it
// under /run/containerd), the run dir with the ledger (/run/vfio-gpu) and the fake sysfs/dev
// trees. The bench uses /dev/shm (or $VFIO_GPU_BENCH_TMPFS) and says so; a disk-backed run dir
// measures the disk's fsync latency, not the shim.
//
// The host is a realistic node: 300 PCI functions, 16 of them GPUs on vfio-pci. Cases: a container
// and a pod sandbox, each without and with a GPU (the container's GPU twice in linux.devices, as a
// CDI-resolved spec plus a stray --device would have it; the sandbox's GPU claimed in the ledger
// every time, its Kata configuration read and checked), authorize off; and a later GPU container
// of a pod under authorize enforce, authorized by the pod's ledger claim (its helper always fails,
// so a start that asked the kubelet would show as an error).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/files.h"
#include "common/json.h"
#include "hostmodel/fake_host.h"
#include "hostmodel/scanner.h"
#include "shim-hooks/host_facts.h"
#include "shim-hooks/oci_spec.h"

extern char** environ;

namespace vfio_gpu {
namespace {

constexpr long kTmpfsMagic = 0x01021994;

// A tmpfs directory for the whole bench, removed at exit.
class TmpfsDir {
 public:
  TmpfsDir() {
    const char* env = std::getenv("VFIO_GPU_BENCH_TMPFS");
    std::string base = env && *env ? env : "/dev/shm";
    struct statfs fs {};
    tmpfs_ = ::statfs(base.c_str(), &fs) == 0 && fs.f_type == kTmpfsMagic;
    if (!tmpfs_) base = std::filesystem::temp_directory_path().string();
    std::string tmpl = base + "/vfio-gpu-shim-bench.XXXXXX";
    if (char* p = ::mkdtemp(tmpl.data())) path_ = p;
    std::fprintf(stderr, "shim bench: bundle, run dir and fake sysfs in %s (%s)\n", path_.c_str(),
                 tmpfs_ ? "tmpfs, like /run on a node"
                        : "NOT tmpfs: numbers include disk fsyncs; set VFIO_GPU_BENCH_TMPFS");
  }
  ~TmpfsDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool tmpfs_ = false;
};

// A CRI spec padded to ~40 KB with env and mounts, like a real CUDA image's.
std::string BigSpec(bool sandbox, const std::string& gpu_path, int gpu_minor) {
  Json env = Json::Array();
  for (int i = 0; i < 420; ++i)
    env.Append(Json::String("VAR_" + std::to_string(i) + "=" + std::string(60, 'x')));
  Json proc = Json::Object();
  proc.Set("args", Json::Array().Append(Json::String(sandbox ? "/pause" : "python")));
  proc.Set("env", std::move(env));
  Json mounts = Json::Array();
  for (int i = 0; i < 40; ++i) {
    Json m = Json::Object();
    m.Set("destination", Json::String("/usr/lib/x86_64-linux-gnu/lib" + std::to_string(i) + ".so"));
    m.Set("type", Json::String("bind"));
    m.Set("source", Json::String("/run/containerd/io.containerd.runtime.v2.task/k8s.io/lib" +
                                 std::to_string(i)));
    m.Set("options", Json::Array().Append(Json::String("rbind")).Append(Json::String("ro")));
    mounts.Append(std::move(m));
  }
  Json ann = Json::Object();
  ann.Set("io.kubernetes.cri.container-type", Json::String(sandbox ? "sandbox" : "container"));
  ann.Set("io.kubernetes.cri.sandbox-id", Json::String("5f1c"));
  ann.Set("io.kubernetes.cri.sandbox-name", Json::String("train-0"));
  ann.Set("io.kubernetes.cri.sandbox-namespace", Json::String("tenant-a"));
  ann.Set("io.kubernetes.cri.sandbox-uid", Json::String("1234-5678"));
  Json devices = Json::Array();
  for (int i = 0; !gpu_path.empty() && i < (sandbox ? 1 : 2); ++i) {
    Json d = Json::Object();
    d.Set("path", Json::String(gpu_path)).Set("type", Json::String("c"));
    d.Set("major", Json::Int(241)).Set("minor", Json::Int(gpu_minor));
    devices.Append(std::move(d));
  }
  Json linux = Json::Object();
  linux.Set("devices", std::move(devices));
  Json spec = Json::Object();
  spec.Set("ociVersion", Json::String("1.1.0")).Set("process", std::move(proc));
  spec.Set("mounts", std::move(mounts));
  spec.Set("annotations", std::move(ann)).Set("linux", std::move(linux));
  return spec.Dump(true);
}

// Kata's QEMU GPU configuration is ~30 KB, most of it comments.
std::string KataGpuConfig() {
  std::string t;
  for (int i = 0; i < 300; ++i) t += "# " + std::string(90, 'c') + "\n";
  t += "[hypervisor.qemu]\npath = \"/opt/kata/bin/qemu-system-x86_64\"\n"
       "enable_annotations = [\"enable_iommu\", \"virtio_fs_extra_args\", \"kernel_params\"]\n"
       "cold_plug_vfio = \"root-port\"\npcie_root_port = 8\n"
       "[runtime]\npod_resource_api_sock = \"/var/lib/kubelet/pod-resources/kubelet.sock\"\n";
  return t;
}

const std::vector<std::string> kArgs = {"-namespace",
                                        "k8s.io",
                                        "-address",
                                        "/run/containerd/containerd.sock",
                                        "-publish-binary",
                                        "/usr/bin/containerd",
                                        "-id",
                                        "5f1c",
                                        "start"};

// The shim under test: the one built beside the bench, or $VFIO_GPU_BENCH_SHIM (e.g. an older
// build, for before/after numbers).
std::string Shim() {
  const char* env = std::getenv("VFIO_GPU_BENCH_SHIM");
  return env && *env ? env : SHIM_BINARY;
}

struct Run {
  double seconds = 0;
  double cpu = 0;      // user + system time of the process (and what it exec'd)
  bool ok = false;     // exit 0 and nothing on stdout/stderr (the shim protocol)
  std::string output;  // what it printed, when not ok
};

// Runs `binary` with containerd's start argv in `cwd`; its stdout+stderr go to `out`.
Run RunOnce(const std::string& binary, const std::string& cwd, const std::string& out) {
  std::vector<std::string> args = {binary};
  args.insert(args.end(), kArgs.begin(), kArgs.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    int null = ::open("/dev/null", O_RDONLY);  // containerd's runtime options: none
    int log = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (null < 0 || log < 0 || ::dup2(null, 0) < 0 || ::dup2(log, 1) < 0 || ::dup2(log, 2) < 0)
      ::_exit(125);
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::execve(argv[0], argv.data(), environ);
    ::_exit(127);
  }
  int status = 0;
  rusage ru{};
  ::wait4(pid, &status, 0, &ru);
  Run r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
          static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  auto printed = ReadFile(out);
  r.output = printed ? *printed : "";
  r.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && r.output.empty();
  return r;
}

struct Fixture {
  TmpfsDir t;
  std::string bundle, spec, run;
  bool ready = true;  // the setup start succeeded
  // `enforce`: authorize enforce with a kubelet for the setup start only (a stub helper answering
  // the pod's allocation), then a helper that always fails: the measured starts must not ask.
  Fixture(bool sandbox, bool gpu, bool enforce = false) {
    FakeHost host(t.path() + "/host");
    (void)BuildLargeHost(host, 300);
    auto snap = Scan(host.roots(), Selection{});
    std::string gpu_path, unit;
    int group = 0;
    if (gpu && snap && !snap->units.empty()) {
      group = snap->units.front().iommu_group;
      gpu_path = snap->units.front().GroupPath();
      unit = snap->units.front().id;
    }
    // containerd's layout: bundles side by side under the namespace's task dir.
    std::string tasks = t.path() + "/io.containerd.runtime.v2.task/k8s.io";
    bundle = tasks + (sandbox ? "/5f1c" : "/c1");
    (void)MakeDirs(tasks + "/5f1c");
    (void)MakeDirs(bundle);
    spec = BigSpec(sandbox, gpu_path, group);
    (void)WriteFileAtomic(bundle + "/config.json", spec);
    (void)MakeDirs(t.path() + "/kata");
    (void)WriteFileAtomic(t.path() + "/kata/configuration-qemu-nvidia-gpu.toml", KataGpuConfig());
    (void)WriteFileAtomic(t.path() + "/podres",
                          "#!/bin/sh\necho '{\"found\":true,\"method\":\"Get\",\"containers\":"
                          "[{\"devices\":[{\"resource_name\":\"nvidia.com/pgpu\",\"device_ids\":"
                          "[\"" +
                              unit + "\"]}]}]}'\n",
                          0755);
    run = t.path() + "/run";
    auto config = [&](const std::string& client) {
      Json cfg = Json::Object();
      cfg.Set("downstream_shim", Json::String("/bin/true"));
      cfg.Set("sysfs_root", Json::String(host.roots().sysfs))
          .Set("dev_root", Json::String(host.roots().dev));
      cfg.Set("run_dir", Json::String(run))
          .Set("authorize", Json::String(enforce ? "enforce" : "off"));
      cfg.Set("kata_config_path",
              Json::String(t.path() + "/kata/configuration-qemu-nvidia-gpu.toml"));
      // Off: the default helper beside the shim binary (a shim that asks anyway pays for it).
      if (enforce) cfg.Set("pod_resources_client", Json::String(client));
      (void)WriteFileAtomic(t.path() + "/shim.json", cfg.Dump());
    };
    config(t.path() + "/podres");
    ::setenv("VFIO_GPU_SHIM_CONFIG", (t.path() + "/shim.json").c_str(), 1);
    if (!sandbox && gpu) {
      // Off: the sandbox claimed the GPU when it started. Enforce (Kata >= 3.24: the sandbox spec
      // names no GPU): the pod's first container was authorized by the kubelet and claimed it.
      std::string first = enforce ? tasks + "/c0" : tasks + "/5f1c";
      (void)MakeDirs(first);
      (void)WriteFileAtomic(first + "/config.json", BigSpec(!enforce, gpu_path, group));
      ready = RunOnce(Shim(), first, t.path() + "/out").ok;
    }
    if (enforce) config("/bin/false");
  }
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Reported per case: the mean wall time of a start through the shim (the benchmark's time), the
// direct start's, and what the shim adds as the median of (through - direct) per interleaved pair,
// in wall time and in CPU time (the latter barely moves when others load the machine).
void Measure(benchmark::State& state, bool sandbox, bool gpu, bool enforce = false) {
  Fixture f(sandbox, gpu, enforce);
  if (!f.ready) {
    state.SkipWithError("the setup start failed");
    return;
  }
  std::vector<double> direct, added, added_cpu;
  for (auto _ : state) {
    // Untimed: the shim rewrote the spec last time; a sandbox starts with no claim.
    (void)WriteFileAtomic(f.bundle + "/config.json", f.spec);
    if (sandbox) {
      std::error_code ec;
      std::filesystem::remove_all(f.run + "/ledger", ec);
    }
    Run d = RunOnce("/bin/true", f.bundle, f.t.path() + "/out");
    Run s = RunOnce(Shim(), f.bundle, f.t.path() + "/out");
    if (!d.ok || !s.ok) {
      state.SkipWithError(("the start failed or printed: " + s.output).c_str());
      return;
    }
    direct.push_back(d.seconds);
    added.push_back(s.seconds - d.seconds);
    added_cpu.push_back(s.cpu - d.cpu);
    state.SetIterationTime(s.seconds);
  }
  state.counters["direct_ms"] = Median(direct) * 1e3;
  state.counters["added_ms"] = Median(added) * 1e3;
  state.counters["added_cpu_ms"] = Median(added_cpu) * 1e3;
  state.counters["spec_kb"] = static_cast<double>(f.spec.size()) / 1024.0;
}

void BM_ContainerNoGpu(benchmark::State& s) {
  Measure(s, false, false);
}
void BM_ContainerGpu(benchmark::State& s) {
  Measure(s, false, true);
}
// authorize enforce, a later container of a GPU pod: authorized by the pod's claim, no kubelet.
void BM_ContainerGpuEnforced(benchmark::State& s) {
  Measure(s, false, true, true);
}
void BM_SandboxNoGpu(benchmark::State& s) {
  Measure(s, true, false);
}
void BM_SandboxGpu(benchmark::State& s) {
  Measure(s, true, true);
}
BENCHMARK(BM_ContainerNoGpu)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(300);
BENCHMARK(BM_ContainerGpu)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(300);
BENCHMARK(BM_ContainerGpuEnforced)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(300);
BENCHMARK(BM_SandboxNoGpu)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(300);
BENCHMARK(BM_SandboxGpu)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(300);

// In-process phases of a GPU container's start, to see where the added time goes.
void BM_PhaseReadSpec(benchmark::State& state) {
  std::string spec = BigSpec(false, "/dev/vfio/1000", 0);
  for (auto _ : state) benchmark::DoNotOptimize(ReadOciSpec(spec, "config.json", "c1"));
}
BENCHMARK(BM_PhaseReadSpec)->Unit(benchmark::kMicrosecond);

void BM_PhaseWriteSpec(benchmark::State& state) {
  auto spec = ReadOciSpec(BigSpec(false, "/dev/vfio/1000", 0), "config.json", "c1");
  for (auto _ : state) benchmark::DoNotOptimize(spec->Dump());
}
BENCHMARK(BM_PhaseWriteSpec)->Unit(benchmark::kMicrosecond);

// The whole bus (what the shim used to scan) against the groups a spec names.
void BM_PhaseScanWholeBus(benchmark::State& state) {
  TmpfsDir t;
  FakeHost host(t.path() + "/host");
  (void)BuildLargeHost(host, 300);
  for (auto _ : state) benchmark::DoNotOptimize(Scan(host.roots(), ShimSelection()));
}
BENCHMARK(BM_PhaseScanWholeBus)->Unit(benchmark::kMicrosecond);

void BM_PhaseScanNamedGroups(benchmark::State& state) {
  TmpfsDir t;
  FakeHost host(t.path() + "/host");
  (void)BuildLargeHost(host, 300);
  auto spec = ReadOciSpec(BigSpec(false, "/dev/vfio/1000", 0), "config.json", "c1");
  for (auto _ : state) {
    GroupsOfInterest g = GroupsNamedBy(host.roots(), *spec, {});
    benchmark::DoNotOptimize(ScanForStart(host.roots(), g));
  }
}
BENCHMARK(BM_PhaseScanNamedGroups)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace vfio_gpu

BENCHMARK_MAIN();
