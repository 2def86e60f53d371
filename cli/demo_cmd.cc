#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "cdi/spec.h"
#include "cli/commands.h"
#include "cli/demo_shim.h"
#include "cli/render.h"
#include "common/files.h"
#include "hostmodel/fake_host.h"
#include "hostmodel/scanner.h"
#include "plugin/daemon.h"
#include "test/fakes/fake_kubelet.h"

namespace vfio_gpu::cli {
namespace {

using std::chrono::seconds;

std::string Health(const v1beta1::Device& d) {
  std::string out = d.id() + "  " + d.health();
  if (d.has_topology() && d.topology().nodes_size() > 0)
    out += "  numa " + std::to_string(d.topology().nodes(0).id());
  return out;
}

// The plugin against the demo host with an in-process kubelet stand-in speaking the real gRPC
// protocol over unix sockets: registration, ListAndWatch, a preferred allocation, Allocate, and a
// health change.
int RunPlugin(const std::string& root, NodeConfig config) {
  config.kubelet_dir = root + "/kubelet/device-plugins";
  config.run_dir = root + "/run/vfio-gpu";
  config.metrics_address = "";
  for (const auto& d : {config.kubelet_dir, config.run_dir + "/quarantine"}) (void)MakeDirs(d);
  fakes::FakeKubelet kubelet(config.kubelet_dir);
  if (auto s = kubelet.Start(); !s) {
    std::fprintf(stderr, "vfio-gpu demo: kubelet stand-in: %s\n", s.error().message().c_str());
    return kExitProblems;
  }
  auto daemon = plugin::PluginDaemon::Start(config);
  if (!daemon) {
    std::fprintf(stderr, "vfio-gpu demo: %s\n", daemon.error().message().c_str());
    return kExitProblems;
  }
  const std::string res = "nvidia.com/pgpu";
  std::printf("== vfio-gpu-plugin with a kubelet stand-in (%s)\n", config.kubelet_dir.c_str());
  auto reg = kubelet.WaitForRegistration(res, seconds(10));
  if (!reg) {
    std::fprintf(stderr, "vfio-gpu demo: the plugin did not register %s\n", res.c_str());
    return kExitProblems;
  }
  std::printf(
      "Register: version %s, resource %s, endpoint %s, pre_start_required %s, "
      "get_preferred_allocation_available %s\n",
      reg->version().c_str(), reg->resource_name().c_str(), reg->endpoint().c_str(),
      reg->options().pre_start_required() ? "true" : "false",
      reg->options().get_preferred_allocation_available() ? "true" : "false");
  auto devices = kubelet.WaitForDevices(
      res, [](const fakes::DeviceList& l) { return l.size() == 4; }, seconds(10));
  if (!devices) return kExitProblems;
  std::printf("ListAndWatch:\n");
  for (const auto& d : *devices) std::printf("  %s\n", Health(d).c_str());

  std::vector<std::string> all;
  for (const auto& d : *devices) all.push_back(d.id());
  v1beta1::PreferredAllocationResponse pref;
  if (auto st = kubelet.GetPreferredAllocation(res, all, {}, 2, &pref);
      st.ok() && pref.container_responses_size() == 1) {
    std::string ids;
    for (const auto& id : pref.container_responses(0).deviceids()) ids += " " + id;
    std::printf("GetPreferredAllocation(2 of 4):%s   (same NUMA node)\n", ids.c_str());
  }
  v1beta1::AllocateResponse alloc;
  auto st = kubelet.Allocate(res, {"0000:b1:00.0"}, &alloc);
  if (!st.ok() || alloc.container_responses_size() != 1) {
    std::fprintf(stderr, "vfio-gpu demo: Allocate failed: %s\n", st.error_message().c_str());
    return kExitProblems;
  }
  std::printf("Allocate(0000:b1:00.0): cdi_devices =");
  for (const auto& c : alloc.container_responses(0).cdi_devices())
    std::printf(" %s", c.name().c_str());
  std::printf(", envs %d, mounts %d, devices %d (one injection path)\n",
              alloc.container_responses(0).envs_size(), alloc.container_responses(0).mounts_size(),
              alloc.container_responses(0).devices_size());

  std::string q = config.run_dir + "/quarantine/0000:ca:00.0";
  (void)WriteFileAtomic(q, "Xid 79: GPU has fallen off the bus\n");
  std::printf("quarantine 0000:ca:00.0 (as the shim does for a permanent fault):\n");
  devices = kubelet.WaitForDevices(
      res,
      [](const fakes::DeviceList& l) {
        for (const auto& d : l)
          if (d.id() == "0000:ca:00.0") return d.health() == "Unhealthy";
        return false;
      },
      seconds(10));
  if (devices)
    for (const auto& d : *devices) std::printf("  %s\n", Health(d).c_str());
  v1beta1::AllocateResponse refused;
  st = kubelet.Allocate(res, {"0000:ca:00.0"}, &refused);
  std::printf("Allocate(0000:ca:00.0): %s\n\n",
              st.ok() ? "ok (unexpected)" : st.error_message().c_str());
  (*daemon)->Stop();
  kubelet.Stop();
  return kExitOk;
}

}  // namespace

int Demo(Args& args) {
  auto keep = args.Value("keep-dir");  // leave the demo tree in this directory for inspection
  if (auto bad = args.Leftover()) return UsageError("demo", *bad);
  std::string root;
  if (keep) {
    root = *keep;
  } else {
    char tmpl[] = "/tmp/vfio-gpu-demo.XXXXXX";
    if (!mkdtemp(tmpl)) {
      std::perror("vfio-gpu demo: cannot create a temp dir");
      return kExitProblems;
    }
    root = tmpl;
  }
  FakeHost host(root);
  if (auto s = BuildSeedA10Host(host); !s) {
    std::fprintf(stderr, "vfio-gpu demo: %s\n", s.error().message().c_str());
    return kExitProblems;
  }
  NodeConfig config;
  config.roots = host.roots();
  config.cdi_dir = root + "/run/cdi";

  std::printf("== vfio-gpu demo: seed 003's node (4x NVIDIA A10, 10de:2236), no GPU needed\n");
  std::printf("   sysfs root %s, dev root %s\n\n", config.roots.sysfs.c_str(),
              config.roots.dev.c_str());
  auto snap = Scan(config.roots, config.selection);
  if (!snap) {
    std::fprintf(stderr, "vfio-gpu demo: %s\n", snap.error().message().c_str());
    return kExitProblems;
  }
  std::printf("== vfio-gpu scan\n%s\n", RenderTable(*snap).c_str());
  auto specs = BuildCdiSpecs(*snap, config.selection, HostRoots{});
  std::printf("== vfio-gpu cdi generate (as written to /var/run/cdi on a real node)\n");
  for (const auto& s : specs) std::printf("# %s\n%s", s.file_name.c_str(), s.content.c_str());
  std::printf("\n");
  int rc = RunPlugin(root, config);
  if (rc == kExitOk) {
    // The shim runs as its own binary, as containerd runs it: the one beside this `vfio-gpu`.
    auto self = ReadLink("/proc/self/exe");
    if (self && RunShimDemo(root, Dirname(*self), config.roots, *snap, config.cdi_dir) != 0)
      rc = kExitProblems;
  }
  if (!keep) {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  return rc;
}

}  // namespace vfio_gpu::cli
