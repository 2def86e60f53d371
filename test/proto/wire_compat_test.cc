// Pins proto/ to the kubelet's wire format. The byte strings are built by hand from the field
// numbers and types of the upstream api.proto files (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1,
// .../podresources/v1), with a tiny encoder that knows nothing of our generated code: decoding
// them must give every field back, and encoding our messages must give the same bytes.
#include <gmock/gmock.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "podresources/v1/api.grpc.pb.h"

namespace vfio_gpu {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::DescriptorPool;
using ::google::protobuf::FieldDescriptor;
using ::testing::ElementsAre;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

// --- A hand encoder: protobuf wire format from first principles. ---

std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string Tag(int field, int wire_type) {
  return Varint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type));
}
// Wire type 0: int32, int64, uint64, bool.
std::string VarintField(int field, uint64_t v) {
  return Tag(field, 0) + Varint(v);
}
// Wire type 2: strings, messages, packed repeated scalars.
std::string LenField(int field, const std::string& payload) {
  return Tag(field, 2) + Varint(payload.size()) + payload;
}
// A map<string,string> entry: a message with key = 1, value = 2.
std::string MapEntry(int field, const std::string& key, const std::string& value) {
  return LenField(field, LenField(1, key) + LenField(2, value));
}

// Deterministic (map keys sorted), so map-bearing messages encode to one byte string.
std::string Encode(const google::protobuf::MessageLite& message) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  EXPECT_TRUE(message.SerializeToCodedStream(&coded));
  coded.Trim();
  return out;
}

std::string Hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

// --- Device plugin API v1beta1 ---

TEST(DevicePluginWire, RegisterRequestMatchesALiteralByteString) {
  // Written out byte by byte once, to pin the hand encoder as well.
  const std::string literal(
      "\x0a\x07"
      "v1beta1"
      "\x12\x06"
      "x.sock"
      "\x1a\x0f"
      "nvidia.com/pgpu"
      "\x22\x04\x08\x01\x10\x01",
      2 + 7 + 2 + 6 + 2 + 15 + 6);
  const std::string built = LenField(1, "v1beta1") + LenField(2, "x.sock") +
                            LenField(3, "nvidia.com/pgpu") +
                            LenField(4, VarintField(1, 1) + VarintField(2, 1));
  ASSERT_EQ(Hex(built), Hex(literal));

  v1beta1::RegisterRequest request;
  ASSERT_TRUE(request.ParseFromString(literal));
  EXPECT_EQ(request.version(), "v1beta1");
  EXPECT_EQ(request.endpoint(), "x.sock");
  EXPECT_EQ(request.resource_name(), "nvidia.com/pgpu");
  ASSERT_TRUE(request.has_options());
  EXPECT_TRUE(request.options().pre_start_required());
  EXPECT_TRUE(request.options().get_preferred_allocation_available());

  v1beta1::RegisterRequest ours;
  ours.set_version("v1beta1");
  ours.set_endpoint("x.sock");
  ours.set_resource_name("nvidia.com/pgpu");
  ours.mutable_options()->set_pre_start_required(true);
  ours.mutable_options()->set_get_preferred_allocation_available(true);
  EXPECT_EQ(Hex(Encode(ours)), Hex(literal));
}

TEST(DevicePluginWire, DevicePluginOptionsAndEmpty) {
  const std::string wire = VarintField(2, 1);  // only get_preferred_allocation_available
  v1beta1::DevicePluginOptions options;
  ASSERT_TRUE(options.ParseFromString(wire));
  EXPECT_FALSE(options.pre_start_required());
  EXPECT_TRUE(options.get_preferred_allocation_available());
  EXPECT_EQ(Hex(Encode(options)), Hex(wire));
  EXPECT_EQ(Encode(v1beta1::Empty()), "");
}

TEST(DevicePluginWire, ListAndWatchResponseWithTopology) {
  const std::string on_node_1 =
      LenField(1, "0000:17:00.0") + LenField(2, "Healthy") +
      LenField(3, LenField(1, VarintField(1, 1)));  // topology { nodes { ID: 1 } }
  // NUMA node 0 is an empty NUMANode: present, unlike a device without topology.
  const std::string on_node_0 =
      LenField(1, "g") + LenField(2, "Healthy") + LenField(3, LenField(1, ""));
  const std::string no_topology = LenField(1, "0000:65:00.0") + LenField(2, "Unhealthy");
  const std::string wire =
      LenField(1, on_node_1) + LenField(1, on_node_0) + LenField(1, no_topology);

  v1beta1::ListAndWatchResponse response;
  ASSERT_TRUE(response.ParseFromString(wire));
  ASSERT_EQ(response.devices_size(), 3);
  const v1beta1::Device& a = response.devices(0);
  EXPECT_EQ(a.id(), "0000:17:00.0");
  EXPECT_EQ(a.health(), "Healthy");
  ASSERT_TRUE(a.has_topology());
  ASSERT_EQ(a.topology().nodes_size(), 1);
  EXPECT_EQ(a.topology().nodes(0).id(), 1);
  const v1beta1::Device& b = response.devices(1);
  EXPECT_EQ(b.id(), "g");
  ASSERT_TRUE(b.has_topology());
  ASSERT_EQ(b.topology().nodes_size(), 1);
  EXPECT_EQ(b.topology().nodes(0).id(), 0);
  const v1beta1::Device& c = response.devices(2);
  EXPECT_EQ(c.id(), "0000:65:00.0");
  EXPECT_EQ(c.health(), "Unhealthy");
  EXPECT_FALSE(c.has_topology());

  v1beta1::ListAndWatchResponse ours;
  auto* d0 = ours.add_devices();
  d0->set_id("0000:17:00.0");
  d0->set_health("Healthy");
  d0->mutable_topology()->add_nodes()->set_id(1);
  auto* d1 = ours.add_devices();
  d1->set_id("g");
  d1->set_health("Healthy");
  d1->mutable_topology()->add_nodes()->set_id(0);
  auto* d2 = ours.add_devices();
  d2->set_id("0000:65:00.0");
  d2->set_health("Unhealthy");
  EXPECT_EQ(Hex(Encode(ours)), Hex(wire));
}

TEST(DevicePluginWire, NumaNodeIdIsInt64) {
  // A large node number survives: int64 varint, not int32.
  const std::string wire = VarintField(1, uint64_t{1} << 40);
  v1beta1::NUMANode node;
  ASSERT_TRUE(node.ParseFromString(wire));
  EXPECT_EQ(node.id(), int64_t{1} << 40);
}

TEST(DevicePluginWire, AllocateRequestAndPreStartContainerRequest) {
  const std::string wire =
      LenField(1, LenField(1, "0000:17:00.0") + LenField(1, "0000:65:00.0")) + LenField(1, "");
  v1beta1::AllocateRequest request;
  ASSERT_TRUE(request.ParseFromString(wire));
  ASSERT_EQ(request.container_requests_size(), 2);
  EXPECT_THAT(request.container_requests(0).devices_ids(),
              ElementsAre("0000:17:00.0", "0000:65:00.0"));
  EXPECT_EQ(request.container_requests(1).devices_ids_size(), 0);
  EXPECT_EQ(Hex(Encode(request)), Hex(wire));

  const std::string prestart = LenField(1, "a") + LenField(1, "b");
  v1beta1::PreStartContainerRequest pre;
  ASSERT_TRUE(pre.ParseFromString(prestart));
  EXPECT_THAT(pre.devices_ids(), ElementsAre("a", "b"));
  EXPECT_EQ(Encode(v1beta1::PreStartContainerResponse()), "");
}

TEST(DevicePluginWire, AllocateResponseWithEveryField) {
  const std::string container =
      MapEntry(1, "A", "1") + MapEntry(1, "PCI_RESOURCE_NVIDIA_COM_PGPU", "0000:17:00.0") +
      LenField(2, LenField(1, "/c") + LenField(2, "/h") + VarintField(3, 1)) +
      LenField(3,
               LenField(1, "/dev/vfio/vfio") + LenField(2, "/dev/vfio/vfio") + LenField(3, "rw")) +
      LenField(3, LenField(1, "/dev/vfio/25") + LenField(2, "/dev/vfio/25") + LenField(3, "rwm")) +
      MapEntry(4, "cdi.k8s.io/vfio-gpu", "nvidia.com/pgpu=0000:17:00.0") +
      LenField(5, LenField(1, "nvidia.com/pgpu=0000:17:00.0")) +
      LenField(5, LenField(1, "nvidia.com/pgpu=0000:65:00.0"));
  const std::string wire = LenField(1, container);

  v1beta1::AllocateResponse response;
  ASSERT_TRUE(response.ParseFromString(wire));
  ASSERT_EQ(response.container_responses_size(), 1);
  const v1beta1::ContainerAllocateResponse& c = response.container_responses(0);
  EXPECT_THAT(c.envs(), UnorderedElementsAre(Pair("A", "1"),
                                             Pair("PCI_RESOURCE_NVIDIA_COM_PGPU", "0000:17:00.0")));
  ASSERT_EQ(c.mounts_size(), 1);
  EXPECT_EQ(c.mounts(0).container_path(), "/c");
  EXPECT_EQ(c.mounts(0).host_path(), "/h");
  EXPECT_TRUE(c.mounts(0).read_only());
  ASSERT_EQ(c.devices_size(), 2);
  EXPECT_EQ(c.devices(0).container_path(), "/dev/vfio/vfio");
  EXPECT_EQ(c.devices(0).host_path(), "/dev/vfio/vfio");
  EXPECT_EQ(c.devices(0).permissions(), "rw");
  EXPECT_EQ(c.devices(1).container_path(), "/dev/vfio/25");
  EXPECT_EQ(c.devices(1).permissions(), "rwm");
  EXPECT_THAT(c.annotations(),
              UnorderedElementsAre(Pair("cdi.k8s.io/vfio-gpu", "nvidia.com/pgpu=0000:17:00.0")));
  ASSERT_EQ(c.cdi_devices_size(), 2);
  EXPECT_EQ(c.cdi_devices(0).name(), "nvidia.com/pgpu=0000:17:00.0");
  EXPECT_EQ(c.cdi_devices(1).name(), "nvidia.com/pgpu=0000:65:00.0");

  v1beta1::AllocateResponse ours;
  auto* o = ours.add_container_responses();
  (*o->mutable_envs())["PCI_RESOURCE_NVIDIA_COM_PGPU"] = "0000:17:00.0";
  (*o->mutable_envs())["A"] = "1";
  auto* mount = o->add_mounts();
  mount->set_container_path("/c");
  mount->set_host_path("/h");
  mount->set_read_only(true);
  auto* container_dev = o->add_devices();
  container_dev->set_container_path("/dev/vfio/vfio");
  container_dev->set_host_path("/dev/vfio/vfio");
  container_dev->set_permissions("rw");
  auto* group_dev = o->add_devices();
  group_dev->set_container_path("/dev/vfio/25");
  group_dev->set_host_path("/dev/vfio/25");
  group_dev->set_permissions("rwm");
  (*o->mutable_annotations())["cdi.k8s.io/vfio-gpu"] = "nvidia.com/pgpu=0000:17:00.0";
  o->add_cdi_devices()->set_name("nvidia.com/pgpu=0000:17:00.0");
  o->add_cdi_devices()->set_name("nvidia.com/pgpu=0000:65:00.0");
  EXPECT_EQ(Hex(Encode(ours)), Hex(wire));
}

TEST(DevicePluginWire, CdiOnlyAllocateResponseCarriesNothingElse) {
  // Our default answer: field 5 only, so the runtime sees each GPU through one path.
  v1beta1::AllocateResponse ours;
  ours.add_container_responses()->add_cdi_devices()->set_name("nvidia.com/pgpu=0000:17:00.0");
  EXPECT_EQ(Hex(Encode(ours)),
            Hex(LenField(1, LenField(5, LenField(1, "nvidia.com/pgpu=0000:17:00.0")))));
}

TEST(DevicePluginWire, PreferredAllocationRequestAndResponse) {
  const std::string wire = LenField(1, LenField(1, "a") + LenField(1, "b") + LenField(1, "c") +
                                           LenField(1, "d") + LenField(2, "c") + VarintField(3, 2));
  v1beta1::PreferredAllocationRequest request;
  ASSERT_TRUE(request.ParseFromString(wire));
  ASSERT_EQ(request.container_requests_size(), 1);
  const auto& c = request.container_requests(0);
  EXPECT_THAT(c.available_deviceids(), ElementsAre("a", "b", "c", "d"));
  EXPECT_THAT(c.must_include_deviceids(), ElementsAre("c"));
  EXPECT_EQ(c.allocation_size(), 2);
  EXPECT_EQ(Hex(Encode(request)), Hex(wire));

  const std::string answer = LenField(1, LenField(1, "c") + LenField(1, "a"));
  v1beta1::PreferredAllocationResponse response;
  ASSERT_TRUE(response.ParseFromString(answer));
  ASSERT_EQ(response.container_responses_size(), 1);
  EXPECT_THAT(response.container_responses(0).deviceids(), ElementsAre("c", "a"));
  EXPECT_EQ(Hex(Encode(response)), Hex(answer));
}

// --- Pod resources API v1 ---

TEST(PodResourcesWire, GetPodResourcesRequest) {
  const std::string wire = LenField(1, "trainer-0") + LenField(2, "tenant-a");
  v1::GetPodResourcesRequest request;
  ASSERT_TRUE(request.ParseFromString(wire));
  EXPECT_EQ(request.pod_name(), "trainer-0");
  EXPECT_EQ(request.pod_namespace(), "tenant-a");
  EXPECT_EQ(Hex(Encode(request)), Hex(wire));
}

std::string TopologyOn(uint64_t node) {
  return LenField(1, VarintField(1, node));
}

TEST(PodResourcesWire, GetPodResourcesResponseWithEveryField) {
  const std::string devices = LenField(1, "nvidia.com/pgpu") + LenField(2, "0000:17:00.0") +
                              LenField(2, "0000:65:00.0") + LenField(3, TopologyOn(1));
  // proto3 packs repeated scalars: cpu_ids = [2, 3] is one length-delimited field.
  const std::string cpus = LenField(3, Varint(2) + Varint(3));
  const std::string memory =
      LenField(1, "hugepages-1Gi") + VarintField(2, uint64_t{8} << 30) + LenField(3, TopologyOn(1));
  const std::string claim = LenField(1, LenField(1, "gpu.example.com/gpu=dev0")) +
                            LenField(2, "gpu.example.com") + LenField(3, "node-a") +
                            LenField(4, "dev0");
  const std::string dynamic = LenField(2, "claim-x") + LenField(3, "tenant-a") + LenField(4, claim);
  const std::string container = LenField(1, "main") + LenField(2, devices) + cpus +
                                LenField(4, memory) + LenField(5, dynamic);
  const std::string pod = LenField(1, "trainer-0") + LenField(2, "tenant-a") +
                          LenField(3, container) + LenField(3, LenField(1, "sidecar"));
  const std::string wire = LenField(1, pod);

  v1::GetPodResourcesResponse response;
  ASSERT_TRUE(response.ParseFromString(wire));
  ASSERT_TRUE(response.has_pod_resources());
  const v1::PodResources& p = response.pod_resources();
  EXPECT_EQ(p.name(), "trainer-0");
  EXPECT_EQ(p.namespace_(), "tenant-a");
  ASSERT_EQ(p.containers_size(), 2);
  const v1::ContainerResources& c = p.containers(0);
  EXPECT_EQ(c.name(), "main");
  ASSERT_EQ(c.devices_size(), 1);
  EXPECT_EQ(c.devices(0).resource_name(), "nvidia.com/pgpu");
  EXPECT_THAT(c.devices(0).device_ids(), ElementsAre("0000:17:00.0", "0000:65:00.0"));
  ASSERT_EQ(c.devices(0).topology().nodes_size(), 1);
  EXPECT_EQ(c.devices(0).topology().nodes(0).id(), 1);
  EXPECT_THAT(c.cpu_ids(), ElementsAre(2, 3));
  ASSERT_EQ(c.memory_size(), 1);
  EXPECT_EQ(c.memory(0).memory_type(), "hugepages-1Gi");
  EXPECT_EQ(c.memory(0).size(), uint64_t{8} << 30);
  EXPECT_EQ(c.memory(0).topology().nodes(0).id(), 1);
  ASSERT_EQ(c.dynamic_resources_size(), 1);
  const v1::DynamicResource& d = c.dynamic_resources(0);
  EXPECT_EQ(d.claim_name(), "claim-x");
  EXPECT_EQ(d.claim_namespace(), "tenant-a");
  ASSERT_EQ(d.claim_resources_size(), 1);
  EXPECT_EQ(d.claim_resources(0).cdi_devices(0).name(), "gpu.example.com/gpu=dev0");
  EXPECT_EQ(d.claim_resources(0).driver_name(), "gpu.example.com");
  EXPECT_EQ(d.claim_resources(0).pool_name(), "node-a");
  EXPECT_EQ(d.claim_resources(0).device_name(), "dev0");
  EXPECT_EQ(p.containers(1).name(), "sidecar");

  // Re-encoding gives the kubelet's bytes back.
  EXPECT_EQ(Hex(Encode(response)), Hex(wire));
}

TEST(PodResourcesWire, UnpackedCpuIdsAreAcceptedToo) {
  // Parsers must take both encodings of a repeated scalar.
  v1::ContainerResources c;
  ASSERT_TRUE(c.ParseFromString(VarintField(3, 7) + VarintField(3, 9)));
  EXPECT_THAT(c.cpu_ids(), ElementsAre(7, 9));
}

TEST(PodResourcesWire, ListAndAllocatableResponses) {
  const std::string pod = LenField(1, "p") + LenField(2, "ns");
  const std::string list = LenField(1, pod) + LenField(1, pod);
  v1::ListPodResourcesResponse listed;
  ASSERT_TRUE(listed.ParseFromString(list));
  ASSERT_EQ(listed.pod_resources_size(), 2);
  EXPECT_EQ(listed.pod_resources(1).namespace_(), "ns");
  EXPECT_EQ(Hex(Encode(listed)), Hex(list));

  const std::string allocatable =
      LenField(1, LenField(1, "nvidia.com/pgpu") + LenField(2, "0000:17:00.0")) +
      LenField(2, Varint(0) + Varint(1)) +
      LenField(3, LenField(1, "memory") + VarintField(2, 4096));
  v1::AllocatableResourcesResponse alloc;
  ASSERT_TRUE(alloc.ParseFromString(allocatable));
  ASSERT_EQ(alloc.devices_size(), 1);
  EXPECT_EQ(alloc.devices(0).resource_name(), "nvidia.com/pgpu");
  EXPECT_THAT(alloc.cpu_ids(), ElementsAre(0, 1));
  ASSERT_EQ(alloc.memory_size(), 1);
  EXPECT_EQ(alloc.memory(0).size(), 4096u);
  EXPECT_EQ(Hex(Encode(alloc)), Hex(allocatable));
}

TEST(PodResourcesWire, FieldsFromANewerKubeletSurviveARoundTrip) {
  // A field number we do not know (e.g. added upstream later) is kept, not dropped.
  const std::string wire = LenField(1, "p") + LenField(2, "ns") + LenField(9, Varint(5));
  v1::PodResources pod;
  ASSERT_TRUE(pod.ParseFromString(wire));
  EXPECT_EQ(pod.name(), "p");
  EXPECT_EQ(Hex(Encode(pod)), Hex(wire));
}

// --- Names: services, methods and every field's name, number and type, as upstream. ---

struct FieldSpec {
  const char* name;
  int number;
  FieldDescriptor::Type type;
  bool repeated;
};

void ExpectFields(const std::string& message, const std::vector<FieldSpec>& fields) {
  SCOPED_TRACE(message);
  const Descriptor* d = DescriptorPool::generated_pool()->FindMessageTypeByName(message);
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(d->field_count(), static_cast<int>(fields.size()));
  for (const FieldSpec& spec : fields) {
    SCOPED_TRACE(spec.name);
    const FieldDescriptor* f = d->FindFieldByName(spec.name);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->number(), spec.number);
    EXPECT_EQ(f->type(), spec.type);
    EXPECT_EQ(f->is_repeated(), spec.repeated);
  }
}

constexpr auto kString = FieldDescriptor::TYPE_STRING;
constexpr auto kBool = FieldDescriptor::TYPE_BOOL;
constexpr auto kInt32 = FieldDescriptor::TYPE_INT32;
constexpr auto kInt64 = FieldDescriptor::TYPE_INT64;
constexpr auto kUint64 = FieldDescriptor::TYPE_UINT64;
constexpr auto kMessage = FieldDescriptor::TYPE_MESSAGE;

TEST(DevicePluginNames, EveryMessageFieldIsUpstreams) {
  ExpectFields("v1beta1.DevicePluginOptions",
               {{"pre_start_required", 1, kBool, false},
                {"get_preferred_allocation_available", 2, kBool, false}});
  ExpectFields("v1beta1.RegisterRequest", {{"version", 1, kString, false},
                                           {"endpoint", 2, kString, false},
                                           {"resource_name", 3, kString, false},
                                           {"options", 4, kMessage, false}});
  ExpectFields("v1beta1.Empty", {});
  ExpectFields("v1beta1.ListAndWatchResponse", {{"devices", 1, kMessage, true}});
  ExpectFields("v1beta1.TopologyInfo", {{"nodes", 1, kMessage, true}});
  ExpectFields("v1beta1.NUMANode", {{"ID", 1, kInt64, false}});
  ExpectFields(
      "v1beta1.Device",
      {{"ID", 1, kString, false}, {"health", 2, kString, false}, {"topology", 3, kMessage, false}});
  ExpectFields("v1beta1.PreStartContainerRequest", {{"devices_ids", 1, kString, true}});
  ExpectFields("v1beta1.PreStartContainerResponse", {});
  ExpectFields("v1beta1.PreferredAllocationRequest", {{"container_requests", 1, kMessage, true}});
  ExpectFields("v1beta1.ContainerPreferredAllocationRequest",
               {{"available_deviceIDs", 1, kString, true},
                {"must_include_deviceIDs", 2, kString, true},
                {"allocation_size", 3, kInt32, false}});
  ExpectFields("v1beta1.PreferredAllocationResponse", {{"container_responses", 1, kMessage, true}});
  ExpectFields("v1beta1.ContainerPreferredAllocationResponse", {{"deviceIDs", 1, kString, true}});
  ExpectFields("v1beta1.AllocateRequest", {{"container_requests", 1, kMessage, true}});
  ExpectFields("v1beta1.ContainerAllocateRequest", {{"devices_ids", 1, kString, true}});
  ExpectFields("v1beta1.CDIDevice", {{"name", 1, kString, false}});
  ExpectFields("v1beta1.AllocateResponse", {{"container_responses", 1, kMessage, true}});
  ExpectFields("v1beta1.ContainerAllocateResponse", {{"envs", 1, kMessage, true},
                                                     {"mounts", 2, kMessage, true},
                                                     {"devices", 3, kMessage, true},
                                                     {"annotations", 4, kMessage, true},
                                                     {"cdi_devices", 5, kMessage, true}});
  ExpectFields("v1beta1.Mount", {{"container_path", 1, kString, false},
                                 {"host_path", 2, kString, false},
                                 {"read_only", 3, kBool, false}});
  ExpectFields("v1beta1.DeviceSpec", {{"container_path", 1, kString, false},
                                      {"host_path", 2, kString, false},
                                      {"permissions", 3, kString, false}});
  const Descriptor* c =
      DescriptorPool::generated_pool()->FindMessageTypeByName("v1beta1.ContainerAllocateResponse");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->FindFieldByName("envs")->is_map());
  EXPECT_TRUE(c->FindFieldByName("annotations")->is_map());
}

TEST(PodResourcesNames, EveryMessageFieldIsUpstreams) {
  ExpectFields("v1.AllocatableResourcesRequest", {});
  ExpectFields("v1.AllocatableResourcesResponse", {{"devices", 1, kMessage, true},
                                                   {"cpu_ids", 2, kInt64, true},
                                                   {"memory", 3, kMessage, true}});
  ExpectFields("v1.ListPodResourcesRequest", {});
  ExpectFields("v1.ListPodResourcesResponse", {{"pod_resources", 1, kMessage, true}});
  ExpectFields("v1.PodResources", {{"name", 1, kString, false},
                                   {"namespace", 2, kString, false},
                                   {"containers", 3, kMessage, true}});
  ExpectFields("v1.ContainerResources", {{"name", 1, kString, false},
                                         {"devices", 2, kMessage, true},
                                         {"cpu_ids", 3, kInt64, true},
                                         {"memory", 4, kMessage, true},
                                         {"dynamic_resources", 5, kMessage, true}});
  ExpectFields("v1.ContainerMemory", {{"memory_type", 1, kString, false},
                                      {"size", 2, kUint64, false},
                                      {"topology", 3, kMessage, false}});
  ExpectFields("v1.ContainerDevices", {{"resource_name", 1, kString, false},
                                       {"device_ids", 2, kString, true},
                                       {"topology", 3, kMessage, false}});
  ExpectFields("v1.TopologyInfo", {{"nodes", 1, kMessage, true}});
  ExpectFields("v1.NUMANode", {{"ID", 1, kInt64, false}});
  ExpectFields("v1.DynamicResource", {{"claim_name", 2, kString, false},
                                      {"claim_namespace", 3, kString, false},
                                      {"claim_resources", 4, kMessage, true}});
  ExpectFields("v1.ClaimResource", {{"cdi_devices", 1, kMessage, true},
                                    {"driver_name", 2, kString, false},
                                    {"pool_name", 3, kString, false},
                                    {"device_name", 4, kString, false}});
  ExpectFields("v1.CDIDevice", {{"name", 1, kString, false}});
  ExpectFields("v1.GetPodResourcesRequest",
               {{"pod_name", 1, kString, false}, {"pod_namespace", 2, kString, false}});
  ExpectFields("v1.GetPodResourcesResponse", {{"pod_resources", 1, kMessage, false}});
}

using Method = std::tuple<std::string, std::string, std::string, bool>;  // name, in, out, stream

void ExpectService(const std::string& service, const std::vector<Method>& methods) {
  SCOPED_TRACE(service);
  const auto* s = DescriptorPool::generated_pool()->FindServiceByName(service);
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->method_count(), static_cast<int>(methods.size()));
  for (const auto& [name, in, out, streams] : methods) {
    SCOPED_TRACE(name);
    const auto* m = s->FindMethodByName(name);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->input_type()->full_name(), in);
    EXPECT_EQ(m->output_type()->full_name(), out);
    EXPECT_FALSE(m->client_streaming());
    EXPECT_EQ(m->server_streaming(), streams);
  }
}

TEST(ServiceNames, MethodPathsAreTheKubelets) {
  // gRPC paths are /<package>.<Service>/<Method>: these strings are what goes on the wire.
  EXPECT_STREQ(v1beta1::Registration::service_full_name(), "v1beta1.Registration");
  EXPECT_STREQ(v1beta1::DevicePlugin::service_full_name(), "v1beta1.DevicePlugin");
  EXPECT_STREQ(v1::PodResourcesLister::service_full_name(), "v1.PodResourcesLister");
  ExpectService("v1beta1.Registration",
                {{"Register", "v1beta1.RegisterRequest", "v1beta1.Empty", false}});
  ExpectService("v1beta1.DevicePlugin",
                {{"GetDevicePluginOptions", "v1beta1.Empty", "v1beta1.DevicePluginOptions", false},
                 {"ListAndWatch", "v1beta1.Empty", "v1beta1.ListAndWatchResponse", true},
                 {"GetPreferredAllocation", "v1beta1.PreferredAllocationRequest",
                  "v1beta1.PreferredAllocationResponse", false},
                 {"Allocate", "v1beta1.AllocateRequest", "v1beta1.AllocateResponse", false},
                 {"PreStartContainer", "v1beta1.PreStartContainerRequest",
                  "v1beta1.PreStartContainerResponse", false}});
  ExpectService("v1.PodResourcesLister",
                {{"List", "v1.ListPodResourcesRequest", "v1.ListPodResourcesResponse", false},
                 {"GetAllocatableResources", "v1.AllocatableResourcesRequest",
                  "v1.AllocatableResourcesResponse", false},
                 {"Get", "v1.GetPodResourcesRequest", "v1.GetPodResourcesResponse", false}});
}

}  // namespace
}  // namespace vfio_gpu
