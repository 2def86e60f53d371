#include "plugin/daemon.h"

#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <optional>
#include <set>

#include "cdi/spec.h"
#include "common/files.h"
#include "common/strings.h"
#include "hostmodel/published_selection.h"
#include "hostmodel/scanner.h"
#include "plugin/event_loop.h"
#include "plugin/host_watcher.h"
#include "plugin/http_server.h"
#include "plugin/manager.h"
#include "plugin/metrics.h"
#include "plugin/quarantine.h"

namespace vfio_gpu::plugin {

#define PLUGIN_RETURN_IF_ERROR(expr)              \
  do {                                            \
    if (auto _s = (expr); !_s) return _s.error(); \
  } while (0)

// Everything the loop thread owns.
class PluginDaemon::Loop {
 public:
  Loop(PluginDaemon& d) : d_(d), cfg_(d.options_.config) {}

  Status Init() {
    auto loop = EventLoop::Create();
    if (!loop) return loop.error();
    loop_ = std::move(*loop);
    auto waker = Waker::Create();
    auto reconcile = Timer::Create();
    auto retry = Timer::Create();
    auto rescan = Timer::Create();
    auto confirm = Timer::Create();
    if (!confirm) return confirm.error();
    confirm_ = std::move(*confirm);
    if (!waker) return waker.error();
    if (!reconcile) return reconcile.error();
    if (!retry) return retry.error();
    if (!rescan) return rescan.error();
    waker_ = std::move(*waker);
    reconcile_ = std::move(*reconcile);
    retry_ = std::move(*retry);
    rescan_timer_ = std::move(*rescan);

    PLUGIN_RETURN_IF_ERROR(loop_->Add(waker_.fd(), EPOLLIN, [this](uint32_t) { OnWake(); }));
    PLUGIN_RETURN_IF_ERROR(loop_->Add(reconcile_.fd(), EPOLLIN, [this](uint32_t) {
      reconcile_.Drain();
      Request("reconcile");
    }));
    PLUGIN_RETURN_IF_ERROR(loop_->Add(retry_.fd(), EPOLLIN, [this](uint32_t) {
      retry_.Drain();
      manager_->OnRetryTimer();
    }));
    PLUGIN_RETURN_IF_ERROR(loop_->Add(confirm_.fd(), EPOLLIN, [this](uint32_t) {
      confirm_.Drain();
      Request("full scan after a targeted one");
    }));
    PLUGIN_RETURN_IF_ERROR(loop_->Add(rescan_timer_.fd(), EPOLLIN, [this](uint32_t) {
      rescan_timer_.Drain();
      Request("retrying the CDI spec write");
    }));
    if (d_.options_.handle_signals) {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, SIGTERM);
      sigaddset(&set, SIGINT);
      pthread_sigmask(SIG_BLOCK, &set, nullptr);
      int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
      if (fd < 0) return Error("signalfd failed", ErrorKind::kInternal);
      signal_ = Fd(fd);
      PLUGIN_RETURN_IF_ERROR(loop_->Add(fd, EPOLLIN, [this](uint32_t) {
        signalfd_siginfo si{};
        [[maybe_unused]] auto n = ::read(signal_.get(), &si, sizeof si);
        SPDLOG_INFO("signal {} received: stopping, removing our sockets", si.ssi_signo);
        loop_->Quit();
      }));
    }

    Manager::Options mo;
    mo.kubelet_dir = cfg_.kubelet_dir;
    mo.allocate = {cfg_.allocate_strategy, cfg_.kubevirt_env};
    mo.register_timeout = d_.options_.register_timeout;
    mo.backoff_initial = d_.options_.register_backoff_initial;
    mo.backoff_max = d_.options_.register_backoff_max;
    manager_ = std::make_unique<Manager>(
        mo, &metrics_, [this] { return d_.RescanAndWait(std::chrono::milliseconds(1000)); },
        [this](std::chrono::milliseconds delay) { retry_.Arm(delay); });

    HostWatcher::Callbacks cb;
    cb.host_changed = [this](const HostWatcher::HostChange& c) { RequestChange(c); };
    cb.kubelet_socket_created = [this] { manager_->OnKubeletSocketCreated(); };
    cb.kubelet_dir_changed = [this] { manager_->OnKubeletDirChanged(); };
    auto watcher = HostWatcher::Create(
        *loop_, {cfg_.roots.dev, QuarantineDir(cfg_.run_dir), cfg_.kubelet_dir}, std::move(cb));
    if (!watcher) return watcher.error();
    watcher_ = std::move(*watcher);
    d_.netlink_active_ = watcher_->netlink_active();

    if (!cfg_.metrics_address.empty()) {
      auto http = HttpServer::Listen(
          *loop_, cfg_.metrics_address,
          [this](const std::string& m, const std::string& p) { return Serve(m, p); });
      if (!http) return http.error();
      http_ = std::move(*http);
      d_.metrics_port_ = http_->port();
    }
    loop_->SetAfterBatch([this] {
      if (pending_) RescanNow();
    });
    return Status::Ok();
  }

  void Run() {
    reconcile_.Arm(std::chrono::seconds(cfg_.reconcile_interval_seconds), /*periodic=*/true);
    pending_ = true;
    why_ = "start";
    RescanNow();
    loop_->Run();
    // Shutdown: stop serving and remove our sockets before anyone sees us gone.
    manager_->StopAll();
    http_.reset();
    watcher_.reset();
  }

  void Wake() { waker_.Wake(); }

 private:
  HttpResponse Serve(const std::string& method, const std::string& path) {
    if (method != "GET" && method != "HEAD")
      return {405, "text/plain; charset=utf-8", "GET only\n"};
    if (path == "/healthz") return {200, "text/plain; charset=utf-8", "ok\n"};
    if (path == "/metrics")
      return {200, "text/plain; version=0.0.4; charset=utf-8", metrics_.Render()};
    return {404, "text/plain; charset=utf-8", "not found; try /healthz or /metrics\n"};
  }

  // A rescan of the whole bus.
  void Request(const std::string& why) {
    if (!pending_) why_ = why;
    pending_ = true;
    want_full_ = true;
  }

  // A change the watcher could pin down: only the groups it touches are read again.
  void RequestChange(const HostWatcher::HostChange& c) {
    if (!pending_) why_ = c.why;
    pending_ = true;
    if (c.everything) want_full_ = true;
    want_groups_.insert(c.groups.begin(), c.groups.end());
    want_bdfs_.insert(c.bdfs.begin(), c.bdfs.end());
  }

  // The whole bus, or just what the pending changes name merged into the last snapshot (a few
  // functions instead of hundreds: the change reaches ListAndWatch sooner), confirmed by a full
  // scan shortly after. A quarantine mark alone reads no sysfs at all.
  Result<Snapshot> ScanForChange() {
    bool full = want_full_ || !last_snap_;
    std::set<int> groups = std::move(want_groups_);
    std::set<std::string> bdfs = std::move(want_bdfs_);
    want_full_ = false;
    want_groups_.clear();
    want_bdfs_.clear();
    if (full) return Scan(cfg_.roots, cfg_.selection);
    if (groups.empty() && bdfs.empty()) return *last_snap_;
    auto reread = FunctionsToReread(cfg_.roots, *last_snap_, groups, bdfs);
    confirm_.Arm(std::chrono::milliseconds(500));
    return MergeRescan(*last_snap_, ScanDevices(cfg_.roots, cfg_.selection, reread), reread);
  }

  void OnWake() {
    waker_.Drain();
    if (d_.stop_requested_) {
      loop_->Quit();
      return;
    }
    std::lock_guard lk(d_.mu_);
    if (d_.requested_gen_ != gen_seen_) Request("rescan requested");
  }

  void RescanNow() {
    uint64_t gen;
    {
      std::lock_guard lk(d_.mu_);
      gen = d_.requested_gen_;
    }
    gen_seen_ = gen;
    pending_ = false;
    auto t0 = Clock::now();
    auto snap = ScanForChange();
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    metrics_.CountScan(secs);
    if (!snap) {
      SPDLOG_ERROR("rescan ({}): {}", why_, snap.error().message());
      metrics_.SetLastError(snap.error().message());
      Complete(gen);
      return;
    }
    SPDLOG_DEBUG("rescan ({}): {} unit(s) in {:.3f} ms", why_, snap->units.size(), secs * 1000);
    last_snap_ = *snap;
    Quarantine q = ReadQuarantine(QuarantineDir(cfg_.run_dir));
    DeviceTree tree = ComputeDeviceTree(*snap, q, published_, Clock::now(), d_.options_.health);

    // CDI before advertising: Kata must be able to resolve <resource>=<id> once the kubelet has it.
    auto specs = BuildCdiSpecs(*snap, cfg_.selection, cfg_.roots);
    auto sync = SyncCdiSpecs(cfg_.cdi_dir, specs);
    if (sync) {
      for (const auto& p : sync->written) SPDLOG_INFO("CDI spec {} written", p);
      for (const auto& p : sync->removed)
        SPDLOG_INFO("CDI spec {} removed: no units of its kind left", p);
      metrics_.CountCdiWrites(sync->written.size() + sync->removed.size());
    } else {
      std::string msg = "cannot write CDI specs: " + sync.error().message();
      SPDLOG_ERROR("{}; new devices are held back as Unhealthy, retrying in 1 s", msg);
      metrics_.SetLastError(msg);
      // What was advertised Healthy keeps its (older, still valid) spec; new ones wait.
      for (auto& [r, devices] : tree)
        for (auto& [id, dev] : devices) {
          bool was_healthy =
              published_.count(r) && published_.at(r).count(id) && published_.at(r).at(id).healthy;
          if (dev.healthy && !was_healthy) {
            dev.healthy = false;
            dev.reason = msg;
          }
        }
      rescan_timer_.Arm(std::chrono::milliseconds(1000));
    }

    // The shim scans with our selection and governs our resource names: published before the
    // kubelet hears of a new resource, so a pod allocated one is never refused for an unknown kind.
    PublishedSelection pub{cfg_.selection, {}};
    for (const auto& [r, _] : tree) pub.resources.push_back(r);
    if (auto w = WritePublishedSelection(cfg_.run_dir, pub); !w) {
      std::string msg = "cannot publish the selection for the shim: " + w.error().message();
      SPDLOG_ERROR("{}; the shim keeps the last one (or its own defaults)", msg);
      metrics_.SetLastError(msg);
    } else if (*w) {
      SPDLOG_INFO("selection and resources [{}] published for the shim in {}",
                  Join(pub.resources, ", "), PublishedSelectionPath(cfg_.run_dir));
    }

    for (const auto& c : DiffTrees(published_, tree)) {
      if (c.kind == DeviceChange::kBecameUnhealthy || c.kind == DeviceChange::kReasonChanged ||
          (c.kind == DeviceChange::kAdded && !c.reason.empty()))
        SPDLOG_WARN("{}", Describe(c));
      else
        SPDLOG_INFO("{}", Describe(c));
    }
    manager_->Apply(tree);
    metrics_.SetTree(tree);
    published_ = std::move(tree);
    {
      std::lock_guard lk(d_.mu_);
      d_.published_ = std::make_shared<const DeviceTree>(published_);
    }
    Complete(gen);
  }

  void Complete(uint64_t gen) {
    {
      std::lock_guard lk(d_.mu_);
      d_.completed_gen_ = std::max(d_.completed_gen_, gen);
    }
    d_.cv_.notify_all();
  }

  PluginDaemon& d_;
  const NodeConfig& cfg_;
  std::unique_ptr<EventLoop> loop_;
  Waker waker_;
  Timer reconcile_, retry_, rescan_timer_, confirm_;
  Fd signal_;
  Metrics metrics_;
  std::unique_ptr<Manager> manager_;
  std::unique_ptr<HostWatcher> watcher_;
  std::unique_ptr<HttpServer> http_;
  DeviceTree published_;
  bool pending_ = false;
  bool want_full_ = true;
  std::set<int> want_groups_;
  std::set<std::string> want_bdfs_;
  std::optional<Snapshot> last_snap_;
  std::string why_;
  uint64_t gen_seen_ = 0;
};

PluginDaemon::PluginDaemon(DaemonOptions options) : options_(std::move(options)) {}

Result<std::unique_ptr<PluginDaemon>> PluginDaemon::Start(const NodeConfig& config) {
  DaemonOptions o;
  o.config = config;
  return Start(std::move(o));
}

Result<std::unique_ptr<PluginDaemon>> PluginDaemon::Start(DaemonOptions options) {
  const NodeConfig& c = options.config;
  for (const auto& [dir, what] : std::vector<std::pair<std::string, std::string>>{
           {c.kubelet_dir, "kubelet device plugin dir (--kubelet-dir)"},
           {c.cdi_dir, "CDI dir (--cdi-dir)"},
           {QuarantineDir(c.run_dir), "quarantine dir (--run-dir)"}}) {
    if (auto s = MakeDirs(dir); !s)
      return s.error().Wrap("cannot create the " + what + " " + dir +
                            "; check the path and the mount");
  }
  if (auto snap = Scan(c.roots, c.selection); !snap)
    return snap.error().Wrap("sysfs root " + c.roots.sysfs +
                             " (--sysfs-root) holds no PCI devices");

  std::unique_ptr<PluginDaemon> d(new PluginDaemon(std::move(options)));
  d->loop_ = std::make_unique<Loop>(*d);
  if (auto s = d->loop_->Init(); !s) return s.error();
  d->published_ = std::make_shared<const DeviceTree>();
  PluginDaemon* self = d.get();
  d->thread_ = std::thread([self] {
    self->loop_->Run();
    {
      std::lock_guard lk(self->mu_);
      self->finished_ = true;
    }
    self->cv_.notify_all();
  });
  return d;
}

PluginDaemon::~PluginDaemon() {
  Stop();
}

void PluginDaemon::Stop() {
  std::lock_guard lk(stop_mu_);
  if (!loop_) return;
  stop_requested_ = true;
  loop_->Wake();
  if (thread_.joinable()) thread_.join();
  loop_.reset();
}

void PluginDaemon::Wait() {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return finished_; });
}

void PluginDaemon::Rescan() {
  {
    std::lock_guard lk(mu_);
    ++requested_gen_;
  }
  if (loop_) loop_->Wake();
}

std::shared_ptr<const DeviceTree> PluginDaemon::RescanAndWait(std::chrono::milliseconds timeout) {
  std::unique_lock lk(mu_);
  uint64_t target = ++requested_gen_;
  lk.unlock();
  if (loop_) loop_->Wake();
  lk.lock();
  bool done = cv_.wait_for(lk, timeout, [&] { return completed_gen_ >= target || finished_; });
  return done && !finished_ ? published_ : nullptr;
}

std::shared_ptr<const DeviceTree> PluginDaemon::devices() const {
  std::lock_guard lk(mu_);
  return published_;
}

std::string PluginDaemon::SocketPath(const std::string& resource) const {
  return options_.config.kubelet_dir + "/" + SocketName(resource);
}

}  // namespace vfio_gpu::plugin
