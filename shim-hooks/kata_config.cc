#include "shim-hooks/kata_config.h"

#include <map>

#include "common/files.h"
#include "common/strings.h"

namespace vfio_gpu {
namespace {

KataConfigView Failed(const std::string& path, std::string error) {
  KataConfigView v;
  v.path = path;
  v.error = std::move(error);
  return v;
}

}  // namespace

KataConfigView KataViewFromDocs(const std::string& path, const std::vector<TomlValue>& docs) {
  KataConfigView v;
  v.path = path;
  // [hypervisor.<name>] tables of every document merged, later documents winning per key (Kata's
  // config.d semantics). Only string values matter to the runtime hook.
  std::map<std::string, std::map<std::string, std::string>> merged;
  for (const auto& d : docs) {
    const TomlValue* hv = d.Find("hypervisor");
    if (!hv || !hv->IsTable()) continue;
    for (const auto& [name, table] : hv->table) {
      if (!table.IsTable()) continue;
      auto& keys = merged[name];
      for (const auto& [k, val] : table.table)
        if (val.IsString()) keys[k] = val.str;
    }
  }
  if (merged.empty()) return v;
  std::vector<std::string> hypervisors;
  for (const auto& [name, keys] : merged) hypervisors.push_back(name);
  v.hypervisor = hypervisors.front();
  if (hypervisors.size() > 1) {
    // Kata refuses this itself; never let a drop-in make a CLH config look GPU-capable.
    for (const auto& h : hypervisors)
      if (h != "qemu") v.hypervisor = h;
    v.error = path + " with its config.d drop-ins names several hypervisors (" +
              Join(hypervisors, ", ") + "), which Kata refuses";
  }
  const auto& keys = merged[v.hypervisor];
  auto get = [&](const char* k) {
    auto it = keys.find(k);
    return it == keys.end() ? std::string() : it->second;
  };
  v.cold_plug_vfio = get("cold_plug_vfio");
  v.hot_plug_vfio = get("hot_plug_vfio");
  return v;
}

KataConfigView KataViewFromText(const std::string& what, std::string_view text) {
  auto doc = ParseToml(text, what);
  if (!doc) return Failed(what, doc.error().message());
  return KataViewFromDocs(what, {std::move(*doc)});
}

KataConfigView ReadKataConfig(const std::string& path) {
  auto text = ReadFile(path);
  if (!text)
    return Failed(path,
                  "cannot read Kata configuration " + path + " (" + text.error().message() + ")");
  auto doc = ParseToml(*text, path);
  if (!doc) return Failed(path, doc.error().message());
  std::vector<TomlValue> docs;
  docs.push_back(std::move(*doc));
  std::string dropins = JoinPath(Dirname(path), "config.d");
  if (auto names = ListDir(dropins)) {
    for (const auto& n : *names) {
      if (!EndsWith(n, ".toml")) continue;
      std::string p = JoinPath(dropins, n);
      auto t = ReadFile(p);
      if (!t) continue;
      auto d = ParseToml(*t, p);
      if (!d) return Failed(path, d.error().message());
      docs.push_back(std::move(*d));
    }
  }
  return KataViewFromDocs(path, docs);
}

std::string EffectiveKataConfigPath(const std::string& config_path, const std::string& env) {
  if (!config_path.empty()) return config_path;
  if (!env.empty()) return env;
  for (const char* p : {"/etc/kata-containers/configuration.toml",
                        "/opt/kata/share/defaults/kata-containers/configuration.toml",
                        "/usr/share/defaults/kata-containers/configuration.toml"})
    if (PathExists(p)) return p;
  return "/opt/kata/share/defaults/kata-containers/configuration.toml";
}

}  // namespace vfio_gpu
