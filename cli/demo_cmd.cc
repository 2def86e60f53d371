#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "cdi/spec.h"
#include "cli/commands.h"
#include "cli/render.h"
#include "hostmodel/fake_host.h"
#include "hostmodel/scanner.h"

namespace vfio_gpu::cli {

int Demo(Args& args) {
  auto keep = args.Value("keep-dir");  // leave the demo tree in this directory for inspection
  if (auto bad = args.Leftover()) return UsageError("demo", *bad);
  std::string root;
  if (keep) {
    root = *keep;
  } else {
    char tmpl[] = "/tmp/vfio-gpu-demo.XXXXXX";
    if (!mkdtemp(tmpl)) {
      std::perror("vfio-gpu demo: cannot create a temp dir");
      return kExitProblems;
    }
    root = tmpl;
  }
  FakeHost host(root);
  if (auto s = BuildSeedA10Host(host); !s) {
    std::fprintf(stderr, "vfio-gpu demo: %s\n", s.error().message().c_str());
    return kExitProblems;
  }
  NodeConfig config;
  config.roots = host.roots();
  config.cdi_dir = root + "/run/cdi";

  std::printf("== vfio-gpu demo: seed 003's node (4x NVIDIA A10, 10de:2236), no GPU needed\n");
  std::printf("   sysfs root %s, dev root %s\n\n", config.roots.sysfs.c_str(),
              config.roots.dev.c_str());
  auto snap = Scan(config.roots, config.selection);
  if (!snap) {
    std::fprintf(stderr, "vfio-gpu demo: %s\n", snap.error().message().c_str());
    return kExitProblems;
  }
  std::printf("== vfio-gpu scan\n%s\n", RenderTable(*snap).c_str());
  auto specs = BuildCdiSpecs(*snap, config.selection, HostRoots{});
  std::printf("== vfio-gpu cdi generate (as written to /var/run/cdi on a real node)\n");
  for (const auto& s : specs) std::printf("# %s\n%s", s.file_name.c_str(), s.content.c_str());
  int rc = kExitOk;
  if (!keep) {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  return rc;
}

}  // namespace vfio_gpu::cli
