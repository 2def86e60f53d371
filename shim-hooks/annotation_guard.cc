// Guard annotations: a tenant may not change the hypervisor (path, kernel, firmware, VFIO mode)
// through io.katacontainers.config.hypervisor.* or choose another Kata config file.
#include "common/strings.h"
#include "shim-hooks/hooks.h"

namespace vfio_gpu {
namespace {

// '*' matches any run of characters; everything else literally.
bool Glob(std::string_view pattern, std::string_view s) {
  size_t p = 0, i = 0, star = std::string_view::npos, mark = 0;
  while (i < s.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = i;
    } else if (p < pattern.size() && pattern[p] == s[i]) {
      ++p;
      ++i;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      i = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace

bool AllowlistMatches(const std::vector<std::string>& allowlist, const std::string& name) {
  for (const auto& pattern : allowlist)
    if (Glob(pattern, name)) return true;
  return false;
}

HookResult GuardAnnotations(OciSpec& spec, const ShimConfig& cfg) {
  HookResult out;
  std::vector<std::string> forbidden;
  for (const auto& [key, value] : spec.annotations) {
    if (key == kKataConfigPathAnnotation) {
      forbidden.push_back(key);
    } else if (StartsWith(key, kKataHypervisorPrefix)) {
      std::string name = key.substr(std::string(kKataHypervisorPrefix).size());
      if (!AllowlistMatches(cfg.kata_annotation_allowlist, name)) forbidden.push_back(key);
    }
  }
  if (forbidden.empty()) return out;
  if (cfg.annotation_policy == AnnotationPolicy::kDeny) {
    Decision d{"guard", "refused", {}, -1, "", "forbidden annotations " + Join(forbidden, ", "),
               true};
    out.decisions.push_back(d);
    out.refusal = Refusal{
        "vfio-gpu: annotation " + forbidden.front() +
            " may not be set by a pod (it changes the VM's hypervisor settings); remove it, or ask "
            "the node operator to add \"" +
            (StartsWith(forbidden.front(), kKataHypervisorPrefix)
                 ? forbidden.front().substr(std::string(kKataHypervisorPrefix).size())
                 : forbidden.front()) +
            "\" to kata_annotation_allowlist in the shim config",
        ErrorKind::kInvalid,
        {}};
    return out;
  }
  for (const auto& key : forbidden) {
    spec.RemoveAnnotation(key);
    out.decisions.push_back({"guard",
                             "stripped",
                             {},
                             -1,
                             "",
                             "annotation " + key + " is not in kata_annotation_allowlist",
                             true});
  }
  return out;
}

}  // namespace vfio_gpu
