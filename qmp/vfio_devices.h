// What a running VM has been given: its vfio-pci devices and the host BDF behind each, read over
// QMP.
//
// QEMU's QOM tree is the source that sees everything: `/machine/peripheral` holds devices added
// with an id (Kata's), `/machine/peripheral-anon` those added without one, and `qom-get <path>
// host` gives the host BDF. `query-pci` only lists what the guest has enumerated (under -S,
// hot-added devices behind root ports are absent), so it only adds the guest-side address and,
// should it name a device the QOM walk missed, that device; nothing is counted twice.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"
#include "qmp/qmp_session.h"

namespace vfio_gpu::qmp {

// Which devices count and where their host address is read. The defaults are vfio-pci's; tests
// point it at emulated devices QEMU can hot-plug here (e.g. e1000e with its `mac`).
struct DeviceFilter {
  std::vector<std::string> types = {"vfio-pci", "vfio-pci-nohotplug"};  // QOM type names
  std::string host_property = "host";
  // Read when `host_property` does not hold a BDF (vfio-pci given `sysfsdev=` instead of `host=`);
  // its basename is the BDF. Empty: no fallback.
  std::string sysfsdev_property = "sysfsdev";
};

struct VmDevice {
  std::string id;             // the qdev id ("gpu0"); for devices added without one, the QOM name
  std::string qom_path;       // "/machine/peripheral/gpu0"
  std::string host;           // canonical host BDF ("0000:01:00.0"), or the raw value if not a BDF
  std::string guest_address;  // "00:04.0" once the guest has enumerated it (query-pci), else ""
};

// One device of a `query-pci` answer, bridges flattened.
struct GuestPciDevice {
  std::string qdev_id;  // "" for devices added without an id
  std::string address;  // "bb:ss.f" as the guest numbered it
};

// Flattens `query-pci`'s return (buses, and devices behind bridges) into one list.
std::vector<GuestPciDevice> FlattenQueryPci(const Json& query_pci_return);

// Adds guest addresses to `devices` from `guest` (matched by qdev id) and returns the qdev ids the
// guest lists that are not among `devices` (to be looked up, not counted again).
std::vector<std::string> MergeGuestView(std::vector<VmDevice>& devices,
                                        const std::vector<GuestPciDevice>& guest);

// Lists the VM's devices matching `filter`, sorted by host, then id.
Result<std::vector<VmDevice>> ListVfioDevices(QmpSession& session,
                                              const DeviceFilter& filter = DeviceFilter());

// Connects to `socket`, lists, and closes the socket before returning: one QMP client at a time.
Result<std::vector<VmDevice>> ListVfioDevicesAt(const std::string& socket,
                                                std::chrono::milliseconds timeout,
                                                const DeviceFilter& filter = DeviceFilter());

}  // namespace vfio_gpu::qmp
