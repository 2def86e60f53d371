// Where `vfio-gpu install` puts things on a host, as the host sees them (prefix the host root to
// reach them from a container), and the names that tie the runtime chain together.
#pragma once

#include <array>
#include <string>

namespace vfio_gpu::cli {

inline constexpr const char* kShimBinaryName = "containerd-shim-vfio-gpu-v2";
inline constexpr const char* kShimBinaryPath = "/usr/local/bin/containerd-shim-vfio-gpu-v2";
// The shim's pod resources client: a separate binary so the shim itself needs no gRPC (loading it
// costs ~18 ms per container start). The shim looks for it beside itself.
inline constexpr const char* kPodResourcesHelperName = "vfio-gpu-shim-podresources";
inline constexpr const char* kPodResourcesHelperPath = "/usr/local/bin/vfio-gpu-shim-podresources";
inline constexpr const char* kRuntimeName = "vfio-gpu";  // RuntimeClass handler
inline constexpr const char* kRuntimeType = "io.containerd.vfio-gpu.v2";
inline constexpr std::array<const char*, 3> kRuntimeNames = {"vfio-gpu", "vfio-gpu-snp",
                                                             "vfio-gpu-tdx"};

inline constexpr const char* kContainerdConfig = "/etc/containerd/config.toml";
inline constexpr const char* kContainerdDropIn = "/etc/containerd/conf.d/50-vfio-gpu.toml";
inline constexpr const char* kContainerdConfDir = "/etc/containerd/conf.d";
inline constexpr const char* kCriPluginV2 = "io.containerd.grpc.v1.cri";     // containerd 1.x
inline constexpr const char* kCriPluginV3 = "io.containerd.cri.v1.runtime";  // containerd 2.x

// Kata's shipped configurations, and the private directory holding our copies of the GPU ones:
// a drop-in in Kata's shared config.d/ would also apply to configuration-clh.toml (two
// hypervisors: Kata refuses it), so ours sits in vfio-gpu/config.d/ beside the copies.
inline constexpr const char* kKataDefaults = "/opt/kata/share/defaults/kata-containers";
inline constexpr const char* kKataPrivateDir = "/opt/kata/share/defaults/kata-containers/vfio-gpu";
inline constexpr const char* kKataPrivateDropInDir =
    "/opt/kata/share/defaults/kata-containers/vfio-gpu/config.d";
inline constexpr const char* kKataDropIn =
    "/opt/kata/share/defaults/kata-containers/vfio-gpu/config.d/50-vfio-gpu.toml";
inline constexpr const char* kKataGpuConfig = "configuration-qemu-nvidia-gpu.toml";
// The GPU configuration first; the confidential ones are copied when Kata ships them.
inline constexpr std::array<const char*, 3> kKataGpuConfigs = {
    "configuration-qemu-nvidia-gpu.toml", "configuration-qemu-nvidia-gpu-snp.toml",
    "configuration-qemu-nvidia-gpu-tdx.toml"};

inline constexpr const char* kCrioDir = "/etc/crio";
inline constexpr const char* kCrioDropIn = "/etc/crio/crio.conf.d/50-vfio-gpu.conf";
inline constexpr const char* kShimConfig = "/etc/vfio-gpu/shim.json";
inline constexpr const char* kShimConfigDir = "/etc/vfio-gpu";
inline constexpr const char* kPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock";

// <root><host path>; the root "/" (or "") leaves the path as it is.
inline std::string UnderRoot(const std::string& root, const std::string& host_path) {
  if (root.empty() || root == "/") return host_path;
  return (root.back() == '/' ? root.substr(0, root.size() - 1) : root) + host_path;
}

}  // namespace vfio_gpu::cli
