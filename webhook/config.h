// What the webhook governs, read once at start from the JSON file given by --config. Every key is
// optional; unknown keys are refused naming the key, so a typo never silently widens the policy.
#pragma once

#include <regex>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"

namespace vfio_gpu::webhook {

// What happens to a tenant annotation that tries to pick devices or hypervisor settings itself.
enum class AnnotationPolicy { kDeny, kStrip };

struct KataAnnotationRule {
  std::string pattern;  // as written in the config, for messages
  std::regex re;        // matched against the whole annotation name
};

struct Config {
  // Extended resource names we govern; they are also our CDI kinds ("vendor/class").
  std::vector<std::string> resources = {"nvidia.com/pgpu", "nvidia.com/nvswitch"};
  // The class a GPU pod without runtimeClassName is given.
  std::string gpu_runtime_class = "kata-qemu-vfio-gpu";
  // Classes a GPU pod may name itself: the GPU class and its confidential-computing variants.
  std::vector<std::string> allowed_runtime_classes = {
      "kata-qemu-vfio-gpu", "kata-qemu-vfio-gpu-snp", "kata-qemu-vfio-gpu-tdx"};
  AnnotationPolicy annotation_policy = AnnotationPolicy::kDeny;
  // io.katacontainers.* annotations a GPU pod may carry. Empty by default: the node's Kata
  // configuration decides the VM, not the tenant.
  std::vector<KataAnnotationRule> kata_annotation_allowlist;

  bool IsAllowedClass(std::string_view cls) const;
  bool IsOurResource(std::string_view name) const;
};

// Parses a config object; `source` names it in messages (the file path).
Result<Config> ParseConfig(const Json& json, const std::string& source);
// Reads and parses the file; an empty path gives the defaults.
Result<Config> LoadConfig(const std::string& path);

const char* AnnotationPolicyName(AnnotationPolicy p);

}  // namespace vfio_gpu::webhook
