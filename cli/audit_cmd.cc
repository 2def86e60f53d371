// `vfio-gpu audit`: proves, for a running VM, that each GPU reached it exactly once. Reads the
// ledger first (no socket held), then holds the VM's QMP socket for one listing only: Kata connects
// to it per operation and QEMU serves one client at a time.
#include <cctype>
#include <chrono>
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "common/strings.h"
#include "qmp/audit.h"
#include "qmp/ledger_claims.h"
#include "qmp/vfio_devices.h"

namespace vfio_gpu::cli {
namespace {

constexpr const char* kDefaultRunDir = "/run/vfio-gpu";
constexpr const char* kKataVmDir = "/run/vc/vm";
constexpr int kDefaultTimeoutSeconds = 5;

// Sandbox IDs become a path component of the default socket: keep them to a safe alphabet.
bool ValidSandboxId(const std::string& id) {
  if (id.empty() || id.size() > 128 || id[0] == '.') return false;
  for (char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
      return false;
  return true;
}

}  // namespace

int Audit(Args& args) {
  bool json = args.Flag("json");
  auto socket = args.Value("qmp");
  auto sandbox = args.Value("sandbox");
  std::string run_dir = args.Value("run-dir").value_or(kDefaultRunDir);
  auto timeout_arg = args.Value("timeout");
  // For devices other than vfio-pci (the tests use emulated NICs that QEMU can hot-plug anywhere).
  auto device_type = args.Value("device-type");
  auto host_property = args.Value("host-property");
  if (auto bad = args.Leftover()) return UsageError("audit", *bad);
  if (!socket && !sandbox)
    return UsageError("audit",
                      "pass --qmp SOCKET (the VM's QMP socket) or --sandbox ID (a Kata "
                      "sandbox: its socket is " +
                          std::string(kKataVmDir) + "/<ID>/qmp.sock)");
  if (sandbox && !ValidSandboxId(*sandbox))
    return UsageError("audit", "--sandbox \"" + *sandbox +
                                   "\" is not a sandbox ID (letters, digits, '-', '_', '.'; "
                                   "up to 128 characters)");
  int timeout_s = kDefaultTimeoutSeconds;
  if (timeout_arg) {
    auto t = ParseInt(*timeout_arg);
    if (!t || *t < 1 || *t > 600)
      return UsageError("audit", "--timeout \"" + *timeout_arg + "\" must be 1 to 600 seconds");
    timeout_s = static_cast<int>(*t);
  }
  std::string path = socket ? *socket : std::string(kKataVmDir) + "/" + *sandbox + "/qmp.sock";

  std::optional<std::vector<std::string>> expected;
  if (sandbox) {
    auto bdfs = qmp::ClaimDirLedger(run_dir).ExpectedBdfs(*sandbox);
    if (!bdfs) {
      std::fprintf(stderr, "vfio-gpu audit: %s\n", bdfs.error().message().c_str());
      return kExitProblems;
    }
    expected = std::move(*bdfs);
    if (expected->empty())
      std::fprintf(stderr,
                   "vfio-gpu audit: the ledger (%s/ledger) holds no GPU for sandbox %s: its VM "
                   "must have no vfio-pci device; if it should have GPUs, check the sandbox ID "
                   "and --run-dir\n",
                   run_dir.c_str(), sandbox->c_str());
  }

  qmp::DeviceFilter filter;
  if (device_type) filter.types = {*device_type};
  if (host_property) filter.host_property = *host_property;
  auto devices = qmp::ListVfioDevicesAt(path, std::chrono::seconds(timeout_s), filter);
  if (!devices) {
    std::fprintf(stderr, "vfio-gpu audit: %s\n", devices.error().message().c_str());
    return kExitProblems;
  }

  qmp::AuditReport report = qmp::Compare(*devices, expected, sandbox);
  std::string out = json ? qmp::ReportToJson(report).Dump(true) + "\n" : qmp::RenderReport(report);
  std::fputs(out.c_str(), stdout);
  return report.ok ? kExitOk : kExitProblems;
}

}  // namespace vfio_gpu::cli
