#include "webhook/review.h"

#include <vector>

#include "common/json.h"
#include "webhook/patch.h"
#include "webhook/pod_rules.h"

namespace vfio_gpu::webhook {

namespace {

constexpr std::string_view kApiVersion = "admission.k8s.io/v1";

Decision Invalid(std::string why) {
  Decision d;
  d.outcome = Outcome::kInvalid;
  d.http_status = 400;
  d.content_type = "text/plain";
  d.reason = std::move(why);
  d.body = "invalid AdmissionReview: " + d.reason + "\n";
  return d;
}

// A string field of an object, or "" when absent or not a string.
std::string Str(const Json& o, std::string_view key) {
  Json v = o.Get(key);
  return v.is_string() ? v.AsString() : std::string();
}

Json Envelope(Json response) {
  Json review = Json::Object();
  review.Set("apiVersion", Json::String(kApiVersion));
  review.Set("kind", Json::String("AdmissionReview"));
  review.Set("response", std::move(response));
  return review;
}

Decision Respond(Outcome outcome, Json response, std::string pod, std::string reason) {
  Decision d;
  d.outcome = outcome;
  d.http_status = 200;
  d.content_type = "application/json";
  d.body = Envelope(std::move(response)).Dump();
  d.pod = std::move(pod);
  d.reason = std::move(reason);
  return d;
}

Decision Allow(const std::string& uid, std::string pod, std::string reason) {
  Json r = Json::Object();
  r.Set("uid", Json::String(uid));
  r.Set("allowed", Json::Bool(true));
  return Respond(Outcome::kAllowed, std::move(r), std::move(pod), std::move(reason));
}

Decision Deny(const std::string& uid, std::string pod, const std::string& message) {
  Json status = Json::Object();
  status.Set("code", Json::Int(403));
  status.Set("reason", Json::String("Forbidden"));
  status.Set("message", Json::String(message));
  Json r = Json::Object();
  r.Set("uid", Json::String(uid));
  r.Set("allowed", Json::Bool(false));
  r.Set("status", std::move(status));
  return Respond(Outcome::kDenied, std::move(r), std::move(pod), message);
}

// "namespace/name"; pods made by controllers often have only generateName at admission.
std::string PodName(const Json& request, const Json& meta) {
  std::string ns = Str(request, "namespace");
  if (ns.empty()) ns = Str(meta, "namespace");
  std::string name = Str(meta, "name");
  if (name.empty()) name = Str(request, "name");
  if (name.empty()) name = Str(meta, "generateName") + "*";
  return ns + "/" + name;
}

std::string Requested(const GovernedRequest& r) {
  if (r.container.empty()) return "requests " + r.resource;
  return "requests " + r.resource + " (" + (r.init ? "init container \"" : "container \"") +
         r.container + "\")";
}

}  // namespace

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kAllowed:
      return "allowed";
    case Outcome::kPatched:
      return "patched";
    case Outcome::kDenied:
      return "denied";
    case Outcome::kInvalid:
      return "invalid";
  }
  return "invalid";
}

Decision Review(const Config& config, std::string_view body) {
  if (body.size() > kMaxReviewBytes)
    return Invalid("body of " + std::to_string(body.size()) + " bytes is larger than the " +
                   std::to_string(kMaxReviewBytes) + "-byte limit");
  if (body.empty()) return Invalid("empty body; POST an admission.k8s.io/v1 AdmissionReview");
  auto parsed = Json::Parse(body, "body");
  if (!parsed) return Invalid(parsed.error().message());
  const Json& review = *parsed;
  if (!review.is_object()) return Invalid("body is not a JSON object");
  std::string kind = Str(review, "kind");
  std::string api = Str(review, "apiVersion");
  if (kind != "AdmissionReview" || api != kApiVersion)
    return Invalid(
        "expected kind \"AdmissionReview\" of apiVersion \"admission.k8s.io/v1\", got kind \"" +
        kind + "\" of apiVersion \"" + api +
        "\"; set admissionReviewVersions: [\"v1\"] in the webhook configuration");
  Json request = review.Get("request");
  if (!request.is_object()) return Invalid("no \"request\" object");
  std::string uid = Str(request, "uid");
  if (uid.empty()) return Invalid("request has no \"uid\"");

  // We only ever govern Pod CREATE; anything else the configuration sends us passes untouched.
  Json gvk = request.Get("kind");
  if (Str(gvk, "kind") != "Pod" || !Str(gvk, "group").empty() ||
      !Str(request, "subResource").empty())
    return Allow(uid, "", "not a Pod (kind \"" + Str(gvk, "kind") + "\")");
  if (Str(request, "operation") != "CREATE")
    return Allow(uid, "", "operation " + Str(request, "operation") + " is not CREATE");

  Json pod = request.Get("object");
  if (!pod.is_object()) return Invalid("Pod CREATE request has no \"object\"");
  Json meta = pod.Get("metadata");
  Json spec = pod.Get("spec");
  std::string who = PodName(request, meta);

  std::optional<GovernedRequest> gpu = FindGovernedRequest(config, spec.get());
  Json cls_json = spec.Get("runtimeClassName");
  std::string cls = cls_json.is_string() ? cls_json.AsString() : std::string();
  bool vm_bound = gpu.has_value() || (!cls.empty() && config.IsAllowedClass(cls));

  std::vector<ForbiddenAnnotation> bad =
      FindForbiddenAnnotations(config, meta.Get("annotations").get(), vm_bound);

  // The common case: no GPU, no annotation games. Nothing else is built.
  if (!gpu && bad.empty()) return Allow(uid, who, "requests none of the governed resources");

  std::vector<std::string> refusals;
  if (gpu && !cls.empty() && !config.IsAllowedClass(cls)) {
    refusals.push_back("pod " + who + " " + Requested(*gpu) + " but " +
                       WhyClassCannotCarryGpu(cls, config) + "; use runtimeClassName \"" +
                       config.gpu_runtime_class + "\" (or leave runtimeClassName unset to get it)");
  }
  if (config.annotation_policy == AnnotationPolicy::kDeny) {
    for (const auto& a : bad)
      refusals.push_back("annotation \"" + a.key + "\" " + a.why +
                         ": GPUs come from resources, nothing else; remove the annotation");
  }
  if (!refusals.empty()) {
    std::string message = refusals.front();
    for (size_t i = 1; i < refusals.size(); ++i) message += "; " + refusals[i];
    if (refusals.size() > 1 || refusals.front().rfind("pod ", 0) != 0)
      message = "pod " + who + " refused: " + message;
    return Deny(uid, who, message);
  }

  Json patch = Json::Array();
  Json warnings = Json::Array();
  std::vector<std::string> done;
  for (const auto& a : bad) {  // only reached with the strip policy
    Json op = Json::Object();
    op.Set("op", Json::String("remove"));
    op.Set("path", Json::String("/metadata/annotations/" + JsonPointerEscape(a.key)));
    patch.Append(std::move(op));
    warnings.Append(Json::String("vfio-gpu: removed annotation " + a.key +
                                 ": GPUs come from resources, nothing else"));
    done.push_back("stripped annotation " + a.key + " (" + a.why + ")");
  }
  if (gpu && cls.empty()) {
    Json op = Json::Object();
    op.Set("op", Json::String("add"));
    op.Set("path", Json::String("/spec/runtimeClassName"));
    op.Set("value", Json::String(config.gpu_runtime_class));
    patch.Append(std::move(op));
    warnings.Append(Json::String("vfio-gpu: runtimeClassName set to " + config.gpu_runtime_class +
                                 " because the pod requests " + gpu->resource));
    done.push_back(Requested(*gpu) + ", runtimeClassName set to " + config.gpu_runtime_class);
  }
  if (patch.size() == 0)
    return Allow(uid, who, Requested(*gpu) + " on allowed runtimeClassName " + cls);

  Json r = Json::Object();
  r.Set("uid", Json::String(uid));
  r.Set("allowed", Json::Bool(true));
  r.Set("patchType", Json::String("JSONPatch"));
  r.Set("patch", Json::String(Base64Encode(patch.Dump())));
  r.Set("warnings", std::move(warnings));
  std::string reason = done.front();
  for (size_t i = 1; i < done.size(); ++i) reason += "; " + done[i];
  return Respond(Outcome::kPatched, std::move(r), who, reason);
}

}  // namespace vfio_gpu::webhook
