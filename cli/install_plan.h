// What `vfio-gpu install` / `uninstall` will do to a host, as data: every file with its content
// before and after. Built first (nothing is written while planning), then printed as a report or
// a diff (--dry-run), then applied. A second run plans "unchanged" everywhere.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace vfio_gpu::cli {

enum class Restart { kNone, kContainerd, kCrio };

struct FileChange {
  std::string host_path;              // as the host sees it: /etc/containerd/config.toml
  std::string path;                   // where we write it: <host root>/etc/containerd/config.toml
  std::optional<std::string> before;  // nullopt: the file does not exist
  std::optional<std::string> after;   // nullopt: the file is (to be) removed
  mode_t mode = 0644;                 // for new files; existing files keep theirs unless forced
  bool force_mode = false;            // the shim binary is always 0755
  bool binary = false;                // the diff says "binary files differ"
  Restart restart = Restart::kNone;   // what must be restarted to read a change
  std::string note;                   // printed after the status ("kept: edited by the operator")

  bool Changes() const { return before != after; }
  // created | updated | unchanged | removed | absent
  std::string Status() const;
};

struct Plan {
  std::vector<FileChange> files;
  // Host paths of our directories, deepest first: removed when nothing else is left in them.
  std::vector<std::string> remove_dirs;
  std::vector<std::string> warnings;
};

// Reads a file that may be absent (nullopt); other read errors fail.
Result<std::optional<std::string>> ReadIfExists(const std::string& path);

// A unified diff (3 lines of context) between two versions of a file; "" when equal.
std::string UnifiedDiff(const std::string& path, const std::optional<std::string>& before,
                        const std::optional<std::string>& after, bool binary);

// Writes (atomically, parent directories 0755) or removes one file.
Status ApplyChange(const FileChange& change);

// Would `dir` be empty once the plan's removals are done? `names` gets what would remain.
bool DirEmptyAfter(const std::string& dir, const Plan& plan, const std::string& root,
                   std::vector<std::string>* remaining);

}  // namespace vfio_gpu::cli
