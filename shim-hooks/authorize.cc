// Authorize: in Kubernetes a pod reaches only the GPUs the kubelet allocated to it.
#include "common/strings.h"
#include "shim-hooks/hooks.h"

namespace vfio_gpu {

HookResult Authorize(const std::vector<VfioRef>& refs, const SpecIdentity& id,
                     const std::optional<PodAllocation>& allocation, const ShimConfig& cfg) {
  HookResult out;
  if (cfg.authorize == AuthorizeMode::kOff || refs.empty()) return out;
  bool warn = cfg.authorize == AuthorizeMode::kWarn;
  if (!id.InKubernetes()) {
    std::string msg = "vfio-gpu: a " + SpecRoleName(id.role) +
                      " spec without a Kubernetes pod "
                      "(no CRI pod name/namespace annotations) asks for GPUs, and authorize is " +
                      AuthorizeModeName(cfg.authorize) +
                      ": set \"authorize\": \"off\" in the shim "
                      "config on hosts that run GPUs without a kubelet";
    out.decisions.push_back({"authorize", warn ? "warned" : "refused", {}, -1, "", msg, true});
    if (!warn) out.refusal = Refusal{msg, ErrorKind::kInvalid, {}};
    return out;
  }
  for (const auto& r : refs) {
    bool allowed = allocation && allocation->found && !r.unit_id.empty() &&
                   allocation->units.count(r.unit_id) > 0;
    if (allowed) {
      out.decisions.push_back(
          {"authorize", "kept", r.bdfs, r.group, r.unit_id, "allocated to pod " + id.Pod(), false});
      continue;
    }
    std::string allocated =
        allocation && allocation->found && !allocation->units.empty()
            ? std::string("{") +
                  Join(std::vector<std::string>(allocation->units.begin(), allocation->units.end()),
                       ", ") +
                  "}"
            : "none";
    std::string msg = "vfio-gpu: GPU " + (r.unit_id.empty() ? r.what : r.unit_id) + " (" +
                      RefSourceName(r.source) + " " + r.what + ") is not allocated to pod " +
                      id.Pod() + " (allocated: " + allocated +
                      "); request it through the resource " + Join(cfg.resources, " or ") +
                      " instead of naming devices";
    out.decisions.push_back(
        {"authorize", warn ? "warned" : "refused", r.bdfs, r.group, r.unit_id, msg, true});
    if (!warn) {
      out.refusal = Refusal{msg, ErrorKind::kInvalid, {}};
      return out;
    }
  }
  return out;
}

std::optional<HookResult> AuthorizedByClaims(const std::vector<VfioRef>& refs,
                                             const SpecIdentity& id, const LedgerView& ledger) {
  if (id.role != SpecRole::kContainer || !id.InKubernetes() || refs.empty()) return std::nullopt;
  HookResult out;
  for (const auto& r : refs) {
    if (r.unit_id.empty() || r.bdfs.empty()) return std::nullopt;
    for (const auto& bdf : r.bdfs) {
      auto c = ledger.find(bdf);
      if (c == ledger.end() || c->second.stale || c->second.sandbox_id != id.sandbox_id ||
          c->second.authorized_pod != id.Pod())
        return std::nullopt;
    }
    out.decisions.push_back({"authorize", "kept", r.bdfs, r.group, r.unit_id,
                             "claimed by this pod's sandbox " + id.sandbox_id +
                                 " after the kubelet allocated it to pod " + id.Pod(),
                             false});
  }
  return out;
}

}  // namespace vfio_gpu
