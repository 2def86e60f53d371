#include "shim-hooks/kata_config.h"

#include "common/files.h"
#include "common/strings.h"

namespace vfio_gpu {
namespace {

// Strips a trailing comment outside quotes.
std::string_view StripComment(std::string_view line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote) {
      if (c == '\\' && quote == '"')
        ++i;
      else if (c == quote)
        quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      return line.substr(0, i);
    }
  }
  return line;
}

std::string Unquote(std::string_view v) {
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front())
    return std::string(v.substr(1, v.size() - 2));
  return std::string(v);
}

int BracketBalance(std::string_view v) {
  int depth = 0;
  char quote = 0;
  for (char c : v) {
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[') {
      ++depth;
    } else if (c == ']') {
      --depth;
    }
  }
  return depth;
}

}  // namespace

Result<TomlDoc> ParseMiniToml(std::string_view text, const std::string& what) {
  TomlDoc doc;
  std::string table;
  int array_depth = 0;
  std::string array_key;
  size_t lineno = 0;
  for (const auto& raw : Split(text, '\n')) {
    ++lineno;
    std::string_view line = Trim(StripComment(raw));
    if (array_depth > 0) {  // continuation of a multi-line array
      doc[table][array_key] += std::string(line);
      array_depth += BracketBalance(line);
      continue;
    }
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (line.size() < 3 || line.back() != ']')
        return Error(what + ":" + std::to_string(lineno) + ": malformed table header");
      bool array_table = line.size() >= 4 && line[1] == '[';
      std::string_view name =
          array_table ? line.substr(2, line.size() - 4) : line.substr(1, line.size() - 2);
      table = std::string(Trim(name));
      doc[table];
      continue;
    }
    auto eq = line.find('=');
    if (eq == std::string_view::npos)
      return Error(what + ":" + std::to_string(lineno) + ": expected key = value");
    std::string key = Unquote(Trim(line.substr(0, eq)));
    std::string_view value = Trim(line.substr(eq + 1));
    if (key.empty()) return Error(what + ":" + std::to_string(lineno) + ": empty key");
    int depth = BracketBalance(value);
    if (depth > 0) {
      array_depth = depth;
      array_key = key;
      doc[table][key] = std::string(value);
      continue;
    }
    doc[table][key] = Unquote(value);
  }
  return doc;
}

KataConfigView KataViewFromDocs(const std::string& path, const std::vector<TomlDoc>& docs) {
  KataConfigView v;
  v.path = path;
  TomlDoc merged;
  for (const auto& d : docs)
    for (const auto& [table, keys] : d)
      for (const auto& [k, val] : keys) merged[table][k] = val;
  std::vector<std::string> hypervisors;
  for (const auto& [table, keys] : merged)
    if (StartsWith(table, "hypervisor.")) hypervisors.push_back(table.substr(11));
  if (hypervisors.empty()) return v;
  v.hypervisor = hypervisors.front();
  if (hypervisors.size() > 1) {
    // Kata refuses this itself; never let a drop-in make a CLH config look GPU-capable.
    for (const auto& h : hypervisors)
      if (h != "qemu") v.hypervisor = h;
    v.error = path + " with its config.d drop-ins names several hypervisors (" +
              Join(hypervisors, ", ") + "), which Kata refuses";
  }
  const TomlTable& keys = merged["hypervisor." + v.hypervisor];
  auto get = [&](const char* k) {
    auto it = keys.find(k);
    return it == keys.end() ? std::string() : it->second;
  };
  v.cold_plug_vfio = get("cold_plug_vfio");
  v.hot_plug_vfio = get("hot_plug_vfio");
  return v;
}

KataConfigView ReadKataConfig(const std::string& path) {
  std::vector<TomlDoc> docs;
  auto text = ReadFile(path);
  if (!text) {
    KataConfigView v;
    v.path = path;
    v.error = "cannot read Kata configuration " + path + " (" + text.error().message() + ")";
    return v;
  }
  auto doc = ParseMiniToml(*text, path);
  if (!doc) {
    KataConfigView v;
    v.path = path;
    v.error = doc.error().message();
    return v;
  }
  docs.push_back(std::move(*doc));
  std::string dropins = JoinPath(Dirname(path), "config.d");
  if (auto names = ListDir(dropins)) {
    for (const auto& n : *names) {
      if (!EndsWith(n, ".toml")) continue;
      std::string p = JoinPath(dropins, n);
      auto t = ReadFile(p);
      if (!t) continue;
      auto d = ParseMiniToml(*t, p);
      if (!d) {
        KataConfigView v;
        v.path = path;
        v.error = d.error().message();
        return v;
      }
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
