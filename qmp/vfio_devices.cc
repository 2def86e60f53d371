#include "qmp/vfio_devices.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"

namespace vfio_gpu::qmp {
namespace {

constexpr const char* kContainers[] = {"/machine/peripheral", "/machine/peripheral-anon"};

Json PathArgs(const std::string& path) {
  return Json::Object().Set("path", Json::String(path));
}

Json PropertyArgs(const std::string& path, const std::string& property) {
  return Json::Object().Set("path", Json::String(path)).Set("property", Json::String(property));
}

bool TypeMatches(const DeviceFilter& filter, const std::string& type) {
  return std::find(filter.types.begin(), filter.types.end(), type) != filter.types.end();
}

void AppendDevices(const Json& devices, std::vector<GuestPciDevice>& out) {
  for (size_t i = 0; i < devices.size(); ++i) {
    Json d = devices.At(i);
    char addr[16];
    std::snprintf(addr, sizeof addr, "%02x:%02x.%x",
                  static_cast<unsigned>(d.Get("bus").AsInt() & 0xff),
                  static_cast<unsigned>(d.Get("slot").AsInt() & 0x1f),
                  static_cast<unsigned>(d.Get("function").AsInt() & 0x7));
    out.push_back({d.Get("qdev_id").AsString(), addr});
    Json bridge = d.Get("pci_bridge");
    if (bridge.is_object()) AppendDevices(bridge.Get("devices"), out);
  }
}

// The device's host address: `host_property`, or the basename of `sysfsdev_property` when the
// former is not a BDF. Canonical when it is a BDF, raw otherwise.
Result<std::string> ReadHost(QmpSession& session, const std::string& path,
                             const DeviceFilter& filter) {
  auto host = session.Execute("qom-get", PropertyArgs(path, filter.host_property));
  if (!host) return host.error().Wrap("read " + filter.host_property + " of " + path);
  std::string value = host->is_string() ? host->AsString() : host->Dump();
  if (auto bdf = CanonicalBdf(value)) return *bdf;
  if (!filter.sysfsdev_property.empty()) {
    auto sysfsdev = session.Call("qom-get", PropertyArgs(path, filter.sysfsdev_property));
    if (!sysfsdev) return sysfsdev.error().Wrap("read " + filter.sysfsdev_property + " of " + path);
    if (sysfsdev->ok && sysfsdev->value.is_string()) {
      if (auto bdf = CanonicalBdf(Basename(sysfsdev->value.AsString()))) return *bdf;
    }
  }
  return value;
}

}  // namespace

std::vector<GuestPciDevice> FlattenQueryPci(const Json& query_pci_return) {
  std::vector<GuestPciDevice> out;
  for (size_t i = 0; i < query_pci_return.size(); ++i)
    AppendDevices(query_pci_return.At(i).Get("devices"), out);
  return out;
}

std::vector<std::string> MergeGuestView(std::vector<VmDevice>& devices,
                                        const std::vector<GuestPciDevice>& guest) {
  std::vector<std::string> unknown;
  for (const GuestPciDevice& g : guest) {
    // Devices added without an id can't be matched by name; the QOM walk already counted them.
    if (g.qdev_id.empty()) continue;
    auto it = std::find_if(devices.begin(), devices.end(), [&](const VmDevice& d) {
      return d.qom_path == "/machine/peripheral/" + g.qdev_id;
    });
    if (it != devices.end()) {
      it->guest_address = g.address;
    } else if (std::find(unknown.begin(), unknown.end(), g.qdev_id) == unknown.end()) {
      unknown.push_back(g.qdev_id);
    }
  }
  return unknown;
}

Result<std::vector<VmDevice>> ListVfioDevices(QmpSession& session, const DeviceFilter& filter) {
  std::vector<VmDevice> devices;
  for (const char* container : kContainers) {
    auto children = session.Execute("qom-list", PathArgs(container));
    if (!children) {
      // A QEMU that never had an id-less device may lack the anon container; nothing is there.
      if (children.error().kind() == ErrorKind::kNotFound) continue;
      return children.error().Wrap("list the VM's devices");
    }
    for (size_t i = 0; i < children->size(); ++i) {
      Json child = children->At(i);
      std::string type = child.Get("type").AsString();
      if (!StartsWith(type, "child<") || !EndsWith(type, ">")) continue;
      if (!TypeMatches(filter, type.substr(6, type.size() - 7))) continue;
      VmDevice d;
      d.id = child.Get("name").AsString();
      d.qom_path = std::string(container) + "/" + d.id;
      auto host = ReadHost(session, d.qom_path, filter);
      if (!host) return host.error();
      d.host = std::move(*host);
      devices.push_back(std::move(d));
    }
  }

  auto pci = session.Call("query-pci");
  if (!pci) return pci.error().Wrap("list the guest's PCI devices");
  if (pci->ok) {
    std::vector<GuestPciDevice> guest = FlattenQueryPci(pci->value);
    std::vector<std::string> unknown = MergeGuestView(devices, guest);
    for (const std::string& id : unknown) {
      std::string path = "/machine/peripheral/" + id;
      auto type = session.Call("qom-get", PropertyArgs(path, "type"));
      if (!type) return type.error().Wrap("read the type of " + path);
      if (!type->ok || !TypeMatches(filter, type->value.AsString())) continue;
      VmDevice d;
      d.id = id;
      d.qom_path = path;
      auto host = ReadHost(session, path, filter);
      if (!host) return host.error();
      d.host = std::move(*host);
      for (const GuestPciDevice& g : guest)
        if (g.qdev_id == id) d.guest_address = g.address;
      devices.push_back(std::move(d));
    }
  } else {
    spdlog::debug("qmp {}: query-pci: {}: {}", session.path(), pci->error_class, pci->error_desc);
  }

  std::sort(devices.begin(), devices.end(), [](const VmDevice& a, const VmDevice& b) {
    return a.host != b.host ? a.host < b.host : a.id < b.id;
  });
  return devices;
}

Result<std::vector<VmDevice>> ListVfioDevicesAt(const std::string& socket,
                                                std::chrono::milliseconds timeout,
                                                const DeviceFilter& filter) {
  auto session = QmpSession::Connect(socket, timeout);
  if (!session) return session.error();
  auto devices = ListVfioDevices(*session, filter);
  session->Close();
  if (!devices) return devices.error().Wrap("QMP socket " + socket);
  return devices;
}

}  // namespace vfio_gpu::qmp
