#include "cli/render.h"

#include <algorithm>

#include "common/strings.h"
#include "hostmodel/pci_device.h"

namespace vfio_gpu::cli {
namespace {

std::string Pad(const std::string& s, size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

}  // namespace

std::string RenderTable(const Snapshot& snap) {
  std::vector<std::vector<std::string>> rows = {
      {"UNIT", "RESOURCE", "GROUP", "NUMA", "HEALTH", "MODEL", "MEMBERS"}};
  for (const auto& u : snap.units) {
    std::vector<std::string> members;
    for (const auto& m : u.members)
      members.push_back(m.bdf + " (" + ClassName(m.class_code) + ", " +
                        (m.driver.empty() ? "no driver" : m.driver) + ")");
    std::string health = u.viable ? (u.group_node_present ? "ok" : "no-node") : "NOT-VIABLE";
    if (!u.present) health = "GONE";
    rows.push_back({u.id, u.resource, std::to_string(u.iommu_group),
                    u.numa_node ? std::to_string(*u.numa_node) : "-", health, u.model,
                    Join(members, ", ")});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (size_t i = 0; i + 1 < r.size(); ++i) width[i] = std::max(width[i], r[i].size() + 2);
  std::string out;
  for (const auto& r : rows) {
    for (size_t i = 0; i + 1 < r.size(); ++i) out += Pad(r[i], width[i]);
    out += r.back() + "\n";
  }
  if (snap.units.empty())
    out += "(no GPU units: no GPU of the selected vendors is bound to vfio-pci)\n";
  for (const auto& u : snap.units) {
    if (!u.viable) out += "\n" + u.id + ": " + u.reason + "\n";
    if (u.viable && !u.group_node_present)
      out += "\n" + u.id + ": group node " + u.GroupPath() +
             " is missing; is vfio-pci loaded and bound to every member?\n";
  }
  if (!snap.skipped.empty()) {
    out += "\nskipped:\n";
    for (const auto& s : snap.skipped) out += "  " + s.bdf + "  " + s.reason + "\n";
  }
  if (!snap.problems.empty()) {
    out += "\nbroken sysfs entries:\n";
    for (const auto& p : snap.problems) out += "  " + p.bdf + "  " + p.error + "\n";
  }
  return out;
}

}  // namespace vfio_gpu::cli
