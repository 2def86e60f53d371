#include "qmp/qmp_session.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/log.h"

namespace vfio_gpu::qmp {
namespace {

// QEMU's biggest answers (query-pci, qom-list of a busy container) are tens of KB; anything this
// large is not QMP.
constexpr size_t kMaxMessageBytes = 16u << 20;

using Clock = std::chrono::steady_clock;

int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > INT32_MAX ? INT32_MAX : static_cast<int>(left.count());
}

std::string Errno(int err) {
  return std::strerror(err);
}

// Waits for `events` on fd until the deadline: true when ready, false on timeout.
Result<bool> WaitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = poll(&p, 1, RemainingMs(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return Error("poll: " + Errno(errno), ErrorKind::kInternal);
  }
}

}  // namespace

std::string FormatSeconds(std::chrono::milliseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(d.count()) / 1000.0);
  return buf;
}

Result<QmpSession> QmpSession::Connect(const std::string& path, std::chrono::milliseconds timeout) {
  const std::string what = "QMP socket " + path;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    return Error(what + ": a unix socket path must be 1 to " +
                 std::to_string(sizeof addr.sun_path - 1) + " bytes long");
  std::memcpy(addr.sun_path, path.data(), path.size());

  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Error(what + ": socket: " + Errno(errno), ErrorKind::kInternal);
  QmpSession session(fd, path, timeout);

  int rc;
  do {
    rc = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    int err = errno;
    switch (err) {
      case ENOENT:
        return Error(what + " does not exist: is the VM running? (a Kata sandbox's is " +
                         "/run/vc/vm/<sandbox>/qmp.sock)",
                     ErrorKind::kNotFound);
      case ECONNREFUSED:
        return Error(what + ": connection refused: no QEMU listens there (the VM has exited " +
                         "or is still starting); retry or check the VM",
                     ErrorKind::kTransient);
      case EAGAIN:
        return Error(what + " is busy: its connection queue is full (another client holds " +
                         "the socket; QEMU serves one QMP client at a time); retry",
                     ErrorKind::kTransient);
      case EACCES:
      case EPERM:
        return Error(what + ": " + Errno(err) + "; run as root", ErrorKind::kInvalid);
      default:
        return Error(what + ": connect: " + Errno(err), ErrorKind::kTransient);
    }
  }

  auto deadline = Clock::now() + timeout;
  bool timed_out = false;
  auto greeting = session.ReadMessage(deadline, "the QMP greeting", &timed_out);
  if (!greeting) {
    if (timed_out)
      return Error(what + ": no QMP greeting within " + FormatSeconds(timeout) +
                       ": the socket is busy (another client holds it; QEMU serves one QMP " +
                       "client at a time and Kata connects per operation); retry",
                   ErrorKind::kTransient);
    return greeting.error().Wrap(what);
  }
  if (!greeting->Get("QMP").is_object())
    return Error(what + ": not a QMP greeting: " + greeting->Dump(), ErrorKind::kInvalid);
  session.greeting_ = greeting->Get("QMP");

  auto caps = session.CallUntil("qmp_capabilities", Json(), deadline);
  if (!caps) return caps.error().Wrap(what);
  if (!caps->ok)
    return Error(what + ": qmp_capabilities: QEMU answered " + caps->error_class + ": " +
                 caps->error_desc);
  return session;
}

QmpSession::QmpSession(QmpSession&& other) noexcept
    : fd_(other.fd_),
      path_(std::move(other.path_)),
      timeout_(other.timeout_),
      buffer_(std::move(other.buffer_)),
      greeting_(std::move(other.greeting_)),
      events_skipped_(other.events_skipped_),
      next_id_(other.next_id_) {
  other.fd_ = -1;
}

QmpSession& QmpSession::operator=(QmpSession&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    other.fd_ = -1;
    path_ = std::move(other.path_);
    timeout_ = other.timeout_;
    buffer_ = std::move(other.buffer_);
    greeting_ = std::move(other.greeting_);
    events_skipped_ = other.events_skipped_;
    next_id_ = other.next_id_;
  }
  return *this;
}

QmpSession::~QmpSession() {
  Close();
}

void QmpSession::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  buffer_.clear();
}

Status QmpSession::SendLine(const std::string& line, Deadline deadline) {
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      auto ready = WaitFor(fd_, POLLOUT, deadline);
      if (!ready) return ready.error();
      if (!*ready) return Error("QEMU does not read the socket", ErrorKind::kTransient);
      continue;
    }
    return Error("send: " + Errno(errno) + " (QEMU closed the socket?)", ErrorKind::kTransient);
  }
  return Status::Ok();
}

Result<Json> QmpSession::ReadMessage(Deadline deadline, std::string_view waiting_for,
                                     bool* timed_out) {
  for (;;) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      auto msg = Json::Parse(line, "QMP message");
      if (!msg) return msg.error();
      if (!msg->is_object())
        return Error("QMP message is not a JSON object: " + line, ErrorKind::kInvalid);
      return msg;
    }
    if (buffer_.size() > kMaxMessageBytes)
      return Error("QMP message longer than " + std::to_string(kMaxMessageBytes) +
                       " bytes without a newline: not QMP",
                   ErrorKind::kInvalid);
    auto ready = WaitFor(fd_, POLLIN, deadline);
    if (!ready) return ready.error();
    if (!*ready) {
      if (timed_out) *timed_out = true;
      return Error("no answer within " + FormatSeconds(timeout_) + " while waiting for " +
                       std::string(waiting_for),
                   ErrorKind::kTransient);
    }
    char chunk[65536];
    ssize_t n = read(fd_, chunk, sizeof chunk);
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
    } else if (n == 0) {
      return Error("QEMU closed the socket while we waited for " + std::string(waiting_for),
                   ErrorKind::kTransient);
    } else if (errno != EINTR && errno != EAGAIN) {
      return Error("read: " + Errno(errno), ErrorKind::kTransient);
    }
  }
}

Result<QmpReply> QmpSession::CallUntil(std::string_view command, const Json& args,
                                       Deadline deadline) {
  if (fd_ < 0)
    return Error(std::string(command) + ": the QMP session is closed", ErrorKind::kInternal);
  // Our own id lets us tell our reply from a stale one (QEMU echoes `id`).
  std::string id = "vfio-gpu-" + std::to_string(next_id_++);
  Json msg = Json::Object();
  msg.Set("execute", Json::String(command));
  if (!args.is_null()) msg.Set("arguments", args);
  msg.Set("id", Json::String(id));
  std::string waiting_for = "the reply to " + std::string(command);

  auto fail = [&](const Error& e) {
    // After a broken exchange a late reply could still arrive: never reuse this connection.
    Close();
    return e.Wrap(std::string(command));
  };
  if (Status s = SendLine(msg.Dump() + "\n", deadline); !s) return fail(s.error());
  for (;;) {
    auto m = ReadMessage(deadline, waiting_for);
    if (!m) return fail(m.error());
    if (m->Has("event")) {
      ++events_skipped_;
      spdlog::debug("qmp {}: skipped event {} while waiting for {}", path_,
                    m->Get("event").AsString(), command);
      continue;
    }
    if (!m->Has("return") && !m->Has("error"))
      return fail(Error("unexpected QMP message: " + m->Dump(), ErrorKind::kInvalid));
    if (m->Has("id") && m->Get("id").AsString() != id) continue;  // not ours
    QmpReply reply;
    if (m->Has("return")) {
      reply.ok = true;
      reply.value = m->Get("return");
    } else {
      Json e = m->Get("error");
      reply.error_class = e.Get("class").AsString();
      reply.error_desc = e.Get("desc").AsString();
    }
    return reply;
  }
}

Result<QmpReply> QmpSession::Call(std::string_view command, const Json& args) {
  return CallUntil(command, args, Clock::now() + timeout_);
}

Result<Json> QmpSession::Execute(std::string_view command, const Json& args) {
  auto reply = Call(command, args);
  if (!reply) return reply.error();
  if (reply->ok) return std::move(reply->value);
  ErrorKind kind =
      reply->error_class == "DeviceNotFound" ? ErrorKind::kNotFound : ErrorKind::kInvalid;
  return Error(
      std::string(command) + ": QEMU answered " + reply->error_class + ": " + reply->error_desc,
      kind);
}

}  // namespace vfio_gpu::qmp
