// A tiny HTTP/1.1 server for GET /healthz and GET /metrics on the daemon's event loop: one request
// per connection, answers of a few kilobytes. Not a general web server, on purpose: no thread, no
// dependency, nothing to tune.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common/result.h"
#include "plugin/event_loop.h"

namespace vfio_gpu::plugin {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const std::string& method, const std::string& path)>;

  // `address` is "[host]:port" (":9477" = every IPv4 address, "127.0.0.1:0" = a free port).
  static Result<std::unique_ptr<HttpServer>> Listen(EventLoop& loop, const std::string& address,
                                                    Handler handler);
  ~HttpServer();
  int port() const { return port_; }

 private:
  struct Conn {
    Fd fd;
    std::string in;
  };
  HttpServer(EventLoop& loop, Handler handler) : loop_(loop), handler_(std::move(handler)) {}
  void OnAccept();
  void OnReadable(int fd);
  void Close(int fd);

  EventLoop& loop_;
  Handler handler_;
  Fd listen_;
  int port_ = 0;
  std::map<int, Conn> conns_;
};

}  // namespace vfio_gpu::plugin
