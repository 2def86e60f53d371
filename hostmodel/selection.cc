#include "hostmodel/selection.h"

#include <algorithm>

#include "common/strings.h"

namespace vfio_gpu {
namespace {

// A class filter is a hex prefix of the 24-bit class code: 2 digits (base class), 4 (sub-class) or
// 6 (programming interface too).
std::optional<std::pair<uint32_t, int>> ParseClassPrefix(const std::string& s) {
  std::string_view v = s;
  if (StartsWith(v, "0x") || StartsWith(v, "0X")) v.remove_prefix(2);
  if (v.size() != 2 && v.size() != 4 && v.size() != 6) return std::nullopt;
  auto n = ParseHex(v);
  if (!n) return std::nullopt;
  return std::make_pair(*n, static_cast<int>(v.size()));
}

bool DeviceIdMatches(const std::string& pattern, uint16_t vendor, uint16_t device) {
  // "10de:2236"
  auto parts = Split(pattern, ':');
  if (parts.size() != 2) return false;
  auto v = ParseHex(parts[0]);
  auto d = ParseHex(parts[1]);
  return v && d && *v == vendor && *d == device;
}

bool Matches(const std::string& pattern, const std::string& bdf, uint16_t vendor, uint16_t device) {
  if (auto b = CanonicalBdf(pattern)) return *b == bdf;
  return DeviceIdMatches(pattern, vendor, device);
}

bool ValidPattern(const std::string& p) {
  if (CanonicalBdf(p)) return true;
  auto parts = Split(p, ':');
  return parts.size() == 2 && parts[0].size() <= 4 && parts[1].size() <= 4 && ParseHex(parts[0]) &&
         ParseHex(parts[1]);
}

}  // namespace

bool Selection::IsGpuClass(uint32_t class_code) const {
  for (const auto& c : gpu_classes) {
    auto p = ParseClassPrefix(c);
    if (!p) continue;
    int shift = 24 - p->second * 4;
    if ((class_code >> shift) == p->first) return true;
  }
  return false;
}

bool Selection::IsSelectedVendor(uint16_t vendor) const {
  return std::find(vendors.begin(), vendors.end(), vendor) != vendors.end();
}

bool Selection::Allows(const std::string& bdf, uint16_t vendor, uint16_t device) const {
  for (const auto& d : deny)
    if (Matches(d, bdf, vendor, device)) return false;
  if (allow.empty()) return true;
  for (const auto& a : allow)
    if (Matches(a, bdf, vendor, device)) return true;
  return false;
}

Result<Selection> ReadSelection(StrictObject& config) {
  Selection s;
  if (auto vendors = config.Strings("vendors")) {
    s.vendors.clear();
    for (const auto& v : *vendors) {
      auto n = ParseHex(v);
      if (!n || *n > 0xffff || *n == 0) {
        config.Fail("vendors",
                    "\"" + v + "\" is not a PCI vendor ID; write it as hex, e.g. \"0x10de\"");
        break;
      }
      s.vendors.push_back(static_cast<uint16_t>(*n));
    }
    if (s.vendors.empty())
      config.Fail("vendors", "must name at least one vendor, e.g. [\"0x10de\"]");
  }
  if (auto classes = config.Strings("gpu_classes")) {
    for (const auto& c : *classes) {
      if (!ParseClassPrefix(c)) {
        config.Fail(
            "gpu_classes",
            "\"" + c + "\" is not a class prefix; use 2, 4 or 6 hex digits, e.g. \"0x0302\"");
        break;
      }
    }
    if (classes->empty())
      config.Fail("gpu_classes", "must name at least one class, e.g. [\"0x0302\"]");
    s.gpu_classes = *classes;
  }
  if (auto naming = config.String("resource_naming")) {
    if (*naming == "single") {
      s.naming = ResourceNaming::kSingle;
    } else if (*naming == "per-model") {
      s.naming = ResourceNaming::kPerModel;
    } else {
      config.Fail("resource_naming",
                  "\"" + *naming + "\" is not known; use \"single\" or \"per-model\"");
    }
  }
  auto check_resource = [&](const char* key, const std::string& name) {
    // domain/name; the name part also becomes a CDI class.
    auto slash = name.find('/');
    bool ok = slash != std::string::npos && slash > 0 && slash + 1 < name.size() &&
              name.size() - slash - 1 <= 40 && name.find('/', slash + 1) == std::string::npos;
    for (char c : name)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ||
            c == '/'))
        ok = false;
    if (!ok)
      config.Fail(key, "\"" + name +
                           "\" is not a resource name; use domain/name, e.g. \"nvidia.com/pgpu\" "
                           "(name at most 40 characters)");
  };
  if (auto r = config.String("resource_name")) {
    check_resource("resource_name", *r);
    s.resource_name = *r;
  }
  if (auto r = config.String("nvswitch_resource_name")) {
    check_resource("nvswitch_resource_name", *r);
    s.nvswitch_resource_name = *r;
  }
  for (const char* key : {"allow", "deny"}) {
    if (auto list = config.Strings(key)) {
      for (const auto& p : *list) {
        if (!ValidPattern(p)) {
          config.Fail(
              key,
              "\"" + p +
                  "\" is neither a PCI address (0000:17:00.0) nor a vendor:device ID (10de:2236)");
          break;
        }
      }
      (std::string(key) == "allow" ? s.allow : s.deny) = *list;
    }
  }
  if (auto a = config.Bool("cdi_aliases")) s.cdi_aliases = *a;
  return s;
}

Json SelectionToJson(const Selection& s) {
  auto strings = [](const std::vector<std::string>& v) {
    Json a = Json::Array();
    for (const auto& x : v) a.Append(Json::String(x));
    return a;
  };
  Json vendors = Json::Array();
  for (uint16_t v : s.vendors) vendors.Append(Json::String("0x" + Hex(v, 4)));
  Json o = Json::Object();
  o.Set("vendors", std::move(vendors));
  o.Set("gpu_classes", strings(s.gpu_classes));
  o.Set("resource_naming",
        Json::String(s.naming == ResourceNaming::kPerModel ? "per-model" : "single"));
  if (!s.resource_name.empty()) o.Set("resource_name", Json::String(s.resource_name));
  o.Set("nvswitch_resource_name", Json::String(s.nvswitch_resource_name));
  o.Set("allow", strings(s.allow));
  o.Set("deny", strings(s.deny));
  o.Set("cdi_aliases", Json::Bool(s.cdi_aliases));
  return o;
}

}  // namespace vfio_gpu
