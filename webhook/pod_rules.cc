#include "webhook/pod_rules.h"

#include <initializer_list>
#include <string_view>

#include "common/strings.h"

namespace vfio_gpu::webhook {

namespace {

json_object* Field(json_object* o, const char* key) {
  json_object* v = nullptr;
  if (o == nullptr || !json_object_is_type(o, json_type_object) ||
      !json_object_object_get_ex(o, key, &v))
    return nullptr;
  return v;
}

// The governed resource named in a `resources` object's limits or requests, or nullptr.
const char* GovernedIn(const Config& config, json_object* resources) {
  for (const char* which : {"limits", "requests"}) {
    json_object* m = Field(resources, which);
    if (m == nullptr || !json_object_is_type(m, json_type_object)) continue;
    json_object_object_foreach(m, key, value) {
      (void)value;
      if (config.IsOurResource(key)) return key;
    }
  }
  return nullptr;
}

std::optional<GovernedRequest> ScanContainers(const Config& config, json_object* list, bool init) {
  if (list == nullptr || !json_object_is_type(list, json_type_array)) return std::nullopt;
  size_t n = json_object_array_length(list);
  for (size_t i = 0; i < n; ++i) {
    json_object* c = json_object_array_get_idx(list, i);
    if (const char* r = GovernedIn(config, Field(c, "resources"))) {
      json_object* name = Field(c, "name");
      return GovernedRequest{r, name ? json_object_get_string(name) : "", init};
    }
  }
  return std::nullopt;
}

// "a/b=c, a/b=d" -> does any entry's kind ("a/b") belong to us?
std::optional<std::string> OurKindIn(const Config& config, std::string_view value) {
  for (const auto& entry : Split(value, ',')) {
    std::string_view e = Trim(entry);
    size_t eq = e.find('=');
    std::string kind(Trim(e.substr(0, eq)));
    if (config.IsOurResource(kind)) return kind;
  }
  return std::nullopt;
}

bool Allowlisted(const Config& config, const std::string& key) {
  for (const auto& rule : config.kata_annotation_allowlist)
    if (std::regex_match(key, rule.re)) return true;
  return false;
}

}  // namespace

std::optional<GovernedRequest> FindGovernedRequest(const Config& config, json_object* spec) {
  if (auto r = ScanContainers(config, Field(spec, "containers"), false)) return r;
  if (auto r = ScanContainers(config, Field(spec, "initContainers"), true)) return r;
  // Pod-level resources (KEP-2837) only take cpu/memory today; checked so that never becomes a gap.
  if (const char* r = GovernedIn(config, Field(spec, "resources")))
    return GovernedRequest{r, "", false};
  return std::nullopt;
}

std::vector<ForbiddenAnnotation> FindForbiddenAnnotations(const Config& config,
                                                          json_object* annotations, bool vm_bound) {
  std::vector<ForbiddenAnnotation> out;
  if (annotations == nullptr || !json_object_is_type(annotations, json_type_object)) return out;
  json_object_object_foreach(annotations, key, value) {
    std::string_view k(key);
    if (StartsWith(k, "cdi.k8s.io/")) {
      const char* v =
          json_object_is_type(value, json_type_string) ? json_object_get_string(value) : "";
      if (auto kind = OurKindIn(config, v))
        out.push_back({key, "names CDI kind " + *kind + " directly"});
    } else if (vm_bound && StartsWith(k, "io.katacontainers.")) {
      std::string ks(k);
      if (!Allowlisted(config, ks))
        out.push_back(
            {std::move(ks), "sets Kata VM options and is not on kata_annotation_allowlist"});
    }
  }
  return out;
}

std::string WhyClassCannotCarryGpu(const std::string& cls, const Config& config) {
  std::string q = "runtimeClassName \"" + cls + "\"";
  // Judge by the words of the name ("kata-clh", "runc-legacy"), not substrings of them.
  std::vector<std::string> words;
  for (auto& part : Split(cls, '-'))
    for (auto& w : Split(part, '.')) words.push_back(w);
  auto has = [&](std::initializer_list<std::string_view> any) {
    for (const auto& w : words)
      for (auto a : any)
        if (w == a) return true;
    return false;
  };
  if (has({"clh", "cloud", "cloudhypervisor"}))
    return q + " runs Kata with Cloud Hypervisor, which cannot pass GPUs through";
  if (has({"fc", "firecracker"}))
    return q + " runs Kata with Firecracker, which cannot pass PCI devices through";
  if (has({"runsc", "gvisor"}))
    return q + " runs gVisor on the host kernel: no VM between the tenant and the host";
  if (has({"runc", "crun", "youki"}))
    return q + " runs containers on the host kernel: no VM between the tenant and the host";
  if (has({"kata"})) return q + " is a Kata class without the QEMU VFIO GPU configuration";
  return q + " is not a GPU runtime class (" + Join(config.allowed_runtime_classes, ", ") +
         "), so nothing puts a VM with the GPU passed through between the tenant and the host";
}

}  // namespace vfio_gpu::webhook
