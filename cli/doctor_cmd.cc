#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/install_checks.h"
#include "cli/install_paths.h"
#include "common/files.h"
#include "hostmodel/scanner.h"

namespace vfio_gpu::cli {
namespace {

using Check = DoctorCheck;

std::vector<Check> HostChecks(const NodeConfig& c) {
  std::vector<Check> checks;
  const auto& r = c.roots;
  auto groups = ListDir(r.IommuGroups());
  bool iommu = groups.ok() && !groups->empty();
  checks.push_back({iommu, "IOMMU enabled (" + r.IommuGroups() + " has groups)",
                    "add intel_iommu=on (Intel) or amd_iommu=on (AMD) to the kernel command line, "
                    "enable VT-d/AMD-Vi in the firmware, and reboot"});
  bool vfio = IsDir(r.sysfs + "/module/vfio");
  bool vfio_pci = IsDir(r.sysfs + "/module/vfio_pci");
  bool type1 = IsDir(r.sysfs + "/module/vfio_iommu_type1") || IsDir(r.sysfs + "/module/iommufd");
  checks.push_back(
      {vfio && vfio_pci, "vfio and vfio-pci modules loaded",
       "modprobe vfio-pci, and add vfio-pci to /etc/modules-load.d/ so it loads at boot"});
  checks.push_back({type1, "VFIO IOMMU backend loaded (vfio_iommu_type1 or iommufd)",
                    "modprobe vfio_iommu_type1"});
  checks.push_back({PathExists(r.VfioContainerNode()), r.VfioContainerNode() + " exists",
                    "load vfio (modprobe vfio-pci) so the kernel creates it"});

  auto snap = Scan(r, c.selection);
  if (!snap) {
    checks.push_back({false, "PCI devices readable", snap.error().message()});
    return checks;
  }
  checks.push_back(
      {!snap->units.empty(), "at least one GPU bound to vfio-pci",
       "bind the GPUs to vfio-pci: echo vfio-pci > /sys/bus/pci/devices/<BDF>/driver_override; "
       "echo <BDF> > /sys/bus/pci/devices/<BDF>/driver/unbind; echo <BDF> > "
       "/sys/bus/pci/drivers_probe"});
  for (const auto& u : snap->units) {
    checks.push_back(
        {u.viable, "unit " + u.id + " (IOMMU group " + std::to_string(u.iommu_group) + ") viable",
         u.reason});
    if (u.viable)
      checks.push_back({u.group_node_present,
                        "unit " + u.id + " group node " + r.VfioGroupNode(u.iommu_group),
                        "the group has no /dev/vfio node; rebind its GPU to vfio-pci"});
  }
  for (const auto& s : snap->skipped)
    checks.push_back({false, "GPU " + s.bdf + " usable", s.reason});
  for (const auto& p : snap->problems)
    checks.push_back({false, "sysfs entry of " + p.bdf + " readable", p.error});
  return checks;
}

}  // namespace

int Doctor(Args& args) {
  // --host-root reads everything under one root; --sysfs-root / --dev-root alone (a fake tree)
  // check only the GPU side, as before the runtime checks existed.
  auto host_root = args.Value("host-root");
  auto sysfs = args.Value("sysfs-root");
  auto dev = args.Value("dev-root");
  auto config_path = args.Value("config");
  auto version = args.Value("containerd-version");
  if (auto bad = args.Leftover()) return UsageError("doctor", *bad);
  RuntimeCheckOptions runtime;
  if (version) {
    runtime.containerd_version = ParseContainerdVersion(*version);
    if (!runtime.containerd_version)
      return UsageError("doctor", "--containerd-version \"" + *version +
                                      "\" is not a version like 1.7.27 or 2.1.4 (see `containerd "
                                      "--version`)");
  }
  NodeConfig config;
  if (config_path) {
    auto c = ReadNodeConfig(*config_path);
    if (!c) return UsageError("doctor", c.error().message());
    config = std::move(*c);
  }
  std::string root = host_root.value_or("/");
  if (host_root) {
    config.roots.sysfs = UnderRoot(root, "/sys");
    config.roots.dev = UnderRoot(root, "/dev");
  }
  if (sysfs) config.roots.sysfs = *sysfs;
  if (dev) config.roots.dev = *dev;
  if (!IsDir(config.roots.sysfs))
    return UsageError("doctor",
                      "sysfs root " + config.roots.sysfs +
                          " is not a directory; pass --sysfs-root DIR or --host-root DIR");
  auto checks = HostChecks(config);
  runtime.root = root;
  runtime.cdi_dir = config.cdi_dir;
  runtime.needs_cdi = config.allocate_strategy != AllocateStrategy::kDeviceSpecs;
  if (host_root || (!sysfs && !dev))
    for (auto& c : RuntimeChecks(runtime)) checks.push_back(std::move(c));
  int failed = 0;
  for (const auto& c : checks) {
    if (c.ok) {
      std::printf("ok    %s\n", c.what.c_str());
    } else {
      ++failed;
      std::printf("FAIL  %s\n      fix: %s\n", c.what.c_str(), c.fix.c_str());
    }
  }
  std::printf("%s\n", failed ? (std::to_string(failed) + " problem(s) found").c_str()
                             : "node is ready for GPU passthrough");
  return failed ? kExitProblems : kExitOk;
}

}  // namespace vfio_gpu::cli
