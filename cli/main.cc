// vfio-gpu: the operator's view of a hypervisor node's passthrough GPUs.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "common/log.h"

namespace {

using vfio_gpu::cli::Args;

struct Command {
  const char* name;
  int (*run)(Args&);
  const char* usage;  // its flags, then what it does; `vfio-gpu <name> --help` prints it
};

constexpr Command kCommands[] = {
    {"scan", vfio_gpu::cli::Scan,
     R"(scan [--sysfs-root DIR] [--dev-root DIR] [--config FILE] [--json]
        list the GPU units (IOMMU groups) this node can hand to tenants, and the GPUs it can't
)"},
    {"cdi", vfio_gpu::cli::Cdi,
     R"(cdi generate [--sysfs-root DIR] [--dev-root DIR] [--config FILE] [--output-dir DIR]
        print the CDI specs for the units, or write them into DIR atomically
)"},
    {"doctor", vfio_gpu::cli::Doctor,
     R"(doctor [--host-root DIR] [--sysfs-root DIR] [--dev-root DIR] [--config FILE]
         [--containerd-version X]
        check the node's readiness for GPU passthrough and say what to fix (exit 1 when not ready):
        IOMMU, vfio, the GPUs' groups, and (with --host-root, default / unless only --sysfs-root/
        --dev-root are given) the containerd runtime in the files containerd reads (config.toml
        and what its imports reach; --containerd-version matters only without a config.toml,
        where 2.2+ reads conf.d/), enable_cdi, the shim, Kata's configuration, the CDI dir and
        the kubelet's pod resources socket
)"},
    {"install", vfio_gpu::cli::Install,
     R"(install --host-root DIR [--dry-run] [--restart-containerd] [--bind-gpus] [--config FILE]
          [--shim-binary PATH] [--containerd-version X]
        put the shim, the containerd/Kata/CRI-O drop-ins and /etc/vfio-gpu/shim.json on the host
        whose root is DIR, report each file (created/updated/unchanged/removed); --dry-run prints
        the diff instead; --bind-gpus also binds the configured GPUs and their group mates to
        vfio-pci; containerd is restarted only with --restart-containerd
)"},
    {"uninstall", vfio_gpu::cli::Uninstall,
     R"(uninstall --host-root DIR [--dry-run] [--restart-containerd]
        take back exactly what install wrote (GPU bindings stay until reboot)
)"},
    {"demo", vfio_gpu::cli::Demo,
     R"(demo  run on the embedded demo host (seed 003's node: 4x A10) and show what vfio-gpu sees
)"},
    {"audit", vfio_gpu::cli::Audit,
     R"(audit --qmp SOCKET [--sandbox ID] [--run-dir DIR] [--json]
        list a running VM's vfio-pci devices over QMP and check each GPU the ledger gives the
        sandbox is there exactly once (exit 1 when one is missing, duplicated or unexpected);
        with only --sandbox, the socket is Kata's /run/vc/vm/<ID>/qmp.sock
)"},
};

constexpr const char* kExitCodes = "Exit codes: 0 ok, 1 problems found, 2 bad usage.\n";

std::string Usage() {
  std::string out = "usage: vfio-gpu <command> [flags]\n\ncommands:\n";
  for (const auto& c : kCommands) out += std::string("  ") + c.usage;
  return out + "\n" + kExitCodes;
}

bool IsHelp(const char* arg) {
  return std::strcmp(arg, "--help") == 0 || std::strcmp(arg, "-h") == 0;
}

// `vfio-gpu <command> --help`, as the top level takes it: the command's own usage on stdout,
// exit 0, whatever else is on the line.
int CommandHelp(const Command& c) {
  std::printf("usage: vfio-gpu %s\n%s", c.usage, kExitCodes);
  return vfio_gpu::cli::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace vfio_gpu::cli;
  // Commands print their results; decisions go to the log, quiet unless something goes wrong.
  (void)vfio_gpu::SetupLogging(vfio_gpu::LogFormat::kText);
  spdlog::set_level(spdlog::level::warn);
  if (argc < 2 || IsHelp(argv[1]) || std::strcmp(argv[1], "help") == 0) {
    // `vfio-gpu help <command>` is the command's usage, like `vfio-gpu <command> --help`.
    if (argc == 3 && std::strcmp(argv[1], "help") == 0) {
      for (const auto& c : kCommands)
        if (c.name == std::string(argv[2])) return CommandHelp(c);
      std::fprintf(stderr, "vfio-gpu help: unknown command \"%s\"\n\n%s", argv[2], Usage().c_str());
      return kExitUsage;
    }
    std::fputs(Usage().c_str(), argc < 2 ? stderr : stdout);
    return argc < 2 ? kExitUsage : kExitOk;
  }
  std::string command = argv[1];
  for (const auto& c : kCommands) {
    if (command != c.name) continue;
    for (int i = 2; i < argc; ++i)
      if (IsHelp(argv[i])) return CommandHelp(c);
    Args args(std::vector<std::string>(argv + 2, argv + argc));
    return c.run(args);
  }
  std::fprintf(stderr, "vfio-gpu: unknown command \"%s\"\n\n%s", command.c_str(), Usage().c_str());
  return kExitUsage;
}
