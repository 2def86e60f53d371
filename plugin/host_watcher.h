// Turns host changes into "something changed" calls, event-driven, on the daemon's loop:
// - inotify on <dev>/vfio and <dev>/vfio/devices (group nodes and iommufd cdevs come and go with
//   binds and module loads; /dev is devtmpfs, so inotify works), watching <dev> itself only while
//   <dev>/vfio does not exist yet;
// - a NETLINK_KOBJECT_UEVENT socket filtered to SUBSYSTEM=pci add/remove/bind/unbind/change (sysfs
//   itself emits no inotify events for driver binds);
// - inotify on the quarantine directory (the shim's marks);
// - inotify on the kubelet's device plugin directory: kubelet.sock re-created (a kubelet restart)
//   or a socket deleted (ours, perhaps).
// Netlink needs no privilege to listen; when it cannot be opened (a restricted sandbox) the slow
// reconcile still catches binds, and that is logged.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "common/result.h"
#include "plugin/event_loop.h"

namespace vfio_gpu::plugin {

class HostWatcher {
 public:
  struct Paths {
    std::string dev_root;
    std::string quarantine_dir;
    std::string kubelet_dir;
  };
  // What changed, as precisely as the event says: a uevent names a PCI function, a /dev/vfio/<N>
  // event an IOMMU group, a quarantine mark neither (health only, no sysfs to read); anything else
  // (module load, inotify overflow, lost uevents) is `everything`.
  struct HostChange {
    std::string why;
    std::set<int> groups;
    std::set<std::string> bdfs;
    bool everything = false;
  };
  struct Callbacks {
    std::function<void(const HostChange& change)> host_changed;
    std::function<void()> kubelet_socket_created;
    std::function<void()> kubelet_dir_changed;
  };

  static Result<std::unique_ptr<HostWatcher>> Create(EventLoop& loop, Paths paths,
                                                     Callbacks callbacks);
  ~HostWatcher();
  bool netlink_active() const { return netlink_.valid(); }

 private:
  // kDevRoot and kRunDir are watched only while <dev>/vfio, resp. the quarantine dir, is missing.
  enum class Kind { kDevRoot, kVfio, kVfioDevices, kRunDir, kQuarantine, kKubelet };
  HostWatcher(EventLoop& loop, Paths paths, Callbacks callbacks)
      : loop_(loop), paths_(std::move(paths)), cb_(std::move(callbacks)) {}
  void RefreshWatches();
  void Unwatch(Kind k);
  void OnInotify();
  void OnNetlink();
  bool Watching(Kind k) const;
  void Watch(Kind k, const std::string& path, uint32_t mask);

  EventLoop& loop_;
  Paths paths_;
  Callbacks cb_;
  Fd inotify_;
  Fd netlink_;
  std::map<int, Kind> watches_;  // wd -> what it watches
};

// Parses one kernel uevent datagram ("action@devpath\0KEY=VAL\0..."). Returns "ACTION DEVPATH" for
// PCI add/remove/bind/unbind/change and "" for anything else.
std::string RelevantPciUevent(const char* data, size_t size);

}  // namespace vfio_gpu::plugin
