#include "hostmodel/node_config.h"

#include "common/listen_address.h"

namespace vfio_gpu {

std::string AllocateStrategyName(AllocateStrategy s) {
  switch (s) {
    case AllocateStrategy::kCdi:
      return "cdi";
    case AllocateStrategy::kCdiAnnotations:
      return "cdi-annotations";
    case AllocateStrategy::kDeviceSpecs:
      return "device-specs";
  }
  return "cdi";
}

Result<NodeConfig> NodeConfigFromJson(const Json& object, const std::string& source) {
  StrictObject in(object, "config " + source);
  NodeConfig c;
  auto path_key = [&](const char* key, std::string& out) {
    if (auto v = in.String(key)) {
      if (v->empty() || (*v)[0] != '/')
        in.Fail(key, "\"" + *v + "\" must be an absolute path");
      else
        out = *v;
    }
  };
  path_key("sysfs_root", c.roots.sysfs);
  path_key("dev_root", c.roots.dev);
  path_key("kubelet_dir", c.kubelet_dir);
  path_key("cdi_dir", c.cdi_dir);
  path_key("run_dir", c.run_dir);
  if (auto v = in.String("metrics_address")) {
    if (auto a = ParseListenAddress(*v); !v->empty() && !a)
      in.Fail("metrics_address", a.error().message());
    c.metrics_address = *v;
  }
  if (auto v = in.String("log_format")) {
    if (*v != "text" && *v != "json")
      in.Fail("log_format", "\"" + *v + "\" is not known; use \"text\" or \"json\"");
    c.log_format = *v;
  }
  if (auto v = in.String("allocate_strategy")) {
    if (*v == "cdi") {
      c.allocate_strategy = AllocateStrategy::kCdi;
    } else if (*v == "cdi-annotations") {
      c.allocate_strategy = AllocateStrategy::kCdiAnnotations;
    } else if (*v == "device-specs") {
      c.allocate_strategy = AllocateStrategy::kDeviceSpecs;
    } else {
      in.Fail("allocate_strategy",
              "\"" + *v + "\" is not known; use \"cdi\", \"cdi-annotations\" or \"device-specs\"");
    }
  }
  if (auto v = in.Bool("kubevirt_env")) c.kubevirt_env = *v;
  if (auto v = in.Int("reconcile_interval_seconds")) {
    if (*v < 1 || *v > 3600)
      in.Fail("reconcile_interval_seconds", std::to_string(*v) + " is out of range; use 1..3600");
    else
      c.reconcile_interval_seconds = static_cast<int>(*v);
  }
  auto sel = ReadSelection(in);
  if (auto s = in.Finish(); !s) return s.error();
  if (!sel) return sel.error();
  c.selection = std::move(*sel);
  return c;
}

Result<NodeConfig> ReadNodeConfig(const std::string& path) {
  auto j = Json::ParseFile(path);
  if (!j) return j.error().Wrap("cannot read config");
  return NodeConfigFromJson(*j, path);
}

}  // namespace vfio_gpu
