#include "common/json.h"

#include <algorithm>

#include "common/files.h"
#include "common/strings.h"

namespace vfio_gpu {

Result<Json> Json::Parse(std::string_view text, std::string_view what) {
  json_tokener* tok = json_tokener_new();
  json_object* obj = json_tokener_parse_ex(
      tok, text.data(), static_cast<int>(std::min<size_t>(text.size(), INT32_MAX)));
  json_tokener_error err = json_tokener_get_error(tok);
  size_t consumed = json_tokener_get_parse_end(tok);
  json_tokener_free(tok);
  if (err != json_tokener_success) {
    json_object_put(obj);
    std::string why =
        err == json_tokener_continue ? "unexpected end of input" : json_tokener_error_desc(err);
    return Error(std::string(what) + ": invalid JSON at byte " + std::to_string(consumed) + ": " +
                 why);
  }
  // Anything but whitespace after the value is garbage.
  for (size_t i = consumed; i < text.size(); ++i) {
    char c = text[i];
    if (c != ' ' && c != '\n' && c != '\t' && c != '\r') {
      json_object_put(obj);
      return Error(std::string(what) + ": invalid JSON: trailing data at byte " +
                   std::to_string(i));
    }
  }
  return Json(obj);
}

Result<Json> Json::ParseFile(const std::string& path) {
  auto text = ReadFile(path);
  if (!text) return text.error();
  return Parse(*text, path);
}

Json Json::Get(std::string_view key) const {
  json_object* v = nullptr;
  if (!is_object() || !json_object_object_get_ex(o_, std::string(key).c_str(), &v)) return Json();
  return Json(json_object_get(v));
}

bool Json::Has(std::string_view key) const {
  return is_object() && json_object_object_get_ex(o_, std::string(key).c_str(), nullptr);
}

std::vector<std::string> Json::Keys() const {
  std::vector<std::string> keys;
  if (!is_object()) return keys;
  json_object_object_foreach(o_, k, v) {
    (void)v;
    keys.emplace_back(k);
  }
  return keys;
}

Json& Json::Set(std::string_view key, Json value) {
  json_object_object_add(o_, std::string(key).c_str(), value.o_);
  value.o_ = nullptr;
  return *this;
}

void Json::Remove(std::string_view key) {
  if (is_object()) json_object_object_del(o_, std::string(key).c_str());
}

size_t Json::size() const {
  return is_array() ? json_object_array_length(o_) : 0;
}

Json Json::At(size_t i) const {
  if (!is_array() || i >= size()) return Json();
  return Json(json_object_get(json_object_array_get_idx(o_, i)));
}

Json& Json::Append(Json value) {
  json_object_array_add(o_, value.o_);
  value.o_ = nullptr;
  return *this;
}

std::string Json::AsString() const {
  if (!is_string()) return {};
  return std::string(json_object_get_string(o_),
                     static_cast<size_t>(json_object_get_string_len(o_)));
}
int64_t Json::AsInt() const {
  return is_number() ? json_object_get_int64(o_) : 0;
}
bool Json::AsBool() const {
  return is_bool() && json_object_get_boolean(o_);
}
double Json::AsDouble() const {
  return is_number() ? json_object_get_double(o_) : 0.0;
}

std::string Json::Dump(bool pretty) const {
  if (!o_) return "null";
  int flags = JSON_C_TO_STRING_NOSLASHESCAPE |
              (pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN);
  std::string out = json_object_to_json_string_ext(o_, flags);
  if (pretty) {
    // json-c indents with two spaces but puts a space before ':'; keep its output as-is except
    // that.
    std::string fixed;
    fixed.reserve(out.size());
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i] == ' ' && i + 1 < out.size() && out[i + 1] == ':' && i > 0 && out[i - 1] == '"')
        continue;
      fixed += out[i];
    }
    out = std::move(fixed);
  }
  return out;
}

StrictObject::StrictObject(Json object, std::string source)
    : o_(std::move(object)), source_(std::move(source)) {
  if (!o_.is_object()) error_ = Error(source_ + ": expected a JSON object at the top level");
}

void StrictObject::Fail(std::string_view key, const std::string& why) {
  if (!error_) error_ = Error(source_ + ": key \"" + std::string(key) + "\": " + why);
}

std::optional<Json> StrictObject::Raw(std::string_view key) {
  seen_.emplace_back(key);
  if (!o_.Has(key)) return std::nullopt;
  return o_.Get(key);
}

std::optional<std::string> StrictObject::String(std::string_view key) {
  auto v = Raw(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    Fail(key, "expected a string, got " + v->Dump());
    return std::nullopt;
  }
  return v->AsString();
}

std::optional<bool> StrictObject::Bool(std::string_view key) {
  auto v = Raw(key);
  if (!v) return std::nullopt;
  if (!v->is_bool()) {
    Fail(key, "expected true or false, got " + v->Dump());
    return std::nullopt;
  }
  return v->AsBool();
}

std::optional<int64_t> StrictObject::Int(std::string_view key) {
  auto v = Raw(key);
  if (!v) return std::nullopt;
  if (!v->is_int()) {
    Fail(key, "expected an integer, got " + v->Dump());
    return std::nullopt;
  }
  return v->AsInt();
}

std::optional<std::vector<std::string>> StrictObject::Strings(std::string_view key) {
  auto v = Raw(key);
  if (!v) return std::nullopt;
  if (!v->is_array()) {
    Fail(key, "expected an array of strings, got " + v->Dump());
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < v->size(); ++i) {
    Json e = v->At(i);
    if (!e.is_string()) {
      Fail(key, "expected an array of strings, element " + std::to_string(i) + " is " + e.Dump());
      return std::nullopt;
    }
    out.push_back(e.AsString());
  }
  return out;
}

Status StrictObject::Finish() {
  if (error_) return *error_;
  for (const auto& k : o_.Keys()) {
    if (std::find(seen_.begin(), seen_.end(), k) == seen_.end()) {
      std::string known = Join(seen_, ", ");
      return Error(source_ + ": unknown key \"" + k + "\" (known keys: " + known +
                   "); remove it or fix its spelling");
    }
  }
  return Status::Ok();
}

}  // namespace vfio_gpu
