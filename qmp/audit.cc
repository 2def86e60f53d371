#include "qmp/audit.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "common/strings.h"

namespace vfio_gpu::qmp {

std::string_view StatusName(BdfStatus status) {
  switch (status) {
    case BdfStatus::kPresent:
      return "present";
    case BdfStatus::kMissing:
      return "missing";
    case BdfStatus::kDuplicated:
      return "duplicated";
    case BdfStatus::kUnexpected:
      return "unexpected";
  }
  return "unknown";
}

AuditReport Compare(const std::vector<VmDevice>& vm,
                    const std::optional<std::vector<std::string>>& expected,
                    std::optional<std::string> sandbox) {
  // BDF -> ids holding it; the ledger's BDFs and the VM's are compared in canonical form.
  std::map<std::string, std::vector<std::string>> held;
  for (const VmDevice& d : vm) {
    std::string bdf = CanonicalBdf(d.host).value_or(d.host);
    held[bdf].push_back(d.id.empty() ? d.qom_path : d.id);
  }
  std::map<std::string, bool> wanted;
  if (expected)
    for (const std::string& e : *expected) wanted[CanonicalBdf(e).value_or(e)] = true;

  AuditReport report;
  report.sandbox = std::move(sandbox);
  std::map<std::string, AuditEntry> entries;
  for (auto& [bdf, ids] : held) {
    AuditEntry e{bdf, ids, BdfStatus::kPresent};
    std::sort(e.ids.begin(), e.ids.end());
    if (ids.size() > 1)
      e.status = BdfStatus::kDuplicated;
    else if (expected && !wanted.count(bdf))
      e.status = BdfStatus::kUnexpected;
    entries[bdf] = std::move(e);
  }
  for (auto& [bdf, unused] : wanted) {
    (void)unused;
    if (!held.count(bdf)) entries[bdf] = AuditEntry{bdf, {}, BdfStatus::kMissing};
  }
  for (auto& [bdf, e] : entries) {
    (void)bdf;
    if (e.status != BdfStatus::kPresent) report.ok = false;
    report.devices.push_back(std::move(e));
  }
  return report;
}

Json ReportToJson(const AuditReport& report) {
  Json devices = Json::Array();
  for (const AuditEntry& e : report.devices) {
    Json ids = Json::Array();
    for (const std::string& id : e.ids) ids.Append(Json::String(id));
    devices.Append(Json::Object()
                       .Set("bdf", Json::String(e.bdf))
                       .Set("ids", std::move(ids))
                       .Set("status", Json::String(StatusName(e.status))));
  }
  return Json::Object()
      .Set("sandbox", report.sandbox ? Json::String(*report.sandbox) : Json::Null())
      .Set("devices", std::move(devices))
      .Set("ok", Json::Bool(report.ok));
}

std::string RenderReport(const AuditReport& report) {
  std::string out;
  size_t width = 12;  // "0000:00:00.0"
  for (const AuditEntry& e : report.devices) width = std::max(width, e.bdf.size());
  auto row = [&](const std::string& bdf, std::string_view status, const std::string& ids) {
    char line[512];
    std::snprintf(line, sizeof line, "%-*s  %-10.*s  ", static_cast<int>(width), bdf.c_str(),
                  static_cast<int>(status.size()), status.data());
    out += line;
    out += ids + "\n";
  };
  std::map<BdfStatus, int> counts;
  if (report.devices.empty()) {
    out += "no vfio-pci devices in the VM\n";
  } else {
    row("BDF", "STATUS", "QEMU DEVICE IDS");
    for (const AuditEntry& e : report.devices) {
      ++counts[e.status];
      row(e.bdf, StatusName(e.status), e.ids.empty() ? "-" : Join(e.ids, ", "));
    }
  }
  std::vector<std::string> parts;
  for (BdfStatus s :
       {BdfStatus::kPresent, BdfStatus::kMissing, BdfStatus::kDuplicated, BdfStatus::kUnexpected})
    if (counts[s]) parts.push_back(std::to_string(counts[s]) + " " + std::string(StatusName(s)));
  std::string who = report.sandbox ? "sandbox " + *report.sandbox : "VM";
  std::string what = report.sandbox ? "" : " (no sandbox given: only duplicates are checked)";
  out += who + ": " + (parts.empty() ? "no devices" : Join(parts, ", ")) + what + ": " +
         (report.ok ? "OK" : "NOT OK") + "\n";
  return out;
}

}  // namespace vfio_gpu::qmp
