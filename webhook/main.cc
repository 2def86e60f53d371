// vfio-gpu-webhook: a Kubernetes mutating admission webhook that puts every pod asking for one of
// our GPU resources on the QEMU VFIO GPU RuntimeClass, and refuses GPU pods that name a runtime
// that cannot carry a GPU (runc: no VM at all; Cloud Hypervisor: no GPU passthrough).
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "common/log.h"
#include "webhook/config.h"
#include "webhook/server.h"
#include "webhook/tls_reloader.h"

namespace {

constexpr const char* kUsage =
    "usage: vfio-gpu-webhook [--listen ADDR] --tls-cert FILE --tls-key FILE [--config FILE]\n"
    "  --listen ADDR     HTTPS address, default :8443 (HOST:PORT, :PORT, [IPv6]:PORT)\n"
    "  --tls-cert FILE   PEM server certificate (+ intermediates); re-read when it changes\n"
    "  --tls-key FILE    PEM private key of that certificate; re-read when it changes\n"
    "  --config FILE     JSON config: resources, gpu_runtime_class, allowed_runtime_classes,\n"
    "                    annotation_policy (deny|strip), kata_annotation_allowlist (regexes)\n";

struct Flags {
  std::string listen = ":8443";
  std::string cert;
  std::string key;
  std::string config;
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "vfio-gpu-webhook: %s\n", message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace vfio_gpu;
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    std::string name = arg, value;
    bool has_value = false;
    if (size_t eq = arg.find('='); eq != std::string::npos && arg.rfind("--", 0) == 0) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    std::string* target = nullptr;
    if (name == "--listen") target = &flags.listen;
    if (name == "--tls-cert") target = &flags.cert;
    if (name == "--tls-key") target = &flags.key;
    if (name == "--config") target = &flags.config;
    if (target == nullptr) return Fail("unknown argument \"" + arg + "\"\n" + kUsage);
    if (!has_value) {
      if (i + 1 >= argc) return Fail(name + " needs a value\n" + kUsage);
      value = argv[++i];
    }
    *target = value;
  }
  if (flags.cert.empty() || flags.key.empty())
    return Fail(
        "--tls-cert and --tls-key are required: the API server only calls webhooks over "
        "HTTPS\n" +
        std::string(kUsage));

  if (Status s = SetupLogging(LogFormat::kText); !s) return Fail(s.error().message());

  auto address = webhook::ParseListenAddress(flags.listen);
  if (!address) return Fail(address.error().message());
  auto config = webhook::LoadConfig(flags.config);
  if (!config) return Fail(config.error().message());
  auto tls = webhook::TlsReloader::Create(flags.cert, flags.key);
  if (!tls) return Fail(tls.error().message());
  auto server = webhook::Server::Create(std::move(*config), std::move(*tls));
  if (!server) return Fail(server.error().message());

  // SIGTERM/SIGINT stop the accept loop from a thread of their own; blocked before any other
  // thread exists so every thread inherits the mask. SIGPIPE would kill us on a peer reset.
  signal(SIGPIPE, SIG_IGN);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto port = (*server)->Bind(*address);
  if (!port) return Fail(port.error().message());

  webhook::Server* srv = server->get();
  std::atomic<bool> served_out{false};
  std::thread stopper([srv, stop_signals, &served_out] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (served_out.load()) return;  // woken by main below, after the server already stopped
    spdlog::info("{}: shutting down", strsignal(sig));
    srv->Stop();
  });
  Status served = srv->Serve();
  served_out.store(true);
  pthread_kill(stopper.native_handle(), SIGTERM);  // wakes the stopper if no signal came
  stopper.join();
  if (!served) return Fail(served.error().message());
  return 0;
}
