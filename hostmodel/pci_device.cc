#include "hostmodel/pci_device.h"

#include "common/files.h"
#include "common/strings.h"

namespace vfio_gpu {

bool PciDevice::IsBridge() const {
  uint32_t sub = class_code >> 8;
  return sub == 0x0604 || sub == 0x0607 || sub == 0x0609;
}

std::string ClassName(uint32_t class_code) {
  switch (class_code >> 8) {
    case 0x0300:
      return "VGA";
    case 0x0302:
      return "3D controller";
    case 0x0380:
      return "display";
    case 0x0403:
      return "audio";
    case 0x0c03:
      return "USB";
    case 0x0c80:
      return "serial bus";
    case 0x0604:
    case 0x0609:
      return "bridge";
    case 0x0680:
      return "other bridge";
    case 0x0200:
      return "ethernet";
    case 0x0108:
      return "NVMe";
    default:
      break;
  }
  switch (class_code >> 16) {
    case 0x01:
      return "storage";
    case 0x02:
      return "network";
    case 0x03:
      return "display";
    case 0x04:
      return "multimedia";
    case 0x06:
      return "bridge";
    case 0x0c:
      return "serial bus";
    default:
      return "class " + Hex(class_code, 6);
  }
}

bool IsVfioDriver(const std::string& driver) {
  return driver == "vfio-pci" || StartsWith(driver, "vfio") || EndsWith(driver, "_vfio_pci") ||
         EndsWith(driver, "-vfio-pci");
}

bool IsViableDriver(const std::string& driver) {
  return driver.empty() || driver == "pci-stub" || IsVfioDriver(driver);
}

namespace {

void Note(PciDevice& d, const std::string& what) {
  if (!d.error.empty()) d.error += "; ";
  d.error += what;
}

// Reads a hex attribute that must fit in `max`; records a problem otherwise.
template <typename T>
void ReadHexAttr(PciDevice& d, const std::string& dir, const char* name, T& out, uint32_t max) {
  auto text = ReadAttr(dir + "/" + name);
  if (!text) {
    Note(d, std::string(name) + " unreadable (" + text.error().message() + ")");
    return;
  }
  auto v = ParseHex(*text);
  if (!v || *v > max) {
    Note(d, std::string(name) + " is malformed (" + Quote(*text) + ")");
    return;
  }
  out = static_cast<T>(*v);
}

}  // namespace

Result<PciDevice> ReadPciDevice(const HostRoots& roots, const std::string& bdf) {
  std::string dir = roots.PciDevice(bdf);
  if (!PathExists(dir))
    return Error("PCI device " + bdf + " does not exist (" + dir + ")", ErrorKind::kNotFound);
  PciDevice d;
  d.bdf = bdf;
  ReadHexAttr(d, dir, "vendor", d.vendor, 0xffff);
  ReadHexAttr(d, dir, "device", d.device, 0xffff);
  ReadHexAttr(d, dir, "class", d.class_code, 0xffffff);
  // Subsystem IDs are informational: absent on some bridges, so absence is not an error.
  if (auto s = ReadAttr(dir + "/subsystem_vendor"); s.ok()) {
    if (auto v = ParseHex(*s); v && *v <= 0xffff) d.subsystem_vendor = static_cast<uint16_t>(*v);
  }
  if (auto s = ReadAttr(dir + "/subsystem_device"); s.ok()) {
    if (auto v = ParseHex(*s); v && *v <= 0xffff) d.subsystem_device = static_cast<uint16_t>(*v);
  }
  // A device that fell off the bus reads all-ones from config space.
  if (d.vendor == 0xffff) d.present = false;

  if (auto n = ReadAttr(dir + "/numa_node"); n.ok()) {
    auto v = ParseInt(*n);
    if (!v) {
      Note(d, "numa_node is malformed (" + Quote(*n) + ")");
    } else if (*v >= 0) {
      d.numa_node = static_cast<int>(*v);
    }
  }
  if (auto drv = LinkBasename(dir + "/driver"); drv.ok()) d.driver = *drv;

  std::string group_link = dir + "/iommu_group";
  if (auto g = ReadLink(group_link); g.ok()) {
    auto num = ParseInt(Basename(*g));
    if (!num || *num < 0) {
      Note(d, "iommu_group link points to " + Quote(*g) + ", not a group number");
    } else if (!PathExists(group_link)) {
      Note(d, "iommu_group link is dangling (group " + std::to_string(*num) + " does not exist)");
    } else {
      d.iommu_group = static_cast<int>(*num);
    }
  }
  if (auto r = ReadAttr(dir + "/reset_method"); r.ok()) d.reset_method = *r;

  // On 6.1 every vfio-pci device has vfio-dev/vfioN; it is an iommufd cdev only if .../dev exists.
  if (auto names = ListDir(dir + "/vfio-dev"); names.ok()) {
    for (const auto& n : *names) {
      if (StartsWith(n, "vfio") && PathExists(dir + "/vfio-dev/" + n + "/dev")) {
        d.vfio_cdev = n;
        break;
      }
    }
  }

  // Upstream path: bus/pci/devices/<bdf> links into devices/pci0000:16/0000:16:01.0/0000:17:00.0.
  if (auto real = RealPath(dir); real.ok()) {
    auto parts = Split(*real, '/');
    bool after_root = false;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      const auto& p = parts[i];
      if (!after_root && StartsWith(p, "pci") && p.size() == 10 && p[7] == ':') {
        d.root_complex = p;
        after_root = true;
      } else if (after_root && IsBdf(p)) {
        d.upstream.push_back(p);
      }
    }
  }
  return d;
}

}  // namespace vfio_gpu
