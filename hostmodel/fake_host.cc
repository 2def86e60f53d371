#include "hostmodel/fake_host.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/files.h"
#include "common/strings.h"

namespace vfio_gpu {
namespace {

namespace fs = std::filesystem;

Status Write(const std::string& path, const std::string& content) {
  if (auto s = MakeDirs(Dirname(path)); !s) return s;
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return Error("cannot write " + path + ": " + std::strerror(errno));
  std::fwrite(content.data(), 1, content.size(), f);
  std::fclose(f);
  return Status::Ok();
}

// Relative symlink like sysfs makes them.
Status Link(const std::string& target, const std::string& link) {
  if (auto s = MakeDirs(Dirname(link)); !s) return s;
  std::error_code ec;
  fs::path rel = fs::relative(target, Dirname(link), ec);
  if (ec) return Error("cannot relate " + target + " to " + link + ": " + ec.message());
  ::unlink(link.c_str());
  if (::symlink(rel.c_str(), link.c_str()) != 0)
    return Error("cannot link " + link + ": " + std::strerror(errno));
  return Status::Ok();
}

std::string HexAttr(uint32_t v, int width) {
  return "0x" + Hex(v, width) + "\n";
}

std::string ConfigSpace(const FakeDevice& d) {
  std::string c(d.pcie ? 4096 : 256, '\0');
  c[0] = static_cast<char>(d.vendor & 0xff);
  c[1] = static_cast<char>(d.vendor >> 8);
  c[2] = static_cast<char>(d.device & 0xff);
  c[3] = static_cast<char>(d.device >> 8);
  c[9] = static_cast<char>(d.class_code & 0xff);
  c[10] = static_cast<char>((d.class_code >> 8) & 0xff);
  c[11] = static_cast<char>(d.class_code >> 16);
  uint32_t sub = d.class_code >> 8;
  c[14] = (sub == 0x0604 || sub == 0x0609) ? 1 : 0;  // header type
  return c;
}

#define RETURN_IF_ERROR(expr)    \
  do {                           \
    if (auto _s = (expr); !_s) { \
      return _s;                 \
    }                            \
  } while (0)

}  // namespace

FakeHost::FakeHost(const std::string& root) : root_(root) {
  roots_.sysfs = root + "/sys";
  roots_.dev = root + "/dev";
  (void)MakeDirs(roots_.PciDevices());
  (void)MakeDirs(roots_.IommuGroups());
  (void)MakeDirs(roots_.sysfs + "/bus/pci/drivers");
  (void)MakeDirs(roots_.sysfs + "/dev/char");
  (void)MakeDirs(roots_.dev + "/vfio");
  (void)Write(roots_.VfioContainerNode(), "");
}

std::string FakeHost::DeviceDir(const std::string& bdf) const {
  for (const auto& d : devices_) {
    if (d.bdf != bdf) continue;
    if (StartsWith(d.parent, "pci")) return roots_.sysfs + "/devices/" + d.parent + "/" + bdf;
    return DeviceDir(d.parent) + "/" + bdf;
  }
  return "";
}

Status FakeHost::Add(const FakeDevice& d) {
  if (!StartsWith(d.parent, "pci") && DeviceDir(d.parent).empty())
    return Error("fake host: parent " + d.parent + " of " + d.bdf + " was not added");
  devices_.push_back(d);
  std::string dir = DeviceDir(d.bdf);
  RETURN_IF_ERROR(MakeDirs(dir));
  RETURN_IF_ERROR(Write(dir + "/vendor", HexAttr(d.vendor, 4)));
  RETURN_IF_ERROR(Write(dir + "/device", HexAttr(d.device, 4)));
  RETURN_IF_ERROR(Write(dir + "/subsystem_vendor", HexAttr(d.subsystem_vendor, 4)));
  RETURN_IF_ERROR(Write(dir + "/subsystem_device", HexAttr(d.subsystem_device, 4)));
  RETURN_IF_ERROR(Write(dir + "/class", HexAttr(d.class_code, 6)));
  RETURN_IF_ERROR(Write(dir + "/numa_node", std::to_string(d.numa_node) + "\n"));
  RETURN_IF_ERROR(Write(dir + "/config", ConfigSpace(d)));
  RETURN_IF_ERROR(Write(dir + "/driver_override", "(null)\n"));
  if (!d.reset_method.empty()) RETURN_IF_ERROR(Write(dir + "/reset_method", d.reset_method + "\n"));
  RETURN_IF_ERROR(Link(dir, roots_.PciDevice(d.bdf)));
  if (d.iommu_group >= 0) {
    std::string gdir = roots_.IommuGroups() + "/" + std::to_string(d.iommu_group);
    RETURN_IF_ERROR(MakeDirs(gdir + "/devices"));
    RETURN_IF_ERROR(Link(gdir, dir + "/iommu_group"));
    RETURN_IF_ERROR(Link(dir, gdir + "/devices/" + d.bdf));
  }
  if (d.cdev >= 0) {
    std::string name = "vfio" + std::to_string(d.cdev);
    RETURN_IF_ERROR(
        Write(dir + "/vfio-dev/" + name + "/dev", "511:" + std::to_string(d.cdev) + "\n"));
    RETURN_IF_ERROR(
        Link(dir + "/vfio-dev/" + name, roots_.DevChar(511, static_cast<unsigned>(d.cdev))));
    RETURN_IF_ERROR(Write(roots_.VfioCdevNode(name), ""));
  }
  RETURN_IF_ERROR(SetDriver(d.bdf, d.driver));
  return Status::Ok();
}

Status FakeHost::SetDriver(const std::string& bdf, const std::string& driver) {
  auto it = std::find_if(devices_.begin(), devices_.end(),
                         [&](const FakeDevice& d) { return d.bdf == bdf; });
  if (it == devices_.end()) return Error("fake host: no device " + bdf);
  it->driver = driver;
  std::string link = DeviceDir(bdf) + "/driver";
  ::unlink(link.c_str());
  if (!driver.empty()) {
    std::string ddir = roots_.sysfs + "/bus/pci/drivers/" + driver;
    RETURN_IF_ERROR(MakeDirs(ddir));
    RETURN_IF_ERROR(Link(ddir, link));
  }
  return it->iommu_group >= 0 ? SyncGroupNode(it->iommu_group) : Status::Ok();
}

Status FakeHost::SyncGroupNode(int group) {
  bool vfio = std::any_of(devices_.begin(), devices_.end(), [&](const FakeDevice& d) {
    return d.iommu_group == group && IsVfioDriver(d.driver);
  });
  return vfio ? AddGroupNode(group) : RemoveGroupNode(group);
}

Status FakeHost::SetAttr(const std::string& bdf, const std::string& name,
                         const std::string& value) {
  std::string dir = DeviceDir(bdf);
  if (dir.empty()) return Error("fake host: no device " + bdf);
  return Write(dir + "/" + name, value);
}

Status FakeHost::Remove(const std::string& bdf) {
  auto it = std::find_if(devices_.begin(), devices_.end(),
                         [&](const FakeDevice& d) { return d.bdf == bdf; });
  if (it == devices_.end()) return Error("fake host: no device " + bdf);
  std::string dir = DeviceDir(bdf);
  int group = it->iommu_group;
  std::error_code ec;
  fs::remove_all(dir, ec);
  ::unlink(roots_.PciDevice(bdf).c_str());
  devices_.erase(it);
  if (group >= 0) {
    ::unlink((roots_.IommuGroupDevices(group) + "/" + bdf).c_str());
    return SyncGroupNode(group);
  }
  return Status::Ok();
}

Status FakeHost::RemoveGroupNode(int group) {
  return RemoveFile(roots_.VfioGroupNode(group));
}
Status FakeHost::AddGroupNode(int group) {
  return Write(roots_.VfioGroupNode(group), "");
}

FakeDevice MakeFakeDevice(const std::string& bdf, const std::string& parent, int group,
                          uint32_t class_code, const std::string& driver, uint16_t vendor) {
  FakeDevice d;
  d.bdf = bdf;
  d.parent = parent;
  d.iommu_group = group;
  d.class_code = class_code;
  d.driver = driver;
  d.vendor = vendor;
  return d;
}

namespace {

FakeDevice RootPort(const std::string& bdf, const std::string& rc, int group, int numa) {
  FakeDevice d;
  d.bdf = bdf;
  d.parent = rc;
  d.vendor = 0x8086;
  d.device = 0x352a;
  d.subsystem_vendor = 0x8086;
  d.subsystem_device = 0x0000;
  d.class_code = kClassPciBridge;
  d.driver = "pcieport";
  d.iommu_group = group;
  d.numa_node = numa;
  d.reset_method = "";
  return d;
}

FakeDevice SwitchPort(const std::string& bdf, const std::string& parent, int group, int numa,
                      uint16_t device) {
  FakeDevice d = RootPort(bdf, parent, group, numa);
  d.vendor = 0x1000;  // Broadcom PEX switches on HGX baseboards
  d.device = device;
  d.subsystem_vendor = 0x1000;
  return d;
}

FakeDevice Gpu(const std::string& bdf, const std::string& parent, int group, int numa,
               uint16_t device = 0x2236) {
  FakeDevice d = MakeFakeDevice(bdf, parent, group);
  d.device = device;
  d.numa_node = numa;
  return d;
}

}  // namespace

Status BuildSeedA10Host(FakeHost& host) {
  struct Slot {
    const char* rc;
    const char* port;
    const char* gpu;
    int port_group;
    int gpu_group;
    int numa;
  };
  const Slot slots[] = {
      {"pci0000:16", "0000:16:01.0", "0000:17:00.0", 24, 25, 0},
      {"pci0000:30", "0000:30:01.0", "0000:31:00.0", 30, 31, 0},
      {"pci0000:b0", "0000:b0:01.0", "0000:b1:00.0", 181, 182, 1},
      {"pci0000:c9", "0000:c9:01.0", "0000:ca:00.0", 187, 188, 1},
  };
  for (const auto& s : slots) {
    RETURN_IF_ERROR(host.Add(RootPort(s.port, s.rc, s.port_group, s.numa)));
    RETURN_IF_ERROR(host.Add(Gpu(s.gpu, s.port, s.gpu_group, s.numa)));
  }
  // The host's own devices: a NIC and an NVMe drive, never ours.
  RETURN_IF_ERROR(host.Add(RootPort("0000:4a:01.0", "pci0000:4a", 60, 0)));
  FakeDevice nic;
  nic.bdf = "0000:4b:00.0";
  nic.parent = "0000:4a:01.0";
  nic.vendor = 0x15b3;
  nic.device = 0x101d;
  nic.subsystem_vendor = 0x15b3;
  nic.subsystem_device = 0x0047;
  nic.class_code = 0x020000;
  nic.driver = "mlx5_core";
  nic.iommu_group = 61;
  RETURN_IF_ERROR(host.Add(nic));
  RETURN_IF_ERROR(host.Add(RootPort("0000:64:02.0", "pci0000:64", 70, 0)));
  FakeDevice nvme = nic;
  nvme.bdf = "0000:65:00.0";
  nvme.parent = "0000:64:02.0";
  nvme.vendor = 0x144d;
  nvme.device = 0xa80a;
  nvme.class_code = 0x010802;
  nvme.driver = "nvme";
  nvme.iommu_group = 71;
  return host.Add(nvme);
}

Status BuildHgxHost(FakeHost& host) {
  // Per socket: one root complex, a switch with two downstream ports, each holding one GPU; the
  // NIC of each pair sits beside it. GPUs keep their own groups (the switch has ACS).
  // The GPU of socket i sits three buses below its root complex (root port, switch up, down).
  const char* rcs[] = {"pci0000:15", "pci0000:27", "pci0000:37", "pci0000:5a",
                       "pci0000:97", "pci0000:a8", "pci0000:b7", "pci0000:d8"};
  int group = 100;
  for (int i = 0; i < 8; ++i) {
    int numa = i < 4 ? 0 : 1;
    std::string rc = rcs[i];
    std::string bus = rc.substr(3);  // "0000:15"
    std::string rp = bus + ":01.0";
    auto hex2 = [](int v) { return Hex(static_cast<uint32_t>(v), 2); };
    int b = std::stoi(bus.substr(5), nullptr, 16);
    std::string up = "0000:" + hex2(b + 1) + ":00.0";
    std::string down_gpu = "0000:" + hex2(b + 2) + ":00.0";
    std::string down_nic = "0000:" + hex2(b + 2) + ":01.0";
    RETURN_IF_ERROR(host.Add(RootPort(rp, rc, group++, numa)));
    RETURN_IF_ERROR(host.Add(SwitchPort(up, rp, group++, numa, 0xc030)));
    RETURN_IF_ERROR(host.Add(SwitchPort(down_gpu, up, group++, numa, 0xc030)));
    RETURN_IF_ERROR(host.Add(SwitchPort(down_nic, up, group++, numa, 0xc030)));
    FakeDevice g = Gpu("0000:" + hex2(b + 3) + ":00.0", down_gpu, group++, numa, 0x2330);
    g.subsystem_device = 0x16c1;
    g.cdev = i;
    RETURN_IF_ERROR(host.Add(g));
    FakeDevice nic;
    nic.bdf = "0000:" + hex2(b + 4) + ":00.0";
    nic.parent = down_nic;
    nic.vendor = 0x15b3;
    nic.device = 0x1021;
    nic.subsystem_vendor = 0x15b3;
    nic.class_code = 0x020700;  // InfiniBand
    nic.driver = "mlx5_core";
    nic.iommu_group = group++;
    nic.numa_node = numa;
    RETURN_IF_ERROR(host.Add(nic));
  }
  // NVSwitches: behind their own switch on socket 0, each in its own group, on vfio-pci.
  RETURN_IF_ERROR(host.Add(RootPort("0000:03:01.0", "pci0000:03", group++, 0)));
  RETURN_IF_ERROR(host.Add(SwitchPort("0000:04:00.0", "0000:03:01.0", group++, 0, 0xc010)));
  for (int i = 0; i < 4; ++i) {
    std::string port = "0000:05:0" + std::to_string(i) + ".0";
    RETURN_IF_ERROR(host.Add(SwitchPort(port, "0000:04:00.0", group++, 0, 0xc010)));
    FakeDevice sw;
    sw.bdf = "0000:0" + std::to_string(6 + i) + ":00.0";
    sw.parent = port;
    sw.device = 0x22a3;
    sw.subsystem_device = 0x1796;
    sw.class_code = kClassOtherBridge;
    sw.iommu_group = group++;
    sw.numa_node = 0;
    RETURN_IF_ERROR(host.Add(sw));
  }
  return Status::Ok();
}

Status BuildConsumerGpuHost(FakeHost& host, bool audio_on_vfio) {
  RETURN_IF_ERROR(host.Add(RootPort("0000:00:01.0", "pci0000:00", 2, 0)));
  FakeDevice vga = Gpu("0000:01:00.0", "0000:00:01.0", 14, 0, 0x2684);
  vga.class_code = kClassVga;
  vga.subsystem_device = 0x16f3;
  RETURN_IF_ERROR(host.Add(vga));
  FakeDevice audio = Gpu("0000:01:00.1", "0000:00:01.0", 14, 0, 0x22ba);
  audio.class_code = kClassAudio;
  audio.driver = audio_on_vfio ? "vfio-pci" : "snd_hda_intel";
  return host.Add(audio);
}

Status BuildBindTestHost(FakeHost& host) {
  RETURN_IF_ERROR(host.Add(
      MakeFakeDevice("0000:00:01.0", "pci0000:00", 2, kClassPciBridge, "pcieport", 0x8086)));
  RETURN_IF_ERROR(
      host.Add(MakeFakeDevice("0000:01:00.0", "0000:00:01.0", 14, kClassVga, "nvidia")));
  RETURN_IF_ERROR(
      host.Add(MakeFakeDevice("0000:01:00.1", "0000:00:01.0", 14, kClassAudio, "snd_hda_intel")));
  RETURN_IF_ERROR(host.Add(MakeFakeDevice("0000:41:00.0", "pci0000:40", 20)));
  RETURN_IF_ERROR(
      host.Add(MakeFakeDevice("0000:61:00.0", "pci0000:60", 30, 0x020000, "mlx5_core", 0x15b3)));
  for (const char* drv : {"nvidia", "snd_hda_intel", "vfio-pci", "mlx5_core", "pcieport"})
    RETURN_IF_ERROR(
        WriteFileAtomic(host.roots().sysfs + "/bus/pci/drivers/" + drv + "/unbind", ""));
  return WriteFileAtomic(host.roots().sysfs + "/bus/pci/drivers_probe", "");
}

Status BuildSharedGroupHost(FakeHost& host) {
  // Without ACS on the switch, the kernel puts the ports and both GPUs in one group.
  RETURN_IF_ERROR(host.Add(RootPort("0000:00:01.0", "pci0000:00", 7, 0)));
  RETURN_IF_ERROR(host.Add(SwitchPort("0000:01:00.0", "0000:00:01.0", 7, 0, 0x8747)));
  RETURN_IF_ERROR(host.Add(SwitchPort("0000:02:08.0", "0000:01:00.0", 7, 0, 0x8747)));
  RETURN_IF_ERROR(host.Add(SwitchPort("0000:02:10.0", "0000:01:00.0", 7, 0, 0x8747)));
  RETURN_IF_ERROR(host.Add(Gpu("0000:03:00.0", "0000:02:08.0", 7, 0)));
  return host.Add(Gpu("0000:04:00.0", "0000:02:10.0", 7, 0));
}

Status BuildMixedDriverHost(FakeHost& host) {
  RETURN_IF_ERROR(host.Add(RootPort("0000:40:01.0", "pci0000:40", 19, 0)));
  RETURN_IF_ERROR(host.Add(Gpu("0000:41:00.0", "0000:40:01.0", 20, 0)));
  RETURN_IF_ERROR(host.Add(RootPort("0000:40:02.0", "pci0000:40", 22, 0)));
  FakeDevice other = Gpu("0000:42:00.0", "0000:40:02.0", 21, 0);
  other.driver = "nvidia";
  return host.Add(other);
}

Status BuildNoNumaHost(FakeHost& host) {
  RETURN_IF_ERROR(host.Add(RootPort("0000:00:02.0", "pci0000:00", 3, -1)));
  return host.Add(Gpu("0000:05:00.0", "0000:00:02.0", 9, -1));
}

Status BuildBrokenHost(FakeHost& host) {
  RETURN_IF_ERROR(host.Add(RootPort("0000:40:01.0", "pci0000:40", 39, 0)));
  RETURN_IF_ERROR(host.Add(Gpu("0000:41:00.0", "0000:40:01.0", 40, 0)));
  // Garbage in class.
  RETURN_IF_ERROR(host.Add(RootPort("0000:40:02.0", "pci0000:40", 41, 0)));
  RETURN_IF_ERROR(host.Add(Gpu("0000:42:00.0", "0000:40:02.0", 42, 0)));
  RETURN_IF_ERROR(host.SetAttr("0000:42:00.0", "class", "banana\n"));
  // A dangling iommu_group link: the group directory is gone.
  RETURN_IF_ERROR(host.Add(RootPort("0000:40:03.0", "pci0000:40", 43, 0)));
  RETURN_IF_ERROR(host.Add(Gpu("0000:43:00.0", "0000:40:03.0", 44, 0)));
  std::error_code ec;
  fs::remove_all(host.roots().IommuGroups() + "/44", ec);
  // An unreadable vendor (a directory where a file should be).
  RETURN_IF_ERROR(host.Add(RootPort("0000:40:04.0", "pci0000:40", 45, 0)));
  RETURN_IF_ERROR(host.Add(Gpu("0000:44:00.0", "0000:40:04.0", 46, 0)));
  std::string vendor = host.DeviceDir("0000:44:00.0") + "/vendor";
  ::unlink(vendor.c_str());
  RETURN_IF_ERROR(MakeDirs(vendor));
  // A missing class file.
  RETURN_IF_ERROR(host.Add(RootPort("0000:40:05.0", "pci0000:40", 47, 0)));
  RETURN_IF_ERROR(host.Add(Gpu("0000:45:00.0", "0000:40:05.0", 48, 0)));
  return RemoveFile(host.DeviceDir("0000:45:00.0") + "/class");
}

Status BuildLargeHost(FakeHost& host, int functions) {
  int added = 0, group = 1000, gpus = 0;
  for (int bus = 1; added < functions && bus < 0xff; ++bus) {
    std::string rc = "pci0000:" + Hex(static_cast<uint32_t>(bus), 2);
    for (int fn = 0; fn < 8 && added < functions; ++fn) {
      FakeDevice d;
      d.bdf = "0000:" + Hex(static_cast<uint32_t>(bus), 2) + ":00." + std::to_string(fn);
      d.parent = rc;
      d.iommu_group = group++;
      d.numa_node = bus % 2;
      if (fn == 0 && gpus < 16) {
        ++gpus;
      } else {
        d.vendor = 0x8086;
        d.device = 0x1572;
        d.class_code = 0x020000;
        d.driver = "i40e";
      }
      RETURN_IF_ERROR(host.Add(d));
      ++added;
    }
  }
  return Status::Ok();
}

}  // namespace vfio_gpu
