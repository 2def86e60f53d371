// The decision logic alone: AdmissionReview JSON in, response out, no server.
#include "webhook/review.h"

#include <gtest/gtest.h>

#include "common/json.h"
#include "test/webhook/harness.h"
#include "webhook/patch.h"

namespace vfio_gpu::webhook {
namespace {

using testing::Base64Decode;
using testing::Fixture;

Json Response(const Decision& d) {
  auto j = Json::Parse(d.body, "response");
  EXPECT_TRUE(j.ok()) << d.body;
  EXPECT_EQ(j->Get("apiVersion").AsString(), "admission.k8s.io/v1");
  EXPECT_EQ(j->Get("kind").AsString(), "AdmissionReview");
  return j->Get("response");
}

Json Patch(const Json& response) {
  EXPECT_EQ(response.Get("patchType").AsString(), "JSONPatch");
  auto p = Json::Parse(Base64Decode(response.Get("patch").AsString()), "patch");
  EXPECT_TRUE(p.ok());
  return *p;
}

std::string Message(const Json& response) {
  return response.Get("status").Get("message").AsString();
}

// A Pod CREATE review built around `pod_json`.
std::string PodReview(const std::string& pod_json, const std::string& op = "CREATE") {
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1",)"
         R"("kind":{"group":"","version":"v1","kind":"Pod"},"namespace":"ns1","operation":")" +
         op + R"(","object":)" + pod_json + "}}";
}

const char* kGpuContainers =
    R"("containers":[{"name":"c","resources":{"limits":{"nvidia.com/pgpu":"2"}}}])";

TEST(Review, GpuPodWithoutClassGetsTheGpuClassByPatch) {
  Decision d = Review(Config{}, Fixture("gpu-no-class.json"));
  EXPECT_EQ(d.outcome, Outcome::kPatched);
  EXPECT_EQ(d.http_status, 200);
  Json r = Response(d);
  EXPECT_EQ(r.Get("uid").AsString(), "7d0c1ee9-0001");
  EXPECT_TRUE(r.Get("allowed").AsBool());
  Json p = Patch(r);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p.At(0).Dump(),
            R"({"op":"add","path":"/spec/runtimeClassName","value":"kata-qemu-vfio-gpu"})");
  ASSERT_EQ(r.Get("warnings").size(), 1u);
  EXPECT_NE(r.Get("warnings").At(0).AsString().find("kata-qemu-vfio-gpu"), std::string::npos);
  EXPECT_LE(r.Get("warnings").At(0).AsString().size(), 120u);  // API server truncates longer ones
  EXPECT_EQ(d.pod, "team-a/train-0");
}

TEST(Review, EmptyRuntimeClassNameCountsAsUnset) {
  Decision d = Review(Config{}, PodReview(std::string(R"({"metadata":{"name":"p"},"spec":{)") +
                                          kGpuContainers + R"(,"runtimeClassName":""}})"));
  EXPECT_EQ(d.outcome, Outcome::kPatched);
}

TEST(Review, RuncIsDeniedSayingThereIsNoVmAndNamingTheClassToUse) {
  Decision d = Review(Config{}, Fixture("gpu-runc.json"));
  EXPECT_EQ(d.outcome, Outcome::kDenied);
  Json r = Response(d);
  EXPECT_FALSE(r.Get("allowed").AsBool());
  EXPECT_EQ(r.Get("uid").AsString(), "7d0c1ee9-0002");
  EXPECT_EQ(r.Get("status").Get("code").AsInt(), 403);
  std::string m = Message(r);
  EXPECT_NE(m.find("\"runc\""), std::string::npos) << m;
  EXPECT_NE(m.find("no VM between the tenant and the host"), std::string::npos) << m;
  EXPECT_NE(m.find("use runtimeClassName \"kata-qemu-vfio-gpu\""), std::string::npos) << m;
  EXPECT_NE(m.find("team-a/train-1"), std::string::npos) << m;
  EXPECT_FALSE(r.Has("patch"));
}

TEST(Review, KataClhIsDeniedBecauseCloudHypervisorCannotPassGpusThrough) {
  Decision d = Review(Config{}, Fixture("gpu-kata-clh.json"));
  EXPECT_EQ(d.outcome, Outcome::kDenied);
  std::string m = Message(Response(d));
  EXPECT_NE(m.find("\"kata-clh\""), std::string::npos) << m;
  EXPECT_NE(m.find("Cloud Hypervisor, which cannot pass GPUs through"), std::string::npos) << m;
  EXPECT_NE(m.find("kata-qemu-vfio-gpu"), std::string::npos) << m;
}

TEST(Review, AllowedClassesPassUnchanged) {
  for (const char* cls :
       {"kata-qemu-vfio-gpu", "kata-qemu-vfio-gpu-snp", "kata-qemu-vfio-gpu-tdx"}) {
    Decision d =
        Review(Config{}, PodReview(std::string(R"({"metadata":{"name":"p"},"spec":{)") +
                                   kGpuContainers + R"(,"runtimeClassName":")" + cls + R"("}})"));
    EXPECT_EQ(d.outcome, Outcome::kAllowed) << cls;
    Json r = Response(d);
    EXPECT_TRUE(r.Get("allowed").AsBool());
    EXPECT_FALSE(r.Has("patch"));
    EXPECT_FALSE(r.Has("warnings"));
  }
  EXPECT_EQ(Review(Config{}, Fixture("gpu-class.json")).outcome, Outcome::kAllowed);
}

TEST(Review, InitContainerRequestCounts) {
  Decision d = Review(Config{}, Fixture("gpu-init-container.json"));
  EXPECT_EQ(d.outcome, Outcome::kPatched);
  EXPECT_NE(d.reason.find("init container \"burn-in\""), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("nvidia.com/nvswitch"), std::string::npos) << d.reason;
}

TEST(Review, RequestsWithoutLimitsAndPodLevelResourcesCount) {
  EXPECT_EQ(Review(Config{}, PodReview(R"({"spec":{"containers":[{"name":"c","resources":)"
                                       R"({"requests":{"nvidia.com/pgpu":"1"}}}]}})"))
                .outcome,
            Outcome::kPatched);
  EXPECT_EQ(Review(Config{}, PodReview(R"({"spec":{"containers":[{"name":"c"}],)"
                                       R"("resources":{"limits":{"nvidia.com/pgpu":"1"}}}})"))
                .outcome,
            Outcome::kPatched);
}

TEST(Review, ConfiguredResourcesReplaceTheDefaults) {
  auto cfg = ParseConfig(*Json::Parse(R"({"resources":["example.com/gpu"]})", "t"), "t");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message();
  EXPECT_EQ(Review(*cfg, Fixture("gpu-no-class.json")).outcome, Outcome::kAllowed);
  EXPECT_EQ(Review(*cfg, PodReview(R"({"spec":{"containers":[{"name":"c","resources":)"
                                   R"({"limits":{"example.com/gpu":"1"}}}]}})"))
                .outcome,
            Outcome::kPatched);
}

TEST(Review, TenantCdiAnnotationNamingOurKindIsDenied) {
  Decision d = Review(Config{}, Fixture("cdi-annotation.json"));
  EXPECT_EQ(d.outcome, Outcome::kDenied);
  std::string m = Message(Response(d));
  EXPECT_NE(m.find("\"cdi.k8s.io/gpu\""), std::string::npos) << m;
  EXPECT_NE(m.find("nvidia.com/pgpu"), std::string::npos) << m;
  EXPECT_NE(m.find("GPUs come from resources"), std::string::npos) << m;
}

TEST(Review, CdiAnnotationIsCheckedInEveryEntryOfItsList) {
  Decision d = Review(Config{}, PodReview(R"({"metadata":{"annotations":{"cdi.k8s.io/x":)"
                                          R"("example.com/nic=a, nvidia.com/nvswitch=all"}},)"
                                          R"("spec":{"containers":[{"name":"c"}]}})"));
  EXPECT_EQ(d.outcome, Outcome::kDenied);
}

TEST(Review, StripPolicyRemovesTheAnnotationsWithAWarning) {
  auto cfg = ParseConfig(*Json::Parse(R"({"annotation_policy":"strip"})", "t"), "t");
  ASSERT_TRUE(cfg.ok());
  Decision d = Review(*cfg, PodReview(R"({"metadata":{"annotations":{"cdi.k8s.io/g~1":)"
                                      R"("nvidia.com/pgpu=0","io.katacontainers.config.hypervisor.)"
                                      R"(default_memory":"9"}},"spec":{)" +
                                      std::string(kGpuContainers) + "}}"));
  EXPECT_EQ(d.outcome, Outcome::kPatched);
  Json r = Response(d);
  Json p = Patch(r);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p.At(0).Dump(), R"({"op":"remove","path":"/metadata/annotations/cdi.k8s.io~1g~01"})");
  EXPECT_EQ(p.At(1).Get("path").AsString(),
            "/metadata/annotations/io.katacontainers.config.hypervisor.default_memory");
  EXPECT_EQ(p.At(2).Get("path").AsString(), "/spec/runtimeClassName");
  EXPECT_EQ(r.Get("warnings").size(), 3u);
}

TEST(Review, KataAnnotationsOnGpuPodsMustBeAllowlisted) {
  std::string pod = R"({"metadata":{"annotations":{"io.katacontainers.config.hypervisor.)"
                    R"(default_vcpus":"8"}},"spec":{)" +
                    std::string(kGpuContainers) + "}}";
  Decision denied = Review(Config{}, PodReview(pod));
  EXPECT_EQ(denied.outcome, Outcome::kDenied);
  EXPECT_NE(Message(Response(denied)).find("io.katacontainers.config.hypervisor.default_vcpus"),
            std::string::npos);

  auto cfg = ParseConfig(
      *Json::Parse(
          R"j({"kata_annotation_allowlist":["io\\.katacontainers\\.config\\.hypervisor\\.default_(vcpus|memory)"]})j",
          "t"),
      "t");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message();
  EXPECT_EQ(Review(*cfg, PodReview(pod)).outcome, Outcome::kPatched);
  // The pattern must match the whole name, not a part of it.
  std::string longer = pod;
  longer.replace(longer.find("default_vcpus"), 13, "default_vcpus_x");
  EXPECT_EQ(Review(*cfg, PodReview(longer)).outcome, Outcome::kDenied);
}

TEST(Review, KataAnnotationsOnPodsOutsideOurVmsAreNotOurBusiness) {
  Decision d =
      Review(Config{},
             PodReview(R"({"metadata":{"annotations":{"io.katacontainers.)"
                       R"(config.hypervisor.default_vcpus":"8"}},)"
                       R"("spec":{"runtimeClassName":"kata-clh","containers":[{"name":"c"}]}})"));
  EXPECT_EQ(d.outcome, Outcome::kAllowed);
  // ...but a pod that names our GPU class without asking for a GPU still runs in our VM.
  Decision ours = Review(Config{}, PodReview(R"({"metadata":{"annotations":{"io.katacontainers.)"
                                             R"(config.hypervisor.default_vcpus":"8"}},)"
                                             R"("spec":{"runtimeClassName":"kata-qemu-vfio-gpu",)"
                                             R"("containers":[{"name":"c"}]}})"));
  EXPECT_EQ(ours.outcome, Outcome::kDenied);
}

TEST(Review, NonGpuPodPassesUntouched) {
  Decision d = Review(Config{}, Fixture("non-gpu.json"));
  EXPECT_EQ(d.outcome, Outcome::kAllowed);
  Json r = Response(d);
  EXPECT_EQ(r.Get("uid").AsString(), "7d0c1ee9-0007");
  EXPECT_TRUE(r.Get("allowed").AsBool());
  EXPECT_EQ(r.Keys(), (std::vector<std::string>{"uid", "allowed"}));
}

TEST(Review, OnlyPodCreateIsGoverned) {
  std::string pod =
      std::string(R"({"spec":{)") + kGpuContainers + R"(,"runtimeClassName":"runc"}})";
  EXPECT_EQ(Review(Config{}, PodReview(pod, "UPDATE")).outcome, Outcome::kAllowed);
  std::string deploy = PodReview(pod);
  deploy.replace(deploy.find(R"("kind":"Pod")"), 12, R"("kind":"Deployment")");
  Decision d = Review(Config{}, deploy);
  EXPECT_EQ(d.outcome, Outcome::kAllowed);
  EXPECT_EQ(Response(d).Get("uid").AsString(), "u-1");
}

TEST(Review, GeneratedNamesAreLoggedByTheirPrefix) {
  Decision d =
      Review(Config{}, PodReview(std::string(R"({"metadata":{"generateName":"job-"},"spec":{)") +
                                 kGpuContainers + "}}"));
  EXPECT_EQ(d.pod, "ns1/job-*");
}

TEST(Review, MalformedJsonIsA400NamingWhere) {
  Decision d = Review(Config{}, Fixture("malformed.json"));
  EXPECT_EQ(d.outcome, Outcome::kInvalid);
  EXPECT_EQ(d.http_status, 400);
  EXPECT_EQ(d.content_type, "text/plain");
  EXPECT_NE(d.body.find("invalid JSON"), std::string::npos) << d.body;
}

TEST(Review, WrongKindOrVersionIsA400) {
  Decision d = Review(Config{}, Fixture("wrong-kind.json"));
  EXPECT_EQ(d.http_status, 400);
  EXPECT_NE(d.body.find("admission.k8s.io/v1beta1"), std::string::npos) << d.body;
  EXPECT_EQ(Review(Config{}, R"({"apiVersion":"v1","kind":"Pod"})").http_status, 400);
  EXPECT_EQ(Review(Config{}, "[1,2]").http_status, 400);
  EXPECT_EQ(Review(Config{}, "").http_status, 400);
}

TEST(Review, MissingUidOrObjectIsA400) {
  EXPECT_EQ(Review(Config{}, R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)"
                             R"("request":{"kind":{"kind":"Pod"},"operation":"CREATE"}})")
                .http_status,
            400);
  Decision d =
      Review(Config{}, R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)"
                       R"("request":{"uid":"x","kind":{"kind":"Pod"},"operation":"CREATE"}})");
  EXPECT_EQ(d.http_status, 400);
  EXPECT_NE(d.body.find("no \"object\""), std::string::npos);
}

TEST(Review, WrongTypesInsideThePodAreIgnoredNotFatal) {
  Decision d = Review(Config{}, PodReview(R"({"metadata":{"annotations":[1]},"spec":{"containers":)"
                                          R"({"x":1},"initContainers":[7,{"resources":"big"}],)"
                                          R"("runtimeClassName":5}})"));
  EXPECT_EQ(d.outcome, Outcome::kAllowed);
}

TEST(Review, OversizedBodyIsA400) {
  std::string big(kMaxReviewBytes + 1, ' ');
  Decision d = Review(Config{}, big);
  EXPECT_EQ(d.http_status, 400);
  EXPECT_NE(d.body.find("limit"), std::string::npos);
}

TEST(Review, EveryTruncationOrNestingBombIsA400NotACrash) {
  std::string full = Fixture("gpu-no-class.json");
  while (!full.empty() && full.back() == '\n') full.pop_back();
  for (size_t n = 0; n < full.size(); ++n) {
    Decision d = Review(Config{}, std::string_view(full).substr(0, n));
    ASSERT_EQ(d.http_status, 400) << "truncated at " << n;
  }
  EXPECT_EQ(Review(Config{}, std::string(100000, '[') + std::string(100000, ']')).http_status, 400);
}

TEST(Patch, PointerEscapingAndBase64) {
  EXPECT_EQ(JsonPointerEscape("a/b~c"), "a~1b~0c");
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode(std::string("\xff\xfe\x00", 3)), "//4A");
}

}  // namespace
}  // namespace vfio_gpu::webhook
