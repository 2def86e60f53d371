// Errors as values that gather context on the way up (crun's style): the message a user finally
// sees reads as a chain from the symptom to the cause and ends in what to do.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace vfio_gpu {

// Whether retrying the same operation later can succeed (KEP-5322's split, seed 002).
enum class ErrorKind {
  kInvalid,    // bad input: a flag, a config key, a malformed file; retrying won't help
  kNotFound,   // the thing named does not exist
  kPermanent,  // a device fault: take the device out of service
  kTransient,  // a peer is unavailable or busy: retry
  kInternal,
};

class Error {
 public:
  Error() = default;
  explicit Error(std::string message, ErrorKind kind = ErrorKind::kInvalid)
      : message_(std::move(message)), kind_(kind) {}

  const std::string& message() const { return message_; }
  ErrorKind kind() const { return kind_; }

  // Prefixes context: Error("no such file").Wrap("read config /etc/x.json") reads
  // "read config /etc/x.json: no such file".
  Error Wrap(const std::string& context) const& { return Error(context + ": " + message_, kind_); }
  Error Wrap(const std::string& context) && {
    message_ = context + ": " + message_;
    return std::move(*this);
  }

 private:
  std::string message_;
  ErrorKind kind_ = ErrorKind::kInvalid;
};

// A value or an Error. Small on purpose: ok(), value(), error(), and operator-> for the value.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// For operations that return nothing but can fail.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  static Status Ok() { return {}; }

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

}  // namespace vfio_gpu
