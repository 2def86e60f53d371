// The host files of runtimeclasses/ as they were at build time (cli/install_embed.cmake generates
// the definitions), so `vfio-gpu install` never reads the repository at run time. The list is in
// runtimeclasses/README.md ("Files and where they go on the host").
#pragma once

#include <string_view>
#include <vector>

namespace vfio_gpu::cli {

struct EmbeddedFile {
  std::string_view name;  // path below runtimeclasses/, e.g. "containerd/v2/50-vfio-gpu.toml"
  std::string_view content;
};

const std::vector<EmbeddedFile>& EmbeddedFiles();

// The content of one embedded file; empty when the build did not embed it.
inline std::string_view Embedded(std::string_view name) {
  for (const auto& f : EmbeddedFiles())
    if (f.name == name) return f.content;
  return {};
}

}  // namespace vfio_gpu::cli
