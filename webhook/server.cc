#include "webhook/server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/strings.h"
#include "webhook/review.h"

namespace vfio_gpu::webhook {

Result<ListenAddress> ParseListenAddress(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return Error("--listen \"" + text + "\": " + why +
                 "; use HOST:PORT, :PORT or [IPv6]:PORT, e.g. :8443");
  };
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) return bad("no port");
  ListenAddress a;
  a.host = text.substr(0, colon);
  if (StartsWith(a.host, "[")) {
    if (!EndsWith(a.host, "]") || a.host.size() < 3) return bad("unbalanced brackets");
    a.host = a.host.substr(1, a.host.size() - 2);
  } else if (a.host.find(':') != std::string::npos) {
    return bad("an IPv6 address needs brackets");
  }
  auto port = ParseInt(text.substr(colon + 1));
  if (!port || *port < 0 || *port > 65535) return bad("port is not a number from 0 to 65535");
  a.port = static_cast<int>(*port);
  return a;
}

Server::Server(Config config, std::unique_ptr<TlsReloader> tls)
    : config_(std::move(config)), tls_(std::move(tls)) {}

Server::~Server() = default;

Result<std::unique_ptr<Server>> Server::Create(Config config, std::unique_ptr<TlsReloader> tls) {
  std::unique_ptr<Server> s(new Server(std::move(config), std::move(tls)));
  TlsReloader* reloader = s->tls_.get();
  s->http_ = std::make_unique<httplib::SSLServer>(
      [reloader](SSL_CTX& ctx) { return reloader->ConfigureContext(ctx); });
  if (!s->http_->is_valid())
    return Error(
        "cannot set up TLS (OpenSSL refused the server context); check the OpenSSL install");
  s->Route();
  return s;
}

void Server::Route() {
  httplib::SSLServer& h = *http_;
  h.new_task_queue = [] { return new httplib::ThreadPool(kWorkerThreads); };
  h.set_payload_max_length(kMaxReviewBytes);
  h.set_read_timeout(5);
  h.set_write_timeout(5);
  h.set_keep_alive_max_count(1000);
  h.set_keep_alive_timeout(5);
  h.set_tcp_nodelay(true);
  h.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    // Dual-stack when we bind "::" for an empty host. (No SO_REUSEPORT: a second webhook on the
    // same port must fail to start, not silently share it.)
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (getsockname(sock, reinterpret_cast<sockaddr*>(&ss), &len) == 0 &&
        ss.ss_family == AF_INET6) {
      int no = 0;
      setsockopt(sock, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);
    }
  });

  h.Post("/mutate", [this](const httplib::Request& req, httplib::Response& res) {
    auto start = std::chrono::steady_clock::now();
    Decision d = Review(config_, req.body);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    metrics_.Record(d.outcome, seconds);
    switch (d.outcome) {
      case Outcome::kInvalid:
        spdlog::warn("review invalid from {}: {}", req.remote_addr, d.reason);
        break;
      case Outcome::kDenied:
        spdlog::info("review denied {}: {}", d.pod, d.reason);
        break;
      default:
        spdlog::info("review {} {}: {}", OutcomeName(d.outcome), d.pod.empty() ? "-" : d.pod,
                     d.reason);
    }
    res.status = d.http_status;
    res.set_content(d.body, d.content_type);
  });
  h.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  h.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.Render(tls_->reloads(), tls_->reload_failures()),
                    "text/plain; version=0.0.4");
  });

  // httplib answers a body over the limit with 413 before any handler runs; the contract is a 400
  // with a message, counted like any other invalid review.
  h.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 413) {
      res.status = 400;
      metrics_.Record(Outcome::kInvalid, 0);
      std::string why =
          "body is larger than the " + std::to_string(kMaxReviewBytes) + "-byte limit";
      spdlog::warn("review invalid from {}: {}", req.remote_addr, why);
      res.set_content("invalid AdmissionReview: " + why + "\n", "text/plain");
    } else if (res.body.empty()) {
      res.set_content("vfio-gpu-webhook: " + std::to_string(res.status) + " for " + req.method +
                          " " + req.path +
                          "; endpoints are POST /mutate, GET /healthz, GET /metrics\n",
                      "text/plain");
    }
  });
  h.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        spdlog::error("internal error serving {} {}: {}", req.method, req.path, what);
        res.status = 500;
        res.set_content("vfio-gpu-webhook: internal error: " + what + "\n", "text/plain");
      });
}

Result<int> Server::Bind(const ListenAddress& address) {
  std::vector<std::string> hosts;
  if (address.host.empty()) {
    hosts = {"::", "0.0.0.0"};  // IPv4-only hosts have no "::"
  } else {
    hosts = {address.host};
  }
  for (const auto& host : hosts) {
    int port = address.port;
    if (port == 0) {
      port = http_->bind_to_any_port(host);
      if (port < 0) continue;
    } else if (!http_->bind_to_port(host, port)) {
      continue;
    }
    bound_ = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
             std::to_string(port);
    return port;
  }
  return Error("cannot listen on " + (address.host.empty() ? std::string("*") : address.host) +
               ":" + std::to_string(address.port) + ": " + std::strerror(errno) +
               "; is another process using the port, or is the address not on this host?");
}

Status Server::Serve() {
  if (stopping_.load()) return Status::Ok();
  spdlog::info(
      "vfio-gpu-webhook serving HTTPS on {} (GPU class {}, resources {}, annotation policy {})",
      bound_, config_.gpu_runtime_class, Join(config_.resources, ","),
      AnnotationPolicyName(config_.annotation_policy));
  if (!http_->listen_after_bind())
    return Error("HTTPS server on " + bound_ + " stopped with an error");
  return Status::Ok();
}

void Server::Stop() {
  stopping_.store(true);
  http_->stop();
}

}  // namespace vfio_gpu::webhook
