#include <cstdio>

#include "cli/commands.h"
#include "cli/render.h"
#include "hostmodel/scanner.h"
#include "hostmodel/snapshot_json.h"

namespace vfio_gpu::cli {

int Scan(Args& args) {
  bool json = args.Flag("json");
  auto config = LoadConfig(args);
  if (auto bad = args.Leftover()) return UsageError("scan", *bad);
  if (!config) return UsageError("scan", config.error().message());
  auto snap = vfio_gpu::Scan(config->roots, config->selection);
  if (!snap) {
    std::fprintf(stderr, "vfio-gpu scan: %s\n", snap.error().message().c_str());
    return kExitProblems;
  }
  std::string out = json ? SnapshotToJson(*snap).Dump(true) + "\n" : RenderTable(*snap);
  std::fputs(out.c_str(), stdout);
  return kExitOk;
}

}  // namespace vfio_gpu::cli
