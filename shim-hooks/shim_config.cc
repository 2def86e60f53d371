#include "shim-hooks/shim_config.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "common/files.h"
#include "common/json.h"
#include "hostmodel/naming.h"
#include "hostmodel/node_config.h"
#include "hostmodel/published_selection.h"

namespace vfio_gpu {

const std::vector<std::string> kShimConfigKeys = {"downstream_shim",
                                                  "sysfs_root",
                                                  "dev_root",
                                                  "run_dir",
                                                  "pod_resources_socket",
                                                  "resources",
                                                  "authorize",
                                                  "gpu_runtime_class",
                                                  "kata_config_path",
                                                  "runtime_switch_config",
                                                  "annotation_policy",
                                                  "kata_annotation_allowlist",
                                                  "kata_pod_resources",
                                                  "cold_plug_form",
                                                  "cdi_dirs",
                                                  "pod_resources_timeout_ms",
                                                  "pod_resources_client",
                                                  "node_config",
                                                  "syslog"};

bool ShimConfig::Governs(const std::string& resource) const {
  return std::find(resources.begin(), resources.end(), resource) != resources.end();
}

std::string AuthorizeModeName(AuthorizeMode m) {
  switch (m) {
    case AuthorizeMode::kEnforce:
      return "enforce";
    case AuthorizeMode::kWarn:
      return "warn";
    case AuthorizeMode::kOff:
      return "off";
  }
  return "?";
}

std::string ColdPlugFormName(ColdPlugForm f) {
  return f == ColdPlugForm::kLinuxDevices ? "linux-devices" : "cdi-annotations";
}

namespace {

void NonEmpty(StrictObject& o, std::string_view key, std::string& out, bool absolute = false) {
  auto v = o.String(key);
  if (!v) return;
  if (v->empty()) return o.Fail(key, "must not be empty; remove the key for the default");
  if (absolute && v->front() != '/')
    return o.Fail(key, "must be an absolute path, got \"" + *v + "\"");
  out = *v;
}

}  // namespace

Result<ShimConfig> ShimConfigFromJson(const std::string& text, const std::string& source) {
  auto parsed = Json::Parse(text, source);
  if (!parsed) return parsed.error();
  if (!parsed->is_object()) return Error(source + ": expected a JSON object");
  ShimConfig c;
  StrictObject o(*parsed, source);
  NonEmpty(o, "downstream_shim", c.downstream_shim);
  NonEmpty(o, "sysfs_root", c.roots.sysfs, true);
  NonEmpty(o, "dev_root", c.roots.dev, true);
  NonEmpty(o, "run_dir", c.run_dir, true);
  NonEmpty(o, "pod_resources_socket", c.pod_resources_socket, true);
  if (auto r = o.Strings("resources")) {
    for (const auto& name : *r) {
      auto slash = name.find('/');
      if (slash == std::string::npos || slash == 0 || slash + 1 == name.size() ||
          name.find('=') != std::string::npos) {
        o.Fail("resources", "\"" + name + "\" is not a resource name like nvidia.com/pgpu");
      }
    }
    if (r->empty()) o.Fail("resources", "must list at least one resource name");
    c.resources = *r;
  }
  if (auto a = o.String("authorize")) {
    if (*a == "enforce")
      c.authorize = AuthorizeMode::kEnforce;
    else if (*a == "warn")
      c.authorize = AuthorizeMode::kWarn;
    else if (*a == "off")
      c.authorize = AuthorizeMode::kOff;
    else
      o.Fail("authorize", "\"" + *a + "\" is not one of enforce, warn, off");
  }
  NonEmpty(o, "gpu_runtime_class", c.gpu_runtime_class);
  NonEmpty(o, "kata_config_path", c.kata_config_path, true);
  NonEmpty(o, "runtime_switch_config", c.runtime_switch_config, true);
  if (auto a = o.String("annotation_policy")) {
    if (*a == "strip")
      c.annotation_policy = AnnotationPolicy::kStrip;
    else if (*a == "deny")
      c.annotation_policy = AnnotationPolicy::kDeny;
    else
      o.Fail("annotation_policy", "\"" + *a + "\" is not one of strip, deny");
  }
  if (auto l = o.Strings("kata_annotation_allowlist")) c.kata_annotation_allowlist = *l;
  if (auto b = o.Bool("kata_pod_resources")) c.kata_pod_resources = *b;
  if (auto f = o.String("cold_plug_form")) {
    if (*f == "cdi-annotations")
      c.cold_plug_form = ColdPlugForm::kCdiAnnotations;
    else if (*f == "linux-devices")
      c.cold_plug_form = ColdPlugForm::kLinuxDevices;
    else
      o.Fail("cold_plug_form", "\"" + *f + "\" is not one of cdi-annotations, linux-devices");
  }
  if (auto d = o.Strings("cdi_dirs")) {
    for (const auto& dir : *d)
      if (dir.empty() || dir.front() != '/')
        o.Fail("cdi_dirs", "\"" + dir + "\" is not an absolute path");
    if (d->empty()) o.Fail("cdi_dirs", "must list at least one directory, e.g. [\"/var/run/cdi\"]");
    c.cdi_dirs = *d;
  }
  if (auto t = o.Int("pod_resources_timeout_ms")) {
    if (*t < 10 || *t > 60000)
      o.Fail("pod_resources_timeout_ms", "must be between 10 and 60000");
    else
      c.pod_resources_timeout_ms = static_cast<int>(*t);
  }
  NonEmpty(o, "pod_resources_client", c.pod_resources_client, true);
  NonEmpty(o, "node_config", c.node_config, true);
  if (auto b = o.Bool("syslog")) c.syslog = *b;
  if (auto s = o.Finish(); !s) return s.error();
  return c;
}

Status LoadNodeSelection(ShimConfig& cfg) {
  if (!cfg.node_config.empty()) {
    auto nc = ReadNodeConfig(cfg.node_config);
    if (!nc)
      return Error("shim config key node_config: " + nc.error().message(), nc.error().kind());
    cfg.selection = nc->selection;
    cfg.selection_source = cfg.node_config;
    // Single naming gives the names up front; per-model names come with the units the shim finds.
    const Selection& sel = *cfg.selection;
    std::vector<std::string> names = {sel.nvswitch_resource_name};
    if (sel.naming == ResourceNaming::kSingle)
      for (uint16_t v : sel.vendors) names.push_back(GpuResourceName(sel, v, 0));
    for (const auto& n : names)
      if (!cfg.Governs(n)) cfg.resources.push_back(n);
    return Status::Ok();
  }
  auto pub = ReadPublishedSelection(cfg.run_dir);
  if (!pub)
    return Error("cannot read the device plugin's selection (" +
                     PublishedSelectionPath(cfg.run_dir) + "): " + pub.error().message() +
                     "; vfio-gpu-plugin rewrites it: restart its pod, or delete the file",
                 ErrorKind::kTransient);
  if (!*pub) return Status::Ok();
  cfg.selection = (*pub)->selection;
  cfg.selection_source = PublishedSelectionPath(cfg.run_dir);
  for (const auto& n : (*pub)->resources)
    if (!cfg.Governs(n)) cfg.resources.push_back(n);
  return Status::Ok();
}

Result<ShimConfig> ReadShimConfig(const std::string& path, bool must_exist) {
  auto text = ReadFile(path);
  ShimConfig cfg;
  if (!text) {
    if (must_exist || PathExists(path))
      return text.error().Wrap("cannot read the vfio-gpu shim config");
  } else {
    auto parsed = ShimConfigFromJson(*text, "shim config " + path);
    if (!parsed) return parsed.error();
    cfg = std::move(*parsed);
  }
  if (auto s = LoadNodeSelection(cfg); !s) return s.error();
  return cfg;
}

Result<ShimConfig> LoadShimConfig() {
  const char* env = std::getenv(kShimConfigEnv);
  if (env && *env) return ReadShimConfig(env, true);
  return ReadShimConfig(kDefaultShimConfig, false);
}

}  // namespace vfio_gpu
