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

// Reads the shim's ledger at <run_dir>/ledger/ (shim-hooks/ledger.h: one file per BDF, parsed with
// the shim's ClaimRecord). Dot files are the lock and claims being written. A claim that does not
// parse is skipped with a warning, as the shim treats it as stale; a claim naming no PCI address is
// an error naming the file.
class ClaimDirLedger : public ExpectedBdfSource {
 public:
  explicit ClaimDirLedger(std::string run_dir) : run_dir_(std::move(run_dir)) {}
  Result<std::vector<std::string>> ExpectedBdfs(const std::string& sandbox) const override;

 private:
  std::string run_dir_;
};

}  // namespace vfio_gpu::qmp
