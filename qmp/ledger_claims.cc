#include "qmp/ledger_claims.h"

#include <algorithm>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "shim-hooks/ledger.h"

namespace vfio_gpu::qmp {

Result<std::vector<std::string>> ClaimDirLedger::ExpectedBdfs(const std::string& sandbox) const {
  std::string dir = JoinPath(run_dir_, "ledger");
  if (!IsDir(dir))
    return Error(
        "no ledger at " + dir +
            ": pass --run-dir (the shim's and plugin's run_dir), or omit --sandbox to only "
            "check the VM for duplicates",
        ErrorKind::kNotFound);
  auto names = ListDir(dir);
  if (!names) return names.error().Wrap("read the ledger");
  std::vector<std::string> bdfs;
  for (const std::string& name : *names) {
    if (StartsWith(name, ".")) continue;  // the lock, and claims being written
    std::string path = JoinPath(dir, name);
    auto text = ReadFile(path);
    if (!text) continue;  // released meanwhile
    // The shim's own parser: one definition of a claim.
    auto claim = ClaimRecord::FromJson(*text, path);
    if (!claim) {
      // The shim treats an unreadable claim as stale (its owner died mid-write) and reclaims it.
      spdlog::warn("skipping ledger claim the shim would reclaim: {}", claim.error().message());
      continue;
    }
    if (claim->sandbox_id != sandbox) continue;
    auto bdf = CanonicalBdf(claim->bdf);
    if (!bdf)
      return Error("ledger claim " + path + ": \"" + claim->bdf +
                   "\" is not a PCI address; remove the file if no sandbox holds it");
    bdfs.push_back(*bdf);
  }
  std::sort(bdfs.begin(), bdfs.end());
  bdfs.erase(std::unique(bdfs.begin(), bdfs.end()), bdfs.end());
  return bdfs;
}

}  // namespace vfio_gpu::qmp
