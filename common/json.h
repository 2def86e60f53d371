// A thin owning wrapper around json-c. Reading returns Results that name the field that was wrong;
// writing builds objects in insertion order so output is stable (golden files, diffs).
#pragma once

#include <json-c/json.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace vfio_gpu {

class Json {
 public:
  Json() = default;  // null
  explicit Json(json_object* owned) : o_(owned) {}
  ~Json() { json_object_put(o_); }
  Json(const Json& other) : o_(json_object_get(other.o_)) {}
  Json& operator=(const Json& other) {
    if (this != &other) {
      json_object_put(o_);
      o_ = json_object_get(other.o_);
    }
    return *this;
  }
  Json(Json&& other) noexcept : o_(other.o_) { other.o_ = nullptr; }
  Json& operator=(Json&& other) noexcept {
    std::swap(o_, other.o_);
    return *this;
  }

  static Json Object() { return Json(json_object_new_object()); }
  static Json Array() { return Json(json_object_new_array()); }
  static Json String(std::string_view s) {
    return Json(json_object_new_string_len(s.data(), static_cast<int>(s.size())));
  }
  static Json Int(int64_t v) { return Json(json_object_new_int64(v)); }
  static Json Bool(bool v) { return Json(json_object_new_boolean(v)); }
  static Json Double(double v) { return Json(json_object_new_double(v)); }
  static Json Null() { return Json(); }

  // Parses text; `what` names the source (a file path) for the error message.
  static Result<Json> Parse(std::string_view text, std::string_view what);
  static Result<Json> ParseFile(const std::string& path);

  json_object* get() const { return o_; }
  bool is_null() const { return o_ == nullptr; }
  bool is_object() const { return json_object_is_type(o_, json_type_object); }
  bool is_array() const { return json_object_is_type(o_, json_type_array); }
  bool is_string() const { return json_object_is_type(o_, json_type_string); }
  bool is_bool() const { return json_object_is_type(o_, json_type_boolean); }
  bool is_int() const { return json_object_is_type(o_, json_type_int); }
  bool is_number() const { return is_int() || json_object_is_type(o_, json_type_double); }

  // Object access. Get returns a null Json when absent.
  Json Get(std::string_view key) const;
  bool Has(std::string_view key) const;
  std::vector<std::string> Keys() const;
  Json& Set(std::string_view key, Json value);  // returns *this for chaining
  void Remove(std::string_view key);

  // Array access.
  size_t size() const;
  Json At(size_t i) const;
  Json& Append(Json value);

  // Scalars (caller checks the type first; wrong types give "" / 0 / false).
  std::string AsString() const;
  int64_t AsInt() const;
  bool AsBool() const;
  double AsDouble() const;

  // Serialization. Pretty uses two-space indentation and no escaped slashes.
  std::string Dump(bool pretty = false) const;

  bool operator==(const Json& other) const { return json_object_equal(o_, other.o_) != 0; }

 private:
  json_object* o_ = nullptr;
};

// Reads a JSON object field by field, refusing unknown keys and wrong types with a message that
// names the key and the source ("config /etc/vfio-gpu/plugin.json: key \"vendors\": expected an
// array of strings"). Call Finish() at the end to report keys nobody asked for.
class StrictObject {
 public:
  StrictObject(Json object, std::string source);

  std::optional<std::string> String(std::string_view key);
  std::optional<bool> Bool(std::string_view key);
  std::optional<int64_t> Int(std::string_view key);
  std::optional<std::vector<std::string>> Strings(std::string_view key);
  std::optional<Json> Raw(std::string_view key);
  // Records an error for a key whose value is present but bad (e.g. out of range).
  void Fail(std::string_view key, const std::string& why);

  // The first error seen, or an unknown-key error. OK when everything was consumed and valid.
  Status Finish();
  const std::string& source() const { return source_; }

 private:
  Json o_;
  std::string source_;
  std::vector<std::string> seen_;
  std::optional<Error> error_;
};

}  // namespace vfio_gpu
