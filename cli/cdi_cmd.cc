#include <cstdio>

#include "cdi/spec.h"
#include "cli/commands.h"
#include "hostmodel/scanner.h"

namespace vfio_gpu::cli {

int Cdi(Args& args) {
  auto sub = args.Positional();
  if (!sub || *sub != "generate")
    return UsageError("cdi", sub ? "unknown subcommand \"" + *sub + "\"; use 'cdi generate'"
                                 : "missing subcommand; use 'cdi generate'");
  auto out_dir = args.Value("output-dir");
  auto config = LoadConfig(args);
  if (auto bad = args.Leftover()) return UsageError("cdi generate", *bad);
  if (!config) return UsageError("cdi generate", config.error().message());
  auto snap = vfio_gpu::Scan(config->roots, config->selection);
  if (!snap) {
    std::fprintf(stderr, "vfio-gpu cdi generate: %s\n", snap.error().message().c_str());
    return kExitProblems;
  }
  auto specs = BuildCdiSpecs(*snap, config->selection, config->roots);
  if (!out_dir) {
    for (const auto& s : specs) std::fputs(s.content.c_str(), stdout);
    if (specs.empty()) std::fputs("{}\n", stdout);
    if (specs.empty())
      std::fprintf(stderr, "vfio-gpu cdi generate: no GPU units found; nothing to describe\n");
    return kExitOk;
  }
  auto report = SyncCdiSpecs(*out_dir, specs);
  if (!report) {
    std::fprintf(stderr, "vfio-gpu cdi generate: %s\n", report.error().message().c_str());
    return kExitProblems;
  }
  for (const auto& p : report->written) std::printf("wrote %s\n", p.c_str());
  for (const auto& p : report->unchanged) std::printf("unchanged %s\n", p.c_str());
  for (const auto& p : report->removed)
    std::printf("removed %s (no units of its kind left)\n", p.c_str());
  return kExitOk;
}

}  // namespace vfio_gpu::cli
