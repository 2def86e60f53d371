#include "hostmodel/scanner.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "common/files.h"
#include "common/strings.h"
#include "hostmodel/naming.h"

namespace vfio_gpu {
namespace {

bool IsNvSwitch(const PciIdentity& id) {
  return id.vendor == kVendorNvidia && (id.class_code >> 8) == (kClassOtherBridge >> 8);
}

std::string CdevOf(const HostRoots& roots, const std::string& bdf) {
  std::string dir = roots.PciDevice(bdf) + "/vfio-dev";
  auto names = ListDir(dir);
  if (!names) return "";
  for (const auto& n : *names)
    if (StartsWith(n, "vfio") && PathExists(dir + "/" + n + "/dev")) return n;
  return "";
}

std::string SkipReason(const PciDevice& d) {
  std::string what = ClassName(d.class_code);
  if (d.driver.empty())
    return what + " " + d.bdf +
           " is not bound to vfio-pci (no driver); bind it to vfio-pci to pass it through";
  return what + " " + d.bdf + " is bound to " + d.driver +
         ", not vfio-pci; bind it to vfio-pci to pass it through";
}

// One order for every snapshot, however it was built: units by ID, entries by BDF.
void SortSnapshot(Snapshot& s) {
  std::sort(s.units.begin(), s.units.end(),
            [](const Unit& a, const Unit& b) { return a.id < b.id; });
  std::sort(s.skipped.begin(), s.skipped.end(),
            [](const Skipped& a, const Skipped& b) { return a.bdf < b.bdf; });
  std::stable_sort(s.problems.begin(), s.problems.end(),
                   [](const DeviceProblem& a, const DeviceProblem& b) { return a.bdf < b.bdf; });
}

}  // namespace

Result<Snapshot> Scan(const HostRoots& roots, const Selection& selection) {
  auto names = ListDir(roots.PciDevices());
  if (!names) return names.error().Wrap("cannot scan PCI devices");
  return ScanDevices(roots, selection, *names);
}

Snapshot ScanDevices(const HostRoots& roots, const Selection& selection,
                     const std::vector<std::string>& bdfs) {
  Snapshot snap;
  // Candidates (GPUs and NVSwitches we may hand out), grouped by IOMMU group.
  std::map<int, std::vector<PciDevice>> by_group;
  std::map<int, bool> group_is_gpu;

  for (const auto& bdf : bdfs) {
    if (!IsBdf(bdf)) {
      snap.problems.push_back({bdf, "not a PCI address; ignored"});
      continue;
    }
    // Class first: most functions on a node are not display devices, and one read rules them out.
    std::string dir = roots.PciDevice(bdf);
    // A function named by a caller that has left the bus since (a targeted rescan after a
    // remove uevent) is simply not there, as in a fresh listing. A dangling entry still counts.
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 && errno == ENOENT) continue;
    auto cls_text = ReadAttr(dir + "/class");
    auto cls = cls_text.ok() ? ParseHex(*cls_text) : std::nullopt;
    if (!cls || *cls > 0xffffff) {
      auto d = ReadPciDevice(roots, bdf);
      snap.problems.push_back({bdf, d.ok() && !d->error.empty() ? d->error : "class unreadable"});
      continue;
    }
    bool gpu_class = selection.IsGpuClass(*cls);
    bool switch_class = (*cls >> 8) == (kClassOtherBridge >> 8);
    bool lost = *cls == 0xffffff;  // config space of a device that fell off the bus reads all-ones
    if (!gpu_class && !switch_class && !lost) continue;
    auto ven_text = ReadAttr(dir + "/vendor");
    auto ven = ven_text.ok() ? ParseHex(*ven_text) : std::nullopt;
    if (!ven || *ven > 0xffff) {
      auto d = ReadPciDevice(roots, bdf);
      snap.problems.push_back({bdf, d.ok() && !d->error.empty() ? d->error : "vendor unreadable"});
      continue;
    }
    if (*ven == 0xffff) {
      snap.problems.push_back(
          {bdf,
           "config space reads 0xffff: the device fell off the bus; check its link and power"});
      continue;
    }
    PciIdentity id{static_cast<uint16_t>(*ven), *cls, true};
    bool gpu = gpu_class && selection.IsSelectedVendor(id.vendor);
    bool nvswitch = !gpu && switch_class && selection.IsSelectedVendor(id.vendor) && IsNvSwitch(id);
    if (!gpu && !nvswitch) continue;

    auto dev = ReadPciDevice(roots, bdf);
    if (!dev) {
      snap.problems.push_back({bdf, dev.error().message()});
      continue;
    }
    if (!selection.Allows(bdf, dev->vendor, dev->device)) {
      snap.skipped.push_back(
          {bdf, ClassName(dev->class_code) + " " + bdf + " (" + Hex(dev->vendor, 4) + ":" +
                    Hex(dev->device, 4) +
                    ") is excluded by the allow/deny lists of the configuration"});
      continue;
    }
    if (!dev->error.empty()) snap.problems.push_back({bdf, dev->error});
    if (!dev->iommu_group) {
      // A link that exists but leads nowhere is a broken entry (already in problems), not an IOMMU
      // that is off.
      bool dangling = ReadLink(roots.PciDevice(bdf) + "/iommu_group").ok();
      snap.skipped.push_back(
          {bdf, ClassName(dev->class_code) + " " + bdf +
                    (dangling ? " has a broken iommu_group link (" + dev->error +
                                    "); rebind it or reboot"
                              : " has no IOMMU group; enable the IOMMU (intel_iommu=on or "
                                "amd_iommu=on) and reboot")});
      continue;
    }
    int g = *dev->iommu_group;
    group_is_gpu[g] = group_is_gpu[g] || gpu;
    by_group[g].push_back(std::move(*dev));
  }

  for (auto& [g, devs] : by_group) {
    bool any_vfio = std::any_of(devs.begin(), devs.end(),
                                [](const PciDevice& d) { return IsVfioDriver(d.driver); });
    if (!any_vfio) {
      for (const auto& d : devs) snap.skipped.push_back({d.bdf, SkipReason(d)});
      continue;
    }
    // In a GPU group, NVSwitches (if any) are plain members; the unit is the GPUs'.
    bool gpu_group = group_is_gpu[g];
    std::vector<const PciDevice*> primaries;
    for (const auto& d : devs) {
      bool is_nvswitch = (d.class_code >> 8) == (kClassOtherBridge >> 8);
      if (gpu_group == !is_nvswitch) primaries.push_back(&d);
    }
    std::sort(primaries.begin(), primaries.end(),
              [](const PciDevice* a, const PciDevice* b) { return a->bdf < b->bdf; });
    const PciDevice& lead = *primaries.front();

    Unit u;
    u.id = lead.bdf;
    u.kind = gpu_group ? UnitKind::kGpu : UnitKind::kNvSwitch;
    u.resource = gpu_group ? GpuResourceName(selection, lead.vendor, lead.device)
                           : selection.nvswitch_resource_name;
    u.iommu_group = g;
    u.numa_node = lead.numa_node;
    u.vendor = lead.vendor;
    u.device = lead.device;
    u.model = ModelName(lead.vendor, lead.device);
    u.root_complex = lead.root_complex;
    u.pcie_path = lead.upstream;
    u.reset_method = lead.reset_method;
    for (const auto* p : primaries) {
      u.gpus.push_back(p->bdf);
      u.present = u.present && p->present;
    }
    u.group_node_present = PathExists(roots.VfioGroupNode(g));

    auto group = ReadIommuGroup(roots, g);
    if (!group) {
      u.viable = false;
      u.reason = group.error().message() + "; the IOMMU group link of " + lead.bdf + " is stale";
    } else {
      u.members = group->members;
      Viability v = CheckViability(*group);
      u.viable = v.viable;
      u.reason = v.reason;
      for (const auto& m : u.members) {
        if (m.bridge) continue;
        auto known = std::find_if(devs.begin(), devs.end(),
                                  [&](const PciDevice& d) { return d.bdf == m.bdf; });
        std::string c = known != devs.end() ? known->vfio_cdev : CdevOf(roots, m.bdf);
        if (!c.empty()) u.cdevs.push_back(c);
      }
    }
    snap.units.push_back(std::move(u));
  }
  SortSnapshot(snap);
  return snap;
}

std::vector<std::string> FunctionsToReread(const HostRoots& roots, const Snapshot& previous,
                                           const std::set<int>& groups,
                                           const std::set<std::string>& bdfs) {
  std::set<int> g = groups;
  for (const auto& b : bdfs)
    if (auto now = IommuGroupOf(roots, b)) g.insert(*now);
  for (const auto& u : previous.units)
    for (const auto& m : u.members)
      if (bdfs.count(m.bdf)) g.insert(u.iommu_group);
  std::set<std::string> out(bdfs.begin(), bdfs.end());
  for (int n : g)
    if (auto members = ListDir(roots.IommuGroupDevices(n)))
      out.insert(members->begin(), members->end());
  for (const auto& u : previous.units)
    if (g.count(u.iommu_group))
      for (const auto& m : u.members) out.insert(m.bdf);
  return {out.begin(), out.end()};
}

Snapshot MergeRescan(const Snapshot& previous, Snapshot part,
                     const std::vector<std::string>& reread) {
  std::set<std::string> touched(reread.begin(), reread.end());
  auto touches = [&](const Unit& u) {
    return std::any_of(u.members.begin(), u.members.end(),
                       [&](const GroupMember& m) { return touched.count(m.bdf) > 0; });
  };
  Snapshot out = std::move(part);
  for (const auto& u : previous.units)
    if (!touches(u)) out.units.push_back(u);
  for (const auto& s : previous.skipped)
    if (!touched.count(s.bdf)) out.skipped.push_back(s);
  for (const auto& p : previous.problems)
    if (!touched.count(p.bdf)) out.problems.push_back(p);
  SortSnapshot(out);
  return out;
}

}  // namespace vfio_gpu
