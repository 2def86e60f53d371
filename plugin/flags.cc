#include "plugin/flags.h"

#include <algorithm>
#include <map>
#include <optional>

#include "common/listen_address.h"
#include "common/strings.h"

namespace vfio_gpu::plugin {

Result<Flags> ParseFlags(const std::vector<std::string>& args) {
  static const std::vector<std::string> kKnown = {"config",          "sysfs-root", "dev-root",
                                                  "kubelet-dir",     "cdi-dir",    "run-dir",
                                                  "metrics-address", "log-format"};
  Flags f;
  std::map<std::string, std::string> values;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      f.help = true;
      return f;
    }
    if (!StartsWith(a, "--"))
      return Error("unexpected argument \"" + a +
                   "\"; flags look like --sysfs-root DIR (see --help)");
    std::string name = a.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    if (std::find(kKnown.begin(), kKnown.end(), name) == kKnown.end())
      return Error("unknown flag --" + name + "; see --help");
    if (!has_value) {
      if (i + 1 >= args.size()) return Error("flag --" + name + " needs a value");
      value = args[++i];
    }
    values[name] = value;
  }
  if (values.count("config")) {
    auto c = ReadNodeConfig(values["config"]);
    if (!c) return c.error();
    f.config = std::move(*c);
  }
  auto path = [&](const char* flag, std::string& out) -> Status {
    auto it = values.find(flag);
    if (it == values.end()) return Status::Ok();
    if (it->second.empty() || it->second[0] != '/')
      return Error("flag --" + std::string(flag) + ": \"" + it->second +
                   "\" must be an absolute path");
    out = it->second;
    return Status::Ok();
  };
  for (auto [flag, out] :
       std::vector<std::pair<const char*, std::string*>>{{"sysfs-root", &f.config.roots.sysfs},
                                                         {"dev-root", &f.config.roots.dev},
                                                         {"kubelet-dir", &f.config.kubelet_dir},
                                                         {"cdi-dir", &f.config.cdi_dir},
                                                         {"run-dir", &f.config.run_dir}}) {
    if (auto s = path(flag, *out); !s) return s.error();
  }
  if (values.count("metrics-address")) {
    const auto& v = values["metrics-address"];
    if (auto a = ParseListenAddress(v); !v.empty() && !a)
      return Error("flag --metrics-address: " + a.error().message());
    f.config.metrics_address = v;
  }
  if (values.count("log-format")) {
    const auto& v = values["log-format"];
    if (v != "text" && v != "json")
      return Error("flag --log-format: \"" + v + "\" is not known; use text or json");
    f.config.log_format = v;
  }
  return f;
}

}  // namespace vfio_gpu::plugin
