// The daemon's one event loop: epoll over file descriptors (inotify, netlink, timerfd, eventfd,
// signalfd, the metrics listener), each with its handler, all run on one thread. Idle means asleep
// in epoll_wait: nothing here polls.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include "common/result.h"

namespace vfio_gpu::plugin {

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd();
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_ = -1;
};

class EventLoop {
 public:
  using Handler = std::function<void(uint32_t events)>;

  static Result<std::unique_ptr<EventLoop>> Create();

  // Handlers may Add/Remove (also themselves) while running.
  Status Add(int fd, uint32_t events, Handler handler);
  void Remove(int fd);
  // Runs handlers until Quit() is called from a handler.
  void Run();
  void Quit() { quit_ = true; }
  // Runs after each batch of ready descriptors: lets several events (a rebind is an unbind and a
  // bind uevent, plus inotify on the group node) coalesce into one rescan.
  void SetAfterBatch(std::function<void()> f) { after_batch_ = std::move(f); }

 private:
  explicit EventLoop(Fd epoll) : epoll_(std::move(epoll)) {}
  Fd epoll_;
  std::map<int, std::shared_ptr<Handler>> handlers_;
  bool quit_ = false;
  std::function<void()> after_batch_;
};

// A timerfd: one-shot or periodic, CLOCK_MONOTONIC.
class Timer {
 public:
  static Result<Timer> Create();
  void Arm(std::chrono::milliseconds delay, bool periodic = false);
  void Disarm();
  void Drain();  // read the expiry count after a wake-up
  int fd() const { return fd_.get(); }

 private:
  Fd fd_;
};

// An eventfd other threads poke to wake the loop.
class Waker {
 public:
  static Result<Waker> Create();
  void Wake();
  void Drain();
  int fd() const { return fd_.get(); }

 private:
  Fd fd_;
};

}  // namespace vfio_gpu::plugin
