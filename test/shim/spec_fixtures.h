// Realistic containerd/CRI-O specs for the hook tests.
#pragma once

#include <string>

namespace vfio_gpu::testing {

// A containerd sandbox (pause) spec of pod tenant-a/train-0.
inline std::string SandboxSpec(const std::string& devices = "[]",
                               const std::string& extra_ann = "") {
  return R"({"ociVersion":"1.0.2-dev","process":{"user":{"uid":65535,"gid":65535},"args":["/pause"],
"cwd":"/","capabilities":{"bounding":["CAP_CHOWN"]},"noNewPrivileges":true,"oomScoreAdj":-998},
"root":{"path":"rootfs","readonly":true},"hostname":"train-0",
"mounts":[{"destination":"/proc","type":"proc","source":"proc","options":["nosuid","noexec","nodev"]},
{"destination":"/dev/shm","type":"bind","source":"/run/containerd/io.containerd.grpc.v1.cri/sandboxes/5f1c/shm","options":["rbind","ro"]}],
"annotations":{)" +
         extra_ann +
         R"("io.kubernetes.cri.container-type":"sandbox","io.kubernetes.cri.sandbox-id":"5f1c",
"io.kubernetes.cri.sandbox-log-directory":"/var/log/pods/tenant-a_train-0_1234",
"io.kubernetes.cri.sandbox-name":"train-0","io.kubernetes.cri.sandbox-namespace":"tenant-a",
"io.kubernetes.cri.sandbox-uid":"1234-5678"},
"linux":{"resources":{"devices":[{"allow":false,"access":"rwm"}],"cpu":{"shares":2}},
"cgroupsPath":"kubepods-burstable-pod1234.slice:cri-containerd:5f1c",
"namespaces":[{"type":"pid"},{"type":"ipc"},{"type":"uts"},{"type":"mount"},{"type":"network"}],
"devices":)" +
         devices + R"(,"maskedPaths":["/proc/acpi"],"readonlyPaths":["/proc/bus"]}})";
}

// A containerd container spec in sandbox 5f1c.
inline std::string ContainerSpec(const std::string& devices, const std::string& extra_ann = "") {
  return R"({"ociVersion":"1.0.2-dev","process":{"user":{"uid":0,"gid":0},"args":["python","train.py"],
"env":["PATH=/usr/bin","NVIDIA_VISIBLE_DEVICES=all"],"cwd":"/workspace"},
"root":{"path":"rootfs"},"annotations":{)" +
         extra_ann +
         R"("io.kubernetes.cri.container-name":"trainer","io.kubernetes.cri.container-type":"container",
"io.kubernetes.cri.image-name":"nvcr.io/nvidia/pytorch:24.01-py3","io.kubernetes.cri.sandbox-id":"5f1c",
"io.kubernetes.cri.sandbox-name":"train-0","io.kubernetes.cri.sandbox-namespace":"tenant-a",
"io.kubernetes.cri.sandbox-uid":"1234-5678"},
"linux":{"resources":{"devices":[{"allow":false,"access":"rwm"},{"allow":true,"type":"c","major":241,"minor":25,"access":"rw"}]},
"devices":)" +
         devices + R"(}})";
}

inline std::string Dev(const std::string& path, int major, int minor) {
  return R"({"path":")" + path + R"(","type":"c","major":)" + std::to_string(major) +
         R"(,"minor":)" + std::to_string(minor) + R"(,"fileMode":438,"uid":0,"gid":0})";
}

}  // namespace vfio_gpu::testing
