// An in-process stand-in for the kubelet's pod resources API (v1.PodResourcesLister) on a unix
// socket: what Kata (>= 3.24) asks at sandbox creation to learn a pod's device-plugin devices.
// Tests set the pods and what the node can allocate; List, GetAllocatableResources and Get answer
// from that. Get of an unknown pod fails with NOT_FOUND naming the pod. Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "podresources/v1/api.grpc.pb.h"

namespace vfio_gpu::fakes {

// Devices of one resource, as pod resources reports them (ContainerDevices).
struct FakeDevices {
  std::string resource_name;
  std::vector<std::string> device_ids;
  std::vector<int64_t> numa_nodes;  // empty: no topology
};

struct FakeContainer {
  std::string name;
  std::vector<FakeDevices> devices;
};

struct FakePod {
  std::string name;
  std::string ns;  // the pod's namespace
  std::vector<FakeContainer> containers;
};

// The wire form of a pod, for tests that compare against what the server sent.
v1::PodResources ToProto(const FakePod& pod);
v1::ContainerDevices ToProto(const FakeDevices& devices);

class FakePodResources {
 public:
  // Nothing is served until Start().
  explicit FakePodResources(std::string socket_path);
  ~FakePodResources();  // Stop()s.

  FakePodResources(const FakePodResources&) = delete;
  FakePodResources& operator=(const FakePodResources&) = delete;

  // Serves on the socket path (its directory is created if missing).
  Status Start();
  // Stops serving and removes the socket file. Idempotent.
  void Stop();

  const std::string& socket_path() const { return socket_path_; }

  // Replaces every pod. Pods are answered in the order given.
  void SetPods(std::vector<FakePod> pods);
  // Adds a pod, replacing one with the same namespace and name.
  void AddPod(FakePod pod);
  // Removes a pod; false if it was not there.
  bool RemovePod(const std::string& ns, const std::string& name);
  // What GetAllocatableResources reports as devices.
  void SetAllocatable(std::vector<FakeDevices> devices);

  // Calls served so far, by method name ("List", "GetAllocatableResources", "Get").
  int CallCount(const std::string& method) const;

  // How Get answers, as kubelets in the field do: served (1.34+, or the KubeletPodResourcesGet
  // gate on), gate off (an error the kubelet builds with fmt.Errorf, so gRPC's UNKNOWN with
  // "PodResources API Get method disabled"), or a kubelet from before Get existed (UNIMPLEMENTED).
  enum class GetMode { kServed, kGateOff, kUnimplemented };
  void SetGetMode(GetMode mode);

 private:
  class Service;

  grpc::Status List(v1::ListPodResourcesResponse* response);
  grpc::Status GetAllocatable(v1::AllocatableResourcesResponse* response);
  grpc::Status Get(const v1::GetPodResourcesRequest& request,
                   v1::GetPodResourcesResponse* response);

  const std::string socket_path_;

  std::mutex lifecycle_mu_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;

  mutable std::mutex mu_;
  std::vector<FakePod> pods_;
  std::vector<FakeDevices> allocatable_;
  std::map<std::string, int> calls_;
  GetMode get_mode_ = GetMode::kServed;
};

}  // namespace vfio_gpu::fakes
