// Filesystem access used everywhere: reading sysfs attributes, listing directories, and the one
// crash-safe way we write files that others read (CDI specs, quarantine marks, ledger claims).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/result.h"

namespace vfio_gpu {

// Reads a whole file. Errors name the path and the errno text.
Result<std::string> ReadFile(const std::string& path);
// Reads a one-line sysfs attribute and trims whitespace.
Result<std::string> ReadAttr(const std::string& path);
// readlink(2) of a symlink; the raw target text.
Result<std::string> ReadLink(const std::string& path);
// basename of a symlink's target ("../../../bus/pci/drivers/vfio-pci" -> "vfio-pci").
Result<std::string> LinkBasename(const std::string& path);
// Names in a directory (no "." or ".."), sorted.
Result<std::vector<std::string>> ListDir(const std::string& path);
// realpath(3).
Result<std::string> RealPath(const std::string& path);

bool PathExists(const std::string& path);  // follows symlinks
bool IsDir(const std::string& path);
// mkdir -p with the given mode for new directories.
Status MakeDirs(const std::string& path, mode_t mode = 0755);
// Removes a file; a missing file is not an error.
Status RemoveFile(const std::string& path);

std::string Basename(const std::string& path);
std::string Dirname(const std::string& path);
std::string JoinPath(const std::string& a, const std::string& b);

// Atomic, crash-safe replace: write a temp file in the same directory, fsync it, set `mode`, rename
// it over `path`, fsync the directory. Readers see the old or the new content, never a mix; after a
// crash at any point the file is either old or new and no temp file is mistaken for it (temp names
// start with '.' and end in ".tmp").
Status WriteFileAtomic(const std::string& path, const std::string& content, mode_t mode = 0644);

// True when `path` already holds exactly `content` (used to skip rewrites that change nothing).
bool FileHasContent(const std::string& path, const std::string& content);

}  // namespace vfio_gpu
