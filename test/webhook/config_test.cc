#include "webhook/config.h"

#include <gtest/gtest.h>

#include "test/webhook/harness.h"
#include "webhook/pod_rules.h"

namespace vfio_gpu::webhook {
namespace {

Result<Config> Parse(const std::string& text) {
  auto j = Json::Parse(text, "t");
  EXPECT_TRUE(j.ok());
  return ParseConfig(*j, "/etc/vfio-gpu/webhook.json");
}

TEST(Config, DefaultsAreTheIssuesDefaults) {
  auto c = Parse("{}");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->resources, (std::vector<std::string>{"nvidia.com/pgpu", "nvidia.com/nvswitch"}));
  EXPECT_EQ(c->gpu_runtime_class, "kata-qemu-vfio-gpu");
  EXPECT_EQ(c->allowed_runtime_classes,
            (std::vector<std::string>{"kata-qemu-vfio-gpu", "kata-qemu-vfio-gpu-snp",
                                      "kata-qemu-vfio-gpu-tdx"}));
  EXPECT_EQ(c->annotation_policy, AnnotationPolicy::kDeny);
  EXPECT_TRUE(c->kata_annotation_allowlist.empty());
  EXPECT_TRUE(LoadConfig("").ok());
}

TEST(Config, EveryKeyIsRead) {
  auto c = Parse(
      R"({"resources":["a.com/g"],"gpu_runtime_class":"gpu","allowed_runtime_classes":)"
      R"(["gpu","gpu-snp"],"annotation_policy":"strip","kata_annotation_allowlist":["x.*"]})");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->resources, std::vector<std::string>{"a.com/g"});
  EXPECT_EQ(c->gpu_runtime_class, "gpu");
  EXPECT_EQ(c->allowed_runtime_classes, (std::vector<std::string>{"gpu", "gpu-snp"}));
  EXPECT_EQ(c->annotation_policy, AnnotationPolicy::kStrip);
  EXPECT_EQ(c->kata_annotation_allowlist.size(), 1u);
}

TEST(Config, ChangingTheGpuClassKeepsItAllowed) {
  auto c = Parse(R"({"gpu_runtime_class":"kata-gpu"})");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->IsAllowedClass("kata-gpu"));
  EXPECT_TRUE(c->IsAllowedClass("kata-qemu-vfio-gpu-snp"));
}

TEST(Config, UnknownKeyIsRefusedByName) {
  auto c = Parse(R"({"resource":["nvidia.com/pgpu"]})");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message().find("unknown key \"resource\""), std::string::npos)
      << c.error().message();
  EXPECT_NE(c.error().message().find("/etc/vfio-gpu/webhook.json"), std::string::npos);
}

TEST(Config, BadValuesAreRefusedNamingTheKey) {
  struct Case {
    const char* text;
    const char* key;
  } cases[] = {
      {R"({"annotation_policy":"warn"})", "annotation_policy"},
      {R"({"kata_annotation_allowlist":["(unclosed"]})", "kata_annotation_allowlist"},
      {R"({"allowed_runtime_classes":["kata-qemu-vfio-gpu-snp"]})", "allowed_runtime_classes"},
      {R"({"resources":["pgpu"]})", "resources"},
      {R"({"resources":[]})", "resources"},
      {R"({"gpu_runtime_class":"Kata GPU"})", "gpu_runtime_class"},
      {R"({"gpu_runtime_class":3})", "gpu_runtime_class"},
  };
  for (const auto& c : cases) {
    auto r = Parse(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().message().find(std::string("\"") + c.key + "\""), std::string::npos)
        << r.error().message();
  }
}

TEST(Config, UnreadableFileIsNamed) {
  auto r = LoadConfig("/nonexistent/webhook.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("/nonexistent/webhook.json"), std::string::npos);
}

TEST(Config, TheShippedConfigIsReadAndIsTheDefaults) {
  auto c = LoadConfig(std::string(WEBHOOK_SOURCE_DIR) + "/deploy/webhook/base/config.json");
  ASSERT_TRUE(c.ok()) << c.error().message();
  Config d;
  EXPECT_EQ(c->resources, d.resources);
  EXPECT_EQ(c->gpu_runtime_class, d.gpu_runtime_class);
  EXPECT_EQ(c->allowed_runtime_classes, d.allowed_runtime_classes);
  EXPECT_EQ(c->annotation_policy, d.annotation_policy);
}

TEST(WhyClassCannotCarryGpu, NamesTheReasonForKnownRuntimes) {
  Config c;
  EXPECT_NE(WhyClassCannotCarryGpu("runc", c).find("no VM between"), std::string::npos);
  EXPECT_NE(WhyClassCannotCarryGpu("crun", c).find("host kernel"), std::string::npos);
  EXPECT_NE(WhyClassCannotCarryGpu("kata-clh", c).find("Cloud Hypervisor"), std::string::npos);
  EXPECT_NE(WhyClassCannotCarryGpu("kata-fc", c).find("Firecracker"), std::string::npos);
  EXPECT_NE(WhyClassCannotCarryGpu("gvisor", c).find("gVisor"), std::string::npos);
  EXPECT_NE(WhyClassCannotCarryGpu("kata-qemu", c).find("without the QEMU VFIO GPU"),
            std::string::npos);
  std::string other = WhyClassCannotCarryGpu("fancy", c);  // "fc" inside a word is not Firecracker
  EXPECT_EQ(other.find("Firecracker"), std::string::npos);
  EXPECT_NE(other.find("kata-qemu-vfio-gpu-tdx"), std::string::npos);
}

}  // namespace
}  // namespace vfio_gpu::webhook
