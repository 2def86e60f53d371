// Validate: every referenced group exists, is viable and is a unit this shim governs.
#include "common/strings.h"
#include "hostmodel/pci_device.h"
#include "shim-hooks/hooks.h"

namespace vfio_gpu {
namespace {

std::string Members(const IommuGroup& g) {
  std::vector<std::string> parts;
  for (const auto& m : g.members) {
    std::string cls = m.error.empty() ? ClassName(m.class_code) : "unknown class";
    parts.push_back(m.bdf + " (" + cls + ", " + (m.driver.empty() ? "no driver" : m.driver) + ")");
  }
  return parts.empty() ? "no members" : Join(parts, ", ");
}

}  // namespace

HookResult Validate(const std::vector<VfioRef>& refs, const HostFacts& host,
                    const ShimConfig& cfg) {
  HookResult out;
  auto refuse = [&](const VfioRef& r, std::string message, ErrorKind kind,
                    std::map<std::string, std::string> quarantine = {}) {
    out.decisions.push_back({"validate", "refused", r.bdfs, r.group, r.unit_id, message, false});
    out.refusal = Refusal{std::move(message), kind, std::move(quarantine)};
  };
  for (const auto& r : refs) {
    std::string where = RefSourceName(r.source) + " " + r.what;
    if (!r.error.empty()) {
      refuse(r, "vfio-gpu: " + r.error, ErrorKind::kInvalid);
      return out;
    }
    auto gf = host.groups.find(r.group);
    const Unit* unit = host.snapshot.FindByGroup(r.group);
    if (gf == host.groups.end() || !gf->second.exists) {
      std::map<std::string, std::string> q;
      std::string msg = "vfio-gpu: IOMMU group " + std::to_string(r.group) + " (" + where +
                        ") does not exist on this node: the device is gone";
      if (!r.unit_id.empty()) {
        q[r.unit_id] = "IOMMU group " + std::to_string(r.group) + " vanished";
        msg += "; GPU " + r.unit_id +
               " is quarantined, check the host (dmesg, lspci) and delete the pod";
      } else {
        msg += "; fix the device list of the container";
      }
      refuse(r, msg, r.unit_id.empty() ? ErrorKind::kNotFound : ErrorKind::kPermanent, q);
      return out;
    }
    const GroupFacts& g = gf->second;
    if (!unit) {
      refuse(r,
             "vfio-gpu: IOMMU group " + std::to_string(r.group) + " (" + where +
                 ") is not a GPU unit governed by vfio-gpu (members: " + Members(g.group) +
                 "); only vfio-pci-bound GPU units may be passed to a VM: remove the device "
                 "from the pod",
             ErrorKind::kInvalid);
      return out;
    }
    if (!g.viability.viable) {
      refuse(r,
             "vfio-gpu: cannot attach GPU " + unit->id + ": " + g.viability.reason +
                 " (members: " + Members(g.group) + "); GPU " + unit->id + " is quarantined",
             ErrorKind::kPermanent, {{unit->id, g.viability.reason}});
      return out;
    }
    // Not a device fault (an operator unbound a member): the plugin already reports the unit
    // Unhealthy while it lasts and Healthy again once it is rebound, so no quarantine here.
    if (auto blocker = PassthroughBlocker(r.group, g.group.members); !blocker.empty()) {
      refuse(r,
             "vfio-gpu: cannot attach GPU " + unit->id + ": " + blocker +
                 " (members: " + Members(g.group) + ")",
             ErrorKind::kInvalid);
      return out;
    }
    if (!unit->present) {
      refuse(r,
             "vfio-gpu: cannot attach GPU " + unit->id +
                 ": it does not answer on the PCI bus "
                 "(config space reads 0xffff); GPU " +
                 unit->id +
                 " is quarantined, reset or "
                 "replace it",
             ErrorKind::kPermanent, {{unit->id, "GPU does not answer on the PCI bus"}});
      return out;
    }
    if (!g.node_present) {
      refuse(r,
             "vfio-gpu: cannot attach GPU " + unit->id + ": " + cfg.roots.VfioGroupNode(r.group) +
                 " does not exist (is vfio-pci bound and the "
                 "vfio module loaded?); GPU " +
                 unit->id + " is quarantined",
             ErrorKind::kPermanent,
             {{unit->id, "group node /dev/vfio/" + std::to_string(r.group) + " missing"}});
      return out;
    }
    out.decisions.push_back(
        {"validate", "kept", r.bdfs, r.group, unit->id, "viable, governed", false});
  }
  return out;
}

}  // namespace vfio_gpu
