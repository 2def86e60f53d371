#include "shim-hooks/host_facts.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/files.h"
#include "common/strings.h"
#include "hostmodel/scanner.h"

namespace vfio_gpu {
namespace {

std::optional<DevNum> CharDev(const std::string& path, bool* present) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (present) *present = false;
    return std::nullopt;
  }
  if (present) *present = true;
  if (!S_ISCHR(st.st_mode)) return std::nullopt;
  return DevNum{static_cast<int64_t>(major(st.st_rdev)), static_cast<int64_t>(minor(st.st_rdev))};
}

// "/sys/devices/pci0000:16/0000:16:02.0/0000:17:00.0/vfio-dev/vfio3" -> "0000:17:00.0".
std::optional<std::string> BdfBeforeVfioDev(const std::string& real) {
  auto pos = real.rfind("/vfio-dev/");
  if (pos == std::string::npos) return std::nullopt;
  std::string bdf = Basename(real.substr(0, pos));
  if (!IsBdf(bdf)) return std::nullopt;
  return bdf;
}

// The BDF behind an iommufd cdev, through its device numbers (the spec's, else the host node's).
std::optional<std::string> CdevBdf(const HostRoots& roots, const OciDevice& d,
                                   const std::string& name) {
  std::optional<DevNum> num;
  if (d.major && d.minor) num = DevNum{*d.major, *d.minor};
  if (!num) num = CharDev(roots.VfioCdevNode(name), nullptr);
  if (!num) return std::nullopt;
  auto real =
      RealPath(roots.DevChar(static_cast<unsigned>(num->major), static_cast<unsigned>(num->minor)));
  if (!real) return std::nullopt;
  return BdfBeforeVfioDev(*real);
}

void AddCdev(const HostRoots& roots, const OciDevice& d, const std::string& name,
             HostFacts& facts) {
  std::optional<std::string> bdf = CdevBdf(roots, d, name);
  if (!bdf) {  // no dev numbers: look for the device that owns vfio-dev/<name>
    for (const auto& u : facts.snapshot.units)
      for (const auto& m : u.members)
        if (PathExists(roots.PciDevice(m.bdf) + "/vfio-dev/" + name)) bdf = m.bdf;
  }
  if (!bdf) return;
  facts.cdevs[name] = *bdf;
  if (auto g = LinkBasename(roots.PciDevice(*bdf) + "/iommu_group")) {
    if (auto n = ParseInt(*g)) {
      facts.bdf_groups[*bdf] = static_cast<int>(*n);
      AddGroupFacts(roots, static_cast<int>(*n), facts);
    }
  }
}

}  // namespace

std::optional<DevKey> VfioNodes::OfGroup(int group) const {
  for (const auto& [key, g] : groups)
    if (g == group) return key;
  return std::nullopt;
}

std::optional<DevKey> VfioNodes::OfCdev(const std::string& name) const {
  for (const auto& [key, n] : cdevs)
    if (n == name) return key;
  return std::nullopt;
}

VfioNodes ReadVfioNodes(const HostRoots& roots) {
  VfioNodes out;
  std::string dir = roots.dev + "/vfio";
  if (auto names = ListDir(dir)) {
    for (const auto& n : *names) {
      auto g = ParseInt(n);
      if (!g || *g < 0 || std::to_string(*g) != n) continue;
      if (auto num = CharDev(dir + "/" + n, nullptr)) {
        out.groups[{num->major, num->minor}] = static_cast<int>(*g);
        out.majors.insert(num->major);
      }
    }
  }
  if (auto names = ListDir(dir + "/devices")) {
    for (const auto& n : *names) {
      if (n.rfind("vfio", 0) != 0) continue;
      if (auto num = CharDev(dir + "/devices/" + n, nullptr)) {
        out.cdevs[{num->major, num->minor}] = n;
        out.majors.insert(num->major);
      }
    }
  }
  return out;
}

std::optional<DevKey> NumbersOf(const OciDevice& d) {
  if (!d.major || !d.minor || (d.type != "c" && d.type != "u")) return std::nullopt;
  return DevKey{*d.major, *d.minor};
}

bool MayHoldAliases(const OciSpec& spec, const HostRoots& roots) {
  for (const auto& d : spec.devices)
    if (NumbersOf(d) && !GroupOfDevicePath(d.path, roots) && !CdevOfDevicePath(d.path, roots))
      return true;
  return false;
}

Selection ShimSelection() {
  Selection s;
  s.vendors = {0x10de, 0x1002, 0x8086};
  return s;
}

void AddGroupFacts(const HostRoots& roots, int group, HostFacts& facts) {
  if (group < 0 || facts.groups.count(group)) return;
  GroupFacts gf;
  auto g = ReadIommuGroup(roots, group);
  // A group without devices is as gone as a missing one (the kernel drops it with its last device).
  if (g.ok() && !g->members.empty()) {
    gf.exists = true;
    gf.group = std::move(*g);
    gf.viability = CheckViability(gf.group);
  }
  gf.node = CharDev(roots.VfioGroupNode(group), &gf.node_present);
  facts.groups[group] = std::move(gf);
}

std::optional<int> GroupOfBdf(const HostRoots& roots, const std::string& bdf) {
  return IommuGroupOf(roots, bdf);
}

GroupsOfInterest GroupsNamedBy(const HostRoots& roots, const OciSpec& spec,
                               const std::set<int>& extra_groups, const VfioNodes& nodes) {
  GroupsOfInterest out;
  out.groups = extra_groups;
  auto add_cdev = [&](const OciDevice& d, const std::string& name) {
    auto bdf = CdevBdf(roots, d, name);
    auto cg = bdf ? GroupOfBdf(roots, *bdf) : std::nullopt;
    if (cg)
      out.groups.insert(*cg);
    else
      out.complete = false;
  };
  for (const auto& d : spec.devices) {
    auto num = NumbersOf(d);
    // A group node's numbers may be another group's: both are read, Collect refuses the entry.
    if (num)
      if (auto g = nodes.groups.find(*num); g != nodes.groups.end()) out.groups.insert(g->second);
    if (auto g = GroupOfDevicePath(d.path, roots)) {
      out.groups.insert(*g);
    } else if (auto name = CdevOfDevicePath(d.path, roots)) {
      add_cdev(d, *name);
    } else if (num) {
      if (auto c = nodes.cdevs.find(*num); c != nodes.cdevs.end()) add_cdev(d, c->second);
    }
  }
  return out;
}

Selection ShimSelection(const ShimConfig& cfg) {
  return cfg.selection ? *cfg.selection : ShimSelection();
}

Result<Snapshot> ScanForStart(const HostRoots& roots, const GroupsOfInterest& interest,
                              const Selection& selection) {
  if (!interest.complete) return Scan(roots, selection);
  std::set<std::string> bdfs;
  for (int g : interest.groups)
    if (auto members = ListDir(roots.IommuGroupDevices(g)))
      bdfs.insert(members->begin(), members->end());
  // A group that doesn't exist simply has no unit: Validate says so, naming the group.
  return ScanDevices(roots, selection, std::vector<std::string>(bdfs.begin(), bdfs.end()));
}

HostFacts GatherHostFacts(const HostRoots& roots, Snapshot snapshot, const OciSpec& spec,
                          const std::set<int>& extra_groups, std::optional<VfioNodes> nodes) {
  HostFacts facts;
  facts.snapshot = std::move(snapshot);
  facts.nodes = nodes ? std::move(*nodes) : ReadVfioNodes(roots);
  for (const auto& d : spec.devices) {
    auto num = NumbersOf(d);
    if (num)
      if (auto g = facts.nodes.groups.find(*num); g != facts.nodes.groups.end())
        AddGroupFacts(roots, g->second, facts);
    if (auto g = GroupOfDevicePath(d.path, roots)) {
      AddGroupFacts(roots, *g, facts);
    } else if (auto name = CdevOfDevicePath(d.path, roots)) {
      AddCdev(roots, d, *name, facts);
    } else if (num) {
      if (auto c = facts.nodes.cdevs.find(*num); c != facts.nodes.cdevs.end())
        AddCdev(roots, d, c->second, facts);
    }
  }
  for (int g : extra_groups) AddGroupFacts(roots, g, facts);
  return facts;
}

}  // namespace vfio_gpu
