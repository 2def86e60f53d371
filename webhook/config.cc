#include "webhook/config.h"

#include <algorithm>

#include "common/strings.h"

namespace vfio_gpu::webhook {

namespace {

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// A resource name is "domain/name"; the domain part is also the CDI vendor and the name the CDI
// class, so both must be non-empty and free of characters neither format allows.
bool ValidResourceName(std::string_view s) {
  size_t slash = s.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == s.size()) return false;
  if (s.find('/', slash + 1) != std::string_view::npos) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_' || c == '/';
    if (!ok) return false;
  }
  return s.size() <= 253;
}

// RuntimeClass names are DNS subdomains.
bool ValidClassName(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
    if (!ok) return false;
  }
  return s.front() != '-' && s.front() != '.' && s.back() != '-' && s.back() != '.';
}

}  // namespace

bool Config::IsAllowedClass(std::string_view cls) const {
  return Contains(allowed_runtime_classes, cls);
}

bool Config::IsOurResource(std::string_view name) const {
  return Contains(resources, name);
}

const char* AnnotationPolicyName(AnnotationPolicy p) {
  return p == AnnotationPolicy::kStrip ? "strip" : "deny";
}

Result<Config> ParseConfig(const Json& json, const std::string& source) {
  Config c;
  StrictObject o(json, "config " + source);

  if (auto v = o.Strings("resources")) {
    if (v->empty())
      o.Fail("resources", "must name at least one resource, e.g. \"nvidia.com/pgpu\"");
    for (const auto& r : *v) {
      if (!ValidResourceName(r)) {
        o.Fail("resources", "\"" + r + "\" is not a resource name of the form domain/name");
        break;
      }
    }
    c.resources = *v;
  }
  if (auto v = o.String("gpu_runtime_class")) {
    if (!ValidClassName(*v))
      o.Fail("gpu_runtime_class", "\"" + *v + "\" is not a valid RuntimeClass name");
    c.gpu_runtime_class = *v;
    // The default allowed list follows the GPU class the operator picked.
    c.allowed_runtime_classes = {*v, "kata-qemu-vfio-gpu-snp", "kata-qemu-vfio-gpu-tdx"};
  }
  if (auto v = o.Strings("allowed_runtime_classes")) {
    for (const auto& r : *v) {
      if (!ValidClassName(r)) {
        o.Fail("allowed_runtime_classes", "\"" + r + "\" is not a valid RuntimeClass name");
        break;
      }
    }
    if (!Contains(*v, c.gpu_runtime_class))
      o.Fail("allowed_runtime_classes",
             "must contain gpu_runtime_class \"" + c.gpu_runtime_class +
                 "\", or pods the webhook patches would be refused when they name it themselves");
    c.allowed_runtime_classes = *v;
  }
  if (auto v = o.String("annotation_policy")) {
    if (*v == "deny") {
      c.annotation_policy = AnnotationPolicy::kDeny;
    } else if (*v == "strip") {
      c.annotation_policy = AnnotationPolicy::kStrip;
    } else {
      o.Fail("annotation_policy", "\"" + *v + "\" is not known; use \"deny\" or \"strip\"");
    }
  }
  if (auto v = o.Strings("kata_annotation_allowlist")) {
    for (const auto& p : *v) {
      try {
        c.kata_annotation_allowlist.push_back(
            {p, std::regex(p, std::regex::ECMAScript | std::regex::optimize)});
      } catch (const std::regex_error& e) {
        o.Fail("kata_annotation_allowlist",
               "\"" + p + "\" is not a valid regular expression (" + e.what() + ")");
        break;
      }
    }
  }
  if (Status s = o.Finish(); !s) return s.error();
  return c;
}

Result<Config> LoadConfig(const std::string& path) {
  if (path.empty()) return Config{};
  auto json = Json::ParseFile(path);
  if (!json) return json.error().Wrap("cannot read config");
  return ParseConfig(*json, path);
}

}  // namespace vfio_gpu::webhook
