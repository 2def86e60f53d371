#include "shim-hooks/host_facts.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/files.h"
#include "common/strings.h"

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

void AddCdev(const HostRoots& roots, const OciDevice& d, const std::string& name,
             HostFacts& facts) {
  std::optional<std::string> bdf;
  std::optional<DevNum> num;
  if (d.major && d.minor) num = DevNum{*d.major, *d.minor};
  if (!num) num = CharDev(roots.VfioCdevNode(name), nullptr);
  if (num) {
    if (auto real = RealPath(
            roots.DevChar(static_cast<unsigned>(num->major), static_cast<unsigned>(num->minor))))
      bdf = BdfBeforeVfioDev(*real);
  }
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

Selection ShimSelection() {
  Selection s;
  s.vendors = {0x10de, 0x1002, 0x8086};
  return s;
}

void AddGroupFacts(const HostRoots& roots, int group, HostFacts& facts) {
  if (group < 0 || facts.groups.count(group)) return;
  GroupFacts gf;
  auto g = ReadIommuGroup(roots, group);
  if (g.ok()) {
    gf.exists = true;
    gf.group = std::move(*g);
    gf.viability = CheckViability(gf.group);
  }
  gf.node = CharDev(roots.VfioGroupNode(group), &gf.node_present);
  facts.groups[group] = std::move(gf);
}

HostFacts GatherHostFacts(const HostRoots& roots, Snapshot snapshot, const OciSpec& spec,
                          const std::set<int>& extra_groups) {
  HostFacts facts;
  facts.snapshot = std::move(snapshot);
  for (const auto& d : spec.devices) {
    if (auto g = GroupOfDevicePath(d.path, roots))
      AddGroupFacts(roots, *g, facts);
    else if (auto name = CdevOfDevicePath(d.path, roots))
      AddCdev(roots, d, *name, facts);
  }
  for (int g : extra_groups) AddGroupFacts(roots, g, facts);
  return facts;
}

}  // namespace vfio_gpu
