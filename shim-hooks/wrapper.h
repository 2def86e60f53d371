// The imperative shell of containerd-shim-vfio-gpu-v2: reads the bundle, gathers host facts, runs
// the hooks, writes the spec and the ledger, and hands over to the downstream shim with the same
// argv, environment and stdin bytes. Prints nothing on success (containerd reads stdout and stderr
// together as the downstream shim's reply); prints one line and exits non-zero on refusal.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "shim-hooks/hooks.h"

namespace vfio_gpu {

struct ShimArgs {
  std::string command;  // start, delete, or anything else (passed through)
  std::string id;
  std::string ns;
  std::string bundle;  // -bundle (delete); start uses the working directory
  bool debug = false;
};

// Go's flag syntax: -flag value, -flag=value, --flag; the first positional argument is the command.
ShimArgs ParseShimArgs(const std::vector<std::string>& argv);

struct StartOutcome {
  bool refused = false;
  std::string message;  // the one line containerd shows
  ErrorKind kind = ErrorKind::kInvalid;
  std::vector<std::string> claimed;  // BDFs claimed by this start (released if the exec fails)
  std::string sandbox_id;            // whose claims they are
};

// Decision log: JSON lines in <run_dir>/shim.log (and syslog when configured). Lines are kept
// in memory and appended with one write(2) by Flush() (or the destructor, which runs before the
// exec): one open per start instead of one per decision, and the lines of concurrent shims
// never interleave.
class DecisionLog {
 public:
  DecisionLog(const ShimConfig& cfg, const ShimArgs& args);
  ~DecisionLog();
  DecisionLog(const DecisionLog&) = delete;
  DecisionLog& operator=(const DecisionLog&) = delete;
  void SetIdentity(const SpecIdentity& id);
  void Decide(const Decision& d);
  void Event(const std::string& level, const std::string& event, const std::string& message);
  void Flush();

 private:
  void Write(const std::string& line, bool warn);
  std::string pending_;
  std::vector<std::pair<bool, std::string>> syslog_pending_;
  const ShimConfig& cfg_;
  ShimArgs args_;
  SpecIdentity id_;
  bool has_id_ = false;
};

// The start pipeline on `bundle` (no exec). `read_stdin` is called only when the runtime options
// are needed (a sandbox with GPUs).
StartOutcome RunStart(const ShimConfig& cfg, const ShimArgs& args, const std::string& bundle,
                      const std::function<const std::string&()>& read_stdin, DecisionLog& log);

// Releases the claims of a deleted sandbox.
void RunDelete(const ShimConfig& cfg, const ShimArgs& args, const std::string& bundle,
               DecisionLog& log);

// main(): the whole shim.
int ShimMain(int argc, char** argv);

}  // namespace vfio_gpu
