#include "plugin/registration.h"

#include <grpcpp/grpcpp.h>

#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace vfio_gpu::plugin {

Status RegisterWithKubelet(const std::string& kubelet_socket_path, const std::string& endpoint,
                           const std::string& resource, std::chrono::milliseconds timeout) {
  auto channel =
      grpc::CreateChannel("unix:" + kubelet_socket_path, grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest req;
  req.set_version("v1beta1");
  req.set_endpoint(endpoint);
  req.set_resource_name(resource);
  req.mutable_options()->set_pre_start_required(true);
  req.mutable_options()->set_get_preferred_allocation_available(true);
  v1beta1::Empty resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  grpc::Status s = stub->Register(&ctx, req, &resp);
  if (!s.ok())
    return Error("register " + resource + " with the kubelet at " + kubelet_socket_path + ": " +
                     s.error_message() + " (code " +
                     std::to_string(static_cast<int>(s.error_code())) + ")",
                 ErrorKind::kTransient);
  return Status::Ok();
}

}  // namespace vfio_gpu::plugin
