// The demo's second half: the real containerd-shim-vfio-gpu-v2 binary (beside `vfio-gpu`), invoked
// the way containerd invokes a shim, on seed 003's failures: the same GPU named three times in one
// container spec, a tenant naming a GPU its pod was not allocated, a GPU pod's sandbox headed for
// Cloud Hypervisor. The kubelet's pod resources API is the in-process stand-in; the downstream
// "Kata" shim is /bin/true (nothing can boot a VM here).
#include "cli/demo_shim.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/files.h"
#include "common/json.h"
#include "common/strings.h"
#include "test/fakes/fake_pod_resources.h"

namespace vfio_gpu::cli {
namespace {

struct Ran {
  int exit_code = -1;
  std::string output;  // stdout and stderr, as containerd reads them
};

// fork/exec with `cwd` and one extra environment variable; output captured through a pipe.
Ran RunIn(const std::string& cwd, const std::vector<std::string>& argv, const std::string& env) {
  Ran out;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return out;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);  // no runtime options on stdin
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::putenv(const_cast<char*>(env.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.output.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  if (pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status))
    out.exit_code = WEXITSTATUS(status);
  return out;
}

std::string Dev(int group) {
  return R"({"path":"/dev/vfio/)" + std::to_string(group) + R"(","type":"c","major":243,"minor":)" +
         std::to_string(group) + R"(,"fileMode":438,"uid":0,"gid":0})";
}

// A containerd container spec of pod <ns>/<pod> (sandbox <sandbox>) with these devices and
// extra annotations (each `"key":"value",`).
std::string ContainerSpec(const std::string& ns, const std::string& pod, const std::string& sandbox,
                          const std::string& devices, const std::string& annotations) {
  return R"({"ociVersion":"1.0.2-dev","process":{"args":["python","train.py"],"cwd":"/"},)"
         R"("root":{"path":"rootfs"},"annotations":{)" +
         annotations +
         R"("io.kubernetes.cri.container-type":"container","io.kubernetes.cri.container-name":"main",)"
         R"("io.kubernetes.cri.sandbox-id":")" +
         sandbox + R"(","io.kubernetes.cri.sandbox-name":")" + pod +
         R"(","io.kubernetes.cri.sandbox-namespace":")" + ns + R"("},"linux":{"devices":[)" +
         devices + "]}}";
}

std::string SandboxSpec(const std::string& ns, const std::string& pod, const std::string& id) {
  return R"({"ociVersion":"1.0.2-dev","process":{"args":["/pause"],"cwd":"/"},)"
         R"("root":{"path":"rootfs"},"annotations":{"io.kubernetes.cri.container-type":"sandbox",)"
         R"("io.kubernetes.cri.sandbox-id":")" +
         id + R"(","io.kubernetes.cri.sandbox-name":")" + pod +
         R"(","io.kubernetes.cri.sandbox-namespace":")" + ns + R"("},"linux":{"devices":[]}})";
}

// The VFIO entries of a spec's linux.devices and its cdi.k8s.io annotations, one line.
std::string VfioSummary(const std::string& spec_path) {
  auto spec = Json::ParseFile(spec_path);
  if (!spec) return spec.error().message();
  std::string devs, anns;
  Json list = spec->Get("linux").Get("devices");
  for (size_t i = 0; list.is_array() && i < list.size(); ++i) {
    Json path = list.At(i).Get("path");
    if (path.is_string() && StartsWith(path.AsString(), "/dev/vfio/"))
      devs += (devs.empty() ? "" : ", ") + path.AsString();
  }
  Json a = spec->Get("annotations");
  if (a.is_object())
    for (const auto& key : a.Keys())
      if (StartsWith(key, "cdi.k8s.io/"))
        anns += (anns.empty() ? "" : ", ") + key + "=" + a.Get(key).AsString();
  return "linux.devices [" + devs + "]  cdi annotations [" + anns + "]";
}

// Writes `content` to `path`, creating its directory; the demo stops on the first failure.
bool Put(const std::string& path, const std::string& content) {
  Status s = MakeDirs(Dirname(path));
  if (s) s = WriteFileAtomic(path, content);
  if (!s) std::fprintf(stderr, "vfio-gpu demo: %s\n", s.error().message().c_str());
  return static_cast<bool>(s);
}

std::string Ledger(const std::string& path) {
  auto text = ReadFile(path);
  return text ? std::string(Trim(*text)) : "(no claim)";
}

}  // namespace

int RunShimDemo(const std::string& root, const std::string& bin_dir, const HostRoots& roots,
                const Snapshot& snap, const std::string& cdi_dir) {
  const std::string shim = JoinPath(bin_dir, "containerd-shim-vfio-gpu-v2");
  if (!PathExists(shim)) {
    std::printf("== the shim: %s is not built; skipped\n", shim.c_str());
    return 0;
  }
  if (snap.units.size() < 3) return 0;
  const Unit& a = snap.units[0];  // tenant-a's GPU
  const Unit& b = snap.units[1];  // tenant-b's GPU
  const Unit& c = snap.units[2];  // tenant-c's GPU, on the wrong RuntimeClass

  fakes::FakePodResources podres(root + "/kubelet/pod-resources/kubelet.sock");
  if (auto s = podres.Start(); !s) {
    std::fprintf(stderr, "vfio-gpu demo: pod resources stand-in: %s\n",
                 s.error().message().c_str());
    return 1;
  }
  podres.SetPods({{"train-0", "tenant-a", {{"main", {{a.resource, {a.id}, {}}}}}},
                  {"notebook-1", "tenant-b", {{"main", {{b.resource, {b.id}, {}}}}}},
                  {"infer-2", "tenant-c", {{"main", {{c.resource, {c.id}, {}}}}}}});

  const std::string kata_dir = root + "/kata";
  bool ok = Put(kata_dir + "/configuration-qemu-nvidia-gpu.toml",
                "[hypervisor.qemu]\npath = \"/opt/kata/bin/qemu-system-x86_64\"\n"
                "cold_plug_vfio = \"root-port\"\npcie_root_port = 8\n") &&
            Put(kata_dir + "/configuration-clh.toml",
                "[hypervisor.clh]\npath = \"/opt/kata/bin/cloud-hypervisor\"\n");
  auto shim_config = [&](const std::string& kata) {
    return R"({"downstream_shim":"/bin/true","sysfs_root":")" + roots.sysfs + R"(","dev_root":")" +
           roots.dev + R"(","run_dir":")" + root + R"(/run/vfio-gpu","pod_resources_socket":")" +
           podres.socket_path() + R"(","pod_resources_client":")" +
           JoinPath(bin_dir, "vfio-gpu-shim-podresources") + R"(","cdi_dirs":[")" + cdi_dir +
           R"("],"kata_config_path":")" + kata_dir + "/" + kata + R"(","authorize":"enforce"})";
  };
  ok = ok && Put(root + "/shim-qemu.json", shim_config("configuration-qemu-nvidia-gpu.toml")) &&
       Put(root + "/shim-clh.json", shim_config("configuration-clh.toml"));
  if (!ok) {
    podres.Stop();
    return 1;
  }

  int step = 0;
  auto run = [&](const std::string& what, const std::string& id, const std::string& spec,
                 const std::string& config, const std::string& verb = "start") {
    std::string bundle = root + "/bundles/" + id;
    if (verb == "start" && !Put(bundle + "/config.json", spec)) return Ran{};
    auto r = RunIn(bundle,
                   {shim, "-namespace", "k8s.io", "-address", "/run/containerd/containerd.sock",
                    "-publish-binary", "/usr/bin/containerd", "-id", id, verb},
                   "VFIO_GPU_SHIM_CONFIG=" + root + "/" + config);
    std::printf("%d. %s\n   shim %s -> exit %d%s%s\n", ++step, what.c_str(), verb.c_str(),
                r.exit_code, r.output.empty() ? "" : ": ", std::string(Trim(r.output)).c_str());
    return r;
  };

  std::printf(
      "== containerd-shim-vfio-gpu-v2 (in front of Kata's shim; downstream here: /bin/true)\n");
  std::printf(
      "   pod tenant-a/train-0 was allocated %s (group %d), tenant-b/notebook-1 %s (group %d)\n",
      a.id.c_str(), a.iommu_group, b.id.c_str(), b.iommu_group);
  const std::string dup_ann = "\"cdi.k8s.io/vfio-gpu\":\"" + a.CdiName() + "\",";
  run("sandbox of tenant-a/train-0", "sb-a", SandboxSpec("tenant-a", "train-0", "sb-a"),
      "shim-qemu.json");
  std::string bundle = root + "/bundles/c-a";
  run("container of train-0 naming its GPU three times (group node twice + CDI annotation)", "c-a",
      ContainerSpec("tenant-a", "train-0", "sb-a", Dev(a.iommu_group) + "," + Dev(a.iommu_group),
                    dup_ann),
      "shim-qemu.json");
  std::printf("   spec after the hooks: %s\n", VfioSummary(bundle + "/config.json").c_str());
  std::printf("   ledger: %s\n", Ledger(root + "/run/vfio-gpu/ledger/" + a.id).c_str());
  run("sandbox of tenant-b/notebook-1", "sb-b", SandboxSpec("tenant-b", "notebook-1", "sb-b"),
      "shim-qemu.json");
  run("container of notebook-1 whose tenant added an annotation for tenant-a's GPU", "c-b",
      ContainerSpec("tenant-b", "notebook-1", "sb-b", Dev(b.iommu_group), dup_ann),
      "shim-qemu.json");
  run("sandbox of GPU pod tenant-c/infer-2 whose RuntimeClass points at Cloud Hypervisor", "sb-c",
      SandboxSpec("tenant-c", "infer-2", "sb-c"), "shim-clh.json");
  run("delete of tenant-a's sandbox releases its GPU", "sb-a", "", "shim-qemu.json", "delete");
  std::printf("   ledger for %s: %s\n\n", a.id.c_str(),
              PathExists(root + "/run/vfio-gpu/ledger/" + a.id) ? "still claimed" : "released");
  podres.Stop();
  return 0;
}

}  // namespace vfio_gpu::cli
