#include "shim-hooks/ledger.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <thread>

#include "common/files.h"
#include "common/json.h"
#include "common/strings.h"

namespace vfio_gpu {

std::string ClaimRecord::ToJson() const {
  Json o = Json::Object();
  o.Set("bdf", Json::String(bdf));
  o.Set("sandbox_id", Json::String(sandbox_id));
  if (!authorized_pod.empty()) o.Set("authorized_pod", Json::String(authorized_pod));
  o.Set("unit", Json::String(unit));
  o.Set("group", Json::Int(group));
  if (node) {
    o.Set("major", Json::Int(node->major));
    o.Set("minor", Json::Int(node->minor));
  }
  o.Set("bundle", Json::String(bundle));
  o.Set("pid", Json::Int(pid));
  o.Set("pid_start", Json::Int(pid_start));
  o.Set("time", Json::Int(time));
  return o.Dump() + "\n";
}

Result<ClaimRecord> ClaimRecord::FromJson(std::string_view text, const std::string& what) {
  auto j = Json::Parse(text, what);
  if (!j) return j.error();
  if (!j->is_object() || !j->Get("bdf").is_string() || !j->Get("sandbox_id").is_string())
    return Error(what + ": not a ledger claim (bdf and sandbox_id missing)");
  ClaimRecord c;
  c.bdf = j->Get("bdf").AsString();
  c.sandbox_id = j->Get("sandbox_id").AsString();
  c.authorized_pod = j->Get("authorized_pod").AsString();
  c.unit = j->Get("unit").AsString();
  c.group = j->Has("group") ? static_cast<int>(j->Get("group").AsInt()) : -1;
  if (j->Get("major").is_int() && j->Get("minor").is_int())
    c.node = DevNum{j->Get("major").AsInt(), j->Get("minor").AsInt()};
  c.bundle = j->Get("bundle").AsString();
  c.pid = j->Get("pid").AsInt();
  c.pid_start = j->Get("pid_start").AsInt();
  c.time = j->Get("time").AsInt();
  return c;
}

int64_t ProcessStartTicks(int64_t pid) {
  auto stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return 0;
  // The command name may hold spaces and parentheses: fields start after the last ')'.
  auto close = stat->rfind(')');
  if (close == std::string::npos) return 0;
  auto fields = Split(std::string_view(*stat).substr(close + 2), ' ');
  // fields[0] is field 3 (state); starttime is field 22.
  if (fields.size() < 20) return 0;
  return ParseInt(fields[19]).value_or(0);
}

bool ProcessAlive(int64_t pid, int64_t start_ticks) {
  if (pid <= 0) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
  if (start_ticks == 0) return PathExists("/proc/" + std::to_string(pid));
  int64_t now = ProcessStartTicks(pid);
  return now == start_ticks;
}

// Holds the flock; closing the fd releases it.
class Ledger::Lock {
 public:
  explicit Lock(int fd) : fd_(fd) {}
  ~Lock() {
    if (fd_ >= 0) ::close(fd_);
  }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  int fd_;
};

Ledger::Ledger(std::string dir) : dir_(std::move(dir)) {}

std::string Ledger::ClaimPath(const std::string& bdf) const {
  return JoinPath(dir_, bdf);
}

bool Ledger::Stale(const ClaimRecord& c) const {
  if (sandbox_gone) return sandbox_gone(c);
  return (c.bundle.empty() || !IsDir(c.bundle)) && !ProcessAlive(c.pid, c.pid_start);
}

Result<int> Ledger::AcquireLock() const {
  if (auto s = MakeDirs(dir_, 0755); !s) return s.error().Wrap("cannot create the GPU ledger");
  std::string path = JoinPath(dir_, ".lock");
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return Error("cannot open the GPU ledger lock " + path + ": " + std::strerror(errno),
                 ErrorKind::kTransient);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(lock_timeout_ms);
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      int e = errno;
      ::close(fd);
      return Error("cannot lock the GPU ledger " + path + ": " + std::strerror(e),
                   ErrorKind::kTransient);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::close(fd);
      return Error("the GPU ledger " + dir_ + " stayed locked for " +
                       std::to_string(lock_timeout_ms) +
                       " ms (other sandboxes are starting); "
                       "this is transient, the kubelet retries",
                   ErrorKind::kTransient);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return fd;
}

void Ledger::RemoveOrphans() const {
  auto names = ListDir(dir_);
  if (!names) return;
  for (const auto& n : *names)
    if (StartsWith(n, ".") && EndsWith(n, ".tmp")) (void)RemoveFile(JoinPath(dir_, n));
}

Result<LedgerView> Ledger::Load() const {
  LedgerView view;
  auto names = ListDir(dir_);
  if (!names) return view;  // no ledger yet: nothing claimed
  for (const auto& n : *names) {
    if (StartsWith(n, ".")) continue;
    auto text = ReadFile(JoinPath(dir_, n));
    if (!text) continue;  // released meanwhile
    auto c = ClaimRecord::FromJson(*text, ClaimPath(n));
    ClaimView v;
    if (!c) {
      v.sandbox_id = "(unreadable claim)";
      v.stale = true;
    } else {
      v.sandbox_id = c->sandbox_id;
      v.authorized_pod = c->authorized_pod;
      v.unit = c->unit;
      v.bundle = c->bundle;
      v.pid = c->pid;
      v.group = c->group;
      v.node = c->node;
      v.stale = Stale(*c);
    }
    view[n] = v;
  }
  return view;
}

Status Ledger::WriteClaim(const ClaimRecord& c) const {
  std::string final_path = ClaimPath(c.bdf);
  std::string temp = JoinPath(dir_, "." + c.bdf + "." + std::to_string(::getpid()) + ".tmp");
  std::string content = c.ToJson();
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error("cannot write ledger claim " + temp + ": " + std::strerror(errno));
  size_t half = content.size() / 2;
  bool ok = ::write(fd, content.data(), half) == static_cast<ssize_t>(half);
  if (crash_point) crash_point("temp-half-written");
  ok = ok && ::write(fd, content.data() + half, content.size() - half) ==
                 static_cast<ssize_t>(content.size() - half);
  ok = ok && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) {
    (void)RemoveFile(temp);
    return Error("cannot write ledger claim " + temp + ": " + std::strerror(errno));
  }
  if (crash_point) crash_point("temp-written");
  if (::link(temp.c_str(), final_path.c_str()) != 0) {
    int e = errno;
    (void)RemoveFile(temp);
    if (e == EEXIST) return Error("GPU " + c.bdf + " was claimed meanwhile", ErrorKind::kTransient);
    return Error("cannot create ledger claim " + final_path + ": " + std::strerror(e));
  }
  if (crash_point) crash_point("linked");
  (void)RemoveFile(temp);
  return Status::Ok();
}

Status Ledger::ClaimAll(const std::vector<ClaimRecord>& claims) {
  auto fd = AcquireLock();
  if (!fd) return fd.error();
  Lock lock(*fd);
  RemoveOrphans();
  // Check everything before writing anything.
  std::vector<const ClaimRecord*> todo;
  for (const auto& c : claims) {
    auto text = ReadFile(ClaimPath(c.bdf));
    if (!text) {
      todo.push_back(&c);
      continue;
    }
    auto held = ClaimRecord::FromJson(*text, ClaimPath(c.bdf));
    if (held && held->sandbox_id == c.sandbox_id) continue;
    if (held && !Stale(*held)) {
      return Error("GPU " + c.bdf + " is already attached to sandbox " + held->sandbox_id +
                   " (bundle " + held->bundle + "): one GPU, one VM");
    }
    // A stale or unreadable claim: its sandbox is gone. Remove it under the lock.
    if (auto s = RemoveFile(ClaimPath(c.bdf)); !s) return s.error().Wrap("cannot reclaim");
    todo.push_back(&c);
  }
  std::vector<std::string> written;
  for (const ClaimRecord* c : todo) {
    if (auto s = WriteClaim(*c); !s) {
      for (const auto& bdf : written) (void)RemoveFile(ClaimPath(bdf));
      return s;
    }
    written.push_back(c->bdf);
  }
  // No fsync of the directory: the ledger lives in the run dir (tmpfs on a node, emptied at boot
  // together with every VM it describes). The one fsync per claim, before its link(2), is what
  // makes a claim's name appear only with its whole content.
  return Status::Ok();
}

Result<std::vector<std::string>> Ledger::Release(const std::string& sandbox_id,
                                                 const std::vector<std::string>* only) {
  std::vector<std::string> released;
  if (!IsDir(dir_)) return released;
  auto fd = AcquireLock();
  if (!fd) return fd.error();
  Lock lock(*fd);
  RemoveOrphans();
  auto names = ListDir(dir_);
  if (!names) return names.error();
  for (const auto& n : *names) {
    if (StartsWith(n, ".")) continue;
    if (only && std::find(only->begin(), only->end(), n) == only->end()) continue;
    auto text = ReadFile(JoinPath(dir_, n));
    if (!text) continue;
    auto c = ClaimRecord::FromJson(*text, ClaimPath(n));
    if (c && c->sandbox_id == sandbox_id) {
      if (auto s = RemoveFile(ClaimPath(n)); !s) return s.error();
      released.push_back(n);
    }
  }
  return released;
}

}  // namespace vfio_gpu
