#include "hostmodel/snapshot_json.h"

#include "common/strings.h"
#include "hostmodel/host_roots.h"

namespace vfio_gpu {
namespace {

Json Strings(const std::vector<std::string>& v) {
  Json a = Json::Array();
  for (const auto& s : v) a.Append(Json::String(s));
  return a;
}

}  // namespace

Json UnitToJson(const Unit& u) {
  Json j = Json::Object();
  j.Set("id", Json::String(u.id));
  j.Set("resource", Json::String(u.resource));
  j.Set("cdi_device", Json::String(u.CdiName()));
  j.Set("kind", Json::String(u.kind == UnitKind::kGpu ? "gpu" : "nvswitch"));
  j.Set("iommu_group", Json::Int(u.iommu_group));
  j.Set("numa_node", u.numa_node ? Json::Int(*u.numa_node) : Json::Null());
  j.Set("viable", Json::Bool(u.viable));
  j.Set("reason", Json::String(u.reason));
  Json members = Json::Array();
  for (const auto& m : u.members) {
    Json mj = Json::Object();
    mj.Set("bdf", Json::String(m.bdf));
    mj.Set("driver", Json::String(m.driver));
    mj.Set("class", Json::String("0x" + Hex(m.class_code, 6)));
    members.Append(std::move(mj));
  }
  j.Set("members", std::move(members));
  j.Set("gpus", Strings(u.gpus));
  j.Set("vendor_id", Json::String("0x" + Hex(u.vendor, 4)));
  j.Set("device_id", Json::String("0x" + Hex(u.device, 4)));
  j.Set("model", Json::String(u.model));
  j.Set("group_node", Json::String(u.GroupPath()));
  j.Set("group_node_present", Json::Bool(u.group_node_present));
  j.Set("cdevs", Strings(u.cdevs));
  j.Set("root_complex", Json::String(u.root_complex));
  j.Set("pcie_path", Strings(u.pcie_path));
  j.Set("reset_method", Json::String(u.reset_method));
  j.Set("present", Json::Bool(u.present));
  return j;
}

Json SnapshotToJson(const Snapshot& s) {
  Json units = Json::Array();
  for (const auto& u : s.units) units.Append(UnitToJson(u));
  Json skipped = Json::Array();
  for (const auto& k : s.skipped) {
    Json j = Json::Object();
    j.Set("bdf", Json::String(k.bdf));
    j.Set("reason", Json::String(k.reason));
    skipped.Append(std::move(j));
  }
  Json problems = Json::Array();
  for (const auto& p : s.problems) {
    Json j = Json::Object();
    j.Set("bdf", Json::String(p.bdf));
    j.Set("error", Json::String(p.error));
    problems.Append(std::move(j));
  }
  Json out = Json::Object();
  out.Set("units", std::move(units));
  out.Set("skipped", std::move(skipped));
  out.Set("problems", std::move(problems));
  return out;
}

}  // namespace vfio_gpu
