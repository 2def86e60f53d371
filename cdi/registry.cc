#include "cdi/registry.h"

#include <algorithm>
#include <cctype>

#include "common/files.h"
#include "common/json.h"
#include "common/strings.h"

namespace vfio_gpu {
namespace {

bool IsAlnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

// vendor and class: start with a letter, end alphanumeric, middle [A-Za-z0-9_.-];
// device: start and end alphanumeric, middle [A-Za-z0-9_.:-].
bool ValidPart(const std::string& s, bool letter_first, const std::string& middle) {
  if (s.empty()) return false;
  if (letter_first ? !std::isalpha(static_cast<unsigned char>(s.front())) : !IsAlnum(s.front()))
    return false;
  if (!IsAlnum(s.back())) return false;
  for (char c : s)
    if (!IsAlnum(c) && middle.find(c) == std::string::npos) return false;
  return true;
}

}  // namespace

std::optional<CdiQualifiedName> ParseCdiName(const std::string& s) {
  auto slash = s.find('/');
  auto eq = s.find('=');
  if (slash == std::string::npos || eq == std::string::npos || eq < slash) return std::nullopt;
  std::string vendor = s.substr(0, slash);
  std::string cls = s.substr(slash + 1, eq - slash - 1);
  std::string dev = s.substr(eq + 1);
  if (!ValidPart(vendor, true, "_.-") || !ValidPart(cls, true, "_.-") ||
      !ValidPart(dev, false, "_.:-"))
    return std::nullopt;
  return CdiQualifiedName{vendor + "/" + cls, dev};
}

std::optional<int> VfioGroupOfPath(const std::string& path) {
  const std::string prefix = "/dev/vfio/";
  if (!StartsWith(path, prefix)) return std::nullopt;
  std::string rest = path.substr(prefix.size());
  if (rest.empty() || rest.size() > 9) return std::nullopt;
  for (char c : rest)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  return std::stoi(rest);
}

CdiRegistry CdiRegistry::Load(const std::vector<std::string>& dirs,
                              const std::vector<std::string>& kinds) {
  CdiRegistry reg;
  for (const auto& dir : dirs) {
    auto names = ListDir(dir);
    if (!names) continue;  // a missing CDI dir is normal
    for (const auto& n : *names) {
      std::string path = JoinPath(dir, n);
      if (EndsWith(n, ".yaml") || EndsWith(n, ".yml")) {
        reg.problems_.push_back(path + ": YAML CDI specs are not read by the vfio-gpu shim");
        continue;
      }
      if (!EndsWith(n, ".json")) continue;
      auto spec = Json::ParseFile(path);
      if (!spec) {
        reg.problems_.push_back(spec.error().message());
        continue;
      }
      std::string kind = spec->Get("kind").AsString();
      if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) continue;
      std::vector<std::string> common;
      Json cnodes = spec->Get("containerEdits").Get("deviceNodes");
      for (size_t i = 0; i < cnodes.size(); ++i)
        common.push_back(cnodes.At(i).Get("path").AsString());
      Json devices = spec->Get("devices");
      for (size_t i = 0; i < devices.size(); ++i) {
        Json d = devices.At(i);
        std::string name = d.Get("name").AsString();
        if (name.empty()) continue;
        CdiDeviceEntry e;
        e.qualified = kind + "=" + name;
        e.file = path;
        Json nodes = d.Get("containerEdits").Get("deviceNodes");
        for (size_t j = 0; j < nodes.size(); ++j) {
          std::string p = nodes.At(j).Get("path").AsString();
          if (!p.empty()) e.device_paths.push_back(p);
        }
        reg.devices_[e.qualified] = std::move(e);  // later dirs win
      }
    }
  }
  return reg;
}

const CdiDeviceEntry* CdiRegistry::Find(const std::string& qualified) const {
  auto it = devices_.find(qualified);
  return it == devices_.end() ? nullptr : &it->second;
}

std::optional<std::string> CdiRegistry::UnitOfGroup(int group) const {
  for (const auto& [qualified, e] : devices_) {
    auto name = ParseCdiName(qualified);
    if (!name || !IsBdf(name->name)) continue;
    for (const auto& p : e.device_paths)
      if (VfioGroupOfPath(p) == group) return name->name;
  }
  return std::nullopt;
}

}  // namespace vfio_gpu
