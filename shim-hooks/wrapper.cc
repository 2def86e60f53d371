#include "shim-hooks/wrapper.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>

#include "cdi/registry.h"
#include "common/files.h"
#include "common/json.h"
#include "common/strings.h"
#include "hostmodel/scanner.h"
#include "shim-hooks/host_facts.h"
#include "shim-hooks/kata_config.h"
#include "shim-hooks/ledger.h"
#include "shim-hooks/pod_allocation.h"
#include "shim-hooks/runtime_options.h"

namespace vfio_gpu {

ShimArgs ParseShimArgs(const std::vector<std::string>& argv) {
  ShimArgs a;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg.size() > 1 && arg[0] == '-') {
      std::string flag = arg.substr(arg[1] == '-' ? 2 : 1);
      std::string value;
      bool has_value = false;
      if (auto eq = flag.find('='); eq != std::string::npos) {
        value = flag.substr(eq + 1);
        flag = flag.substr(0, eq);
        has_value = true;
      }
      if (flag == "debug" || flag == "v" || flag == "info") {
        a.debug = a.debug || flag == "debug";
        continue;
      }
      if (!has_value && i + 1 < argv.size()) value = argv[++i];
      if (flag == "id")
        a.id = value;
      else if (flag == "namespace")
        a.ns = value;
      else if (flag == "bundle")
        a.bundle = value;
      continue;
    }
    if (a.command.empty()) a.command = arg;
  }
  return a;
}

// ---- the decision log ----

DecisionLog::DecisionLog(const ShimConfig& cfg, const ShimArgs& args) : cfg_(cfg), args_(args) {}

void DecisionLog::SetIdentity(const SpecIdentity& id) {
  id_ = id;
  has_id_ = true;
}

namespace {

std::string Now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t{};
  gmtime_r(&ts.tv_sec, &t);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", t.tm_year + 1900,
                t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, ts.tv_nsec / 1000000);
  return buf;
}

}  // namespace

void DecisionLog::Write(const std::string& line, bool warn) {
  pending_ += line;
  pending_ += '\n';
  if (cfg_.syslog) syslog_pending_.emplace_back(warn, line);
}

void DecisionLog::Flush() {
  if (!pending_.empty()) {
    int fd = ::open(cfg_.LogPath().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd < 0 && errno == ENOENT && MakeDirs(cfg_.run_dir, 0755).ok())
      fd = ::open(cfg_.LogPath().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd >= 0) {
      (void)!::write(fd, pending_.data(), pending_.size());
      ::close(fd);
    }
    pending_.clear();
  }
  if (!syslog_pending_.empty()) {
    openlog("containerd-shim-vfio-gpu-v2", LOG_PID, LOG_DAEMON);
    for (const auto& [warn, line] : syslog_pending_)
      ::syslog(warn ? LOG_WARNING : LOG_INFO, "%s", line.c_str());
    closelog();
    syslog_pending_.clear();
  }
}

DecisionLog::~DecisionLog() {
  Flush();
}

void DecisionLog::Event(const std::string& level, const std::string& event,
                        const std::string& message) {
  Json o = Json::Object();
  o.Set("time", Json::String(Now()));
  o.Set("level", Json::String(level));
  o.Set("event", Json::String(event));
  o.Set("command", Json::String(args_.command));
  o.Set("id", Json::String(args_.id));
  if (has_id_) {
    o.Set("sandbox", Json::String(id_.sandbox_id));
    o.Set("pod", Json::String(id_.Pod()));
    o.Set("role", Json::String(SpecRoleName(id_.role)));
  }
  o.Set("msg", Json::String(message));
  Write(o.Dump(), level != "info");
}

void DecisionLog::Decide(const Decision& d) {
  Json o = Json::Object();
  o.Set("time", Json::String(Now()));
  bool bad = d.action == "refused" || d.security;
  o.Set("level", Json::String(bad ? "warning" : "info"));
  o.Set("event", Json::String(d.security ? "security" : "decision"));
  o.Set("command", Json::String(args_.command));
  o.Set("id", Json::String(args_.id));
  o.Set("sandbox", Json::String(has_id_ ? id_.sandbox_id : args_.id));
  o.Set("pod", Json::String(has_id_ ? id_.Pod() : ""));
  o.Set("role", Json::String(has_id_ ? SpecRoleName(id_.role) : ""));
  o.Set("hook", Json::String(d.hook));
  o.Set("action", Json::String(d.action));
  Json bdfs = Json::Array();
  for (const auto& b : d.bdfs) bdfs.Append(Json::String(b));
  o.Set("bdfs", std::move(bdfs));
  o.Set("group", d.group >= 0 ? Json::Int(d.group) : Json::Null());
  o.Set("unit", Json::String(d.unit));
  o.Set("reason", Json::String(d.reason));
  Write(o.Dump(), bad);
}

// ---- start ----

namespace {

StartOutcome Refuse(DecisionLog& log, const Refusal& r, const ShimConfig& cfg) {
  for (const auto& [unit, reason] : r.quarantine) {
    std::string path = JoinPath(cfg.QuarantineDir(), unit);
    auto s = MakeDirs(cfg.QuarantineDir(), 0755);
    if (s) s = WriteFileAtomic(path, reason + "\n", 0644);
    log.Event(s ? "warning" : "error", "quarantine",
              s ? "GPU " + unit + " quarantined: " + reason
                : "cannot quarantine GPU " + unit + ": " + s.error().message());
  }
  StartOutcome o;
  o.refused = true;
  o.kind = r.kind;
  o.message = r.message;
  if (r.kind == ErrorKind::kTransient && o.message.find("transient") == std::string::npos)
    o.message += " (transient: the kubelet retries)";
  log.Event("warning", "refused", o.message);
  return o;
}

// A refusal that comes from an error rather than a hook's verdict (the kubelet unreachable, the
// ledger busy, sysfs unreadable): one decision line with the hook it stopped and the GPUs the
// spec named so far, like every other decision, then the refusal.
StartOutcome RefuseError(DecisionLog& log, const Error& e, const ShimConfig& cfg,
                         const std::string& hook = "", const std::vector<VfioRef>* refs = nullptr) {
  std::string m = e.message();
  if (!StartsWith(m, "vfio-gpu:")) m = "vfio-gpu: " + m;
  if (!hook.empty()) {
    Decision d{hook, "refused", {}, -1, "", m, false};
    std::set<std::string> bdfs, units, groups;
    for (const auto& r : refs ? *refs : std::vector<VfioRef>{}) {
      bdfs.insert(r.bdfs.begin(), r.bdfs.end());
      if (!r.unit_id.empty()) units.insert(r.unit_id);
      if (r.group >= 0) groups.insert(std::to_string(r.group));
    }
    d.bdfs.assign(bdfs.begin(), bdfs.end());
    d.unit = Join(std::vector<std::string>(units.begin(), units.end()), ",");
    if (groups.size() == 1) d.group = std::stoi(*groups.begin());
    log.Decide(d);
  }
  return Refuse(log, Refusal{m, e.kind(), {}}, cfg);
}

// The rewritten config.json replaces the old one atomically (Kata never reads half a spec), without
// fsync: the bundle lives on containerd's state dir under /run, and after a power loss neither it
// nor the VM it describes exists any more.
Status ReplaceSpec(const std::string& path, const std::string& content, mode_t mode) {
  std::string tmp = JoinPath(Dirname(path), ".config.json." + std::to_string(::getpid()) + ".tmp");
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Error("cannot create " + tmp + ": " + std::strerror(errno));
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return Error("cannot write " + tmp + ": " + std::strerror(e));
    }
    off += static_cast<size_t>(n);
  }
  (void)::fchmod(fd, mode);  // the umask must not narrow the spec's mode
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return Error("cannot replace " + path + ": " + std::strerror(e));
  }
  return Status::Ok();
}

bool Apply(DecisionLog& log, const HookResult& r) {
  for (const auto& d : r.decisions) log.Decide(d);
  return !r.refusal.has_value();
}

// The sandbox's bundle for a container spec: containerd keeps bundles of one namespace side by
// side (<state>/io.containerd.runtime.v2.task/<ns>/<id>).
std::string SandboxBundle(const SpecIdentity& id, const std::string& bundle) {
  if (id.role != SpecRole::kContainer) return bundle;
  std::string sibling = JoinPath(Dirname(bundle), id.sandbox_id);
  return IsDir(sibling) ? sibling : bundle;
}

}  // namespace

StartOutcome RunStart(const ShimConfig& cfg, const ShimArgs& args, const std::string& bundle,
                      const std::function<const std::string&()>& read_stdin, DecisionLog& log) {
  std::string spec_path = JoinPath(bundle, "config.json");
  auto text = ReadFile(spec_path);
  if (!text) return RefuseError(log, text.error().Wrap("cannot read the OCI spec"), cfg);
  auto parsed = ReadOciSpec(*text, spec_path, args.id);
  if (!parsed) return RefuseError(log, parsed.error(), cfg);
  OciSpec spec = std::move(*parsed);
  log.SetIdentity(spec.identity);

  // Cheap exits first: most containers have no VFIO device and no CDI name of ours, and then
  // nothing below reads sysfs, the ledger or the kubelet.
  bool has_vfio = false;
  for (const auto& d : spec.devices)
    if (GroupOfDevicePath(d.path, cfg.roots) || CdevOfDevicePath(d.path, cfg.roots))
      has_vfio = true;
  // A VFIO node's numbers at another path (an alias) reach the GPU as surely as its path: the
  // host's VFIO nodes are listed only when the spec has character devices elsewhere.
  std::optional<VfioNodes> nodes;
  if (MayHoldAliases(spec, cfg.roots)) {
    nodes = ReadVfioNodes(cfg.roots);
    for (const auto& d : spec.devices)
      if (auto num = NumbersOf(d); num && nodes->majors.count(num->first)) has_vfio = true;
  }
  auto cdi_names = CdiAnnotationNames(spec, cfg);
  bool names_gpus = has_vfio || !cdi_names.empty();
  bool in_k8s = spec.identity.InKubernetes();
  bool is_sandbox = spec.identity.role != SpecRole::kContainer;  // a pod sandbox or a plain run
  // Kata < 3.24 learns the pod's GPUs only from the sandbox spec: the cold-plug plan needs the
  // allocation whatever the authorize mode.
  bool plan = in_k8s && spec.identity.role == SpecRole::kSandbox && !cfg.kata_pod_resources;
  bool authorizing = in_k8s && cfg.authorize != AuthorizeMode::kOff;

  HookResult guard = GuardAnnotations(spec, cfg);
  if (!Apply(log, guard)) return Refuse(log, *guard.refusal, cfg);

  // The pod's allocation, asked (through the gRPC helper, a process of its own) only when a hook
  // needs it.
  std::vector<VfioRef> refs;  // the GPUs the spec names, once collected
  std::optional<PodAllocation> allocation;
  bool asked = false;
  auto ask = [&]() -> std::optional<StartOutcome> {
    if (asked) return std::nullopt;
    asked = true;
    auto a = QueryPodAllocation(cfg, spec.identity.pod_namespace, spec.identity.pod_name);
    if (!a) {
      if (cfg.authorize == AuthorizeMode::kEnforce || names_gpus || plan ||
          a.error().kind() != ErrorKind::kTransient)
        return RefuseError(
            log, a.error().Wrap("cannot learn the GPUs allocated to pod " + spec.identity.Pod()),
            cfg, "authorize", &refs);
      log.Event("warning", "allocation",
                "pod " + spec.identity.Pod() + ": " + a.error().message() + " (authorize " +
                    AuthorizeModeName(cfg.authorize) + ": going on without it)");
      return std::nullopt;
    }
    allocation = std::move(*a);
    log.Event("info", "allocation",
              "pod " + spec.identity.Pod() + " (" + allocation->method + "): " +
                  (allocation->found ? std::to_string(allocation->units.size()) + " GPU unit(s)"
                                     : "not known to the kubelet"));
    return std::nullopt;
  };
  if (plan)
    if (auto refused = ask()) return *refused;
  bool allocated = allocation && !allocation->units.empty();

  std::optional<HostFacts> host;
  if (names_gpus || (plan && allocated)) {
    bool plan_annotations = plan && cfg.cold_plug_form == ColdPlugForm::kCdiAnnotations;
    CdiRegistry cdi = cdi_names.empty() && !plan_annotations
                          ? CdiRegistry()
                          : CdiRegistry::Load(cfg.cdi_dirs, cfg.resources);
    std::set<int> extra;
    for (const auto& [key, name] : cdi_names)
      if (const CdiDeviceEntry* e = cdi.Find(name))
        for (const auto& p : e->device_paths)
          if (auto g = VfioGroupOfPath(p)) extra.insert(*g);
    if (plan && allocation)
      for (const auto& id : allocation->units)
        if (auto g = GroupOfBdf(cfg.roots, id)) extra.insert(*g);
    if (!nodes) nodes = ReadVfioNodes(cfg.roots);
    GroupsOfInterest interest = GroupsNamedBy(cfg.roots, spec, extra, *nodes);
    auto snap = ScanForStart(cfg.roots, interest, ShimSelection(cfg));
    if (!snap)
      return RefuseError(log, snap.error().Wrap("cannot scan the host's GPUs"), cfg, "collect");
    host = GatherHostFacts(cfg.roots, std::move(*snap), spec, extra, std::move(*nodes));
    // A referenced group that is gone: our CDI specs still say which GPU it was.
    for (const auto& [group, facts] : host->groups) {
      if (facts.exists) continue;
      if (cdi.size() == 0) cdi = CdiRegistry::Load(cfg.cdi_dirs, cfg.resources);
      if (auto unit = cdi.UnitOfGroup(group)) host->vanished_units[group] = *unit;
    }

    CollectResult collected = Collect(spec, *host, cdi, cfg);
    for (const auto& d : collected.decisions) log.Decide(d);
    refs = std::move(collected.refs);

    HookResult planned_plug = PlanColdPlug(spec, refs, allocation, *host, cdi, cfg);
    if (!Apply(log, planned_plug)) return Refuse(log, *planned_plug.refusal, cfg);
    HookResult valid = Validate(refs, *host, cfg);
    if (!Apply(log, valid)) return Refuse(log, *valid.refusal, cfg);
  }

  Ledger ledger(cfg.LedgerDir());
  std::optional<LedgerView> view;
  if (host && !refs.empty()) {
    auto v = ledger.Load();
    if (!v) return RefuseError(log, v.error(), cfg, "dedup", &refs);
    view = std::move(*v);
  }
  // Authorize: from this pod's own claims when they cover every GPU (later containers of a pod),
  // else against the kubelet's answer.
  bool enforced = false;
  if (host) {
    std::optional<HookResult> by_claims;
    if (cfg.authorize == AuthorizeMode::kEnforce && view)
      by_claims = AuthorizedByClaims(refs, spec.identity, *view);
    if (by_claims) {
      Apply(log, *by_claims);
      enforced = true;
    } else {
      if (authorizing && names_gpus)
        if (auto refused = ask()) return *refused;
      HookResult auth = Authorize(refs, spec.identity, allocation, cfg);
      if (!Apply(log, auth)) return Refuse(log, *auth.refusal, cfg);
      enforced =
          cfg.authorize == AuthorizeMode::kEnforce && in_k8s && allocation && allocation->found;
    }
  }

  std::vector<PlannedClaim> planned;
  if (view) {
    DedupResult dd = Deduplicate(spec, refs, *host, *view, cfg);
    if (!Apply(log, dd.result)) return Refuse(log, *dd.result.refusal, cfg);
    planned = std::move(dd.claims);
  }

  // Runtime: a sandbox whose spec names GPUs, or a Kubernetes sandbox whose pod may have GPUs
  // that Kata (>= 3.24) cold-plugs by itself. In the second case the configuration is read first
  // and the kubelet asked only when it cannot pass GPUs through.
  bool may_have_gpus =
      !refs.empty() || allocated || (authorizing && spec.identity.role == SpecRole::kSandbox);
  if (is_sandbox && may_have_gpus) {
    auto opts = DecodeRuntimeOptions(read_stdin());
    std::string from_opts = opts ? opts->config_path : "";
    std::string chosen = !from_opts.empty() ? from_opts : cfg.kata_config_path;
    const char* env = std::getenv("KATA_CONF_FILE");
    KataConfigView kata = chosen.empty() && opts && !opts->config_body.empty()
                              ? KataViewFromText("runtime options ConfigBody", opts->config_body)
                              : ReadKataConfig(EffectiveKataConfigPath(chosen, env ? env : ""));
    // The sandbox's GPUs: what its spec names, else what the kubelet allocated to the pod.
    std::set<std::string> gpus;
    for (const auto& r : refs) gpus.insert(r.bdfs.begin(), r.bdfs.end());
    if (gpus.empty() && !allocated && !kata.GpuCapable())
      if (auto refused = ask()) return *refused;
    if (gpus.empty() && allocation) gpus = allocation->units;
    std::optional<KataConfigView> target;
    if (!gpus.empty() && !kata.GpuCapable() && !cfg.runtime_switch_config.empty())
      target = ReadKataConfig(cfg.runtime_switch_config);
    RuntimeResult rt = CheckRuntime(
        spec.identity, std::vector<std::string>(gpus.begin(), gpus.end()), kata, target, cfg);
    if (!Apply(log, rt.result)) return Refuse(log, *rt.result.refusal, cfg);
    if (rt.switch_to) ApplyRuntimeSwitch(spec, *rt.switch_to);
  }

  StartOutcome out;
  if (!planned.empty()) {
    std::vector<ClaimRecord> records;
    int64_t pid = ::getpid();
    int64_t start = ProcessStartTicks(pid);
    for (const auto& p : planned) {
      ClaimRecord c;
      c.bdf = p.bdf;
      c.sandbox_id = spec.identity.sandbox_id;
      if (enforced) c.authorized_pod = spec.identity.Pod();
      c.unit = p.unit;
      c.group = p.group;
      c.node = p.node;
      c.bundle = SandboxBundle(spec.identity, bundle);
      c.pid = pid;
      c.pid_start = start;
      c.time = ::time(nullptr);
      records.push_back(std::move(c));
    }
    if (auto s = ledger.ClaimAll(records); !s)
      return RefuseError(log, s.error(), cfg, "dedup", &refs);
    for (const auto& r : records) out.claimed.push_back(r.bdf);
    out.sandbox_id = spec.identity.sandbox_id;
  }

  if (spec.dirty) {
    struct stat st {};
    mode_t mode = ::stat(spec_path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
    if (auto s = ReplaceSpec(spec_path, spec.Dump(), mode); !s) {
      (void)ledger.Release(spec.identity.sandbox_id);
      return RefuseError(log, s.error().Wrap("cannot write the OCI spec back"), cfg);
    }
    log.Event("info", "spec", "rewrote " + spec_path);
  }
  return out;
}

void RunDelete(const ShimConfig& cfg, const ShimArgs& args, const std::string& bundle,
               DecisionLog& log) {
  (void)bundle;
  // Claims are keyed by sandbox ID, so deleting a container releases nothing and deleting a
  // sandbox (or a plain `ctr` run) releases its GPUs, whatever its config.json says.
  Ledger ledger(cfg.LedgerDir());
  if (!IsDir(ledger.dir()) || args.id.empty()) return;
  auto before = ledger.Load();  // what each claim was (unit, group, pod), for the log lines
  auto released = ledger.Release(args.id);
  if (!released) {
    log.Event("error", "release",
              "cannot release GPUs of " + args.id + ": " + released.error().message());
    return;
  }
  for (const auto& bdf : *released) {
    Decision d{"ledger", "released", {bdf}, -1, "", "sandbox " + args.id + " deleted", false};
    if (before)
      if (auto c = before->find(bdf); c != before->end()) {
        d.group = c->second.group;
        d.unit = c->second.unit;
        if (!c->second.authorized_pod.empty())
          d.reason += " (pod " + c->second.authorized_pod + ")";
      }
    log.Decide(d);
  }
}

// ---- main ----

namespace {

// Puts `bytes` back on fd 0 for the downstream shim: a pipe like containerd's when it fits,
// a memfd otherwise.
bool RestoreStdin(const std::string& bytes) {
  if (bytes.size() <= 65536) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return false;
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = ::write(p[1], bytes.data() + off, bytes.size() - off);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    ::close(p[1]);
    bool ok = ::dup2(p[0], 0) == 0;
    ::close(p[0]);
    return ok;
  }
  int fd = ::memfd_create("shim-stdin", MFD_CLOEXEC);
  if (fd < 0) return false;
  if (::write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) return false;
  ::lseek(fd, 0, SEEK_SET);
  bool ok = ::dup2(fd, 0) == 0;
  ::close(fd);
  return ok;
}

std::string ResolveOnPath(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  for (const auto& dir : Split(path ? path : "/usr/local/bin:/usr/bin:/bin", ':')) {
    std::string candidate = JoinPath(dir.empty() ? "." : dir, name);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

int Fail(const std::string& line) {
  std::string l = line + "\n";
  (void)!::write(1, l.data(), l.size());
  return 1;
}

}  // namespace

int ShimMain(int argc, char** argv) {
  std::vector<std::string> av(argv, argv + argc);
  ShimArgs args = ParseShimArgs(av);
  bool start = args.command == "start";
  bool del = args.command == "delete";

  auto cfg = LoadShimConfig();
  std::string downstream = ResolveOnPath(cfg ? cfg->downstream_shim : "containerd-shim-kata-v2");
  if (!cfg && start) return Fail("vfio-gpu: " + cfg.error().message());
  if (downstream.empty())
    return Fail("vfio-gpu: downstream shim \"" + (cfg ? cfg->downstream_shim : "") +
                "\" is not on PATH; set downstream_shim in the shim config to its full path");
  auto self = RealPath("/proc/self/exe");
  auto target = RealPath(downstream);
  if (self && target && *self == *target)
    return Fail("vfio-gpu: downstream_shim " + downstream +
                " is this shim itself; point it at "
                "Kata's containerd-shim-kata-v2");

  std::string stdin_bytes;
  bool stdin_read = false;
  std::function<void()> release_on_failure;
  if (cfg && (start || del)) {
    char cwd[4096];
    std::string bundle = args.bundle;
    if (bundle.empty() && ::getcwd(cwd, sizeof cwd)) bundle = cwd;
    DecisionLog log(*cfg, args);
    if (start) {
      auto read_stdin = [&]() -> const std::string& {
        if (!stdin_read) {
          stdin_read = true;
          char buf[65536];
          for (;;) {
            ssize_t n = ::read(0, buf, sizeof buf);
            if (n > 0)
              stdin_bytes.append(buf, static_cast<size_t>(n));
            else if (n < 0 && errno == EINTR)
              continue;
            else
              break;
          }
        }
        return stdin_bytes;
      };
      StartOutcome o = RunStart(*cfg, args, bundle, read_stdin, log);
      if (o.refused) return Fail(o.message);
      // What this start claimed goes back if the hand-over fails: no delete will follow.
      release_on_failure = [cfg, o] {
        if (!o.claimed.empty()) (void)Ledger(cfg->LedgerDir()).Release(o.sandbox_id, &o.claimed);
      };
      if (stdin_read && !RestoreStdin(stdin_bytes)) {
        int e = errno;
        release_on_failure();
        return Fail("vfio-gpu: cannot hand the runtime options to " + downstream + ": " +
                    std::strerror(e));
      }
    } else {
      RunDelete(*cfg, args, bundle, log);
    }
  }
  av[0] = downstream;
  std::vector<char*> cargv;
  for (auto& s : av) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  ::execv(downstream.c_str(), cargv.data());
  int e = errno;
  if (release_on_failure) release_on_failure();
  return Fail("vfio-gpu: cannot exec downstream shim " + downstream + ": " + std::strerror(e) +
              "; check downstream_shim in the shim config");
}

}  // namespace vfio_gpu
