// The imperative shell around Review(): an HTTPS server (cpp-httplib over OpenSSL) with /mutate,
// /healthz and /metrics, certificates from a TlsReloader, one log line per decision.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "common/result.h"
#include "webhook/config.h"
#include "webhook/metrics.h"
#include "webhook/tls_reloader.h"

namespace httplib {
class SSLServer;
}

namespace vfio_gpu::webhook {

struct ListenAddress {
  std::string host;  // empty: every address (IPv6 and IPv4 when the host has IPv6)
  int port = 8443;   // 0: any free port (tests)
};

// ":8443", "0.0.0.0:8443", "127.0.0.1:0", "[::1]:8443", "localhost:8443".
Result<ListenAddress> ParseListenAddress(const std::string& text);

class Server {
 public:
  // Worker threads: each open connection holds one while it is kept alive, so this bounds the
  // concurrent connections served without queueing (API servers keep several each).
  static constexpr size_t kWorkerThreads = 256;

  static Result<std::unique_ptr<Server>> Create(Config config, std::unique_ptr<TlsReloader> tls);
  ~Server();

  // Binds and listens; returns the port (useful with port 0). Connections queue until Serve().
  Result<int> Bind(const ListenAddress& address);
  // Serves until Stop(); returns an error only if the accept loop fails.
  Status Serve();
  // Stops accepting, lets in-flight requests finish. Safe from any thread, and before Serve().
  void Stop();

  const Metrics& metrics() const { return metrics_; }

 private:
  Server(Config config, std::unique_ptr<TlsReloader> tls);
  void Route();

  Config config_;
  std::unique_ptr<TlsReloader> tls_;
  std::unique_ptr<httplib::SSLServer> http_;
  Metrics metrics_;
  std::string bound_;
  std::atomic<bool> stopping_{false};
};

}  // namespace vfio_gpu::webhook
