#include "plugin/event_loop.h"

#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace vfio_gpu::plugin {

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

Result<std::unique_ptr<EventLoop>> EventLoop::Create() {
  int fd = epoll_create1(EPOLL_CLOEXEC);
  if (fd < 0)
    return Error(std::string("epoll_create1: ") + std::strerror(errno), ErrorKind::kInternal);
  return std::unique_ptr<EventLoop>(new EventLoop(Fd(fd)));
}

Status EventLoop::Add(int fd, uint32_t events, Handler handler) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0)
    return Error(std::string("epoll_ctl add: ") + std::strerror(errno), ErrorKind::kInternal);
  handlers_[fd] = std::make_shared<Handler>(std::move(handler));
  return Status::Ok();
}

void EventLoop::Remove(int fd) {
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
  handlers_.erase(fd);
}

void EventLoop::Run() {
  std::vector<epoll_event> events(32);
  while (!quit_) {
    int n = epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      SPDLOG_ERROR("epoll_wait: {}", std::strerror(errno));
      return;
    }
    for (int i = 0; i < n && !quit_; ++i) {
      auto it = handlers_.find(events[static_cast<size_t>(i)].data.fd);
      if (it == handlers_.end()) continue;  // removed by an earlier handler of this batch
      auto handler = it->second;            // keeps it alive if it removes itself
      (*handler)(events[static_cast<size_t>(i)].events);
    }
    if (!quit_ && after_batch_) after_batch_();
  }
}

Result<Timer> Timer::Create() {
  int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (fd < 0)
    return Error(std::string("timerfd_create: ") + std::strerror(errno), ErrorKind::kInternal);
  Timer t;
  t.fd_ = Fd(fd);
  return t;
}

void Timer::Arm(std::chrono::milliseconds delay, bool periodic) {
  itimerspec spec{};
  auto ms = std::max<int64_t>(delay.count(), 1);
  spec.it_value.tv_sec = ms / 1000;
  spec.it_value.tv_nsec = (ms % 1000) * 1000000;
  if (periodic) spec.it_interval = spec.it_value;
  timerfd_settime(fd_.get(), 0, &spec, nullptr);
}

void Timer::Disarm() {
  itimerspec spec{};
  timerfd_settime(fd_.get(), 0, &spec, nullptr);
}

void Timer::Drain() {
  uint64_t n;
  while (::read(fd_.get(), &n, sizeof n) == sizeof n) {
  }
}

Result<Waker> Waker::Create() {
  int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return Error(std::string("eventfd: ") + std::strerror(errno), ErrorKind::kInternal);
  Waker w;
  w.fd_ = Fd(fd);
  return w;
}

void Waker::Wake() {
  uint64_t one = 1;
  [[maybe_unused]] auto r = ::write(fd_.get(), &one, sizeof one);
}

void Waker::Drain() {
  uint64_t n;
  while (::read(fd_.get(), &n, sizeof n) == sizeof n) {
  }
}

}  // namespace vfio_gpu::plugin
