// The audit's verdict, a pure function of what the VM has (read over QMP) and what the ledger says
// the sandbox should have: each BDF is present (exactly once), missing, duplicated or unexpected.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.h"
#include "qmp/vfio_devices.h"

namespace vfio_gpu::qmp {

enum class BdfStatus { kPresent, kMissing, kDuplicated, kUnexpected };

// "present", "missing", "duplicated", "unexpected".
std::string_view StatusName(BdfStatus status);

struct AuditEntry {
  std::string bdf;
  std::vector<std::string> ids;  // the VM's device ids holding this BDF (empty when missing)
  BdfStatus status = BdfStatus::kPresent;
};

struct AuditReport {
  std::optional<std::string> sandbox;
  std::vector<AuditEntry> devices;  // sorted by BDF
  bool ok = true;  // every expected BDF present exactly once, nothing unexpected or duplicated
};

// Without `expected` (no sandbox/ledger) only duplicates are problems: every BDF the VM has is
// present or duplicated. A BDF held twice is duplicated whether expected or not.
AuditReport Compare(const std::vector<VmDevice>& vm,
                    const std::optional<std::vector<std::string>>& expected,
                    std::optional<std::string> sandbox = std::nullopt);

// {"sandbox": ..., "devices": [{"bdf", "ids", "status"}], "ok": bool}
Json ReportToJson(const AuditReport& report);
// A table for people, ending in a one-line summary.
std::string RenderReport(const AuditReport& report);

}  // namespace vfio_gpu::qmp
