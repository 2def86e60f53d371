#include "qmp/ledger_claims.h"

#include <algorithm>

#include "common/files.h"
#include "common/json.h"
#include "common/strings.h"

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
    if (StartsWith(name, ".")) continue;  // a claim being written
    std::string path = JoinPath(dir, name);
    auto claim = Json::ParseFile(path);
    if (!claim) return claim.error().Wrap("read ledger claim");
    if (!claim->is_object())
      return Error("ledger claim " + path + ": not a JSON object; remove it if it is not a claim");
    Json owner = claim->Has("sandbox") ? claim->Get("sandbox") : claim->Get("sandbox_id");
    if (!owner.is_string())
      return Error("ledger claim " + path + ": no \"sandbox\" string naming its owner");
    if (owner.AsString() != sandbox) continue;
    std::string raw = claim->Get("bdf").is_string() ? claim->Get("bdf").AsString()
                      : EndsWith(name, ".json")     ? name.substr(0, name.size() - 5)
                                                    : name;
    auto bdf = CanonicalBdf(raw);
    if (!bdf) return Error("ledger claim " + path + ": \"" + raw + "\" is not a PCI address");
    bdfs.push_back(*bdf);
  }
  std::sort(bdfs.begin(), bdfs.end());
  bdfs.erase(std::unique(bdfs.begin(), bdfs.end()), bdfs.end());
  return bdfs;
}

}  // namespace vfio_gpu::qmp
