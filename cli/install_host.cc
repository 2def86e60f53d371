#include "cli/install_host.h"

#include <algorithm>
#include <set>

#include "cli/install_embedded.h"
#include "cli/install_paths.h"
#include "common/files.h"
#include "common/strings.h"
#include "hostmodel/iommu_group.h"
#include "hostmodel/pci_device.h"

namespace vfio_gpu::cli {
namespace {

Result<FileChange> Target(const std::string& root, const std::string& host_path) {
  FileChange c;
  c.host_path = host_path;
  c.path = UnderRoot(root, host_path);
  auto before = ReadIfExists(c.path);
  if (!before) return before.error();
  c.before = std::move(*before);
  return c;
}

Result<std::string> EmbeddedOrFail(std::string_view name) {
  std::string_view text = Embedded(name);
  if (text.empty()) return Error("vfio-gpu was built without runtimeclasses/" + std::string(name));
  return std::string(text);
}

bool IsNvSwitch(const PciDevice& d) {
  return d.vendor == kVendorNvidia && (d.class_code >> 8) == (kClassOtherBridge >> 8);
}

}  // namespace

PassThroughInventory CountPassThrough(const HostRoots& roots, const Selection& selection) {
  PassThroughInventory inv;
  auto names = ListDir(roots.PciDevices());
  if (!names) {
    inv.error = names.error().message();
    return inv;
  }
  std::set<int> gpu_groups, switch_groups;
  for (const auto& bdf : *names) {
    auto d = ReadPciDevice(roots, bdf);
    if (!d || !d->iommu_group || !selection.IsSelectedVendor(d->vendor) ||
        !selection.Allows(d->bdf, d->vendor, d->device))
      continue;
    if (selection.IsGpuClass(d->class_code))
      gpu_groups.insert(*d->iommu_group);
    else if (IsNvSwitch(*d))
      switch_groups.insert(*d->iommu_group);
  }
  for (int g : gpu_groups) switch_groups.erase(g);  // a group with a GPU is the GPU's unit
  inv.gpu_units = static_cast<int>(gpu_groups.size());
  inv.nvswitch_units = static_cast<int>(switch_groups.size());
  for (const auto* groups : {&gpu_groups, &switch_groups}) {
    for (int g : *groups) {
      auto group = ReadIommuGroup(roots, g);
      if (!group) continue;
      inv.devices +=
          static_cast<int>(std::count_if(group->members.begin(), group->members.end(),
                                         [](const GroupMember& m) { return !m.bridge; }));
    }
  }
  return inv;
}

std::string SizeKataDropIn(std::string_view dropin, const PassThroughInventory& inv) {
  std::vector<std::string> lines = Split(dropin, '\n');
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (!StartsWith(line, "pcie_root_port")) {
      out += line;
      if (i + 1 < lines.size()) out += "\n";
      continue;
    }
    if (!inv.error.empty()) {
      out += "# Not sized by `vfio-gpu install`: the PCI devices could not be listed (" +
             inv.error + "); the shipped value.\n";
      out += line;
    } else {
      int ports = std::max(kMinPcieRootPorts, inv.devices);
      out += "# Sized by `vfio-gpu install` from this node's PCI devices: " +
             std::to_string(inv.gpu_units) + " GPU unit(s) and " +
             std::to_string(inv.nvswitch_units) + " NVSwitch unit(s), " +
             std::to_string(inv.devices) +
             " device(s) to pass through\n# (their IOMMU groups' non-bridge functions), at least " +
             std::to_string(kMinPcieRootPorts) + " (Kata's own default): " + std::to_string(ports) +
             ". The next install run resizes it when the inventory changes.\n";
      out += "pcie_root_port = " + std::to_string(ports);
    }
    if (i + 1 < lines.size()) out += "\n";
  }
  return out;
}

std::string KataCopyHeader(const std::string& name) {
  return "# Copied by `vfio-gpu install` from ../" + name +
         " (Kata's own file) and refreshed on every\n"
         "# install run, so Kata upgrades reach it: do not edit it here. The vfio-gpu runtimes "
         "load "
         "this\n"
         "# copy (their ConfigPath) so that config.d/ beside it applies to them alone; put local "
         "settings\n"
         "# in another drop-in there (e.g. config.d/60-local.toml), which install leaves alone.\n";
}

Result<Plan> PlanInstall(const InstallOptions& o) {
  Plan plan;
  auto shim = Target(o.root, kShimBinaryPath);
  if (!shim) return shim.error();
  auto binary = ReadFile(o.shim_binary);
  if (!binary)
    return Error("cannot read the shim binary to install (" + binary.error().message() +
                 "); build containerd-shim-vfio-gpu-v2 or pass --shim-binary PATH");
  shim->after = std::move(*binary);
  shim->mode = 0755;
  shim->force_mode = true;
  shim->binary = true;
  plan.files.push_back(std::move(*shim));

  // The helper travels beside the shim binary (build dir, image). Without it the shim cannot ask
  // the kubelet which GPUs a pod was allocated, and with `authorize: enforce` refuses GPU
  // sandboxes.
  auto helper = Target(o.root, kPodResourcesHelperPath);
  if (!helper) return helper.error();
  std::string helper_source = Dirname(o.shim_binary) + "/" + kPodResourcesHelperName;
  if (auto helper_binary = ReadFile(helper_source); helper_binary.ok()) {
    helper->after = std::move(*helper_binary);
    helper->mode = 0755;
    helper->force_mode = true;
    helper->binary = true;
    plan.files.push_back(std::move(*helper));
  } else {
    plan.warnings.push_back(std::string(kPodResourcesHelperName) + " not found beside the shim (" +
                            helper_source + "): GPU sandboxes will be refused while the shim's " +
                            "authorize mode is enforce; install it to " + kPodResourcesHelperPath);
  }

  auto containerd = PlanContainerdInstall(o.root, o.containerd_version);
  if (!containerd) return containerd.error();
  for (auto& c : *containerd) plan.files.push_back(std::move(c));

  for (const char* name : kKataGpuConfigs) {
    std::string source = std::string(kKataDefaults) + "/" + name;
    auto text = ReadIfExists(UnderRoot(o.root, source));
    if (!text) return text.error();
    auto copy = Target(o.root, std::string(kKataPrivateDir) + "/" + name);
    if (!copy) return copy.error();
    if (*text) {
      copy->after = KataCopyHeader(name) + **text;
    } else {
      copy->after = copy->before;  // keep what we copied before, if anything
      if (std::string(name) == kKataGpuConfig)
        plan.warnings.push_back(
            "Kata's GPU configuration is not installed: " + source +
            " does not exist, so the vfio-gpu runtime cannot start sandboxes; install Kata with "
            "its NVIDIA GPU configuration (kata-deploy) and run vfio-gpu install again");
      else
        copy->note = "not copied: " + source +
                     " does not exist (only its confidential RuntimeClass needs it)";
    }
    if (copy->before || copy->after) plan.files.push_back(std::move(*copy));
  }
  auto kata = Target(o.root, kKataDropIn);
  auto kata_text = EmbeddedOrFail("kata/config.d/50-vfio-gpu.toml");
  if (!kata) return kata.error();
  if (!kata_text) return kata_text.error();
  PassThroughInventory inventory = CountPassThrough(o.roots, o.selection);
  if (!inventory.error.empty())
    plan.warnings.push_back("pcie_root_port in " + std::string(kKataDropIn) +
                            " keeps the shipped value: " + inventory.error);
  kata->after = SizeKataDropIn(*kata_text, inventory);
  plan.files.push_back(std::move(*kata));

  if (IsDir(UnderRoot(o.root, kCrioDir))) {
    auto crio = Target(o.root, kCrioDropIn);
    auto crio_text = EmbeddedOrFail("crio/50-vfio-gpu.conf");
    if (!crio) return crio.error();
    if (!crio_text) return crio_text.error();
    crio->after = std::move(*crio_text);
    crio->restart = Restart::kCrio;
    plan.files.push_back(std::move(*crio));
  }

  auto shim_json = Target(o.root, kShimConfig);
  auto shim_text = EmbeddedOrFail("shim/shim.json");
  if (!shim_json) return shim_json.error();
  if (!shim_text) return shim_text.error();
  if (shim_json->before) {  // the operator's from now on: install only ever creates it
    shim_json->after = shim_json->before;
    if (*shim_json->before != *shim_text) shim_json->note = "kept: edited by the operator";
  } else {
    shim_json->after = std::move(*shim_text);
  }
  plan.files.push_back(std::move(*shim_json));
  return plan;
}

Result<Plan> PlanUninstall(const std::string& root) {
  Plan plan;
  // Binaries are marked so that a dry run says they go instead of printing their bytes.
  auto add_removal = [&](const std::string& host_path, bool binary = false) -> Status {
    auto c = Target(root, host_path);
    if (!c) return c.error();
    c->binary = binary;
    if (c->before) plan.files.push_back(std::move(*c));
    return Status::Ok();
  };
  if (auto s = add_removal(kShimBinaryPath, true); !s) return s.error();
  if (auto s = add_removal(kPodResourcesHelperPath, true); !s) return s.error();
  auto containerd = PlanContainerdUninstall(root);
  if (!containerd) return containerd.error();
  for (auto& c : *containerd)
    if (c.before) plan.files.push_back(std::move(c));
  for (const char* name : kKataGpuConfigs)
    if (auto s = add_removal(std::string(kKataPrivateDir) + "/" + name); !s) return s.error();
  if (auto s = add_removal(kKataDropIn); !s) return s.error();
  if (auto s = add_removal(kCrioDropIn); !s) return s.error();

  auto shim_json = Target(root, kShimConfig);
  if (!shim_json) return shim_json.error();
  if (shim_json->before) {
    if (*shim_json->before != Embedded("shim/shim.json")) {
      shim_json->after = shim_json->before;
      shim_json->note = "kept: edited by the operator; remove it yourself when no longer wanted";
    }
    plan.files.push_back(std::move(*shim_json));
  }
  plan.remove_dirs = {kKataPrivateDropInDir, kKataPrivateDir, kShimConfigDir};
  return plan;
}

}  // namespace vfio_gpu::cli
