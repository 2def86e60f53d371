// A QMP client over a unix socket: the greeting, `qmp_capabilities`, then commands, each bounded by
// a deadline. A QMP socket serves one client at a time and Kata connects to it per operation, so a
// session is meant to live for one audit (one operation) and no longer: connect, ask, close.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "common/json.h"
#include "common/result.h"

namespace vfio_gpu::qmp {

// What QEMU answered to one command: either `return` (value) or `error` (class + desc, verbatim).
struct QmpReply {
  bool ok = false;
  Json value;               // the `return` member when ok
  std::string error_class;  // e.g. "GenericError", "DeviceNotFound", "CommandNotFound"
  std::string error_desc;   // e.g. "'nosuch' is not a valid device model name"
};

class QmpSession {
 public:
  // Connects to the QMP socket at `path`, reads the greeting and negotiates capabilities, all
  // within `timeout`. Errors: kNotFound when no socket is there, kTransient when nothing listens or
  // the socket is busy (another client holds it: no greeting within `timeout`), kInvalid for a peer
  // that does not speak QMP. Each later command gets its own `timeout`.
  static Result<QmpSession> Connect(const std::string& path, std::chrono::milliseconds timeout);

  QmpSession(QmpSession&& other) noexcept;
  QmpSession& operator=(QmpSession&& other) noexcept;
  QmpSession(const QmpSession&) = delete;
  QmpSession& operator=(const QmpSession&) = delete;
  ~QmpSession();

  // Runs a command and returns its `return` value. A QEMU error becomes an Error reading
  // "<command>: QEMU answered <class>: <desc>" (kNotFound for DeviceNotFound). `args` may be null.
  Result<Json> Execute(std::string_view command, const Json& args = Json());
  // Like Execute, but QEMU's error comes back as a reply, for callers that branch on its class.
  // Only transport failures (timeout, closed socket, garbage) are Errors.
  Result<QmpReply> Call(std::string_view command, const Json& args = Json());

  // The greeting's `QMP` object (version, capabilities).
  const Json& greeting() const { return greeting_; }
  // Asynchronous events read (and skipped) while waiting for replies, for tests and logs.
  int events_skipped() const { return events_skipped_; }
  const std::string& path() const { return path_; }

  // Closes the socket now (the destructor does too), so QEMU can serve the next client.
  void Close();

 private:
  QmpSession(int fd, std::string path, std::chrono::milliseconds timeout)
      : fd_(fd), path_(std::move(path)), timeout_(timeout) {}

  using Deadline = std::chrono::steady_clock::time_point;
  Status SendLine(const std::string& line, Deadline deadline);
  // The next complete JSON line; `waiting_for` names what we wait for in error messages.
  // `timed_out` tells a silent peer from a closed or broken one.
  Result<Json> ReadMessage(Deadline deadline, std::string_view waiting_for,
                           bool* timed_out = nullptr);
  Result<QmpReply> CallUntil(std::string_view command, const Json& args, Deadline deadline);

  int fd_ = -1;
  std::string path_;
  std::chrono::milliseconds timeout_;
  std::string buffer_;  // bytes read past the last complete line
  Json greeting_;
  int events_skipped_ = 0;
  uint64_t next_id_ = 1;
};

// Seconds with one decimal, for messages ("2.0 s").
std::string FormatSeconds(std::chrono::milliseconds d);

}  // namespace vfio_gpu::qmp
