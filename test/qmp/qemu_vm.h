// A real qemu-system-x86_64 for tests: TCG, -S (the guest never runs), q35 without default devices,
// two or more pcie-root-ports to hot-plug into, QMP on a unix socket in the test's temp dir. The
// test creates the listening socket and hands it to QEMU (`-chardev socket,fd=N,server=on`), so the
// socket accepts connections the moment Start returns: no waiting for QEMU to come up, no polling.
// The VM is killed and reaped when the object goes away.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace vfio_gpu::testing {

class QemuVm {
 public:
  // Root ports rp0..rp{root_ports-1}; `extra` is appended to QEMU's command line.
  static std::unique_ptr<QemuVm> Start(const std::string& dir, int root_ports = 2,
                                       const std::vector<std::string>& extra = {}) {
    std::string sock = dir + "/qmp.sock";
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);  // inherited by QEMU: no CLOEXEC
    if (lfd < 0) return nullptr;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (sock.size() >= sizeof addr.sun_path) return nullptr;
    std::memcpy(addr.sun_path, sock.c_str(), sock.size());
    if (bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(lfd, 8) != 0) {
      close(lfd);
      return nullptr;
    }
    std::vector<std::string> argv = {
        "qemu-system-x86_64",
        "-accel",
        "tcg",
        "-S",
        "-machine",
        "q35",
        "-nodefaults",
        "-display",
        "none",
        "-m",
        "64",
        "-chardev",
        "socket,id=qmp,fd=" + std::to_string(lfd) + ",server=on,wait=off",
        "-mon",
        "chardev=qmp,mode=control"};
    for (int i = 0; i < root_ports; ++i) {
      argv.push_back("-device");
      argv.push_back("pcie-root-port,id=rp" + std::to_string(i) +
                     ",chassis=" + std::to_string(i + 1) + ",slot=" + std::to_string(i + 1));
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::string log = dir + "/qemu.log";
    pid_t pid = fork();
    if (pid == 0) {
      int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (out >= 0) {
        dup2(out, 1);
        dup2(out, 2);
      }
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
    close(lfd);
    if (pid < 0) return nullptr;
    return std::unique_ptr<QemuVm>(new QemuVm(pid, sock, log));
  }

  ~QemuVm() {
    kill(pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
  }
  QemuVm(const QemuVm&) = delete;
  QemuVm& operator=(const QemuVm&) = delete;

  const std::string& socket_path() const { return socket_; }
  const std::string& log_path() const { return log_; }

 private:
  QemuVm(pid_t pid, std::string socket, std::string log)
      : pid_(pid), socket_(std::move(socket)), log_(std::move(log)) {}
  pid_t pid_;
  std::string socket_;
  std::string log_;
};

}  // namespace vfio_gpu::testing
