// A scripted QMP peer on a unix socket, for what a real QEMU won't do on demand: stay silent after
// accepting, interleave events and stale replies, speak something that is not QMP, hang up mid-way.
// It serves one connection with `handler` on its own thread; the handler may block in WaitStop()
// until the test ends.
#pragma once

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

namespace vfio_gpu::testing {

class FakeQmpServer {
 public:
  class Conn {
   public:
    Conn(int fd, int stop_fd) : fd_(fd), stop_fd_(stop_fd) {}
    void Send(const std::string& line) {
      std::string s = line + "\r\n";
      (void)!send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
    }
    // One line from the client ("" when it hung up or the test ended).
    std::string ReadLine() {
      for (;;) {
        size_t nl = buf_.find('\n');
        if (nl != std::string::npos) {
          std::string line = buf_.substr(0, nl);
          buf_.erase(0, nl + 1);
          return line;
        }
        pollfd p[2] = {{fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
        if (poll(p, 2, -1) <= 0 || (p[1].revents & POLLIN)) return "";
        char chunk[4096];
        ssize_t n = read(fd_, chunk, sizeof chunk);
        if (n <= 0) return "";
        buf_.append(chunk, static_cast<size_t>(n));
      }
    }
    // Blocks until the server is destroyed.
    void WaitStop() {
      pollfd p{stop_fd_, POLLIN, 0};
      poll(&p, 1, -1);
    }
    void Greet() {
      Send(
          R"({"QMP": {"version": {"qemu": {"micro": 0, "minor": 2, "major": 7}, "package": "fake"}, "capabilities": []}})");
    }

   private:
    int fd_;
    int stop_fd_;
    std::string buf_;
  };

  FakeQmpServer(const std::string& path, std::function<void(Conn&)> handler) {
    stop_fd_ = eventfd(0, EFD_CLOEXEC);
    listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), std::min(path.size(), sizeof addr.sun_path - 1));
    ok_ = bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
          listen(listen_fd_, 4) == 0;
    thread_ = std::thread([this, handler = std::move(handler)] {
      pollfd p[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
      if (poll(p, 2, -1) <= 0 || (p[1].revents & POLLIN)) return;
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      Conn conn(fd, stop_fd_);
      handler(conn);
      close(fd);
    });
  }
  ~FakeQmpServer() {
    uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof one);
    thread_.join();
    close(listen_fd_);
    close(stop_fd_);
  }
  FakeQmpServer(const FakeQmpServer&) = delete;
  FakeQmpServer& operator=(const FakeQmpServer&) = delete;

  bool ok() const { return ok_; }

 private:
  int listen_fd_ = -1;
  int stop_fd_ = -1;
  bool ok_ = false;
  std::thread thread_;
};

}  // namespace vfio_gpu::testing
