// Register with the kubelet: v1beta1.Registration/Register on <kubelet dir>/kubelet.sock.
#pragma once

#include <chrono>
#include <string>

#include "common/result.h"

namespace vfio_gpu::plugin {

inline constexpr const char* kKubeletSocket = "kubelet.sock";

// version "v1beta1", endpoint = our socket's file name, options {pre_start_required,
// get_preferred_allocation_available}. Transient errors when the kubelet is down or refuses.
Status RegisterWithKubelet(const std::string& kubelet_socket_path, const std::string& endpoint,
                           const std::string& resource, std::chrono::milliseconds timeout);

}  // namespace vfio_gpu::plugin
