// What the node's ledger says a sandbox should have. The ledger is the shim's (issue 4): one claim
// file per BDF under <run_dir>/ledger/, JSON naming the sandbox that holds it. The audit only reads
// it, through this small interface, so the format lives in one place on the reading side.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace vfio_gpu::qmp {

class ExpectedBdfSource {
 public:
  virtual ~ExpectedBdfSource() = default;
  // The BDFs claimed for `sandbox`, canonical and sorted.
  virtual Result<std::vector<std::string>> ExpectedBdfs(const std::string& sandbox) const = 0;
};

// Reads <run_dir>/ledger/*: each claim is a JSON object with the BDF ("bdf", else the file name
// without ".json") and the owning sandbox ("sandbox" or "sandbox_id"). Names starting with '.' are
// WriteFileAtomic's temp files and are skipped. A claim that can't be read is an error naming it.
class ClaimDirLedger : public ExpectedBdfSource {
 public:
  explicit ClaimDirLedger(std::string run_dir) : run_dir_(std::move(run_dir)) {}
  Result<std::vector<std::string>> ExpectedBdfs(const std::string& sandbox) const override;

 private:
  std::string run_dir_;
};

}  // namespace vfio_gpu::qmp
