#include "plugin/host_watcher.h"

#include <linux/netlink.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include "common/files.h"
#include "common/strings.h"

namespace vfio_gpu::plugin {
namespace {

constexpr uint32_t kDirMask =
    IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF;

}  // namespace

std::string RelevantPciUevent(const char* data, size_t size) {
  std::string_view all(data, size);
  std::string action, devpath;
  bool pci = false;
  size_t pos = 0;
  while (pos < all.size()) {
    size_t end = all.find('\0', pos);
    if (end == std::string_view::npos) end = all.size();
    std::string_view field = all.substr(pos, end - pos);
    if (field.rfind("ACTION=", 0) == 0) action = std::string(field.substr(7));
    if (field.rfind("DEVPATH=", 0) == 0) devpath = std::string(field.substr(8));
    if (field == "SUBSYSTEM=pci") pci = true;
    pos = end + 1;
  }
  if (!pci) return "";
  if (action != "add" && action != "remove" && action != "bind" && action != "unbind" &&
      action != "change")
    return "";
  return action + " " + devpath;
}

Result<std::unique_ptr<HostWatcher>> HostWatcher::Create(EventLoop& loop, Paths paths,
                                                         Callbacks callbacks) {
  std::unique_ptr<HostWatcher> w(new HostWatcher(loop, std::move(paths), std::move(callbacks)));
  int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (in < 0)
    return Error(std::string("inotify_init1: ") + std::strerror(errno), ErrorKind::kInternal);
  w->inotify_ = Fd(in);
  HostWatcher* self = w.get();
  if (auto s = loop.Add(in, EPOLLIN, [self](uint32_t) { self->OnInotify(); }); !s) return s.error();
  w->RefreshWatches();

  int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
  if (nl >= 0) {
    sockaddr_nl addr{};
    addr.nl_family = AF_NETLINK;
    addr.nl_groups = 1;  // kernel uevents (udev's re-broadcasts are group 2)
    if (bind(nl, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      int size = 1 << 20;
      setsockopt(nl, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
      w->netlink_ = Fd(nl);
      if (auto s = loop.Add(nl, EPOLLIN, [self](uint32_t) { self->OnNetlink(); }); !s)
        return s.error();
    } else {
      SPDLOG_WARN(
          "cannot listen to kernel uevents ({}); driver binds are seen by the reconcile only",
          std::strerror(errno));
      ::close(nl);
    }
  } else {
    SPDLOG_WARN("cannot open a uevent socket ({}); driver binds are seen by the reconcile only",
                std::strerror(errno));
  }
  return w;
}

HostWatcher::~HostWatcher() {
  if (inotify_.valid()) loop_.Remove(inotify_.get());
  if (netlink_.valid()) loop_.Remove(netlink_.get());
}

bool HostWatcher::Watching(Kind k) const {
  for (const auto& [wd, kind] : watches_)
    if (kind == k) return true;
  return false;
}

void HostWatcher::Watch(Kind k, const std::string& path, uint32_t mask) {
  int wd = inotify_add_watch(inotify_.get(), path.c_str(), mask | IN_ONLYDIR);
  if (wd >= 0) watches_[wd] = k;
}

void HostWatcher::RefreshWatches() {
  std::string vfio = paths_.dev_root + "/vfio";
  bool have_vfio = IsDir(vfio);
  if (!Watching(Kind::kVfio) && have_vfio) Watch(Kind::kVfio, vfio, kDirMask);
  if (!Watching(Kind::kVfioDevices) && IsDir(vfio + "/devices"))
    Watch(Kind::kVfioDevices, vfio + "/devices", kDirMask);
  // Only while <dev>/vfio is missing: a busy /dev would otherwise wake us for every pty.
  bool want_dev = !Watching(Kind::kVfio);
  if (want_dev && !Watching(Kind::kDevRoot))
    Watch(Kind::kDevRoot, paths_.dev_root, IN_CREATE | IN_MOVED_TO);
  if (!want_dev) Unwatch(Kind::kDevRoot);
  if (!Watching(Kind::kQuarantine) && IsDir(paths_.quarantine_dir))
    Watch(Kind::kQuarantine, paths_.quarantine_dir, kDirMask | IN_CLOSE_WRITE);
  // An operator who clears every mark with `rm -r` and makes the dir again: seen through the run
  // dir while the quarantine dir is missing.
  bool want_run = !Watching(Kind::kQuarantine);
  if (want_run && !Watching(Kind::kRunDir) && IsDir(Dirname(paths_.quarantine_dir)))
    Watch(Kind::kRunDir, Dirname(paths_.quarantine_dir), IN_CREATE | IN_MOVED_TO);
  if (!want_run) Unwatch(Kind::kRunDir);
  if (!Watching(Kind::kKubelet) && IsDir(paths_.kubelet_dir))
    Watch(Kind::kKubelet, paths_.kubelet_dir, kDirMask);
}

void HostWatcher::Unwatch(Kind k) {
  for (auto it = watches_.begin(); it != watches_.end();) {
    if (it->second == k) {
      inotify_rm_watch(inotify_.get(), it->first);
      it = watches_.erase(it);
    } else {
      ++it;
    }
  }
}

void HostWatcher::OnInotify() {
  alignas(inotify_event) char buf[8192];
  bool host = false, kubelet_created = false, kubelet_changed = false, refresh = false;
  HostChange change;
  auto everything = [&](std::string why) {
    host = change.everything = true;
    change.why = std::move(why);
  };
  for (;;) {
    ssize_t n = ::read(inotify_.get(), buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t off = 0; off < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      std::string name = ev->len ? std::string(ev->name) : "";
      auto it = watches_.find(ev->wd);
      if (ev->mask & IN_Q_OVERFLOW) {
        kubelet_changed = refresh = true;
        everything("inotify queue overflow");
        continue;
      }
      if (it == watches_.end()) continue;
      Kind kind = it->second;
      if (ev->mask & IN_IGNORED) {  // the watched directory went away
        watches_.erase(it);
        refresh = true;
        if (kind != Kind::kKubelet) everything("a watched directory went away");
        continue;
      }
      std::string verb = (ev->mask & (IN_CREATE | IN_MOVED_TO)) ? " created" : " removed";
      switch (kind) {
        case Kind::kDevRoot:
          if (name == "vfio") {
            refresh = true;
            everything("<dev>/vfio appeared");
          }
          break;
        case Kind::kVfio: {
          auto group = ParseInt(name);
          if (group && *group >= 0 && std::to_string(*group) == name) {
            host = true;
            change.groups.insert(static_cast<int>(*group));
            change.why = "/dev/vfio/" + name + verb;
          } else {  // "vfio" (the module) or "devices" (iommufd)
            if (name == "devices") refresh = true;
            everything("/dev/vfio/" + name + verb);
          }
          break;
        }
        case Kind::kVfioDevices:
          everything("/dev/vfio/devices/" + name + verb);
          break;
        case Kind::kRunDir:
          if (name == Basename(paths_.quarantine_dir)) {
            refresh = host = true;  // watched before the rescan reads it: no mark is missed
            change.why = "quarantine dir created";
          }
          break;
        case Kind::kQuarantine:
          if (!name.empty() && name[0] == '.') break;  // an atomic writer's temp file
          host = true;
          change.why = "quarantine mark " + name + " changed";
          break;
        case Kind::kKubelet:
          if (name == "kubelet.sock" && (ev->mask & (IN_CREATE | IN_MOVED_TO)))
            kubelet_created = true;
          else
            kubelet_changed = true;
          break;
      }
    }
  }
  if (refresh) RefreshWatches();
  if (host && cb_.host_changed) cb_.host_changed(change);
  if (kubelet_created && cb_.kubelet_socket_created) cb_.kubelet_socket_created();
  if (kubelet_changed && cb_.kubelet_dir_changed) cb_.kubelet_dir_changed();
}

void HostWatcher::OnNetlink() {
  char buf[8192];
  HostChange change;
  for (;;) {
    sockaddr_nl from{};
    iovec iov{buf, sizeof buf};
    msghdr msg{};
    msg.msg_name = &from;
    msg.msg_namelen = sizeof from;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    ssize_t n = recvmsg(netlink_.get(), &msg, 0);
    if (n < 0) {
      if (errno == ENOBUFS) {  // uevents lost: rescan everything to be safe
        change.everything = true;
        change.why = "uevents lost (buffer overrun)";
      }
      if (errno == EINTR || errno == ENOBUFS) continue;
      break;
    }
    if (from.nl_pid != 0) continue;  // only the kernel speaks here
    std::string e = RelevantPciUevent(buf, static_cast<size_t>(n));
    if (e.empty()) continue;
    // "unbind /devices/pci0000:00/0000:00:02.0/0000:01:00.0": the function is the last part.
    std::string bdf = Basename(e.substr(e.find(' ') + 1));
    if (IsBdf(bdf))
      change.bdfs.insert(bdf);
    else
      change.everything = true;
    if (!change.everything || change.why.empty()) change.why = "uevent " + e;
  }
  if ((change.everything || !change.bdfs.empty()) && cb_.host_changed) cb_.host_changed(change);
}

}  // namespace vfio_gpu::plugin
