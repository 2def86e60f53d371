// The node's ledger of which GPU (BDF) belongs to which sandbox: one claim file per BDF under
// <run_dir>/ledger, so two VMs never get the same GPU even when their starts race.
//
// Crash safety: a claim is written to a temp file, fsynced, then link(2)ed to its final name —
// link fails with EEXIST like O_EXCL, and the final name only ever appears with complete content.
// Every change happens under an flock on <ledger>/.lock (released by the kernel if we die), so a
// temp file seen by a lock holder is an orphan of a killed claimant and is removed. A claim is
// stale when its sandbox is gone: its bundle directory no longer exists and its process is dead
// (containerd removes the bundle of a failed start and never calls delete).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "shim-hooks/hooks.h"

namespace vfio_gpu {

struct ClaimRecord {
  std::string bdf;
  std::string sandbox_id;
  // "ns/name" of the pod the kubelet allocated this GPU to, when that was checked (authorize
  // enforce); empty otherwise. Lets later containers of the pod skip asking the kubelet again.
  std::string authorized_pod;
  std::string unit;
  int group = -1;
  std::optional<DevNum> node;
  std::string bundle;     // the sandbox's bundle directory
  int64_t pid = 0;        // the claiming shim process
  int64_t pid_start = 0;  // its start time (/proc/<pid>/stat field 22), against pid reuse
  int64_t time = 0;       // unix seconds

  std::string ToJson() const;
  static Result<ClaimRecord> FromJson(std::string_view text, const std::string& what);
};

// True while `pid` is the same process that started at `start_ticks` (0: don't compare).
bool ProcessAlive(int64_t pid, int64_t start_ticks);
int64_t ProcessStartTicks(int64_t pid);

class Ledger {
 public:
  explicit Ledger(std::string dir);

  const std::string& dir() const { return dir_; }
  std::string ClaimPath(const std::string& bdf) const;

  // Every claim, with `stale` judged by the sandbox check. Unreadable claims count as stale.
  Result<LedgerView> Load() const;
  // Claims every BDF for its sandbox, all or nothing, re-checking under the lock: a BDF held by
  // another live sandbox fails the whole call (kInvalid), lock contention beyond the timeout is
  // kTransient. BDFs already held by the same sandbox are left as they are.
  Status ClaimAll(const std::vector<ClaimRecord>& claims);
  // Removes every claim of `sandbox_id` (only those of `only`, when given); returns the BDFs
  // released.
  Result<std::vector<std::string>> Release(const std::string& sandbox_id,
                                           const std::vector<std::string>* only = nullptr);

  // Test seams: called at named points of a claim ("temp-half-written", "temp-written",
  // "linked"); and the sandbox-gone check.
  std::function<void(std::string_view point)> crash_point;
  std::function<bool(const ClaimRecord&)> sandbox_gone;
  int lock_timeout_ms = 3000;

 private:
  class Lock;
  Result<int> AcquireLock() const;
  void RemoveOrphans() const;
  bool Stale(const ClaimRecord& c) const;
  Status WriteClaim(const ClaimRecord& c) const;

  std::string dir_;
};

}  // namespace vfio_gpu
