// Runs a command line the way an operator types it and captures what they would see: stdout,
// stderr and the exit code. Header-only like temp_dir.h, so any test target can use it without a
// library of its own.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "common/files.h"

namespace vfio_gpu::testing {

struct Outcome {
  int code = -1;    // the exit status; -1 when the command could not run or died by a signal
  std::string out;  // stdout (and stderr too when no stderr file was given)
  std::string err;  // stderr
};

// Runs `cmd` with /bin/sh. stderr goes to `stderr_file` and is read back into Outcome::err; with
// an empty `stderr_file` it is merged into Outcome::out (2>&1), in the order it was written.
inline Outcome RunCommand(const std::string& cmd, const std::string& stderr_file) {
  std::string line = cmd + (stderr_file.empty() ? " 2>&1" : " 2>" + stderr_file);
  Outcome r;
  FILE* p = ::popen(line.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (!stderr_file.empty()) {
    auto err = ReadFile(stderr_file);
    r.err = err.ok() ? *err : "";
  }
  return r;
}

}  // namespace vfio_gpu::testing
