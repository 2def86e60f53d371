// vfio-gpu: the operator's view of a hypervisor node's passthrough GPUs.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "common/log.h"

namespace {

constexpr const char* kUsage = R"(usage: vfio-gpu <command> [flags]

commands:
  scan [--sysfs-root DIR] [--dev-root DIR] [--config FILE] [--json]
        list the GPU units (IOMMU groups) this node can hand to tenants, and the GPUs it can't
  cdi generate [--sysfs-root DIR] [--dev-root DIR] [--config FILE] [--output-dir DIR]
        print the CDI specs for the units, or write them into DIR atomically
  doctor [--host-root DIR] [--sysfs-root DIR] [--dev-root DIR] [--config FILE]
        check the node's readiness for GPU passthrough and say what to fix (exit 1 when not ready):
        IOMMU, vfio, the GPUs' groups, and (with --host-root, default / unless only --sysfs-root/
        --dev-root are given) the containerd runtime, the shim, Kata's configuration, the CDI dir
        and the kubelet's pod resources socket
  install --host-root DIR [--dry-run] [--restart-containerd] [--bind-gpus] [--config FILE]
          [--shim-binary PATH] [--containerd-version X]
        put the shim, the containerd/Kata/CRI-O drop-ins and /etc/vfio-gpu/shim.json on the host
        whose root is DIR, report each file (created/updated/unchanged/removed); --dry-run prints
        the diff instead; --bind-gpus also binds the configured GPUs and their group mates to
        vfio-pci; containerd is restarted only with --restart-containerd
  uninstall --host-root DIR [--dry-run] [--restart-containerd]
        take back exactly what install wrote (GPU bindings stay until reboot)
  demo  run on the embedded demo host (seed 003's node: 4x A10) and show what vfio-gpu sees
  audit --qmp SOCKET [--sandbox ID] [--run-dir DIR] [--json]
        list a running VM's vfio-pci devices over QMP and check each GPU the ledger gives the
        sandbox is there exactly once (exit 1 when one is missing, duplicated or unexpected);
        with only --sandbox, the socket is Kata's /run/vc/vm/<ID>/qmp.sock

Exit codes: 0 ok, 1 problems found, 2 bad usage.
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace vfio_gpu::cli;
  // Commands print their results; decisions go to the log, quiet unless something goes wrong.
  (void)vfio_gpu::SetupLogging(vfio_gpu::LogFormat::kText);
  spdlog::set_level(spdlog::level::warn);
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? kExitUsage : kExitOk;
  }
  std::string command = argv[1];
  Args args(std::vector<std::string>(argv + 2, argv + argc));
  if (command == "scan") return Scan(args);
  if (command == "cdi") return Cdi(args);
  if (command == "doctor") return Doctor(args);
  if (command == "demo") return Demo(args);
  if (command == "install") return Install(args);
  if (command == "uninstall") return Uninstall(args);
  if (command == "audit") return Audit(args);
  std::fprintf(stderr, "vfio-gpu: unknown command \"%s\"\n\n%s", command.c_str(), kUsage);
  return kExitUsage;
}
