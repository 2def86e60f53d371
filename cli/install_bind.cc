#include "cli/install_bind.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "common/files.h"
#include "hostmodel/iommu_group.h"
#include "hostmodel/pci_device.h"

namespace vfio_gpu::cli {

Status FileSysfsWriter::Write(const std::string& path, const std::string& value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return Error("cannot open " + path + " for writing: " + std::strerror(errno));
  ssize_t n = ::write(fd, value.data(), value.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size()))
    return Error("writing \"" + value + "\" to " + path +
                 " failed: " + (n < 0 ? std::strerror(err) : "short write"));
  return Status::Ok();
}

namespace {

std::string DriverOf(const HostRoots& roots, const std::string& bdf) {
  auto d = LinkBasename(roots.PciDevice(bdf) + "/driver");
  return d ? *d : "";
}

// Devices whose loss could cut the node off from its network or disks.
bool HostCritical(uint32_t class_code) {
  uint32_t base = class_code >> 16;
  return base == 0x01 || base == 0x02;
}

BindAction Bind(const HostRoots& roots, BindAction a, SysfsWriter& w, bool dry_run) {
  if (IsVfioDriver(a.was)) return a;
  if (dry_run) {
    a.result = BindAction::Result::kWouldBind;
    return a;
  }
  std::string dev = roots.PciDevice(a.bdf);
  Status s = w.Write(dev + "/driver_override", "vfio-pci");
  if (s && !a.was.empty()) s = w.Write(dev + "/driver/unbind", a.bdf);
  if (s) s = w.Write(roots.sysfs + "/bus/pci/drivers_probe", a.bdf);
  std::string now = DriverOf(roots, a.bdf);
  if (!s) {
    a.result = BindAction::Result::kFailed;
    a.message = s.error().message();
  } else if (!IsVfioDriver(now)) {
    a.result = BindAction::Result::kFailed;
    a.message = (now.empty() ? std::string("no driver took it") : "it is bound to " + now) +
                " after drivers_probe; load vfio-pci (modprobe vfio-pci) and run again";
  } else {
    a.result = BindAction::Result::kBound;
  }
  return a;
}

}  // namespace

std::vector<BindAction> BindGpus(const HostRoots& roots, const Selection& selection,
                                 SysfsWriter& writer, bool dry_run) {
  std::vector<BindAction> out;
  auto names = ListDir(roots.PciDevices());
  if (!names) {
    out.push_back({"", "", -1, "", BindAction::Result::kFailed,
                   "cannot list PCI devices: " + names.error().message()});
    return out;
  }
  std::map<std::string, BindAction> todo;  // by BDF: each device once, in PCI order
  for (const auto& bdf : *names) {
    auto dev = ReadPciDevice(roots, bdf);
    if (!dev || !selection.IsSelectedVendor(dev->vendor) ||
        !selection.IsGpuClass(dev->class_code) ||
        !selection.Allows(dev->bdf, dev->vendor, dev->device))
      continue;
    if (!dev->iommu_group) {
      out.push_back({dev->bdf, "GPU", -1, dev->driver, BindAction::Result::kFailed,
                     "it has no IOMMU group: turn the IOMMU on (intel_iommu=on or amd_iommu=on on "
                     "the kernel command line, VT-d/AMD-Vi in the firmware) and reboot"});
      continue;
    }
    auto group = ReadIommuGroup(roots, *dev->iommu_group);
    if (!group) {
      out.push_back({dev->bdf, "GPU", *dev->iommu_group, dev->driver, BindAction::Result::kFailed,
                     group.error().message()});
      continue;
    }
    // A member we never unbind keeps the whole group from passing through, so the rest of it is
    // left alone too: binding the GPU would only take it from the host for nothing.
    auto blocks = [](const GroupMember& m) {
      return !m.bridge && !IsViableDriver(m.driver) && HostCritical(m.class_code);
    };
    auto blocker = std::find_if(group->members.begin(), group->members.end(), blocks);
    for (const auto& m : group->members) {
      if (m.bridge || todo.count(m.bdf)) continue;
      BindAction a{m.bdf,
                   m.bdf == dev->bdf ? "GPU" : "group mate of " + dev->bdf,
                   group->number,
                   m.driver,
                   BindAction::Result::kAlready,
                   ""};
      if (blocks(m)) {
        a.result = BindAction::Result::kRefused;
        a.message = ClassName(m.class_code) + " controller on " + m.driver +
                    " shares the IOMMU group; not unbinding it automatically (the node could "
                    "lose its network or disks): move it to another slot or bind it yourself";
      } else if (blocker != group->members.end() && !IsVfioDriver(m.driver)) {
        const GroupMember& b = *blocker;
        a.result = BindAction::Result::kRefused;
        a.message = "not bound: " + b.bdf + " (" + ClassName(b.class_code) + " controller on " +
                    b.driver + ") shares IOMMU group " + std::to_string(group->number) +
                    " and is never unbound automatically, so the group cannot be passed through; "
                    "move the GPU or " +
                    b.bdf + " to another slot, or bind " + b.bdf +
                    " to vfio-pci yourself, then run vfio-gpu install --bind-gpus again";
      }
      todo.emplace(m.bdf, std::move(a));
    }
  }
  for (auto& [bdf, a] : todo) {
    if (a.result == BindAction::Result::kRefused) {
      out.push_back(std::move(a));
      continue;
    }
    out.push_back(Bind(roots, std::move(a), writer, dry_run));
  }
  return out;
}

std::string Describe(const BindAction& a) {
  std::string who = a.bdf + " (" + a.role +
                    (a.group >= 0 ? ", IOMMU group " + std::to_string(a.group) : "") + ")";
  std::string was = a.was.empty() ? "no driver" : a.was;
  switch (a.result) {
    case BindAction::Result::kAlready:
      return "unchanged  " + who + " already on " + a.was;
    case BindAction::Result::kBound:
      return "bound      " + who + " to vfio-pci (was " + was + ")";
    case BindAction::Result::kWouldBind:
      return "would bind " + who + " to vfio-pci (now " + was + ")";
    case BindAction::Result::kFailed:
      return "FAILED     " + who + ": " + a.message;
    case BindAction::Result::kRefused:
      return "REFUSED    " + who + ": " + a.message;
  }
  return who;
}

}  // namespace vfio_gpu::cli
