#include "plugin/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/listen_address.h"
#include "common/strings.h"

namespace vfio_gpu::plugin {
namespace {

const char* StatusText(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    default:
      return "Bad Request";
  }
}

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::Listen(EventLoop& loop, const std::string& address,
                                                       Handler handler) {
  auto parsed = ParseListenAddress(address);
  if (!parsed) return Error("metrics address " + parsed.error().message());
  auto bad = [&](const std::string& why) {
    return Error("metrics address \"" + address + "\": " + why);
  };
  const ListenAddress& la = *parsed;
  sockaddr_storage ss{};
  socklen_t ss_len = 0;
  int fd = -1;
  auto v4 = [&](const std::string& host) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(la.port);
    if (host.empty())
      a->sin_addr.s_addr = htonl(INADDR_ANY);
    else
      inet_pton(AF_INET, host.c_str(), &a->sin_addr);
    ss_len = sizeof *a;
    return socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  };
  auto v6 = [&](const std::string& host) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(la.port);
    a->sin6_addr = in6addr_any;
    if (!host.empty()) inet_pton(AF_INET6, host.c_str(), &a->sin6_addr);
    ss_len = sizeof *a;
    return socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  };
  switch (la.family) {
    case ListenAddress::Family::kIpv4:
      fd = v4(la.host == "0.0.0.0" ? "" : la.host);
      break;
    case ListenAddress::Family::kIpv6:
      fd = v6(la.host);
      break;
    case ListenAddress::Family::kAny:
      // IPv6 and IPv4 on one socket where the host has IPv6; IPv4 alone where it doesn't.
      fd = v6("");
      if (fd >= 0) {
        int zero = 0;
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
      } else {
        ss = {};
        fd = v4("");
      }
      break;
  }
  if (fd < 0) return bad(std::string("socket: ") + std::strerror(errno));
  Fd owned(fd);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr*>(&ss), ss_len) != 0)
    return bad(std::string("cannot bind: ") + std::strerror(errno) +
               "; is another process (an older plugin?) listening there?");
  if (listen(fd, 16) != 0) return bad(std::string("cannot listen: ") + std::strerror(errno));
  socklen_t len = sizeof ss;
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  uint16_t bound_port = ss.ss_family == AF_INET6
                            ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                            : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);

  std::unique_ptr<HttpServer> s(new HttpServer(loop, std::move(handler)));
  s->listen_ = std::move(owned);
  s->port_ = bound_port;
  HttpServer* self = s.get();
  if (auto st = loop.Add(fd, EPOLLIN, [self](uint32_t) { self->OnAccept(); }); !st)
    return st.error();
  return s;
}

HttpServer::~HttpServer() {
  for (auto& [fd, c] : conns_) loop_.Remove(fd);
  if (listen_.valid()) loop_.Remove(listen_.get());
}

void HttpServer::OnAccept() {
  for (;;) {
    int fd = accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (conns_.size() >= 32) {  // a scraper gone wild must not exhaust our descriptors
      ::close(fd);
      continue;
    }
    conns_[fd].fd = Fd(fd);
    if (!loop_.Add(fd, EPOLLIN | EPOLLRDHUP, [this, fd](uint32_t) { OnReadable(fd); }))
      conns_.erase(fd);
  }
}

void HttpServer::Close(int fd) {
  loop_.Remove(fd);
  conns_.erase(fd);
}

void HttpServer::OnReadable(int fd) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  Conn& c = it->second;
  char buf[2048];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      c.in.append(buf, static_cast<size_t>(n));
      if (c.in.size() > 16384) return Close(fd);
      continue;
    }
    if (n == 0) break;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    return Close(fd);
  }
  size_t end = c.in.find("\r\n\r\n");
  if (end == std::string::npos) {
    if (c.in.empty() || c.in.find('\n') == std::string::npos) return;  // wait for more
    if (c.in.find("\n\n") == std::string::npos) return;
  }
  std::string line = c.in.substr(0, c.in.find_first_of("\r\n"));
  auto parts = Split(line, ' ');
  HttpResponse r;
  if (parts.size() < 2) {
    r = {400, "text/plain; charset=utf-8", "bad request\n"};
  } else {
    std::string path = parts[1].substr(0, parts[1].find('?'));
    r = handler_(parts[0], path);
  }
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + StatusText(r.status) +
                    "\r\nContent-Type: " + r.content_type +
                    "\r\nContent-Length: " + std::to_string(r.body.size()) +
                    "\r\nConnection: close\r\n\r\n" + r.body;
  // Small answers fit the socket buffer; a reader that stalls just gets a short answer.
  size_t off = 0;
  while (off < out.size()) {
    ssize_t n = ::send(fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  Close(fd);
}

}  // namespace vfio_gpu::plugin
