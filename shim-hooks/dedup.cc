// Deduplicate: exactly one entry per GPU within a spec, and one sandbox per GPU across the node.
// Kata (and Cloud Hypervisor) attach every entry, so the same GPU reached by two paths (group node
// and iommufd cdev, a device and a CDI annotation, two aliases) would be attached twice.
#include <algorithm>
#include <map>
#include <set>

#include "common/strings.h"
#include "shim-hooks/hooks.h"

namespace vfio_gpu {
namespace {

bool IsDevice(const VfioRef& r) {
  return r.device_index.has_value();
}

// Which entry stays when several name one GPU: the group node Kata expects, else an alias, else a
// cdev (both rewritten to the group node).
int Rank(RefSource s) {
  return s == RefSource::kGroupNode ? 0 : s == RefSource::kAlias ? 1 : 2;
}

}  // namespace

DedupResult Deduplicate(OciSpec& spec, std::vector<VfioRef>& refs, const HostFacts& host,
                        const LedgerView& ledger, const ShimConfig& cfg) {
  DedupResult out;
  auto& decisions = out.result.decisions;
  std::vector<Json> entries = spec.DeviceEntries();

  // Within the spec: choose the entry that stays for each unit: the first group node, else the
  // first alias, else the first cdev (the last two rewritten to the group node, the form Kata
  // expects).
  std::map<std::string, size_t> chosen;  // unit -> ref index
  for (size_t i = 0; i < refs.size(); ++i) {
    const VfioRef& r = refs[i];
    if (!IsDevice(r) || r.unit_id.empty()) continue;
    auto it = chosen.find(r.unit_id);
    if (it == chosen.end()) {
      chosen[r.unit_id] = i;
    } else if (Rank(r.source) < Rank(refs[it->second].source)) {
      it->second = i;
    }
  }
  std::set<size_t> drop_entries;
  std::map<size_t, Json> replace_entries;
  std::map<std::string, std::vector<std::string>> drop_names;  // annotation key -> names
  std::set<std::string> named_by_annotation;
  for (size_t i = 0; i < refs.size(); ++i) {
    VfioRef& r = refs[i];
    if (r.unit_id.empty()) continue;
    auto it = chosen.find(r.unit_id);
    if (IsDevice(r)) {
      if (it->second != i) {
        drop_entries.insert(*r.device_index);
        decisions.push_back({"dedup", "removed", r.bdfs, r.group, r.unit_id,
                             RefSourceName(r.source) + " " + r.what + " names the same GPU as " +
                                 refs[it->second].what,
                             false});
        continue;
      }
      if (r.source != RefSource::kGroupNode) {
        // The group node's numbers on the host; an alias's own when unknown (Collect checked
        // they are that node's).
        auto gf = host.groups.find(r.group);
        const Json& e = entries[*r.device_index];
        DevNum n = gf != host.groups.end() && gf->second.node ? *gf->second.node
                   : r.source == RefSource::kAlias
                       ? DevNum{e.Get("major").AsInt(), e.Get("minor").AsInt()}
                       : DevNum{};
        std::string path = ContainerGroupPath(r.group);
        replace_entries[*r.device_index] = CharDeviceEntry(path, n.major, n.minor);
        decisions.push_back(
            {"dedup", "replaced", r.bdfs, r.group, r.unit_id,
             RefSourceName(r.source) + " " + r.what + " collapsed to the group node " + path,
             false});
        r.what = path;
        r.source = RefSource::kGroupNode;
      }
      continue;
    }
    // A CDI annotation: redundant when a device entry or an earlier name covers the unit.
    bool covered = it != chosen.end() || named_by_annotation.count(r.unit_id) > 0;
    if (covered) {
      drop_names[r.annotation_key].push_back(r.cdi_name);
      decisions.push_back({"dedup", "removed", r.bdfs, r.group, r.unit_id,
                           "CDI annotation " + r.what + " names a GPU the spec already holds",
                           false});
      r.unit_id.clear();  // no longer a reference of this spec
    } else {
      named_by_annotation.insert(r.unit_id);
    }
  }

  // Across the node: the ledger.
  const std::string& me = spec.identity.sandbox_id;
  std::set<std::string> seen_units;
  std::map<size_t, DevNum> renumber;  // entry index -> the claim's major:minor
  for (const auto& r : refs) {
    // A dropped entry must not stand for its unit here: the entry that stays is claimed.
    if (r.unit_id.empty() || (IsDevice(r) && drop_entries.count(*r.device_index))) continue;
    if (!seen_units.insert(r.unit_id).second) continue;
    for (const auto& bdf : r.bdfs) {
      auto c = ledger.find(bdf);
      if (c != ledger.end() && c->second.sandbox_id == me) {
        if (IsDevice(r) && c->second.node) renumber[*r.device_index] = *c->second.node;
        decisions.push_back({"dedup",
                             "kept",
                             {bdf},
                             r.group,
                             r.unit_id,
                             "already attached to this sandbox " + me,
                             false});
        continue;
      }
      if (c != ledger.end() && !c->second.stale) {
        std::string msg = "vfio-gpu: GPU " + r.unit_id + " (" + bdf + ", IOMMU group " +
                          std::to_string(r.group) + ") is already attached to sandbox " +
                          c->second.sandbox_id + " (pid " + std::to_string(c->second.pid) +
                          ", bundle " + c->second.bundle +
                          "): one GPU, one VM; stop that "
                          "sandbox first, or check the device plugin's allocations";
        decisions.push_back({"dedup", "refused", {bdf}, r.group, r.unit_id, msg, false});
        out.result.refusal = Refusal{msg, ErrorKind::kInvalid, {}};
        return out;
      }
      auto gf = host.groups.find(r.group);
      PlannedClaim pc{bdf, r.unit_id, r.group,
                      gf == host.groups.end() ? std::nullopt : gf->second.node, c != ledger.end()};
      decisions.push_back(
          {"dedup",
           pc.reclaim ? "reclaimed" : "claimed",
           {bdf},
           r.group,
           r.unit_id,
           pc.reclaim ? "stale claim of gone sandbox " + c->second.sandbox_id : "first claim",
           false});
      out.claims.push_back(std::move(pc));
    }
  }

  bool changed = !drop_entries.empty() || !replace_entries.empty();
  for (const auto& [idx, num] : renumber) {
    Json& e =
        replace_entries.count(idx) ? replace_entries[idx] : (replace_entries[idx] = entries[idx]);
    if (e.Get("major").AsInt() != num.major || e.Get("minor").AsInt() != num.minor) {
      // A copy, so the original object is not edited behind the spec's back.
      auto copy = Json::Parse(e.Dump(), "device");
      if (copy) {
        copy->Set("major", Json::Int(num.major));
        copy->Set("minor", Json::Int(num.minor));
        e = *copy;
        changed = true;
      }
    }
  }
  if (changed) {
    std::vector<Json> kept;
    std::map<size_t, size_t> new_index;
    for (size_t i = 0; i < entries.size(); ++i) {
      if (drop_entries.count(i)) continue;
      new_index[i] = kept.size();
      kept.push_back(replace_entries.count(i) ? replace_entries[i] : entries[i]);
    }
    spec.SetDevices(kept);
    for (auto& r : refs) {
      if (!r.device_index) continue;
      auto it = new_index.find(*r.device_index);
      if (it == new_index.end())
        r.device_index.reset();
      else
        r.device_index = it->second;
    }
  }
  for (const auto& [key, names] : drop_names) {
    (void)names;
    // Names of other kinds stay as they were; ours are the references still standing.
    std::vector<std::string> keep;
    for (const auto& raw : Split(spec.annotations[key], ',')) {
      std::string n(Trim(raw));
      auto eq = n.find('=');
      if (!n.empty() && (eq == std::string::npos || !cfg.Governs(n.substr(0, eq))))
        keep.push_back(n);
    }
    for (const auto& r : refs)
      if (r.annotation_key == key && !r.unit_id.empty()) keep.push_back(r.cdi_name);
    if (keep.empty())
      spec.RemoveAnnotation(key);
    else
      spec.SetAnnotation(key, Join(keep, ","));
  }
  return out;
}

}  // namespace vfio_gpu
