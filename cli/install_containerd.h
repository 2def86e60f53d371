// containerd's configuration, edited so that `vfio-gpu uninstall` can take back exactly what
// `install` added. Everything we add to an operator's config.toml sits between marker comments:
//
//   # >>> vfio-gpu: added by `vfio-gpu install`, removed by `vfio-gpu uninstall`
//   #~ enable_cdi = false          <- an operator's line we replaced, restored on uninstall
//   enable_cdi = true
//   # <<< vfio-gpu
//
// Config version 2 (containerd 1.x): the tables of containerd/v2/50-vfio-gpu.toml are merged into
// config.toml itself, because 1.x replaces a whole plugin section from an imported file. Keys of
// tables the operator already defines ([plugins."io.containerd.grpc.v1.cri"]: enable_cdi,
// cdi_spec_dirs) are set in place; our own tables are appended in one block at the end.
// Config version 3 (containerd 2.x): containerd/v3/50-vfio-gpu.toml becomes
// /etc/containerd/conf.d/50-vfio-gpu.toml, and config.toml's `imports` is made to cover it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/install_plan.h"
#include "common/result.h"

namespace vfio_gpu::cli {

struct ContainerdVersion {
  int major = 0;
  int minor = 0;
};
// "1.7.27", "v2.1.0", "2.0" -> {major, minor}; nullopt on anything else.
std::optional<ContainerdVersion> ParseContainerdVersion(std::string_view text);

// Removes our marked blocks and restores the lines they replaced. nullopt: the file did not exist
// before install created it. Fails on a block that is not closed.
Result<std::optional<std::string>> StripMarkedBlocks(const std::optional<std::string>& text,
                                                     const std::string& source);

// The version-2 merge: `pristine` is config.toml without our blocks (nullopt: no file).
Result<std::string> MergeV2(const std::optional<std::string>& pristine, std::string_view dropin,
                            const std::string& source);
// The version-3 edit: config.toml whose imports cover `import_path`; nullopt when no config.toml
// is needed (none exists and containerd >= 2.2, whose built-in default imports conf.d/*.toml; an
// existing config.toml replaces that default, so it gets the import on every version).
Result<std::optional<std::string>> EnsureImport(const std::optional<std::string>& pristine,
                                                const std::string& import_path,
                                                std::optional<ContainerdVersion> version,
                                                const std::string& source);

// The containerd part of an install plan under `root`: config.toml, and the conf.d drop-in for
// version 3. A malformed config.toml fails (file:line), and nothing is planned for it.
Result<std::vector<FileChange>> PlanContainerdInstall(const std::string& root,
                                                      std::optional<ContainerdVersion> version);
Result<std::vector<FileChange>> PlanContainerdUninstall(const std::string& root);

}  // namespace vfio_gpu::cli
