// The whole of what `vfio-gpu install` writes on a host and `vfio-gpu uninstall` takes back: the
// shim binary, containerd's configuration, Kata's private GPU configuration directory, the CRI-O
// drop-in and the shim's configuration. Planning only reads; nothing is written here.
#pragma once

#include <optional>
#include <string>

#include "cli/install_containerd.h"
#include "cli/install_plan.h"
#include "common/result.h"
#include "hostmodel/host_roots.h"
#include "hostmodel/selection.h"

namespace vfio_gpu::cli {

struct InstallOptions {
  std::string root = "/";                               // the host's root as we see it
  std::string shim_binary;                              // the containerd-shim-vfio-gpu-v2 to copy
  std::optional<ContainerdVersion> containerd_version;  // needed only without a config.toml
  HostRoots roots;      // the host's sysfs: what pcie_root_port is sized from
  Selection selection;  // which devices are GPUs (the node config's keys)
};

// What Kata will cold-plug on this node, each device on a pcie-root-port of its own: every
// non-bridge function of the IOMMU groups of the selected GPUs (a consumer GPU's audio and USB
// functions travel with it) and of the NVSwitches. Counted whatever driver they are bound to now,
// so `install --bind-gpus` (which binds after writing) and a later run agree.
struct PassThroughInventory {
  int gpu_units = 0;       // IOMMU groups holding a selected GPU
  int nvswitch_units = 0;  // IOMMU groups holding NVSwitches and no GPU
  int devices = 0;         // their non-bridge functions
  std::string error;       // the PCI devices could not be listed: nothing was counted
};
PassThroughInventory CountPassThrough(const HostRoots& roots, const Selection& selection);

// Kata's own pcie_root_port in its GPU configuration since 3.25. Never written lower: spare ports
// cost a little guest MMIO space, and a node whose inventory reads small (GPUs not yet visible,
// a scan error) keeps what Kata would have used anyway.
inline constexpr int kMinPcieRootPorts = 8;

// The Kata drop-in with `pcie_root_port` set from the inventory and a comment saying how; the
// shipped value stays (with a comment saying why) when the PCI devices could not be listed.
// Deterministic, so the same inventory plans "unchanged".
std::string SizeKataDropIn(std::string_view dropin, const PassThroughInventory& inventory);

Result<Plan> PlanInstall(const InstallOptions& options);
Result<Plan> PlanUninstall(const std::string& root);

// The header put on our copies of Kata's configurations.
std::string KataCopyHeader(const std::string& name);

}  // namespace vfio_gpu::cli
