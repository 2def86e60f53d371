#include "shim-hooks/pod_resources_client.h"

#include <grpcpp/grpcpp.h>

#include <chrono>

#include "common/json.h"
#include "podresources/v1/api.grpc.pb.h"

namespace vfio_gpu {
namespace {

Json PodJson(const v1::PodResources& pod, const char* method) {
  Json containers = Json::Array();
  for (const auto& c : pod.containers()) {
    Json devices = Json::Array();
    for (const auto& d : c.devices()) {
      Json ids = Json::Array();
      for (const auto& id : d.device_ids()) ids.Append(Json::String(id));
      Json dev = Json::Object();
      dev.Set("resource_name", Json::String(d.resource_name()));
      dev.Set("device_ids", std::move(ids));
      devices.Append(std::move(dev));
    }
    Json cj = Json::Object();
    cj.Set("name", Json::String(c.name()));
    cj.Set("devices", std::move(devices));
    containers.Append(std::move(cj));
  }
  Json o = Json::Object();
  o.Set("found", Json::Bool(true));
  o.Set("method", Json::String(method));
  o.Set("containers", std::move(containers));
  return o;
}

bool Unavailable(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
         s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

}  // namespace

int QueryPodResourcesJson(const std::string& socket, const std::string& ns, const std::string& name,
                          int timeout_ms, std::string& out, std::string& err) {
  auto channel = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  auto stub = v1::PodResourcesLister::NewStub(channel);
  auto deadline = [&] {
    return std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms);
  };
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline());
    v1::GetPodResourcesRequest req;
    req.set_pod_name(name);
    req.set_pod_namespace(ns);
    v1::GetPodResourcesResponse resp;
    grpc::Status s = stub->Get(&ctx, req, &resp);
    if (s.ok()) {
      out = PodJson(resp.pod_resources(), "Get").Dump();
      return 0;
    }
    if (Unavailable(s)) {
      err = "the kubelet's pod resources API at " + socket + " is unavailable (" +
            s.error_message() + ")";
      return 1;
    }
    // Get disabled or unknown (older kubelets), or the pod not found by Get: ask List.
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(deadline());
  v1::ListPodResourcesResponse resp;
  grpc::Status s = stub->List(&ctx, v1::ListPodResourcesRequest(), &resp);
  if (!s.ok()) {
    err = "pod resources List at " + socket + " failed: " + s.error_message();
    return Unavailable(s) ? 1 : 2;
  }
  for (const auto& pod : resp.pod_resources()) {
    if (pod.name() == name && pod.namespace_() == ns) {
      out = PodJson(pod, "List").Dump();
      return 0;
    }
  }
  Json o = Json::Object();
  o.Set("found", Json::Bool(false));
  o.Set("method", Json::String("List"));
  o.Set("containers", Json::Array());
  out = o.Dump();
  return 0;
}

}  // namespace vfio_gpu
